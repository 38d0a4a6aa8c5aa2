"""Chapter 11's synthetic H200 rows: the recorded result files beside the paper's numbers.

The kernel rows read the FP8 files, whose one run times the one-SM warp-specialized kernel
(``union8ws_fp8_*``, our fastest), the FP8 and BF16 cluster kernels, Union4 and FlashInfer on
the same inputs; the offline orderings read the BF16 cluster kernel's file, the only one that
times random ids and W512. The paper's numbers come from :mod:`.paper_numbers`.

:func:`load_records` reads the files (None where one is not recorded yet); :func:`recorded_claims`
adds the rows they decide, and :func:`more_claims` the paper's later numbers (online-capture
NRMS, service pairings, prompts past the bitmap, B300, the appendix profile) with what this
project has beside each. :func:`offline_figure` and :func:`offline_ranking` set our recorded
Union8 times beside the paper's offline orderings, and :data:`CLAIM_RECORDS` is the live cell
(:func:`summary`: what the files say, beside the paper).
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from ..core.union_metrics import union_stats
from ..records import record_header, recorded_results, result_medians
from ..workloads import make_preset
from .claims import PaperClaims
from .live import LiveKernel
from .paper_numbers import PAPER, paper_text
from .peers import peer_row
from .style import style

STEMS = {"cap64k": "union8_cap64k_h200", "regroup": "gpu_regroup_h200",
         "fp8": "union8_fp8_cap64k_h200", "fp8_16k": "union8_fp8_cap16k-high-overlap_h200",
         "fp8_h8": "union8_fp8_cap64k_h8_h200",
         "fp8_interleaved": "union8_fp8_interleaved-64k_h200"}
#: The FP8 files of one run that hold FlashInfer's rows beside ours (C16, C17).
PEER_KEYS = ("fp8_16k", "fp8", "fp8_h8", "fp8_interleaved")
H200 = "synthetic H200"
#: The recorded Union8 row of each offline ordering (W2048 is not recorded).
ORDERING_ROWS = {"original": "union8_original", "identity ids": "union8_original",
                 "random ids": "union8_random_ids", "W512": "union8_fixed_w512", "W2048": None}


def load_records() -> dict:
    """``{key: record or None}`` for :data:`STEMS` (None: not recorded yet): each stem's own
    file, so that every row set beside the paper's H200 numbers is an H200 row."""
    out = {}
    for key, stem in STEMS.items():
        try:
            out[key] = recorded_results(stem, any_device=False)
        except FileNotFoundError:
            out[key] = None
    return out


def _medians(records: dict) -> dict:
    return {key: result_medians(rec) if rec else {} for key, rec in records.items()}


def headers(records: dict, indent: str = "  ") -> str:
    """Each file's name and header, or ``not recorded``."""
    return "\n".join(f"{indent}{stem}.json" + (f"\n{indent}{record_header(records[key])}"
                                               if records[key] else ": not recorded")
                     for key, stem in STEMS.items())


def _ws_calls(med: dict) -> tuple:
    """(T0, T_fixed W128, T_online W128) of the warp-specialized kernel in one FP8 file, µs."""
    return tuple(med.get(f"union8ws_fp8_{k}") for k in ("original", "fixed_w128", "online_w128"))


def _range(values, scale: float = 1.0, digits: int = 2) -> str:
    lo, hi = min(values) * scale, max(values) * scale
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else \
        f"{lo:.{digits}f}-{hi:.{digits}f}"


