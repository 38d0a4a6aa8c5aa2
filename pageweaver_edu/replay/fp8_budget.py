"""The FP8 error budget with knobs: chapter 12's stage-by-stage view of the FP8 Union8 path.

:func:`pageweaver_edu.replay.fp8.error_budget` splits the kernel's error (arXiv:2610.11201
§4.2; docs/definitions.md#fp8-arithmetic) into stages for fixed kernel constants. This module
runs the same emulation (:func:`~pageweaver_edu.replay.fp8.fp8_union_attention`) on ONE KV
head with the knobs the kernel fixes, so a widget can ask "what if":

* ``p_shift`` — the probabilities are scaled by ``2**p_shift`` before E4M3 (the kernel: 8);
* ``q_rowscale`` — Q quantized with one scale per (query, head) row (the kernel) or not at all;
* ``q_exp`` — Q multiplied by ``2**q_exp`` and the softmax scale by ``2**-q_exp``: the exact
  attention is unchanged, only the magnitude the E4M3 quantizer sees moves;

and a ``descending`` switch that walks each row's pages in the opposite order. At the kernel's
settings every stage equals :func:`~pageweaver_edu.replay.fp8.error_budget` (the tests check
it). A stage's NRMS depends only on its own knobs, so :func:`budget` memoizes per stage and a
widget update recomputes at most two emulations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.attention import reference_attention
from .fp8 import (
    DIM,
    HEADS,
    P_SCALE_LOG2,
    PAGE,
    STAGE_SWITCHES,
    STAGES,
    Fp8KV,
    fp8_union_attention,
    nrms,
    quantize_kv,
    reference_on_cache,
)

KERNEL_KNOBS = {"p_shift": P_SCALE_LOG2, "q_rowscale": True, "q_exp": 0}
#: which knobs each stage depends on (the others leave its output bitwise unchanged)
STAGE_KNOBS = {"q_quantization": ("q_rowscale", "q_exp"), "p_quantization": ("p_shift",),
               "fp32_accumulation": (), "bf16_output": (),
               "total": ("p_shift", "q_rowscale", "q_exp")}


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
    """Seeded N(0, 1) BF16 Q/K/V for the pages of ``topk`` ``[N, K]``, quantized per head."""
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
    """Output with only ``stage`` emulated (``"total"``: all), memoized on its own knobs."""
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
