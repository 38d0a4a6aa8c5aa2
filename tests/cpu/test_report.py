"""``pageweaver report``: the page on every preset, its numbers, its time estimate, and the
CLI's bad-input rules (one line, exit 2, the input never overwritten, nothing half-written)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from pageweaver_edu import Capture, save_capture
from pageweaver_edu.cli import analyze, build_parser
from pageweaver_edu.core.union_metrics import union_stats
from pageweaver_edu.report.analysis import analyze_capture
from pageweaver_edu.report.estimate import (
    MAX_ERROR,
    estimate_lines,
    fit_errors,
    fit_points,
    live_windows,
    load_records,
    time_estimate,
)
from pageweaver_edu.workloads import make_preset, preset_names

G3 = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])


def run_cli(*args, env=None):
    proc = subprocess.run([sys.executable, "-m", "pageweaver_edu.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def preset_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("presets")
    for name in preset_names():
        code, _, err = run_cli("workload", name, "--out", folder / f"{name}.npz")
        assert code == 0, err
    return folder


@pytest.mark.parametrize("preset", preset_names())
def test_report_on_every_preset(preset_files, preset):
    src = preset_files / f"{preset}.npz"
    out = preset_files / f"{preset}.html"
    code, stdout, err = run_cli("report", src, "--out", out, "--json")
    assert code == 0, err
    assert err == ""  # --json: no progress, nothing else on stderr
    summary = json.loads(stdout)
    page = out.read_text(encoding="utf-8")
    # self-contained: plotly.js inlined exactly once, no external script or stylesheet
    assert page.count("Plotly.newPlot(") >= 7
    assert len(re.findall(r"\* plotly\.js v\d", page)) == 1
    assert not re.search(r"<script[^>]+src=", page) and "<link" not in page
    for section in ("Support sizes", "Union visits and C4", "per window",
                    "Gain per request and chunk", "Capacity fallbacks", "Time estimate"):
        assert section in page
    # the page's numbers are the library's
    cap = make_preset(preset)
    assert summary["union_visits"]["original"] == union_stats(cap.topk, None,
                                                              cap.request_offsets).union_visits
    assert set(summary["union_visits"]) == {"original", "W64", "W128", "W512"}
    assert summary["queries"] == cap.num_queries
    assert "Estimate, not a measurement" in page and "union8_fp8_cap64k_h200.json" in page
    assert "preset left out of the fit" in page  # the error on every recorded point
    if preset == "beyond-capacity":
        assert summary["chunks_in_fallback"] == summary["chunks"] == 1
        assert summary["union_visits"]["W128"] == summary["union_visits"]["original"]
        assert "needs 640 pages &gt; B = 512" in page or "needs 640 pages > B = 512" in page
    else:
        assert summary["chunks_in_fallback"] == 0


def test_report_matches_analyze(preset_files):
    """The report's table and ``pageweaver analyze`` agree (same library calls)."""
    src = preset_files / "cap16k-high-overlap.npz"
    args = build_parser().parse_args(["analyze", str(src), "--windows", "64,128,512", "--json"])
    ref = analyze(args)
    a = analyze_capture(make_preset("cap16k-high-overlap"), quiet=True)
    assert {k: s.union_visits for k, s in a.stats.items()} == ref["union_visits"]
    assert {k: s.c4 for k, s in a.stats.items()} == ref["c4"]


def test_gain_per_request_and_chunk():
    """Two requests, chunks of 6: the per-chunk visits add up to the totals, per request too."""
    topics = {"A": [1, 2, 3], "B": [10, 11, 12], "C": [20, 21, 22], "D": [30, 31, 32]}
    packed = np.array([topics[t] for t in "ABABCD" + "DCCD" + "DCAABB"])
    cap = Capture.from_arrays(packed, [0, 10, 16])
    a = analyze_capture(cap, group=2, chunk_size=6, windows=(4,), quiet=True)
    assert [(c["request"], c["start"], c["end"]) for c in a.chunks] == [
        (0, 0, 6), (0, 6, 10), (1, 10, 16)]
    for key, s in a.stats.items():
        assert sum(c["visits"][key] for c in a.chunks) == s.union_visits
    reqs = a.request_gains()
    assert [r["queries"] for r in reqs] == [10, 6] and [r["chunks"] for r in reqs] == [2, 1]
    assert a.stats["W4"].union_visits < a.stats["original"].union_visits


