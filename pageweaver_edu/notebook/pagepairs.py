"""Chapter 09's tables, figures and live cell: direct KV-page pairs beside Union8.

* :func:`preset_pairs` / :func:`preset_pairs_table` — page pairs, partials and Union8's union
  visits per preset;
* :func:`community_sweep`, :func:`sweep_figure`, :func:`sweep_app` — modelled bytes as the
  supports interleave more;
* :func:`traffic_table`, :func:`workspace_lines` — bytes per organization and the partial
  workspace at 16K queries (docs/definitions.md#page-pairs);
* :data:`PAGE_PAIRS` — the live cell: the torch page-pair path timed on the GPU, the recorded
  Union8 files shown everywhere; :func:`measured_vs_model` and :func:`conclusions` set those
  files beside the byte model.
"""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go

from ..core.grouping import Grouping
from ..core.union_metrics import union_stats
from ..pagepairs.traffic import partial_bytes, traffic_model
from ..pagepairs.work import COMMON, plan_page_pairs
from ..records import record_header, result_medians
from ..regroup.bitmap import greedy_regroup
from ..workloads import interleaved_workload, make_preset
from .live import LiveKernel
from .style import (
    DASHES,
    SYMBOLS,
    TEXT_COLUMNS,
    set_subtitle,
    style,
    thin_labels,
    widget_ready,
)

GB = 1e9
KV_PAGE = 32768  # bytes of an FP8 K + V page at P = d = 128
SWEEP_NOTE = "labels in GB; a label is left out where another series sits on it"


def preset_pairs(names=("interleaved-32k", "interleaved-64k", "cap64k")) -> dict:
    """Per preset: the plan's stats ``s``, Union8's original and W128 union stats, the median
    id gap inside a pair's common queries (``gap``) and N."""
    rows = {}
    for name in names:
        cap = make_preset(name)
        plan = plan_page_pairs(cap.topk)
        common = plan.work_kind == COMMON  # items sorted by (unit, kind, query)
        unit, query = plan.work_unit[common], plan.work_query[common]
        rows[name] = dict(
            s=plan.stats(), orig=union_stats(cap.topk), n=cap.num_queries,
            w128=union_stats(cap.topk, greedy_regroup(cap.topk, Grouping(128),
                                                      **cap.regroup_kwargs())),
            gap=float(np.median(np.diff(query)[unit[1:] == unit[:-1]])))
    return rows


def preset_pairs_table(rows: dict) -> str:
    """Text table of :func:`preset_pairs`: edges, pairs, partials saved, Union8 visits."""
    lines = [f"{'':18}{'edges':>9}{'pairs':>7}{'saved':>8}{'partials':>10}{'gap':>6}"
             f"{'U8 visits':>11}{'U8 W128':>9}{'C4 W128':>9}{'pair tiles':>11}"]
    for name, r in rows.items():
        s = r["s"]
        lines.append(f"{name:18}{s['edges']:>9,}{s['pairs']:>7}{s['shared']:>8,}"
                     f"{s['work_items']:>10,}{r['gap']:>6.0f}{r['orig'].union_visits:>11,}"
                     f"{r['w128'].union_visits:>9,}{r['w128'].c4:>9,}{s['tile_rounds']:>11,}")
    return "\n".join(lines)


def community_sweep(communities=(2, 4, 8, 16, 32, 64), n: int = 4096) -> dict:
    """Interleaved workloads of ``n`` queries, C communities of 32 pages each: per C the
    page-pair stats and Union8's union visits in original order and at W64 / W128 with
    B = 512 or unlimited (2^13)."""
    sweep = {}
    for c in communities:
        cap = interleaved_workload(n, 32 * c, 16, communities=c, seed=0)
        visits = {"original": union_stats(cap.topk).union_visits}
        for w in (64, 128):
            for capacity in (512, 1 << 13):
                perm = greedy_regroup(cap.topk, Grouping(w, capacity=capacity))
                visits[(w, capacity)] = union_stats(cap.topk, perm).union_visits
        sweep[c] = (plan_page_pairs(cap.topk).stats(), visits)
    return {"n": n, "communities": list(communities), "runs": sweep}


