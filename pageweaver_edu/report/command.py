"""``pageweaver report CAPTURE --out report.html``: the arguments, the checks, the run.

The CLI only dispatches here. The bad-input rules are the CLI's: every problem raises
:class:`~pageweaver_edu.core.inputs.PageWeaverInputError` (one line on stderr, exit 2), the
output must end in ``.html`` and must not be the capture itself, and the page is written
atomically, so an error leaves no half-written file behind.
"""

from __future__ import annotations

from pathlib import Path

from ..core.capture import load_capture
from ..core.inputs import PageWeaverInputError
from ..core.outputs import check_output
from . import REPORT_WINDOWS, SUFFIXES


def add_arguments(parser) -> None:
    """The ``report`` subcommand's arguments (beside the shared grouping ones)."""
    parser.add_argument("--out", required=True, help="the HTML page to write (.html)")
    parser.add_argument("--windows", default=",".join(map(str, REPORT_WINDOWS)),
                        help="comma-separated report windows (default 64,128,512)")


def check_out(capture_path, out) -> Path:
    """The output path (:func:`~pageweaver_edu.core.outputs.check_output`'s rules, the
    capture protected), or a one-line :class:`PageWeaverInputError`."""
    return check_output(out, SUFFIXES, protect=[capture_path])[0]


def run(args, windows: list[int]) -> dict:
    """Analyze ``args.capture``, estimate its time, write the page; returns the summary."""
    out = check_out(args.capture, args.out)
    try:
        from .analysis import analysis_summary, analyze_capture
        from .estimate import time_estimate
        from .page import build_page, write_atomic
    except ImportError as exc:  # plotly is the report extra's
        raise PageWeaverInputError(f"pageweaver report needs plotly: pip install "
                                   f"'pageweaver_edu[report]' ({exc})") from None
    capture = load_capture(args.capture)
    analysis = analyze_capture(capture, str(args.capture), group=args.group,
                               capacity=args.capacity, chunk_size=args.chunk_size,
                               windows=windows, quiet=args.json)
    est = time_estimate(analysis)
    out = write_atomic(out, build_page(analysis, est), protect=[args.capture])
    summary = analysis_summary(analysis)
    summary["out"] = str(out)
    summary["estimate"] = None if est is None else {
        "basis": est["basis"], "record": est["record"], "declined": est["declined"],
        "us": {k: {f: round(v, 1) for f, v in r.items() if f.endswith("_us")}
               for k, r in est["rows"].items()}}
    return summary
