"""Chapter 12's speed and target tables, read from one recorded FP8 run.

``benchmarks/results/union8_fp8_cap64k_h200.json`` (``benchmarks/bench_union8.py --fp8``) times
in one run, on the same inputs: the one-SM warp-specialized kernel (``union8ws_fp8_*``, the
fast one), the FP8 cluster kernel (``union8_fp8_*``), the BF16 cluster kernel (``union8_*``),
the Union4 kernels and FlashInfer 0.7.4. :func:`speed_table` sets the three Union8 kernels beside
the paper's Figure 6 and the peers; :func:`targets_table` checks the warp-specialized kernel
and the FP8 cluster kernel against the project's targets. Every number is read from the file.
"""

from __future__ import annotations

from ..records import record_header
from .paper_numbers import PAPER, paper_text

#: Tensor-core FP8 dense peak of the H200, TFLOP/s (datasheet).
FP8_PEAK_TFLOPS = 1979.0
#: Name prefix of each kernel's rows in the file.
KERNELS = {"warp-specialized kernel": "union8ws_fp8", "FP8 cluster kernel": "union8_fp8",
           "BF16 cluster kernel": "union8"}
#: The project's speed and accuracy targets for a Union8 kernel on cap64k, one KV head.
TARGETS = {"fixed_w128_us": 600.0, "original_us": 700.0, "vs_bf16_cluster": 1.5, "vs_msa": 1.8,
           "vs_decode": 3.0, "peak_share": 0.4, "over_union4": 0.93, "s_net_us": 0.0,
           "nrms": 0.04}
#: The peers of the same run: row name -> label.
PEERS = {"flashinfer_msa_fp8": "FlashInfer MSA FP8 (sparse, Union4 tiles)",
         "flashinfer_decode_bf16_tc": "FlashInfer paged decode, BF16 KV, tensor cores",
         "flashinfer_decode_fp8_tc": "FlashInfer paged decode, FP8 KV, tensor cores",
         "gather_reference": "gather + SDPA reference"}


def _medians(fp8: dict) -> dict:
    return {r["name"]: r["median_us"] for r in fp8["results"]}


def _calls(med: dict, prefix: str) -> tuple[float, float, float]:
    """(T0, T_fixed W128, T_online W128) of one kernel, µs."""
    return tuple(med[f"{prefix}_{k}"] for k in ("original", "fixed_w128", "online_w128"))


def speed_table(fp8: dict) -> tuple[str, str, str]:
    """(header line, Markdown table of complete calls for the three Union8 kernels and the
    paper, one line on the peers of the same run against the warp-specialized kernel)."""
    med = _medians(fp8)
    calls = {name: _calls(med, prefix) for name, prefix in KERNELS.items()}
    paper = [PAPER[k] for k in ("t0", "t_fixed", "t_online")]
    lines = ["| complete call (preparation + attention), µs | " + " | ".join(calls)
             + " | paper, L43/r1 (Fig. 6) |", "|---|" + "--:|" * (len(calls) + 1)]
    for i, label in enumerate(("T0: original order", "T_fixed: W128 ids",
                               "T_online: W128 regroup live")):
        lines.append(f"| {label} | " + " | ".join(f"{c[i]:,.1f}" for c in calls.values())
                     + f" | {1e3 * paper[i].value:,.1f} |")
    lines.append("| S_net = T0 − T_online | " + " | ".join(
        f"{c[0] - c[2]:+,.1f}" for c in calls.values()) + f" | +{PAPER['s_net'].number_text()} |")
    union4 = {"warp-specialized kernel": "union4_fp8_original", "FP8 cluster kernel":
              "union4_fp8_original", "BF16 cluster kernel": "union4_original"}
    lines.append("| Union4 kernel, original order (same arithmetic) | " + " | ".join(
        f"{med[union4[n]]:,.1f}" for n in calls) + " | – |")
    lines.append("| Union4 time / Union8 time (original order) | " + " | ".join(
        f"{med[union4[n]] / c[0]:.2f}×" for n, c in calls.items())
        + f" | {paper_text('vs_union4')} |")
    best = min(calls["warp-specialized kernel"])
    peers = "peers on the same inputs (same run), against the warp-specialized kernel's best " \
        f"call ({best:,.1f} µs): " + "; ".join(
            f"{label} {med[n]:,.1f} µs ({med[n] / best:.2f}×)" for n, label in PEERS.items()
            if n in med)
    return "recorded: " + record_header(fp8).strip(), "\n".join(lines), peers


def _peak_share(fp8: dict, us: float) -> float:
    """Share of the FP8 dense peak that the C4 work of W128 gets in ``us`` µs: C4 × 64 rows ×
    128 tokens × 128 dims × 4 FLOP."""
    flop = fp8["stats"]["w128"]["c4"] * 64 * 128 * 128 * 4
    return flop / (us * 1e-6) / (FP8_PEAK_TFLOPS * 1e12)


