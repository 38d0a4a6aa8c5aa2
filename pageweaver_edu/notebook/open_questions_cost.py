"""Chapter 10's cost side: when does regrouping pay (docs/definitions.md#cost-accounting)?

* :func:`model_net` / :func:`model_net_table` / :func:`net_figure` — S_net per W from a model
  calibrated on the paper's L43/r1 numbers (docs/definitions.md#paper-numbers);
* :func:`measured_report` — what the recorded Union8 files measured, beside the model;
* :func:`capacity_table` — what bitmaps beyond B = 512 pages would cost;
* :data:`VARIANT_RECORDS` — the live cell: the recorded files that would hold timings of the
  C4-aware or subgroup-first π under Union8 (none yet).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..core.bitmap import bitmap_words
from ..core.grouping import Grouping
from ..core.union_metrics import union_stats
from ..records import record_header, recorded_results, result_medians
from ..regroup.bitmap import greedy_regroup
from ..regroup.sets import greedy_regroup_sets
from ..regroup.variants import c4_greedy_regroup
from .live import LiveKernel
from .open_questions import WINDOWS
from .paper_numbers import PAPER
from .style import DASHES, SYMBOLS, style, thin_labels

#: The paper's S_exec per union visit saved on L43/r1 at W128, ns.
TAU_NS = 1e3 * PAPER["s_exec"].value / (PAPER["l43_visits_original"].value
                                        - PAPER["l43_visits_w128"].value)
#: The presets benchmarks/bench_union8.py records with one KV head.
RECORDED = ("cap64k", "cap16k-high-overlap", "interleaved-64k")


def c_online_us(w: int) -> float:
    """Modelled C_online at W: the paper's grouping alone, linear in W through the middle of
    its W64 range and its W128 time on L43/r1, scaled by L43/r1's C_online / grouping-alone
    ratio at W128 (all from :data:`.paper_numbers.PAPER`)."""
    w64, w128 = PAPER["grouping_w64"].value, PAPER["grouping_l43_w128"].value
    return (PAPER["c_online"].value / w128) * (w64 + (w - 64) * (w128 - w64) / 64)


def model_net(sweep: dict, windows=WINDOWS) -> dict:
    """Modelled S_net (µs) per W for every preset of :func:`.open_questions.window_sweep`:
    ``TAU_NS`` per saved union visit minus :func:`c_online_us`."""
    net = {}
    for name, runs in sweep.items():
        base = runs["original"][0].union_visits
        net[name] = [TAU_NS * (base - runs[w][0].union_visits) / 1e3 - c_online_us(w)
                     for w in windows]
    return net


def best_window(net_row, windows=WINDOWS):
    """The W of the largest modelled S_net, or None when no W gains."""
    return windows[int(np.argmax(net_row))] if max(net_row) > 0 else None


def model_net_table(sweep: dict, net: dict, windows=WINDOWS) -> str:
    """Union visits, C4, modelled S_net and the best W per preset and W."""
    lines = [f"{'':22}" + "".join(f"{'W' + str(w):>16}" for w in windows)]
    for name, row in net.items():
        runs = sweep[name]
        base = runs["original"][0].union_visits
        lines.append(f"{name + ' visits':22}" + "".join(
            f"{runs[w][0].union_visits:>9,} {100 * (runs[w][0].union_visits - base) / base:+5.1f}%"
            for w in windows))
        lines.append(f"{'   C4':22}" + "".join(f"{runs[w][0].c4:>16,}" for w in windows))
        lines.append(f"{'   model S_net µs':22}" + "".join(f"{x:>16.1f}" for x in row))
        best = best_window(row, windows)
        lines.append(f"{'   best W (model)':22}"
                     f"{'W' + str(best) if best else 'none (do not regroup)':>16}")
    return "\n".join(lines)


def label_sides(row) -> list[str]:
    """Text position of each point's label, on the side its line does not run: below a
    valley, above-left on a rise, above-right on a fall, above a peak or a flat."""
    out = []
    for i, y in enumerate(row):
        up_left = i > 0 and row[i - 1] > y
        up_right = i + 1 < len(row) and row[i + 1] > y
        out.append("bottom center" if up_left and up_right else "top left" if up_right
                   else "top right" if up_left else "top center")
    return out


def net_figure(net: dict, windows=WINDOWS) -> go.Figure:
    """Modelled S_net per call against W, one series per preset."""
    fig = go.Figure()
    labels = thin_labels(net, fmt="{:.0f}")
    for j, (name, row) in enumerate(net.items()):
        fig.add_trace(go.Scatter(x=[f"W{w}" for w in windows], y=row, name=name,
                                 mode="lines+markers+text", text=labels[name], textfont_size=11,
                                 textposition=label_sides(row), marker_symbol=SYMBOLS[j],
                                 line_dash=DASHES[j]))
    fig.add_hline(y=0, line_dash="dot")
    style(fig, "Modelled net gain per call", "regroup window W", "modelled S<sub>net</sub> (µs)",
          height=470, subtitle="calibrated on L43/r1; a model, not a measurement · a label is "
                               "left out where another series sits on it (table above)")
    fig.update_yaxes(type="linear")
    return fig


def _winner(times: dict, t0: float):
    """The fastest window, or None if none beats T0."""
    w = min(times, key=times.get) if times else None
    return w if w is not None and times[w] < t0 else None


def _measure(name: str, sweep: dict, lines: list) -> dict | None:
    rec = recorded_results(f"union8_{name}_h200")
    med = result_medians(rec)
    lines.append(f"{name}: {rec['file']}\n{record_header(rec)}")
    if "union8_original" not in med:
        lines.append("   no union8_original row in this file")
        return None
    m = {"t0": med["union8_original"], "fixed": {}, "online": {}}
    lines.append(f"   T0 = {m['t0'] / 1e3:.3f} ms")
    for w in (64, 128, 512):
        fixed, online, grp = (med.get(f"{k}_w{w}") for k in
                              ("union8_fixed", "union8_online", "gpu_regroup"))
        line = f"   W{w:<4}"
        if fixed is not None:
            m["fixed"][w] = fixed
            line += f"S_exec {m['t0'] - fixed:8.1f} µs"
        if fixed is not None and online is not None:
            m["online"][w] = online
            line += (f"   C_online {online - fixed:6.1f} µs   S_net {m['t0'] - online:8.1f} µs "
                     f"({100 * (online - m['t0']) / m['t0']:+.2f}%)")
        if grp is not None:
            line += f"   grouping alone {grp:.1f} µs"
        lines.append(line)
    if 128 in m["fixed"]:
        saved = sweep[name]["original"][0].union_visits - sweep[name][128][0].union_visits
        m["tau"] = 1e3 * (m["t0"] - m["fixed"][128]) / saved
        lines.append(f"   one union visit is worth {m['tau']:.1f} ns in this kernel "
                     f"(paper, L43/r1: {TAU_NS:.2f} ns)")
    return m


def measured_report(sweep: dict, net: dict, presets=RECORDED) -> str:
    """S_exec, C_online and S_net per W from each recorded file, then what they say beside
    the model (:func:`model_net`)."""
    lines, measured = [], {}
    for name in presets:
        m = _measure(name, sweep, lines)
        if m is not None:
            measured[name] = m
    lines.append("\nFrom these files:")
    for name, m in measured.items():
        on, fx, model = (_winner(m["online"], m["t0"]), _winner(m["fixed"], m["t0"]),
                         best_window(net[name]))
        online = (f"W{on} wins ({100 * (m['online'][on] - m['t0']) / m['t0']:+.2f}%)" if on
                  else "no window beats the original order")
        lines.append(
            f"* {name}: online, " + online + "; with precomputed ids, "
            + (f"W{fx} is fastest" if fx else "no window beats the original order")
            + "; the paper-calibrated model picks " + (f"W{model}" if model else "no window")
            + (" (the same answer)." if on == model else " (a different answer)."))
    both = [n for n, m in measured.items() if {64, 128} <= set(m["online"])]
    w128 = [n for n in both if measured[n]["online"][128] < measured[n]["online"][64]]
    lines.append(f"* Online W128 beats online W64 on {len(w128)} of {len(both)} recorded presets"
                 + (f" ({', '.join(w128)})." if w128 else "."))
    taus = [m["tau"] for m in measured.values() if "tau" in m]
    if taus:
        lines.append(f"* A saved union visit is worth {min(taus):.1f}–{max(taus):.1f} ns in the "
                     f"recorded kernel, {min(taus) / TAU_NS:.1f}–{max(taus) / TAU_NS:.1f}× the "
                     f"paper-calibrated {TAU_NS:.2f} ns.")
    return "\n".join(lines)


def capacity_table(beyond, queries: int = 15_272) -> str:
    """What B pages cost the bitmap regroup at W128, and the beyond-capacity preset regrouped
    with B = 512 and 640 (``beyond``: that capture)."""
    lines = [f"{'B pages':>8}{'tokens':>11}{'words/query':>12}{'word ops W128':>15}"
             f"{'≤ µs W128':>10}{'smem W128':>11}{'regs':>6}{'list form ops':>15}"
             f"{'union smem':>11}"]
    for b in (512, 640, 1024, 2048, 4096, 8192, 16384):
        words = bitmap_words(b)
        smem = 128 * words * 4
        lines.append(f"{b:>8,}{b * 128:>11,}{words:>12}{queries * 128 * words:>15,}"
                     f"{PAPER['grouping_l43_w128'].value * words / 16:>10.1f}{smem / 1024:>9.0f} K"
                     f"{'' if smem <= 227 * 1024 else '!':1}{words:>5}{queries * 128 * 16:>15,}"
                     f"{b // 8:>9} B")
    pages = int(beyond.topk.max()) + 1
    lines.append(f"\nbeyond-capacity: {beyond.num_queries:,} queries, {pages} pages "
                 f"({pages * 128:,} tokens)")
    for b in (512, 640):
        s = union_stats(beyond.topk, greedy_regroup(beyond.topk, Grouping(128, capacity=b),
                                                    **beyond.regroup_kwargs()))
        lines.append(f"  W128, B = {b}: union visits {s.union_visits:,}, C4 {s.c4:,}")
    head = beyond.topk[:2048]
    same = np.array_equal(greedy_regroup(head, Grouping(128, capacity=640)),
                          greedy_regroup_sets(head, Grouping(128, capacity=1 << 20)))
    lines.append("  set/list form with no capacity limit gives the same π (first 2,048 queries): "
                 f"{same}")
    return "\n".join(lines)


def _variant_records(records, **_) -> dict:
    rows = [(stem, row["name"]) for stem, rec in records.items()
            for row in rec.get("results", [])
            if any(k in str(row.get("name", "")) for k in ("c4", "subgroup"))]
    print(rows or "No timings of the C4-aware or subgroup-first π yet: (b) under Union8 "
          "is pending.")
    return {}


#: Chapter 10: Union8 under the C4-aware or subgroup-first π; benchmarks/bench_union8.py does
#: not time those orderings yet, so the cell shows the recorded files on every machine.
VARIANT_RECORDS = LiveKernel(
    "Union8 under the C4-aware and subgroup-first π", c4_greedy_regroup,
    (*(f"union8_{name}_h200" for name in RECORDED), "union8_cap64k_h8_h200", "gpu_regroup_h200"),
    _variant_records)
