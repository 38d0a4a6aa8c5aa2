"""The FlashInfer comparison table: ratios inside one file, builds told apart, the paper beside."""

from __future__ import annotations

import json
import math

from pageweaver_edu.notebook import peers

NAMES = ("union8ws_fp8_original", "union8ws_fp8_fixed_w128", "union8ws_fp8_online_w128",
         "flashinfer_msa_fp8", "flashinfer_msa_fp8_programs", "flashinfer_decode_bf16_tc",
         "flashinfer_decode_fp8_tc")


def _record(us, lazy=False, commit="abc1234"):
    same = {"union8ws_original": True}
    if lazy:
        same["union8ws_eager_original"] = True
    return {"workload": "cap64k", "kv_heads": 1, "commit": commit,
            "device": "NVIDIA H100 80GB HBM3",
            "results": [{"name": n, "median_us": u} for n, u in zip(NAMES, us, strict=True)],
            "check": {"nrms_vs_float64": 0.036, "bitwise_identical": same,
                      "flashinfer_msa_fp8_nrms_vs_float64": 0.0027}}


def test_row_takes_the_best_call_and_the_ratios_of_its_own_file():
    row = peers.peer_row(_record([800, 700, 720, 1120, 1480, 1860, 2770]))
    assert row["best"] == 700 and row["build"] == "shipped" and row["gpu"] == "h100"
    assert math.isclose(row["x_msa"], 1.6) and math.isclose(row["x_decode"], 1860 / 700)
    assert row["nrms"] == 0.036 and row["msa_nrms"] == 0.0027
    assert row["accurate"] is None and row["x_msa_accurate"] is None


def test_the_accurate_mode_gets_its_own_ratio_and_nrms(tmp_path):
    rec = _record([800, 700, 720, 1120, 1480, 1860, 2770])
    rec["results"] += [{"name": f"union8ws_fp8acc_{k}", "median_us": u}
                       for k, u in (("original", 1200), ("fixed_w128", 1000),
                                    ("online_w128", 1010))]
    rec["check"]["union8ws_fp8acc_nrms_vs_float64"] = 0.0022
    row = peers.peer_row(rec)
    assert row["accurate"] == 1000 and math.isclose(row["x_msa_accurate"], 1.12)
    assert row["accurate_nrms"] == 0.0022
    res = tmp_path / "benchmarks" / "results"
    res.mkdir(parents=True)
    (res / "union8_fp8_cap64k_h100.json").write_text(json.dumps(rec))
    line = next(x for x in peers.peer_table(str(tmp_path)).splitlines() if "| cap64k |" in x)
    assert line.startswith("| cap64k | h100 | 1 |") and "| 1,000 | 0.22 % | 1.12 |" in line


def test_table_reads_only_files_with_peer_rows_and_separates_builds(tmp_path):
    res = tmp_path / "benchmarks" / "results"
    res.mkdir(parents=True)
    (res / "union8_fp8_cap64k_h200.json").write_text(json.dumps(
        _record([800, 700, 720, 1400, 1480, 1860, 2770], lazy=True)))
    (res / "union8_fp8_cap64k_h200_x.json").write_text(json.dumps(
        _record([800, 700, 720, 1050, 1480, 1860, 2770])))
    no_peers = _record([800, 700, 720, 1050, 1480, 1860, 2770])
    no_peers["results"] = no_peers["results"][:3]
    (res / "union8_fp8_cap16k_h200.json").write_text(json.dumps(no_peers))
    table = peers.peer_table(str(tmp_path), every_file=True)
    assert table.count("| cap64k |") == 2 and "cap16k" not in table
    assert "lazy build: 2.00×" in table and "shipped build: 1.50×" in table
    assert "1.701×" in table
    current = peers.peer_table(str(tmp_path))  # the chapters: current files, header once
    assert current.count("| cap64k |") == 1 and "commit abc1234" in current
    assert "build" not in current.split("Geometric")[1] and "2.00× over 1 file" in current


def test_build_comes_from_the_recorded_options():
    rec = _record([800, 700, 720, 1120, 1480, 1860, 2770])
    rec["check"]["union8ws_build"] = {"tc_sum": False, "lazy": True}
    assert peers.peer_row(rec)["build"] == "lazy, FP32 sums"
    rec["check"]["union8ws_build"] = {"tc_sum": False, "lazy": False}
    assert peers.peer_row(rec)["build"] == "shipped"
