"""Compile-once loading of ``kernels/*.cu`` and error-checked launches (PyCUDA).

Sources are found through ``importlib.resources.files("pageweaver_edu.kernels")`` (the
top-level ``kernels/`` folder is mapped to that package by ``pyproject.toml``), with a
fallback to ``<checkout>/kernels`` when the package is imported from a source tree that was
not installed. Each ``.cu`` file is compiled once per process and set of options (PyCUDA also
keeps its on-disk cubin cache), by default for the device's own architecture (``sm_90`` on the
H200: the regroup and union-preparation kernels use no ``sm_90a``-only instruction, so the plain
target is the right one). A kernel that needs more names it: ``union8.cu`` passes
``arch="compute_90a", code="sm_90a"`` (multicast bulk copies) and a ``-D`` option.

Launches go to torch's current stream, whatever stream the caller is on, with no host
synchronisation (:func:`stream_scope`). PyCUDA 2026.1 launches only on a stream it created
itself (``Function._launch_kernel`` takes a ``pycuda.driver.Stream`` or None, and a ``Stream``
cannot wrap a foreign handle; ``Function`` exposes no ``CUfunction`` for a launch through the
driver API by hand). So a PyCUDA stream is paired with each torch stream the kernels are called
on and shared with torch through ``torch.cuda.ExternalStream``: the pair is forked from the
caller's stream and joined back with one event each way (``wait_stream``), which CUDA-graph
capture records as graph edges. On torch's default (legacy) stream a launch goes there
directly. ``launch(..., shared_size=)`` passes a dynamic shared-memory size; a
kernel that needs more than 48 KiB of it is prepared with ``get_kernel(...,
max_dynamic_shared=)``, which raises the function's limit once. Every launch is checked: a
failed ``cuLaunchKernel`` raises :class:`GPULaunchError` naming the kernel, and with
``PAGEWEAVER_GPU_SYNC=1`` each launch outside a graph capture is also synchronised so that a
fault inside the kernel is reported against the kernel that caused it.
``PAGEWEAVER_WAIT_TIMEOUT_NS=<ns>`` compiles every kernel with that bound for the
FP8 kernels' mbarrier waits (``PW_WAIT_TIMEOUT_NS``, 10 s by default): a run under
compute-sanitizer, whose instrumentation slows every wait, raises it so that a slow wait is not
taken for a protocol error.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import ExitStack, contextmanager
from importlib import resources
from pathlib import Path

from ..core.inputs import PageWeaverInputError
from .device import ensure_context, require_gpu

ENV_SYNC = "PAGEWEAVER_GPU_SYNC"
ENV_WAIT_TIMEOUT = "PAGEWEAVER_WAIT_TIMEOUT_NS"
NVCC_OPTIONS = ["-std=c++17", "-O3", "-lineinfo"]

_lock = threading.Lock()
_modules: dict[tuple, object] = {}
_functions: dict[tuple, object] = {}
_launches: dict[str, OrderedDict] = {}  # family -> key -> prepared launch (cached_launch)
_paired: dict[int, tuple] = {}  # torch stream handle -> (PyCUDA stream, its torch ExternalStream)
_own: dict[int, object] = {}  # handle of a PyCUDA stream of _paired -> that stream
NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING: no implicit order with the legacy default stream
_files = ExitStack()


class GPULaunchError(RuntimeError):
    """A kernel failed to launch or faulted while running (message names the kernel)."""


def kernel_dir() -> Path:
    """Folder holding the shipped ``.cu``/``.cuh`` sources, as a real filesystem path."""
    try:
        root = resources.files("pageweaver_edu.kernels")
        return Path(_files.enter_context(resources.as_file(root)))
    except ModuleNotFoundError:
        checkout = Path(__file__).resolve().parents[2] / "kernels"
        if checkout.is_dir():
            return checkout
        raise


def kernel_sources() -> list[Path]:
    """Every ``kernels/*.cu`` file, sorted by name."""
    return sorted(kernel_dir().glob("*.cu"))


def wait_bound_options() -> tuple[str, ...]:
    """``("-DPW_WAIT_TIMEOUT_NS=<ns>ull",)`` when ``PAGEWEAVER_WAIT_TIMEOUT_NS`` holds a
    positive integer of nanoseconds below 2^64, ``()`` when it is unset or empty; any other
    value raises :class:`~pageweaver_edu.core.inputs.PageWeaverInputError`."""
    raw = os.environ.get(ENV_WAIT_TIMEOUT, "").strip()
    if not raw:
        return ()
    if not raw.isdigit() or not 0 < int(raw) < 2**64:
        raise PageWeaverInputError(
            f"{ENV_WAIT_TIMEOUT} must be a positive integer of nanoseconds, got {raw!r}")
    return (f"-DPW_WAIT_TIMEOUT_NS={int(raw)}ull",)


def load_module(filename: str, arch: str | None = None, code: str | None = None,
                options: tuple[str, ...] = ()):
    """The compiled PyCUDA module of ``kernels/<filename>`` (compiled on first use).

    Parameters
    ----------
    filename : str
        Source file in :func:`kernel_dir`.
    arch, code : str, optional
        nvcc ``-arch`` / ``-code``; ``arch`` defaults to the device's ``sm_XY``.
    options : tuple of str
        Extra nvcc options after :data:`NVCC_OPTIONS` (e.g. ``-DNAME=value``), then
        :func:`wait_bound_options`.
    """
    require_gpu()
    options = (*options, *wait_bound_options())
    with _lock:
        key = (filename, arch, code, options)
        mod = _modules.get(key)
        if mod is None:
            ensure_context()
            import pycuda.driver as drv
            from pycuda.compiler import SourceModule

            folder = kernel_dir()
            source = (folder / filename).read_text(encoding="utf-8")
            if arch is None:
                major, minor = drv.Context.get_device().compute_capability()
                arch = f"sm_{major}{minor}"
            try:
                mod = SourceModule(
                    source,
                    options=[*NVCC_OPTIONS, *options],
                    no_extern_c=True,
                    arch=arch,
                    code=code,
                    include_dirs=[str(folder)],
                )
            except drv.CompileError as exc:
                raise GPULaunchError(f"nvcc failed on {filename}:\n{exc}") from exc
            _modules[key] = mod
    return mod


def get_kernel(filename: str, name: str, arg_format: str, *, arch: str | None = None,
               code: str | None = None, options: tuple[str, ...] = (),
               max_dynamic_shared: int = 0):
    """A prepared kernel ``name`` from ``kernels/<filename>`` (cached).

    Parameters
    ----------
    filename : str
        Source file in ``kernels/``.
    name : str
        Its ``extern "C"`` entry point.
    arg_format : str
        PyCUDA's prepared-call format: ``P`` pointer (pass ``tensor.data_ptr()``), ``i``
        int32, ``q`` int64, ``f`` float32.
    arch, code : str, optional
        nvcc ``-arch`` / ``-code``; the device's own ``sm_XY`` when None.
    options : tuple of str
        Further nvcc options (``-D...``); part of the cache key, as arch and code are.
    max_dynamic_shared : int
        > 0 sets the function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` (needed before a launch
        with more than 48 KiB).

    Returns
    -------
    pycuda.driver.Function
        Prepared with ``arg_format``.
    """
    options = tuple(options)
    key = (filename, name, arch, code, options, wait_bound_options(), max_dynamic_shared)
    func = _functions.get(key)
    if func is None:
        func = load_module(filename, arch, code, options).get_function(name)
        if max_dynamic_shared:
            import pycuda.driver as drv

            func.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               max_dynamic_shared)
        func.prepare(arg_format)
        func.pw_name = name
        _functions[key] = func
    return func


def _pair(caller):
    """The PyCUDA stream paired with the torch stream ``caller`` (made on first use) and its
    ``torch.cuda.ExternalStream``."""
    import pycuda.driver as drv
    import torch

    pair = _paired.get(caller.cuda_stream)
    if pair is None:
        stream = drv.Stream(NON_BLOCKING)
        pair = (stream, torch.cuda.ExternalStream(stream.handle, device=caller.device))
        _paired[caller.cuda_stream] = pair
        _own[stream.handle] = stream
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
    Warm up on the stream you capture on (``torch.cuda.graph(g, stream=s)`` after eager calls
    on ``s``), as every capture needs: kernels compile and the pair is made outside the
    capture. One paired stream per caller stream keeps the work of two caller streams apart.
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


def _capturing() -> bool:
    import torch

    return torch.cuda.is_current_stream_capturing()


def launch(func, grid: tuple[int, ...], block: tuple[int, int, int], *args,
           shared_size: int = 0) -> None:
    """Launch a prepared kernel on torch's current stream (:func:`stream_scope`) and check the
    launch.

    Parameters
    ----------
    func : pycuda.driver.Function
        From :func:`get_kernel`.
    grid : tuple of int
        Blocks per dimension; a zero dimension launches nothing.
    block : tuple of int
        Threads per block (x, y, z).
    *args
        The kernel's arguments, in ``func``'s prepared format.
    shared_size : int
        Dynamic shared memory per block in bytes.
    """
    import pycuda.driver as drv

    if min(grid) <= 0:
        return
    with stream_scope() as stream:
        try:
            func.prepared_async_call(grid, block, stream, *args, shared_size=shared_size)
            if os.environ.get(ENV_SYNC, "") == "1" and not _capturing():
                drv.Context.synchronize()
        except drv.Error as exc:
            raise GPULaunchError(
                f"kernel {func.pw_name} grid={grid} block={block}: {exc}") from exc


def zero_async(tensor) -> None:
    """Zero a CUDA tensor of a whole number of 32-bit words on torch's current stream (a
    memset node when captured)."""
    import pycuda.driver as drv

    words = tensor.numel() * tensor.element_size() // 4
    with stream_scope() as stream:
        drv.memset_d32_async(tensor.data_ptr(), 0, words, stream)


def multiprocessors() -> int:
    """Streaming multiprocessors of the current device (the grid of a persistent kernel)."""
    require_gpu()
    ensure_context()
    import pycuda.driver as drv

    return int(drv.Context.get_device().get_attribute(
        drv.device_attribute.MULTIPROCESSOR_COUNT))


def synchronize() -> None:
    """Wait for the device and surface any pending kernel fault as GPULaunchError."""
    import pycuda.driver as drv

    try:
        drv.Context.synchronize()
    except drv.Error as exc:
        raise GPULaunchError(f"a PageWeaver kernel faulted: {exc}") from exc


def cached_launch(family: str, key, make, keep: int = 64):
    """The prepared launch of ``family`` (a front end's name) for ``key``, made by ``make()`` on
    first use; the ``keep`` most recently used of each family are kept (the ``*_launch``
    functions of the front ends). Every family's cache lives here, beside the modules and
    functions, so that one place holds what a process has prepared."""
    cache = _launches.setdefault(family, OrderedDict())
    prepared = cache.get(key)
    if prepared is None:
        prepared = cache[key] = make()
        while len(cache) > keep:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return prepared
