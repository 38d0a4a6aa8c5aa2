"""The recorded serving-overhead file as the notebook prints it (a file written here in the
benchmark's format, and the absence of one)."""

from __future__ import annotations

import json
import re

from pageweaver_edu.notebook.serving_overhead import serving_table, show_serving_overhead


def _record(tmp_path, date, eager_us):
    rows = [{"name": f"{way}_h{h}", "kv_heads": h, "median_us": us * h, "p10_us": us * h - 1,
             "p90_us": us * h + 1, "wall_us": 90.0 * h, "reps": 300}
            for h in (1, 8)
            for way, us in (("eager_default", eager_us), ("eager_side", eager_us + 20),
                            ("graph_replay", 10.0))]
    rec = {"device": "NVIDIA H100 80GB HBM3", "date": date, "commit": "abc1234",
           "driver": "580", "cuda": "13.0", "workload": "cap16k-high-overlap", "window": 128,
           "cache": "fp8", "results": rows}
    folder = tmp_path / "benchmarks" / "results"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"serving_overhead_{date[:4]}.json").write_text(json.dumps(rec))
    return rec


def test_newest_file_is_printed_with_its_header(tmp_path, capsys):
    _record(tmp_path, "2026-01-01T00:00:00Z", 200.0)
    _record(tmp_path, "2027-01-01T00:00:00Z", 150.0)
    show_serving_overhead(str(tmp_path))
    out = capsys.readouterr().out
    assert "serving_overhead_2027.json: cap16k-high-overlap, W128, FP8 cache" in out
    assert "NVIDIA H100 80GB HBM3, 2027-01-01T00:00:00Z" in out and "commit abc1234" in out
    assert out.count("eager / replay = 15.0x") == 2
    assert re.search(r"\b150\.0\b", out) and not re.search(r"\b200\.0\b", out)  # the 2027 file


def test_table_rows_and_missing_file(tmp_path, capsys):
    rec = _record(tmp_path, "2026-01-01T00:00:00Z", 100.0)
    table = serving_table(rec).splitlines()
    assert len(table) == 1 + 2 * 4
    assert table[1].split()[:4] == ["eager,", "default", "stream", "1"]
    show_serving_overhead(str(tmp_path / "nowhere"))
    assert "no benchmarks/results/serving_overhead_*.json recorded yet" in capsys.readouterr().out
