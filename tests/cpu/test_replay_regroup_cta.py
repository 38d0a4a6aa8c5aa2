"""The thread-by-thread CTA simulation gives the reference π.

Definitions: docs/definitions.md#regroup-on-a-gpu.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu import encode_bitmaps, greedy_regroup, greedy_regroup_sets
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.replay.regroup_cost import regroup_cost
from pageweaver_edu.replay.regroup_cta import (
    SENTINEL,
    cta_regroup,
    shuffle_argmin,
    simulate_window,
    trace_window,
)
from tests.helpers.strategies import grouping_case

G3_EXAMPLE = [[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]]


@st.composite
def wide_windows(draw):
    """W64/W128 windows with a short tail, many ties (few pages), padding and empty rows."""
    window = draw(st.sampled_from([64, 128]))
    n = draw(st.integers(1, 2 * window + 40))
    k = draw(st.integers(1, 6))
    pages = draw(st.sampled_from([2, 4, 12, 64, 512]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    topk = rng.integers(0, pages, size=(n, k))
    topk[rng.random((n, k)) < 0.2] = -1
    topk[rng.random(n) < 0.1] = -1  # empty rows
    group = draw(st.sampled_from([4, 8]))
    return topk, window, group


@settings(max_examples=150, deadline=None)
@given(grouping_case())
def test_cta_simulation_equals_greedy_regroup(case):
    topk, window, group, offsets, chunk = case
    grouping = Grouping(window, group, capacity=64, chunk_size=chunk)
    assert np.array_equal(cta_regroup(topk, grouping, request_offsets=offsets),
                          greedy_regroup(topk, grouping, request_offsets=offsets))


@settings(max_examples=40, deadline=None)
@given(wide_windows(), st.sampled_from(["down", "xor"]))
def test_cta_simulation_on_w64_w128_windows(case, mode):
    topk, window, group = case
    perm = cta_regroup(topk, Grouping(window, group), shuffle=mode)
    assert perm.dtype == np.int32
    assert np.array_equal(perm, greedy_regroup(topk, Grouping(window, group)))


def test_capacity_fallback_keeps_identity():
    topk = np.array([[0, 5], [1, 70], [5, 0], [3, 3]])
    assert cta_regroup(topk, Grouping(4, 2, capacity=64)).tolist() == [0, 1, 2, 3]
    expected = greedy_regroup(topk, Grouping(4, 2, capacity=128)).tolist()
    assert cta_regroup(topk, Grouping(4, 2, capacity=128)).tolist() == expected


def test_worked_example_g3():
    assert cta_regroup(G3_EXAMPLE, Grouping(6, 3)).tolist() == [0, 2, 3, 1, 4, 5]
    start, trace = trace_window(G3_EXAMPLE, Grouping(6, 3), 0)
    assert start == 0 and trace.threads == 32
    r1 = trace.rounds[1]  # seed q0, U = {1, 2}: costs of q1..q5 are 2, 1, 2, 2, 2
    assert r1.deltas[:6].tolist() == [-1, 2, 1, 2, 2, 2]
    assert r1.winner == 2 and r1.winner_delta == 1
    assert trace.rounds[3].is_seed and trace.rounds[3].winner == 1
    assert trace.barriers == 12 and trace.rounds[-1].barriers == 12


@settings(max_examples=60, deadline=None)
@given(grouping_case(max_n=24))
def test_recorded_deltas_match_set_costs(case):
    topk, window, group, _, _ = case
    if topk.shape[0] == 0:
        return
    _, ref = greedy_regroup_sets(topk, Grouping(window, group, capacity=64), trace=True)
    start, trace = trace_window(topk, Grouping(window, group, capacity=64), 0)
    mine = trace.rounds
    theirs = [r for r in ref.rounds if r.window == 0]
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs, strict=True):
        assert a.is_seed == b.is_seed and start + a.winner == b.choice
        if not a.is_seed:
            competing = {start + t: int(d) for t, d in enumerate(a.deltas) if d >= 0}
            assert competing == b.costs


def test_shuffle_levels_and_modes():
    rng = np.random.default_rng(1)
    keys = np.stack([rng.integers(0, 4, (3, 32)), rng.permutation(96).reshape(3, 32)], -1)
    keys[1, 5:] = SENTINEL
    expected = [min(map(tuple, w)) for w in keys]
    down = shuffle_argmin(keys.astype(np.int32))
    xor = shuffle_argmin(keys.astype(np.int32), "xor")
    assert down.shape == (3, 6, 32, 2)
    assert [tuple(v) for v in down[:, -1, 0]] == expected
    assert all((xor[w, -1] == expected[w]).all() for w in range(3))  # butterfly: every lane


def test_word_ops_and_barriers_of_one_window():
    rng = np.random.default_rng(2)
    bits = encode_bitmaps(rng.integers(0, 512, (100, 16)))
    trace = simulate_window(bits, 8, 128, record=False)
    assert sorted(trace.order.tolist()) == list(range(100))
    assert trace.barriers == 200
    assert trace.word_ops == (100 - 13) * 128 * 16  # no popcounts in the 13 seed rounds
    with pytest.raises(ValueError):
        simulate_window(bits, 8, 96)


def test_cost_model():
    c64, c128 = regroup_cost(15_272, 64), regroup_cost(15_272, 128)
    assert (c64.windows, c64.word_ops, c64.serial_rounds) == (239, 15_272 * 64 * 16, 64)
    assert (c128.windows, c128.word_ops, c128.serial_rounds) == (120, 15_272 * 128 * 16, 128)
    assert (c64.shuffle_levels_per_round, c128.shuffle_levels_per_round) == (6, 7)
    assert c128.barriers_per_window == 256
    assert regroup_cost(40, 128).serial_rounds == 40
    assert regroup_cost(100, 64, capacity=1024).words == 32
