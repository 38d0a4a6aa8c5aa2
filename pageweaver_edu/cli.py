"""The ``pageweaver`` command: analyze, regroup and report Top-K captures, write presets.

User errors (a missing file, a wrong shape or dtype, W not a multiple of g, offsets that do
not end at N, ids that overflow int32, ...) print one line on stderr and exit with status 2.
Progress (a tqdm bar, :mod:`pageweaver_edu.core.progress`) goes to stderr on a terminal once a run
takes more than a few seconds, and never shows under ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from .core.budget import check_regroup_work, check_scan_work
from .core.capture import load_capture, save_capture
from .core.grouping import Grouping
from .core.inputs import PageWeaverInputError
from .core.outputs import write_atomically
from .core.progress import progress
from .core.union_metrics import union_stats
from .core.windows import window_table
from .regroup.bitmap import greedy_regroup, regroup_table
from .report import command as report_command

EXIT_USER_ERROR = 2


def _groupings(args, windows: list[int]) -> list[Grouping]:
    """The command's groupings, one per window W; every rule is checked here, once."""
    return [Grouping(w, args.group, args.capacity, args.chunk_size) for w in windows]


def _parse_windows(text: str) -> list[int]:
    try:
        return [int(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise PageWeaverInputError(
            f"--windows must be integers separated by commas, got {text!r}"
        ) from None


def analyze(args) -> dict:
    """Statistics of a capture in original order and regrouped at each window."""
    capture = load_capture(args.capture)
    groupings = _groupings(args, _parse_windows(args.windows))
    # rows, chunks and the capacity fallback do not depend on W: one table serves every window
    (base,) = _groupings(args, [args.group])
    table = window_table(capture.topk, base, **capture.regroup_kwargs())
    check_scan_work(capture.topk.size, 2 + len(groupings), "analyze")
    check_regroup_work(table, [g.window for g in groupings], "analyze")
    rows = table.canonical
    original = union_stats(rows, None, capture.request_offsets, args.group)
    report = {
        "capture": str(args.capture),
        "queries": capture.num_queries,
        "requests": capture.num_requests,
        "edges": original.edges,
        "pages_referenced": int(np.unique(rows[rows >= 0]).size),
        "chunks": int(len(table.chunks)),
        "chunks_in_fallback": int(table.chunk_fallback.sum()),
        "group": args.group,
        "capacity": args.capacity,
        "union_visits": {"original": original.union_visits},
        "c4": {"original": original.c4},
        "rho": {"original": _finite(original.rho)},
        "grouping_ms": {},
    }
    for grouping in progress(groupings, desc="regroup", quiet=args.json, unit="W"):
        key = f"W{grouping.window}"
        start = time.perf_counter()
        perm = regroup_table(table.for_window(grouping.window))
        report["grouping_ms"][key] = round(1e3 * (time.perf_counter() - start), 3)
        stats = union_stats(rows, perm, capture.request_offsets, args.group)
        report["union_visits"][key] = stats.union_visits
        report["c4"][key] = stats.c4
        report["rho"][key] = _finite(stats.rho)
    return report


def _finite(x: float) -> float | None:
    return None if np.isnan(x) else round(float(x), 4)


def _change(new: int, old: int) -> str:
    return "" if old == 0 else f"{100.0 * (new - old) / old:+.2f}%"


def format_analysis(report: dict) -> str:
    """Human-readable table of :func:`analyze`'s report."""
    lines = [
        f"capture            {report['capture']}",
        f"queries            {report['queries']:,} in {report['requests']} request(s)",
        f"edges Σ|S_i|       {report['edges']:,}",
        f"pages referenced   {report['pages_referenced']:,}",
        f"chunks in fallback {report['chunks_in_fallback']} of {report['chunks']}"
        f" (capacity B = {report['capacity']} pages)",
        "",
        f"{'order':<10}{'union visits':>14}{'change':>10}{'rho_Q':>8}{'C4':>10}{'CPU ms':>9}",
    ]
    base = report["union_visits"]["original"]
    for key, visits in report["union_visits"].items():
        rho = report["rho"][key]
        ms = report["grouping_ms"].get(key)
        lines.append(
            f"{key:<10}{visits:>14,}{_change(visits, base):>10}"
            f"{'n/a' if rho is None else f'{rho:.3f}':>8}{report['c4'][key]:>10,}"
            f"{'' if ms is None else f'{ms:.1f}':>9}"
        )
    lines.append(f"(g = {report['group']}; union visits = Σ_G |U_G|, "
                 "C4 = page rounds of the four-query halves)")
    return "\n".join(lines)


def regroup(args) -> dict:
    """π for a capture at one window."""
    capture = load_capture(args.capture)
    (grouping,) = _groupings(args, [args.window])
    perm = greedy_regroup(capture.topk, grouping, **capture.regroup_kwargs())
    result = {"perm": perm.tolist()}
    if args.out is not None:
        written = write_atomically(args.out, ".npy", lambda fh: np.save(fh, perm),
                                   protect=[args.capture])
        result["out"] = str(written)
    return result


def workload(args) -> dict:
    """Write a preset workload as a capture file."""
    from .workloads.presets import make_preset

    capture = make_preset(args.preset, seed=args.seed)
    out = save_capture(capture, args.out)
    return {"preset": args.preset, "out": str(out), "queries": capture.num_queries}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str):
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pageweaver``."""
    parser = _Parser(prog="pageweaver", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def grouping(p, window_required: bool):
        p.add_argument("capture", help="Top-K capture: .npz, .npy or .pt")
        if window_required:
            p.add_argument("--window", type=int, required=True, help="regroup window W")
        p.add_argument("--group", type=int, default=8, help="group size g (default 8)")
        p.add_argument("--capacity", type=int, default=512, help="bitmap capacity B in pages")
        p.add_argument("--chunk-size", type=int, default=None, help="prefill chunk size")
        p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("analyze", help="union statistics in original and regrouped order")
    grouping(p, False)
    p.add_argument("--windows", default="64,128", help="comma-separated windows (default 64,128)")
    p = sub.add_parser("regroup", help="compute the permutation π")
    grouping(p, True)
    p.add_argument("--out", help="write π as .npy")
    p = sub.add_parser("report", help="one self-contained HTML page of a capture's statistics")
    grouping(p, False)
    report_command.add_arguments(p)
    p = sub.add_parser("workload", help="write a preset workload as .npz")
    p.add_argument("preset")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pageweaver`` console script."""
    for stream in (sys.stdout, sys.stderr):  # a latin-1 terminal gets \u03c0, not a traceback
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    try:
        if args.command == "analyze":
            report = analyze(args)
            print(json.dumps(report) if args.json else format_analysis(report))
        elif args.command == "regroup":
            result = regroup(args)
            if args.json:
                print(json.dumps(result))
            else:
                where = (f" written to {result['out']}" if "out" in result
                         else " (--out or --json keeps it)")
                print(f"π for {len(result['perm'])} queries{where}")
        elif args.command == "report":
            result = report_command.run(args, _parse_windows(args.windows))
            print(json.dumps(result) if args.json else f"wrote {result['out']}")
        else:
            result = workload(args)
            print(f"wrote {result['preset']} ({result['queries']:,} queries) to {result['out']}")
    except (PageWeaverInputError, OSError) as exc:
        print(f"pageweaver: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
