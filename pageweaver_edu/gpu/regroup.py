"""Greedy regroup on the GPU (``kernels/regroup.cu``): π identical to the CPU reference.

:func:`gpu_greedy_regroup` has the signature of
:func:`pageweaver_edu.regroup.bitmap.greedy_regroup` and returns π as an int32 torch tensor on
the GPU. A ``[H, N, K]`` input regroups H KV heads (each its own Top-K) in one launch.
The launch needs no host synchronisation and keeps no host state that changes from launch to
launch, so it can be captured in a CUDA graph and replayed: window and chunk tables depend only
on the shape and the boundaries and are cached with the prepared launch
(:class:`RegroupLaunch`); the capacity fallback is decided in the kernel, and the words its
windows meet in are zeroed on the launch's stream before each launch.
"""

from __future__ import annotations

import numpy as np

from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError, as_positions, as_request_offsets, positive_int
from .device import require_gpu
from .loader import cached_launch, get_kernel, launch, zero_async
from .tables import MAX_CAPACITY, MAX_WINDOW, regroup_tables
from .tensors import cuda_ids

#: kernel variant -> (largest W it holds, family); a CTA has one thread per query of that W,
#: so it is also the thread count. Family "bits" (the paper's GPU form, any K): each
#: candidate keeps its 16-word bitmap and lowers delta_j by popcount(bits_j & fresh) every
#: round. Family "pairs" (K <= 16, W <= 128): the CTA builds the per-window pair masks
#: M[j][i], then one warp runs all W rounds with one popcount per candidate and no barrier,
#: compacting its candidates per lane (4 → 3 → 2 → 1) as they leave R (see
#: kernels/regroup.cu).
VARIANTS: dict[str, tuple[int, str]] = {
    **{f"bits_t{t}": (t, "bits") for t in (32, 64, 128, 256)},
    **{f"pairs_w{w}": (w, "pairs") for w in (32, 64, 128)},
}
PAIRS_MAX_K = 16


def pick_variant(window: int, variant: str | None = None, k: int = 16) -> str:
    """Kernel variant for a window of W queries and K ids per row.

    Parameters
    ----------
    window : int
        W.
    variant : str, optional
        A key of :data:`VARIANTS`; checked against W and K. None picks the default.
    k : int
        K, ids per Top-K row.

    Returns
    -------
    str
        A key of :data:`VARIANTS`.

    Notes
    -----
    The default is the smallest "pairs" kernel that holds W when K <= 16 (the fastest on the
    H200, benchmarks/results/gpu_regroup_h200.json), else the smallest "bits" kernel.
    """
    if variant is None:
        fits = [v for v, (w, f) in VARIANTS.items()
                if w >= window and (f == "bits" or k <= PAIRS_MAX_K)]
        if not fits:
            raise PageWeaverInputError(f"no regroup kernel holds W = {window} (W <= {MAX_WINDOW})")
        variant = min(fits, key=lambda v: (VARIANTS[v][1] != "pairs", VARIANTS[v][0]))
    if variant not in VARIANTS:
        raise PageWeaverInputError(f"unknown regroup variant {variant!r}; known: {list(VARIANTS)}")
    holds, family = VARIANTS[variant]
    if holds < window:
        raise PageWeaverInputError(
            f"variant {variant} holds {holds} queries per window, W = {window} is larger"
        )
    if family == "pairs" and k > PAIRS_MAX_K:
        raise PageWeaverInputError(f"variant {variant} needs K <= {PAIRS_MAX_K}, got K = {k}")
    return variant


ARG_FORMAT = "PPPPPPqiiiiii"


