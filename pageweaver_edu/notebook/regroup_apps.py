"""The three ipywidgets apps of chapter 03 (greedy regroup, arXiv:2610.11201 Algorithm 1).

Each app is a ``VBox`` with attributes ``fig``, ``controls`` (name → widget) and ``status``
(an HTML line); every control change calls one ``update_*`` function of
:mod:`pageweaver_edu.notebook.regroup`, which redraws the ``FigureWidget`` in place.
"""

from __future__ import annotations

from .regroup import (
    GreedySteps,
    grouping_view_figure,
    round_view_figure,
    summary_text,
    update_grouping_view,
    update_round_view,
    update_window_curve,
    window_curve_figure,
)
from .regroup_cases import doubling_windows
from .style import widget_ready

MAX_QUERIES = 2048


def _box(fig, controls: dict, rows, status):
    import ipywidgets as w

    box = w.VBox([w.HBox([controls[name] for name in row]) for row in rows] + [status, fig])
    box.fig, box.controls, box.status = fig, controls, status
    return box


def round_stepper_app(examples: dict[str, GreedySteps]):
    """Step through the rounds of traced greedy runs: example menu, round slider, ◀ / ▶."""
    import ipywidgets as w

    first = next(iter(examples.values()))
    fig = round_view_figure(first, 0)
    c = {"example": w.Dropdown(options=list(examples), description="example",
                               layout=w.Layout(width="420px")),
         "round": w.IntSlider(0, 0, len(first.trace.rounds) - 1, description="round (0-based)",
                          style={"description_width": "initial"},
                          layout=w.Layout(width="360px")),
         "prev": w.Button(description="◀ previous"), "next": w.Button(description="next ▶")}
    status = w.HTML()

    def draw(_=None):
        steps = examples[c["example"].value]
        update_round_view(fig, steps, c["round"].value)
        status.value = f"π = {steps.perm.tolist()[:24]}{' …' if len(steps.perm) > 24 else ''}"

    def new_example(_=None):
        c["round"].max = len(examples[c["example"].value].trace.rounds) - 1
        if c["round"].value == 0:
            draw()
        c["round"].value = 0

    c["example"].observe(new_example, names="value")
    c["round"].observe(draw, names="value")
    step = c["round"]
    c["prev"].on_click(lambda _: setattr(step, "value", max(0, step.value - 1)))
    c["next"].on_click(lambda _: setattr(step, "value", min(step.max, step.value + 1)))
    draw()
    return _box(widget_ready(fig), c, [("example",), ("prev", "round", "next")], status)


def _capture_kwargs(cap, n: int) -> dict:
    lengths = None if cap.lengths is None else cap.lengths[:n]
    return {"lengths": lengths, "page_size": cap.page_size}


def grouping_app(captures: dict, n: int = 1024, g: int = 8, window: int = 64):
    """Preset, N (a prefix, ≤ 2,048), g and W → |U_G| per group, union visits and ρ_Q."""
    import ipywidgets as w

    fig = grouping_view_figure()
    c = {"preset": w.Dropdown(options=list(captures), description="preset"),
         "n": w.IntSlider(n, 64, MAX_QUERIES, 64, description="N queries",
                          continuous_update=False),
         "g": w.Dropdown(options=[2, 4, 8], value=g, description="g"),
         "W": w.Dropdown(options=doubling_windows(g), value=window, description="W")}
    status, summaries = w.HTML(), {}  # (preset, N, g, W) -> summary: seen again, only redrawn

    def draw(_=None):
        allowed = doubling_windows(c["g"].value)
        if list(c["W"].options) != allowed:  # W must stay a multiple of g
            keep = c["W"].value if c["W"].value in allowed else allowed[-1]
            c["W"].unobserve(draw, names="value")
            c["W"].options, c["W"].value = allowed, keep
            c["W"].observe(draw, names="value")
        cap = captures[c["preset"].value]
        n_q = min(c["n"].value, cap.num_queries)
        key = (c["preset"].value, n_q, c["g"].value, c["W"].value)
        s = summaries[key] = update_grouping_view(fig, cap.topk[:n_q], c["g"].value,
                                                  c["W"].value, summary=summaries.get(key),
                                                  **_capture_kwargs(cap, n_q))
        status.value = summary_text(s)
        box.summary = s

    for ctl in c.values():
        ctl.observe(draw, names="value")
    box = _box(fig, c, [("preset", "n"), ("g", "W")], status)
    draw()
    widget_ready(fig)
    return box


def window_curve_app(captures: dict, n: int = 2048, g: int = 8):
    """Preset, N and g → union visits for W = g, 2g, 4g, …, 512."""
    import ipywidgets as w

    fig = window_curve_figure()
    c = {"preset": w.Dropdown(options=list(captures), description="preset"),
         "n": w.IntSlider(n, 64, MAX_QUERIES, 64, description="N queries",
                          continuous_update=False),
         "g": w.Dropdown(options=[2, 4, 8], value=g, description="g")}
    status, curves = w.HTML(), {}  # (preset, N, g) -> curve: seen again, only redrawn

    def draw(_=None):
        cap = captures[c["preset"].value]
        n_q = min(c["n"].value, cap.num_queries)
        key = (c["preset"].value, n_q, c["g"].value)
        curve = curves[key] = update_window_curve(fig, cap.topk[:n_q], c["g"].value,
                                                  curve=curves.get(key),
                                                  **_capture_kwargs(cap, n_q))
        best = min(range(len(curve["windows"])), key=lambda i: (curve["visits"][i], i))
        status.value = (f"smallest union visits at W = {curve['windows'][best]}: "
                        f"{curve['visits'][best]:,} (original order {curve['original']:,})")
        box.curve = curve

    for ctl in c.values():
        ctl.observe(draw, names="value")
    box = _box(fig, c, [("preset", "n", "g")], status)
    draw()
    widget_ready(fig)
    return box
