"""The project stands on its own: no file points outside the repository, and every citation of
the definitions lands on one of its sections.

Scanned: every tracked file (``git ls-files``; outside a checkout, every file of the tree but
caches, virtual environments and build output). A file may not name the working notes the
project was started from, a folder outside the repository, or task-tracker items. A word
followed by ``(`` or ``=`` is code, not prose, and does not count (a kernel lambda that starts
instructions is named so).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = ROOT / "docs" / "definitions.md"
SKIPPED_DIRS = {"__pycache__", "build", "dist", "wheelhouse", "artifacts", "out"}
# Built from pieces so that this file does not match itself.
FORBIDDEN = {
    "the definitions' origin file": re.compile("PAGE" + "WEAVER" + r"\.md"),
    "a folder outside the repository": re.compile(r"(?<![\w.])sha" + "red/|/wo" + "rk/"),
    "the starting notes": re.compile(r"\bbri" + r"ef(s|ed|ing)?\b", re.I),
    "a tracker item": re.compile(r"\biss" + r"ues?\b(?!\s*[(=])|\btick" + r"ets?\b", re.I),
}
CITATION = re.compile(r"definitions\.md#([A-Za-z0-9-]+)")


def project_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
        paths = [ROOT / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        paths = [p for p in ROOT.rglob("*") if p.is_file() and not any(
            part.startswith(".") or part in SKIPPED_DIRS or part.endswith(".egg-info")
            for part in p.relative_to(ROOT).parts)]
    return [p for p in paths if p.is_file()]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None  # binary


def _anchors() -> set[str]:
    """GitHub's heading anchors of docs/definitions.md."""
    out = set()
    for line in DEFINITIONS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


def test_the_definitions_are_in_the_project():
    assert DEFINITIONS.is_file()
    assert {"supports", "unions", "greedy-regroup", "windows-and-chunks", "capacity-fallback",
            "group-table", "union-preparation", "union8-execution", "slot-protocol",
            "page-pairs", "cost-accounting", "paper-numbers"} <= _anchors()


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_no_file_points_outside_the_project(what):
    hits = []
    for path in project_files():
        text = _text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN[what].search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not hits, f"{len(hits)} line(s) name {what}:\n" + "\n".join(hits[:40])


def test_every_definitions_citation_has_its_section():
    anchors, missing = _anchors(), []
    for path in project_files():
        text = _text(path)
        if text is None:
            continue
        missing += [f"{path.relative_to(ROOT)}: #{a}" for a in CITATION.findall(text)
                    if a not in anchors]
    assert not missing, "citations of sections that do not exist:\n" + "\n".join(missing)
