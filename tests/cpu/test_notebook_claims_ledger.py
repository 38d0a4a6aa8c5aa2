"""Chapter 11's ledger rows that read the FP8 record and the paper's later numbers (C17,
C23–C27), on records with known numbers in a temporary results folder."""

from __future__ import annotations

import json

from pageweaver_edu import union_stats
from pageweaver_edu.workloads import make_preset

MEDIANS = {"union8_original": 2000.0, "union8_fixed_w128": 1800.0, "union8_online_w128": 1820.0,
           "union8_fixed_w512": 1700.0, "union8_random_ids": 4000.0, "union4_original": 1500.0}


def _record(check: dict) -> dict:
    return {"device": "TestGPU", "date": "2026-01-02T00:00:00Z", "commit": "abc1234",
            "driver": "1", "cuda": "13", "workload": "cap64k",
            "results": [{"name": k, "median_us": v} for k, v in MEDIANS.items()],
            "summary": {}, "check": check}


def _ledger(tmp_path, monkeypatch, fp8_check: dict | None):
    from pageweaver_edu.notebook import claims as pc
    from pageweaver_edu.notebook import claims_recorded as pcr

    files = {stem: _record({"nrms_vs_float64": 0.002, "bitwise_identical": {"w128": True}})
             for stem in ("union8_cap64k_h200", "union8_cap16k-high-overlap_h200",
                          "union8_interleaved-64k_h200", "gpu_regroup_h200")}
    if fp8_check is not None:
        files["union8_fp8_cap64k_h200"] = _record(fp8_check)
    for stem, rec in files.items():
        (tmp_path / f"{stem}.json").write_text(json.dumps(rec))
    monkeypatch.setenv("PAGEWEAVER_RESULTS_DIR", str(tmp_path))
    records = pcr.load_records()
    for key in ("fp8_16k", "fp8_h8", "fp8_interleaved"):
        records[key] = None  # the checkout's own files would be found next
    if fp8_check is None:
        records["fp8"] = None
    claims = pc.PaperClaims()
    text = pcr.recorded_claims(claims, records, union_stats(make_preset("cap64k").topk))
    return {r[0]: r for r in claims.rows}, text


def test_c17_reads_the_fp8_record_and_the_later_claims_are_there(tmp_path, monkeypatch):
    check = {"union8ws_nrms_vs_float64": 0.05, "checked_rows": 64,
             "bitwise_identical": {"original": True, "union8ws_online_w128": True}}
    rows, text = _ledger(tmp_path, monkeypatch, check)
    c17 = rows["C17"]
    assert c17[5] == "synthetic H200" and "not built" not in c17[4]
    assert c17[4].startswith("vs float64 on the FP8 cache: warp-specialized kernel 5.00%")
    assert rows["C16"][5] == "not here"  # no FlashInfer rows in these files
    assert [c for c in rows if c.startswith("C2") and len(c) == 3][-5:] == [
        "C23", "C24", "C25", "C26", "C27"]
    assert "5.00% vs float64 on 64 sampled rows" in rows["C23"][4]
    assert "inside the paper's range: False" in rows["C23"][4]  # 5 % is above 4.51 %
    assert "online W128 output bitwise the same" in rows["C23"][4]
    assert "the three pairs lie inside C21's +0.47–+0.73 %" in rows["C24"][4]
    assert "the outlier is 49x the largest" in rows["C24"][4]
    assert "over 65,536 tokens" in rows["C25"][4] and "64,424 tokens stay below" in rows["C25"][4]
    assert rows["C25"][5] == "not here"
    assert "1.497/1.295/0.592 ms" in rows["C26"][3] and rows["C26"][5] == "not here"
    assert rows["C27"][3] == "255; 12.4 %; 96.5 %"
    assert "union8_fp8_cap64k_h200.json" in text and "\n" + " " * 20 + "paper " in text


def test_without_the_fp8_record_c17_and_c23_say_what_is_missing(tmp_path, monkeypatch):
    rows, _ = _ledger(tmp_path, monkeypatch, None)
    assert rows["C17"][4] == "needs the kernels" and rows["C17"][5] == "not here"
    assert rows["C23"][4] == "pending (H200)" and rows["C23"][5] == "not here"
    broken = {"union8ws_nrms_vs_float64": 0.03, "checked_rows": 8,
              "bitwise_identical": {"original": True, "union8ws_online_w128": False}}
    rows, _ = _ledger(tmp_path, monkeypatch, broken)
    assert "online W128 output NOT identical" in rows["C23"][4]
    assert "inside the paper's range: True" in rows["C23"][4]
