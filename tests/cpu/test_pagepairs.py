"""Direct KV-page pairs: exact attention, exact edge coverage, accounting.

Definitions: docs/definitions.md#page-pairs.
"""

import json
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu import reference_attention
from pageweaver_edu.core.supports import support_sets
from pageweaver_edu.pagepairs.attention import combine, page_pair_attention, pair_partials
from pageweaver_edu.pagepairs.torch_ops import page_pair_attention_torch
from pageweaver_edu.pagepairs.traffic import partial_bytes
from pageweaver_edu.pagepairs.work import COMMON, EXCLUSIVE, SINGLE, covered_edges, plan_page_pairs
from pageweaver_edu.records import latest_record, list_records, result_medians
from tests.helpers.strategies import topk_arrays


def _requests(draw, n):
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=2)))
    return np.array([0, *cuts, n], dtype=np.int64)


@st.composite
def attention_case(draw):
    """Random q/k/v, Top-K (padding, duplicates, empty rows), masks, packed requests."""
    topk = draw(topk_arrays(max_n=14, max_k=5, max_page=7))
    n = topk.shape[0]
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    offsets = _requests(draw, n)
    logical, page_size, heads, dim = 7, draw(st.integers(1, 4)), 2, 3
    use_table = draw(st.booleans())
    pool = logical * (len(offsets) - 1) if use_table else logical
    table = rng.permutation(pool).reshape(len(offsets) - 1, logical) if use_table else None
    q = rng.standard_normal((n, heads, dim)) * 2
    k, v = rng.standard_normal((2, pool, page_size, dim))
    lengths = rng.integers(0, logical * page_size + 1, n) if draw(st.booleans()) else None
    causal = rng.integers(0, logical * page_size, n) if draw(st.booleans()) else None
    return q, k, v, topk, lengths, causal, offsets, table


@settings(max_examples=150, deadline=None)
@given(attention_case())
def test_page_pairs_match_reference(case):
    q, k, v, topk, lengths, causal, offsets, table = case
    if topk.shape[0] == 0:  # reference_attention does not accept N = 0; page pairs do
        assert page_pair_attention(q, k, v, topk).shape == (0, 2, 3)
        return
    want = reference_attention(q, k, v, topk, lengths, causal, offsets, table)
    got = page_pair_attention(q, k, v, topk, lengths, causal, offsets, table)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    tq, tk, tv = (torch.as_tensor(x) for x in (q, k, v))
    got_t = page_pair_attention_torch(tq, tk, tv, topk, lengths, causal, offsets, table)
    assert got_t.dtype == torch.float64
    np.testing.assert_allclose(got_t.numpy(), want, rtol=1e-12, atol=1e-12)


def _edges(topk, offsets):
    sets = support_sets(topk)
    return Counter((i, p) for i, s in enumerate(sets) for p in s), sets


@settings(max_examples=300, deadline=None)
@given(topk_arrays(max_n=40, max_k=8, max_page=20), st.data())
def test_every_edge_covered_exactly_once(topk, data):
    offsets = _requests(data.draw, topk.shape[0])
    plan = plan_page_pairs(topk, offsets)
    edges, sets = _edges(topk, offsets)
    covered = Counter(map(tuple, covered_edges(plan).tolist()))
    assert covered == edges and set(covered.values()) <= {1}
    assert len(plan.work_query) == sum(edges.values()) - int(plan.shared.sum())


@settings(max_examples=300, deadline=None)
@given(topk_arrays(max_n=40, max_k=8, max_page=20), st.data())
def test_incidence_pairs_and_lists(topk, data):
    offsets = _requests(data.draw, topk.shape[0])
    plan = plan_page_pairs(topk, offsets)
    sets = support_sets(topk)
    req = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    readers = {}
    for p, (r, page) in enumerate(plan.pages.tolist()):
        want = [i for i in range(len(sets)) if page in sets[i] and req[i] == r]
        assert plan.readers_of(p).tolist() == want
        readers[p] = set(want)
    flat = plan.pairs.ravel().tolist()
    assert len(flat) == len(set(flat))  # each page in at most one pair
    assert sorted(flat + plan.singles.tolist()) == list(range(len(plan.pages)))
    for k, (a, b) in enumerate(plan.pairs.tolist()):
        common, only_a, only_b = plan.pair_lists(k)
        assert a < b and plan.pages[a, 0] == plan.pages[b, 0]  # never across requests
        assert set(common.tolist()) == readers[a] & readers[b]
        assert plan.shared[k] == len(readers[a] & readers[b]) > 0
        assert set(only_a.tolist()) == readers[a] - readers[b]
        assert set(only_b.tolist()) == readers[b] - readers[a]
    single = set(plan.singles.tolist())
    for a in single:  # greedy matching is maximal: no two unpaired pages share a reader
        for b in single:
            assert a == b or not readers[a] & readers[b]
    assert np.all(np.diff(plan.shared) <= 0)  # taken in order of decreasing |R_a ∩ R_b|
    kinds = set(plan.work_kind.tolist())
    assert kinds <= {COMMON, EXCLUSIVE, SINGLE}
    assert np.all((plan.work_pages[:, 1] >= 0) == (plan.work_kind == COMMON))


