"""Chapter 12's time against accuracy: every kernel and mode of one recorded FP8 run.

``benchmarks/bench_union8.py --fp8`` times our kernels and FlashInfer's on the same inputs and
checks each output against the float64 reference on sampled rows: ours and FlashInfer's FP8
rows on the dequantized FP8 cache, FlashInfer's BF16 rows on the BF16 K/V, each NRMS under its
own key of the file's ``check``. :func:`time_vs_nrms` pairs one row per kernel and mode with that
NRMS; :func:`time_vs_nrms_figure` draws them, with FlashInfer MSA's NRMS as the line the
accurate FP8 mode is built to reach.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.colors import qualitative

from ..core.inputs import PageWeaverInputError
from ..records import result_medians
from .fp8_speed import PEERS
from .style import SYMBOLS, style

#: The ordering every one of our kernels is shown in: the complete call on the fixed W128 ids.
ORDERING = "complete call on the fixed W128 ids"
#: (label, row, ``check`` key of its NRMS vs float64), in legend order. The BF16 mode's key is
#: the one the BF16 run of the script writes; the ``--fp8`` run does not check that mode.
POINTS = (
    ("warp-specialized kernel, fast FP8 mode", "union8ws_fp8_fixed_w128",
     "union8ws_nrms_vs_float64"),
    ("warp-specialized kernel, accurate FP8 mode", "union8ws_fp8acc_fixed_w128",
     "union8ws_fp8acc_nrms_vs_float64"),
    ("warp-specialized kernel, BF16 mode", "union8ws_bf16_fixed_w128",
     "union8ws_bf16_nrms_vs_float64"),
    ("FP8 cluster kernel", "union8_fp8_fixed_w128", "nrms_vs_float64"),
    *((PEERS[row], row, f"{row}_nrms_vs_float64")
      for row in ("flashinfer_msa_fp8", "flashinfer_decode_bf16_tc", "flashinfer_decode_fp8_tc")),
)
#: The peer whose NRMS is the accurate mode's target.
TARGET_ROW = "flashinfer_msa_fp8"
#: Each point's marker symbol and colour, whichever points a file holds.
MARKERS = {row: (symbol, colour) for (_, row, _), symbol, colour
           in zip(POINTS, SYMBOLS, qualitative.Plotly, strict=False)}


def time_vs_nrms(result: dict) -> list[dict]:
    """One point per kernel and mode of a recorded ``--fp8`` result that holds its row.

    Parameters
    ----------
    result : dict
        A loaded ``union8_fp8_<preset>_<device>.json``
        (:func:`pageweaver_edu.records.recorded_results`).

    Returns
    -------
    list of dict
        In :data:`POINTS` order: ``label`` (str), ``row`` (str), ``median_us`` (float, µs),
        ``nrms_key`` (str) and ``nrms`` (float, a fraction; ``None`` where ``check`` has no
        such key), ``ours`` (bool: a Union8 kernel of this project).
    """
    if not isinstance(result, dict):
        raise PageWeaverInputError(f"result must be a loaded result file (a dict), got a "
                                   f"{type(result).__name__}")
    us, check = result_medians(result), result.get("check", {})
    points = [{"label": label, "row": row, "median_us": us[row], "nrms_key": key,
               "nrms": None if check.get(key) is None else float(check[key]),
               "ours": not row.startswith("flashinfer")}
              for label, row, key in POINTS if row in us]
    if not points:
        raise PageWeaverInputError("result holds none of the rows " + ", ".join(
            row for _, row, _ in POINTS) + " (is it a bench_union8.py --fp8 file?)")
    return points


def time_vs_nrms_figure(result: dict) -> go.Figure:
    """Median time against NRMS vs float64 (log scale), one marker per point of
    :func:`time_vs_nrms` with an NRMS: ours filled, FlashInfer's open; FlashInfer MSA's NRMS
    as a dashed line; points without an NRMS named in the subtitle.

    Parameters
    ----------
    result : dict
        A loaded ``bench_union8.py --fp8`` result file.

    Returns
    -------
    plotly.graph_objects.Figure
        The figure alone: the run's header (device, date, commit) is printed beside it with
        :func:`pageweaver_edu.records.record_header`.
    """
    points = time_vs_nrms(result)
    drawn = [p for p in points if p["nrms"] is not None]
    fig = go.Figure()
    for p in drawn:
        symbol, colour = MARKERS[p["row"]]
        fig.add_scatter(x=[p["median_us"]], y=[100 * p["nrms"]], mode="markers", name=p["label"],
                        marker={"symbol": symbol if p["ours"] else f"{symbol}-open", "size": 13,
                                "color": colour, "line_width": 2},
                        hovertemplate=f"{p['label']}<br>{p['row']}: %{{x:,.1f}} µs, NRMS "
                                      f"%{{y:.3f}} %<extra></extra>")
    target = next((p for p in drawn if p["row"] == TARGET_ROW), None)
    if target is not None:
        y = 100 * target["nrms"]
        ours = [p["label"] for p in drawn if p["ours"] and p["nrms"] <= target["nrms"]]
        fig.add_hline(y=y, line_dash="dash", line_color="#555555")
        text = (f"{target['label']}: NRMS {y:.2f} %<br>on or below the line, at least as "
                "accurate: " + (", ".join(ours) or "none of ours"))
        fig.add_annotation(x=0.5, xref="paper", y=math.log10(y), yanchor="bottom", yshift=6,
                           showarrow=False, font={"size": 12}, text=text)
    fig.add_annotation(x=0, xref="paper", y=0, yref="paper", xanchor="left", yanchor="bottom",
                       showarrow=False, text="faster and more accurate ↙", font={"size": 12})
    missing = [p["label"] for p in points if p["nrms"] is None]
    subtitle = (f"ours: the {ORDERING}; FlashInfer: its call on the same inputs<br>NRMS on "
                "sampled rows, against float64 on the KV each reads (FP8 cache or BF16 K/V)"
                + ("<br>no NRMS recorded: " + "; ".join(missing) if missing else ""))
    style(fig, f"Time against accuracy: Union8 kernels and FlashInfer ({result.get('workload')}, "
          "one run)", "median time of the call (µs)", "NRMS vs float64 (%, log scale)",
          height=560, subtitle=subtitle, legend_rows=(len(drawn) + 1) // 2)
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(type="log", tickvals=[0.1, 0.2, 0.3, 0.5, 1, 2, 3, 5, 10])
    return fig
