"""The BF16 half-page tiles of the warp-specialized Union8 (pageweaver_edu.gpu.bf16_tiles)
hold every K and V element where kernels/bf16_wgmma.cuh reads it: K tile of half h, block b,
row r (token 64h + r), byte 2x of dim 64b + x at chunk (2x // 16) ^ (r & 7); V^T tile of half h,
row n (dim n), bytes of token 64h + a at chunk (2a // 16) ^ (n & 7)."""

from __future__ import annotations

import numpy as np
import torch

from pageweaver_edu.gpu import Bf16WsUnionAttention, Fp8WsUnionAttention, bf16_half_pages


def _at(tile: np.ndarray, row: int, col: int) -> int:
    """The uint16 at logical (row, col) of a 128-byte-swizzled tile of bf16 rows."""
    chunk = ((2 * col) // 16) ^ (row & 7)
    off = row * 128 + chunk * 16 + (2 * col) % 16
    return int(tile[off:off + 2].view(np.uint16)[0])


def test_half_page_tiles_place_every_element():
    gen = torch.Generator().manual_seed(3)
    k = torch.randn((3, 2, 128, 128), generator=gen).to(torch.bfloat16)
    v = torch.randn((3, 2, 128, 128), generator=gen).to(torch.bfloat16)
    c = bf16_half_pages(k, v)
    assert tuple(c.k_tiles.shape) == (3, 2, 2, 16384) and c.pages == 3 and c.heads == 2
    kb = k.view(torch.uint16).numpy()
    vb = v.view(torch.uint16).numpy()
    kt, vt = c.k_tiles.numpy(), c.vt_tiles.numpy()
    rng = np.random.default_rng(0)
    for _ in range(400):
        p, h, t, d = rng.integers(3), rng.integers(2), rng.integers(128), rng.integers(128)
        half, row = divmod(int(t), 64)
        block, x = divmod(int(d), 64)
        assert _at(kt[p, h, half, block * 8192:], row, x) == kb[p, h, t, d]
        assert _at(vt[p, h, half], int(d), row) == vb[p, h, t, d]


def test_shared_memory_fits_one_block():
    for cls in (Bf16WsUnionAttention, Fp8WsUnionAttention):
        assert cls.smem_bytes(6) <= 232448  # 227 KiB: an H200 block's dynamic shared memory
