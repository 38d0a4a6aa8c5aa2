"""CPU emulation of the FP8 Union8 arithmetic (``kernels/union8_fp8.cu``).

The H200 path of arXiv:2610.11201 (§4.2): BF16 Q, an FP8 E4M3 KV cache with one scale per KV
head, Q quantized per (query, head) row to E4M3 for an FP8 QK product with FP32 accumulation,
softmax statistics in FP32, probabilities scaled by 2^8 and converted to E4M3 for an FP8 PV
product, the scale compensated in the normalization, BF16 output. This module repeats that
arithmetic step by step with torch ``float8_e4m3fn`` so the kernel can be checked against
the values it should produce; :mod:`.fp8_budget` splits its error into stages.

Kernel arithmetic, per KV head h, query i, Q head j (a "row"), every op in FP32:

* ``amax = max_d |q|``; ``q8 = e4m3(q * (448 / amax))``; ``qs = amax / 448`` (0 for a zero row);
* per selected page p in ascending order with at least one token ``t < min(c_i + 1, L_i)``:
  ``S = q8 . k8`` (tensor cores), ``rf = qs * (k_scale[h] * scale * log2 e)``,
  ``m' = max(m, rf * max_valid S)``, ``a = 2^(m - m')``,
  ``p = 2^(fma(S, rf, 8 - m'))`` (= 256 * 2^(x - m'); 0 for masked tokens),
  ``l = l * a + sum p``, ``O = fma(O, a, e4m3(p) . v8)`` (the page product is fresh each page,
  so the FP8 MMA only ever accumulates inside one page);
* ``o = bf16(O * (v_scale[h] / l))``, 0 when no token was seen.

The accurate mode of the warp-specialized kernel (``operands="two_level"``) keeps the FP8
cache and the FP8 tensor cores and feeds Q and P as two E4M3 parts each, a high part and the
E4M3 rounding of its residual, on the same scale (:func:`two_level`):
``q8 = e4m3(x) + e4m3(f16(x) - e4m3(x))`` with ``x = q * (448 / amax)`` (four more k-steps of
QK), and ``e4m3(p) + e4m3(f16(p) - e4m3(p))`` for P (a second PV product into the same page
product): the kernel takes the residual in FP16 pairs, where it is exact. l still sums the FP32
``p``. ``operands="bf16"`` is the alternative it was measured against:
Q as it is (BF16) and P rounded to BF16, products with K/V widened to BF16.

Errors are NRMS against :func:`pageweaver_edu.core.attention.reference_attention` in float64 on
the *dequantized* cache (``k8 * k_scale``): the cache quantization is a storage format that
the kernel receives, not part of its arithmetic; :func:`.fp8_budget.error_budget` reports it
separately.
"""

from __future__ import annotations

import numpy as np

from ..core.attention import reference_attention, softmax_scale
from ..core.inputs import PageWeaverInputError, as_positions
from ..core.supports import canonical_rows
from .e4m3 import Fp8KV, amax_scale, quantize_q_rows, to_e4m3, two_level

P_SCALE_LOG2 = 8  # probabilities are scaled by 2^8 before the E4M3 conversion
HEADS, PAGE, DIM = 16, 128, 128
OPERANDS = ("e4m3", "two_level", "bf16")  # the A operands of QK and PV (fp8_union_attention)


def _round_p(p, operands: str):
    """P as the PV product's A operand: E4M3, two-level E4M3 or BF16."""
    import torch

    if operands == "two_level":
        return two_level(p)
    if operands == "bf16":
        return p.float().to(torch.bfloat16)
    return to_e4m3(p)


