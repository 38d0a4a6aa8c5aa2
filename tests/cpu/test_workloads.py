"""Tests for the seeded workload generators and the calibrated presets."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from pageweaver_edu.core.capture import Capture
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.inputs import PageWeaverInputError
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.workloads import (
    PRESETS,
    capture_like_workload,
    distinct_rows,
    interleaved_workload,
    make_preset,
    preset_names,
    preset_statistics,
    statistics_markdown,
    uniform_workload,
)

SMALL = {
    "uniform": lambda seed: uniform_workload(300, 40, k=8, seed=seed),
    "uniform-causal": lambda seed: uniform_workload(
        300, 40, k=8, seed=seed, causal=True, page_size=16
    ),
    "capture-like": lambda seed: capture_like_workload(500, 1_000, page_size=32, seed=seed),
    "interleaved": lambda seed: interleaved_workload(200, 96, k=8, communities=4, seed=seed),
}


@pytest.fixture(scope="module")
def cap64k_stats():
    return preset_statistics("cap64k")


def _fields(cap: Capture):
    return (cap.topk, cap.lengths, cap.causal_pos, cap.page_size)


def _assert_same(a: Capture, b: Capture):
    for x, y in zip(_fields(a), _fields(b), strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def _assert_rows_distinct_valid(topk: np.ndarray, limit: np.ndarray):
    k = topk.shape[1]
    for row, lim in zip(topk, limit, strict=True):
        valid = row[row >= 0]
        assert len(np.unique(valid)) == len(valid) == min(k, int(lim))
        assert valid.max() < lim
        assert np.all(np.diff(valid) > 0)  # ascending


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_generators_deterministic_per_seed(kind):
    make = SMALL[kind]
    _assert_same(make(3), make(3))
    assert not np.array_equal(make(3).topk, make(4).topk)


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_shapes_and_dtypes(kind):
    cap = SMALL[kind](0)
    assert cap.topk.dtype == np.int64 and cap.topk.ndim == 2
    assert cap.topk.shape[1] == (16 if kind == "capture-like" else 8)
    if cap.causal_pos is not None:
        assert cap.causal_pos.dtype == np.int64 and cap.causal_pos.shape == (cap.num_queries,)
        np.testing.assert_array_equal(cap.lengths, cap.causal_pos + 1)


@pytest.mark.parametrize("kind", ["uniform-causal", "capture-like"])
def test_causal_rows_stay_at_or_before_the_query_page(kind):
    cap = SMALL[kind](1)
    cur = cap.causal_pos // cap.page_size
    assert np.all(cap.topk.max(axis=1) <= cur)
    assert np.all(np.diff(cap.causal_pos) == 1)
    _assert_rows_distinct_valid(cap.topk, cur + 1)


def test_capture_like_sink_local_and_short_contexts():
    cap = capture_like_workload(400, 0, page_size=8, k=16, seed=2)
    cur = cap.causal_pos // 8
    _assert_rows_distinct_valid(cap.topk, cur + 1)
    assert np.all(cap.topk[cur < 15, -1] == -1)  # fewer than K pages exist: padded
    for row, c in zip(cap.topk, cur, strict=True):
        assert {0, int(c), max(int(c) - 1, 0)} <= set(row.tolist())


def test_uniform_and_interleaved_rows():
    cap = SMALL["uniform"](0)
    _assert_rows_distinct_valid(cap.topk, np.full(cap.num_queries, 40))
    assert cap.lengths is None and cap.causal_pos is None
    cap = SMALL["interleaved"](0)
    _assert_rows_distinct_valid(cap.topk, np.full(cap.num_queries, 96))
    pools = [set(np.unique(cap.topk[c::4]).tolist()) for c in range(4)]
    assert all(len(p) == 24 for p in pools)  # 96 pages // 4 communities
    assert all(not (pools[a] & pools[b]) for a in range(4) for b in range(a + 1, 4))


def test_distinct_rows_with_barely_enough_pages():
    rng = np.random.default_rng(0)
    cand = np.zeros((50, 6), dtype=np.int64)
    limit = np.array([7] * 25 + [3] * 25)
    out = distinct_rows(cand, limit, rng)
    _assert_rows_distinct_valid(out, limit)


def test_preset_registry():
    assert preset_names() == list(PRESETS)
    assert {
        "cap64k",
        "cap16k-high-overlap",
        "interleaved-32k",
        "interleaved-64k",
        "beyond-capacity",
    } <= set(preset_names())
    with pytest.raises(PageWeaverInputError, match="valid presets: cap64k"):
        make_preset("cap65k")


def test_cap64k_shape_determinism_and_speed():
    t0 = time.perf_counter()
    cap = make_preset("cap64k", seed=0)
    assert time.perf_counter() - t0 < 1.0
    assert cap.topk.shape == (15_272, 16) and cap.page_size == 128
    assert cap.causal_pos[0] == 49_152 and cap.lengths[-1] == 64_424
    assert int(cap.topk.max()) == 503
    _assert_rows_distinct_valid(cap.topk, cap.causal_pos // 128 + 1)
    _assert_same(cap, make_preset("cap64k", seed=0))


def test_cap64k_calibration(cap64k_stats):
    s = cap64k_stats
    assert s["edges"] == 15_272 * 16 and s["pages"] == 504 and not s["fallback"]
    assert 2.2 <= s["rho"]["original"] <= 2.6
    assert -14.0 <= s["change_pct"]["W128"] <= -11.0
    assert s["change_pct"]["W64"] > s["change_pct"]["W128"]  # the larger window finds more
    assert s["c4"]["W128"] < s["c4"]["original"]


def test_docs_table_matches_measurement(cap64k_stats):
    doc = Path(__file__).resolve().parents[2] / "docs" / "presets.md"
    uv = cap64k_stats["union_visits"]
    row = f"| `cap64k` | 15,272 | 16 | 504 | 244,352 | {uv['original']:,} | {uv['W64']:,} ("
    assert row in doc.read_text(encoding="utf-8")


@pytest.mark.parametrize("seed", [0, 1])
def test_high_overlap_preset(seed):
    s = preset_statistics("cap16k-high-overlap", seed=seed)
    assert s["pages"] == 128
    assert 3.5 <= s["rho"]["original"] <= 4.5
    assert s["change_pct"]["W128"] < 0


def test_interleaved_presets_regroup_wins_big():
    for name, pages in [("interleaved-32k", 256), ("interleaved-64k", 512)]:
        s = preset_statistics(name, windows=(128,))
        assert s["pages"] == pages and s["rho"]["original"] == pytest.approx(1.0)
        assert s["change_pct"]["W128"] < -50.0


def test_beyond_capacity_falls_back_to_identity():
    cap = make_preset("beyond-capacity")
    assert int(cap.lengths.max()) > 65_536 and int(cap.topk.max()) >= 512
    perm = greedy_regroup(cap.topk, Grouping(128), **cap.regroup_kwargs())
    np.testing.assert_array_equal(perm, np.arange(cap.num_queries))
    s = preset_statistics(cap, windows=(128,))
    assert s["fallback"] and s["change_pct"]["W128"] == 0.0


def test_statistics_markdown_row():
    table = statistics_markdown(["cap16k-high-overlap"])
    assert table.count("\n") == 2 and "`cap16k-high-overlap` | 4,096 | 16 | 128 |" in table


@pytest.mark.parametrize(
    "call",
    [
        lambda: uniform_workload(-1, 10),
        lambda: uniform_workload(10, 0),
        lambda: uniform_workload(10, 10, k=0),
        lambda: uniform_workload(10, 10, seed=-3),
        lambda: uniform_workload(200, 1, causal=True, page_size=128),
        lambda: capture_like_workload(10, 0, k=8, topic_pages=9),
        lambda: capture_like_workload(10, 0, drift=20.0),
        lambda: capture_like_workload(10, 0, run_mean=0.5),
        lambda: capture_like_workload(10, 0, revisit=1.5),
        lambda: capture_like_workload(10, 0, page_size=0),
        lambda: interleaved_workload(10, 64, k=16, communities=8),
        lambda: interleaved_workload(10, 64, communities=1),
        lambda: make_preset("cap64k", seed=1.5),
    ],
)
def test_bad_arguments_raise(call):
    with pytest.raises(PageWeaverInputError):
        call()
