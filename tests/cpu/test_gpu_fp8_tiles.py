"""CPU checks of the FP8 kernel's data layouts (kernels/union8_fp8.cu, gpu/fp8_tiles.py).

A model of what the hardware reads, written independently of the packing code:
* shared memory with the 128-byte swizzle: logical byte offset x of a 1 KiB-aligned tile is
  stored at x ^ (((x >> 7) & 7) << 4) (CUTLASS Swizzle<3,4,3>); a K-major wgmma B operand
  with start address base + 32 ks reads row n, column k at logical offset 128 n + 32 ks + k;
* register fragments of wgmma m64nNk32 (CUTLASS ALayout_64x32 / CLayout_64xN): thread
  (warp w, lane = 4 g + t) register r byte b holds A[16w + g + 8 (r & 1), 4t + b + 16 (r >> 1)];
  accumulator d[4j + e] is D[16w + g + 8 (e >> 1), 8j + 2t + (e & 1)].
The kernel's own index code (Q fragments, the S -> P repack) is replayed against that model.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pageweaver_edu.gpu.fp8_tiles import pack_tiles, tau, unpack_tiles  # noqa: E402
from pageweaver_edu.gpu.union8_fp8 import Fp8UnionAttention  # noqa: E402
from pageweaver_edu.gpu.union_attention import PLAN_FORMAT  # noqa: E402
from pageweaver_edu.replay.e4m3 import Fp8KV, quantize_kv  # noqa: E402


def _swizzled(x):
    return x ^ (((x >> 7) & 7) << 4)


def _read_b(tile: np.ndarray, ks: int) -> np.ndarray:
    """B operand [N = 128, K = 32] of k-step ks, read from a swizzled tile (bytes)."""
    n = np.arange(128)[:, None]
    k = np.arange(32)[None, :]
    return tile[_swizzled(128 * n + 32 * ks + k)]


def _a_from_fragments(frag) -> np.ndarray:
    """frag[w, lane, r, b] -> A [64, 32] through ALayout_64x32."""
    a = np.zeros((64, 32), dtype=frag.dtype)
    for w in range(4):
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            for r in range(4):
                for b in range(4):
                    a[16 * w + g + 8 * (r & 1), 4 * t + b + 16 * (r >> 1)] = frag[w, lane, r, b]
    return a


def _d_from_matrix(m: np.ndarray) -> np.ndarray:
    """D [64, 128] -> d[w, lane, 64] through CLayout_64x128."""
    d = np.zeros((4, 32, 64), dtype=m.dtype)
    for w in range(4):
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            for j in range(16):
                for e in range(4):
                    d[w, lane, 4 * j + e] = m[16 * w + g + 8 * (e >> 1), 8 * j + 2 * t + (e & 1)]
    return d


def _kv(pages=3, heads=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    k = torch.randn((pages, heads, 128, 128), generator=gen)
    v = torch.randn((pages, heads, 128, 128), generator=gen)
    return quantize_kv(k, v)


def test_pack_unpack_roundtrip_and_sizes():
    kv = _kv()
    kt, vt = pack_tiles(kv)
    assert kt.dtype == torch.uint8 and kt.shape == (3, 2, 16384) and vt.shape == kt.shape
    k8, v8 = unpack_tiles(kt, vt)
    assert torch.equal(k8.view(torch.uint8), kv.k8.view(torch.uint8))
    assert torch.equal(v8.view(torch.uint8), kv.v8.view(torch.uint8))
    assert sorted(tau().tolist()) == list(range(128))
    assert Fp8UnionAttention.smem_bytes(2) == 1024 + 2 * 32768 + 32
    arg_format = Fp8UnionAttention.operand_format + PLAN_FORMAT
    assert len(arg_format) == 20  # 14 pointers + 4 ints + float + int = 136 bytes


def test_k_tile_is_the_qk_b_operand():
    kv = _kv(seed=1)
    kt, _ = pack_tiles(kv)
    k8 = kv.k8.view(torch.uint8).numpy()
    tile = kt[2, 1].numpy()
    for ks in range(4):  # B[n = token, k = dim]
        assert np.array_equal(_read_b(tile, ks), k8[2, 1, :, 32 * ks:32 * ks + 32])


def test_q_fragments_and_p_repack_reproduce_qk_and_pv():
    rng = np.random.default_rng(2)
    q = rng.integers(-3, 4, size=(64, 128)).astype(np.float64)  # 4 warps x 16 heads
    kv = _kv(pages=1, heads=1, seed=3)
    kt, vt = pack_tiles(kv)
    kmat = kv.k8[0, 0].float().numpy().astype(np.float64)
    vmat = kv.v8[0, 0].float().numpy().astype(np.float64)

    def decode(b):  # E4M3 byte codes -> values
        return torch.from_numpy(np.ascontiguousarray(b)).view(torch.float8_e4m3fn).double().numpy()

    ktile, vtile = kt[0, 0].numpy(), vt[0, 0].numpy()

    # Q fragments exactly as the kernel builds them: qa[ks][2 (c & 1) + hr] from dims
    # 32 (c >> 1) + 16 (c & 1) + 4t + 0..3 of row g + 8 hr.
    s = np.zeros((64, 128))
    for ks in range(4):
        frag = np.zeros((4, 32, 4, 4))
        for w in range(4):
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for c in (2 * ks, 2 * ks + 1):
                    for hr in range(2):
                        dims = 32 * (c >> 1) + 16 * (c & 1) + 4 * t + np.arange(4)
                        frag[w, lane, 2 * (c & 1) + hr] = q[16 * w + g + 8 * hr, dims]
        s += _a_from_fragments(frag) @ decode(_read_b(ktile, ks)).T
    assert np.allclose(s, q @ kmat.T)

    # S -> P in the accumulator registers, repacked as the kernel does into PV A fragments.
    p = rng.random((64, 128))
    d = _d_from_matrix(p)
    o = np.zeros((64, 128))
    for ks in range(4):
        j = 4 * ks
        frag = np.zeros((4, 32, 4, 4))
        frag[:, :, 0] = d[:, :, [4 * j, 4 * j + 1, 4 * j + 4, 4 * j + 5]]
        frag[:, :, 1] = d[:, :, [4 * j + 2, 4 * j + 3, 4 * j + 6, 4 * j + 7]]
        frag[:, :, 2] = d[:, :, [4 * j + 8, 4 * j + 9, 4 * j + 12, 4 * j + 13]]
        frag[:, :, 3] = d[:, :, [4 * j + 10, 4 * j + 11, 4 * j + 14, 4 * j + 15]]
        o += _a_from_fragments(frag) @ decode(_read_b(vtile, ks)).T
    assert np.allclose(o, p @ vmat)


def test_logical_cache_type():
    kv = _kv(pages=2, heads=1)
    assert isinstance(kv, Fp8KV) and kv.heads == 1
    assert kv.k_scale.dtype == torch.float32 and kv.k_scale.shape == (1,)
    assert float(kv.k8.float().abs().max()) == 448.0