class RegroupLaunch:
    """A prepared regroup launch for fixed shapes, grouping and boundaries (reusable, no host
    work per launch).

    Parameters
    ----------
    n, heads, k : int
        N queries, H KV heads and K ids per row of the ``[H, N, K]`` Top-K it regroups.
    grouping : Grouping
        W (at most 256), g, B (at most 512) and the chunk size.
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    page_size : int
        P (the capacity fallback compares L_i with B·P).
    variant : str or None
        Kernel variant (:data:`VARIANTS`); None picks the fastest that holds W.
    options : tuple of str
        Extra nvcc flags (the benchmark's ``-DPW_PHASE_CLOCKS`` build, a test build).
    """

    def __init__(self, n, heads, k, grouping: Grouping, request_offsets, page_size=128,
                 variant=None, options=()):
        import torch

        self.n, self.heads, self.k = n, heads, k
        self.grouping, self.page_size = grouping, page_size
        self.variant = pick_variant(grouping.window, variant, k)
        self.threads = VARIANTS[self.variant][0]  # one thread per query of the largest W
        wins, chunks = regroup_tables(n, grouping, request_offsets)
        self.windows = torch.from_numpy(wins).cuda()
        self.chunks = torch.from_numpy(chunks).cuda()
        self.num_windows, self.num_chunks = len(wins), len(chunks)
        # One chunk cut into W-row windows (the common case): the kernel computes its window
        # from blockIdx and reads no table, which saves a dependent global load.
        self.uniform = grouping.window if uniform_windows(wins, chunks, n, grouping.window) else 0
        # The capacity-fallback handshake of a multi-window chunk: uint64 (arrived | flagged
        # << 32, finished) per (head, chunk), zeroed on the stream before every launch (a
        # memset node in a captured graph), so a launch never depends on what an earlier one
        # left.
        self.scratch = torch.zeros(max(1, 2 * heads * len(chunks)), dtype=torch.int64,
                                   device="cuda")
        self.handshake = bool(len(chunks)) and int(chunks[:, 2].max()) > 1
        self.func = get_kernel("regroup.cu", "regroup_" + self.variant, ARG_FORMAT,
                               options=tuple(options))

    def run(self, topk32, lengths64=None, out=None):
        """π of every head.

        Parameters
        ----------
        topk32 : torch.Tensor of int32 on the GPU, shape [H, N, K], contiguous
        lengths64 : torch.Tensor of int64 on the GPU, shape [N], optional
        out : torch.Tensor of int32 on the GPU, shape [H, N], optional

        Returns
        -------
        torch.Tensor of int32 on the GPU, shape [H, N]
        """
        import torch

        if out is None:
            out = torch.empty((self.heads, self.n), dtype=torch.int32, device=topk32.device)
        self.launch_regroup(topk32, lengths64, out)
        return out

    def launch_regroup(self, topk32, lengths64, perm, *extra) -> None:
        """One launch of ``self.func`` with the regroup's arguments (:data:`ARG_FORMAT`), then
        ``extra`` (a fused kernel's own), after zeroing the chunks' handshake words."""
        g = self.grouping
        if self.handshake:
            zero_async(self.scratch)
        launch(
            self.func, (self.num_windows, self.heads), (self.threads, 1, 1),
            topk32.data_ptr(), 0 if lengths64 is None else lengths64.data_ptr(),
            self.windows.data_ptr(), self.chunks.data_ptr(), perm.data_ptr(),
            self.scratch.data_ptr(), g.capacity * self.page_size, self.n, self.k,
            self.num_chunks, g.group, g.capacity, self.uniform, *extra,
        )


def uniform_windows(wins: np.ndarray, chunks: np.ndarray, n: int, window: int) -> bool:
    """Whether window m is rows ``[m·W, min((m+1)·W, N))`` of one chunk holding every row.

    Parameters
    ----------
    wins : numpy.ndarray of int32, shape [M, 4]
        ``(first row, rows, chunk index, 0)`` per window (:func:`~.tables.regroup_tables`).
    chunks : numpy.ndarray of int32, shape [C, 4]
        ``(first row, rows, number of windows, 0)`` per chunk.
    n : int
        N.
    window : int
        W.
    """
    if len(chunks) != 1 or tuple(chunks[0, :3]) != (0, n, len(wins)):
        return False
    first = np.arange(len(wins)) * window
    want = np.stack([first, np.minimum(window, n - first), np.zeros_like(first)], axis=1)
    return bool(np.array_equal(wins[:, :3], want))


