"""Chapter 11's synthetic H200 rows: the recorded result files beside the paper's numbers.

:func:`load_records` reads the files (None where one is not recorded yet); :func:`recorded_claims`
adds the rows they decide, and :func:`more_claims` the paper's later numbers (online-capture
NRMS, service pairings, prompts past the bitmap, B300, the appendix profile) with what this
project has beside each. :func:`offline_figure` and :func:`offline_ranking` set our recorded
Union8 times beside the paper's offline orderings, and :data:`CLAIM_RECORDS` is the live cell
(:func:`summary`: what the files say, beside the paper).
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..core.union_metrics import union_stats
from ..records import record_header, recorded_results, result_medians
from ..workloads import make_preset
from .claims import PaperClaims
from .live import LiveKernel
from .style import style

STEMS = {"cap64k": "union8_cap64k_h200", "cap16k-high-overlap": "union8_cap16k-high-overlap_h200",
         "interleaved-64k": "union8_interleaved-64k_h200", "regroup": "gpu_regroup_h200",
         "fp8": "union8_fp8_cap64k_h200"}
H200 = "synthetic H200"
#: The recorded Union8 row of each offline ordering (W2048 is not recorded).
ORDERING_ROWS = {"original": "union8_original", "identity ids": "union8_original",
                 "random ids": "union8_random_ids", "W512": "union8_fixed_w512", "W2048": None}


def load_records() -> dict:
    """``{key: record or None}`` for :data:`STEMS` (None: not recorded yet)."""
    out = {}
    for key, stem in STEMS.items():
        try:
            out[key] = recorded_results(stem)
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


def recorded_claims(claims: PaperClaims, records: dict, original) -> str:
    """C3h–C22: the rows the recorded files decide and the ones out of reach; ``original`` is
    cap64k's original-order UnionStats. Returns the lines to print."""
    med, rec64 = _medians(records), records["cap64k"] or {}
    t0, tf, ton = (med["cap64k"].get(k) for k in ("union8_original", "union8_fixed_w128",
                                                   "union8_online_w128"))
    if None not in (t0, tf, ton):
        claims.add("C3h", "§3.4 eq. 7", "eq. 7 on our H200 run, cap64k W128 (µs)",
                   "95.96; 37.55; 58.41",
                   f"{t0 - tf:.1f}; {ton - tf:.2f}; {t0 - ton:.1f} (T0 {t0 / 1e3:.2f} ms)", H200)
    g64, g128 = med["regroup"].get("gpu_regroup_w64"), med["regroup"].get("gpu_regroup_w128")
    claims.add("C15", "§5.4", "grouping alone, W64; W128 (µs)", "19.3-19.5; 34.6-34.9",
               f"{g64:.1f}; {g128:.1f} (cap64k)" if g64 and g128 else "pending (H200)",
               H200 if g64 and g128 else "not here")
    r_rand, r_512 = med["cap64k"].get("union8_random_ids"), med["cap64k"].get("union8_fixed_w512")
    if t0 and r_rand and r_512:
        claims.add("C6h", "App. A", "offline ids on H200, relative to original: random; W512",
                   "1.336; 0.900", f"{r_rand / t0:.3f}; {r_512 / t0:.3f} (cap64k)", H200)
    u4 = med["cap64k"].get("union4_original")
    claims.add("C10h", "§5.2", "Union8 speed-up over Union4, same arithmetic", "1.075x",
               f"{u4 / t0:.3f}x on cap64k ({'Union4' if u4 < t0 else 'Union8'} faster in this "
               "BF16 kernel)" if u4 and t0 else "pending (H200)", H200 if u4 and t0 else "not here")
    summ = rec64.get("summary", {})
    claims.add("C16", "§5.2", "Union8 vs FlashInfer; vs native SM90 (geo. mean, 6 captures)",
               "1.701x; 2.662x",
               (f"other baselines: vs gather {summ['speedup_vs_gather']}x, vs flex_attention "
                f"{summ['speedup_vs_flex']}x (cap64k); FlashInfer/native not run")
               if {"speedup_vs_gather", "speedup_vs_flex"} <= set(summ)
               else "needs FlashInfer and the native kernel", "not here")
    chk = rec64.get("check", {})
    chk8 = (records.get("fp8") or {}).get("check", {})
    ours17 = [f"FP8 Union8 {100 * chk8['nrms_vs_float64']:.2f}% ({chk8.get('checked_rows', '?')} "
              "sampled rows, chapter 12)" if "nrms_vs_float64" in chk8 else "",
              f"BF16 Union8 {100 * chk['nrms_vs_float64']:.3f}%" if "nrms_vs_float64" in chk
              else ""]
    claims.add("C17", "Table 2", "NRMS vs a Triton reference: Union8; FlashInfer; native",
               "2.246-3.967%; 2.288-4.077%; 6.258-9.120%",
               "; ".join(x for x in ours17 if x) + " vs float64 on cap64k; FlashInfer and "
               "native not run" if chk8 or chk else "needs the kernels",
               H200 if chk8 or chk else "not here")
    on16 = [med["cap16k-high-overlap"].get(k) for k in ("union8_original", "union8_online_w128")]
    if t0 and ton and None not in on16:
        claims.add("C18h", "§5.4", "online W128 latency: 64K captures; 16K control",
                   "-3.26 ... -7.66%; -4.11%", f"cap64k {100 * (ton - t0) / t0:+.2f}%; "
                   f"cap16k-high-overlap {100 * (on16[1] - on16[0]) / on16[0]:+.2f}%", H200)
    bw = chk.get("bitwise_identical", {})
    claims.add("C19", "§5.6", "regrouped Union8 output bitwise identical to original order",
               "identical on 6 captures",
               f"{sum(bw.values())} of {len(bw)} orderings identical (cap64k)"
               if bw else "needs the kernel", H200 if bw else "not here")
    claims.add("C18", "§5.4", "online W128 on five model captures; 16K control",
               "-3.26 ... -7.66%; -4.11%", "needs model captures", "not here")
    rho16 = union_stats(make_preset("cap16k-high-overlap").topk).rho
    claims.add("C20", "§5.1", "development survey: per-source median reuse", "3.85-4.54",
               f"needs model data; our presets: cap64k rho {original.rho:.2f}, cap16k "
               f"{rho16:.2f} (synthetic)", "not here")
    claims.add("C21", "§5.5", "service: vs native; regroup increment 32K/64K; 8K",
               "+7.88-14.36%; +0.47-0.73%; -0.56/-1.31%", "needs the whole model served on 8 GPUs",
               "not here")
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
    nrms, rows = chk8.get("nrms_vs_float64"), chk8.get("checked_rows")
    same = all(chk8.get("bitwise_identical", {}).values()) and "online_w128" in chk8.get(
        "bitwise_identical", {})
    claims.add("C23", "§5", "NRMS of the online path on a model capture (sampled rows)",
               "2.66-4.51% (33 rows)",
               (f"FP8 Union8 {100 * nrms:.2f}% vs float64 on {rows} sampled rows of cap64k; "
                f"online W128 output {'bitwise the same' if same else 'NOT identical'}; inside "
                f"the paper's range: {2.66 <= 100 * nrms <= 4.51}") if nrms is not None
               else "pending (H200)", H200 if nrms is not None else "not here")
    pairs, outlier, band = (0.630, 0.666, 0.641), 32.36, (0.47, 0.73)
    claims.add("C24", "§5.5", "service: three paired runs of the regroup's increment; outlier",
               "+0.630/+0.666/+0.641%; +32.36%",
               f"needs the served model; the three pairs lie "
               f"{'inside' if all(band[0] <= x <= band[1] for x in pairs) else 'outside'} C21's "
               f"+{band[0]}-{band[1]}%, the outlier is {outlier / max(pairs):.0f}x the largest",
               "not here")
    limit = 512 * 128
    claims.add("C25", "§5", "two of five 64K prompts cross the 512-page bitmap", "2 of 5",
               f"needs the prompts; a context over {limit:,} tokens (P=128) keeps the identity "
               f"order: L43/r1's 64,424 tokens {'stay below' if 64_424 <= limit else 'cross'} "
               "it, 640 pages fall back (C14)", "not here")
    claims.add("C26", "§5.7", "B300 port (P=64): speed ratios; two sets of three times; NRMS",
               "1.068-1.156x; 1.497/1.295/0.592 ms; 0.475/0.500/0.547 ms; 1.55e-5",
               "needs a B300: our kernels are written for SM90 (wgmma, H200)", "not here")
    claims.add("C27", "App.", "producer kernel profile: registers; occupancy; L2 hit rate",
               "255; 12.4%; 96.5%",
               "another kernel: our union8_fp8 under Nsight Compute (h200_verification_"
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
    fig.add_trace(go.Bar(x=names, y=[offline[n][0] / 1.371 for n in names],
                         name="paper: execution time / original (H200, L43/r1)",
                         text=[f"{offline[n][0] / 1.371:.3f}" for n in names],
                         textposition="outside"))
    fig.add_trace(go.Bar(x=names, y=[offline[n][1].union_visits / original.union_visits
                                     for n in names],
                         name="ours: union visits / original (cap64k, synthetic)",
                         text=[f"{offline[n][1].union_visits / original.union_visits:.3f}"
                               for n in names], textposition="outside", marker_pattern_shape="/"))
    ours = _ours_times(records)
    if ours:
        fig.add_trace(go.Bar(x=names, y=[ours.get(n) for n in names],
                             name=f"ours: Union8 time / original (H200, cap64k, recorded "
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
        + " Time / original: " + "; ".join(f"{n} {ours[n]:.3f} (paper {offline[n][0] / 1.371:.3f})"
                                           for n in runs if n != "original")])


def summary(records: dict) -> str:
    """What the recorded files say beside the paper (grouping alone, C_online, Union4, T0,
    S_net, bitwise identity)."""
    med = _medians(records)
    m = med["cap64k"]
    t0, tf, ton = (m.get(k) for k in ("union8_original", "union8_fixed_w128",
                                      "union8_online_w128"))
    g64, g128 = med["regroup"].get("gpu_regroup_w64"), med["regroup"].get("gpu_regroup_w128")
    lines = ["\nFrom these files, beside the paper:"]
    if g64 and g128:
        lines.append(f"* Grouping alone (gpu_regroup_h200.json): W64 {g64:.1f} µs, "
                     f"{g64 / 19.3:.2f}× the paper's 19.3 µs; W128 {g128:.1f} µs, "
                     f"{g128 / 34.6:.2f}× the paper's 34.6 µs.")
    on_rg, u4 = m.get("gpu_regroup_w128"), m.get("union4_original")
    if on_rg and ton and tf:
        lines.append(f"* The online W128 path of union8_cap64k_h200.json spends {ton - tf:.1f} µs "
                     f"(C_online) and its regroup launch alone {on_rg:.1f} µs; the paper: 37.55 "
                     "and 34.65 µs.")
    if u4 and t0:
        lines.append(f"* Union8 vs Union4 on cap64k: {'Union4' if u4 < t0 else 'Union8'} is "
                     f"faster (Union8 {u4 / t0:.3f}× Union4's speed; the paper: Union8 1.075× "
                     "faster).")
    if t0:
        lines.append(f"* Original-order call T0 on cap64k: {t0 / 1e3:.3f} ms, "
                     f"{t0 / 1e3 / 1.36633:.2f}× the paper's 1.366 ms on L43/r1 (BF16 kernel on "
                     "a synthetic input vs FP8 on a capture).")
    if t0 and ton:
        lines.append(f"* Online W128 on cap64k: S_net {t0 - ton:+.1f} µs "
                     f"({'a gain' if ton < t0 else 'a loss'}; the paper: +58.41 µs on L43/r1).")
    bw = (records["cap64k"] or {}).get("check", {}).get("bitwise_identical", {})
    if bw:
        lines.append(f"* Regrouped outputs bitwise identical to the original order: "
                     f"{sum(bw.values())} of {len(bw)} orderings (cap64k).")
    return "\n".join(lines)


def _claims_recorded(records, **_) -> dict:
    print(summary({key: records.get(stem) for key, stem in STEMS.items()}))
    return {}


#: Chapter 11: the synthetic H200 rows come from files that benchmarks/bench_union8.py and
#: bench_gpu_regroup.py record on an H200; re-running them there refreshes the rows.
CLAIM_RECORDS = LiveKernel("the recorded synthetic H200 rows", union_stats,
                           tuple(STEMS.values()), _claims_recorded)
