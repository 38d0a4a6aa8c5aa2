"""The FP8 error budget with knobs (pageweaver_edu/replay/fp8_budget.py, chapter 12)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pageweaver_edu.replay.fp8 import fp8_union_attention, nrms  # noqa: E402
from pageweaver_edu.replay.fp8_budget import (  # noqa: E402
    budget,
    emulate,
    error_budget,
    make_case,
    stage_output,
)
from pageweaver_edu.workloads import capture_like_workload  # noqa: E402


@pytest.fixture(scope="module")
def case():
    cap = capture_like_workload(n=12, prefix_tokens=2048, seed=3)
    return make_case(cap.topk, cap.causal_pos, cap.lengths, seed=3)


def test_kernel_knobs_reproduce_the_emulation_and_its_budget(case):
    lib = fp8_union_attention(case.q, case.kv, case.topk, case.causal_pos, case.lengths)
    assert np.array_equal(emulate(case), lib.double().numpy())
    ours = budget(case)
    theirs = error_budget(case.q, case.k, case.v, case.topk, case.causal_pos, case.lengths)
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    assert ours["total"] <= 0.04
    assert ours["rss"] == pytest.approx(ours["total"], rel=0.1)
    assert ours["end_to_end"] == pytest.approx(ours["rss_all"], rel=0.1)


def test_q_magnitude_is_invisible_with_the_row_scale_and_hurts_without(case):
    outs = [stage_output(case, "q_quantization", q_exp=e) for e in (-7, 0, 4)]
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
    # the unquantized path does not see the compensated magnitude either (power-of-two scaling)
    for kw in (dict(fp32=False, bf16_out=False), dict(fp32=True, bf16_out=True)):
        plain = [emulate(case, q_fp8=False, p_fp8=False, q_exp=e, **kw) for e in (0, 5)]
        assert np.array_equal(*plain)
    base = nrms(outs[1], case.ref)
    for e in (-9, 8):  # subnormals / saturation without a per-row scale
        off = nrms(stage_output(case, "q_quantization", q_rowscale=False, q_exp=e), case.ref)
        assert off > 2 * base


def test_p_prescale_saturates_above_2_to_the_8(case):
    err = {s: nrms(stage_output(case, "p_quantization", p_shift=s), case.ref) for s in (-4, 8, 9)}
    assert err[9] > 1.5 * err[8] and err[-4] > 1.5 * err[8]


def test_page_order_changes_bits_not_accuracy(case):
    kw = dict(q_fp8=False, p_fp8=False, fp32=True, bf16_out=False)
    asc, desc = emulate(case, **kw), emulate(case, descending=True, **kw)
    assert max(nrms(asc, case.ref), nrms(desc, case.ref)) < 1e-6
    # float64 everywhere: the order does not matter beyond float64 rounding
    kw64 = dict(kw, fp32=False)
    assert nrms(emulate(case, **kw64), emulate(case, descending=True, **kw64)) < 1e-13


def test_memo_recomputes_only_the_stages_whose_knobs_moved(case):
    budget(case)
    before = set(case.memo)
    budget(case, p_shift=7)
    new = set(case.memo) - before
    assert {k[0] for k in new} == {"p_quantization", "total"}
