"""Tables, status text and the explorer widget of chapter 06 (Figure 3, arXiv:2610.11201).

The simulator is :mod:`pageweaver_edu.replay.pipeline`, the timeline figures are
:mod:`pageweaver_edu.notebook.pipeline_plot`; this module only wires them to ipywidgets and
writes the short text the chapter prints. :meth:`PipelineExplorer.update` is a plain method,
so tests and a latency benchmark run exactly what a slider callback runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.union_plan import UnionPlan
from ..replay.pipeline import Deadlock, Durations, Hazard, SimResult, simulate
from .exercises import Exercise
from .pipeline_plot import timeline_widget, update_timeline_widget
from .style import widget_ready

BROKEN = "broken protocol: reuse a slot after only CTA0 released"
NO_RELEASE = "a skipping CTA does not release"


def cta_page_counts(plan: UnionPlan) -> np.ndarray:
    """int64 ``[G, 2]``: per group, how many union pages CTA0 / CTA1 computes (|U_G0|, |U_G1|)."""
    starts = plan.page_offsets[:-1]
    out = np.zeros((len(plan.page_counts), 2), dtype=np.int64)
    nonempty = plan.page_counts > 0
    if plan.cta_any.size:
        sums = np.add.reduceat(plan.cta_any.astype(np.int64), starts[nonempty], axis=0)
        out[nonempty] = sums
    return out


def pick_group(plan: UnionPlan, min_diff: int = 12) -> int:
    """The group with the smallest |U_G| among those whose CTAs' page counts differ by at
    least ``min_diff`` (ties: smallest id). Raises ``ValueError`` when there is none."""
    c = cta_page_counts(plan)
    ids = np.flatnonzero(np.abs(c[:, 0] - c[:, 1]) >= min_diff)
    if ids.size == 0:
        raise ValueError(f"no group whose CTA page counts differ by >= {min_diff}")
    return int(ids[np.argmin(plan.page_counts[ids])])


def group_table(pages: np.ndarray, masks: np.ndarray, n_show: int | None = None) -> str:
    """Markdown table of a group's walk: union index k, page id, slot b = k mod 2, the
    membership byte written most significant bit first (bits 7–4: member positions of CTA1,
    bits 3–0: CTA0, position 0 rightmost), who computes."""
    n = len(pages) if n_show is None else min(n_show, len(pages))
    rows = [
        "| k | page p | slot b | bits 7–4 (CTA1) | bits 3–0 (CTA0) | CTA0 | CTA1 |",
        "|---:|---:|---:|:---:|:---:|:---:|:---:|",
    ]
    for i in range(n):
        m = int(masks[i])
        high, low = ("".join("1" if m >> r & 1 else "·" for r in bits)
                     for bits in (range(7, 3, -1), range(3, -1, -1)))
        work = ["compute" if m & half else "skip" for half in (0x0F, 0xF0)]
        rows.append(f"| {i} | {int(pages[i])} | {i % 2} | `{high}` | `{low}` | {work[0]} | "
                    f"{work[1]} |")
    if n < len(pages):
        rows.append(f"| … | ({len(pages) - n} more) | | | | | |")
    return "\n".join(rows)


def hazard_text(h: Hazard) -> str:
    """One sentence describing a hazard."""
    if h.kind == "read-before-ready":
        return (
            f"read-before-ready: {h.actor} read index {h.index} (slot {h.slot}) at "
            f"t = {h.t:g} before its load landed"
        )
    return (
        f"write-after-read: load of index {h.by_index} into slot {h.slot} began at "
        f"t = {h.t:g} while {h.actor} was still reading index {h.index} from that slot"
    )


def deadlock_text(d: Deadlock) -> str:
    """The stuck actors, one per line, headed by the time the walk stopped."""
    return "\n".join([f"deadlock at t = {d.t:g}:"] + [f"  {line}" for line in d.blocked])


def status_line(res: SimResult) -> str:
    """Makespan, hazards (the first one described) and deadlock, in one line."""
    s = f"makespan {res.makespan:g} (schematic units) · hazards: {len(res.hazards)}"
    if res.hazards:
        s += f" — first: {hazard_text(res.hazards[0])}"
    d = res.deadlock
    s += (
        " · deadlock: none"
        if d is None
        else (
            f" · DEADLOCK: load of index {d.index} waits for ② of index {d.waiting_for} "
            f"(no release from {', '.join(d.missing)})"
        )
    )
    return s


def busy_table(results: dict[str, SimResult]) -> str:
    """Markdown table: per scenario and CTA, pages computed / skipped, busy and idle time."""
    rows = [
        "| scenario | makespan | CTA | pages computed | pages skipped | busy | idle |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        for c, a in enumerate(("cta0", "cta1")):
            k = int(r.flags[:, c].sum())
            rows.append(
                f"| {name} | {r.makespan:g} | {a.upper()} | {k} | "
                f"{len(r.flags) - k} | {r.busy[a]:g} | {r.idle[a]:g} |"
            )
    return "\n".join(rows)


def largest_lead(res: SimResult) -> int:
    """The most union pages one CTA (or consumer warpgroup) was ahead of the other: after
    each instant at which a page starts, the difference of the pages each has started."""
    starts = sorted((e.t_start, e.actor) for e in res.events
                    if e.actor in ("cta0", "cta1") and e.kind in ("qk", "skip"))
    started = {"cta0": 0, "cta1": 0}
    lead = 0
    for k, (t, actor) in enumerate(starts):
        started[actor] += 1
        if k + 1 == len(starts) or starts[k + 1][0] > t:  # every start at t counted
            lead = max(lead, abs(started["cta0"] - started["cta1"]))
    return lead


def lockstep_table(pages, flags, depths=(2, 4, 6), durations: Durations | None = None) -> str:
    """Markdown table: one group's walk with the two halves sharing ``depth`` slots, per depth.

    Depth 2 is the cluster kernels' Figure 3 (two CTAs on two SMs, two slots each, the loader
    multicasting into both); a deeper ring is the warp-specialized kernel, where the two
    consumer warpgroups read one ring of slots, so the same shared memory holds three times the
    pages (a page is stored once per group, not once per CTA). The event model is the same:
    page k goes into slot k mod depth after both halves released page k - depth.
    """
    rows = ["| slots (ring stages) | makespan | idle CTA0 / WG 1 | idle CTA1 / WG 2 | "
            "largest lead (pages) |", "|---:|---:|---:|---:|---:|"]
    for depth in depths:
        r = simulate(pages, flags, durations, n_slots=int(depth))
        rows.append(f"| {depth} | {r.makespan:g} | {r.idle['cta0']:g} | {r.idle['cta1']:g} | "
                    f"{largest_lead(r)} |")
    return "\n".join(rows)


@dataclass
class PipelineExplorer:
    """Sliders and toggles driving an in-place timeline of one group's walk."""

    pages: np.ndarray
    flags: np.ndarray
    fig: object = field(repr=False)
    width: int
    controls: dict = field(repr=False)
    status: object = field(repr=False)
    box: object = field(repr=False)
    result: SimResult | None = None

    def simulate(self) -> SimResult:
        """Run the simulator with the controls' current values."""
        c = self.controls
        n = int(c["pages"].value)
        d = Durations(
            load=c["load"].value, qk=c["qk"].value, softmax=c["softmax"].value, pv=c["pv"].value
        )
        return simulate(
            self.pages[:n],
            self.flags[:n],
            d,
            n_slots=int(c["slots"].value),
            protocol="broken" if c["broken"].value else "correct",
            skip_releases=not c["no_release"].value,
        )

    def update(self, _change=None) -> SimResult:
        """Re-simulate, redraw the figure in place and rewrite the status line; the figure
        shows ``width`` union indices from the "view" control on."""
        c = self.controls
        c["view"].max = max(0, int(c["pages"].value) - 1)
        self.result = self.simulate()
        first = int(c["view"].value)
        update_timeline_widget(self.fig, self.result, (first, first + self.width))
        self.status.value = status_line(self.result)
        return self.result