def recorded_claims(claims: PaperClaims, records: dict, original) -> str:
    """C3h–C22: the rows the recorded files decide and the ones out of reach; ``original`` is
    cap64k's original-order UnionStats. Returns the lines to print."""
    med = _medians(records)
    ws, fp8 = med["fp8"], records.get("fp8") or {}
    t0, tf, ton = _ws_calls(ws)
    if None not in (t0, tf, ton):
        claims.add("C3h", "§3.4 eq. 7", "eq. 7, warp-specialized kernel, cap64k W128 (µs)",
                   "; ".join(PAPER[k].number_text() for k in ("s_exec", "c_online", "s_net")),
                   f"{t0 - tf:.1f}; {ton - tf:.2f}; {t0 - ton:.1f} (T0 {t0 / 1e3:.3f} ms)", H200)
    g64, g128 = med["regroup"].get("gpu_regroup_w64"), med["regroup"].get("gpu_regroup_w128")
    claims.add("C15", "§5.4", "grouping alone, W64; W128 (µs)",
               f"{PAPER['grouping_w64'].number_text()}; {PAPER['grouping_w128'].number_text()}",
               f"{g64:.1f}; {g128:.1f} (cap64k)" if g64 and g128 else "pending (H200)",
               H200 if g64 and g128 else "not here")
    b16 = med["cap64k"]
    r0, r_rand, r_512 = (b16.get(f"union8_{k}") for k in ("original", "random_ids", "fixed_w512"))
    if r0 and r_rand and r_512:
        base = PAPER["offline_original"].value
        claims.add("C6h", "App. A", "offline ids on H200, relative to original: random; W512",
                   f"{PAPER['offline_random'].value / base:.3f}; "
                   f"{PAPER['offline_w512'].value / base:.3f}",
                   f"{r_rand / r0:.3f}; {r_512 / r0:.3f} (BF16 cluster kernel, cap64k)", H200)
    u4 = ws.get("union4_fp8_original")
    c8 = ws.get("union8_fp8_original")
    claims.add("C10h", "§5.2", "Union8 speed-up over Union4, FP8, original order",
               paper_text("vs_union4"),
               f"warp-specialized kernel {u4 / t0:.2f}x, FP8 cluster kernel {u4 / c8:.2f}x "
               "(cap64k)" if u4 and t0 and c8 else "pending (H200)",
               H200 if u4 and t0 and c8 else "not here")
    peers = [peer_row(records[k]) for k in PEER_KEYS if records.get(k) and {
        "flashinfer_msa_fp8", "union8ws_fp8_fixed_w128"} <= set(med[k])]
    paper16 = f"{paper_text('vs_flashinfer')}; {paper_text('vs_native')}"
    if peers:
        xs = [r["x_msa"] for r in peers]
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs))
        claims.add("C16", "§5.2", "Union8 vs FlashInfer; vs native SM90 (geo. mean)", paper16,
                   f"warp-specialized kernel vs FlashInfer MSA FP8: {gm:.2f}x over "
                   f"{len(xs)} presets ({_range(xs)}x); native SM90 kernel not run", H200)
    else:
        claims.add("C16", "§5.2", "Union8 vs FlashInfer; vs native SM90 (geo. mean)", paper16,
                   "needs FlashInfer and the native kernel", "not here")
    ws_nrms = [r["nrms"] for r in peers] or [
        x for x in [fp8.get("check", {}).get("union8ws_nrms_vs_float64")] if x is not None]
    msa_nrms = [r["msa_nrms"] for r in peers if r["msa_nrms"] is not None]
    ours17 = ([f"warp-specialized kernel {_range(ws_nrms, 100)}%"] if ws_nrms else []) + (
        [f"FlashInfer MSA {_range(msa_nrms, 100)}% (keeps Q, P in BF16)"] if msa_nrms else [])
    claims.add("C17", "Table 2", "NRMS: Union8; FlashInfer; native (paper: vs Triton)",
               "; ".join(PAPER[k].number_text() + "%" for k in (
                   "nrms_union8", "nrms_flashinfer", "nrms_native")),
               "vs float64 on the FP8 cache: " + "; ".join(ours17) + "; native not run"
               if ours17 else "needs the kernels", H200 if ours17 else "not here")
    w16 = _ws_calls(med["fp8_16k"])
    if t0 and ton and w16[0] and w16[2]:
        claims.add("C18h", "§5.4", "online W128 latency: 64K captures; 16K control",
                   f"{paper_text('online_w128_change')}; {paper_text('online_16k_change')}",
                   f"warp-specialized kernel: cap64k {100 * (ton - t0) / t0:+.2f}%; "
                   f"cap16k-high-overlap {100 * (w16[2] - w16[0]) / w16[0]:+.2f}%", H200)
    bw = fp8.get("check", {}).get("bitwise_identical", {})
    claims.add("C19", "§5.6", "regrouped Union8 output bitwise identical to original order",
               "identical on 6 captures",
               f"{sum(bw.values())} of {len(bw)} orderings and kernels identical (cap64k)"
               if bw else "needs the kernel", H200 if bw else "not here")
    claims.add("C18", "§5.4", "online W128 on five model captures; 16K control",
               f"{paper_text('online_w128_change')}; {paper_text('online_16k_change')}",
               "needs model captures", "not here")
    rho16 = union_stats(make_preset("cap16k-high-overlap").topk).rho
    claims.add("C20", "§5.1", "development survey: per-source median reuse",
               paper_text("reuse_survey"),
               f"needs model data; our presets: cap64k rho {original.rho:.2f}, cap16k "
               f"{rho16:.2f} (synthetic)", "not here")
    claims.add("C21", "§5.5", "service: vs native; regroup increment 32K/64K; 8K",
               "; ".join(paper_text(k) for k in ("service_vs_native", "service_increment",
                                                 "service_8k")),
               "needs the whole model served on 8 GPUs", "not here")
    claims.add("C22", "§5.7", "B300: native faster than both Union8 arms on all 8 inputs",
               "8 of 8", "needs a B300", "not here")
    more_claims(claims, records)
    first = next(i for i, r in enumerate(claims.rows) if r[0] in ("C3h", "C15"))
    return "\n".join(["synthetic H200 rows read from:", headers(records)] + [
        f"{r[0]:5}{r[5]:15}{r[2]}\n{'':20}paper {r[3]}\n{'':20}ours  {r[4]}"
        for r in claims.rows[first:]])


