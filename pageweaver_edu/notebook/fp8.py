"""Chapter 12's figures, tables and widget: the FP8 Union8 path and its error budget.

* :func:`e4m3_error_figure` — E4M3 rounding error against magnitude, with the probability
  range before and after the kernel's 2^8 pre-scale;
* :func:`budget_table`, :func:`budget_bars`, :func:`knob_figure`, :func:`budget_app` — the
  NRMS of each source of error (:mod:`pageweaver_edu.replay.fp8_budget`) and its knobs;
* :data:`QUANTIZE_ROW` — the exercise: quantize one Q row to E4M3 with its scale, checked
  against :func:`pageweaver_edu.replay.e4m3.quantize_q_rows`;
* the speed and target tables of the recorded run are in :mod:`.fp8_speed`, its time against
  accuracy in :mod:`.fp8_accuracy`.
"""

from __future__ import annotations

import time

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..replay.e4m3 import quantize_q_rows, to_e4m3
from ..replay.fp8 import nrms
from ..replay.fp8_budget import budget, stage_output
from .exercises import Exercise, show_value
from .style import style, widget_ready

#: (budget key, error source, what it rounds) in table order.
BUDGET_ROWS = (
    ("q_quantization", "Q quantization", "q → E4M3, one scale per (query, head) row"),
    ("p_quantization", "P quantization", "2<sup>8</sup>·p → E4M3 for the PV product"),
    ("fp32_accumulation", "accumulation (FP32, page order)",
     "running m, ℓ, O in FP32; page products folded in ascending order"),
    ("bf16_output", "BF16 output", "o rounded to BF16"),
    ("total", "**kernel arithmetic, all sources**", "the emulated kernel"),
    ("rss", "√(Σ source²)", "the four sources added in quadrature"),
    ("kv_cache", "KV cache itself (storage)", "float64 on the FP8 cache vs on BF16 K/V"),
    ("end_to_end", "**end to end**", "the emulated kernel vs float64 on BF16 K/V"),
    ("rss_all", "√(total² + cache²)", "kernel and cache in quadrature"))
BUDGET_KEYS = [key for key, _, _ in BUDGET_ROWS]
BAR_LABELS = ["Q quant.", "P quant.", "FP32 accum.", "BF16 out", "kernel total", "√Σ sources²",
              "KV cache", "end to end", "√(total²+cache²)"]
BAR_PATTERNS = ["", "", "", "", "/", "x", ".", "/", "x"]


def e4m3_error_figure() -> go.Figure:
    """Relative E4M3 rounding error over 2^-18 … 2^10, with the probability ranges."""
    import torch

    x = torch.exp2(torch.linspace(-18, 10, 1401, dtype=torch.float64))
    rel = ((to_e4m3(x).double() - x).abs() / x).numpy()
    fig = go.Figure(go.Scatter(x=x.numpy(), y=100 * rel, mode="lines", name="|e(x) − x| / x",
                               line_color="black"))
    for lo, hi, y, label, dash in (
            (2.0**-17, 1.0, 125, "probabilities 2<sup>-17</sup> … 1 (no pre-scale)", "dot"),
            (2.0**-9, 2.0**8, 112, "the same × 2<sup>8</sup> (the kernel)", "dash")):
        # named in the legend, not on the plot: a label on the line would cross the markers
        fig.add_scatter(x=[lo, hi], y=[y, y], mode="lines+markers", line_dash=dash,
                        marker_symbol="line-ns", marker_size=14, marker_line_width=2,
                        name=label)
    for xv, label, side in ((2.0**-10, "← rounds to 0 ", "right"),
                            (2.0**-6, " smallest normal 2<sup>-6</sup>", "left"),
                            (448.0, "saturates at 448 ", "right")):
        fig.add_vline(x=xv, line_dash="dashdot")
        fig.add_annotation(x=np.log10(xv), y=80, text=label, showarrow=False, xanchor=side)
    fig.update_xaxes(type="log", exponentformat="power",
                     range=[-18 * np.log10(2), 10 * np.log10(2)])
    fig.update_yaxes(range=[0, 140])
    return style(fig, "E4M3 relative rounding error vs magnitude", "x (log scale)",
                 "relative error (%)", height=460, legend_rows=2)