def test_capacity_fallback_lines():
    small = [[1, 2], [3, 4], [1, 2], [3, 4], [600, 1], [2, 3], [600, 2], [1, 3]]
    a = analyze_capture(Capture.from_arrays(small), group=2, chunk_size=4, windows=(4,),
                        quiet=True)
    assert [c["fallback"] for c in a.chunks] == [False, True]
    assert len(a.fallback_lines) == 1 and "needs 601 pages > B = 512" in a.fallback_lines[0]


def test_time_estimate_fits_every_recorded_preset_of_the_fast_kernel():
    records = load_records()
    points = fit_points(records)
    assert len(points) == 12 and len({p["preset"] for p in points}) == 4  # 4 files, 3 orders
    errors = fit_errors(points)
    assert max(abs(e["error"]) for e in errors) <= MAX_ERROR  # the model's stated bound
    for name in ("cap16k-high-overlap", "cap64k", "interleaved-64k"):
        a = analyze_capture(make_preset(name), quiet=True)
        est = time_estimate(a, records, live=False)
        assert est["declined"] is None and "not a measurement" in est["caveats"][0]
        assert "union8_fp8_cap64k_h8_h200.json" in est["basis"]
        rec = records[f"union8_fp8_{name}_h200"]
        med = {r["name"]: r["median_us"] for r in rec["results"]}
        for key, row in (("original", "union8ws_fp8_original"), ("W64", "union8ws_fp8_fixed_w64"),
                         ("W128", "union8ws_fp8_fixed_w128")):
            # the preset's own capture: the estimate is the recorded time within the bound
            assert abs(est["rows"][key]["attention_us"] / med[row] - 1) <= MAX_ERROR, (name, key)
        assert est["rows"]["W128"]["online_us"] > est["rows"]["W128"]["attention_us"]
        assert "online_us" not in est["rows"]["W512"]  # no recorded C_online at W512
    # the recorded runs rank W128 ahead of W64 on every preset; so does the estimate
    assert est["rows"]["W128"]["attention_us"] < est["rows"]["W64"]["attention_us"]


def test_time_estimate_declines_when_the_model_misses_a_point():
    records = load_records()
    bent = json.loads(json.dumps(records["union8_fp8_interleaved-64k_h200"]))
    for r in bent["results"]:
        if r["name"] == "union8ws_fp8_fixed_w128":
            r["median_us"] *= 3  # a kernel whose time the model cannot follow
    est = time_estimate(analyze_capture(Capture.from_arrays(G3), group=2, windows=(2, 4),
                                        quiet=True),
                        {**records, "union8_fp8_interleaved-64k_h200": bent}, live=False)
    assert est["declined"] and "interleaved-64k w128" in est["declined"] and not est["rows"]
    assert "No estimate" in "\n".join(estimate_lines(est))


def test_time_estimate_with_a_gpu_uses_the_live_regroup():
    a = analyze_capture(Capture.from_arrays(G3), group=2, windows=(2, 4), quiet=True)
    est = time_estimate(a, load_records(), live=lambda _: {"W2": 5.0, "W4": 7.0})
    assert est["rows"]["W4"]["c_online_source"].startswith("the GPU regroup timed live")
    assert est["rows"]["W4"]["c_online_us"] == 7.0


