"""Union8 / Union4 with an FP8 E4M3 KV cache (``kernels/union8_fp8.cu``, ``wgmma``).

The arithmetic of docs/definitions.md#fp8-arithmetic, replayed op for op on the CPU by
:mod:`pageweaver_edu.replay.fp8`: BF16 ``q`` ``[N, H*16, 128]`` (quantized per (query, head)
row inside the kernel), the paged cache as :class:`~.fp8_tiles.Fp8Cache` tiles, BF16 output.
"""

from __future__ import annotations

from ..core.inputs import PageWeaverInputError
from .fp8_tiles import TILE_BYTES, Fp8Cache
from .union_attention import UnionAttention, UnionEntry, check_operand

#: Timing-only builds of the FP8 kernels (``PW_ABLATE``; their outputs are meaningless):
#: no softmax step, no products, neither, (cluster kernel only) every warp working on every
#: page of the union, and (union8ws only) no page copied into the ring.
ABLATIONS = {"full": 0, "no_softmax": 1, "no_mma": 2, "ring_only": 3, "every_page": 4,
             "no_copies": 8}
#: The ones the cluster kernels build.
CLUSTER_ABLATIONS = ("full", "no_softmax", "no_mma", "ring_only", "every_page")


def ablation_option(ablate: str, allowed: tuple[str, ...]) -> str:
    """The ``-DPW_ABLATE`` flag of the build ``ablate`` (a key of :data:`ABLATIONS` in
    ``allowed``)."""
    if ablate not in allowed:
        raise PageWeaverInputError(f"ablate must be one of {sorted(allowed)}, got {ablate!r}")
    return f"-DPW_ABLATE={ABLATIONS[ablate]}"


class Fp8UnionAttention(UnionAttention):
    """Union8 (g = 8) and Union4 (g = 4) over an FP8 cache.

    ``kv`` is an :class:`~.fp8_tiles.Fp8Cache` on the GPU (:func:`~.fp8_tiles.fp8_cache_from_bf16`
    or :func:`~.fp8_tiles.fp8_cache_from_kv`); ``ablate`` (one of :data:`CLUSTER_ABLATIONS`)
    builds a timing-only variant (chapter 07's lockstep table); the other parameters are
    :class:`~.union_attention.UnionAttention`'s.
    """

    source = "union8_fp8.cu"
    entries = {8: UnionEntry("union8_fp8", 2), 4: UnionEntry("union4_fp8", 1)}
    operand_format = "PPPPPP"  # q, k tiles, v^T tiles, o, k scales, v scales

    def __init__(self, q, kv: Fp8Cache, causal_pos=None, lengths=None, slots: int = 2,
                 scale=None, out=None, ablate: str = "full"):
        option = ablation_option(ablate, CLUSTER_ABLATIONS)
        super().__init__(q, kv, causal_pos, lengths, slots, scale, out)
        self.build_options = () if ablate == "full" else (option,)

    @classmethod
    def smem_bytes(cls, slots: int) -> int:
        """1 KiB alignment slack, ``slots`` x (K + V^T tiles) and 16 B of barriers per slot."""
        return 1024 + slots * 2 * TILE_BYTES + 16 * slots

    def bind(self, kv: Fp8Cache) -> tuple[int, int]:
        """``kv``: an :class:`~.fp8_tiles.Fp8Cache` whose tiles are on the GPU."""
        import torch

        for name, x in (("k_tiles", kv.k_tiles), ("vt_tiles", kv.vt_tiles)):
            check_operand(name, x, torch.uint8)
            if tuple(x.shape[1:]) != (kv.heads, TILE_BYTES) or x.shape != kv.k_tiles.shape:
                raise PageWeaverInputError(
                    f"{name} must be uint8 [pages, H, 16384] (pack_tiles), got "
                    f"{tuple(x.shape)}")
        self.cache = kv
        return kv.heads, kv.pages

    def operands(self) -> tuple[int, ...]:
        """q, K tiles, V^T tiles, o, K scales, V scales."""
        c = self.cache
        return (self.q.data_ptr(), c.k_tiles.data_ptr(), c.vt_tiles.data_ptr(),
                self.out.data_ptr(), c.k_scale.data_ptr(), c.v_scale.data_ptr())