#: What the Q and P rows round in the accurate mode (``operands="two_level"``).
TWO_LEVEL_WHAT = {
    "q_quantization": "q → E4M3 high part + E4M3 low part (its residual), one scale per row",
    "p_quantization": "2<sup>8</sup>·p → E4M3 high part + E4M3 low part for the PV products"}


def budget_table(b: dict, operands: str = "e4m3") -> str:
    """Markdown: NRMS per error source of a :func:`~pageweaver_edu.replay.fp8_budget.budget`
    and each single source's share of the total's square; ``operands`` as the budget was
    run (``"two_level"``: the accurate mode's Q and P rows say so)."""
    lines = ["| error source | what is rounded | NRMS | share of total² |", "|---|---|--:|--:|"]
    for key, name, what in BUDGET_ROWS:
        if operands == "two_level":
            what = TWO_LEVEL_WHAT.get(key, what)
        share = (f"{100 * b[key] ** 2 / b['total'] ** 2:.1f} %" if key in b and key[0] in "qpfb"
                 else "")
        lines.append(f"| {name} | {what} | {100 * b[key]:.4g} % | {share} |")
    return "\n".join(lines)


def budget_bars(values: dict, fig=None):
    """Bars of the budget (log scale); ``fig`` a Figure or FigureWidget to draw into."""
    fig = go.Figure() if fig is None else fig
    ys = [100 * values[key] for key in BUDGET_KEYS]
    fig.add_trace(go.Bar(x=BAR_LABELS, y=ys, text=[f"{y:.3g} %" for y in ys],
                         textposition="outside", marker_pattern_shape=BAR_PATTERNS,
                         marker_color=["#4c72b0"] * 4 + ["#333333"] * 2 + ["#999999"] * 3))
    fig.update_yaxes(type="log", range=[-6, 2.3], exponentformat="power")
    return style(fig, "FP8 error budget per source (NRMS, log scale)",
                 "error source (plain: one alone; /: measured together; x: quadrature sum)",
                 "NRMS vs float64 (%)", height=430, legend_rows=0)


def knob_figure(case) -> go.Figure:
    """The P error against its pre-scale exponent, the Q error against the Q magnitude with and
    without the per-row scale (``case``: a small
    :func:`~pageweaver_edu.replay.fp8_budget.make_case`)."""
    shifts, exps = list(range(-4, 11)), list(range(-10, 9))
    p_err = [100 * nrms(stage_output(case, "p_quantization", p_shift=s), case.ref)
             for s in shifts]
    q_err = {on: [100 * nrms(stage_output(case, "q_quantization", q_rowscale=on, q_exp=e),
                             case.ref) for e in exps] for on in (True, False)}
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1)
    fig.add_scatter(x=shifts, y=p_err, mode="lines+markers", marker_symbol="circle",
                    name="P quantization", row=1, col=1)
    for on, symbol, dash in ((True, "square", "solid"), (False, "diamond", "dash")):
        fig.add_scatter(x=exps, y=q_err[on], mode="lines+markers", marker_symbol=symbol,
                        line_dash=dash, row=1, col=2,
                        name=f"Q quantization, per-row scale {'on' if on else 'off'}")
    style(fig, "Why 2<sup>8</sup> and why a per-row Q scale (8 queries, NRMS vs float64)", "",
          "NRMS (%)", height=430)
    fig.update_yaxes(type="log", tickvals=[2, 3, 5, 10, 20, 50], title_text="NRMS (%)")
    fig.update_xaxes(title_text="P pre-scale exponent s (kernel: 8)", row=1, col=1)
    fig.update_xaxes(title_text="Q magnitude exponent e (q·2<sup>e</sup>, scale·2<sup>-e</sup>)",
                     row=1, col=2)
    return fig


