"""The one-SM warp-specialized kernel next to FlashInfer on the same inputs, from the
recorded files.

Every ``benchmarks/results/union8_fp8_<preset>[_hH]_<device>[_<commit>].json`` written by
``benchmarks/bench_union8.py --fp8`` with FlashInfer present holds our rows and FlashInfer's rows
of one run: the one-SM warp-specialized kernel (``union8ws_fp8_*``), FlashInfer's Hopper sparse
kernel ``msa_sparse_attention`` (``flashinfer_msa_fp8``, Union4 tiles of 4 consecutive queries,
no regroup, FP8 KV) and its paged decode (one request per query, tensor cores, BF16 or FP8 KV).
Ratios are taken only inside one file. Chapters 08 and 11 print the current files (one per
preset, without a commit in the name); the README's table, built by ``tools/results_table.py``,
lists every file with the commit and the build it timed.
"""

from __future__ import annotations

import math
import re

from ..records import device_tag, list_records, record_header, result_medians
from ..records.files import ROOT
from .paper_numbers import PAPER

#: A current file: ``union8_fp8_<preset>[_hH]_<device>.json``, no commit in the name.
CURRENT = re.compile(r"union8_fp8_[^/]+_[a-z]{1,2}\d{2,4}\.json$")


def peer_records(root: str = str(ROOT), every_file: bool = False) -> list[dict]:
    """The FP8 result files that hold FlashInfer rows and the warp-specialized kernel's rows.

    Parameters
    ----------
    root : str
        The checkout.
    every_file : bool
        Also the archived files of earlier commits (``..._h200_<commit>.json``).

    Returns
    -------
    list of dict
        Each file's content plus ``path`` (relative to ``root``), sorted by path.
    """
    return [rec for rec in list_records(root, "union8_fp8_*")
            if {"flashinfer_msa_fp8", "union8ws_fp8_fixed_w128"} <= set(result_medians(rec))
            and (every_file or CURRENT.search(rec["path"]))]


#: The complete calls of a union8ws row (``union8ws_fp8[acc]_<call>``).
CALLS = ("original", "fixed_w128", "online_w128")
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
        ``preset``, ``gpu`` (the device tag, e.g. ``h100``), ``heads``, ``commit``, ``build``,
        ``ours`` ({ordering: µs}), ``best`` (µs), ``nrms`` / ``msa_nrms`` (ours / MSA's vs
        float64 on the FP8 cache), ``msa``, ``msa_programs``, ``decode_bf16_tc``,
        ``decode_fp8_tc`` (µs), ``x_msa``, ``x_decode`` (peer / ours); the accurate mode's best
        call ``accurate`` (µs), its ``accurate_nrms`` and ``x_msa_accurate`` (None where the
        file has no accurate rows).
    """
    us = result_medians(rec)
    check = rec.get("check", {})
    ours = {k: us[f"union8ws_fp8_{k}"] for k in CALLS}
    best = min(ours.values())
    nrms = check.get("union8ws_nrms_vs_float64", check.get("nrms_vs_float64"))
    acc = [us[f"union8ws_fp8acc_{k}"] for k in CALLS if f"union8ws_fp8acc_{k}" in us]
    accurate = min(acc) if acc else None
    return {"preset": rec["workload"], "gpu": device_tag(rec.get("device", "")),
            "heads": rec.get("kv_heads", 1), "accurate": accurate,
            "accurate_nrms": check.get("union8ws_fp8acc_nrms_vs_float64"),
            "x_msa_accurate": None if accurate is None else us["flashinfer_msa_fp8"] / accurate,
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


def peer_table(root: str = str(ROOT), every_file: bool = False) -> str:
    """The Markdown table (one row per file) and the geometric mean of × MSA.

    The chapters' form (``every_file=False``) reads the current files and prints each run's
    header (device, date, driver, CUDA, commit) once above the table; ``every_file=True``
    adds the archived files with a commit and a build column (the README's history).
    """
    rows = [(r, peer_row(r)) for r in peer_records(root, every_file)]
    extra = " commit | build |" if every_file else ""
    lines = [f"| preset | GPU | KV heads |{extra} warp-specialized kernel, µs: original / fixed "
             "W128 / online W128 | NRMS | FlashInfer MSA FP8, µs | its NRMS | × MSA | accurate "
             "mode, best µs | its NRMS | × MSA | MSA programs, µs | decode BF16 TC, µs | "
             "× decode | decode FP8 TC, µs |",
             "|---|---|--:|" + ("---|---|" if every_file else "") + "--:|--:|--:|--:|--:|--:|"
             "--:|--:|--:|--:|--:|--:|"]
    for _, r in rows:
        o = r["ours"]
        cells = f" `{r['commit']}` | {r['build']} |" if every_file else ""
        x_acc = "–" if r["x_msa_accurate"] is None else f"{r['x_msa_accurate']:.2f}"
        lines.append(
            f"| {r['preset']} | {r['gpu']} | {r['heads']} |{cells} "
            f"{_us(o['original'])} / {_us(o['fixed_w128'])} / {_us(o['online_w128'])} | "
            f"{100 * r['nrms']:.1f} % | {_us(r['msa'])} | {_pct(r['msa_nrms'])} | "
            f"{r['x_msa']:.2f} | {_us(r['accurate'])} | {_pct(r['accurate_nrms'])} | {x_acc} | "
            f"{_us(r['msa_programs'])} | {_us(r['decode_bf16_tc'])} | {r['x_decode']:.2f} | "
            f"{_us(r['decode_fp8_tc'])} |")
    head = "" if every_file else "Recorded runs:\n\n" + "\n".join(
        sorted({"* " + record_header(rec).strip() for rec, _ in rows})) + "\n\n"
    return head + "\n".join(lines) + "\n\n" + peer_summary([r for _, r in rows], every_file)


def peer_summary(rows: list[dict], by_build: bool = True) -> str:
    """One paragraph: the geometric mean of × MSA (per build when ``by_build``) beside the
    paper's speed-up over FlashInfer."""
    parts = []
    builds = sorted({r["build"] for r in rows}) if by_build else [None]
    for build in builds:
        xs = [r["x_msa"] for r in rows if build is None or r["build"] == build]
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs))
        parts.append((f"{build} build: " if build else "") + f"{gm:.2f}× over {len(xs)} file(s)")
    return ("Geometric mean of FlashInfer MSA time over the warp-specialized kernel's best "
            "call (FP8 KV on both sides, same run): " + "; ".join(parts) + ". The paper reports "
            f"{PAPER['vs_flashinfer'].text()} for its Union8 over FlashInfer on its own "
            "captures, FP8 KV on both sides.")
