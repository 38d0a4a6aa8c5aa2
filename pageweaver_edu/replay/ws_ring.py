"""The warp-specialized Union8's ring of stages, replayed on the CPU (``kernels/union8ws.cu``).

One SM, four actors, the kernel's state machines step for step
(docs/definitions.md#the-warp-specialized-kernel):

* the **scheduler** writes each group's header into one of two header buffers (after both
  consumers and the loader freed it two groups earlier);
* the **loader** reads the header, frees it, then fills ring stages in order: the group's Q
  stage, then one stage per union page (``stages_per_page`` per page for half pages), each only
  after both consumers released the stage's previous contents (event ②);
* two **consumers** walk every stage: a stage with none of their slots is released at once;
  a working stage's PV stays pending until the next working stage has been found (the
  intra-warpgroup overlap), unless that next stage would land in the ring slot the pending one
  holds — then the pending stage is finished first (``hold_rule``; without it the walk can
  deadlock, which is what the GPU tests caught on the device).

Barriers are mbarriers with a phase parity. Reported: a deadlock (every actor waits), a read
of a stage that holds other contents, and a copy into a stage a consumer still holds.
Durations are random, so many seeds explore many interleavings; the same seed always gives the
same run.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ..core.inputs import PageWeaverInputError


@dataclass
class _Barrier:
    count: int
    pending: int = 0
    tx: int = 0
    completed: int = 0  # phases completed so far

    def __post_init__(self) -> None:
        self.pending = self.count

    def _maybe_complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count


@dataclass
class RingReplay:
    """Outcome of :func:`replay_ring`: ``ok`` when every actor finished with no violation."""

    finished: bool
    violations: list[str] = field(default_factory=list)
    time: float = 0.0
    stages: int = 0  # stages the loader filled

    @property
    def ok(self) -> bool:
        return self.finished and not self.violations


def _scheduler(groups):
    for j, g in enumerate(groups + [None]):
        b = j & 1
        if j >= 2:
            yield ("wait", ("hfree", b), ((j >> 1) - 1) & 1)
        yield ("write_header", b, g)
        yield ("arrive", ("hfull", b), 1)
        if g is None:
            return


def _loader(slots, per_page):
    s, parity, wrapped, j = 0, 0, False, 0
    while True:
        b = j & 1
        yield ("wait", ("hfull", b), (j >> 1) & 1)
        header = yield ("read_header", b)
        yield ("arrive", ("hfree", b), 1)
        if header is None:
            return
        for index in range(1 + len(header) * per_page):  # the Q stage, then the pages
            if wrapped:
                yield ("wait", ("empty", s), parity ^ 1)
            yield ("load", s, (j, index))
            s += 1
            if s == slots:
                s, parity, wrapped = 0, parity ^ 1, True
        j += 1


def _consumer(c, slots, per_page, hold_rule):
    s, parity, j = 0, 0, 0

    def wait_stage(tag):
        nonlocal s, parity
        yield ("wait", ("full", s), parity)
        yield ("read", s, tag)
        pos = s
        s += 1
        if s == slots:
            s, parity = 0, parity ^ 1
        return pos

    while True:
        b = j & 1
        yield ("wait", ("hfull", b), (j >> 1) & 1)
        header = yield ("read_header", b)
        if header is None:
            return
        q = yield from wait_stage((j, 0))  # the Q stage
        yield ("work", "q")
        yield ("arrive", ("empty", q), 1)
        pages = [m for m in header for _ in range(per_page)]
        index, pending = 0, None  # the working stage whose PV is still in flight
        while True:
            found = None
            while index < len(pages):
                if hold_rule and pending is not None and s == pending:
                    break  # finish the pending stage first: the loader needs its slot
                pos = yield from wait_stage((j, 1 + index))
                index += 1
                if pages[index - 1] >> c & 1:
                    found = pos
                    break
                yield ("arrive", ("empty", pos), 1)
            if pending is not None:  # PV of the pending stage, then its release
                yield ("work", "pv")
                yield ("arrive", ("empty", pending), 1)
                pending = None
            if found is not None:
                yield ("work", "qk+softmax")
                pending = found
            elif index >= len(pages):
                break
        yield ("arrive", ("hfree", b), 1)
        j += 1


def replay_ring(masks_per_group, slots: int = 6, stages_per_page: int = 1, seed: int = 0,
                hold_rule: bool = True, max_events: int = 200_000) -> RingReplay:
    """Replay one SM's run of the warp-specialized Union8 over a sequence of groups.

    Parameters
    ----------
    masks_per_group : list of sequence of int
        Per group, per union page: bit c set when consumer c has a slot that sees the page
        (0..3). A page no consumer sees is legal (the loader still fills its stage).
    slots : int
        Ring stages (2..6 in the kernel).
    stages_per_page : int
        1 (FP8 pages) or 2 (BF16 half pages).
    seed : int
        Seeds the random durations of loads and of the consumers' work.
    hold_rule : bool
        Finish a pending stage before looking at the stage that would reuse its slot.

    Returns
    -------
    RingReplay
    """
    if slots < 2 or stages_per_page not in (1, 2):
        raise PageWeaverInputError("slots must be >= 2 and stages_per_page 1 or 2")
    groups = [[int(m) & 3 for m in g] for g in masks_per_group]
    rng = np.random.default_rng(seed)
    bars = {("hfull", b): _Barrier(1) for b in (0, 1)}
    bars |= {("hfree", b): _Barrier(3) for b in (0, 1)}
    bars |= {("full", s): _Barrier(1) for s in range(slots)}
    bars |= {("empty", s): _Barrier(2) for s in range(slots)}
    headers, contents = [None, None], [None] * slots
    actors = {"scheduler": _scheduler(groups), "loader": _loader(slots, stages_per_page),
              "consumer0": _consumer(0, slots, stages_per_page, hold_rule),
              "consumer1": _consumer(1, slots, stages_per_page, hold_rule)}
    out = RingReplay(False)
    queue = [(0.0, k, name, None) for k, name in enumerate(actors)]  # (time, order, actor, value)
    waiting: dict[str, tuple] = {}  # actor -> (barrier key, parity it waits on)
    holders = [set() for _ in range(slots)]  # consumers that read a stage and did not release
    done: set[str] = set()
    order = len(actors)
    events = 0
    while queue or waiting:
        if not queue:
            out.violations.append("deadlock: " + "; ".join(
                f"{a} waits on {k} parity {p}" for a, (k, p) in sorted(waiting.items())))
            return out
        t, _, name, value = heapq.heappop(queue)
        out.time = t
        events += 1
        if events > max_events:
            out.violations.append("no progress within max_events")
            return out
        if name == "_land":  # a copy lands: the stage holds its contents, event ① may fire
            s, tag = value
            contents[s] = tag
            bars[("full", s)].tx -= 1
            bars[("full", s)]._maybe_complete()
            _wake(bars, waiting, queue, t)
            continue
        try:
            cmd = actors[name].send(value)
        except StopIteration:
            done.add(name)
            continue
        kind, value, delay = cmd[0], None, 0.0
        if kind == "wait":
            key, parity = cmd[1], cmd[2]
            waiting[name] = (key, parity)
        elif kind == "arrive":
            bar = bars[cmd[1]]
            if cmd[1][0] == "empty" and name.startswith("consumer"):
                holders[cmd[1][1]].discard(name)
            bar.pending -= cmd[2]
            bar._maybe_complete()
        elif kind == "write_header":
            headers[cmd[1]] = cmd[2]
        elif kind == "read_header":
            value = headers[cmd[1]]
        elif kind == "load":
            s, tag = cmd[1], cmd[2]
            if holders[s]:
                out.violations.append(f"t={t:.1f}: stage {s} refilled while {holders[s]} hold it")
            bar = bars[("full", s)]
            bar.pending -= 1  # the loader's arrive.expect_tx
            bar.tx += 1
            latency = float(rng.uniform(1.0, 4.0))
            heapq.heappush(queue, (t + latency, order, "_land", (s, tag)))
            order += 1
            out.stages += 1
        elif kind == "read":
            s, tag = cmd[1], cmd[2]
            if contents[s] != tag:
                out.violations.append(f"t={t:.1f}: {name} read stage {s} = {contents[s]}, "
                                      f"expected {tag}")
            holders[s].add(name)
        elif kind == "work":
            delay = float(rng.uniform(0.2, 3.0))
        if kind != "wait":
            heapq.heappush(queue, (t + delay, order, name, value))
            order += 1
        _wake(bars, waiting, queue, t)
    out.finished = done == set(actors)
    return out


def _wake(bars, waiting, queue, t) -> None:
    """Resume every actor whose barrier has completed the phase of the parity it waits on."""
    for name, (key, parity) in list(waiting.items()):
        if (bars[key].completed & 1) != parity:
            del waiting[name]
            heapq.heappush(queue, (t, -1, name, None))
