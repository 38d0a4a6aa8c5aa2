"""Saved notebook outputs against the recorded result files they were printed from.

On a CPU the "Live on an H200" cells print the header of each recorded result file
(``device, date, driver …, CUDA …, commit …``, :func:`pageweaver_edu.records.record_header`).
When a file in ``benchmarks/results/`` is re-recorded, every chapter that printed it must be
re-executed (``tools/run_notebooks.py``), or its saved tables show the old run's numbers
beside prose and other chapters that show the new ones. These tests read the committed
notebooks, find every printed header and every "recorded <date>" figure label, and fail when
one names a date or commit that no current result file has (or, where the output names the
file just above the header, not that file's date and commit).

The prose of chapter 08 quotes numbers of the recorded ``cap64k`` and ``cap16k-high-overlap``
runs; :data:`PROSE_08` recomputes each one from the file and looks for it in the text.
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
    named = "Showing the recorded H200 result file benchmarks/results/union8_x_h200.json:\n"
    assert stale_headers(_nb([("", named + new)]), records) == []
    assert len(stale_headers(_nb([("", named + old)]), records)) == 1
    # a header of another current file, printed under this file's name, is stale too
    other = line.format("2026-11-29T10:31:51Z", "6f7b2de")
    assert len(stale_headers(_nb([("", named + other)]), records)) == 1
    assert stale_headers(_nb([("", other)]), records) == []
    assert len(stale_headers(_nb([("", "ours (H200, recorded 2026-11-20)")]), records)) == 1


def _m(rec: dict, name: str) -> float:
    return next(r["median_us"] for r in rec["results"] if r["name"] == name)


def _pct(num: float, den: float) -> str:
    return f"{100 * num / den:.1f}"


#: Numbers the prose of chapter 08 quotes, as ``(text the chapter must contain, how the
#: recorded files give it)``; ``c64`` and ``c16`` are the cap64k and cap16k records.
PROSE_08 = (
    ("≈ {:.0f} µs outweighs", lambda c64, c16: c64["accounting"]["w128"]["S_exec_us"]),
    ("$C_\\text{{online}}$ ≈ {:.0f} µs\n  (the regroup", lambda c64, c16:
     c64["accounting"]["w128"]["C_online_us"]),
    ("alone: {:.1f} µs in that run", lambda c64, c16: _m(c64, "gpu_regroup_w128")),
    ("≈ +{:.0f} µs (−{}", lambda c64, c16: (c64["accounting"]["w128"]["S_net_us"], _pct(
        c64["accounting"]["w128"]["S_net_us"], _m(c64, "union8_original")))),
    ("nets +{:.0f} µs", lambda c64, c16: c64["accounting"]["w64"]["S_net_us"]),
    ("$S_\\text{{exec}}$ ≈ {:.0f} µs against", lambda c64, c16:
     c16["accounting"]["w128"]["S_exec_us"]),
    ("$S_\\text{{net}}$ ≈ +{:.0f} µs (−{} %)", lambda c64, c16: (
        c16["accounting"]["w128"]["S_net_us"], _pct(c16["accounting"]["w128"]["S_net_us"],
                                                     _m(c16, "union8_original")))),
    ("W64 loses ({} µs)", lambda c64, c16:
     f"{c16['accounting']['w64']['S_net_us']:.0f}".replace("-", "−")),
    ("take {:.1f}× the time", lambda c64, c16:
     _m(c64, "union8_random_ids") / _m(c64, "union8_original")),
    ("{:.1f}× the chunked gather", lambda c64, c16: c64["summary"]["speedup_vs_gather"]),
    ("{:.1f}×\n  the compiled FlexAttention", lambda c64, c16: c64["summary"]["speedup_vs_flex"]),
    ("({:,.0f} vs {:,.0f} µs)", lambda c64, c16: (_m(c64, "union8_fixed_w128"),
                                                  _m(c64, "union8_fixed_w512"))),
)


def test_chapter_08_prose_quotes_the_recorded_runs():
    nb = json.loads((ROOT / "notebooks" / "08_online_regroup_cost.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    records = _records()
    c64, c16 = records["union8_cap64k_h200"], records["union8_cap16k-high-overlap_h200"]
    missing = []
    for template, value in PROSE_08:
        got = value(c64, c16)
        text = template.format(*(got if isinstance(got, tuple) else (got,)))
        if text not in prose:
            missing.append(text)
    assert not missing, ("chapter 08's prose no longer matches the recorded files; expected "
                         f"to find: {missing}")


def test_chapter_12_prose_quotes_the_recorded_fp8_run():
    nb = json.loads((ROOT / "notebooks" / "12_fp8_union8.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    fp8 = _records()["union8_fp8_cap64k_h200"]
    w128 = f"{_m(fp8, 'union8_fp8_fixed_w128') / 1e3:.2f} ms at W128"
    assert w128 in prose, f"chapter 12 quotes the FP8 W128 time; the file now gives {w128}"
