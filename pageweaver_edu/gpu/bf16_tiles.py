"""A BF16 KV cache in half-page tiles, the layout the warp-specialized BF16 Union8 reads.

Per (page, KV head, half page of 64 tokens) a 16 KiB K tile (64 tokens x 128 dims as two
128-byte-swizzled blocks of 64 dims) and a 16 KiB V^T tile (128 dims x 64 tokens, one 128-byte
row per dim, 128-byte swizzle), each the exact shared-memory image the ``wgmma`` operands read
(``kernels/bf16_wgmma.cuh``), so one bulk copy per tile lands it ready.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.inputs import PageWeaverInputError
from .fp8_tiles import TILE_BYTES, swizzle_rows
from .union_attention import DIM, PAGE


@dataclass
class Bf16HalfPages:
    """The tiles of a BF16 cache: ``k_tiles`` and ``vt_tiles`` uint8 ``[pages, H, 2, 16384]``."""

    k_tiles: object
    vt_tiles: object

    @property
    def pages(self) -> int:
        return int(self.k_tiles.shape[0])

    @property
    def heads(self) -> int:
        return int(self.k_tiles.shape[1])


def bf16_half_pages(k, v) -> Bf16HalfPages:
    """Pack BF16 K / V into half-page tiles (on the device of ``k``).

    Parameters
    ----------
    k, v : torch.Tensor of bfloat16, shape [pages, H, 128, 128] or [pages, 128, 128]
        Token-major K and V.

    Returns
    -------
    Bf16HalfPages
    """
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
