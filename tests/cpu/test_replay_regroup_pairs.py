"""The pair-mask form (the "pairs" kernels' algorithm) gives the reference π."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu import PageWeaverInputError, greedy_regroup
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.replay.regroup_pairs import (
    DELTA_SHIFT,
    ID_SHIFT,
    ROW_MASK,
    col_pos,
    pair_masks,
    pair_tie,
    pairs_regroup,
    pairs_window_order,
    slot_masks,
    transpose_16x16x2,
)
from tests.helpers.strategies import grouping_case


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_transpose_swaps_rows_and_columns_in_both_halves(seed, threads):
    x = np.random.default_rng(seed).integers(0, 2**32, size=(16, threads), dtype=np.uint32)
    y = transpose_16x16x2(x)
    for t in range(16):
        for k in range(16):
            assert np.array_equal((y[t] >> k) & 1, (x[k] >> t) & 1)
            assert np.array_equal((y[t] >> (16 + k)) & 1, (x[k] >> (16 + t)) & 1)


def test_slot_masks_keep_first_occurrences_of_valid_ids():
    rows = np.array([[3, 3, -1, 7], [600, 2, 2, 2], [-1, -1, -1, -1]])
    assert slot_masks(rows, 512).tolist() == [0b1001, 0b0010, 0]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([5, 32, 40, 64, 128]),
       st.integers(1, 16), st.sampled_from([3, 40, 512]))
def test_pair_masks_match_their_definition(seed, w, k, pages):
    rng = np.random.default_rng(seed)
    rows = rng.integers(-1, pages, size=(w, k))
    masks, valid = pair_masks(rows)
    assert np.array_equal(valid, slot_masks(rows))
    sets = [set(r[r >= 0].tolist()) for r in rows]
    for j in range(w):
        for i in range(w):  # every slot of i whose page S_j selects (a repeated id too)
            want = sum(1 << s for s in range(k) if rows[i, s] in sets[j])
            assert masks[j, i] == want


@pytest.mark.parametrize("window", [32, 64, 128])
def test_column_positions_spread_each_warp_over_every_word(window):
    pos = col_pos(np.arange(window), window)
    assert sorted(pos.tolist()) == list(range(window))  # a permutation: M names every query
    words = window // 32
    for warp in range(words):
        lanes = pos[32 * warp:32 * warp + 32] // 32
        assert np.bincount(lanes, minlength=words).tolist() == [32 // words] * words


def test_pair_round_counts_new_pages():
    # Worked example of docs/definitions.md#greedy-regroup (g = 3): π = [0, 2, 3, 1, 4, 5]
    rows = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])
    masks, valid = pair_masks(rows)
    assert pairs_window_order(masks, valid, 3).tolist() == [0, 2, 3, 1, 4, 5]


@settings(max_examples=150, deadline=None)
@given(grouping_case())
def test_pairs_regroup_equals_greedy_regroup(case):
    topk, window, group, offsets, chunk = case
    ref = greedy_regroup(topk, Grouping(window, group, chunk_size=chunk), request_offsets=offsets)
    got = pairs_regroup(topk, Grouping(window, group, chunk_size=chunk), request_offsets=offsets)
    assert got.dtype == np.int32
    assert np.array_equal(ref, got)


@pytest.mark.parametrize("window", [64, 128])
def test_pairs_regroup_on_wide_windows_with_fallback(window):
    rng = np.random.default_rng(window)
    topk = rng.integers(-1, 300, size=(3 * window + 17, 16))
    topk[rng.random(len(topk)) < 0.05] = -1
    topk[5, 3] = 700  # first chunk falls back by id
    grouping, offsets = Grouping(window, chunk_size=window), [0, 2 * window, len(topk)]
    want = greedy_regroup(topk, grouping, request_offsets=offsets)
    assert np.array_equal(pairs_regroup(topk, grouping, request_offsets=offsets), want)
    lengths = np.full(len(topk), 1000)
    lengths[-1] = 513 * 128
    assert np.array_equal(pairs_regroup(topk, Grouping(window), lengths=lengths),
                          greedy_regroup(topk, Grouping(window), lengths=lengths))


def test_more_than_16_slots_is_an_error():
    with pytest.raises(PageWeaverInputError, match="16"):
        pairs_regroup(np.zeros((8, 17), dtype=np.int64), Grouping(8))
    with pytest.raises(PageWeaverInputError, match="16"):
        slot_masks(np.zeros((8, 17), dtype=np.int64))


@pytest.mark.parametrize("window", [32, 64, 128])
def test_pair_ties_order_by_id_and_name_distinct_rows(window):
    ties = [pair_tie(j, window) for j in range(window)]
    assert ties == sorted(ties) and len(set(ties)) == window  # the tie-break is the id
    rows = {t & ROW_MASK for t in ties}
    assert len(rows) == window and max(rows) + 4 * (window - 1) + 2 <= 2 * window * window
    assert all((r & (4 * window - 1)) in (0, 2) for r in rows)  # OR-able with the column 4i
    # a delta of 16 never carries into the dead tie (1 << 30) of the kernel
    assert (16 << DELTA_SHIFT) + max(ties) < 1 << 30 and max(ties) < 1 << DELTA_SHIFT


def test_kernel_uses_the_same_key_layout():
    src = (Path(__file__).resolve().parents[2] / "kernels" / "regroup.cu").read_text()
    assert f"constexpr int kIdShift = {ID_SHIFT};" in src
    assert f"constexpr int kDeltaShift = {DELTA_SHIFT};" in src
