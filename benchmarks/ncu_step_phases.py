"""Where the warps of the warp-specialized Union8 wait, by phase of the page step, from Nsight
Compute's warp-state samples.

Input: the source page of a report with the SourceCounters section, exported as CSV, one block
per profiled launch (``ncu -i REPORT --page source --csv --print-source sass > src.csv``), as
``benchmarks/profile_union8.py`` gives it for ``union8ws_fp8`` (fast mode) and the accurate
build:

    ncu --clock-control none -k regex:'^union8ws_fp8$' --launch-skip 2 --launch-count 2 \\
        --section SourceCounters --section WarpStateStats --section SchedulerStats \\
        --section SpeedOfLight --section ComputeWorkloadAnalysis --import-source no -o ws \\
        python3 profile_union8.py --kernels union8ws_fp8,union8ws_fp8acc --reps 1

Each sample is one warp's state at one moment, charged to the instruction it is at, so the
samples of a code region are the warp time spent there; the record also splits each region's
samples by ncu's warp state (``stall_long_sb``: waiting on a long-latency result such as an
mbarrier probe, ``stall_wait``: a fixed-latency dependency, ``stall_selected``: issuing, ...).
The regions are found in the SASS by landmarks:

- producer warps: from the warpgroup's ``USETMAXREG.DEALLOC`` (setmaxnreg.dec) to the end; the
  loader up to the next ``EXIT``, the scheduler after it;
- each compiled copy of the overlapped page step is anchored on its
  ``WARPGROUP.DEPBAR.LE gsb0, 0x1`` (wait for S of the next page); going back, its products are
  started from the ``WARPSYNC.ALL`` before it, and the walk runs from the last ``BSYNC`` or
  release (``SYNCS.ARRIVE.TRANS64.A1T0``) before the walk's first full-barrier probe
  (``SYNCS.PHASECHK``); going on, softmax part A ends at the next
  ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` (fold 0), fold 0 at the next ``WARPGROUP.ARRIVE``, the start
  of the second PV half at its last ``QGMMA``, softmax part B at the next
  ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` (fold 1), and fold 1 (with the accurate mode's split of P)
  at the release;
- the rest of the consumer code: the group boundaries (Q tile, first and last page, stores).

Writes a JSON result (``--out``; with ``--details``, the report's details page as CSV, each
launch's section metrics too) and prints the table.
"""

from __future__ import annotations

import argparse
import csv
import json
from itertools import pairwise
from pathlib import Path

PHASES = ("walk", "start QK(k+1) and PV half 0 (k)", "wait for S", "softmax part A",
          "fold 0", "start PV half 1", "softmax part B", "fold 1 (accurate: and P's split)")
REST = "consumer: group boundaries and the rest"
LOADER, SCHEDULER = "producer: loader", "producer: scheduler"
SAMPLES = "Warp Stall Sampling (All Samples)"


def launches(path: Path) -> list[list[dict]]:
    """The per-instruction rows of each launch block of the CSV source page."""
    rows = list(csv.reader(path.open()))
    heads = [i for i, r in enumerate(rows) if r and r[0] == "Kernel Name"] + [len(rows)]
    out = []
    for a, b in pairwise(heads):
        header = rows[a + 1]
        body = [r for r in rows[a + 2:b] if len(r) == len(header)]
        out.append([dict(zip(header, r, strict=True)) for r in body])
    return out


def number(text: str) -> float:
    return float(text.replace(",", "") or 0)


def find(sass: list[str], start: int, step: int, *marks: str) -> int:
    """The first index from ``start`` in direction ``step`` whose instruction holds a mark."""
    i = start
    while 0 <= i < len(sass) and not any(m in sass[i] for m in marks):
        i += step
    if not 0 <= i < len(sass):
        raise ValueError(f"no {marks} from instruction {start}")
    return i


def step_regions(sass: list[str], wait_s: int) -> list[tuple[str, int, int]]:
    """(phase, first, end) of the page-step copy anchored on its wait for S at ``wait_s``."""
    converge = find(sass, wait_s, -1, "WARPSYNC.ALL")
    # back over the walk's full-barrier probes to the BSYNC or release before the first
    mark = find(sass, converge, -1, "SYNCS.PHASECHK")
    while "SYNCS.PHASECHK" in sass[mark]:
        mark = find(sass, mark - 1, -1, "SYNCS.PHASECHK", "BSYNC", "SYNCS.ARRIVE.TRANS64.A1T0")
    walk = mark + 1
    fold0 = find(sass, wait_s + 1, 1, "WARPGROUP.DEPBAR.LE gsb0, 0x0")
    pv1 = find(sass, fold0, 1, "WARPGROUP.ARRIVE")
    pv1_end = find(sass, pv1, 1, ", gsb0") + 1  # the half's last QGMMA closes its group
    fold1 = find(sass, pv1_end, 1, "WARPGROUP.DEPBAR.LE gsb0, 0x0")
    release = find(sass, fold1, 1, "SYNCS.ARRIVE.TRANS64.A1T0") + 1
    bounds = (walk, converge, wait_s, wait_s + 1, fold0, pv1, pv1_end, fold1, release)
    return [(p, a, b) for p, (a, b) in zip(PHASES, pairwise(bounds), strict=True)]