def test_worked_example():
    # q0, q1 read pages 1 and 4; q2 reads 1 and 7; q3 reads 4 and 7.
    topk = [[1, 4], [4, 1], [1, 7], [4, 7]]
    plan = plan_page_pairs(topk)
    assert plan.pages[:, 1].tolist() == [1, 4, 7]
    assert plan.pairs.tolist() == [[0, 1]] and plan.shared.tolist() == [2]
    common, only_a, only_b = plan.pair_lists(0)
    assert (common.tolist(), only_a.tolist(), only_b.tolist()) == ([0, 1], [2], [3])
    assert plan.singles.tolist() == [2]
    s = plan.stats()
    assert (s["edges"], s["work_items"], s["common_items"], s["single_items"]) == (8, 6, 2, 2)
    # tiles of 4: common tile walks 2 pages, two exclusive tiles and one tile on page 7
    assert s["tile_rounds"] == 2 + 1 + 1 + 1


def test_empty_supports_give_zero_and_no_work():
    q = np.ones((3, 2, 4))
    k = v = np.ones((2, 2, 4))
    topk = [[-1, -1], [-7, -1], [-1, -1]]
    plan = plan_page_pairs(topk)
    assert len(plan.work_query) == 0 and len(plan.pages) == 0
    out = page_pair_attention(q, k, v, topk)
    assert out.shape == (3, 2, 4) and not out.any()


def test_fully_masked_items_have_minus_inf_lse():
    q = np.ones((1, 1, 2))
    k = v = np.arange(16, dtype=float).reshape(4, 2, 2)
    plan = plan_page_pairs([[0, 3]])
    partial, lse = pair_partials(q, k, v, plan, lengths=[10], causal_pos=[1])
    # only page 0 is visible (c = 1); the common item still yields page 0's softmax
    assert np.isfinite(lse).all()
    plan = plan_page_pairs([[3]])
    partial, lse = pair_partials(q, k, v, plan, causal_pos=[1])
    assert np.isneginf(lse).all() and not partial.any()
    assert not combine(partial, lse, plan.work_query, 1).any()


def test_workspace_accounting():
    # N = 16K queries, K = 16 partial slots each, H = 16, D = 128: BF16 partials are 1 GiB
    assert partial_bytes(16384 * 16, 16, 128, out_bytes=2, lse_bytes=0) == 2**30
    assert partial_bytes(16384 * 8, 16, 128, out_bytes=4, lse_bytes=0) == 2**30
    assert partial_bytes(1, 16, 128) == 16 * 128 * 4 + 16 * 4


def test_recorded_results_missing_is_empty(tmp_path):
    assert list_records(str(tmp_path)) == []
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "x_union8.json").write_text('{"device": "H200"}')
    got = list_records(str(tmp_path))
    assert got == [{"device": "H200", "path": "benchmarks/results/x_union8.json"}]
    for date, us in (("2026-01-01", 5.0), ("2026-02-01", 4.0)):
        record = {"workload": "w", "date": date, "results": [{"name": "a", "median_us": us}]}
        path = tmp_path / "benchmarks" / "results" / f"union8_w_{date}.json"
        path.write_text(json.dumps(record))
    rec = latest_record(str(tmp_path), "w")
    assert rec["date"] == "2026-02-01" and result_medians(rec).get("a") == 4.0
    assert result_medians(rec).get("missing") is None and latest_record(str(tmp_path), "v") is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_dtype_follows_q(dtype):
    rng = np.random.default_rng(1)
    q = torch.as_tensor(rng.standard_normal((5, 2, 4)), dtype=dtype)
    k, v = (torch.as_tensor(x, dtype=dtype) for x in rng.standard_normal((2, 6, 3, 4)))
    topk = rng.integers(-1, 6, (5, 3))
    out = page_pair_attention_torch(q, k, v, topk)
    # numpy inputs: reference_attention casts torch tensors to float32 before float64
    want = reference_attention(*(t.double().numpy() for t in (q, k, v)), topk)
    assert out.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(out.double().numpy(), want, rtol=tol, atol=tol)


def test_time_page_pairs_runs_on_cpu():
    from pageweaver_edu.pagepairs.torch_ops import time_page_pairs

    got = time_page_pairs([[0, 1], [1, 2], [0, 2]], "cpu", heads=2, dim=4, page_size=2,
                          dtype=torch.float32, repeats=1)
    assert got["work_items"] == 5 and got["median_ms"] >= 0
