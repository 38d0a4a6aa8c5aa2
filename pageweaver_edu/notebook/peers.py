"""Our FP8 Union8 next to FlashInfer on the same inputs, from the recorded files.

Every ``benchmarks/results/union8_fp8_<preset>[_hH]_<device>[_<commit>].json`` written by
``benchmarks/bench_union8.py --fp8`` with FlashInfer present holds our rows and FlashInfer's rows
of one run: the warp-specialized Union8 (``union8ws_fp8_*``), FlashInfer's Hopper sparse kernel
``msa_sparse_attention`` (``flashinfer_msa_fp8``, Union4 tiles of 4 consecutive queries, no
regroup, FP8 KV) and its paged decode (one request per query, tensor cores, BF16 or FP8 KV).
Ratios are taken only inside one file. Chapters 08 and 11 and the README print this table.
"""

from __future__ import annotations

import math

from ..records import list_records, result_medians
from ..records.files import ROOT

#: The paper's headline: Union8 over FlashInfer, geometric mean, FP8 KV on both sides (§5).
PAPER_SPEEDUP_VS_FLASHINFER = 1.70


def peer_records(root: str = str(ROOT)) -> list[dict]:
    """The FP8 result files that hold FlashInfer rows and our warp-specialized rows.

    Returns
    -------
    list of dict
        Each file's content plus ``path`` (relative to ``root``), sorted by path.
    """
    return [rec for rec in list_records(root, "union8_fp8_*")
            if {"flashinfer_msa_fp8", "union8ws_fp8_fixed_w128"} <= set(result_medians(rec))]


#: (tc_sum, lazy) of a union8ws build -> its name in the table.
BUILD_NAMES = {(False, False): "shipped", (True, False): "tc_sum", (False, True): "lazy, FP32 sums",
               (True, True): "lazy"}


def _build(rec: dict) -> str:
    """Which union8ws build a file timed: ``check["union8ws_build"]`` (``{"tc_sum", "lazy"}``);
    files written before that field name the lazy build (with tensor-core sums) by carrying an
    extra eager copy's check (``union8ws_eager_original``), the others timed the shipped one."""
    check = rec.get("check", {})
    build = check.get("union8ws_build")
    if build is None:
        lazy = "union8ws_eager_original" in check.get("bitwise_identical", {})
        build = {"tc_sum": lazy, "lazy": lazy}
    return BUILD_NAMES[bool(build["tc_sum"]), bool(build["lazy"])]

def peer_row(rec: dict) -> dict:
    """One file as a row: our best union8ws FP8 call, FlashInfer's rows, ratios, NRMS.

    Returns
    -------
    dict
        ``preset``, ``heads``, ``commit``, ``build``, ``ours`` ({ordering: µs}), ``best``
        (µs), ``nrms`` / ``msa_nrms`` (ours / MSA's vs float64 on the FP8 cache), ``msa``,
        ``msa_programs``,
        ``decode_bf16_tc``, ``decode_fp8_tc`` (µs) and ``x_msa``, ``x_decode`` (peer / ours).
    """
    us = result_medians(rec)
    check = rec.get("check", {})
    ours = {k: us[f"union8ws_fp8_{k}"] for k in ("original", "fixed_w128", "online_w128")}
    best = min(ours.values())
    nrms = check.get("union8ws_nrms_vs_float64", check.get("nrms_vs_float64"))
    return {"preset": rec["workload"], "heads": rec.get("kv_heads", 1),
            "commit": rec.get("commit"), "build": _build(rec), "ours": ours, "best": best,
            "nrms": nrms, "msa": us["flashinfer_msa_fp8"],
            "msa_nrms": check.get("flashinfer_msa_fp8_nrms_vs_float64"),
            "msa_programs": us.get("flashinfer_msa_fp8_programs"),
            "decode_bf16_tc": us.get("flashinfer_decode_bf16_tc"),
            "decode_fp8_tc": us.get("flashinfer_decode_fp8_tc"),
            "x_msa": us["flashinfer_msa_fp8"] / best,
            "x_decode": us.get("flashinfer_decode_bf16_tc", math.nan) / best}


def _us(x) -> str:
    return "–" if x is None else f"{x:,.0f}"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.2f} %"


def peer_table(root: str = str(ROOT)) -> str:
    """The Markdown table (one row per file) and the geometric mean over the newest files."""
    rows = [peer_row(r) for r in peer_records(root)]
    lines = ["| preset | KV heads | commit | union8ws build | ours: original / fixed W128 / "
             "online W128 | NRMS | FlashInfer MSA FP8 | its NRMS | × MSA | MSA programs "
             "| decode BF16 TC | × decode | decode FP8 TC |",
             "|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        o = r["ours"]
        lines.append(
            f"| {r['preset']} | {r['heads']} | `{r['commit']}` | {r['build']} | "
            f"{_us(o['original'])} / {_us(o['fixed_w128'])} / {_us(o['online_w128'])} | "
            f"{100 * r['nrms']:.1f} % | {_us(r['msa'])} | {_pct(r['msa_nrms'])} | "
            f"{r['x_msa']:.2f} | "
            f"{_us(r['msa_programs'])} | {_us(r['decode_bf16_tc'])} | {r['x_decode']:.2f} | "
            f"{_us(r['decode_fp8_tc'])} |")
    return "\n".join(lines) + "\n\n" + peer_summary(rows)


def peer_summary(rows: list[dict]) -> str:
    """One paragraph: the geometric mean of × MSA per build beside the paper's 1.70×."""
    parts = []
    for build in sorted({r["build"] for r in rows}):
        xs = [r["x_msa"] for r in rows if r["build"] == build]
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs))
        parts.append(f"{build} build: {gm:.2f}× over {len(xs)} file(s)")
    return ("Geometric mean of FlashInfer MSA time over our best Union8 call (FP8 KV on both "
            "sides, same run): " + "; ".join(parts) + f". The paper reports "
            f"{PAPER_SPEEDUP_VS_FLASHINFER:.2f}× for its Union8 over FlashInfer on its own "
            "captures, FP8 KV on both sides.")
