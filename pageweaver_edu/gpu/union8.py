"""Union8 / Union4 with a BF16 KV cache (``kernels/union8.cu``, ``mma.sync``).

Shapes (H = KV heads, 16 local Q heads per KV head, d = P = 128): ``q`` and the output
``[N, H*16, 128]`` bf16, ``k`` / ``v`` ``[pages, H, 128, 128]`` bf16 (``[pages, 128, 128]``
when H = 1). KV pages are staged in half-page stages of 64 tokens: a slot holds a stage of K
and of V as 8-token blocks with 16 bytes of padding each (docs/definitions.md#slot-protocol).
"""

from __future__ import annotations

from ..core.inputs import PageWeaverInputError
from .union_attention import DIM, PAGE, UnionAttention, UnionEntry, check_operand

STAGE = 64  # tokens per KV stage (half a page): one slot holds a stage of K and of V
BLOCK_STRIDE = 8 * DIM * 2 + 16  # 8-token K/V copy block + 16 B padding in shared memory


class Bf16UnionAttention(UnionAttention):
    """Union8 (g = 8, a cluster of two CTAs) and Union4 (g = 4, one CTA) over a BF16 KV cache.

    ``kv`` is the pair ``(k, v)`` of contiguous bf16 CUDA tensors ``[pages, H, 128, 128]``
    (or ``[pages, 128, 128]`` for one KV head); the other parameters are
    :class:`~.union_attention.UnionAttention`'s.
    """

    source = "union8.cu"
    entries = {8: UnionEntry("union8_bf16", 2), 4: UnionEntry("union4_bf16", 1)}
    operand_format = "PPPP"  # q, k, v, o
    prebuilt_slots = (2, 3)  # 3: benchmarks/bench_union8.py's variant

    @classmethod
    def smem_bytes(cls, slots: int) -> int:
        """``slots`` KV slots (a stage of K and of V in padded 8-token blocks) + 16 B of
        barriers per slot: 66,080 B for two slots, so two CTAs fit an SM."""
        return slots * 2 * (STAGE // 8) * BLOCK_STRIDE + 16 * slots

    def bind(self, kv) -> tuple[int, int]:
        """``kv = (k, v)``: contiguous bfloat16 CUDA tensors [pages, H, 128, 128] (or
        [pages, 128, 128] for one KV head)."""
        import torch

        k, v = kv
        if k.dim() == 3:
            k, v = k.unsqueeze(1), v.unsqueeze(1)
        if k.shape != v.shape or tuple(k.shape[2:]) != (PAGE, DIM):
            raise PageWeaverInputError(
                f"need k/v [pages, H, 128, 128]; got {tuple(k.shape)}, {tuple(v.shape)}")
        check_operand("k", k, torch.bfloat16)
        check_operand("v", v, torch.bfloat16)
        self.k, self.v = k, v
        return int(k.shape[1]), int(k.shape[0])

    def operands(self) -> tuple[int, ...]:
        """q, k, v, o."""
        return (self.q.data_ptr(), self.k.data_ptr(), self.v.data_ptr(), self.out.data_ptr())
