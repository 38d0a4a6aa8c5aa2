"""Union preparation and union metrics (docs/definitions.md#unions, #union-preparation)."""

import numpy as np
import pytest
from hypothesis import given, settings

from pageweaver_edu import PageWeaverInputError, greedy_regroup, prepare_unions, union_stats
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.supports import support_sets
from pageweaver_edu.core.windows import group_table
from tests.helpers.strategies import grouping_case


@settings(max_examples=200, deadline=None)
@given(grouping_case())
def test_plan_reproduces_every_support(case):
    topk, window, group, offsets, chunk = case
    perm = greedy_regroup(topk, Grouping(window, group, capacity=64, chunk_size=chunk),
                          request_offsets=offsets)
    plan = prepare_unions(topk, perm, offsets, group)
    assert plan.supports() == support_sets(topk)
    sets = support_sets(topk)
    for g, (base, size) in enumerate(plan.group_slots):
        pages, masks = plan.group_pages(g)
        members = [int(perm[base + r]) for r in range(size)]
        union = set().union(*(sets[i] for i in members)) if members else set()
        assert pages.tolist() == sorted(union)  # sorted, unique U_G
        for p, m in zip(pages, masks, strict=True):
            assert all(((m >> r) & 1) == (int(p) in sets[i]) for r, i in enumerate(members))
            assert m >> size == 0  # no bit beyond the group's slots
    assert np.array_equal(plan.cta_any[:, 0], (plan.masks & 0x0F) != 0)
    assert np.array_equal(plan.cta_any[:, 1], (plan.masks & 0xF0) != 0)
    assert plan.page_counts.sum() == union_stats(topk, perm, offsets, group).union_visits
    assert np.array_equal(np.diff(plan.page_offsets), plan.page_counts)


@settings(max_examples=100, deadline=None)
@given(grouping_case())
def test_groups_are_request_local_blocks(case):
    topk, _, group, offsets, _ = case
    table = group_table(offsets, group)
    covered = np.concatenate([np.arange(s, s + n) for s, n in table]) if len(table) else []
    assert list(covered) == list(range(topk.shape[0]))
    for start, size in table:
        request = np.searchsorted(offsets, start, side="right") - 1
        assert 0 < size <= group and start + size <= offsets[request + 1]


@settings(max_examples=100, deadline=None)
@given(grouping_case())
def test_regroup_preserves_edges_and_c4_bounds(case):
    topk, window, group, offsets, chunk = case
    before = union_stats(topk, None, offsets, group)
    perm = greedy_regroup(topk, Grouping(window, group, capacity=64, chunk_size=chunk),
                          request_offsets=offsets)
    after = union_stats(topk, perm, offsets, group)
    assert before.edges == after.edges
    for s in (before, after):
        assert s.union_visits <= s.c4 <= s.edges or s.edges == 0


def test_tail_group_c4_split():
    # A tail group of 6 slots: G0 = its first 4 slots, G1 = the other 2.
    topk = [[1], [1], [1], [1], [1], [2]]
    stats = union_stats(topk, group=8)
    assert (stats.union_visits, stats.c4) == (2, 3)


def test_group_larger_than_a_byte_is_refused():
    with pytest.raises(PageWeaverInputError, match="at most 8 slots"):
        prepare_unions([[1]] * 16, group=16)


def test_permutation_validation():
    topk = [[1], [2], [3], [4]]
    with pytest.raises(PageWeaverInputError, match="not a permutation"):
        prepare_unions(topk, [0, 0, 1, 2])
    with pytest.raises(PageWeaverInputError, match="another request"):
        prepare_unions(topk, [2, 1, 0, 3], request_offsets=[0, 2, 4])
    with pytest.raises(PageWeaverInputError, match="shape"):
        prepare_unions(topk, [0, 1, 2])


@settings(max_examples=50, deadline=None)
@given(grouping_case())
def test_sorted_and_dense_distinct_counts_agree(case):
    import pageweaver_edu.core.union_metrics as um

    topk, window, group, offsets, chunk = case
    perm = greedy_regroup(topk, Grouping(window, group, capacity=64, chunk_size=chunk),
                          request_offsets=offsets)
    dense = union_stats(topk, perm, offsets, group)
    saved, um._DENSE_CELLS = um._DENSE_CELLS, 0
    try:
        by_sort = union_stats(topk, perm, offsets, group)
    finally:
        um._DENSE_CELLS = saved
    assert (dense.union_visits, dense.c4) == (by_sort.union_visits, by_sort.c4)
    assert np.array_equal(dense.union_sizes, by_sort.union_sizes)