def sweep_series(sweep: dict, window: int = 128, partial_out: int = 4) -> dict:
    """Modelled GB per KV head of each organization over the communities of ``sweep``."""
    n, runs, cs = sweep["n"], sweep["runs"], sweep["communities"]
    out = {}
    for label, key in (("Union8, original order", "original"),
                       (f"Union8, W{window}, B = 512", (window, 512)),
                       (f"Union8, W{window}, B unlimited", (window, 1 << 13))):
        out[label] = [traffic_model(n, runs[c][1][key], runs[c][0])["union8"] / GB for c in cs]
    out[f"page pairs, {8 * partial_out}-bit partials"] = [
        traffic_model(n, 0, runs[c][0], partial_out=partial_out)["page_pairs"] / GB for c in cs]
    return out


def sweep_figure(sweep: dict, window: int = 128, partial_out: int = 4, widget: bool = False):
    """Logical bytes per KV head against the number of communities (one series each)."""
    fig = go.FigureWidget() if widget else go.Figure()
    series = sweep_series(sweep, window, partial_out)
    for j, ((label, ys), text) in enumerate(zip(series.items(), thin_labels(series).values(),
                                                strict=True)):
        fig.add_trace(go.Scatter(x=[str(c) for c in sweep["communities"]], y=ys, name=label,
                                 mode="lines+markers+text", text=text, textfont_size=11,
                                 textposition="top center", marker_symbol=SYMBOLS[j],
                                 line_dash=DASHES[j]))
    return style(fig, f"Logical bytes per KV head, interleaved workload, N = {sweep['n']:,}",
                 "communities C (queries of one community are C positions apart)",
                 "modelled bytes (GB)", height=470, legend_rows=2,
                 subtitle=f"W{window} · {SWEEP_NOTE}")


def sweep_app(sweep: dict):
    """The sweep figure with a window and a partial-precision switch, redrawn in place."""
    import ipywidgets as widgets

    w_pick = widgets.ToggleButtons(options=[("W64", 64), ("W128", 128)], value=128,
                                   description="window")
    p_pick = widgets.ToggleButtons(options=[("FP32 partials", 4), ("BF16 partials", 2)],
                                   value=4, description="partials")
    fig = sweep_figure(sweep, widget=True)

    def redraw(_=None):
        series = sweep_series(sweep, w_pick.value, p_pick.value)
        with fig.batch_update():
            for trace, (label, ys), text in zip(fig.data, series.items(),
                                                thin_labels(series).values(), strict=True):
                trace.y, trace.name, trace.text = ys, label, text
            set_subtitle(fig, f"W{w_pick.value} · {SWEEP_NOTE}")

    w_pick.observe(redraw, names="value")
    p_pick.observe(redraw, names="value")
    return widgets.VBox([widgets.HBox([w_pick, p_pick]), widget_ready(fig)])


def traffic_table(rows: dict) -> str:
    """GB per KV head: no sharing, Union8 original and W128, page pairs (FP32 / BF16)."""
    lines = [f"{'':18}{'no sharing':>11}{'U8 orig':>9}{'U8 W128':>9}{'pairs FP32':>11}"
             f"{'pairs BF16':>11}   (GB)"]
    for name, r in rows.items():
        s, n = r["s"], r["n"]
        t_o = traffic_model(n, r["orig"].union_visits, s)
        t_w = traffic_model(n, r["w128"].union_visits, s)
        t_b = traffic_model(n, r["w128"].union_visits, s, partial_out=2)
        lines.append(f"{name:18}{s['edges'] * KV_PAGE / GB:>11.2f}{t_o['union8'] / GB:>9.2f}"
                     f"{t_w['union8'] / GB:>9.2f}{t_w['page_pairs'] / GB:>11.2f}"
                     f"{t_b['page_pairs'] / GB:>11.2f}")
    return "\n".join(lines)


