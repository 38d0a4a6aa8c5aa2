"""The FP8 KV cache in the layout the FP8 Union kernels read: swizzled K and V^T page tiles.

Per (page, KV head) a 16 KiB K tile and a 16 KiB V^T tile, each stored as the exact
shared-memory image the ``wgmma`` B operand reads (128-byte swizzle), so one bulk copy per tile
lands it ready; one float32 scale per KV head for K and for V
(docs/definitions.md#fp8-arithmetic).

Tile layouts (bytes; ``sw(r, b) = 128 r + 16 ((b >> 4) ^ (r & 7)) + (b & 15)``):
K tile: ``tile[sw(t, c)] = k8[t, c]`` (token t, dim c). V^T tile: ``tile[sw(n, a)] =
v8[tau(a), n]`` (dim n, position a), with :func:`tau` the token order inside 32-token blocks
that makes the softmax registers the PV product's A fragments (the kernel's header explains
the K-major rule and why V is stored transposed). Everything here is torch on any device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..replay.e4m3 import Fp8KV, quantize_kv
from .union_attention import DIM, PAGE

TILE_BYTES = PAGE * DIM  # 16 KiB


def tau() -> np.ndarray:
    """``tau[a]``: the page token held in column ``a`` of a V^T tile (a permutation of 0..127)."""
    a = np.arange(PAGE)
    return (32 * (a >> 5) + 16 * ((a >> 4) & 1) + 8 * ((a >> 1) & 1) + 2 * ((a >> 2) & 3)
            + (a & 1))


def _swizzle_index(rows: int, device=None):
    """``idx[r, c]`` = source 16-byte chunk of stored chunk ``c`` in row ``r`` of a tile of
    ``rows`` 128-byte rows (XOR is its own inverse, so the same index swizzles and unswizzles)."""
    import torch

    r = torch.arange(rows, device=device)[:, None]
    c = torch.arange(8, device=device)[None, :]
    return c ^ (r & 7)


def swizzle_rows(rows):
    """``rows`` uint8 ``[..., R, 128]`` -> the same bytes in 128-byte-swizzle order (16-byte
    chunk ``c`` of row ``r`` stored at chunk ``c ^ (r & 7)``), the layout wgmma descriptors
    with the 128-byte swizzle read."""
    n = rows.shape[-2]
    x = rows.reshape(*rows.shape[:-1], 8, 16)
    idx = _swizzle_index(n, rows.device)[:, :, None].expand(n, 8, 16)
    idx = idx.expand(*x.shape)
    return x.gather(-2, idx).reshape(rows.shape)


def pack_tiles(kv: Fp8KV):
    """(k tiles, v^T tiles) uint8 ``[pages, H, 16384]`` of an FP8 cache in logical layout."""
    import torch

    k = kv.k8.view(torch.uint8)
    v = kv.v8.view(torch.uint8)
    order = torch.from_numpy(tau()).to(v.device)
    vt = v.transpose(-1, -2)[..., order]  # [pages, H, dim n, position a] = v[tau(a), n]
    pages, heads = k.shape[:2]
    return (swizzle_rows(k).reshape(pages, heads, TILE_BYTES).contiguous(),
            swizzle_rows(vt.contiguous()).reshape(pages, heads, TILE_BYTES).contiguous())


def unpack_tiles(k_tiles, vt_tiles):
    """Inverse of :func:`pack_tiles`.

    Parameters
    ----------
    k_tiles, vt_tiles : torch.Tensor of uint8, shape [pages, H, 16384]
        The K tiles and V^T tiles as :func:`pack_tiles` writes them.

    Returns
    -------
    k8, v8 : torch.Tensor of float8_e4m3fn, shape [pages, H, 128, 128]
        Logical K and V, token-major.
    """
    import torch

    pages, heads = k_tiles.shape[:2]
    k = swizzle_rows(k_tiles.reshape(pages, heads, PAGE, DIM))
    vt = swizzle_rows(vt_tiles.reshape(pages, heads, DIM, PAGE))
    inv = torch.from_numpy(np.argsort(tau())).to(vt.device)
    v = vt[..., inv].transpose(-1, -2)
    return (k.contiguous().view(torch.float8_e4m3fn),
            v.contiguous().view(torch.float8_e4m3fn))


@dataclass
class Fp8Cache:
    """The paged FP8 cache as the kernel reads it, plus its logical form (for emulation).

    Attributes
    ----------
    k_tiles, vt_tiles : torch.Tensor of uint8, shape [pages, H, 16384]
        Per (page, KV head) the K tile and the V^T tile in shared-memory image layout.
    k_scale, v_scale : torch.Tensor of float32, shape [H]
        Dequantization scales: ``k = k8 * k_scale[h]``.
    logical : Fp8KV
        The same cache in logical layout.
    """

    k_tiles: object
    vt_tiles: object
    k_scale: object
    v_scale: object
    logical: Fp8KV

    @property
    def pages(self) -> int:
        """Pages in the pool."""
        return int(self.k_tiles.shape[0])

    @property
    def heads(self) -> int:
        """H, KV heads."""
        return int(self.k_tiles.shape[1])


def fp8_cache_from_kv(kv: Fp8KV) -> Fp8Cache:
    """Pack a logical FP8 cache (on the device of ``kv``) into kernel tiles."""
    import torch

    kt, vt = pack_tiles(kv)
    return Fp8Cache(kt, vt, kv.k_scale.to(kt.device, torch.float32).contiguous(),
                    kv.v_scale.to(kt.device, torch.float32).contiguous(), kv)


def fp8_cache_from_bf16(k, v) -> Fp8Cache:
    """Quantize K/V with per-head scales and pack them for the kernel.

    Parameters
    ----------
    k, v : torch.Tensor of float (bfloat16 as a rule), shape [pages, H, 128, 128] or
        [pages, 128, 128]
        Quantized by :func:`pageweaver_edu.replay.e4m3.quantize_kv`, on their own device.

    Returns
    -------
    Fp8Cache
    """
    return fp8_cache_from_kv(quantize_kv(k, v))
