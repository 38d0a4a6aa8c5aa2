"""The tables and verdicts chapters 08–12 print, on records with known numbers.

Each chapter's cells call these functions on the committed result files; here they run on
small records written to a temporary results folder (``PAGEWEAVER_RESULTS_DIR``), so every
number in a row can be checked against the arithmetic that should produce it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pageweaver_edu import union_stats
from pageweaver_edu.workloads import make_preset

ROWS = {"union8_original": 2000.0, "union8_fixed_w64": 1900.0, "union8_fixed_w128": 1800.0,
        "union8_fixed_w512": 1700.0, "union8_online_w64": 1950.0, "union8_online_w128": 1820.0,
        "union8_random_ids": 4000.0, "union4_original": 1500.0, "gpu_regroup_w64": 10.0,
        "gpu_regroup_w128": 16.0, "gather_reference": 36000.0,
        "flex_attention_q128_kv128": 48000.0}


def _union8_record(scale: float = 1.0) -> dict:
    stats = {k: {"union_visits": v, "c4": 2 * v, "edges": 3 * v}
             for k, v in (("original", 100), ("w64", 90), ("w128", 85), ("w512", 80),
                          ("random", 200))}
    stats["original_g4"] = {"c4": 150}
    med = {k: scale * v for k, v in ROWS.items()}
    return {
        "device": "TestGPU", "date": "2026-01-02T00:00:00Z", "commit": "abc1234",
        "driver": "1", "cuda": "13", "workload": "w", "stats": stats,
        "results": [{"name": k, "median_us": v, "tflops_c4": 100.0} for k, v in med.items()],
        "accounting": {f"w{w}": {"S_exec_us": med["union8_original"] - med[f"union8_fixed_w{w}"],
                                 "C_online_us": med[f"union8_online_w{w}"]
                                 - med[f"union8_fixed_w{w}"],
                                 "S_net_us": med["union8_original"] - med[f"union8_online_w{w}"]}
                       for w in (64, 128)},
        "summary": {"speedup_vs_gather": 20.0, "speedup_vs_flex": 26.0},
        "check": {"nrms_vs_float64": 0.005, "all_rows_written": True,
                  "bitwise_identical": {"original": True, "w128": True}},
    }


@pytest.fixture
def records(tmp_path, monkeypatch):
    """Result files with known numbers in a temporary results folder."""
    files = {f"union8_{p}_h200": _union8_record(s) for p, s in (
        ("cap64k", 1.0), ("cap16k-high-overlap", 0.25), ("interleaved-64k", 2.0))}
    files["union8_cap64k_h8_h200"] = _union8_record(8.0)
    files["gpu_regroup_h200"] = {"device": "TestGPU", "date": "d", "commit": "c", "results": [
        {"name": "gpu_regroup_w64", "median_us": 10.0}, {"name": "gpu_regroup_w128",
                                                          "median_us": 17.3}]}
    for stem, rec in files.items():
        (tmp_path / f"{stem}.json").write_text(json.dumps(rec))
    monkeypatch.setenv("PAGEWEAVER_RESULTS_DIR", str(tmp_path))
    return files


def test_online_cost_tables(records):
    from pageweaver_edu.notebook.online_cost import (
        COST,
        RECORDED_PRESETS,
        SAVING,
        accounting_table,
        orderings,
        waterfall_figure,
    )
    from pageweaver_edu.notebook.union8_live import accounting_lines

    table = accounting_table()
    lines = table.splitlines()
    assert len(lines) == 2 + 4 and lines[2].startswith("| cap64k | 2,000 | 1,800 | 1,820 | +50")
    assert lines[-1].startswith("| cap64k (8 KV heads) | 16,000 |") and "| 20.0 | 26.0 |" in table
    fig, rows = orderings()
    # one coloured series per preset through its five orderings, named at its original order;
    # then one grey legend entry per ordering (marker symbol)
    presets = [t for t in fig.data if t.x != (None,)]
    assert [t.name for t in presets] == list(RECORDED_PRESETS) and len(fig.data) == 3 + 5
    for t in presets:
        points = dict(zip(t.customdata, zip(t.x, t.y, t.text, strict=True), strict=True))
        assert points["original order"] == (100, points["original order"][1], t.name)
        assert [s for s in t.text if s] == [t.name]  # named once, at its original order
        assert len({m for m in t.marker.symbol}) == 5  # one symbol per ordering
    ys = {t.name: dict(zip(t.customdata, t.y, strict=True))["random ids"] for t in presets}
    assert ys == {"cap64k": 4000.0, "cap16k-high-overlap": 1000.0, "interleaved-64k": 8000.0}
    assert "| cap64k | union8_fixed_w128 | 85 | 170 | 1,800 | 100 |" in rows
    assert "| interleaved-64k | union4_original | – | 150 | 3,000 | 100 |" in rows
    med = {k: ROWS[k] for k in ("union8_original", "union8_fixed_w128", "union8_online_w128")}
    assert "S_exec   200.0 µs   C_online   20.0 µs   S_net   180.0 µs" in accounting_lines(med)
    water = waterfall_figure(med, "recorded").data[0]
    assert list(water.y) == [2000.0, -200.0, 20.0, 0]
    # the saving (time down) green, the cost (time up) red
    assert water.decreasing.marker.color == SAVING and water.increasing.marker.color == COST


def test_page_pairs_tables(records):
    from pageweaver_edu.notebook import pagepairs as pp

    rows = pp.preset_pairs(("cap16k-high-overlap",))
    s = rows["cap16k-high-overlap"]["s"]
    assert s["edges"] == 65_536 and s["work_items"] == s["edges"] - s["shared"]
    table = pp.preset_pairs_table(rows)
    assert f"{s['pairs']:>7}" in table and f"{rows['cap16k-high-overlap']['w128'].c4:>9,}" in table
    text, cmp = pp.measured_vs_model({"cap64k": rows["cap16k-high-overlap"]},
                                     {"union8_cap64k_h200": records["union8_cap64k_h200"]})
    assert "union8_original            2.000 ms       18.00x" in text
    verdict = pp.conclusions(cmp)
    assert "The W128 regroup makes Union8 1.11× faster" in verdict
    assert verdict.count("* Page pairs vs") == 2
    gb = pp.traffic_table(rows).splitlines()[1].split()
    assert float(gb[1]) == pytest.approx(65_536 * 32768 / 1e9, abs=0.01)
    assert "1.000 GiB" in pp.workspace_lines(rows, 16_384).splitlines()[0]


def test_page_pairs_sweep_series():
    from pageweaver_edu.notebook import pagepairs as pp

    sweep = pp.community_sweep(communities=(2, 4), n=256)
    series = pp.sweep_series(sweep, window=64, partial_out=2)
    assert list(series)[-1] == "page pairs, 16-bit partials"
    assert all(len(v) == 2 for v in series.values())
    assert series["Union8, W64, B = 512"][0] <= series["Union8, original order"][0]
    assert len(pp.sweep_figure(sweep).data) == 4


def test_open_questions_tables(records):
    from pageweaver_edu.notebook import open_questions as oq
    from pageweaver_edu.notebook import open_questions_cost as oqc

    caps = {"cap64k": make_preset("cap64k")}
    small = oq.small_window_study(caps, ("cap64k",), small=((8, 2, 4),))
    v = small["cap64k", 8, 2]
    assert np.all(v["optimal"] <= v["greedy"]) and len(v["original"]) == 4
    assert oq.small_window_table(small).splitlines()[1].startswith("cap64k              W8 /g2")
    sweep = oq.window_sweep(caps, ["cap64k"], windows=(64, 128))
    assert oq.losing_windows_table(sweep, (64, 128)).splitlines()[2].startswith("cap64k")
    net = oqc.model_net(sweep, (64, 128))
    saved = sweep["cap64k"]["original"][0].union_visits - sweep["cap64k"][128][0].union_visits
    assert net["cap64k"][1] == pytest.approx(oqc.TAU_NS * saved / 1e3 - oqc.c_online_us(128))
    assert "best W (model)" in oqc.model_net_table(sweep, net, (64, 128))
    report = oqc.measured_report(sweep, net, presets=("cap64k",))
    assert "W64  S_exec    100.0 µs   C_online   50.0 µs   S_net     50.0 µs (-2.50%)" in report
    tau = 1e3 * 200.0 / saved
    assert f"one union visit is worth {tau:.1f} ns" in report
    assert "* cap64k: online, W128 wins (-9.00%)" in report
    bal = oq.cta_balances(caps, ("cap64k",), n=512)
    assert oq.balance_table(bal).count("cap64k / ") == 4


FP8_ROWS = {"union8ws_fp8_original": 800.0, "union8ws_fp8_fixed_w128": 700.0,
            "union8ws_fp8_online_w128": 710.0, "union4_fp8_original": 1200.0,
            "union8_fp8_original": 1600.0, "flashinfer_msa_fp8": 1050.0}


def test_claims(records, tmp_path):
    from pageweaver_edu.notebook import claims as pc
    from pageweaver_edu.notebook import claims_recorded as pcr

    fp8 = {"device": "TestGPU", "date": "d", "commit": "c", "workload": "cap64k",
           "results": [{"name": k, "median_us": v} for k, v in FP8_ROWS.items()],
           "check": {"union8ws_nrms_vs_float64": 0.035,
                     "flashinfer_msa_fp8_nrms_vs_float64": 0.0027}}
    for stem in ("union8_fp8_cap64k_h200", "union8_fp8_cap16k-high-overlap_h200",
                 "union8_fp8_cap64k_h8_h200", "union8_fp8_interleaved-64k_h200"):
        (tmp_path / f"{stem}.json").write_text(json.dumps(fp8))
    claims = pc.PaperClaims()
    ex, text = pc.worked_examples(claims)
    assert ex["a_i"] == [0, 1, 2, 3, 8, 9] and ex["g2_visits"] == [12, 13, 12]
    assert len(text.splitlines()) == 9 and claims.counts()["exact"] == 9
    loaded = pcr.load_records()
    assert loaded["cap64k"]["device"] == "TestGPU"
    original = union_stats(make_preset("cap64k").topk)
    lines = pcr.recorded_claims(claims, loaded, original)
    rows = {r[0]: r for r in claims.rows}
    assert rows["C3h"][4] == "100.0; 10.00; 90.0 (T0 0.800 ms)"
    assert rows["C3h"][5] == "synthetic H200"
    assert rows["C15"][4] == "10.0; 17.3 (cap64k)"
    assert rows["C10h"][4].startswith("warp-specialized kernel 1.50x, FP8 cluster kernel 0.75x")
    assert rows["C16"][4].startswith("warp-specialized kernel vs FlashInfer MSA FP8: 1.50x over "
                                     "4 presets (1.50x)")
    assert rows["C17"][4].startswith("vs float64 on the FP8 cache: warp-specialized kernel "
                                     "3.50%; FlashInfer MSA 0.27%")
    assert rows["C17"][3] == "2.246–3.967%; 2.288–4.077%; 6.258–9.120%"
    assert "union8_cap64k_h200.json" in lines and "union8_fp8_cap64k_h200.json" in lines
    assert claims.exact_lines().endswith("exact rows: 9")
    summary = pcr.summary(loaded)
    assert "W128 17.3 µs against 34.6–34.9 µs (0.50-0.50×)" in summary
    assert "S_net +90.0 µs" in summary
    offline = {"original": (1.371, original), "identity ids": (1.382, original),
               "random ids": (1.832, original), "W512": (1.234, original),
               "W2048": (1.185, original)}
    ranking = pcr.offline_ranking(offline, loaded)
    assert "ours,  fastest first: W512 < original < random ids" in ranking
    assert len(pcr.offline_figure(offline, loaded, original).data) == 3


def test_claims_model_rows():
    from pageweaver_edu.notebook import claims as pc

    claims = pc.PaperClaims()
    cap = make_preset("cap64k")
    numbers, _ = pc.capture_numbers(claims, cap)
    assert numbers["original"].edges == 244_352 and abs(numbers["paper_pct"] + 12.70) < 0.006
    fallback, text = pc.model_claims(claims, cap, numbers)
    assert fallback and len(text.splitlines()) == 6
    assert [r[0] for r in claims.rows] == [f"C{i}" for i in range(1, 6)] + [
        f"C{i}" for i in range(9, 15)]
    assert len(claims.figure().data[0].cells.values) == 6


def test_fp8_tables():
    from pageweaver_edu.notebook import fp8 as f8
    from pageweaver_edu.notebook import fp8_speed
    from pageweaver_edu.records import recorded_results

    b = {key: 0.01 for key in f8.BUDGET_KEYS}
    b["total"] = 0.02
    table = f8.budget_table(b).splitlines()
    assert len(table) == 2 + 9 and table[2] == (
        "| Q quantization | q → E4M3, one scale per (query, head) row | 1 % | 25.0 % |")
    assert table[6].endswith("| 2 % |  |")
    assert list(f8.budget_bars(b).data[0].y) == [100 * b[k] for k in f8.BUDGET_KEYS]
    two = f8.budget_table(b, operands="two_level").splitlines()
    assert "E4M3 high part + E4M3 low part" in two[2] and two[5] == table[5]
    fp8 = recorded_results("union8_fp8_cap64k_h200")
    header, speeds, peers = fp8_speed.speed_table(fp8)
    assert header.startswith(f"recorded: {fp8['device']}") and speeds.count("\n") == 7
    assert "| warp-specialized kernel | FP8 cluster kernel | BF16 cluster kernel |" in speeds
    assert peers.startswith("peers on the same inputs (same run)") and "FlashInfer MSA" in peers
    targets, verdict = fp8_speed.targets_table(fp8)
    assert targets.count("\n") == 12 and verdict.count("targets met; missed:") == 2
    assert verdict.startswith("warp-specialized kernel: ")