def phase_table(rows: list[dict]) -> dict:
    """Samples (% of all) and executed instructions per phase of one launch."""
    sass = [r["Source"] for r in rows]
    samples = [number(r[SAMPLES]) for r in rows]
    reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    executed = [number(r["Instructions Executed"]) for r in rows]
    total = sum(samples)
    producer = find(sass, 0, 1, "USETMAXREG.DEALLOC") - 1
    loader_end = find(sass, producer, 1, "EXIT") + 1
    spans = {p: [] for p in PHASES}
    for wait_s in [i for i, s in enumerate(sass[:producer]) if "DEPBAR.LE gsb0, 0x1" in s]:
        for p, a, b in step_regions(sass, wait_s):
            spans[p].append((a, b))
    spans[REST] = []  # the consumer's instructions no other region holds, filled below
    spans[LOADER], spans[SCHEDULER] = [(producer, loader_end)], [(loader_end, len(sass))]
    regions = {p: [i for a, b in v for i in range(a, b)] for p, v in spans.items()}
    used = set().union(*regions.values())
    regions[REST] = [i for i in range(producer) if i not in used]
    table = {}
    for name, idx in regions.items():
        why = {r[len("stall_"):]: sum(number(rows[i][r]) for i in idx) for r in reasons}
        table[name] = {
            "samples_pct": round(100 * sum(samples[i] for i in idx) / total, 2),
            "instructions_executed": int(sum(executed[i] for i in idx)),
            "sass_ranges": [[a, b] for a, b in spans[name]],
            # ncu's warp states in this region, % of all samples, largest first
            "states_pct": {k: round(100 * v / total, 2)
                           for k, v in sorted(why.items(), key=lambda kv: -kv[1]) if v},
        }
    consumer = sum(v["samples_pct"] for k, v in table.items() if not k.startswith("producer"))
    for name, v in table.items():
        if not name.startswith("producer"):
            v["consumer_time_pct"] = round(100 * v["samples_pct"] / consumer, 1)
    return {"total_samples": int(total), "phases": table}


def metric_key(name: str, unit: str) -> str:
    """``Duration``, ``us`` -> ``duration_us``; ``%`` -> ``pct`` (the keys of the earlier
    Nsight Compute records)."""
    words = "".join(c if c.isalnum() else " " for c in name.lower()).split()
    unit = "pct" if unit == "%" else "".join(c for c in unit.lower() if c.isalnum())
    return "_".join(words + ([unit] if unit else []))


def details(path: Path) -> list[dict]:
    """The metrics of each launch (``ncu -i REPORT --page details --csv``) as {key: value}
    (:func:`metric_key`), in launch order."""
    out: dict[str, dict] = {}
    for r in csv.DictReader(path.open()):
        if r["Metric Name"]:
            key = metric_key(r["Metric Name"], r["Metric Unit"])
            out.setdefault(r["ID"], {})[key] = number(r["Metric Value"])
    return [out[k] for k in sorted(out, key=int)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source_csv", type=Path)
    ap.add_argument("--labels", default="union8ws_fp8 (fast mode),union8ws_fp8 (accurate mode)",
                    help="one label per launch block, comma list")
    ap.add_argument("--details", type=Path,
                    help="the report's details page as CSV (--page details --csv): its metrics "
                         "are written beside the phases")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", required=True,
                    help="JSON of the run's device, date, commit, driver, cuda, command")
    args = ap.parse_args(argv)
    blocks = launches(args.source_csv)
    labels = args.labels.split(",")
    if len(labels) != len(blocks):
        raise SystemExit(f"{len(blocks)} launches in {args.source_csv}, {len(labels)} labels")
    kernels = {label: phase_table(rows) for label, rows in zip(labels, blocks, strict=True)}
    if args.details:
        for k, metrics in zip(kernels.values(), details(args.details), strict=True):
            k["metrics"] = metrics
    record = {**json.loads(args.env), "kernels": kernels}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for label, k in kernels.items():
        print(f"\n{label}: {k['total_samples']} samples")
        print(f"{'phase':42s} {'% samples':>9s} {'% consumer':>10s} {'instr (M)':>9s}")
        for name, v in k["phases"].items():
            share = "" if name.startswith("producer") else f"{v['consumer_time_pct']:10.1f}"
            print(f"{name:42s} {v['samples_pct']:9.2f} {share:>10s} "
                  f"{v['instructions_executed'] / 1e6:9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
