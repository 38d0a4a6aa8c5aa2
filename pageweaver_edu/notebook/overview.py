"""Chapter 00's series map (a Markdown table), the data-flow figure (arXiv:2610.11201, §4) and
the recorded kernel times its prose quotes (read from ``benchmarks/results/``, never typed).
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from ..records import recorded_results, result_medians
from .paper_numbers import paper_text
from .style import style

#: (number, topic, where it runs, the kernels/ sources its live cell launches on an H200).
CHAPTERS = (
    ("00", "Overview: the map, the data flow, a first end-to-end run", "CPU", ()),
    ("01", "Support sets: $S_i$, $P$, $L_i$, $c_i$ and the attended tokens $A_i$", "CPU", ()),
    ("02", r"Query union: $U_G$, masks $M_{i,p}$, $\rho_Q$ and the useful tile fraction", "CPU",
     ()),
    ("03", "Greedy regroup: Algorithm 1 round by round", "CPU", ()),
    ("04", "Bitmap popcount: 16-word bitmaps, one regroup CTA simulated", "CPU + live H200 cell",
     ("regroup.cu",)),
    ("05", "Union preparation: page lists, membership bytes, C4", "CPU + live H200 cell",
     ("union_prepare.cu",)),
    ("06", "The Figure 3 pipeline: two CTAs, two KV slots, events ① and ②", "CPU", ()),
    ("07", "The BF16 cluster kernel: rows, tiles, online softmax, live", "CPU + live H200 cell",
     ("union8.cu",)),
    ("08", r"Online regroup cost: $T_0$, $T_\text{fixed}$, $T_\text{online}$ and $S_\text{net}$",
     "CPU + live H200 cell", ("regroup.cu", "union_prepare.cu", "union8.cu")),
    ("09", "Direct KV-page pairs", "CPU + live H200 cell (torch on the GPU, no kernel of ours)",
     ()),
    ("10", "Open questions", "CPU (recorded H200 results)", ()),
    ("11", "The paper's claims, placed beside ours", "CPU (recorded H200 results)", ()),
    ("12", "FP8: the E4M3 path, its error budget, the FP8 cluster kernel and the "
     "warp-specialized kernel", "CPU + live H200 cell", ("union8_fp8.cu",)),
    ("13", "Your own capture: the series' measures on your file, widgets, the HTML report",
     "CPU + live H200 cell (the regroup on your capture)", ("regroup.cu",)),
)
#: (title, what it is, where it runs) per step of the data flow; short lines fit a box.
STAGES = (
    ("Top-K ids", "topk [N, K] int<br>S<sub>i</sub> per query", "input: selector unchanged"),
    ("greedy regroup", "windows of W<br>queries, groups<br>of g = 8", "CPU ref · H200 kernel"),
    ("π", "int32 ids [N]<br>position r runs<br>query π[r]", "Q is never copied"),
    ("union prep.", "U<sub>G</sub> page lists<br>+ membership<br>bytes", "CPU ref · H200 kernel"),
    ("Union8 kernel", "2 halves × 4 queries<br>× 16 heads<br>= 2 × M64 tiles",
     "CPU ref · H200 kernel"),
    ("O at original rows", "position r writes<br>o[π[r]], no<br>reorder pass",
     "output [N, 16, d]"),
)

def chapter_table(folder) -> str:
    """The series map as Markdown; chapters whose notebook exists in ``folder`` are linked."""
    rows = ["| # | chapter | runs on | CUDA kernels launched live |", "|---|---|---|---|"]
    for num, topic, where, kernels in CHAPTERS:
        found = sorted(Path(folder).glob(f"{num}_*.ipynb"))
        cell = f"[{topic}]({found[0].name})" if found else f"{topic} — *coming*"
        launched = ", ".join(f"`{k}`" for k in kernels) or "–"
        rows.append(f"| {num} | {cell} | {where} | {launched} |")
    return "\n".join(rows)


def live_chapters() -> list[str]:
    """Numbers of the chapters whose live cell launches a CUDA kernel of ``kernels/``."""
    return [num for num, _, _, kernels in CHAPTERS if kernels]


def live_chapters_text() -> str:
    """``"04, 05, 07, 08, 12 and 13"``: :func:`live_chapters` as words."""
    nums = live_chapters()
    return ", ".join(nums[:-1]) + " and " + nums[-1] if len(nums) > 1 else "".join(nums)


def regroup_kernel_times() -> str:
    """The recorded H200 medians of this project's regroup kernel (W64 / W128), with the
    file they come from (``benchmarks/results/gpu_regroup_h200.json``)."""
    rec = recorded_results("gpu_regroup_h200")
    m = result_medians(rec)
    return (f"{m['gpu_regroup_w64']:.1f} / {m['gpu_regroup_w128']:.1f} µs "
            f"(W64 / W128, `gpu_regroup_h200.json`: {rec['device']}, {rec['date'][:10]}, "
            f"commit `{rec['commit']}`)")


def runs_where_table() -> str:
    """What runs where, as Markdown, with the recorded regroup kernel times."""
    return "\n".join([
        "| stage | CPU reference in `pageweaver_edu` | on the H200 (paper §4) |",
        "|---|---|---|",
        "| greedy regroup | `greedy_regroup_sets` (readable sets), `greedy_regroup` "
        "(vectorized bitmaps) | one CTA per window, one thread per query, popcounts over 16 "
        f"words; paper: W64 {paper_text('grouping_w64')}, W128 {paper_text('grouping_w128')}; "
        f"this project's pair-mask kernel: {regroup_kernel_times()} |",
        "| union preparation | `prepare_unions` → `UnionPlan` | a preparation kernel: page "
        "lists, membership bytes |",
        "| attention | `reference_attention` (float64, exact) | the FP8 kernels (the paper's "
        "arithmetic): Q quantized to E4M3 per (query, head) row, FP8 E4M3 KV, FP32 softmax "
        "state, BF16 output; the BF16 cluster kernel of chapter 07 keeps Q, K, V in BF16 |"])


def dataflow_figure() -> go.Figure:
    """Labelled boxes and arrows: Top-K → regroup → π → preparation → Union8 kernel → O."""
    fig = go.Figure()
    for i, (title, what, where) in enumerate(STAGES):
        dash = "dot" if i in (0, len(STAGES) - 1) else "solid"  # input/output dotted
        fig.add_shape(type="rect", x0=i - 0.45, x1=i + 0.45, y0=0.2, y1=1.0,
                      line=dict(width=2, dash=dash))
        for y, text, size in ((0.6, f"<b>{title}</b><br>{what}", 11), (0.05, where, 10)):
            fig.add_annotation(x=i, y=y, text=text, showarrow=False, font=dict(size=size))
        if i:
            fig.add_annotation(x=i - 0.46, y=0.6, ax=i - 0.54, ay=0.6, axref="x", ayref="y",
                               text="", showarrow=True, arrowhead=3, arrowwidth=2)
    style(fig, "PageWeaver data flow (arXiv:2610.11201, §4): ids move, Q and O stay put",
          "", "", height=300, legend_rows=0)
    fig.update_xaxes(visible=False, range=[-0.5, len(STAGES) - 0.5])
    return fig.update_yaxes(visible=False, range=[-0.1, 1.1])
