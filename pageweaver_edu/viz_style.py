"""One look for every figure of the series: renderer, template, labels that do not rely on
colour alone.

Notebooks call :func:`setup_notebook` once. Figures are rendered through the plotly mimetype
(JupyterLab draws it natively), so a saved notebook never embeds plotly.js.
"""

from __future__ import annotations

import numpy as np

#: Marker symbols and dash styles that distinguish series without colour.
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
#: Text labels used on cells and bars next to colours.
CTA_LABELS = ("CTA0 (slots 0–3)", "CTA1 (slots 4–7)")
FONT = dict(family="DejaVu Sans, Arial, sans-serif", size=13)


def setup_notebook(seed: int = 0) -> np.random.Generator:
    """Configure plotly and NumPy printing for a chapter; return a seeded generator."""
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype"
    pio.templates.default = "plotly_white"
    np.set_printoptions(linewidth=100, threshold=200)
    return np.random.default_rng(seed)


def style(fig, title: str, x_title: str, y_title: str, height: int = 380):
    """Apply the series' layout: title, axis titles (with units), readable fonts."""
    fig.update_layout(
        title=dict(text=title, x=0.01),
        font=FONT,
        height=height,
        margin=dict(l=70, r=20, t=60, b=60),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    )
    fig.update_xaxes(title_text=x_title, automargin=True)
    fig.update_yaxes(title_text=y_title, automargin=True)
    return fig
