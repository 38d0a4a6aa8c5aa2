"""Greedy regroup on the GPU (``kernels/regroup.cu``): π identical to the CPU reference.

:func:`gpu_greedy_regroup` has the signature of
:func:`pageweaver_edu.regroup.bitmap.greedy_regroup` and returns π as an int32 torch tensor on
the GPU. A ``[H, N, K]`` input regroups H KV heads (each its own Top-K) in one launch.
The launch needs no host synchronisation: window and chunk tables depend only on the shape
and the boundaries and are cached with the launch plan; the capacity fallback is decided in
the kernel.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..core.inputs import PageWeaverInputError, as_positions, as_request_offsets, positive_int
from .device import require_gpu
from .loader import get_kernel, launch
from .tables import MAX_CAPACITY, MAX_WINDOW, regroup_tables

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
    """Kernel variant for a window of W queries and K ids per row (``variant`` overrides).

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


ARG_FORMAT = "PPPPPPqiiiiiii"
INT32_MAX = 2**31 - 1


def as_cuda_ids(x, name: str, ndims: tuple[int, ...]):
    """``x`` as a contiguous int32 CUDA tensor (ids above int32 are clamped, below -1 → -1)."""
    import torch

    if not isinstance(x, torch.Tensor):
        arr = np.asarray(x)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            if arr.size or arr.dtype != np.float64:
                raise PageWeaverInputError(f"{name} must have an integer dtype, got {arr.dtype}")
            arr = arr.astype(np.int64)
        x = torch.from_numpy(np.ascontiguousarray(arr))
    if x.dtype == torch.bool or x.is_floating_point() or x.is_complex():
        raise PageWeaverInputError(f"{name} must have an integer dtype, got {x.dtype}")
    if x.dim() not in ndims:
        dims = " or ".join(map(str, ndims))
        raise PageWeaverInputError(f"{name} must have {dims} dims, got {tuple(x.shape)}")
    if not x.is_cuda:
        x = x.cuda()
    if x.dtype != torch.int32:
        x = x.clamp(-1, INT32_MAX).to(torch.int32)
    x = x.contiguous()
    if x.data_ptr() % 16:  # the kernels read rows with 16-byte loads
        x = x.clone()
    return x


class RegroupPlan:
    """A prepared regroup launch for fixed shapes and boundaries (reusable, no host work)."""

    def __init__(self, n, heads, k, window, group, capacity, request_offsets, chunk_size,
                 page_size, variant, options=()):
        import torch

        self.n, self.heads, self.k = n, heads, k
        self.group, self.capacity, self.page_size = group, capacity, page_size
        self.variant = pick_variant(window, variant, k)
        self.threads = VARIANTS[self.variant][0]  # one thread per query of the largest W
        wins, chunks = regroup_tables(n, window, group, request_offsets, chunk_size)
        self.windows = torch.from_numpy(wins).cuda()
        self.chunks = torch.from_numpy(chunks).cuda()
        self.num_windows, self.num_chunks = len(wins), len(chunks)
        # One chunk cut into W-row windows (the common case): the kernel computes its window
        # from blockIdx and reads no table, which saves a dependent global load.
        self.uniform = window if uniform_windows(wins, chunks, n, window) else 0
        # The capacity-fallback handshake: uint64 (arrived | flagged << 32, finished) per
        # (launch parity, head, chunk). Launch e uses parity e % 2 and zeroes the other
        # parity's words for launch e + 1 (one plan per stream).
        self.scratch = torch.zeros(max(1, 4 * heads * len(chunks)), dtype=torch.int64,
                                   device="cuda")
        self.launches = 0
        # options: extra nvcc flags (the benchmark's -DPW_PHASE_CLOCKS build)
        self.func = get_kernel("regroup.cu", "regroup_" + self.variant, ARG_FORMAT,
                               options=tuple(options))

    def run(self, topk32, lengths64=None, out=None):
        """π for ``topk32`` (int32 CUDA, [heads, n, k] contiguous) → int32 [heads, n]."""
        import torch

        if out is None:
            out = torch.empty((self.heads, self.n), dtype=torch.int32, device=topk32.device)
        launch(
            self.func, (self.num_windows, self.heads), (self.threads, 1, 1),
            topk32.data_ptr(), 0 if lengths64 is None else lengths64.data_ptr(),
            self.windows.data_ptr(), self.chunks.data_ptr(), out.data_ptr(),
            self.scratch.data_ptr(), self.capacity * self.page_size, self.n, self.k,
            self.num_chunks, self.group, self.capacity, self.uniform, self.launches & 1,
        )
        self.launches += 1
        return out