def pipeline_explorer(pages, flags, n_show: int = 12) -> PipelineExplorer:
    """Build the chapter 06 explorer for one group (``pages`` = U_G, ``flags`` per CTA).

    Controls: load / QK / softmax / PV duration sliders, KV slots per CTA (1–3), how many
    pages of U_G to walk, which ``n_show`` union indices to draw ("view", so a long walk is
    paged rather than squeezed), "broken protocol" (reuse after CTA0 alone released) and
    "skipping CTA does not release". Display ``explorer.box``.
    """
    import ipywidgets as w

    pages, flags = np.asarray(pages), np.asarray(flags, dtype=bool)
    style, lay = {"description_width": "150px"}, w.Layout(width="420px")

    common = {"style": style, "layout": lay, "continuous_update": False}
    wide = {"indent": False, "layout": w.Layout(width="460px")}  # the whole width for text
    names = {"load": ("load (multicast)", 1.0), "qk": ("QK", 1.0)}
    names |= {"softmax": ("softmax", 0.5), "pv": ("PV", 1.0)}
    controls = {
        k: w.FloatSlider(value=v, min=0.0, max=4.0, step=0.25, description=t, **common)
        for k, (t, v) in names.items()
    }
    n0 = min(n_show, len(pages))
    controls["slots"] = w.IntSlider(2, 1, 3, description="KV slots per CTA", **common)
    controls["pages"] = w.IntSlider(n0, 1, len(pages), description="pages of $U_G$", **common)
    controls["view"] = w.IntSlider(0, 0, max(0, n0 - 1), step=n0,
                                   description=f"show k from (+{n0})", **common)
    controls["broken"] = w.Checkbox(False, description=BROKEN, **wide)
    controls["no_release"] = w.Checkbox(False, description=NO_RELEASE, **wide)
    first = simulate(pages[:n0], flags[:n0])
    fig = timeline_widget(first, (0, n0))
    status = w.HTML(layout=w.Layout(width="100%"))
    left = w.VBox([controls[k] for k in ("load", "qk", "softmax", "pv")])
    right = w.VBox([controls[k] for k in ("slots", "pages", "view", "broken", "no_release")])
    box = w.VBox([w.HBox([left, right]), status, fig])
    ex = PipelineExplorer(pages, flags, fig, n0, controls, status, box, first)
    for c in controls.values():
        c.observe(ex.update, names="value")
    ex.update()
    widget_ready(fig)
    return ex


