"""Chapter 12's build-up of the one-SM warp-specialized kernel and chapter 07's cost of the
FP8 cluster kernel's lockstep, read from the recorded step table
(``benchmarks/results/union8ws_steps_cap64k_<device>.json``, the newest on any device, written
by ``benchmarks/bench_union8ws_steps.py``: every row timed in one run; rows of no step here,
such as a build option timed in the same run, are left out), and the A/B runs of the page step
that followed (``union8ws_ab_<label>_<preset>_<device>.json``, ``bench_union8ws_ab.py``)."""

from __future__ import annotations

from ..records import record_header, recorded_results, result_medians

STEM = "union8ws_steps_cap64k_h200"  # the newest of that result on any device (records)
#: Step name -> what it adds, in the order of the build-up (the build options the same run
#: timed are compared in benchmarks/bench_union8ws_notes.md, not in the chapter).
STEPS = {
    "cluster": "the FP8 cluster kernel: two CTAs on two SMs in lockstep through two slots each",
    "ws_serial_4stages": "one SM per group: a loader warp and two consumer warpgroups share a "
                         "ring of 4 slots; QK, softmax, PV one after the other",
    "ws_serial_6stages": "the ring grows to 6 slots",
    "ws_overlap_6stages": "intra-warpgroup overlap: next page's QK and this page's PV in "
                          "flight during the softmax (the warp-specialized kernel)",
    "ws_overlap_6stages_trim": "the same step with warp-uniform pages, and no P written on a "
                               "page the warp's query does not see (timed beside it in one "
                               "run, then shipped)",
    "ws_ablate_no_softmax": "ablation of the warp-specialized kernel: no softmax step",
    "ws_ablate_no_mma": "the same: no products",
    "ws_ablate_ring_only": "the same: the ring of copies alone",
    "ws_ablate_no_copies": "the same: all the work, but no page copied into the ring",
}

#: The steps of the build-up itself (each compared with the one before it).
BUILD_UP = ("cluster", "ws_serial_4stages", "ws_serial_6stages", "ws_overlap_6stages",
            "ws_overlap_6stages_trim")


def step_table(record: dict | None = None) -> str:
    """Markdown table of the recorded steps: µs for the original and the W128 order, and each
    step's speed-up over the one before it (W128).

    Parameters
    ----------
    record : dict, optional
        A loaded step file; default the recorded ``cap64k`` one.
    """
    rec = recorded_results(STEM) if record is None else record
    us = result_medians(rec)
    lines = ["| step | original order, µs | W128, µs | × previous (W128) |", "|---|--:|--:|--:|"]
    prev = None
    for name, what in STEPS.items():
        if f"{name}_w128" not in us:
            continue
        w128 = us[f"{name}_w128"]
        gain = "–"
        if name in BUILD_UP:  # options and ablations get no ratio
            gain = "–" if prev is None else f"{prev / w128:.2f}"
            prev = w128
        lines.append(f"| {what} | {us[f'{name}_original']:,.0f} | {w128:,.0f} | {gain} |")
    return "\n".join(lines)


#: Ablation -> what the build keeps (chapter 07's lockstep table), in the table's order.
ABLATION_ROWS = {
    "": "everything (the kernel as it runs)",
    "ring_only": "the slot protocol and the page copies only (no products, no softmax)",
    "no_softmax": "+ the products (P = 0: no softmax step)",
    "no_mma": "+ the softmax step (no products: S constant)",
    "every_page": "everything, every warp working on every page of U_G",
}


def lockstep_table(record: dict | None = None) -> str:
    """Markdown table of the FP8 cluster kernel's ablations beside the warp-specialized
    kernel's: µs for the cluster kernel (original and W128 order), the Union4 kernel (original)
    and the warp-specialized kernel (W128).

    Parameters
    ----------
    record : dict, optional
        A loaded step file; default the recorded ``cap64k`` one.
    """
    us = result_medians(recorded_results(STEM) if record is None else record)
    lines = ["| build keeps | FP8 cluster kernel, original, µs | FP8 cluster kernel, W128, µs | "
             "Union4 kernel, original, µs | warp-specialized kernel, W128, µs |",
             "|---|--:|--:|--:|--:|"]
    for ab, what in ABLATION_ROWS.items():
        sfx = f"_{ab}" if ab else ""
        ws = f"ws_ablate{sfx}_w128" if ab else "ws_overlap_6stages_w128"  # STEPS' names
        one_sm = f"{us[ws]:,.0f}" if ws in us else "–"  # (no every-page build of it)
        lines.append(f"| {what} | {us[f'cluster{sfx}_original']:,.0f} | "
                     f"{us[f'cluster{sfx}_w128']:,.0f} | "
                     f"{us[f'union4_cluster{sfx}_original']:,.0f} | {one_sm} |")
    return "\n".join(lines)


def step_record_header() -> str:
    """Where the step table comes from (device, date, commit), printed from the file."""
    rec = recorded_results(STEM)
    return f"benchmarks/results/{rec['file']}:\n{record_header(rec)}"


