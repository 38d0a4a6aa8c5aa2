"""Every worked example of docs/definitions.md (supports, unions, greedy regroup), reproduced
exactly."""

import numpy as np

from pageweaver_edu import (
    encode_bitmaps,
    greedy_regroup,
    greedy_regroup_sets,
    popcount_delta,
    token_support,
    union_stats,
)
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.union_metrics import group_union

G3_EXAMPLE = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]
G2_COUNTER = [[1, 2, 3, 4], [1, 2, 6, 7], [1, 2, 3, 5], [3, 5, 8, 9]]


def test_token_support_example():
    assert token_support([0, 2], page_size=4, length=11, causal_pos=9).tolist() == [
        0, 1, 2, 3, 8, 9,
    ]


def test_union_and_rho_example():
    topk = [[1, 4, 7], [1, 4, 9]]
    assert group_union(topk, [0, 1]).tolist() == [1, 4, 7, 9]
    assert union_stats(topk, group=2).rho == 1.5


def test_greedy_g3_example_both_implementations():
    for impl in (greedy_regroup, greedy_regroup_sets):
        perm = impl(G3_EXAMPLE, Grouping(window=6, group=3))
        assert perm.tolist() == [0, 2, 3, 1, 4, 5]
    before = union_stats(G3_EXAMPLE, group=3)
    after = union_stats(G3_EXAMPLE, greedy_regroup(G3_EXAMPLE, Grouping(6, 3)), group=3)
    assert (before.union_visits, after.union_visits) == (10, 7)
    assert before.edges == after.edges == 12


def test_greedy_g3_trace_costs():
    _, trace = greedy_regroup_sets(G3_EXAMPLE, Grouping(6, 3), trace=True)
    first_pick = trace.rounds[1]
    assert first_pick.costs == {1: 2, 2: 1, 3: 2, 4: 2, 5: 2}
    assert first_pick.choice == 2
    assert trace.rounds[2].costs[3] == 1 and trace.rounds[2].choice == 3
    second_group_pick = trace.rounds[4]
    assert second_group_pick.costs == {4: 1, 5: 1} and second_group_pick.choice == 4
    assert [r.choice for r in trace.rounds] == [0, 2, 3, 1, 4, 5]


def test_greedy_counterexample_g2():
    perm = greedy_regroup(G2_COUNTER, Grouping(4, 2))
    assert perm.tolist() == [0, 2, 1, 3]
    assert union_stats(G2_COUNTER, group=2).union_visits == 12
    assert union_stats(G2_COUNTER, perm, group=2).union_visits == 13


def test_popcount_example():
    union, query = encode_bitmaps([[1, 2], [2, 3]], capacity=512)
    assert union.shape == (16,) and union.dtype == np.uint32
    assert int(popcount_delta(query, union)) == 1


def test_c4_example_24_vs_32():
    a, b = list(range(16)), list(range(8, 24))
    stats = union_stats([a] * 4 + [b] * 4, group=8)
    assert (stats.union_visits, stats.c4) == (24, 32)
