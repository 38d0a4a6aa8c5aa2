"""Markdown tables of the recorded H200 results (benchmarks/results/*_h200.json) for the README.

Usage: python tools/results_table.py               print the tables
       python tools/results_table.py --readme README.md
                                                   replace the block between the README's
                                                   <!-- h200-results:begin/end --> markers
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pageweaver_edu.notebook.online_plan import fused_records, online_table  # noqa: E402
from pageweaver_edu.notebook.paper_numbers import PAPER  # noqa: E402
from pageweaver_edu.notebook.peers import peer_table  # noqa: E402
from pageweaver_edu.records import recorded_results, result_medians  # noqa: E402

BEGIN, END = "<!-- h200-results:begin -->", "<!-- h200-results:end -->"
PRESETS = [("cap64k", 1), ("cap16k-high-overlap", 1), ("interleaved-64k", 1), ("cap64k", 8)]
KERNELS = [("gpu_regroup_w64", PAPER["grouping_w64"].number_text(), 10.0),
           ("gpu_regroup_w128", PAPER["grouping_w128"].number_text(), 17.0),
           ("gpu_union_prepare", "–", 15.0)]


def _cuda(field: str) -> str:
    """A record's ``cuda`` field, ``"torch <torch.version.cuda>; <nvcc's last line>"``, in
    words: the 13.0 after "torch" is the CUDA version torch was built for, not torch's own."""
    parts = [x.strip() for x in field.split(";")]
    words = []
    if parts and parts[0].startswith("torch "):
        words.append(f"torch built for CUDA {parts[0][6:]}")
    elif parts and parts[0]:
        words.append(parts[0])
    for extra in parts[1:]:
        words.append("nvcc " + extra.removeprefix("Build ") if extra.startswith("Build ")
                     else extra)
    return ", ".join(words)


def _stamp(rec: dict) -> str:
    return (f"{rec['device']}, {rec['date']}, driver {rec['driver']}, {_cuda(rec['cuda'])}, "
            f"commit `{rec['commit']}`")


def _verdict(ok: bool, text: str) -> str:
    return ("met" if ok else "**missed**") + f" ({text})"


def tables() -> str:
    reg = recorded_results("gpu_regroup_h200")
    m = result_medians(reg)
    out = [f"Regroup and union preparation, `cap64k`, one KV head ({_stamp(reg)}):", "",
           "| kernel | median µs | paper µs | target µs | target |", "|---|--:|--:|--:|---|"]
    for name, paper, target in KERNELS:
        out.append(f"| `{name}` | {m[name]:.1f} | {paper} | ≤ {target:g} | "
                   f"{_verdict(m[name] <= target, f'{m[name] / target:.2f}× the target')} |")
    recs = {}
    for preset, heads in PRESETS:
        stem = f"union8_{preset}" + ("" if heads == 1 else f"_h{heads}") + "_h200"
        try:
            recs[(preset, heads)] = recorded_results(stem)
        except FileNotFoundError:
            continue
    stamps = "; ".join(sorted({_stamp(r) for r in recs.values()}))
    acct = ["", "BF16 cluster kernel, complete calls, µs (docs/definitions.md#cost-accounting; "
            f"{stamps}):",
            "",
            "| preset | KV heads | T0 | T_fixed W128 | T_online W128 | S_exec | C_online "
            "| S_net W128 | S_net W64 | regroup W128 alone |", "|---|" + "--:|" * 9]
    base = ["", "Baselines on the same inputs, µs, and throughput on the C4 work:", "",
            "| preset | KV heads | best BF16 cluster kernel call | TFLOP/s | Union4 kernel | "
            "TFLOP/s | gather "
            "| FlexAttention | × gather | × flex |", "|---|" + "--:|" * 9]
    for (preset, heads), r in recs.items():
        m = {x["name"]: x for x in r["results"]}
        us = {k: x["median_us"] for k, x in m.items()}
        a, s = r["accounting"], r["summary"]
        best = min((x for x in r["results"] if x["name"].startswith("union8_")
                    and not x["name"].endswith("_attn") and "tflops_c4" in x),
                   key=lambda x: x["median_us"])
        flex = next((x["median_us"] for x in r["results"] if x["name"].startswith("flex")), None)
        acct.append(f"| {preset} | {heads} | {us['union8_original']:,.0f} "
                    f"| {us['union8_fixed_w128']:,.0f} | {us['union8_online_w128']:,.0f} "
                    f"| {a['w128']['S_exec_us']:,.0f} | {a['w128']['C_online_us']:,.0f} "
                    f"| {a['w128']['S_net_us']:+,.0f} | {a['w64']['S_net_us']:+,.0f} "
                    f"| {us['gpu_regroup_w128']:,.1f} |")
        base.append(f"| {preset} | {heads} | {best['median_us']:,.0f} "
                    f"(`{best['name'].replace('union8_', '')}`) | {best['tflops_c4']:.0f} "
                    f"| {us['union4_original']:,.0f} | {m['union4_original']['tflops_c4']:.0f} "
                    f"| {us['gather_reference']:,.0f} | {'–' if flex is None else f'{flex:,.0f}'} "
                    f"| {s['speedup_vs_gather']:.1f} | {s.get('speedup_vs_flex', '–')} |")
    fused = fused_records()
    online = ["", "Online regroup with the fused plan (docs/definitions.md#fused-online-plan): the "
              "warp-specialized kernel's complete calls and the fused plan kernel alone, µs, one "
              "run per file (" + "; ".join(sorted({_stamp(r) for r in fused})) + "):", "",
              online_table(fused, header=False)]
    peers = ["", "The warp-specialized kernel (`union8ws_fp8_*` complete calls) and FlashInfer "
             "on the same inputs, same run, µs (× = FlashInfer time / our best call; NRMS "
             "against float64 on the FP8 cache, sampled rows); every recorded file, with the "
             "commit and the build it timed:", "", peer_table(every_file=True)]
    return "\n".join(out + acct + base + online + peers)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", help="write the tables into this file between the markers")
    args = ap.parse_args(argv)
    text = tables()
    if not args.readme:
        print(text)
        return 0
    path = Path(args.readme)
    doc = path.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path} has no {BEGIN} … {END} block")
    head, rest = doc.split(BEGIN, 1)
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print(f"updated {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
