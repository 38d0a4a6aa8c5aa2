"""Saved notebook outputs against the recorded result files they were printed from.

On a CPU the "Live on an H200" cells print the header of each recorded result file
(``device, date, driver …, CUDA …, commit …``, :func:`pageweaver_edu.records.record_header`).
When a file in ``benchmarks/results/`` is re-recorded, every chapter that printed it must be
re-executed (``tools/run_notebooks.py``), or its saved tables show the old run's numbers
beside prose and other chapters that show the new ones. These tests read the committed
notebooks, find every printed header and every "recorded <date>" figure label, and fail when
one names a date or commit that no current result file has (or, where the output names the
file just above the header, not that file's date and commit).

No chapter's prose copies a recorded time: :func:`recorded_times_in` finds a time in the
markdown that equals a recorded median at the precision written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

HEADER = re.compile(r"(?P<date>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d)), "
                    r"driver .*?, commit (?P<commit>[0-9a-zA-Z+]+)")
NAMED = re.compile(r"(?P<stem>[\w.+-]+)\.json")
DAY_LABEL = re.compile(r"recorded (?P<day>\d{4}-\d\d-\d\d)\b")


def _records() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in RESULTS.glob("*.json")}


def _output_texts(nb: dict):
    """(cell index, text) of every output of every code cell: streams and all text mimetypes
    (plotly figures are JSON; their labels are searched as text)."""
    for index, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if "text" in out:
                yield index, "".join(out["text"])
            for value in out.get("data", {}).values():
                if isinstance(value, list):
                    yield index, "".join(value)
                elif isinstance(value, str):
                    yield index, value
                else:
                    yield index, json.dumps(value)


def stale_headers(nb: dict, records: dict[str, dict]) -> list[str]:
    """Every printed record header or "recorded <day>" label of ``nb`` that does not match
    the current result files, as readable lines (empty when all match)."""
    current = {(r.get("date"), str(r.get("commit"))) for r in records.values()}
    days = {str(r.get("date", ""))[:10] for r in records.values()}
    problems = []
    for index, text in _output_texts(nb):
        named = None
        for line in text.splitlines():
            header = HEADER.search(line)
            if header is None:
                stems = [m["stem"].rsplit("/", 1)[-1] for m in NAMED.finditer(line)]
                known = [s for s in stems if s in records]
                named = known[-1] if known else (None if line.strip() else named)
                for day in DAY_LABEL.finditer(line):
                    if day["day"] not in days:
                        problems.append(f"cell {index}: label 'recorded {day['day']}' is no "
                                        "current result file's date")
                continue
            seen = (header["date"], header["commit"])
            if named is not None:
                rec = records[named]
                want = (rec.get("date"), str(rec.get("commit")))
                if seen != want:
                    problems.append(f"cell {index}: {named}.json printed as {seen}, the file "
                                    f"now holds {want}")
            elif seen not in current:
                problems.append(f"cell {index}: header {seen} matches no current result file")
            named = None
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_outputs_name_the_current_result_files(path):
    problems = stale_headers(json.loads(path.read_text(encoding="utf-8")), _records())
    assert not problems, (f"{path.name} was executed against older result files; re-run "
                          "tools/run_notebooks.py on it:\n" + "\n".join(problems))


def _nb(cells: list[tuple[str, str]]) -> dict:
    return {"cells": [{"cell_type": "code", "source": "",
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": t}]}
                      for _, t in cells]}


def test_the_guard_catches_an_old_header_and_accepts_the_current_one():
    records = {"union8_x_h200": {"date": "2026-12-01T12:03:45Z", "commit": "d44b134"},
               "union8_y_h200": {"date": "2026-11-29T10:31:51Z", "commit": "6f7b2de"}}
    line = "  NVIDIA H200, {}, driver 580, CUDA torch 13.0; Build x, commit {}\n"
    new, old = line.format("2026-12-01T12:03:45Z", "d44b134"), line.format(
        "2026-11-20T09:00:00Z", "d7cb2a9")
    named = "Showing the recorded result file benchmarks/results/union8_x_h200.json:\n"
    assert stale_headers(_nb([("", named + new)]), records) == []
    assert len(stale_headers(_nb([("", named + old)]), records)) == 1
    # a header of another current file, printed under this file's name, is stale too
    other = line.format("2026-11-29T10:31:51Z", "6f7b2de")
    assert len(stale_headers(_nb([("", named + other)]), records)) == 1
    assert stale_headers(_nb([("", other)]), records) == []
    assert len(stale_headers(_nb([("", "ours (H200, recorded 2026-11-20)")]), records)) == 1


#: A time in prose: a number with at least three significant digits, then µs or ms.
PROSE_TIME = re.compile(r"(?<![\d.,])(\d[\d,]*\.\d+|\d{3,}(?:,\d{3})*) ?(µs|ms)\b")


def recorded_times_in(prose: str, records: dict[str, dict]) -> list[str]:
    """Times in ``prose`` that equal, at the precision written, a median of a recorded file
    (a number copied from a run into text, which goes stale when the file is re-recorded)."""
    from pageweaver_edu.notebook.paper_numbers import PAPER

    medians = [float(r["median_us"]) for rec in records.values() if isinstance(rec, dict)
               for r in rec.get("results", []) if isinstance(r, dict) and "median_us" in r]
    paper = {round(v * {"ms": 1e3, "s": 1e6}.get(n.unit, 1.0), 3)
             for n in PAPER.values() if n.unit in ("µs", "ms", "s") for v in (*n.values, n.value)}
    found = []
    for m in PROSE_TIME.finditer(prose):
        text, unit = m.group(1).replace(",", ""), m.group(2)
        digits = len(text.split(".")[1]) if "." in text else 0
        value = float(text) * (1e3 if unit == "ms" else 1.0)
        step = 10.0 ** -digits * (1e3 if unit == "ms" else 1.0)
        if round(value, 3) not in paper and any(abs(med - value) <= step / 2 for med in medians):
            found.append(m.group(0))
    return found


def test_recorded_times_in_prose_are_found():
    records = {"x": {"results": [{"name": "a", "median_us": 734.8}, {"name": "b",
                                                                       "median_us": 1114.0}]}}
    assert recorded_times_in("runs in 734.8 µs here", records) == ["734.8 µs"]
    assert recorded_times_in("takes 1.11 ms", records) == ["1.11 ms"]
    assert recorded_times_in("the paper's 37.55 µs and 5 ms", records) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_prose_quotes_no_recorded_time(path):
    """A recorded time reaches the reader through a cell that reads its file, never as text."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert recorded_times_in(prose, _records()) == []
