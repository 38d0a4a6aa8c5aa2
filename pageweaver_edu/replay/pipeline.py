"""Discrete-event simulator of the Union8 two-CTA KV pipeline (arXiv:2610.11201, Figure 3).

One cluster of two CTAs walks a group's union page list ``U_G``.  Each CTA owns ``n_slots``
local KV slots; CTA0's thread 0 (the *loader*) multicasts page ``i`` into slot ``i % n_slots``
of both CTAs.  Event ① ("page ready") fires when the load lands; each CTA then runs
QK → softmax → PV if any of its four queries selects the page, or skips the arithmetic, and
releases the slot.  Event ② ("slot free") fires only after BOTH CTAs released it; only then
may page ``i + n_slots`` be loaded into that slot.  Times are schematic (arbitrary units),
not measured durations; the same inputs always give the same timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..core.inputs import PageWeaverInputError

ACTORS = ("loader", "cta0", "cta1")
KINDS = ("load", "ready①", "qk", "softmax", "pv", "skip", "release", "free②", "wait")
BUSY = ("load", "qk", "softmax", "pv", "skip")  # kinds counted as busy time


class PipelineInputError(PageWeaverInputError):
    """Bad input to the pipeline simulator (a :class:`ValueError` subclass)."""


@dataclass(frozen=True)
class Durations:
    """Schematic step durations (arbitrary units, finite, ``>= 0``). ``skip``: a CTA's cost
    for a page none of its queries selects (about zero)."""

    load: float = 1.0
    qk: float = 1.0
    softmax: float = 0.5
    pv: float = 1.0
    skip: float = 0.0

    def __post_init__(self) -> None:
        for name, v in vars(self).items():
            if isinstance(v, bool) or not isinstance(v, int | float | np.number):
                raise PipelineInputError(f"duration {name!r} must be a real number, got {v!r}")
            if not np.isfinite(v) or v < 0:
                raise PipelineInputError(f"duration {name!r} must be finite and >= 0, got {v}")


@dataclass(frozen=True)
class Event:
    """One timeline entry. Instant events (``ready①``, ``release``, ``free②``) have
    ``t_start == t_end``. ``index`` is the position in ``U_G`` (for ``wait``: the page being
    waited for), ``page`` the logical page id ``U_G[index]``, ``slot = index % n_slots``."""

    actor: str
    kind: str
    index: int
    page: int
    slot: int
    t_start: float
    t_end: float


@dataclass(frozen=True)
class Hazard:
    """A slot conflict: ``"write-after-read"`` (load of ``by_index`` started before ``actor``
    finished reading ``index`` from ``slot``) or ``"read-before-ready"``; ``t``: when."""

    kind: str
    actor: str
    index: int
    slot: int
    by_index: int
    t: float


@dataclass(frozen=True)
class Deadlock:
    """No actor can progress. ``index``/``slot``: the load the loader stalled on;
    ``waiting_for``: the index whose event ② never fired; ``missing``: actors that never
    released it; ``blocked``: one line per stuck actor."""

    t: float
    index: int
    slot: int
    waiting_for: int
    missing: tuple[str, ...]
    blocked: tuple[str, ...]


@dataclass
class SimResult:
    """Output of :func:`simulate`. ``busy``/``idle``: actor → time, ``idle = makespan - busy``;
    busy = load time (loader) or QK/softmax/PV/skip time (CTAs)."""

    events: list[Event]
    makespan: float
    busy: dict[str, float]
    idle: dict[str, float]
    hazards: list[Hazard]
    deadlock: Deadlock | None
    protocol: str
    n_slots: int
    durations: Durations
    flags: np.ndarray = field(repr=False)

    @property
    def ok(self) -> bool:
        """No hazard and no deadlock."""
        return self.deadlock is None and not self.hazards


def flags_from_masks(masks: np.ndarray) -> np.ndarray:
    """Per-CTA "any member" flags from Union8 membership bytes.

    Parameters
    ----------
    masks : np.ndarray, integer, shape ``[n_pages]``
        Bit ``r`` set when execution slot ``r`` selects the page.

    Returns
    -------
    np.ndarray, bool, shape ``[n_pages, 2]``
        Column 0: ``mask & 0x0F != 0`` (CTA0); column 1: ``mask & 0xF0 != 0`` (CTA1).
    """
    m = np.asarray(masks)
    if m.ndim != 1 or not np.issubdtype(m.dtype, np.integer):
        raise PipelineInputError(f"masks must be a 1-D integer array, got {m.dtype} {m.shape}")
    m = m.astype(np.int64)
    return np.stack([(m & 0x0F) != 0, (m & 0xF0) != 0], axis=1)


def _check(pages, flags, n_slots, protocol) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pages)
    if p.ndim != 1 or (p.size and not np.issubdtype(p.dtype, np.integer)):
        raise PipelineInputError(f"pages must be a 1-D integer array, got {p.dtype} {p.shape}")
    if np.unique(p).size != p.size:
        raise PipelineInputError("pages must not repeat (U_G is de-duplicated)")
    f = np.asarray(flags)
    if f.dtype != np.bool_:
        raise PipelineInputError(f"flags must have dtype bool, got {f.dtype}")
    if f.shape != (p.size, 2):
        raise PipelineInputError(
            f"flags must have shape [n_pages, 2] = {(p.size, 2)}, got {f.shape}"
        )
    if isinstance(n_slots, bool) or not isinstance(n_slots, int | np.integer) or n_slots < 1:
        raise PipelineInputError(f"n_slots must be an integer >= 1, got {n_slots!r}")
    if protocol not in ("correct", "broken"):
        raise PipelineInputError(f"protocol must be 'correct' or 'broken', got {protocol!r}")
    return p.astype(np.int64), f


def simulate(
    pages: np.ndarray,
    flags: np.ndarray,
    durations: Durations | None = None,
    n_slots: int = 2,
    protocol: Literal["correct", "broken"] = "correct",
    skip_releases: bool = True,
) -> SimResult:
    """Simulate one Union8 group's walk over its union page list.

    Parameters
    ----------
    pages : np.ndarray, integer, shape ``[n_pages]``
        The group's union page list ``U_G`` in traversal order.
    flags : np.ndarray, bool, shape ``[n_pages, 2]``
        ``flags[i, c]``: some query of CTA ``c`` (CTA0: execution slots r = 0–3, CTA1:
        r = 4–7) selects page ``i``; see :func:`flags_from_masks`.
    durations : Durations, optional
        Schematic step durations; defaults to ``Durations()``.
    n_slots : int
        KV slots per CTA (the paper uses 2). Page ``i`` goes to slot ``i % n_slots``.
    protocol : {"correct", "broken"}
        ``"correct"``: page ``i + n_slots`` is loaded only after event ② for page ``i``
        (both CTAs released).  ``"broken"``: after only CTA0 (the loading CTA) released.
    skip_releases : bool
        ``False`` models the bug "a CTA that skips a page takes no part in the protocol":
        it neither waits for event ① nor releases, so event ② may never fire.

    Returns
    -------
    SimResult
        Events sorted by ``(t_start, causal order)``, makespan, busy/idle, the hazards found
        by :func:`find_hazards`, and a :class:`Deadlock` when the walk cannot finish.
    """
    p, f = _check(pages, flags, n_slots, protocol)
    d = durations if durations is not None else Durations()
    if not isinstance(d, Durations):
        raise PipelineInputError(f"durations must be a Durations, got {type(d).__name__}")
    n, S = p.size, int(n_slots)
    ready: dict[int, float] = {}
    released: dict[tuple[int, int], float] = {}
    free: dict[int, float] = {}
    nxt = {a: 0 for a in ACTORS}
    clock = {a: 0.0 for a in ACTORS}
    ev: list[tuple[int, Event]] = []
    order = {a: k for k, a in enumerate(ACTORS)}

    def emit(actor: str, kind: str, i: int, t0: float, t1: float) -> None:
        ev.append((len(ev), Event(actor, kind, i, int(p[i]), i % S, float(t0), float(t1))))

    def candidate(a: str) -> float | None:
        i = nxt[a]  # earliest start of actor a's next step; None if blocked or finished
        if i >= n:
            return None
        if a == "loader":
            gate = 0.0 if i < S else free.get(i - S)
        else:
            c = order[a] - 1
            gate = ready.get(i) if (f[i, c] or skip_releases) else 0.0
        return None if gate is None else max(clock[a], gate)

    def release(c: int, i: int, t: float) -> None:
        released[(c, i)] = t
        emit(ACTORS[c + 1], "release", i, t, t)
        need = (0, 1) if protocol == "correct" else (0,)
        if i not in free and all((k, i) in released for k in need):
            free[i] = max(released[(k, i)] for k in need)
            emit("loader", "free②", i, free[i], free[i])

    while True:
        cands = [(t, order[a], a) for a in ACTORS if (t := candidate(a)) is not None]
        if not cands:
            break
        t, _, a = min(cands)
        i = nxt[a]
        if t > clock[a]:
            emit(a, "wait", i, clock[a], t)
        if a == "loader":
            emit(a, "load", i, t, t + d.load)
            ready[i] = t + d.load
            emit(a, "ready①", i, ready[i], ready[i])
            t += d.load
        else:
            c = order[a] - 1
            if f[i, c]:
                for kind in ("qk", "softmax", "pv"):
                    dt = getattr(d, kind)
                    emit(a, kind, i, t, t + dt)
                    t += dt
            else:
                emit(a, "skip", i, t, t + d.skip)
                t += d.skip
            if f[i, c] or skip_releases:
                release(c, i, t)
        clock[a] = t
        nxt[a] += 1

    # CTAs only ever wait on loads, so any stall leaves the loader short of the last page.
    dead = _deadlock(nxt, clock, released, n, S, protocol) if nxt["loader"] < n else None
    events = [e for _, e in sorted(ev, key=lambda se: (se[1].t_start, se[0]))]
    makespan = max((e.t_end for e in events), default=0.0)
    busy = {
        a: sum(e.t_end - e.t_start for e in events if e.actor == a and e.kind in BUSY)
        for a in ACTORS
    }
    idle = {a: makespan - busy[a] for a in ACTORS}
    return SimResult(events, makespan, busy, idle, find_hazards(events), dead, protocol, S, d, f)


def _deadlock(nxt, clock, released, n, S, protocol) -> Deadlock:
    j, i = nxt["loader"], nxt["loader"] - S
    need = ("cta0", "cta1") if protocol == "correct" else ("cta0",)
    miss = tuple(a for a in need if (ACTORS.index(a) - 1, i) not in released)
    why = f"no release from {', '.join(miss)}"
    out = [f"loader: load of index {j} into slot {j % S} waits for event ② of index {i} ({why})"]
    for a in ACTORS[1:]:
        if nxt[a] < n:
            out.append(f"{a}: waits for event ① of index {nxt[a]} (slot {nxt[a] % S})")
    return Deadlock(max(clock.values()), j, j % S, i, miss, tuple(out))


def find_hazards(events: list[Event]) -> list[Hazard]:
    """Check a timeline for slot conflicts, using only the events themselves.

    For each CTA's computation of a page (its first QK start to its PV end, reading slot
    ``s``), report ``"write-after-read"`` when any load of another page into ``s`` that was
    issued after this page's load starts before the read ends, and ``"read-before-ready"``
    when the read begins before this page's load has landed.

    Returns a list of :class:`Hazard` sorted by time.
    """
    loads = {e.index: e for e in events if e.kind == "load"}
    reads: dict[tuple[str, int, int], list[float]] = {}
    for e in events:
        if e.kind in ("qk", "softmax", "pv"):
            span = reads.setdefault((e.actor, e.index, e.slot), [e.t_start, e.t_end])
            span[0], span[1] = min(span[0], e.t_start), max(span[1], e.t_end)
    out: list[Hazard] = []
    for (actor, i, slot), (r0, r1) in reads.items():
        own = loads.get(i)
        if own is None or r0 < own.t_end:
            out.append(Hazard("read-before-ready", actor, i, slot, i, r0))
        for j, ld in loads.items():
            later = own is None or (ld.t_start, j) > (own.t_start, i)
            if ld.slot == slot and j != i and later and ld.t_start < r1:
                out.append(Hazard("write-after-read", actor, i, slot, j, ld.t_start))
    return sorted(out, key=lambda h: (h.t, h.actor, h.index, h.by_index))