def workspace_lines(rows: dict, queries: int) -> str:
    """The partial workspace of ``queries`` queries: padded layouts, then each preset's."""
    lines = []
    for label, entries, out_b in (("K = 16 entries, BF16 partial + FP32 LSE", 16, 2),
                                  ("K/2 = 8 entries, FP32 partial + FP32 LSE", 8, 4),
                                  ("K = 16 entries, FP32 partial + FP32 LSE", 16, 4)):
        total = partial_bytes(queries * entries, 16, 128, out_b)
        values = partial_bytes(queries * entries, 16, 128, out_b, lse_bytes=0)
        lines.append(f"{label:42} {total / 2**30:6.3f} GiB  (partial values alone "
                     f"{values / 2**30:.3f} GiB)")
    for name, r in rows.items():
        s = r["s"]
        per_q = s["work_items"] / s["queries"]
        exact = partial_bytes(round(per_q * queries), 16, 128, 4)
        padded = partial_bytes(queries * s["max_items_per_query"], 16, 128, 4)
        lines.append(f"exact, {name:17} {per_q:5.2f} items/query -> {exact / 2**30:6.3f} GiB FP32 "
                     f"at 16K; padded to its max {s['max_items_per_query']} -> "
                     f"{padded / 2**30:.3f} GiB")
    return "\n".join(lines)


RECORDED = ("interleaved-64k", "cap64k")  # the presets bench_union8.py records


def _pairs_recorded(records, **_) -> dict:
    return {}


def _pairs_live(records, presets=("interleaved-32k", "interleaved-64k", "cap64k")) -> dict:
    from ..pagepairs.torch_ops import time_page_pairs

    out = {}
    for name in presets:
        t = time_page_pairs(make_preset(name).topk, "cuda", repeats=5)
        out[name] = 1e3 * t["median_ms"]
        print(f"torch page pairs on {name}: {t['median_ms']:.3f} ms "
              f"({t['work_items']:,} work items, {t['dtype']})")
    for stem, rec in records.items():
        print(f"Union8 on {stem[7:-5]}: recorded file benchmarks/results/{stem}.json")
        print(record_header(rec))
    return out


#: Chapter 09: the torch page-pair path (partials + combine, BF16) on the GPU; the recorded
#: Union8 files of the presets it is compared with are shown on every machine.
PAGE_PAIRS = LiveKernel("page pairs, torch partials and combine", plan_page_pairs,
                        tuple(f"union8_{name}_h200" for name in RECORDED),
                        _pairs_recorded, _pairs_live)


def measured_vs_model(rows: dict, records: dict) -> tuple[str, dict]:
    """Each recorded file's measured Union8 and gather times beside the byte model.

    Parameters
    ----------
    rows : dict
        :func:`preset_pairs` of (at least) the recorded presets.
    records : dict of str to dict
        Recorded Union8 files by stem (``union8_<preset>_h200``).

    Returns
    -------
    text : str
    comparison : dict
        Per preset: measured medians ``med``, modelled bytes ``model`` per run, page pairs'
        modelled bytes ``pp`` and the record ``rec``; the input of :func:`conclusions`.
    """
    lines, cmp = [], {}
    for stem, rec in records.items():
        name = stem[len("union8_"):-len("_h200")]
        r, med, s, n = rows[name], result_medians(rec), rows[name]["s"], rows[name]["n"]
        union8 = {key: traffic_model(n, st.union_visits, s)["union8"] for key, st in (
            ("union8_original", r["orig"]), ("union8_fixed_w128", r["w128"]),
            ("union8_online_w128", r["w128"]))}
        model = {"gather_reference": s["edges"] * KV_PAGE, **union8}  # gather: no sharing
        cmp[name] = dict(med=med, model=model, pp=traffic_model(n, 0, s)["page_pairs"], rec=rec)
        lines.append(f"{name}: {stem}.json\n{record_header(rec)}")
        if "gather_reference" not in med:
            lines.append("  no gather_reference row in this file")
            continue
        lines.append(f"  {'':24}{'measured':>11}{'gather/this':>13}{'model: no sharing/this':>24}")
        for key, b in model.items():
            if key in med:
                lines.append(f"  {key:24}{med[key] / 1e3:>8.3f} ms"
                             f"{med['gather_reference'] / med[key]:>12.2f}x"
                             f"{model['gather_reference'] / b:>23.2f}x")
        lines.append(f"  {'page pairs (FP32)':24}{'not timed':>11}{'':13}"
                     f"{model['gather_reference'] / cmp[name]['pp']:>23.2f}x\n")
    return "\n".join(lines), cmp


