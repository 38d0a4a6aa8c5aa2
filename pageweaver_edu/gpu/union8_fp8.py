"""Launch the FP8 E4M3 Union8 / Union4 kernels (``kernels/union8_fp8.cu``) on torch CUDA tensors.

The arithmetic is PAGEWEAVER.md §6's H200 path, emulated op for op on the CPU by
:mod:`pageweaver_edu.replay.fp8`. Inputs (H = KV heads, 16 Q heads per KV head, d = P = 128):

* ``q`` ``[N, H*16, 128]`` bf16 (quantized per (query, head) row inside the kernel);
* the paged FP8 cache, :class:`Fp8Cache` (:func:`fp8_cache_from_bf16` or
  :func:`fp8_cache_from_kv`): per (page, head) a 16 KiB K tile and a 16 KiB V^T tile, each
  stored as the exact shared-memory image the wgmma B operand reads (128-byte swizzle), so
  one bulk copy per tile lands it ready; one float32 scale per KV head for K and for V;
* the union plan (:class:`pageweaver_edu.gpu.union8.DevicePlan`, g = 8 for Union8 and
  g = 4 for Union4), from :func:`~pageweaver_edu.gpu.union8.plan_from_cpu` or
  :func:`~pageweaver_edu.gpu.union8.gpu_prepare_plan`.

Tile layouts (bytes; ``sw(r, b) = 128 r + 16 ((b >> 4) ^ (r & 7)) + (b & 15)``):
K tile: ``tile[sw(t, c)] = k8[t, c]`` (token t, dim c). V^T tile: ``tile[sw(n, a)] =
v8[tau(a), n]`` (dim n, position a), with :func:`tau` the token order inside 32-token blocks
that makes the softmax registers the PV product's A fragments (see the kernel's header for
the K-major rule and the trade-off of a pre-transposed V).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.inputs import PageWeaverInputError
from ..replay.fp8 import Fp8KV, quantize_kv
from .device import require_gpu
from .loader import get_kernel, launch
from .union8 import DevicePlan, _positions, _ptr

HEADS, DIM, PAGE = 16, 128, 128
THREADS = 128
TILE_BYTES = PAGE * DIM  # 16 KiB
KERNELS = {"union8": ("union8_fp8", 8, 2), "union4": ("union4_fp8", 4, 1)}  # name, g, CTAs
ARG_FORMAT = "P" * 13 + "iiiifi"  # the fields of union8_fp8::Args, 128 bytes


def smem_bytes(slots: int = 2) -> int:
    """Dynamic shared memory of one CTA: 1 KiB alignment slack, ``slots`` x (K + V^T), barriers."""
    return 1024 + slots * 2 * TILE_BYTES + 16 * slots


def tau() -> np.ndarray:
    """``tau[a]``: the page token held in column ``a`` of a V^T tile (a permutation of 0..127)."""
    a = np.arange(PAGE)
    return (32 * (a >> 5) + 16 * ((a >> 4) & 1) + 8 * ((a >> 1) & 1) + 2 * ((a >> 2) & 3)
            + (a & 1))


def _swizzle_index(device=None):
    """``idx[r, c]`` = source 16-byte chunk of stored chunk ``c`` in row ``r`` (XOR is its own
    inverse, so the same index swizzles and unswizzles)."""
    import torch

    r = torch.arange(PAGE, device=device)[:, None]
    c = torch.arange(8, device=device)[None, :]
    return c ^ (r & 7)


def _swizzle(rows):
    """``rows`` uint8 ``[..., 128, 128]`` -> the same bytes in 128-byte-swizzle order."""
    x = rows.reshape(*rows.shape[:-1], 8, 16)
    idx = _swizzle_index(rows.device)[:, :, None].expand(PAGE, 8, 16)
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
    return (_swizzle(k).reshape(pages, heads, TILE_BYTES).contiguous(),
            _swizzle(vt.contiguous()).reshape(pages, heads, TILE_BYTES).contiguous())


def unpack_tiles(k_tiles, vt_tiles):
    """Inverse of :func:`pack_tiles`: logical ``(k8, v8)`` float8 ``[pages, H, 128, 128]``."""
    import torch

    pages, heads = k_tiles.shape[:2]
    k = _swizzle(k_tiles.reshape(pages, heads, PAGE, DIM))
    vt = _swizzle(vt_tiles.reshape(pages, heads, DIM, PAGE))
    inv = torch.from_numpy(np.argsort(tau())).to(vt.device)
    v = vt[..., inv].transpose(-1, -2)
    return (k.contiguous().view(torch.float8_e4m3fn),
            v.contiguous().view(torch.float8_e4m3fn))


@dataclass
class Fp8Cache:
    """The paged FP8 cache as the kernel reads it, plus its logical form (for emulation)."""

    k_tiles: object   # uint8 [pages, H, 16384]
    vt_tiles: object  # uint8 [pages, H, 16384]
    k_scale: object   # float32 [H]
    v_scale: object   # float32 [H]
    logical: Fp8KV

    @property
    def pages(self) -> int:
        return int(self.k_tiles.shape[0])

    @property
    def heads(self) -> int:
        return int(self.k_tiles.shape[1])


def fp8_cache_from_kv(kv: Fp8KV) -> Fp8Cache:
    """Pack a logical FP8 cache (on the device of ``kv``) into kernel tiles."""
    import torch

    kt, vt = pack_tiles(kv)
    return Fp8Cache(kt, vt, kv.k_scale.to(kt.device, torch.float32).contiguous(),
                    kv.v_scale.to(kt.device, torch.float32).contiguous(), kv)


def fp8_cache_from_bf16(k, v) -> Fp8Cache:
    """Quantize K/V ``[pages, H, 128, 128]`` (or ``[pages, 128, 128]``) with per-head scales
    (:func:`pageweaver_edu.replay.fp8.quantize_kv`) and pack them for the kernel."""
    return fp8_cache_from_kv(quantize_kv(k, v))


def get_fp8_kernel(kind: str = "union8", slots: int = 2):
    """(prepared function, dynamic smem bytes) for ``kind`` in {"union8", "union4"}."""
    if kind not in KERNELS:
        raise PageWeaverInputError(f"unknown kernel {kind!r}; choose from {sorted(KERNELS)}")
    smem = smem_bytes(slots)
    func = get_kernel("union8_fp8.cu", KERNELS[kind][0], ARG_FORMAT, arch="compute_90a",
                      code="sm_90a",
                      options=(f"-DPW_UNION_SLOTS={slots}",),
                      max_dynamic_shared=smem)
    return func, smem


class Fp8UnionAttention:
    """A prepared FP8 Union8 / Union4 launch for fixed q, cache and position tensors."""

    def __init__(self, q, cache: Fp8Cache, causal_pos=None, lengths=None, kind="union8",
                 slots=2, scale=None, out=None):
        import torch

        require_gpu()
        n, qh, d = q.shape
        if d != DIM or qh != HEADS * cache.heads:
            raise PageWeaverInputError(
                f"need q [N, H*16, 128] with H = {cache.heads}; got {tuple(q.shape)}")
        if q.dtype != torch.bfloat16 or not q.is_cuda or not q.is_contiguous():
            raise PageWeaverInputError("q must be a contiguous bf16 CUDA tensor")
        for name, x in (("k_tiles", cache.k_tiles), ("vt_tiles", cache.vt_tiles)):
            if (x.dtype != torch.uint8 or not x.is_cuda or not x.is_contiguous()
                    or x.data_ptr() % 16 or tuple(x.shape[1:]) != (cache.heads, TILE_BYTES)):
                raise PageWeaverInputError(
                    f"{name} must be contiguous 16-byte aligned uint8 [pages, H, 16384] on the "
                    "GPU (pack_tiles)")
        self.q, self.cache, self.n, self.heads = q, cache, n, cache.heads
        self.causal = _positions(causal_pos, n, "causal_pos")
        self.lengths = _positions(lengths, n, "lengths")
        self.kind, (self.func, self.smem) = kind, get_fp8_kernel(kind, slots)
        self.ctas = KERNELS[kind][2]
        self.scale_log2 = float((scale or DIM**-0.5) * np.log2(np.e))
        self.out = torch.empty_like(q) if out is None else out

    def run(self, plan: DevicePlan):
        """Launch over ``plan`` (its g must match the kernel) and return ``self.out``."""
        if plan.group != KERNELS[self.kind][1] or plan.heads != self.heads or plan.n != self.n:
            raise PageWeaverInputError(
                f"{self.kind} needs a plan with g = {KERNELS[self.kind][1]}, H = {self.heads}, "
                f"N = {self.n}; got g = {plan.group}, H = {plan.heads}, N = {plan.n}")
        c = self.cache
        g = plan.num_groups
        launch(self.func, (g * self.ctas, self.heads), (THREADS, 1, 1),
               self.q.data_ptr(), c.k_tiles.data_ptr(), c.vt_tiles.data_ptr(),
               self.out.data_ptr(), c.k_scale.data_ptr(), c.v_scale.data_ptr(),
               plan.perm.data_ptr(), plan.groups.data_ptr(), plan.page_offsets.data_ptr(),
               plan.pages.data_ptr(), plan.masks.data_ptr(), _ptr(self.causal),
               _ptr(self.lengths), self.n, g, self.heads, c.pages, self.scale_log2, 0,
               shared_size=self.smem)
        return self.out


def fp8_union_attention(q, cache: Fp8Cache, plan: DevicePlan, causal_pos=None, lengths=None,
                        kind=None, out=None, scale=None):
    """FP8 sparse attention of every query over its pages, executed by group unions (§6).

    ``kind`` defaults to "union8" for a g = 8 plan and "union4" for g = 4. Returns ``out``
    (``[N, H*16, 128]`` bf16); rows of queries that the plan does not run stay untouched.
    """
    kind = kind or ("union8" if plan.group == 8 else "union4")
    return Fp8UnionAttention(q, cache, causal_pos, lengths, kind, scale=scale, out=out).run(plan)
