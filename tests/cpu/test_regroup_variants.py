"""Exhaustive, C4-aware, subgroup-first and static-seed regrouping.

Definitions: docs/definitions.md#open-questions.
"""

from itertools import permutations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu import PageWeaverInputError, greedy_regroup, union_stats
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.supports import support_sets
from pageweaver_edu.core.union_metrics import cta_balance, window_visits
from pageweaver_edu.core.windows import window_table
from pageweaver_edu.regroup.optimal import optimal_regroup, partition_count
from pageweaver_edu.regroup.variants import (
    c4_greedy_regroup,
    static_seed_regroup,
    subgroup_first_regroup,
)
from tests.helpers.strategies import grouping_case, topk_arrays

G3_EXAMPLE = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
G2_COUNTER = [[1, 2, 3, 4], [1, 2, 6, 7], [1, 2, 3, 5], [3, 5, 8, 9]]


def assert_valid(perm, topk, window, group, offsets, chunk, capacity=64, lengths=None):
    plan = window_table(topk, grouping_of(window, group, chunk, capacity), lengths=lengths,
                        **kw(offsets))
    assert perm.dtype == np.int32 and sorted(perm.tolist()) == list(range(topk.shape[0]))
    for (start, end), identity in zip(plan.windows, plan.fallback, strict=True):
        assert sorted(perm[start:end].tolist()) == list(range(start, end))
        if identity:
            assert perm[start:end].tolist() == list(range(start, end))


def grouping_of(window, group, chunk, capacity=64):
    return Grouping(window, group, capacity, chunk)


def kw(offsets):
    return dict(request_offsets=offsets, page_size=4)


@settings(max_examples=200, deadline=None)
@given(grouping_case(), st.sampled_from([0.0, 0.5, 1.0, 3.0]), st.sampled_from([8, 16, 64]))
def test_c4_greedy_valid_and_weight_zero_is_algorithm_1(case, weight, capacity):
    topk, window, group, offsets, chunk = case
    grouping = grouping_of(window, group, chunk, capacity)
    perm = c4_greedy_regroup(topk, grouping, weight, **kw(offsets))
    assert_valid(perm, topk, window, group, offsets, chunk, capacity)
    if weight == 0.0:
        want = greedy_regroup(topk, grouping_of(window, group, chunk, capacity), **kw(offsets))
        assert np.array_equal(perm, want)


@settings(max_examples=150, deadline=None)
@given(grouping_case(), st.sampled_from([8, 16, 64]))
def test_static_seed_valid_and_equal_to_algorithm_1_up_to_g2(case, capacity):
    topk, window, group, offsets, chunk = case
    perm = static_seed_regroup(topk, grouping_of(window, group, chunk, capacity), **kw(offsets))
    assert_valid(perm, topk, window, group, offsets, chunk, capacity)
    if group <= 2:  # one pick per group, made against U = S_seed by both rules
        want = greedy_regroup(topk, grouping_of(window, group, chunk, capacity), **kw(offsets))
        assert np.array_equal(perm, want)


def test_static_seed_variant_loses_the_g3_gain():
    static = static_seed_regroup(G3_EXAMPLE, Grouping(6, 3))
    assert static.tolist() == [0, 2, 1, 3, 4, 5]
    assert union_stats(G3_EXAMPLE, static, group=3).union_visits == 10
    greedy = greedy_regroup(G3_EXAMPLE, Grouping(6, 3))
    assert union_stats(G3_EXAMPLE, greedy, group=3).union_visits == 7


@st.composite
def even_grouping_case(draw):
    topk, window, group, offsets, chunk = draw(grouping_case())
    group = draw(st.sampled_from([2, 4, 8]))
    window = group * draw(st.integers(1, 4))
    chunk = None if chunk is None else group * draw(st.integers(1, 4))
    return topk, window, group, offsets, chunk


