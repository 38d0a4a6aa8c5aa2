"""The warp-specialized Union8's ring protocol, replayed on the CPU (pageweaver_edu.replay.ws_ring):
random groups, ring depths and interleavings finish with every stage read as loaded; without
the hold rule the walk deadlocks (as the kernel did on the device before the rule); a loader
that does not wait for event ② is caught."""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu.core.inputs import PageWeaverInputError
from pageweaver_edu.replay import ws_ring
from pageweaver_edu.replay.ws_ring import replay_ring


@pytest.mark.parametrize("slots", [2, 3, 4, 6])
@pytest.mark.parametrize("stages_per_page", [1, 2])
def test_random_groups_finish_cleanly(slots, stages_per_page):
    rng = np.random.default_rng(slots * 10 + stages_per_page)
    for seed in range(60):
        groups = [list(rng.integers(0, 4, rng.integers(0, 25))) for _ in range(rng.integers(1, 6))]
        run = replay_ring(groups, slots, stages_per_page, seed)
        assert run.ok, (seed, groups, run.violations[:3])
        assert run.stages == sum(1 + len(g) * stages_per_page for g in groups)


def test_without_the_hold_rule_a_long_skip_deadlocks():
    groups = [[1, 2, 2, 2, 2, 2, 2, 1]]  # consumer 0 holds its first page over 6 skipped stages
    stuck = replay_ring(groups, slots=4, hold_rule=False)
    assert not stuck.finished and "deadlock" in stuck.violations[0]
    assert replay_ring(groups, slots=4).ok


def test_a_loader_that_ignores_event_two_is_caught(monkeypatch):
    def careless(slots, per_page):  # the loader without its wait on the empty barriers
        s, j = 0, 0
        while True:
            yield ("wait", ("hfull", j & 1), (j >> 1) & 1)
            header = yield ("read_header", j & 1)
            yield ("arrive", ("hfree", j & 1), 1)
            if header is None:
                return
            for index in range(1 + len(header) * per_page):
                yield ("load", s, (j, index))
                s = (s + 1) % slots
            j += 1

    monkeypatch.setattr(ws_ring, "_loader", careless)
    run = replay_ring([[3] * 12, [1, 2] * 5], slots=3)
    assert not run.ok and run.violations  # its re-armed barriers merge phases: a stage never fills


def test_bad_arguments():
    with pytest.raises(PageWeaverInputError):
        replay_ring([[1]], slots=1)
    with pytest.raises(PageWeaverInputError):
        replay_ring([[1]], stages_per_page=3)
