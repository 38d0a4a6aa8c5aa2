"""One self-contained HTML page: the capture's tables, its figures and plotly.js inlined once.

No server and no network: the page holds its own copy of plotly.js (one ``<script>`` in the
head) and each figure is a ``<div>`` drawn by ``Plotly.newPlot`` from the data beside it.
:func:`write_atomic` writes it under a temporary name in the target folder and renames it, so
a reader never sees half a report.
"""

from __future__ import annotations

import datetime
import html
from importlib import metadata
from pathlib import Path

import numpy as np
import plotly
import plotly.io as pio

from ..core.outputs import write_atomically
from . import SUFFIXES, figures
from .analysis import CaptureAnalysis

CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 0 auto; max-width: 1020px;
       padding: 0 16px 48px; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #bbb; padding: 3px 9px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.meta { color: #555; } .estimate { border-left: 4px solid #b2182b; padding: 4px 12px;
background: #fbf3f3; } .figure { margin: 1em 0; } code { font-size: 0.95em; }
"""


def _table(head: list[str], rows: list[list]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _figure(fig, name: str) -> str:
    fig.update_layout(template="plotly_white")
    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{name}",
                      config={"displaylogo": False, "responsive": True})
    return f'<div class="figure" data-figure="{name}">{div}</div>'


def _pct(new: int, old: int) -> str:
    return "–" if not old else f"{100.0 * (new - old) / old:+.2f}%"


def statistics_html(a: CaptureAnalysis) -> str:
    """The capture's numbers: shape, boundaries, and one row per ordering."""
    cap, s0 = a.capture, a.stats["original"]
    fallback = sum(c["fallback"] for c in a.chunks)
    rows = a.table.canonical
    facts = [
        ["queries N", f"{cap.num_queries:,} in {cap.num_requests:,} request(s)"],
        ["Top-K, page size P", f"K = {cap.topk.shape[1]}, P = {cap.page_size} tokens"],
        ["edges Σ|S<sub>i</sub>|", f"{s0.edges:,}"],
        ["pages referenced", f"{np.unique(rows[rows >= 0]).size:,}"],
        ["grouping", f"g = {a.group}, B = {a.grouping.capacity} pages, chunk size "
                     f"{a.grouping.chunk_size or 'whole requests'}"],
        ["chunks under the capacity fallback", f"{fallback:,} of {len(a.chunks):,}"],
    ]
    orders = [[k, f"{s.union_visits:,}", _pct(s.union_visits, s0.union_visits),
               "n/a" if s.rho != s.rho else f"{s.rho:.3f}", f"{s.c4:,}",
               _pct(s.c4, s0.c4), "" if k not in a.grouping_ms else f"{a.grouping_ms[k]:.1f}"]
              for k, s in a.stats.items()]
    return (_table(["", "value"], facts)
            + _table(["ordering", "union visits", "change", "ρ<sub>Q</sub>", "C4", "change",
                      "CPU regroup ms"], orders))


def requests_html(a: CaptureAnalysis, limit: int = 50) -> str:
    """Union visits per request, original and at each report window."""
    keys = [k for k in a.perms if k != "original"]
    reqs = a.request_gains()
    rows = [[f"request {r['request']}", f"{r['queries']:,}",
             f"{r['chunks']} ({r['fallback_chunks']} fallback)", f"{r['visits']['original']:,}"]
            + [f"{r['visits'][k]:,} ({_pct(r['visits'][k], r['visits']['original'])})"
               for k in keys] for r in reqs[:limit]]
    more = (f"<p class='meta'>… and {len(reqs) - limit:,} more requests (all of them are in "
            "<code>--json</code>).</p>") if len(reqs) > limit else ""
    return _table(["request", "queries", "chunks", "original"] + keys, rows) + more


