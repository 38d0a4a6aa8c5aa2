"""Hypothesis properties of the greedy regroup (docs/definitions.md#greedy-regroup)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu import PageWeaverInputError, greedy_regroup, greedy_regroup_sets
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.supports import support_sets
from pageweaver_edu.core.windows import chunk_table, split_spans, window_table
from tests.helpers.strategies import grouping_case, topk_arrays


def run_both(topk, window, group, offsets, chunk, capacity=64, lengths=None, page_size=4):
    grouping = Grouping(window, group, capacity, chunk)
    kw = dict(request_offsets=offsets, lengths=lengths, page_size=page_size)
    a = greedy_regroup_sets(topk, grouping, **kw)
    b = greedy_regroup(topk, grouping, **kw)
    return a, b


@settings(max_examples=300, deadline=None)
@given(grouping_case())
def test_set_based_equals_bitmap(case):
    a, b = run_both(*case)
    assert a.dtype == b.dtype == np.int32
    assert np.array_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(grouping_case())
def test_bijection_inside_every_window(case):
    topk, window, group, offsets, chunk = case
    grouping = Grouping(window, group, capacity=64, chunk_size=chunk)
    perm = greedy_regroup(topk, grouping, request_offsets=offsets)
    plan = window_table(topk, grouping, request_offsets=offsets)
    assert sorted(perm.tolist()) == list(range(topk.shape[0]))
    for start, end in plan.windows:  # windows lie inside requests and chunks
        assert sorted(perm[start:end].tolist()) == list(range(start, end))


@settings(max_examples=200, deadline=None)
@given(grouping_case())
def test_windows_respect_requests_and_chunks(case):
    topk, window, group, offsets, chunk = case
    plan = window_table(topk, Grouping(window, group, capacity=64, chunk_size=chunk),
                        request_offsets=offsets)
    chunks = chunk_table(offsets, chunk)
    assert np.array_equal(plan.windows, split_spans(chunks, window))
    for start, end in plan.windows:
        request = np.searchsorted(offsets, start, side="right") - 1
        assert offsets[request] <= start < end <= offsets[request + 1]
        if chunk is not None:
            assert (start - offsets[request]) // chunk == (end - 1 - offsets[request]) // chunk


@settings(max_examples=150, deadline=None)
@given(grouping_case())
def test_greedy_choice_rule_holds(case):
    """Each pick minimizes (new pages, id) among the unassigned queries of its window."""
    topk, window, group, offsets, chunk = case
    perm, trace = greedy_regroup_sets(topk, Grouping(window, group, capacity=64, chunk_size=chunk),
                                      request_offsets=offsets, trace=True)
    sets = support_sets(topk)
    for rnd in trace.rounds:
        if rnd.is_seed:
            assert rnd.costs == {} and rnd.union_after == sets[rnd.choice]
            continue
        best = min(rnd.costs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        assert rnd.choice == best
        assert rnd.costs == {j: len(sets[j] - rnd.union_before) for j in rnd.costs}
        assert rnd.union_after == rnd.union_before | sets[rnd.choice]
    windows = _window_of_slot(topk, window, group, offsets, chunk)
    assert [r.choice for r in trace.rounds] == [
        int(p) for p, w in zip(perm, windows, strict=True) if w is not None
    ]


def _window_of_slot(topk, window, group, offsets, chunk):
    plan = window_table(topk, Grouping(window, group, capacity=64, chunk_size=chunk),
                        request_offsets=offsets)
    out = [None] * topk.shape[0]
    for w, (start, end) in enumerate(plan.windows):
        for s in range(start, end):
            out[s] = w
    return out


def test_ties_break_by_smallest_id():
    # Every candidate costs the same: the order must stay ascending.
    topk = np.array([[5], [1], [2], [3]])
    assert greedy_regroup(topk, Grouping(4, 4)).tolist() == [0, 1, 2, 3]
    # q3 and q1 both cost 0 against U = {7}; q1 wins by id, then q3.
    assert greedy_regroup([[7], [7], [9], [7]], Grouping(4, 2)).tolist() == [0, 1, 2, 3]
    assert greedy_regroup([[7], [9], [7], [7]], Grouping(4, 2)).tolist() == [0, 2, 1, 3]


def test_padding_duplicates_and_empty_rows():
    topk = np.array([[3, 3, -1], [-1, -1, -1], [3, -5, 3], [4, 4, 4]])
    assert support_sets(topk) == [frozenset({3}), frozenset(), frozenset({3}), frozenset({4})]
    # q2 costs 0 against {3}; the empty q1 also costs 0 and has the smaller id.
    assert greedy_regroup(topk, Grouping(4, 2)).tolist() == [0, 1, 2, 3]
    assert (greedy_regroup(topk, Grouping(4, 2)).tolist()
            == greedy_regroup_sets(topk, Grouping(4, 2)).tolist())


@settings(max_examples=100, deadline=None)
@given(topk_arrays(max_page=20), st.integers(1, 4))
def test_capacity_fallback_by_page_id(topk, group):
    window = 2 * group
    capacity = 10
    rows = [r[r >= 0] for r in topk]
    grouping = Grouping(window, group, capacity=capacity)
    perm = greedy_regroup(topk, grouping)
    if any(r.size and r.max() >= capacity for r in rows):
        assert perm.tolist() == list(range(topk.shape[0]))
    assert np.array_equal(perm, greedy_regroup_sets(topk, grouping))


def test_capacity_fallback_is_per_chunk_and_uses_lengths():
    topk = np.array([[1], [2], [1], [2], [1], [2], [1], [2]])
    lengths = np.array([10, 10, 10, 10, 9000, 10, 10, 10])
    # Chunks of 4 rows: only the second chunk needs ceil(9000/128) = 71 > 64 pages.
    perm = greedy_regroup(topk, Grouping(4, 2, capacity=64, chunk_size=4), lengths=lengths)
    assert perm[:4].tolist() == [0, 2, 1, 3]
    assert perm[4:].tolist() == [4, 5, 6, 7]
    perm = greedy_regroup(topk, Grouping(4, 2, capacity=64, chunk_size=4), lengths=lengths * 0 + 10)
    assert perm.tolist() == [0, 2, 1, 3, 4, 6, 5, 7]


def test_page_id_beyond_capacity_falls_back_instead_of_failing():
    topk = np.array([[600], [1], [600], [1]])
    assert greedy_regroup(topk, Grouping(4, 2)).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(window=6, group=4), "not a multiple of the group size"),
        (dict(window=8, group=4, chunk_size=6), "chunk size 6"),
        (dict(window=0, group=4), "window W must be a positive integer"),
        (dict(window=8, group=4, request_offsets=[0, 3]), "must end at N = 4"),
        (dict(window=8, group=4, request_offsets=[1, 4]), "must start at 0"),
        (dict(window=8, group=4, request_offsets=[0, 3, 2, 4]), "non-decreasing"),
        (dict(window=8, group=4, lengths=[1, 2]), "lengths must have shape"),
    ],
)
def test_bad_grouping_arguments(kwargs, message):
    topk = np.zeros((4, 2), dtype=np.int64)
    grouping_keys = {"window", "group", "capacity", "chunk_size"}
    boundaries = {k: v for k, v in kwargs.items() if k not in grouping_keys}
    for impl in (greedy_regroup, greedy_regroup_sets):
        with pytest.raises(PageWeaverInputError, match=message):
            impl(topk, Grouping(**{k: v for k, v in kwargs.items() if k in grouping_keys}),
                 **boundaries)


@pytest.mark.parametrize(
    ("topk", "message"),
    [
        (np.zeros(4, dtype=np.int64), "2-D"),
        (np.zeros((4, 2), dtype=np.float32), "integer dtype"),
        (np.zeros((4, 2), dtype=bool), "integer dtype"),
        (np.array([[2**40, 1]]), "outside -2147483648..2147483647"),
        ("not an array", "2-D"),
    ],
)
def test_bad_topk(topk, message):
    with pytest.raises(PageWeaverInputError, match=message):
        greedy_regroup(topk, Grouping(8))


@pytest.mark.parametrize(("window", "group"), [(128, 2), (128, 8), (96, 3), (512, 8)])
def test_long_windows_match_the_set_reference(window, group):
    """Long windows exercise the bitmap version's dropping of assigned candidates."""
    rng = np.random.default_rng(window + group)
    topk = rng.integers(-1, 40, size=(700, 6))
    grouping, offsets = Grouping(window, group, capacity=64), [0, 333, 700]
    assert np.array_equal(greedy_regroup(topk, grouping, request_offsets=offsets),
                          greedy_regroup_sets(topk, grouping, request_offsets=offsets))
