"""Widget latency in the browser: a reader's input to the figure settled, every control of
every chapter with widgets.

JupyterLab on loopback and Debian's Chromium, driven by Playwright as the browser test does
(``tests/browser/labdriver.py``). Per chapter: Run ▸ Run All Cells, then every control (menus,
sliders, toggle buttons, check boxes of every widget app) is moved ``--moves`` times
(``tests/browser/widget_actions.py``): the move is made by JavaScript in the page right after
it reads ``performance.now()``, and its latency ends at the last change the page draws in the
app's figures and status lines before ``QUIET_MS`` of quiet. So it holds the kernel round trip,
the Python callback and plotly.js's redraw, as a reader waits for them. Every exception the
kernel reports while the controls move is counted (there must be none). Chapters run one at a
time; each chapter's kernel is stopped before the next starts.

Target: every control's median within 200 ms. Prints a table and writes
``benchmarks/results/widget_latency_<machine>.json`` (``--out``): ``{"device", "cores",
"date", "commit", "python", "chromium", "moves", "target_ms", "results": [{"chapter",
"control", "moves", "median_ms", "min_ms", "max_ms"}], "kernel_errors"}``.

Usage: ``python benchmarks/bench_widget_latency.py [--moves 5] [--out PATH] [NN_name.ipynb ...]``
(needs ``make browser-setup``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "tests" / "browser"))

from labdriver import (  # noqa: E402
    CHROMIUM,
    KernelErrors,
    Lab,
    launch,
    missing_requirement,
    open_notebook,
    run_all,
)
from widget_actions import exercise, widget_chapters  # noqa: E402

from pageweaver_edu.records import cpu_model, source_commit  # noqa: E402

TARGET_MS = 200.0


def machine_name() -> str:
    """File-name form of this machine: CPU model and core count, e.g. ``amd-epyc_2cores``."""
    slug = re.sub(r"[^a-z0-9]+", "-", cpu_model().lower()).strip("-")
    return f"{slug}_{os.cpu_count()}cores"


def chapter_latencies(ctx, lab, name: str, moves: int, folder: Path) -> tuple[list, list]:
    """Rows ``{"chapter", "control", "moves", "median_ms", "min_ms", "max_ms"}`` of one
    chapter, and the exceptions its kernel reported while the controls moved."""
    page = ctx.new_page()
    errors = KernelErrors(page)
    try:
        open_notebook(page, lab, name)
        run_all(page, folder, name[:2])
        page.wait_for_timeout(2000)  # the last figures finish drawing, the kernel goes idle
        ran_all = len(errors.errors)
        times = exercise(page, moves)
    finally:
        page.close()
        lab.shutdown_kernels()
    rows = []
    for control, ms in times.items():
        done = [t for t in ms if t is not None]
        rows.append({"chapter": name[:2], "control": control, "moves": len(done),
                     "no_redraw": len(ms) - len(done),
                     "median_ms": round(statistics.median(done), 1) if done else None,
                     "min_ms": round(min(done), 1) if done else None,
                     "max_ms": round(max(done), 1) if done else None})
    return rows, errors.errors[ran_all:]


def print_table(report: dict) -> None:
    rows = report["results"]
    width = max(len(r["control"]) for r in rows)
    print(f"{report['device']} ({report['cores']} cores) · Chromium {report['chromium']} · "
          f"{report['moves']} moves per control")
    print(f"{'ch':3s}{'control':<{width}} {'moves':>5} {'median ms':>10} {'min ms':>8} "
          f"{'max ms':>8}  ≤{TARGET_MS:.0f} ms?")
    for r in rows:
        med = r["median_ms"]
        ok = "yes" if med is not None and med <= TARGET_MS else "NO"
        cells = [f"{v:>8.1f}" if v is not None else f"{'–':>8}" for v in
                 (r["min_ms"], r["max_ms"])]
        print(f"{r['chapter']:3s}{r['control']:<{width}} {r['moves']:>5} "
              f"{med if med is not None else '–':>10} {cells[0]} {cells[1]}  {ok}")
    print(f"kernel exceptions while the controls moved: {len(report['kernel_errors'])}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="default: every chapter with widgets")
    parser.add_argument("--moves", type=int, default=5, help="moves per control (>= 3)")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "results" / f"widget_latency_{machine_name()}.json")
    args = parser.parse_args(argv)
    why = missing_requirement()
    if why:
        sys.exit(f"bench_widget_latency: {why}")
    from playwright.sync_api import sync_playwright

    names = args.notebooks or widget_chapters()
    moves = max(3, args.moves)
    folder = Path(tempfile.mkdtemp(prefix="pw-latency-"))
    results, errors = [], []
    lab = Lab(break_mode="").start()
    try:
        with sync_playwright() as pw:
            ctx = launch(pw, folder / "profile")
            for name in names:
                rows, errs = chapter_latencies(ctx, lab, Path(name).name, moves, folder)
                results += rows
                errors += errs
                print(f"{name}: {len(rows)} controls", flush=True)
            ctx.close()
    finally:
        lab.stop()
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True,
                              check=False).stdout.split()
    report = {"device": cpu_model(), "cores": os.cpu_count(),
              "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "commit": source_commit(), "python": platform.python_version(),
              "chromium": chromium[1] if len(chromium) > 1 else "?", "moves": moves,
              "target_ms": TARGET_MS, "results": results, "kernel_errors": errors}
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