def more_claims(claims: PaperClaims, records: dict) -> None:
    """C23–C27: the online-capture NRMS, the service pairings, the prompts past the bitmap, the
    B300 port and the appendix profile, each with what this project has beside it."""
    chk8 = (records.get("fp8") or {}).get("check", {})
    nrms, rows = chk8.get("union8ws_nrms_vs_float64"), chk8.get("checked_rows")
    same = chk8.get("bitwise_identical", {}).get("union8ws_online_w128")
    band = PAPER["nrms_online"]
    claims.add("C23", "§5", "NRMS of the online path on a model capture (sampled rows)",
               paper_text("nrms_online") + " (33 rows)",
               (f"warp-specialized kernel {100 * nrms:.2f}% vs float64 on {rows} sampled rows of "
                f"cap64k; online W128 output {'bitwise the same' if same else 'NOT identical'}; "
                f"inside the paper's range: {band.low <= 100 * nrms <= band.high}")
               if nrms is not None else "pending (H200)", H200 if nrms is not None else "not here")
    pairs, outlier = PAPER["service_pairs"], PAPER["service_outlier"]
    inc = PAPER["service_increment"]
    inside = all(inc.low <= x <= inc.high for x in pairs.values)
    claims.add("C24", "§5.5", "service: three paired runs of the regroup's increment; outlier",
               f"{paper_text('service_pairs')}; {paper_text('service_outlier')}",
               f"needs the served model; the three pairs lie {'inside' if inside else 'outside'} "
               f"C21's {paper_text('service_increment')}, the outlier is "
               f"{outlier.value / pairs.high:.0f}x the largest", "not here")
    limit, context = 512 * 128, int(PAPER["l43_context"].value)
    claims.add("C25", "§5", "two of five 64K prompts cross the 512-page bitmap", "2 of 5",
               f"needs the prompts; a context over {limit:,} tokens (P=128) keeps the identity "
               f"order: L43/r1's {context:,} tokens "
               f"{'stay below' if context <= limit else 'cross'} it, 640 pages fall back (C14)",
               "not here")
    claims.add("C26", "§5.7", "B300 port (P=64): speed ratios; two sets of three times; NRMS",
               "; ".join(paper_text(k) for k in ("b300_ratios", "b300_times_a", "b300_times_b"))
               + f"; {PAPER['b300_nrms'].value:.2e}",
               "needs a B300: our kernels are written for SM90 (wgmma, H200)", "not here")
    claims.add("C27", "App.", "producer kernel profile: registers; occupancy; L2 hit rate",
               "; ".join(paper_text(k) for k in ("profile_registers", "profile_occupancy",
                                                 "profile_l2_hit")),
               "another kernel: our FP8 cluster kernel under Nsight Compute (h200_verification_"
               "2026-12-01.md) 205; 12.4%; 94-98%", H200)


def _ours_times(records: dict) -> dict:
    m64 = _medians(records)["cap64k"]
    return {n: m64[row] / m64["union8_original"] for n, row in ORDERING_ROWS.items()
            if row in m64 and "union8_original" in m64}


def offline_figure(offline: dict, records: dict, original) -> go.Figure:
    """The paper's offline execution times, our union visits and our recorded Union8 times,
    each relative to the original order (``offline``: :func:`.claims.offline_orderings`)."""
    names = list(offline)
    fig = go.Figure()
    base = PAPER["offline_original"].value
    fig.add_trace(go.Bar(x=names, y=[offline[n][0] / base for n in names],
                         name="paper: execution time / original (H200, L43/r1)",
                         text=[f"{offline[n][0] / base:.3f}" for n in names],
                         textposition="outside"))
    fig.add_trace(go.Bar(x=names, y=[offline[n][1].union_visits / original.union_visits
                                     for n in names],
                         name="ours: union visits / original (cap64k, synthetic)",
                         text=[f"{offline[n][1].union_visits / original.union_visits:.3f}"
                               for n in names], textposition="outside", marker_pattern_shape="/"))
    ours = _ours_times(records)
    if ours:
        fig.add_trace(go.Bar(x=names, y=[ours.get(n) for n in names],
                             name=f"ours: BF16 cluster kernel time / original (H200, cap64k, "
                                  "recorded "
                                  f"{records['cap64k'].get('date', '?')[:10]})",
                             text=[f"{ours[n]:.3f}" if n in ours else "" for n in names],
                             textposition="outside", marker_pattern_shape="."))
    style(fig, "Offline orderings: the paper's time beside our union visits and H200 times",
          "ordering of query ids", "ratio to the original order (1 = same)", height=460,
          legend_rows=3)
    fig.update_layout(barmode="group")
    return fig


