"""The E4M3 number format as the FP8 kernels use it: rounding, the amax scale rule, the FP8 KV
cache with one scale per KV head, Q rows quantized one scale per (query, head) row, and the
two-level (high + low part) operands of the accurate mode. :mod:`.fp8` builds the kernels'
arithmetic from these.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.inputs import PageWeaverInputError

E4M3_MAX = 448.0


def to_e4m3(x):
    """Round float32 ``x`` to E4M3 (nearest even, saturating at ±448, like ``cvt.rn.satfinite``)."""
    import torch

    return x.float().clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def amax_scale(amax):
    """(multiplier 448/amax, dequantization scale amax/448), both 0 where amax == 0 (FP32)."""
    import torch

    amax = amax.float()
    nz = amax > 0
    inv = torch.where(nz, torch.tensor(E4M3_MAX) / torch.where(nz, amax, 1.0), 0.0)
    return inv, amax / torch.tensor(E4M3_MAX)


@dataclass
class Fp8KV:
    """An FP8 E4M3 KV cache in logical layout: ``k8``/``v8`` ``[pages, H, P, D]`` float8_e4m3fn
    and one float32 scale per KV head (``k = k8 * k_scale[h]``)."""

    k8: object
    v8: object
    k_scale: object
    v_scale: object

    @property
    def heads(self) -> int:
        """H, KV heads."""
        return int(self.k8.shape[1])

    def to(self, device) -> Fp8KV:
        """The same cache with its four tensors on ``device`` (``"cpu"``, ``"cuda"``)."""
        return Fp8KV(self.k8.to(device), self.v8.to(device), self.k_scale.to(device),
                     self.v_scale.to(device))

    def dequantized(self, h: int):
        """(k, v) of KV head ``h`` as float64 ``[pages, P, D]``."""
        return (self.k8[:, h].double() * float(self.k_scale[h]),
                self.v8[:, h].double() * float(self.v_scale[h]))


def quantize_kv(k, v) -> Fp8KV:
    """Quantize K/V to E4M3 with one scale ``amax / 448`` per KV head.

    Parameters
    ----------
    k, v : torch.Tensor of float, shape [pages, H, P, D] or [pages, P, D]
        On the CPU or a GPU; the result stays on that device.

    Returns
    -------
    Fp8KV
    """
    import torch

    if k.dim() == 3:
        k, v = k.unsqueeze(1), v.unsqueeze(1)
    if k.dim() != 4 or k.shape != v.shape:
        raise PageWeaverInputError(f"k/v must be [pages, H, P, D]; got {tuple(k.shape)}, "
                                   f"{tuple(v.shape)}")
    out = []
    for x in (k, v):
        amax = x.detach().abs().float().amax(dim=(0, 2, 3))
        inv, scale = amax_scale(amax)
        out += [to_e4m3(x.float() * inv[None, :, None, None]), scale.to(torch.float32)]
    return Fp8KV(out[0], out[2], out[1], out[3])


def quantize_q_rows(q):
    """Per (query, head) row E4M3 quantization of ``q`` ``[..., D]`` as the kernel does it:
    returns (``q8`` float8_e4m3fn, ``q_scale`` float32 ``[...]``) with ``q ≈ q8 * q_scale``."""
    x = q.float()
    inv, scale = amax_scale(x.abs().amax(dim=-1))
    return to_e4m3(x * inv[..., None]), scale


def two_level(x):
    """``e4m3(x) + e4m3(f16(x) - e4m3(x))`` of float32 ``x`` as float32, the value a high and a
    low E4M3 operand multiply together. The residual is taken in FP16, as the kernel does it
    (``cvt.rn.f16x2.f32``, then ``sub.rn.f16x2``): ``f16(x) - e4m3(x)`` is exact there (both
    are FP16 numbers within a factor 2 of each other, or the high part is 0), and FP16's
    rounding of x moves the residual by at most 2^-12 |x|, an eighth of the low part's own
    rounding."""
    x = x.float()
    hi = to_e4m3(x).float()
    return hi + to_e4m3(x.half().float() - hi).float()