#: The claim order's variants (``union8ws_ab_claim_order_<preset>_<device>``).
CLAIM_ORDER_STEPS = {
    "plan_order": ("fast mode, groups claimed in the plan's order", None),
    "largest_first": ("fast mode, the groups with the most pages claimed first (shipped)",
                      "plan_order"),
    "acc_plan_order": ("accurate mode, groups claimed in the plan's order", None),
    "acc_largest_first": ("accurate mode, the groups with the most pages first (shipped)",
                          "acc_plan_order"),
}
#: The A/B runs of the page step after the build-up (``benchmarks/bench_union8ws_ab.py``), in
#: the order they were made: file stem (the newest of it on any device) -> variant -> (what it
#: is, the variant of the same run it is compared with; None for a baseline).
AB_RUNS = {
    "union8ws_ab_acc_uniform_f16res_cap64k_h100": {
        "base": ("accurate mode as first built: Q and P as two E4M3 parts each", None),
        "uniform": ("+ pages and the Q tile's address read warp-uniform (descriptors in "
                    "uniform registers)", "base"),
        "uniform_f16res": ("+ the low parts' residual taken in FP16 pairs (fewer conversions "
                           "per split)", "base"),
    },
    "union8ws_ab_pair_stride_cap64k_h100": {
        "one_query": ("fast mode, one query per warp (a warp holds its query's 16 heads)", None),
        "pairs01": ("paired rows: each query's heads on two warps, 8 each; member positions "
                    "i and i + 1 share a warp pair", "one_query"),
        "pairs02": ("paired rows, member positions i and i + 2 sharing a warp pair (shipped)",
                    "one_query"),
    },
    "union8ws_ab_acc_pairs_cap64k_h100": {
        "acc_one_query": ("accurate mode, one query per warp", None),
        "acc_pairs01": ("accurate mode, paired rows, positions i and i + 1", "acc_one_query"),
        "acc_pairs02": ("accurate mode, paired rows, positions i and i + 2 (shipped)",
                        "acc_one_query"),
    },
    **{f"union8ws_ab_claim_order_{preset}_h100": CLAIM_ORDER_STEPS
       for preset in ("cap64k", "beyond-capacity", "cap16k-high-overlap")},
}
#: A/B runs of ideas that lost or tied (not shipped), in the form of :data:`AB_RUNS`.
NOT_KEPT_RUNS = {
    "union8ws_ab_walk_ahead_cap64k_h100": {
        "after": ("fast mode, the walk to the next working stage after the step (the shipped "
                  "schedule)", None),
        "ahead": ("the walk run while the step's products run, not waiting on a stage that "
                  "has not landed", "after"),
        "ahead_wait": ("the same, waiting there for the stage", "after"),
    },
    "union8ws_ab_acc_walk_ahead_cap64k_h100": {
        "after": ("accurate mode, the walk after the step (the shipped schedule)", None),
        "ahead": ("the walk run while the step's products run", "after"),
    },
    "union8ws_ab_balance_cap64k_h100": {
        "base": ("fast mode, a group's queries 0..3 on consumer 0, 4..7 on consumer 1 "
                 "(the shipped split)", None),
        "balance": ("the split of the eight queries whose busier consumer has the fewest "
                    "pages", "base"),
    },
    "union8ws_ab_acc_balance_cap64k_h100": {
        "base": ("accurate mode, queries 0..3 and 4..7 (the shipped split)", None),
        "balance": ("the balanced split", "base"),
    },
}
#: The Nsight Compute record of where the step's warps wait (benchmarks/ncu_step_phases.py).
PHASES_STEM = "union8ws_ncu_phases_cap64k_h100"


def ab_table(stem: str, record: dict | None = None) -> tuple[str, str]:
    """(where it comes from, Markdown table) of one recorded A/B run: attention
    kernel alone (median of the round medians) in both orders, × the row's baseline in the same
    run (W128), NRMS against float64 on the FP8 cache, and whether the output is bitwise the
    run's first variant's.

    Parameters
    ----------
    stem : str
        A key of :data:`AB_RUNS` or :data:`NOT_KEPT_RUNS`.
    record : dict, optional
        A loaded A/B file; default the recorded one of ``stem``.
    """
    rec = recorded_results(stem) if record is None else record
    steps = {**AB_RUNS, **NOT_KEPT_RUNS}[stem]
    us, check = result_medians(rec), rec["check"]
    lines = [f"| {rec['workload']} | original order, µs | W128, µs | × baseline (W128) | NRMS | "
             "bits of the first row |", "|---|--:|--:|--:|--:|---|"]
    for n, (what, base) in steps.items():
        if f"{n}_w128_attn" not in us:
            continue
        w128 = us[f"{n}_w128_attn"]
        ratio = "baseline" if base is None else f"{us[f'{base}_w128_attn'] / w128:.3f}"
        same = "yes" if check[n]["bitwise_equal_to_first"] else "no"
        lines.append(f"| {what} | {us[f'{n}_original_attn']:,.1f} | {w128:,.1f} | {ratio} | "
                     f"{100 * check[n]['nrms_vs_float64']:.3f} % | {same} |")
    return f"benchmarks/results/{rec['file']}:\n{record_header(rec)}", "\n".join(lines)


def phase_table(record: dict | None = None) -> tuple[str, str]:
    """(where it comes from, Markdown table): each phase of the page step's share of the
    consumer warps' time in Nsight Compute's warp-state samples, one column per profiled kernel.

    Parameters
    ----------
    record : dict, optional
        A loaded phase file; default the recorded :data:`PHASES_STEM`.
    """
    rec = recorded_results(PHASES_STEM) if record is None else record
    kernels = rec["kernels"]
    phases = [p for p in next(iter(kernels.values()))["phases"] if not p.startswith("producer")]
    names = [k[k.find("(") + 1:k.rfind(")")] if "(" in k else k for k in kernels]
    lines = ["| phase of the page step, % of the consumer warps' time | " + " | ".join(names)
             + " |", "|---|" + "--:|" * len(kernels)]
    for p in phases:
        lines.append(f"| {p} | " + " | ".join(
            f"{k['phases'][p]['consumer_time_pct']:.1f}" for k in kernels.values()) + " |")
    return f"benchmarks/results/{rec['file']}:\n{record_header(rec)}", "\n".join(lines)