def estimate_html(est: dict | None) -> str:
    """The time estimate, labelled with what it rests on; or why there is none."""
    if est is None:
        return ("<p>No time estimate: none of the recorded H200 result files of the fast kernel "
                "(<code>benchmarks/results/union8_fp8_&lt;preset&gt;_h200.json</code>) is "
                "here.</p>")
    errors = _table(["recorded preset", "ordering", "recorded µs", "fit µs", "error",
                     "error, preset left out of the fit"],
                    [[html.escape(e["preset"]), e["ordering"], f"{e['recorded_us']:,.1f}",
                      f"{e['fit_us']:,.1f}", f"{100 * e['error']:+.1f} %",
                      f"{100 * e['held_out_error']:+.1f} %"] for e in est["errors"]])
    basis = (f"<p><b>Estimate, not a measurement.</b> Based on: {html.escape(est['basis'])}."
             f"</p><p class='meta'>Recorded files: {html.escape(est['record'])}</p>")
    if est["declined"]:
        return (f"<div class='estimate'>{basis}<p><b>No estimate:</b> "
                f"{html.escape(est['declined'])}.</p></div>" + errors)
    rows = [[k, f"{r['union_visits']:,}", f"{r['c4']:,}", f"{r['attention_us']:,.0f}",
             f"{r['c_online_us']:,.1f}" if "c_online_us" in r else "–",
             f"{r['online_us']:,.0f}" if "online_us" in r else "–"]
            for k, r in est["rows"].items()]
    caveats = "".join(f"<li>{html.escape(c)}</li>" for c in est["caveats"])
    return (f"<div class='estimate'>{basis}<ul>{caveats}</ul></div>"
            + _table(["ordering", "union visits", "C4 rounds", "est. µs, precomputed ids",
                      "C<sub>online</sub> µs", "est. µs, live regroup"], rows)
            + _figure(figures.estimate_figure(est), "estimate")
            + "<p>The model's error on every recorded point:</p>" + errors)


def build_page(a: CaptureAnalysis, est: dict | None) -> str:
    """The whole report as one HTML string."""
    try:
        version = metadata.version("pageweaver_edu")
    except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
        version = "(not installed)"
    name = html.escape(a.source)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    fallback = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in a.fallback_lines)
    sections = [
        ("Statistics", statistics_html(a)),
        ("Support sizes", _figure(figures.support_figure(a), "supports")),
        ("Union visits and C4", _figure(figures.visits_c4_figure(a), "visits")
         + _figure(figures.union_hist(a), "union-hist")
         + _figure(figures.profile(a), "profile")),
        ("ρ<sub>Q</sub> per window", _figure(figures.rho_window_figure(a), "rho")),
        ("Gain per request and chunk", _figure(figures.gain_figure(a), "gain")
         + requests_html(a)),
        ("Capacity fallbacks", f"<ul>{fallback}</ul>" if fallback else
         f"<p>None: every chunk needs at most B = {a.grouping.capacity} pages and is "
         "regrouped.</p>"),
        ("Time estimate", estimate_html(est)),
    ]
    body = "".join(f"<section><h2>{title}</h2>{content}</section>" for title, content in sections)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>PageWeaver report: {name}</title><style>{CSS}</style>"
            f"<script type='text/javascript'>{plotly.offline.get_plotlyjs()}</script></head>"
            f"<body><h1>PageWeaver report: {name}</h1><p class='meta'>pageweaver_edu "
            f"{version}, {when}; arXiv:2610.11201. Union visits Σ|U<sub>G</sub>| are the "
            "pages a group walks; C4 the page rounds of its two four-query halves."
            f"</p>{body}</body></html>")


def write_atomic(path, text: str, protect=()) -> Path:
    """Write ``text`` (UTF-8) at ``path`` through a temporary file in the same folder and a
    rename (:func:`~pageweaver_edu.core.outputs.write_atomically`: its path rules)."""
    return write_atomically(path, SUFFIXES, lambda fh: fh.write(text.encode("utf-8")), protect)