def test_live_regroup_times_only_the_windows_the_report_has():
    """A report at W600 with g = 600 times no regroup live (W64 is no window of g = 600),
    the default report W64 and W128."""
    cap = make_preset("cap16k-high-overlap")
    assert live_windows(analyze_capture(cap, quiet=True)) == [64, 128]
    assert live_windows(analyze_capture(cap, group=600, windows=(600,), quiet=True)) == []


def test_report_progress_shows_only_when_asked(tmp_path):
    src = save_capture(Capture.from_arrays(G3), tmp_path / "g3.npz")
    code, out, err = run_cli("report", src, "--out", tmp_path / "r.html", "--group", "2",
                             env={"PAGEWEAVER_PROGRESS": "1"})
    assert code == 0 and "report" in err and out.strip() == f"wrote {tmp_path / 'r.html'}"
    code, out, err = run_cli("report", src, "--out", tmp_path / "r.html", "--group", "2",
                             "--json", env={"PAGEWEAVER_PROGRESS": "1"})
    assert code == 0 and err == "" and json.loads(out)["queries"] == 6
    code, out, err = run_cli("report", src, "--out", tmp_path / "r.html", "--group", "2")
    assert code == 0 and err == ""  # not a terminal: no bar


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        ("g3", ["--out", "{d}/r.txt"], "must end in .html"),
        ("g3", ["--out", "{d}/no-such-dir/r.html"], "does not exist"),
        ("g3", ["--out", "{d}"], "must end in .html"),
        ("g3", ["--out", "{d}/r.html", "--windows", "12"], "not a multiple of the group size"),
        ("g3", ["--out", "{d}/r.html", "--windows", "6,x"], "--windows must be integers"),
        ("missing", ["--out", "{d}/r.html"], "not found"),
        ("html", ["--out", "{src}"], "is the input file"),
    ],
)
def test_report_bad_input(tmp_path, make, args, message):
    if make == "g3":
        src = save_capture(Capture.from_arrays(G3), tmp_path / "g3.npz")
    elif make == "html":
        src = tmp_path / "capture.html"
        src.write_text("precious")
    else:
        src = tmp_path / "missing.npz"
    argv = [a.format(d=tmp_path, src=src) for a in args]
    code, out, err = run_cli("report", src, *argv)
    assert code == 2 and out == "", err
    assert err.startswith("pageweaver: error:") and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written left behind
    if make == "html":
        assert src.read_text() == "precious"


def test_estimate_live_cell_shows_the_record_on_a_cpu(capsys, monkeypatch):
    from pageweaver_edu.gpu import device
    from pageweaver_edu.report.estimate import ESTIMATE

    monkeypatch.delenv(device.ENV_REQUIRE_GPU, raising=False)
    monkeypatch.setattr(device, "gpu_available", lambda: False)
    a = analyze_capture(make_preset("cap16k-high-overlap"), quiet=True)
    run = ESTIMATE.run(analysis=a)
    out = capsys.readouterr().out
    assert run.where == "recorded" and set(run.medians) == set(a.stats)
    assert "union8_fp8_cap64k_h200.json" in out and "ESTIMATE, not a measurement" in out


def test_capture_app_shows_the_report_figures_of_each_setting():
    import plotly.graph_objects as go

    from pageweaver_edu.report.app import APP_FIGURES, capture_app, plotly_props
    from pageweaver_edu.workloads import capture_like_workload

    cap = capture_like_workload(n=256, prefix_tokens=32768, seed=0)
    app = capture_app(cap, "small")
    for key, value in (("g", 4), ("B", 256), ("chunk", 1024), ("g", 8)):
        app.controls[key].value = value
        a = analyze_capture(cap, "small", group=app.controls["g"].value,
                            capacity=app.controls["B"].value,
                            chunk_size=app.controls["chunk"].value or None, quiet=True)
        for name, make in APP_FIGURES.items():
            want = plotly_props(make(a))
            assert plotly_props(go.Figure(app.figs[name])) == want, (key, name)
