"""Plant small, realistic bugs in the input checks and the capacity fallback, one at a time,
and see whether the tests notice.

Every mutant is a list of (file, text, replacement) edits applied to a copy of the package and
the tests in a temporary folder; the tests named with it run there (``pytest -x``). A mutant
is *killed* when they fail, *survived* when they pass. The unmutated copy must pass first.

    python tools/mutation_check.py                 # every mutant
    python tools/mutation_check.py --only fallback # mutants whose name contains "fallback"
    python tools/mutation_check.py --json out.json # also write the table as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMITS = "tests/cpu/test_capture_limits.py"
PROPS = "tests/cpu/test_cli_properties.py"
BOUNDS = "tests/cpu/test_library_bounds.py"
OUTPUTS = "tests/cpu/test_outputs.py"
BUDGET = "tests/cpu/test_resource_budget.py"
FUZZ = "tests/cpu/test_capture_fuzz.py"

# name: ([(file, text, replacement), ...], [tests that should kill it])
MUTANTS = {
    "page_size not passed to the regroup": (
        [("pageweaver_edu/core/capture.py", '"page_size": self.page_size', '"page_size": 128')],
        [PROPS]),
    "capacity fallback ignores the last row of every chunk": (
        [("pageweaver_edu/core/windows.py",
          "needs_pages = span_max(canonical.max(axis=1, initial=-1), chunks[real]) + 1",
          "needs_pages = span_max(canonical.max(axis=1, initial=-1), chunks[real] - [0, 1]) + 1")],
        [PROPS]),
    "an id equal to B is regrouped": (
        [("pageweaver_edu/core/windows.py", "out[real] = needs_pages > capacity",
          "out[real] = needs_pages > capacity + 1")],
        [PROPS]),
    "lengths of shape [N, 1] accepted": (
        [("pageweaver_edu/core/inputs.py", 'arr = integer_array(values, name, low=0)\n',
          'arr = integer_array(values, name, low=0).reshape(-1)\n')],
        [PROPS]),
    "zip limit per member instead of summed": (
        [("pageweaver_edu/core/capture_files.py", "total = sum(m.file_size for m in members)",
          "total = max((m.file_size for m in members), default=0)")],
        [LIMITS]),
    "tensor element limit checked after the copy": (
        [("pageweaver_edu/core/inputs.py", "            raise PageWeaverInputError("
          "f\"{name} is {what}; pass a dense tensor\")\n    check_elements(x.shape, name)\n",
          "            raise PageWeaverInputError("
          "f\"{name} is {what}; pass a dense tensor\")\n"),
         ("pageweaver_edu/core/inputs.py", "x = x.detach().cpu().numpy()",
          "x = x.detach().cpu().contiguous().numpy()")],
        [BOUNDS]),
    ".npy pre-check ignores the header length": (
        [("pageweaver_edu/core/capture_files.py", "available - fh.tell()", "available")],
        [LIMITS]),
    "element limit off by one": (
        [("pageweaver_edu/core/inputs.py", "    if count > limit:", "    if count >= limit:")],
        [LIMITS]),
    "Top-K shape limit off by one": (
        [("pageweaver_edu/core/inputs.py", "        if size > limit:",
          "        if size > limit + 1:")],
        [LIMITS]),
    "bitmaps built over fallback chunks": (
        [("pageweaver_edu/regroup/bitmap.py", "bits = window_bitmaps(table.canonical, todo)",
          "bits = window_bitmaps(table.canonical, table.chunks)")],
        [LIMITS]),
    "bzip2 members read": (
        [("pageweaver_edu/core/capture_files.py",
          "elif m.compress_type == zipfile.ZIP_DEFLATED:",
          "elif m.compress_type in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2):")],
        [LIMITS]),
    "deflate ratio not checked": (
        [("pageweaver_edu/core/capture_files.py",
          "possible = DEFLATE_MAX_RATIO * m.compress_size + 64", "possible = m.file_size")],
        [LIMITS]),
    "member count not checked": (
        [("pageweaver_edu/core/capture_files.py", "if len(members) > MAX_MEMBERS:",
          "if len(members) > 100 * MAX_MEMBERS:")],
        [LIMITS]),
    "data after the .npy array accepted": (
        [("pageweaver_edu/core/capture_files.py", "if declared != left:",
          "if declared > left:")],
        [LIMITS]),
    "stride-0 tensors in a file accepted": (
        [("pageweaver_edu/core/capture_files.py", "        if stride != dense:",
          "        if stride > dense:")],
        [BOUNDS]),
    "negative-bit tensors accepted": (
        [("pageweaver_edu/core/inputs.py", '(x.is_neg(), "a tensor with the negative bit set")',
          '(False, "a tensor with the negative bit set")')],
        [FUZZ]),
    "regroup work limit doubled": (
        [("pageweaver_edu/core/budget.py", "if work > MAX_REGROUP_WORK:",
          "if work > 2 * MAX_REGROUP_WORK:")],
        [LIMITS]),
    "scan work not checked by analyze": (
        [("pageweaver_edu/cli.py",
          '    check_scan_work(capture.topk.size, 2 + len(groupings), "analyze")\n', "")],
        [LIMITS]),
    "output replaces a pipe": (
        [("pageweaver_edu/core/outputs.py", "if info is not None and not stat.S_ISREG(",
          "if info is not None and stat.S_ISDIR(")],
        [OUTPUTS]),
    "output loses the replaced file's mode": (
        [("pageweaver_edu/core/outputs.py", "        if mode is not None:\n",
          "        if mode is None:\n")],
        [OUTPUTS]),
    "overflowing attention scale returns NaN rows": (
        [("pageweaver_edu/core/attention.py", "if (mb & ~np.isfinite(logits).all(axis=1)).any():",
          "if False:")],
        [BOUNDS]),
    "negative FP8 scale accepted": (
        [("pageweaver_edu/replay/fp8.py", "if not (scale_log2 > 0 and np.isfinite(scale_log2)):",
          "if not np.isfinite(scale_log2):")],
        [BOUNDS]),
    "report on N = 0 not refused": (
        [("pageweaver_edu/report/analysis.py", "    if table.canonical.shape[0] == 0:",
          "    if table.canonical.shape[0] < 0:")],
        [BOUNDS]),
    "union sizes of another length accepted": (
        [("pageweaver_edu/core/union_metrics.py", "if sizes.shape != starts.shape:",
          "if sizes.ndim != 1:")],
        [BOUNDS]),
}


def _copy(dest: Path) -> None:
    for part in ("pageweaver_edu", "tests"):
        shutil.copytree(ROOT / part, dest / part,
                        ignore=shutil.ignore_patterns("__pycache__", "artifacts"))
    for name in ("pyproject.toml", "conftest.py"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, dest / name)


def _run_tests(dest: Path, tests: list[str]) -> tuple[bool, float]:
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(dest), PAGEWEAVER_PROGRESS="0")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           "--hypothesis-profile=mutation", *tests], cwd=dest, env=env,
                          capture_output=True, text=True, timeout=900)
    return proc.returncode == 0, time.perf_counter() - start


def check(name: str, edits, tests) -> dict:
    with tempfile.TemporaryDirectory(prefix="pw-mutant-") as tmp:
        dest = Path(tmp)
        _copy(dest)
        for rel, text, replacement in edits:
            source = (dest / rel).read_text()
            if source.count(text) != 1:
                return {"mutant": name, "result": "not applied", "tests": tests,
                        "why": f"{text!r} occurs {source.count(text)} times in {rel}"}
            (dest / rel).write_text(source.replace(text, replacement))
        passed, seconds = _run_tests(dest, tests)
    return {"mutant": name, "result": "survived" if passed else "killed", "tests": tests,
            "s": round(seconds, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutants whose name contains this")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    chosen = {n: m for n, m in MUTANTS.items() if args.only in n}
    baseline = sorted({t for _, tests in chosen.values() for t in tests})
    with tempfile.TemporaryDirectory(prefix="pw-baseline-") as tmp:
        _copy(Path(tmp))
        passed, seconds = _run_tests(Path(tmp), baseline)
    print(f"baseline {'passed' if passed else 'FAILED'} in {seconds:.0f} s: {' '.join(baseline)}")
    if not passed:
        return 1
    rows = []
    for name, (edits, tests) in chosen.items():
        rows.append(check(name, edits, tests))
        r = rows[-1]
        print(f"{r['result']:<12} {name}  [{' '.join(tests)}] {r.get('s', '')}", flush=True)
    killed = sum(r["result"] == "killed" for r in rows)
    print(f"mutation score: {killed}/{len(rows)} killed")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if killed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