def _emulate_head(q, k8, v8, ks, vs, rows, limit, scale_log2, q_fp8, p_fp8, fp32, chunk, *,
                  p_shift=P_SCALE_LOG2, q_rowscale=True, descending=False, lazy_tau=None,
                  p8_sums=False, operands="e4m3"):
    """One KV head: q ``[N, 16, D]`` (float32), k8/v8 ``[pages, P, D]`` (float values)."""
    import torch

    n, heads, dim = q.shape
    dt = torch.float32 if fp32 else torch.float64
    if q_fp8 and operands == "bf16":  # BF16 operands: Q exactly as read
        qv, qs = q.to(dt), torch.ones(q.shape[:2], dtype=dt)
    elif q_fp8 and q_rowscale and operands == "two_level":
        inv, qs = amax_scale(q.float().abs().amax(dim=-1))
        qv, qs = two_level(q.float() * inv[..., None]).to(dt), qs.to(dt)
    elif q_fp8 and q_rowscale:
        q8, qs = quantize_q_rows(q)
        qv, qs = q8.to(dt), qs.to(dt)
    else:  # no per-row scale: q goes to E4M3 as it is
        qv = to_e4m3(q).to(dt) if q_fp8 else q.to(dt)
        qs = torch.ones(q.shape[:2], dtype=dt)
    c = (torch.tensor(ks, dtype=torch.float32) * torch.tensor(scale_log2, dtype=torch.float32))
    rf = qs * c.to(dt)  # per row: S -> log2 units
    kf, vf = k8.to(dt), v8.to(dt)
    offs = torch.arange(PAGE)
    out = torch.zeros((n, heads, dim), dtype=torch.float64)
    pshift = float(p_shift if p_fp8 else 0)
    order = range(rows.shape[1] - 1, -1, -1) if descending else range(rows.shape[1])
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        b = hi - lo
        m = torch.full((b, heads), -torch.inf, dtype=dt)
        lsum = torch.zeros((b, heads), dtype=dt)
        acc = torch.zeros((b, heads, dim), dtype=dt)
        lim = limit[lo:hi]
        for j in order:
            pid = rows[lo:hi, j]
            active = (pid >= 0) & (pid * PAGE < lim)
            if not bool(active.any()):
                continue
            pc = pid.clamp(min=0)
            s = torch.einsum("bhd,btd->bht", qv[lo:hi], kf[pc])
            valid = ((pc[:, None] * PAGE + offs) < lim[:, None]) & active[:, None]
            smax = torch.where(valid[:, None, :], s, -torch.inf).amax(dim=-1)
            act = active[:, None]
            if lazy_tau is None:  # m' = max(m, page max); rescale by 2^(m - m') every page
                m_new = torch.where(act, torch.maximum(m, smax * rf[lo:hi]), m)
                alpha = torch.where(act, torch.exp2(m - m_new), 1.0)
            else:  # m moves (and O, l rescale) only when the page max passes m + tau
                up = act & (smax * rf[lo:hi] > m + lazy_tau)
                m_new = torch.where(up, smax * rf[lo:hi], m)
                alpha = torch.where(up & torch.isfinite(m), torch.exp2(m - m_new), 1.0)
            # fma(S, rf, shift - m'): the product is exact in float64, one rounding to FP32.
            neg = (torch.tensor(pshift, dtype=dt) - m_new).double()  # rounded like the kernel
            y = (s.double() * rf[lo:hi, :, None].double() + neg[:, :, None]).to(dt)
            p = torch.where(valid[:, None, :], torch.exp2(y), 0.0)
            if p_fp8:
                pq = _round_p(p, operands).to(dt)
            else:
                pq = p
            lsum = torch.where(act, lsum * alpha + (pq if p8_sums else p).sum(dim=-1), lsum)
            opage = torch.einsum("bht,btd->bhd", pq, vf[pc])
            acc = torch.where(act[:, :, None], (acc.double() * alpha[:, :, None].double()
                                                + opage.double()).to(dt), acc)
            m = m_new
        inv = torch.where(lsum > 0, torch.tensor(vs, dtype=dt) / torch.where(lsum > 0, lsum, 1),
                          0.0)
        out[lo:hi] = (acc * inv[:, :, None]).double()
    return out


