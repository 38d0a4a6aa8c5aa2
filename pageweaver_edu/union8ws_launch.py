"""Launch the warp-specialized Union8 kernels (``kernels/union8ws.cu``) on torch CUDA tensors.

``q`` ``[N, H*16, 128]`` bf16, a g = 8 union plan
(:class:`~pageweaver_edu.union8_launch.DevicePlan`) and either

* the paged FP8 cache (:class:`~pageweaver_edu.union8_fp8_launch.Fp8Cache`): the kernel
  ``union8ws_fp8``, the same arithmetic as the cluster kernel of ``kernels/union8_fp8.cu``
  (outputs bitwise identical), or
* a BF16 cache in half-page tiles (:class:`Bf16HalfPages`, :func:`bf16_half_pages`): the kernel
  ``union8ws_bf16`` (BF16 products accumulated in FP32, ``kernels/bf16_wgmma.cuh``).

The kernels are persistent: one CTA of 384 threads per SM takes groups from a ticket counter
that lives in the launch object and is never reset (each launch passes the counter's value
before it; a launch adds H*G + CTAs to it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import require_gpu
from .gpu.loader import get_kernel, launch
from .inputs import PageWeaverInputError
from .union8_fp8_launch import DIM, HEADS, PAGE, TILE_BYTES, Fp8Cache, swizzle_rows
from .union8_launch import DevicePlan, _positions, _ptr

THREADS = 384  # producer warpgroup + two consumer warpgroups
GROUP = 8
ARG_FORMAT = "P" * 7 + "Q" + "P" * 7 + "iiiifi"  # union8ws::Args, 144 bytes
Q_TILE_BYTES = 4 * HEADS * DIM * 2  # one consumer's 4 queries x 16 heads x 128 dims, BF16


STAGES = 6


def smem_bytes(stages: int = STAGES) -> int:
    """Dynamic shared memory of the CTA (``union8ws::kSmemBytes``): 1 KiB alignment slack,
    ``stages`` x 32 KiB (K + V^T tile of a page or half page, or a group's BF16 Q), a Q tile per
    consumer, stage metadata (8 B), two 80-byte headers and the barriers (full / empty per
    stage, header full / free per header)."""
    return (1024 + stages * 2 * TILE_BYTES + 2 * Q_TILE_BYTES + stages * 8 + 2 * 80
            + 16 * stages + 32)


ABLATIONS = {"full": 0, "no_softmax": 1, "no_mma": 2, "ring_only": 3}


def get_ws_kernel(kv: str = "fp8", stages: int = STAGES, ablate: str = "full",
                  overlap: bool = True):
    """(prepared function, dynamic smem bytes) of ``union8ws_<kv>`` (kv "fp8" or "bf16") built
    with ``stages`` ring stages; ``ablate`` other than "full" builds a timing-only variant of the
    FP8 kernel (``PW_WS_ABLATE``); ``overlap=False`` runs each FP8 product before the softmax
    that needs it (``PW_WS_OVERLAP``)."""
    if kv not in ("fp8", "bf16"):
        raise PageWeaverInputError(f"kv must be 'fp8' or 'bf16', got {kv!r}")
    if stages not in range(2, 7):
        raise PageWeaverInputError(f"stages must be 2..6 (shared memory), got {stages!r}")
    if ablate not in ABLATIONS:
        raise PageWeaverInputError(f"ablate must be one of {sorted(ABLATIONS)}, got {ablate!r}")
    smem = smem_bytes(stages)
    func = get_kernel("union8ws.cu", f"union8ws_{kv}", ARG_FORMAT, arch="compute_90a",
                      code="sm_90a",
                      options=(f"-DPW_WS_STAGES={stages}", f"-DPW_WS_ABLATE={ABLATIONS[ablate]}",
                               f"-DPW_WS_OVERLAP={int(bool(overlap))}"),
                      max_dynamic_shared=smem)
    return func, smem


@dataclass
class Bf16HalfPages:
    """A BF16 paged cache as ``union8ws_bf16`` reads it: per (page, head, half page) a 16 KiB K
    tile (64 tokens x 128 dims as two 128-byte-swizzled blocks of 64 dims) and a 16 KiB V^T tile
    (128 dims x 64 tokens, 128-byte swizzle); uint8 ``[pages, H, 2, 16384]`` each."""

    k_tiles: object
    vt_tiles: object

    @property
    def pages(self) -> int:
        return int(self.k_tiles.shape[0])

    @property
    def heads(self) -> int:
        return int(self.k_tiles.shape[1])


def bf16_half_pages(k, v) -> Bf16HalfPages:
    """Pack BF16 K/V ``[pages, H, 128, 128]`` (or ``[pages, 128, 128]``) into half-page tiles."""
    import torch

    if k.dim() == 3:
        k, v = k.unsqueeze(1), v.unsqueeze(1)
    if k.shape != v.shape or tuple(k.shape[2:]) != (PAGE, DIM) or k.dtype != torch.bfloat16:
        raise PageWeaverInputError(f"need bf16 k/v [pages, H, 128, 128]; got {tuple(k.shape)}")
    pages, heads = k.shape[:2]
    half = PAGE // 2
    kb = k.reshape(pages, heads, 2, half, 2, DIM // 2)  # half, token, block, dim in block
    kb = kb.permute(0, 1, 2, 4, 3, 5).contiguous().view(torch.uint8)  # rows of 128 bytes
    vt = v.reshape(pages, heads, 2, half, DIM).transpose(-1, -2).contiguous().view(torch.uint8)
    return Bf16HalfPages(swizzle_rows(kb).reshape(pages, heads, 2, TILE_BYTES).contiguous(),
                         swizzle_rows(vt).reshape(pages, heads, 2, TILE_BYTES).contiguous())


class WsUnionAttention:
    """A prepared launch of the warp-specialized Union8 for fixed q, cache and positions: the FP8
    kernel for an :class:`Fp8Cache`, the BF16 one for a :class:`Bf16HalfPages` cache.

    ``stages`` is the ring depth (6: 209 KiB of shared memory); ``ablate`` and ``overlap`` build
    the variants of the benchmark's step table (see :func:`get_ws_kernel`).
    """

    def __init__(self, q, cache, causal_pos=None, lengths=None, stages=STAGES,
                 scale=None, out=None, ablate="full", overlap=True):
        import torch

        require_gpu()
        n, qh, d = q.shape
        if d != DIM or qh != HEADS * cache.heads:
            raise PageWeaverInputError(
                f"need q [N, H*16, 128] with H = {cache.heads}; got {tuple(q.shape)}")
        if q.dtype != torch.bfloat16 or not q.is_cuda or not q.is_contiguous():
            raise PageWeaverInputError("q must be a contiguous bf16 CUDA tensor")
        self.q, self.cache, self.n, self.heads = q, cache, n, cache.heads
        self.causal = _positions(causal_pos, n, "causal_pos")
        self.lengths = _positions(lengths, n, "lengths")
        self.kv = "fp8" if isinstance(cache, Fp8Cache) else "bf16"
        if self.kv == "bf16" and not isinstance(cache, Bf16HalfPages):
            raise PageWeaverInputError("cache must be an Fp8Cache or Bf16HalfPages")
        self.func, self.smem = get_ws_kernel(self.kv, stages, ablate, overlap)
        self.sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        self.tickets = torch.zeros(1, dtype=torch.int64, device=q.device)
        self.issued = 0  # the counter's value before the next launch
        self.scale_log2 = float((scale or DIM**-0.5) * np.log2(np.e))
        self.out = torch.empty_like(q) if out is None else out

    def run(self, plan: DevicePlan):
        """Launch over ``plan`` (g = 8) and return ``self.out``."""
        if plan.group != GROUP or plan.heads != self.heads or plan.n != self.n:
            raise PageWeaverInputError(
                f"union8ws needs a plan with g = 8, H = {self.heads}, N = {self.n}; got "
                f"g = {plan.group}, H = {plan.heads}, N = {plan.n}")
        total = plan.num_groups * plan.heads
        if total == 0:
            return self.out
        ctas = min(self.sms, total)
        c = self.cache
        launch(self.func, (ctas, 1), (THREADS, 1, 1),
               self.q.data_ptr(), c.k_tiles.data_ptr(), c.vt_tiles.data_ptr(),
               self.out.data_ptr(), _ptr(getattr(c, "k_scale", None)),
               _ptr(getattr(c, "v_scale", None)),
               self.tickets.data_ptr(), self.issued,
               plan.perm.data_ptr(), plan.groups.data_ptr(), plan.page_offsets.data_ptr(),
               plan.pages.data_ptr(), plan.masks.data_ptr(), _ptr(self.causal),
               _ptr(self.lengths), self.n, plan.num_groups, self.heads, c.pages,
               self.scale_log2, 0, shared_size=self.smem)
        self.issued += total + ctas
        return self.out