def uniform_windows(wins: np.ndarray, chunks: np.ndarray, n: int, window: int) -> bool:
    """Whether window m is rows ``[m·W, min((m+1)·W, N))`` of one chunk holding every row."""
    if len(chunks) != 1 or tuple(chunks[0, :3]) != (0, n, len(wins)):
        return False
    first = np.arange(len(wins)) * window
    want = np.stack([first, np.minimum(window, n - first), np.zeros_like(first)], axis=1)
    return bool(np.array_equal(wins[:, :3], want))


_plans: OrderedDict = OrderedDict()


def regroup_plan(n, heads, k, window, group=8, capacity=512, request_offsets=None,
                 chunk_size=None, page_size=128, variant=None) -> RegroupPlan:
    """Cached :class:`RegroupPlan` (the tables are uploaded once per shape/boundaries)."""
    offsets = as_request_offsets(request_offsets, n)
    key = (n, heads, k, window, group, capacity, offsets.tobytes(), chunk_size, page_size,
           variant)
    plan = _plans.get(key)
    if plan is None:
        plan = RegroupPlan(n, heads, k, window, group, capacity, offsets, chunk_size,
                           page_size, variant)
        _plans[key] = plan
        while len(_plans) > 64:
            _plans.popitem(last=False)
    _plans.move_to_end(key)
    return plan


def gpu_greedy_regroup(topk, window: int, group: int = 8, capacity: int = 512,
                       request_offsets=None, chunk_size: int | None = None, lengths=None,
                       page_size: int = 128, variant: str | None = None):
    """Greedy regroup (§4) on the GPU; same rule and result as the CPU reference.

    Parameters
    ----------
    topk : torch.Tensor or array_like of int, shape [N, K] or [H, N, K]
        Page ids (``< 0`` padding). A CUDA int32 tensor is used in place; anything else is
        copied/converted on the device (ids above int32 clamp to int32 max: fallback).
    window, group, capacity, request_offsets, chunk_size, lengths, page_size
        As :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`; W ≤ 256 and B ≤ 512 here.
        ``lengths`` ([N], shared by the heads) may be a CUDA tensor.
    variant : str, optional
        Kernel variant (see :data:`VARIANTS`); default: the fastest measured for W.

    Returns
    -------
    torch.Tensor of int32 on the GPU, shape [N] (or [H, N])
        π: execution slot r runs original query ``perm[r]`` (per head).
    """
    require_gpu()
    import torch

    capacity = positive_int(capacity, "capacity B")
    if capacity > MAX_CAPACITY:
        raise PageWeaverInputError(
            f"the GPU regroup's bitmaps hold B <= {MAX_CAPACITY} pages, got B = {capacity}; "
            "use pageweaver_edu.regroup.bitmap.greedy_regroup for larger capacities"
        )
    page_size = positive_int(page_size, "page_size P")
    if window > MAX_WINDOW:
        raise PageWeaverInputError(f"the GPU regroup holds W <= {MAX_WINDOW}, got W = {window}")
    ids = as_cuda_ids(topk, "topk", (2, 3))
    batched = ids.dim() == 3
    if not batched:
        ids = ids.unsqueeze(0)
    heads, n, k = ids.shape
    if lengths is not None:
        if isinstance(lengths, torch.Tensor) and lengths.is_cuda:
            if tuple(lengths.shape) != (n,):
                raise PageWeaverInputError(f"lengths must have shape [N] = ({n},)")
            lengths = lengths.to(torch.int64).contiguous()
        else:
            lengths = torch.from_numpy(as_positions(lengths, n, "lengths")).cuda()
    plan = regroup_plan(n, heads, k, window, group, capacity, request_offsets, chunk_size,
                        page_size, variant)
    if n == 0:
        out = torch.empty((heads, 0), dtype=torch.int32, device=ids.device)
    else:
        out = plan.run(ids, lengths)
    return out if batched else out[0]