def regroup_launch(n, heads, k, grouping: Grouping, request_offsets=None, page_size=128,
                   variant=None) -> RegroupLaunch:
    """The cached :class:`RegroupLaunch` of these shapes, grouping and boundaries.

    Its tables are uploaded once; the 64 most recently used launches are kept.

    Parameters
    ----------
    n, heads, k : int
        N rows per KV head, H KV heads, K ids per row.
    grouping : Grouping
    request_offsets : array_like of int, shape [R + 1], optional
    page_size : int
        P.
    variant : str, optional
        See :func:`pick_variant`.
    """
    offsets = as_request_offsets(request_offsets, n)
    return cached_launch("regroup", (n, heads, k, grouping, offsets.tobytes(), page_size, variant),
                         lambda: RegroupLaunch(n, heads, k, grouping, offsets, page_size, variant))


def regroup_inputs(topk, grouping: Grouping, lengths, page_size):
    """The checked inputs of a GPU regroup (this module's and the fused online plan's).

    Parameters
    ----------
    topk, grouping, lengths, page_size
        As :func:`gpu_greedy_regroup`.

    Returns
    -------
    (ids, lengths, page_size)
        ``ids`` int32 on the GPU ``[N, K]`` or ``[H, N, K]``; ``lengths`` int64 on the GPU
        ``[N]`` or None.
    """
    require_gpu()
    import torch

    if grouping.capacity > MAX_CAPACITY:
        raise PageWeaverInputError(
            f"the GPU regroup's bitmaps hold B <= {MAX_CAPACITY} pages, got "
            f"B = {grouping.capacity}; use pageweaver_edu.regroup.greedy_regroup for larger "
            "capacities")
    page_size = positive_int(page_size, "page_size P")
    if grouping.window > MAX_WINDOW:
        raise PageWeaverInputError(
            f"the GPU regroup holds W <= {MAX_WINDOW}, got W = {grouping.window}")
    ids = cuda_ids(topk, "topk", (2, 3))
    n = ids.shape[-2]
    if lengths is not None:
        if isinstance(lengths, torch.Tensor) and lengths.is_cuda:
            if tuple(lengths.shape) != (n,):
                raise PageWeaverInputError(f"lengths must have shape [N] = ({n},)")
            lengths = lengths.to(torch.int64).contiguous()
        else:
            lengths = torch.from_numpy(as_positions(lengths, n, "lengths")).cuda()
    return ids, lengths, page_size


def gpu_greedy_regroup(topk, grouping: Grouping, *, request_offsets=None, lengths=None,
                       page_size: int = 128, variant: str | None = None):
    """Greedy regroup on the GPU; same rule and result as the CPU reference.

    Parameters
    ----------
    topk : torch.Tensor or array_like of int, shape [N, K] or [H, N, K]
        Page ids (``< 0`` padding). A CUDA int32 tensor is used in place; anything else is
        copied/converted on the device (ids above int32 clamp to int32 max: fallback).
    grouping : Grouping
        As :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`; W ≤ 256 and B ≤ 512 here.
    request_offsets : array_like of int, shape [R + 1], optional
    lengths : torch.Tensor or array_like of int, shape [N], optional
        L_i, shared by the heads (a CUDA tensor is used as it is).
    page_size : int
        P.
    variant : str, optional
        Kernel variant (see :data:`VARIANTS`); default: the fastest measured for W.

    Returns
    -------
    torch.Tensor of int32 on the GPU, shape [N] (or [H, N])
        π: execution slot r runs original query ``perm[r]`` (per head).
    """
    import torch

    ids, lengths, page_size = regroup_inputs(topk, grouping, lengths, page_size)
    batched = ids.dim() == 3
    if not batched:
        ids = ids.unsqueeze(0)
    heads, n, k = ids.shape
    prepared = regroup_launch(n, heads, k, grouping, request_offsets, page_size, variant)
    if n == 0:
        out = torch.empty((heads, 0), dtype=torch.int32, device=ids.device)
    else:
        out = prepared.run(ids, lengths)
    return out if batched else out[0]
