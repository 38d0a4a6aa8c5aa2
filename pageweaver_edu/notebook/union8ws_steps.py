"""Chapter 12's build-up of the one-SM warp-specialized kernel and chapter 07's cost of the
FP8 cluster kernel's lockstep, read from the recorded step table
(``benchmarks/results/union8ws_steps_cap64k_<device>.json``, the newest on any device, written
by ``benchmarks/bench_union8ws_steps.py``: every row timed in one run; rows of no step here,
such as a build option timed in the same run, are left out), and the accurate mode's page-step
A/B (``union8ws_ab_acc_uniform_f16res_cap64k_<device>.json``, ``bench_union8ws_ab.py``)."""

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


#: The accurate mode's page-step A/B (``benchmarks/bench_union8ws_ab.py``), newest on any device.
ACCURATE_AB_STEM = "union8ws_ab_acc_uniform_f16res_cap64k_h100"
#: Variant -> what it changes, in the A/B's order (each compared with the first).
ACCURATE_STEPS = {
    "base": "the accurate step as first built: Q and P as two E4M3 parts each",
    "uniform": "+ pages and the Q tile's address read warp-uniform (descriptors in uniform "
               "registers)",
    "uniform_f16res": "+ the low parts' residual taken in FP16 pairs (fewer conversions per "
                      "split; the shipped accurate mode)",
}


def accurate_ab_table(record: dict | None = None) -> tuple[str, str]:
    """(where it comes from, Markdown table) of the accurate mode's A/B: attention kernel alone
    (median of the round medians) in both orders, × the first variant (W128), NRMS against
    float64 on the FP8 cache and whether the output is bitwise the first variant's.

    Parameters
    ----------
    record : dict, optional
        A loaded A/B file; default the recorded ``cap64k`` one.
    """
    rec = recorded_results(ACCURATE_AB_STEM) if record is None else record
    us, check = result_medians(rec), rec["check"]
    names = [n for n in ACCURATE_STEPS if f"{n}_w128_attn" in us]
    base = us[f"{names[0]}_w128_attn"]
    lines = ["| step | original order, µs | W128, µs | × first (W128) | NRMS | bits of the first |",
             "|---|--:|--:|--:|--:|---|"]
    for n in names:
        w128 = us[f"{n}_w128_attn"]
        same = "yes" if check[n]["bitwise_equal_to_first"] else "no (own arithmetic)"
        lines.append(f"| {ACCURATE_STEPS[n]} | {us[f'{n}_original_attn']:,.1f} | {w128:,.1f} | "
                     f"{base / w128:.3f} | {100 * check[n]['nrms_vs_float64']:.3f} % | {same} |")
    return f"benchmarks/results/{rec['file']}:\n{record_header(rec)}", "\n".join(lines)
