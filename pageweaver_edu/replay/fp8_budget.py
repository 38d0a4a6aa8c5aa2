"""The FP8 Union8 path's error, stage by stage (chapter 12; arXiv:2610.11201 §4.2;
docs/definitions.md#fp8-arithmetic).

:func:`error_budget` measures, at the kernel's constants, the NRMS of each stage alone (every
other step in float64) against float64 on the dequantized cache, the whole kernel, and the
cache quantization itself. The rest of the module runs the same emulation
(:func:`~pageweaver_edu.replay.fp8.fp8_union_attention`) on ONE KV head with the knobs the
kernel fixes, so a widget can ask "what if":

* ``p_shift`` — the probabilities are scaled by ``2**p_shift`` before E4M3 (the kernel: 8);
* ``q_rowscale`` — Q quantized with one scale per (query, head) row (the kernel) or not at all;
* ``q_exp`` — Q multiplied by ``2**q_exp`` and the softmax scale by ``2**-q_exp``: the exact
  attention is unchanged, only the magnitude the E4M3 quantizer sees moves;
* ``operands`` — the A operands of QK and PV: ``"e4m3"`` (the fast mode), ``"two_level"`` (the
  accurate mode, a high and a low E4M3 part) or ``"bf16"``;

and a ``descending`` switch that walks each row's pages in the opposite order. At the kernel's
settings every stage of :func:`budget` equals :func:`error_budget` (the tests check it). A
stage's NRMS depends only on its own knobs, so :func:`budget` memoizes per stage and a widget
update recomputes at most two emulations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.attention import reference_attention
from ..core.inputs import PageWeaverInputError
from .e4m3 import Fp8KV, quantize_kv
from .fp8 import (
    DIM,
    HEADS,
    P_SCALE_LOG2,
    PAGE,
    fp8_union_attention,
    nrms,
    reference_on_cache,
)

STAGES = ("q_quantization", "p_quantization", "fp32_accumulation", "bf16_output")

STAGE_SWITCHES = {  # each stage alone; everything else float64
    "q_quantization": dict(q_fp8=True, p_fp8=False, fp32=False, bf16_out=False),
    "p_quantization": dict(q_fp8=False, p_fp8=True, fp32=False, bf16_out=False),
    "fp32_accumulation": dict(q_fp8=False, p_fp8=False, fp32=True, bf16_out=False),
    "bf16_output": dict(q_fp8=False, p_fp8=False, fp32=False, bf16_out=True),
    "total": dict(q_fp8=True, p_fp8=True, fp32=True, bf16_out=True),
}


def stage_nrms(stage: str, q, kv: Fp8KV, topk, causal_pos=None, lengths=None, scale=None,
               ref=None, operands: str = "e4m3") -> float:
    """NRMS vs float64 on the cache with only ``stage`` emulated.

    Parameters
    ----------
    stage : str
        One of :data:`STAGES`, or ``"total"``: the whole kernel arithmetic.
    q, kv, topk, causal_pos, lengths, scale
        As :func:`~pageweaver_edu.replay.fp8.fp8_union_attention`.
    ref : numpy.ndarray of float64, shape [N, H*16, D], optional
        :func:`~pageweaver_edu.replay.fp8.reference_on_cache` of the same inputs, when
        already computed.
    operands : str
        The A operands of QK and PV (``fp8_union_attention``'s ``operands``).
    """
    if stage not in STAGE_SWITCHES:
        raise PageWeaverInputError(f"unknown stage {stage!r}; choose from {list(STAGE_SWITCHES)}")
    if ref is None:
        ref = reference_on_cache(q, kv, topk, causal_pos, lengths, scale)
    out = fp8_union_attention(q, kv, topk, causal_pos, lengths, scale, operands=operands,
                              **STAGE_SWITCHES[stage])
    return nrms(out, ref)


def error_budget(q, k, v, topk, causal_pos=None, lengths=None, scale=None,
                 operands: str = "e4m3") -> dict:
    """The error of every stage of the FP8 path at the kernel's constants (``operands``: the
    fast mode's ``"e4m3"`` or the accurate mode's ``"two_level"``).

    Parameters
    ----------
    q : torch.Tensor of float, shape [N, H*16, D]
    k, v : torch.Tensor of float, shape [pages, H, P, D] or [pages, P, D]
        The K/V before quantization (:func:`~pageweaver_edu.replay.e4m3.quantize_kv`).
    topk, causal_pos, lengths, scale
        As :func:`~pageweaver_edu.replay.fp8.fp8_union_attention`.

    Returns
    -------
    dict
        NRMS per stage of :data:`STAGES` vs float64 on the dequantized cache; ``total``, the
        whole kernel; ``rss``, the stages' root-sum-square (independent errors add in
        quadrature); ``kv_cache``, the cache quantization itself (float64 on the cache vs
        float64 on ``k``/``v``).
    """
    import torch

    kv = quantize_kv(k.cpu(), v.cpu())
    ref = reference_on_cache(q, kv, topk, causal_pos, lengths, scale)
    out = {s: stage_nrms(s, q, kv, topk, causal_pos, lengths, scale, ref=ref, operands=operands)
           for s in (*STAGES, "total")}
    out["rss"] = float(np.sqrt(sum(out[s] ** 2 for s in STAGES)))
    kk, vv = (k.unsqueeze(1), v.unsqueeze(1)) if k.dim() == 3 else (k, v)
    topk = np.asarray(topk)
    topk = topk[None] if topk.ndim == 2 else topk
    qd = q.detach().cpu().to(torch.bfloat16).double()
    orig = np.concatenate([reference_attention(
        qd[:, h * HEADS:(h + 1) * HEADS], kk[:, h].double().cpu(),
        vv[:, h].double().cpu(), topk[h], lengths=lengths, causal_pos=causal_pos, scale=scale)
        for h in range(kv.heads)], axis=1)
    out["kv_cache"] = nrms(ref, orig)
    return out


KERNEL_KNOBS = {"p_shift": P_SCALE_LOG2, "q_rowscale": True, "q_exp": 0, "operands": "e4m3"}
#: which knobs each stage depends on (the others leave its output bitwise unchanged)
STAGE_KNOBS = {"q_quantization": ("q_rowscale", "q_exp", "operands"),
               "p_quantization": ("p_shift", "operands"), "fp32_accumulation": (),
               "bf16_output": (), "total": ("p_shift", "q_rowscale", "q_exp", "operands")}


@dataclass
class BudgetCase:
    """One KV head: BF16 ``q`` ``[N, 16, D]``, its FP8 cache, Top-K rows and both references
    (float64 on the dequantized cache, and float64 on the BF16 K/V before quantization)."""

    q: object
    k: object
    v: object
    kv: Fp8KV
    topk: np.ndarray
    causal_pos: object
    lengths: object
    ref: np.ndarray
    ref_bf16: np.ndarray
    memo: dict = field(default_factory=dict, repr=False)


def make_case(topk, causal_pos=None, lengths=None, seed: int = 0) -> BudgetCase:
    """Seeded N(0, 1) BF16 Q/K/V for the pages of ``topk``, quantized per head.

    Parameters
    ----------
    topk : array_like of int, shape [N, K]
    causal_pos, lengths : array_like of int, shape [N], optional
    seed : int

    Returns
    -------
    BudgetCase
        q [N, 16, 128], k and v [max id + 1, 128, 128], both references.
    """
    import torch

    topk = np.asarray(topk)
    n, pages = topk.shape[0], int(topk.max()) + 1
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(s, generator=gen).to(torch.bfloat16)
               for s in ((n, HEADS, DIM), (pages, PAGE, DIM), (pages, PAGE, DIM)))
    kv = quantize_kv(k, v)
    ref = reference_on_cache(q, kv, topk, causal_pos, lengths)
    ref_bf16 = reference_attention(q.double(), k.double(), v.double(), topk,
                                   lengths=lengths, causal_pos=causal_pos)
    return BudgetCase(q, k, v, kv, topk, causal_pos, lengths, ref, ref_bf16)


def emulate(case: BudgetCase, **switches) -> np.ndarray:
    """:func:`~pageweaver_edu.replay.fp8.fp8_union_attention` on the case, float64 out;
    ``switches``: its stage switches and knobs (``q_fp8``, ``p_shift``, ``descending``, …)."""
    if "kv32" not in case.memo:  # the same E4M3 values as float32: converted once, not per call
        kv = case.kv
        case.memo["kv32"] = Fp8KV(kv.k8.float(), kv.v8.float(), kv.k_scale, kv.v_scale)
    return fp8_union_attention(case.q, case.memo["kv32"], case.topk, case.causal_pos,
                               case.lengths, **switches).double().numpy()


def stage_output(case: BudgetCase, stage: str, **knobs) -> np.ndarray:
    """Output with only ``stage`` emulated, memoized on the knobs it depends on.

    Parameters
    ----------
    case : BudgetCase
    stage : str
        One of :data:`STAGES`, or ``"total"``.
    **knobs
        ``p_shift``, ``q_rowscale``, ``q_exp``, ``operands``; :data:`KERNEL_KNOBS` where not
        given.

    Returns
    -------
    numpy.ndarray of float64, shape [N, 16, 128]
    """
    k = {**KERNEL_KNOBS, **knobs}
    key = (stage, *(k[name] for name in STAGE_KNOBS[stage]))
    if key not in case.memo:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # small batched products: threads only add jitter
        try:
            case.memo[key] = emulate(case, **STAGE_SWITCHES[stage], **k)
        finally:
            torch.set_num_threads(threads)
    return case.memo[key]


def budget(case: BudgetCase, **knobs) -> dict:
    """NRMS per stage vs float64 on the cache, ``total``, ``rss`` (the stages added in
    quadrature), ``kv_cache`` (float64 on the cache vs on BF16 K/V), ``end_to_end`` (the
    whole path vs float64 on BF16 K/V) and ``rss_all`` (``total`` and ``kv_cache`` in
    quadrature)."""
    out = {s: nrms(stage_output(case, s, **knobs), case.ref) for s in (*STAGES, "total")}
    out["rss"] = float(np.sqrt(sum(out[s] ** 2 for s in STAGES)))
    out["kv_cache"] = nrms(case.ref, case.ref_bf16)
    out["end_to_end"] = nrms(stage_output(case, "total", **knobs), case.ref_bf16)
    out["rss_all"] = float(np.hypot(out["total"], out["kv_cache"]))
    return out