def fp8_union_attention(q, kv: Fp8KV, topk, causal_pos=None, lengths=None, scale=None, *,
                        q_fp8=True, p_fp8=True, fp32=True, bf16_out=True, chunk=256,
                        p_shift=P_SCALE_LOG2, q_rowscale=True, q_exp=0, descending=False,
                        lazy_tau=None, p8_sums=False, operands="e4m3"):
    """The FP8 Union8 kernel's output, emulated on the CPU.

    The result does not depend on the grouping or π (rows never share state).

    Parameters
    ----------
    q : torch.Tensor of float, shape [N, H*16, D]
        Rounded to BF16 first, as the kernel reads it.
    kv : Fp8KV
        The FP8 cache (:func:`.e4m3.quantize_kv`); its E4M3 values may also come as float32.
    topk : array_like of int, shape [N, K] or [H, N, K]
        One Top-K per KV head.
    causal_pos, lengths : array_like of int, shape [N], optional
        c_i and L_i.
    scale : float, optional
        Softmax scale; ``1/sqrt(D)`` when None.
    q_fp8, p_fp8, fp32, bf16_out : bool
        Stage switches: False runs that stage in float64 (:func:`.fp8_budget.error_budget`).
    chunk : int
        Queries emulated at once.
    p_shift : int
        P is scaled by ``2**p_shift`` before E4M3 (the kernel: 8).
    q_rowscale : bool
        False quantizes Q with no scale (the kernel: one per row).
    q_exp : int
        Q times ``2**q_exp`` and the softmax scale times ``2**-q_exp`` (the exact attention
        is unchanged).
    descending : bool
        Walk each row's pages in descending order (the kernel: ascending).
    lazy_tau : float, optional
        The warp-specialized kernel's lazy rescale: a row's reference maximum moves only when
        a page's maximum passes it by more than ``lazy_tau`` (log2 units); None: every page.
    p8_sums : bool
        Sum the E4M3 probabilities (the tensor-core row sums) instead of the FP32 ones.
    operands : str
        The A operands of QK and PV: ``"e4m3"`` (the fast mode), ``"two_level"`` (the accurate
        mode: a high plus a low E4M3 part, :func:`two_level`) or ``"bf16"`` (Q as read, P in
        BF16).

    Returns
    -------
    torch.Tensor of bfloat16 (float64 when ``bf16_out`` is False), shape [N, H*16, D]
    """
    import torch

    if operands not in OPERANDS:
        raise PageWeaverInputError(f"operands must be one of {OPERANDS}, got {operands!r}")
    h_kv = kv.heads
    topk = np.asarray(topk.cpu() if hasattr(topk, "cpu") else topk)
    topk = topk[None] if topk.ndim == 2 else topk
    qb = q.detach().cpu().to(torch.bfloat16)
    n = qb.shape[0]
    if qb.dim() != 3 or qb.shape[1] != HEADS * h_kv or topk.shape[:2] != (h_kv, n):
        raise PageWeaverInputError(
            f"need q [N, H*16, D] and topk [H, N, K] for H = {h_kv}; got {tuple(qb.shape)}, "
            f"{topk.shape}")
    limit = np.full(n, np.iinfo(np.int64).max // 2, dtype=np.int64)
    for pos, plus in ((as_positions(causal_pos, n, "causal_pos"), 1),
                      (as_positions(lengths, n, "lengths"), 0)):
        if pos is not None:
            limit = np.minimum(limit, pos + plus)
    limit = torch.from_numpy(limit)
    sm = softmax_scale(scale, qb.shape[2]) * 2.0**-q_exp
    with np.errstate(over="ignore"):
        scale_log2 = float(np.float32(sm * np.log2(np.e)))  # the kernel's float argument
    if not (scale_log2 > 0 and np.isfinite(scale_log2)):
        raise PageWeaverInputError(
            f"scale {scale!r} gives the float32 exponent scale {scale_log2!r}: the FP8 kernel "
            "needs a positive scale whose scale·log2(e) is a finite float32")
    outs = []
    for h in range(h_kv):
        rows = torch.from_numpy(canonical_rows(topk[h]))
        if rows.numel() and int(rows.max()) >= kv.k8.shape[0]:
            raise PageWeaverInputError(f"page id {int(rows.max())} is outside the cache")
        qh = qb[:, h * HEADS:(h + 1) * HEADS].float() * float(2.0**q_exp)  # exact
        outs.append(_emulate_head(
            qh, kv.k8[:, h].cpu().float(), kv.v8[:, h].cpu().float(), float(kv.k_scale[h]),
            float(kv.v_scale[h]), rows, limit, scale_log2, q_fp8, p_fp8, fp32, chunk,
            p_shift=p_shift, q_rowscale=q_rowscale, descending=descending, lazy_tau=lazy_tau,
            p8_sums=p8_sums, operands=operands))
    out = torch.cat(outs, dim=1)
    if not bool(torch.isfinite(out).all()):
        raise PageWeaverInputError(f"scale {scale!r} makes the FP32 scores overflow: the output "
                                   "is not finite")
    return out.to(torch.bfloat16) if bf16_out else out


def reference_on_cache(q, kv: Fp8KV, topk, causal_pos=None, lengths=None, scale=None):
    """Float64 :func:`reference_attention` on the dequantized cache.

    Parameters
    ----------
    q, kv, topk, causal_pos, lengths, scale
        As :func:`fp8_union_attention`.

    Returns
    -------
    numpy.ndarray of float64, shape [N, H*16, D]
    """
    import torch

    topk = np.asarray(topk.cpu() if hasattr(topk, "cpu") else topk)
    topk = topk[None] if topk.ndim == 2 else topk
    qd = q.detach().cpu().to(torch.bfloat16).double()
    outs = []
    for h in range(kv.heads):
        k, v = kv.dequantized(h)
        outs.append(reference_attention(qd[:, h * HEADS:(h + 1) * HEADS], k.cpu(), v.cpu(),
                                        topk[h], lengths=lengths, causal_pos=causal_pos,
                                        scale=scale))
    return np.concatenate(outs, axis=1)


def nrms(x, ref) -> float:
    """``||x - ref|| / ||ref||`` in float64 (0 when both are 0).

    Parameters
    ----------
    x : torch.Tensor or array_like of float
    ref : array_like of float, the same shape
    """
    x = np.asarray(x.double().cpu() if hasattr(x, "double") else x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    den = float(np.linalg.norm(ref))
    num = float(np.linalg.norm(x - ref))
    return 0.0 if num == 0 else num / max(den, 1e-300)
