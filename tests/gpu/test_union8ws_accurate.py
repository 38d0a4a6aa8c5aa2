"""The accurate FP8 mode of the warp-specialized Union8 (``Fp8WsUnionAttention(accurate=True)``:
two-level E4M3 Q and P over the FP8 cache) against float64 and its CPU emulation.

Every output is NaN-poisoned before the launch (tests/helpers/gpu_cases.py), so a row never
written fails; rows with an empty A_i must be exactly 0; NRMS against float64 on the FP8 cache
and against the emulation of the same arithmetic (``replay.fp8``, ``operands="two_level"``)
within the accurate mode's bounds (tests/gpu/test_union8_fp8.py: at most 0.30 %, and 0.1 % and
half of that); and the outputs of every ordering, plan and ring depth bitwise identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.gpu.union8ws import emulation_options
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.workloads import make_preset
from tests.gpu.test_union8_fp8 import _check as check_fp8
from tests.gpu.test_union8_fp8 import _tensors
from tests.gpu.test_union8ws import _ws
from tests.helpers.gpu_cases import causal_tail_case, random_case, run_gpu_plan


def _acc(q, cache, topk, cpos, lens, perms=None, offsets=None, slots=6):
    return _ws(q, cache, topk, cpos, lens, perms, offsets, slots, accurate=True)


def _check(out, q, cache, topk, cpos, lens, rows=None):
    return check_fp8(out, q, cache, topk, cpos, lens, rows, emulation_options(accurate=True))


@pytest.mark.parametrize(
    "n,pages,k,heads,causal,lengths",
    [(1, 3, 2, 1, False, False), (13, 40, 16, 1, True, True), (64, 40, 16, 2, False, True),
     (203, 24, 8, 1, True, True), (1000, 80, 16, 8, True, True)],
)
def test_random_inputs_reference_emulation_and_orderings(n, pages, k, heads, causal, lengths):
    import torch

    rng = np.random.default_rng(n * 17 + pages)
    topk, cpos, lens = random_case(rng, n, pages, k, heads, causal, lengths)
    q, cache = _tensors(rng, n, pages, heads)
    out = _acc(q, cache, topk, cpos, lens)
    _check(out, q, cache, topk, cpos, lens, rows=np.arange(0, n, max(1, n // 200)))
    perms = [greedy_regroup(topk[h], Grouping(64 if n >= 64 else 8)) for h in range(heads)]
    assert torch.equal(out, _acc(q, cache, topk, cpos, lens, perms)), "regrouped order differs"
    rand = [rng.permutation(n) for _ in range(heads)]
    assert torch.equal(out, _acc(q, cache, topk, cpos, lens, rand)), "random order differs"
    assert torch.equal(out, _acc(q, cache, topk, cpos, lens, slots=2)), "2 stages differ"


def test_causal_tails_empty_supports_and_packed_requests():
    import torch

    rng = np.random.default_rng(6)
    topk, cpos, lens = causal_tail_case(rng, 96, 12)  # cuts inside pages, some L_i = 0
    q, cache = _tensors(rng, 96, 12, 1)
    _check(_acc(q, cache, topk, cpos, lens), q, cache, topk, cpos, lens)
    empty = -np.ones((1, 27, 4), dtype=np.int64)
    empty[0, 3] = [2, 2, -1, 5]
    q, cache = _tensors(rng, 27, 6, 1)
    out = _acc(q, cache, empty, None, None)
    got = out.float().cpu().numpy()
    assert np.all(got[~np.isin(np.arange(27), [3])] == 0)
    _check(out, q, cache, empty, None, None)
    offsets = np.array([0, 5, 17, 30, 31])
    topk, cpos, lens = random_case(rng, 31, 16, 6, 1, True, False)
    q, cache = _tensors(rng, 31, 16, 1)
    out = _acc(q, cache, topk, cpos, lens, offsets=offsets)
    _check(out, q, cache, topk, cpos, lens)
    perm = greedy_regroup(topk[0], Grouping(8), request_offsets=offsets)
    assert torch.equal(out, _acc(q, cache, topk, cpos, lens, [perm], offsets=offsets))


@pytest.mark.parametrize("name", ["cap64k", "interleaved-64k"])
def test_presets_and_the_online_plan(name):
    import torch

    from pageweaver_edu.gpu import Fp8WsUnionAttention

    cap = make_preset(name)
    topk = cap.topk[None]
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    rng = np.random.default_rng(1)
    q, cache = _tensors(rng, n, pages, 1)
    cpos, lens = cap.causal_pos, cap.lengths
    out = _acc(q, cache, topk, cpos, lens)
    _check(out, q, cache, topk, cpos, lens, np.sort(rng.choice(n, 128, replace=False)))
    online, _ = run_gpu_plan(
        lambda plan, c, ln, o: Fp8WsUnionAttention(q, cache, c, ln, out=o,
                                                   accurate=True).run(plan),
        q, topk, cpos, lens)
    assert torch.equal(out, online), "online W128 plan differs from the original order"


def test_accurate_mode_takes_no_fast_mode_option():
    from pageweaver_edu.core.inputs import PageWeaverInputError
    from pageweaver_edu.gpu import Fp8WsUnionAttention

    rng = np.random.default_rng(0)
    q, cache = _tensors(rng, 8, 4, 1)
    for kw in ({"lazy": True}, {"tc_sum": True}):
        with pytest.raises(PageWeaverInputError, match="accurate"):
            Fp8WsUnionAttention(q, cache, accurate=True, **kw)
