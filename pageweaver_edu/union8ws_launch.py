"""Launch the warp-specialized FP8 Union8 kernel (``kernels/union8ws.cu``) on torch CUDA tensors.

Same inputs, plan and arithmetic as the cluster kernel of ``kernels/union8_fp8.cu`` (outputs
bitwise identical): ``q`` ``[N, H*16, 128]`` bf16, the paged FP8 cache
(:class:`~pageweaver_edu.union8_fp8_launch.Fp8Cache`) and a g = 8 union plan
(:class:`~pageweaver_edu.union8_launch.DevicePlan`). The kernel is persistent: one CTA of 384
threads per SM takes groups from a ticket counter that lives in this object and is never reset
(each launch passes the counter's value before it; a launch adds H*G + CTAs to it).
"""

from __future__ import annotations

import numpy as np

from .device import require_gpu
from .gpu.loader import get_kernel, launch
from .inputs import PageWeaverInputError
from .union8_fp8_launch import DIM, HEADS, TILE_BYTES, Fp8Cache
from .union8_launch import DevicePlan, _positions, _ptr

THREADS = 384  # producer warpgroup + two consumer warpgroups
GROUP = 8
ARG_FORMAT = "P" * 7 + "Q" + "P" * 7 + "iiiifi"  # union8ws::Args, 144 bytes
Q8_TILE_BYTES = 4 * HEADS * DIM  # one consumer's 4 queries x 16 heads x 128 dims, E4M3


STAGES = 6


def smem_bytes(stages: int = STAGES) -> int:
    """Dynamic shared memory of the CTA (``union8ws::kSmemBytes``): 1 KiB alignment slack,
    ``stages`` x 32 KiB (K + V^T tile of a page, or a group's BF16 Q), a Q8 tile per consumer,
    stage metadata (8 B), two 80-byte headers and the barriers (full / empty per stage, header
    full / free per header)."""
    return (1024 + stages * 2 * TILE_BYTES + 2 * Q8_TILE_BYTES + stages * 8 + 2 * 80
            + 16 * stages + 32)


ABLATIONS = {"full": 0, "no_softmax": 1, "no_mma": 2, "ring_only": 3}


def get_ws_kernel(stages: int = STAGES, ablate: str = "full", overlap: bool = True):
    """(prepared function, dynamic smem bytes) of the kernel built with ``stages`` ring stages;
    ``ablate`` other than "full" builds a timing-only variant (see ``PW_WS_ABLATE``);
    ``overlap=False`` runs each product before the softmax that needs it (``PW_WS_OVERLAP``)."""
    if stages not in range(2, 7):
        raise PageWeaverInputError(f"stages must be 2..6 (shared memory), got {stages!r}")
    if ablate not in ABLATIONS:
        raise PageWeaverInputError(f"ablate must be one of {sorted(ABLATIONS)}, got {ablate!r}")
    smem = smem_bytes(stages)
    func = get_kernel("union8ws.cu", "union8ws_fp8", ARG_FORMAT, arch="compute_90a",
                      code="sm_90a",
                      options=(f"-DPW_WS_STAGES={stages}", f"-DPW_WS_ABLATE={ABLATIONS[ablate]}",
                               f"-DPW_WS_OVERLAP={int(bool(overlap))}"),
                      max_dynamic_shared=smem)
    return func, smem


class WsUnionAttention:
    """A prepared launch of the warp-specialized FP8 Union8 for fixed q, cache and positions.

    ``stages`` is the ring depth (6: 209 KiB of shared memory); ``ablate`` and ``overlap`` build
    the variants of the benchmark's step table (see :func:`get_ws_kernel`).
    """

    def __init__(self, q, cache: Fp8Cache, causal_pos=None, lengths=None, stages=STAGES,
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
        self.func, self.smem = get_ws_kernel(stages, ablate, overlap)
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
               self.out.data_ptr(), c.k_scale.data_ptr(), c.v_scale.data_ptr(),
               self.tickets.data_ptr(), self.issued,
               plan.perm.data_ptr(), plan.groups.data_ptr(), plan.page_offsets.data_ptr(),
               plan.pages.data_ptr(), plan.masks.data_ptr(), _ptr(self.causal),
               _ptr(self.lengths), self.n, plan.num_groups, self.heads, c.pages,
               self.scale_log2, 0, shared_size=self.smem)
        self.issued += total + ctas
        return self.out