def slot_schedule_reference(k: int, n_slots: int) -> tuple[int, int, int | None]:
    """Where union page ``k`` goes in the paper's schedule with ``n_slots`` slots per CTA.

    Returns
    -------
    (b, parity, after) : (int, int, int or None)
        ``b = k mod n_slots`` the slot; ``parity = (k // n_slots) & 1`` the phase parity a CTA
        waits for on the slot's full barrier (event ① of page k is the slot's
        ``k // n_slots``-th completed phase); ``after`` the union index whose event ② must fire
        before page k's load may overwrite slot b (``k - n_slots``; None for the first
        ``n_slots`` pages, which go into empty slots).
    """
    k, n = int(k), int(n_slots)
    return k % n, (k // n) & 1, (k - n if k >= n else None)


def _schedule_cases(rng: np.random.Generator):
    """Random pages and slot counts 1–4, then the prologue, the first reuse and one slot."""
    for _ in range(30):
        yield (int(rng.integers(0, 60)), int(rng.integers(1, 5))), {}
    for k, n in ((0, 2), (1, 2), (2, 2), (3, 2), (5, 3), (0, 1), (1, 1), (7, 1)):
        yield (k, n), {}


#: Chapter 06's exercise: the slot schedule of one union page.
SLOT_SCHEDULE = Exercise(
    "slot schedule", "Write slot_schedule(k, n_slots) -> (b, parity, after): the slot b union "
    "page k uses, the phase parity of its full barrier (event ①) a CTA waits for, and the "
    "union index whose event ② frees slot b for it (None if no earlier page used b).",
    slot_schedule_reference, _schedule_cases)