def _x(a: float, b: float) -> str:
    return f"{a / b:.2f}×"


def conclusions(cmp: dict) -> str:
    """What the recorded files say about the byte model and where page pairs would land,
    written from the files (:func:`measured_vs_model`'s comparison)."""
    runs = ("gather_reference", "union8_original", "union8_fixed_w128")
    lines = []
    for name, c in cmp.items():
        rec = c["rec"]
        lines.append(f"{name} ({rec.get('device')}, {rec.get('date')}, "
                     f"commit {rec.get('commit')}):")
        if any(k not in c["med"] for k in runs):
            lines.append(f"  rows missing from the file: {[k for k in runs if k not in c['med']]}")
            continue
        t, model, pp = {k: c["med"][k] for k in runs}, c["model"], c["pp"]
        by_time, by_bytes = sorted(runs, key=t.get), sorted(runs, key=model.get)
        rate = {k: model[k] / t[k] for k in runs}  # modelled bytes per measured µs
        fast = rate["union8_original"] / rate["gather_reference"]
        lines.append(f"  * The W128 regroup makes Union8 "
                     f"{_x(t['union8_original'], t['union8_fixed_w128'])} faster; the byte model "
                     f"predicts {_x(model['union8_original'], model['union8_fixed_w128'])}.")
        lines.append(f"  * Measured times rank the runs {' < '.join(by_time)}; modelled bytes "
                     "rank them " + ("the same way." if by_time == by_bytes
                                     else " < ".join(by_bytes) + "."))
        lines.append(f"  * Union8 (original order) moves its modelled bytes {fast:.2f}× as fast "
                     "as the gather reference, so bytes alone "
                     + ("roughly size" if 2 / 3 < fast < 1.5 else "do not size")
                     + " the gap between them.")
        est = {"Union8's": t["union8_original"] * pp / model["union8_original"],
               "the gather reference's": t["gather_reference"] * pp / model["gather_reference"]}
        for anchor, us in est.items():
            lines.append(f"  * At {anchor} rate, page pairs (FP32 partials) would take ≈ "
                         f"{us / 1e3:.2f} ms, {_x(us, t['union8_original'])} the time of "
                         f"original-order Union8 and {_x(us, t['union8_fixed_w128'])} that of "
                         "W128 Union8.")
        for label, key in (("original-order", "union8_original"), ("W128", "union8_fixed_w128")):
            side = {us < t[key] for us in est.values()}
            lines.append(f"  * Page pairs vs {label} Union8: " + (
                f"{'faster' if side == {True} else 'slower'} at both rates." if len(side) == 1
                else "faster at one rate, slower at the other: the files cannot decide."))
    # Bullets wrapped between words: an output line wider than the notebook wraps anywhere.
    return "\n".join(textwrap.fill(line, TEXT_COLUMNS, subsequent_indent="    ")
                     if line.startswith("  * ") else line for line in lines)