def budget_app(case):
    """The budget bars with the kernel's knobs as widgets (P pre-scale, Q magnitude, per-row
    Q scale), redrawn in place."""
    import ipywidgets as widgets

    wide = {"style": {"description_width": "initial"},
            "layout": widgets.Layout(width="380px")}
    shift = widgets.IntSlider(value=8, min=-4, max=10, description="P pre-scale s", **wide)
    qexp = widgets.IntSlider(value=0, min=-10, max=8, description="Q magnitude e", **wide)
    rowscale = widgets.Checkbox(value=True, description="Q per-row scale", indent=False,
                                style={"description_width": "initial"})
    status = widgets.Label()
    fig = budget_bars(budget(case), go.FigureWidget())

    def redraw(_=None):
        start = time.perf_counter()
        values = budget(case, p_shift=shift.value, q_rowscale=rowscale.value, q_exp=qexp.value)
        ys = [100 * values[key] for key in BUDGET_KEYS]
        with fig.batch_update():
            fig.data[0].y = ys
            fig.data[0].text = [f"{y:.3g} %" for y in ys]
        status.value = (f"kernel total {ys[4]:.2f} %, end to end {ys[7]:.2f} %; updated in "
                        f"{1e3 * (time.perf_counter() - start):.0f} ms (wall)")

    for control in (shift, qexp, rowscale):
        control.observe(redraw, "value")
    redraw()
    controls = widgets.HBox([shift, qexp, rowscale], layout=widgets.Layout(flex_flow="row wrap"))
    return widgets.VBox([controls, status, widget_ready(fig)])


def quantize_row_reference(q):
    """One (query, head) row ``q`` (float32 ``[d]``) as the kernel quantizes it: (``q8``,
    torch ``float8_e4m3fn`` ``[d]``; ``s_Q``, float) with ``q ≈ q8 · s_Q``."""
    q8, scale = quantize_q_rows(q[None])
    return q8[0], float(scale[0])


def _row_cases(rng):
    import torch

    def row(x):
        return (torch.from_numpy(np.asarray(x, dtype=np.float32)),), {}

    for e in (-14, -4, 0, 3, 9):  # magnitudes far below and above E4M3's normal range
        yield row(rng.standard_normal(128) * 2.0**e)
    spike = 1e-3 * rng.standard_normal(128)
    spike[int(rng.integers(128))] = -300.0  # one large element: the others go subnormal
    yield row(spike)
    yield row(np.full(128, 0.75))  # every element hits 448 exactly
    yield row(np.zeros(128))  # amax = 0: the kernel writes zeros and scale 0


def _same_row(got, want) -> bool:
    """Same E4M3 bytes (the reader may return them as float values) and the same scale to
    float32 rounding."""
    import torch

    try:
        q8, scale = got
        q8 = torch.as_tensor(q8)
        if q8.dtype != torch.float8_e4m3fn:
            q8 = q8.float().to(torch.float8_e4m3fn)
        same_bytes = q8.shape == want[0].shape and torch.equal(q8.view(torch.uint8),
                                                               want[0].view(torch.uint8))
        return same_bytes and abs(float(scale) - want[1]) <= 1e-6 * abs(want[1])
    except (TypeError, ValueError, RuntimeError):
        return False


def _show_row_inputs(args, kwargs) -> str:
    q = np.asarray(args[0], dtype=np.float32)
    at = int(np.abs(q).argmax())
    return f"q float32[{q.size}] with amax |q| = {float(abs(q[at]))!r} at index {at}"


def _show_row_answer(value, args, kwargs) -> str:
    """(q8, s_Q): s_Q with every digit, q8 as its E4M3 bytes in hex, all of them."""
    import torch

    q8, scale = value
    q8 = torch.as_tensor(q8)
    if q8.dtype != torch.float8_e4m3fn:
        q8 = q8.float().to(torch.float8_e4m3fn)
    data = " ".join(f"{b:02x}" for b in q8.view(torch.uint8).tolist())
    return f"s_Q = {show_value(float(scale))}, q8 bytes = [{data}]"


#: Chapter 12's exercise: step 2 of the math for one row, bit for bit.
QUANTIZE_ROW = Exercise(
    "quantize a Q row",
    "quantize_row(q): q is one (query, head) row, a float32 torch tensor [128]; return "
    "(q8 as torch.float8_e4m3fn, s_Q as a float) with q ≈ q8 · s_Q, as the kernel does.",
    quantize_row_reference, _row_cases, _same_row, show_inputs=_show_row_inputs,
    show_answer=_show_row_answer)
