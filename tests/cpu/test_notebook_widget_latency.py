"""The chapters' latency tables read the browser benchmark's recorded file."""

import json

import pytest

from pageweaver_edu.notebook.widget_latency import latency_record, latency_table

RECORD = {"device": "Test CPU", "cores": 2, "date": "2026-12-06T00:00:00+00:00",
          "commit": "abc1234", "chromium": "1.0", "moves": 5, "target_ms": 200.0,
          "results": [{"chapter": "03", "control": "out2 slider 'round'", "median_ms": 136.2,
                       "min_ms": 120.0, "max_ms": 220.0},
                      {"chapter": "03", "control": "out12 dropdown 'W'", "median_ms": 201.0,
                       "min_ms": 150.0, "max_ms": 260.0},
                      {"chapter": "06", "control": "out11 slider 'QK'", "median_ms": 90.0,
                       "min_ms": 80.0, "max_ms": 99.0}]}


def test_table_lists_the_chapters_controls_against_the_target():
    lines = latency_table("03", RECORD).splitlines()
    assert "Test CPU (2 cores)" in lines[0] and "commit abc1234" in lines[0]
    assert len(lines) == 4  # header, column names, two controls of chapter 03
    assert lines[2].split()[-1] == "yes" and lines[3].split()[-1] == "no"  # 136 vs 201 ms


def test_a_chapter_without_rows_is_refused():
    with pytest.raises(ValueError, match="no control of chapter 13"):
        latency_table("13", RECORD)


def test_newest_file_is_read(tmp_path):
    folder = tmp_path / "benchmarks" / "results"
    folder.mkdir(parents=True)
    (folder / "widget_latency_a.json").write_text(json.dumps(RECORD))
    newer = {**RECORD, "date": "2026-12-07T00:00:00+00:00", "commit": "def5678"}
    (folder / "widget_latency_b.json").write_text(json.dumps(newer))
    assert latency_record(str(tmp_path))["commit"] == "def5678"


def test_the_shipped_record_covers_the_chapters_that_quote_it():
    for chapter in ("03", "06"):
        assert "median ms" in latency_table(chapter)
