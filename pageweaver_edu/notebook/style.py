"""One look for every figure of the series: renderer, template, labels that do not rely on
colour alone.

Notebooks call :func:`setup_notebook` once. Figures are rendered through the plotly mimetype
(JupyterLab draws it natively), so a saved notebook never embeds plotly.js.

Layout rules of :func:`style` (what a reader sees in a ~680 px FigureWidget or a 960 px
output): the title sits at the top of the container, short; statistics go to a subtitle
(smaller, below it) or to the app's status line; the horizontal legend sits below both, just
above the plot, and the top margin leaves room for all three. Math in plotly text uses
``<sub>`` (S<sub>i</sub>); ipywidgets descriptions use LaTeX (``$S_0$``).
"""

from __future__ import annotations

import numpy as np

#: Marker symbols and dash styles that distinguish series without colour.
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
#: Text labels used on cells and bars next to colours.
CTA_LABELS = ("CTA0 (member positions 0–3)", "CTA1 (member positions 4–7)")
FONT = dict(family="DejaVu Sans, Arial, sans-serif", size=13)
#: Widest printed line: it fits the output area of a notebook in a 1,400 px window; a wider
#: line wraps wherever the width ends, in the middle of a word or a table column.
TEXT_COLUMNS = 100
TITLE_PX, SUBTITLE_PX, LEGEND_ROW_PX = 36, 17, 25  # vertical room per top element


def setup_notebook(seed: int = 0) -> np.random.Generator:
    """Configure plotly and NumPy printing for a chapter; return a seeded generator."""
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype"
    pio.templates.default = "plotly_white"
    np.set_printoptions(linewidth=100, threshold=200)
    return np.random.default_rng(seed)


def top_margin(subtitle_lines: int = 0, legend_rows: int = 1) -> int:
    """Pixels above the plot for the title, ``subtitle_lines`` and ``legend_rows``."""
    return TITLE_PX + SUBTITLE_PX * subtitle_lines + LEGEND_ROW_PX * legend_rows + 24


def subtitle_annotation(text: str, legend_rows: int = 1) -> dict:
    """The subtitle as a layout annotation (``name="subtitle"``): left-aligned with the plot,
    its last line just above the legend. An annotation, not ``layout.title.subtitle``: a
    FigureWidget draws before it is attached to the page, and plotly places a title subtitle
    from a text measurement that is zero then (it would overlap the title); annotations are
    measured off-page and land where they should."""
    return dict(name="subtitle", text=text, xref="paper", yref="paper", x=0, y=1,
                xanchor="left", yanchor="bottom", yshift=LEGEND_ROW_PX * legend_rows + 8,
                showarrow=False, align="left", font=dict(size=12, color="#444"))


def style(fig, title: str, x_title: str, y_title: str, height: int = 380, subtitle: str = "",
          legend_rows: int = 1, subtitle_lines: int | None = None):
    """Apply the series' layout: title, subtitle, legend, axis titles (with units), fonts.

    The title is anchored at the top of the container (``yref="container"``), left-aligned
    with the plot; the subtitle (``<br>`` for more lines; ``subtitle_lines`` reserves room
    when it is filled in later by :func:`set_title`) sits below it and the horizontal legend
    (``legend_rows`` rows) below both, just above the plot.
    """
    lines = subtitle.count("<br>") + 1 if subtitle else 0
    lines = lines if subtitle_lines is None else subtitle_lines
    fig.update_layout(
        title=dict(text=title, x=0, xref="paper", xanchor="left", y=0.985, yref="container",
                   yanchor="top", font=dict(size=16)),
        font=FONT,
        height=height,
        margin=dict(l=70, r=20, t=top_margin(lines, legend_rows), b=60),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, xanchor="left"),
    )
    if lines:
        fig.add_annotation(**subtitle_annotation(subtitle, legend_rows))
    fig.update_xaxes(title_text=x_title, automargin=True)
    fig.update_yaxes(title_text=y_title, automargin=True)
    return fig


def _subtitle(fig):
    return next((a for a in fig.layout.annotations if a.name == "subtitle"), None)


def subtitle_text(fig) -> str:
    """The text of the figure's subtitle ("" when it has none)."""
    a = _subtitle(fig)
    return "" if a is None or a.text is None else a.text


def set_title(fig, title: str, subtitle: str | None = None) -> None:
    """Replace the title and, unless ``None``, the subtitle (the reserved room stays)."""
    fig.layout.title.text = title
    if subtitle is not None:
        set_subtitle(fig, subtitle)


def set_subtitle(fig, text: str) -> None:
    """Replace the subtitle text (adds a subtitle above a one-row legend if there is none)."""
    a = _subtitle(fig)
    if a is None:
        fig.add_annotation(**subtitle_annotation(text))
    else:
        a.text = text


def thin_labels(series: dict, fmt: str = "{:.2f}", min_gap: float = 0.055) -> dict:
    """Point labels for several series that share their x positions, without overlaps.

    ``series`` maps a name to its y values; the result maps it to one text per point. Going
    through the series in order, a point keeps its label only when no label already kept at
    the same x lies within ``min_gap`` × (y span of all series); the rest stay empty (the
    hover and the printed table still give them). ``None`` / NaN values get no label.
    """
    vals = [float(v) for ys in series.values() for v in ys if v is not None and v == v]
    gap = min_gap * ((max(vals) - min(vals)) if vals else 0.0)
    kept: dict[int, list[float]] = {}
    out = {}
    for name, ys in series.items():
        out[name] = []
        for i, y in enumerate(ys):
            ok = y is not None and y == y and all(abs(y - k) > gap for k in kept.get(i, []))
            out[name].append(fmt.format(y) if ok else "")
            if ok:
                kept.setdefault(i, []).append(float(y))
    return out


def widget_ready(*figs):
    """Send each FigureWidget's complete current state to the browser; returns the (first)
    figure, so it can go straight into a ``VBox``.

    A FigureWidget shown *directly* syncs its state when it is displayed; one shown as the
    child of an ipywidgets container does not, and its first view can then miss edits made
    before it was displayed (in the browser: bar text placement, label positions, title
    settings that the Python figure has). Call this after the initial draw, right before the
    figure goes into a container; it does what plotly's own display hook does.
    """
    from copy import deepcopy

    for fig in figs:
        if hasattr(fig, "_widget_data"):
            fig._widget_layout = deepcopy(fig._layout_obj._props)
            fig._widget_data = deepcopy(fig._data)
            fit_to_output(fig)
    return figs[0] if figs else None


def fit_to_output(fig) -> None:
    """Make a FigureWidget as wide as its output area, now and after the window resizes.

    A FigureWidget draws before JupyterLab attaches it to the page, measures a width of 0
    there and falls back to plotly's default 700 px, about 70 % of a notebook's output. Its
    view reports its first drawing back to the kernel (the trace deltas); by then the view is
    on the page, so that first report answers with a relayout that drops the width and lets
    plotly size the figure to its container. ``responsive`` keeps it fitted when the window
    changes. A figure with an explicit ``layout.width`` keeps it.
    """
    if not hasattr(fig, "_widget_data") or fig.layout.width is not None:
        return
    fig._config = {**(fig._config or {}), "responsive": True}
    fitted = []

    def fit(change) -> None:
        if change["new"] and not fitted:
            fitted.append(True)
            fig._send_relayout_msg({"autosize": True, "width": None})

    fig.observe(fit, "_js2py_traceDeltas")