def _kernel_values(fp8: dict, prefix: str, ws: bool) -> dict:
    """The recorded values each target is checked on, for one kernel of the file."""
    med, c = _medians(fp8), fp8["check"]
    t0, tf, ton = _calls(med, prefix)
    best = min(t0, tf, ton)
    bf16 = min(_calls(med, "union8"))
    same = {k: v for k, v in c["bitwise_identical"].items() if k.startswith("union8ws") == ws}
    return {"fixed_w128_us": tf, "original_us": t0, "vs_bf16_cluster": bf16 / best,
            "vs_msa": med["flashinfer_msa_fp8"] / best if "flashinfer_msa_fp8" in med else None,
            "vs_decode": med["flashinfer_decode_bf16_tc"] / best
            if "flashinfer_decode_bf16_tc" in med else None,
            "peak_share": _peak_share(fp8, tf), "over_union4": t0 / med["union4_fp8_original"],
            "s_net_us": t0 - ton,
            "nrms": c["union8ws_nrms_vs_float64" if ws else "nrms_vs_float64"],
            "emulation": c["union8ws_nrms_vs_emulation" if ws else "nrms_vs_emulation"],
            "bitwise": all(same.values())}


def targets_table(fp8: dict) -> tuple[str, str]:
    """The warp-specialized kernel and the FP8 cluster kernel against the project's targets:
    (Markdown table, one line per kernel with the targets met)."""
    t = TARGETS
    rows = [  # (target, needed, key, format, met?)
        ("complete call, W128 ids", f"≤ {t['fixed_w128_us']:.0f} µs", "fixed_w128_us",
         "{:,.1f} µs", lambda v: v <= t["fixed_w128_us"]),
        ("complete call, original order", f"≤ {t['original_us']:.0f} µs", "original_us",
         "{:,.1f} µs", lambda v: v <= t["original_us"]),
        ("speed-up over the BF16 cluster kernel (best calls)", f"≥ {t['vs_bf16_cluster']}×",
         "vs_bf16_cluster", "{:.2f}×", lambda v: v >= t["vs_bf16_cluster"]),
        ("speed-up over FlashInfer MSA FP8", f"≥ {t['vs_msa']}×", "vs_msa", "{:.2f}×",
         lambda v: v >= t["vs_msa"]),
        ("speed-up over FlashInfer paged decode (BF16 KV, tensor cores)", f"≥ {t['vs_decode']}×",
         "vs_decode", "{:.2f}×", lambda v: v >= t["vs_decode"]),
        ("share of the FP8 dense peak on the C4 work (W128)", f"≥ {100 * t['peak_share']:.0f} %",
         "peak_share", "{:.1%}", lambda v: v >= t["peak_share"]),
        ("Union8 time / Union4 time, original order", f"≤ {t['over_union4']}", "over_union4",
         "{:.2f}", lambda v: v <= t["over_union4"]),
        ("S_net = T0 − T_online at W128", f"> {t['s_net_us']:.0f} µs", "s_net_us", "{:+,.1f} µs",
         lambda v: v > t["s_net_us"]),
        ("NRMS vs float64 on the FP8 cache", f"≤ {100 * t['nrms']:.0f} %", "nrms", "{:.2%}",
         lambda v: v <= t["nrms"]),
    ]
    kernels = {"warp-specialized kernel": _kernel_values(fp8, "union8ws_fp8", True),
               "FP8 cluster kernel": _kernel_values(fp8, "union8_fp8", False)}
    lines = ["| target | needed | " + " | ".join(f"{k} | met?" for k in kernels) + " |",
             "|---|--:|" + "--:|:-:|" * len(kernels)]
    missed = {k: [] for k in kernels}
    for name, need, key, fmt, ok in rows:
        cells = []
        for kernel, values in kernels.items():
            v = values[key]
            if v is None:
                cells += ["not run", "–"]
                continue
            cells += [fmt.format(v), "met" if ok(v) else "**missed**"]
            missed[kernel] += [] if ok(v) else [name]
        lines.append(f"| {name} | {need} | " + " | ".join(cells) + " |")
    for check, label in (("emulation", "kernel vs its CPU emulation (NRMS)"),
                         ("bitwise", "every ordering bitwise identical")):
        cells = [f"{v[check]:.3%}" if check == "emulation" else str(v[check])
                 for v in kernels.values()]
        lines.append(f"| {label} | – | " + " | ".join(f"{c} | –" for c in cells) + " |")
    verdict = "\n".join(f"{k}: {len(rows) - len(m)} of {len(rows)} targets met; missed: "
                        f"{'; '.join(m) or 'none'}" for k, m in missed.items())
    return "\n".join(lines), verdict