def offline_ranking(offline: dict, records: dict) -> str:
    """Whether our recorded H200 times rank the offline orderings as the paper's do."""
    ours = _ours_times(records)
    if not ours:
        return "No recorded cap64k Union8 file with these rows yet: the H200 ranking is pending."
    runs = [n for n in ("original", "random ids", "W512") if n in ours]  # W2048 not recorded
    paper_rank = sorted(runs, key=lambda n: offline[n][0])
    our_rank = sorted(runs, key=ours.get)
    same = paper_rank == our_rank
    return "\n".join([
        f"{STEMS['cap64k']}.json\n{record_header(records['cap64k'])}",
        "paper, fastest first: " + " < ".join(paper_rank),
        "ours,  fastest first: " + " < ".join(our_rank),
        "Our recorded H200 times rank these orderings "
        + ("the same way as the paper's." if same else "differently from the paper's.")
        + " Time / original: " + "; ".join(
            f"{n} {ours[n]:.3f} (paper {offline[n][0] / PAPER['offline_original'].value:.3f})"
            for n in runs if n != "original")])


def summary(records: dict) -> str:
    """What the recorded files say beside the paper: grouping alone, the warp-specialized
    kernel's eq. 7 and its speed against Union4 and FlashInfer, bitwise identity."""
    med = _medians(records)
    ws = med["fp8"]
    t0, tf, ton = _ws_calls(ws)
    g64, g128 = med["regroup"].get("gpu_regroup_w64"), med["regroup"].get("gpu_regroup_w128")
    lines = ["\nFrom these files, beside the paper:"]
    if g64 and g128:
        w64, w128 = PAPER["grouping_w64"], PAPER["grouping_w128"]
        lines.append(f"* Grouping alone ({STEMS['regroup']}.json): W64 {g64:.1f} µs "
                     f"against the paper's {w64.text()} ({g64 / w64.high:.2f}-"
                     f"{g64 / w64.low:.2f}×); W128 {g128:.1f} µs against {w128.text()} "
                     f"({g128 / w128.high:.2f}-{g128 / w128.low:.2f}×).")
    if t0 and tf and ton:
        lines.append(f"* Eq. 7 for the warp-specialized kernel on cap64k W128 "
                     f"({STEMS['fp8']}.json): S_exec {t0 - tf:.1f}, C_online "
                     f"{ton - tf:.1f}, S_net {t0 - ton:+.1f} µs; the paper on L43/r1: "
                     f"{PAPER['s_exec'].text()}, {PAPER['c_online'].text()}, "
                     f"+{PAPER['s_net'].text()}. T0 {t0 / 1e3:.3f} ms against the paper's "
                     f"{PAPER['t0'].text()} (our synthetic input, not its capture).")
    u4 = ws.get("union4_fp8_original")
    if u4 and t0:
        lines.append(f"* Union8 vs Union4 (FP8, original order): the warp-specialized kernel is "
                     f"{u4 / t0:.2f}× faster than Union4; the paper: {paper_text('vs_union4')}.")
    bw = (records["fp8"] or {}).get("check", {}).get("bitwise_identical", {})
    if bw:
        lines.append(f"* Regrouped outputs bitwise identical to the original order: "
                     f"{sum(bw.values())} of {len(bw)} orderings and kernels (cap64k).")
    return "\n".join(lines)


def _claims_recorded(records, **_) -> dict:
    print(summary({key: records.get(stem) for key, stem in STEMS.items()}))
    return {}


#: Chapter 11: the synthetic H200 rows come from files that benchmarks/bench_union8.py and
#: bench_gpu_regroup.py record on an H200; re-running them there refreshes the rows.
CLAIM_RECORDS = LiveKernel("the recorded synthetic H200 rows", union_stats,
                           tuple(STEMS.values()), _claims_recorded, any_device=False)
