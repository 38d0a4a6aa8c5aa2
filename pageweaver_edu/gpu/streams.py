"""Torch's current stream for PyCUDA launches: one PyCUDA stream paired with each torch stream.

PyCUDA 2026.1 launches a function only on a ``pycuda.driver.Stream`` it created itself, or on
the legacy default stream: ``Function._launch_kernel`` takes a ``Stream`` or None, a
``Stream`` cannot be made from a foreign handle, and ``Function`` exposes no ``CUfunction``
that a hand-made driver-API launch could use. So each torch stream the kernels are called on
gets its own PyCUDA stream (non-blocking, in the primary context that PyTorch uses too,
:func:`~.device.ensure_context`), shared with torch as a ``torch.cuda.ExternalStream``.
:func:`stream_scope` forks it from the caller's stream and joins it back with one event each
way (``wait_stream``): no host synchronisation, and inside ``torch.cuda.graph`` the two waits
are recorded as edges of the graph. On torch's default stream (the legacy stream, handle 0)
the launches go there directly.
"""

from __future__ import annotations

from contextlib import contextmanager

NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING: no implicit order with the legacy default stream
_paired: dict[int, tuple] = {}  # torch stream handle -> (PyCUDA stream, its ExternalStream)
_own: dict[int, object] = {}  # handle of a paired PyCUDA stream -> that stream
_spare: list = []  # a PyCUDA stream made outside any capture, for the next pair


def capturing() -> bool:
    """Whether torch's current stream is capturing a CUDA graph."""
    import torch

    return torch.cuda.is_current_stream_capturing()


def ensure_spare() -> None:
    """Make the spare stream the next pair takes, unless there is one (call outside a
    capture: a stream made inside one would be an API call the capture may refuse)."""
    import pycuda.driver as drv

    if not _spare:
        _spare.append(drv.Stream(NON_BLOCKING))


def _pair(caller):
    """The PyCUDA stream paired with the torch stream ``caller`` and its
    ``torch.cuda.ExternalStream``. A new pair takes the spare stream made beforehand (a
    stream made inside a graph capture would be an API call the capture may refuse) and,
    outside a capture, makes the next spare."""
    import torch

    pair = _paired.get(caller.cuda_stream)
    if pair is None:
        ensure_spare()
        stream = _spare.pop()
        pair = (stream, torch.cuda.ExternalStream(stream.handle, device=caller.device))
        _paired[caller.cuda_stream] = pair
        _own[stream.handle] = stream
        if not capturing():
            ensure_spare()
    return pair


@contextmanager
def stream_scope():
    """Run a block of launches (and torch ops) in order on torch's current stream.

    Yields the PyCUDA stream to launch on: None (the legacy default stream) when torch's
    current stream is the default one; the current stream itself when it is already a paired
    PyCUDA stream (an enclosing scope); else the PyCUDA stream paired with the caller's
    stream, which waits for the caller's work first and which torch uses as its current stream
    inside the block, and which the caller's stream waits for at the end. No host
    synchronisation; under ``torch.cuda.graph`` the two waits become edges of the graph.

    Notes
    -----
    Kernels compile on first use, so run one eager call before capturing; a pair first needed
    inside a capture takes the spare stream made when the kernels were prepared. One paired
    stream per caller stream keeps the work of two caller streams apart.
    """
    import torch

    caller = torch.cuda.current_stream()
    if caller.cuda_stream == 0:
        yield None
        return
    own = _own.get(caller.cuda_stream)
    if own is not None:
        yield own
        return
    stream, external = _pair(caller)
    external.wait_stream(caller)
    try:
        with torch.cuda.stream(external):
            yield stream
    finally:
        caller.wait_stream(external)