@settings(max_examples=200, deadline=None)
@given(even_grouping_case(), st.sampled_from([16, 64]))
def test_subgroup_first_valid_and_halves_are_greedy_subgroups(case, capacity):
    topk, window, group, offsets, chunk = case
    perm = subgroup_first_regroup(topk, grouping_of(window, group, chunk, capacity), **kw(offsets))
    assert_valid(perm, topk, window, group, offsets, chunk, capacity)
    # The halves of every group are exactly the subgroups Algorithm 1 builds with g/2.
    sub = greedy_regroup(topk, grouping_of(window, group // 2, chunk, capacity), **kw(offsets))
    plan = window_table(topk, grouping_of(window, group, chunk, capacity), **kw(offsets))
    half = group // 2
    for start, end in plan.windows:
        def halves(p, lo=int(start), hi=int(end)):
            return sorted(tuple(sorted(p[i : min(i + half, hi)].tolist()))
                          for i in range(lo, hi, half))
        assert halves(perm) == halves(sub)


@st.composite
def tiny_case(draw):
    topk = draw(topk_arrays(max_n=24, max_k=5, max_page=16))
    group, window = draw(st.sampled_from([(2, 2), (2, 4), (2, 6), (2, 8), (3, 6), (4, 8),
                                          (4, 12), (8, 16)]))
    cuts = sorted(draw(st.lists(st.integers(0, topk.shape[0]), max_size=2)))
    return topk, window, group, np.array([0, *cuts, topk.shape[0]])


@settings(max_examples=150, deadline=None)
@given(tiny_case())
def test_optimal_never_worse_than_greedy_or_original_per_window(case):
    topk, window, group, offsets = case
    opt = optimal_regroup(topk, grouping_of(window, group, None), **kw(offsets))
    assert_valid(opt, topk, window, group, offsets, None)
    greedy = greedy_regroup(topk, grouping_of(window, group, None), **kw(offsets))
    v_opt = window_visits(topk, opt, Grouping(window, group), offsets)
    assert np.all(v_opt <= window_visits(topk, greedy, Grouping(window, group), offsets))
    assert np.all(v_opt <= window_visits(topk, None, Grouping(window, group), offsets))


def brute_force(sets, group):
    """Minimum union visits over every ordering of one window (groups of g slots)."""
    best = None
    for order in permutations(range(len(sets))):
        cost = sum(len(set().union(*(sets[i] for i in order[s : s + group])))
                   for s in range(0, len(sets), group))
        best = cost if best is None else min(best, cost)
    return best


@settings(max_examples=80, deadline=None)
@given(topk_arrays(max_n=7, max_k=4, max_page=10), st.sampled_from([2, 3]))
def test_optimal_matches_brute_force(topk, group):
    n = topk.shape[0]
    window = group * 3  # one window covers all n <= 7 < 9 queries... or is a tail window
    perm = optimal_regroup(topk, Grouping(window, group, capacity=64))
    got = window_visits(topk, perm, Grouping(window, group))
    sets = support_sets(topk)
    plan = window_table(topk, Grouping(window, group, capacity=64))
    for w, (start, end) in enumerate(plan.windows):
        assert got[w] == brute_force(sets[start:end], group)
    assert n == 0 or len(plan.windows) >= 1


def test_paper_examples():
    g2, g3 = Grouping(4, 2), Grouping(6, 3)
    assert union_stats(G2_COUNTER, optimal_regroup(G2_COUNTER, g2), group=2).union_visits == 12
    assert union_stats(G2_COUNTER, greedy_regroup(G2_COUNTER, g2), group=2).union_visits == 13
    assert union_stats(G3_EXAMPLE, optimal_regroup(G3_EXAMPLE, g3), group=3).union_visits == 7
    assert c4_greedy_regroup(G3_EXAMPLE, Grouping(6, 3), 0).tolist() == [0, 2, 3, 1, 4, 5]


def test_partition_counts_and_limit():
    assert partition_count(16, 8) == 6435
    assert partition_count(12, 4) == 5775
    assert partition_count(8, 2) == 105
    assert partition_count(6, 4) == 15  # a short window: choose the 2-query tail group
    with pytest.raises(PageWeaverInputError, match="partitions"):
        optimal_regroup([[0]] * 16, Grouping(16, 4))


def test_capacity_fallback_keeps_identity():
    topk = np.array([[0, 700], [1, 2], [0, 1], [2, 700]] * 4)
    for f in (optimal_regroup, c4_greedy_regroup, subgroup_first_regroup, static_seed_regroup):
        window = 8 if f is optimal_regroup else 16
        group = 4 if f is optimal_regroup else 8
        assert f(topk, Grouping(window, group)).tolist() == list(range(16))
        assert f(topk, Grouping(window, group, capacity=1024)).tolist() != list(range(16))


@settings(max_examples=150, deadline=None)
@given(grouping_case())
def test_cta_balance_and_window_visits(case):
    topk, window, group, offsets, chunk = case
    perm = greedy_regroup(topk, grouping_of(window, group, chunk), **kw(offsets))
    bal = cta_balance(topk, perm, offsets, group)
    stats = union_stats(topk, perm, offsets, group)
    assert (bal["union_visits"], bal["c4"]) == (stats.union_visits, stats.c4)
    assert bal["c4"] / 2 <= bal["critical"] <= bal["c4"]
    assert 0 <= bal["one_sided"] <= bal["union_visits"]
    grouping = grouping_of(window, group, chunk)
    visits = window_visits(topk, perm, grouping, offsets)
    assert visits.sum() == stats.union_visits
    again = window_visits(topk, perm, grouping, offsets, stats.union_sizes)
    assert np.array_equal(visits, again)
    assert len(visits) == len(window_table(topk, grouping, request_offsets=offsets).windows)
