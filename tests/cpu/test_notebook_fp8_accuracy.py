"""Chapter 12's time-against-accuracy points and figure (pageweaver_edu.notebook.fp8_accuracy),
on small records with known rows and on the recorded cap64k run."""

from __future__ import annotations

import pytest

pytest.importorskip("plotly")

from pageweaver_edu import PageWeaverInputError  # noqa: E402
from pageweaver_edu.notebook.fp8_accuracy import (  # noqa: E402
    time_vs_nrms,
    time_vs_nrms_figure,
)
from pageweaver_edu.notebook.style import subtitle_text  # noqa: E402

ROWS = {"union8ws_fp8_fixed_w128": 700.0, "union8ws_fp8_original": 800.0,
        "union8ws_bf16_fixed_w128": 1100.0, "union8_fp8_fixed_w128": 1800.0,
        "flashinfer_msa_fp8": 1100.0, "flashinfer_decode_bf16_tc": 1900.0,
        "flashinfer_decode_fp8_tc": 2800.0, "gather_reference": 35000.0}
CHECK = {"union8ws_nrms_vs_float64": 0.035, "nrms_vs_float64": 0.034,
         "nrms_vs_float64_bf16_kv": 0.05, "flashinfer_msa_fp8_nrms_vs_float64": 0.0027,
         "flashinfer_decode_bf16_tc_nrms_vs_float64": 0.0022,
         "flashinfer_decode_fp8_tc_nrms_vs_float64": 0.0028}
FAST = "warp-specialized kernel, fast FP8 mode"
ACCURATE = "warp-specialized kernel, accurate FP8 mode"
BF16 = "warp-specialized kernel, BF16 mode"


def _record(rows: dict, check: dict) -> dict:
    return {"device": "TestGPU", "date": "2026-01-02T00:00:00Z", "commit": "abc1234",
            "workload": "w", "check": check,
            "results": [{"name": k, "median_us": v} for k, v in rows.items()]}


def _annotation(fig, start: str) -> str:
    return next(a.text for a in fig.layout.annotations if a.text.startswith(start))


def test_without_the_accurate_rows():
    points = time_vs_nrms(_record(ROWS, CHECK))
    assert [p["row"] for p in points] == [
        "union8ws_fp8_fixed_w128", "union8ws_bf16_fixed_w128", "union8_fp8_fixed_w128",
        "flashinfer_msa_fp8", "flashinfer_decode_bf16_tc", "flashinfer_decode_fp8_tc"]
    assert points[0] == {"label": FAST, "row": "union8ws_fp8_fixed_w128", "median_us": 700.0,
                         "nrms_key": "union8ws_nrms_vs_float64", "nrms": 0.035, "ours": True}
    assert points[1]["nrms"] is None  # the --fp8 run checks no output of the BF16 mode
    assert [p["nrms"] for p in points[2:]] == [0.034, 0.0027, 0.0022, 0.0028]
    assert [p["ours"] for p in points] == [True] * 3 + [False] * 3
    fig = time_vs_nrms_figure(_record(ROWS, CHECK))
    assert [t.name for t in fig.data] == [p["label"] for p in points if p["nrms"] is not None]
    assert all(isinstance(t.x, tuple) and isinstance(t.y, tuple) for t in fig.data)
    assert fig.data[0].x == (700.0,) and fig.data[0].y == pytest.approx((3.5,))
    assert fig.data[0].marker.symbol == "circle" and fig.data[2].marker.symbol.endswith("-open")
    assert subtitle_text(fig).endswith(f"no NRMS recorded: {BF16}")
    assert [s.y0 for s in fig.layout.shapes] == pytest.approx([0.27])
    assert _annotation(fig, "FlashInfer MSA").endswith("at least as accurate: none of ours")
    assert fig.layout.yaxis.type == "log"


def test_with_the_accurate_rows():
    rows = {**ROWS, "union8ws_fp8acc_fixed_w128": 900.0, "union8ws_fp8acc_original": 950.0}
    check = {**CHECK, "union8ws_fp8acc_nrms_vs_float64": 0.0019,
             "union8ws_fp8acc_nrms_vs_emulation": 0.0004}
    points = time_vs_nrms(_record(rows, check))
    assert points[1] == {"label": ACCURATE, "row": "union8ws_fp8acc_fixed_w128",
                         "median_us": 900.0, "nrms_key": "union8ws_fp8acc_nrms_vs_float64",
                         "nrms": 0.0019, "ours": True}
    fig = time_vs_nrms_figure(_record(rows, check))
    assert [t.name for t in fig.data][:2] == [FAST, ACCURATE]
    assert fig.data[1].x == (900.0,) and fig.data[1].y == pytest.approx((0.19,))
    assert _annotation(fig, "FlashInfer MSA").endswith(f"at least as accurate: {ACCURATE}")
    # each point keeps its marker whichever points a file holds
    plain = time_vs_nrms_figure(_record(ROWS, CHECK))
    assert fig.data[2].marker.symbol == plain.data[1].marker.symbol


def test_a_file_without_peers_has_no_target_line():
    ours = {k: v for k, v in ROWS.items() if not k.startswith("flashinfer")}
    fig = time_vs_nrms_figure(_record(ours, CHECK))
    assert [t.name for t in fig.data] == [FAST, "FP8 cluster kernel"]
    assert not fig.layout.shapes


@pytest.mark.parametrize("bad", [[], _record({"union8_original": 1.0}, {})])
def test_a_file_that_is_not_an_fp8_run_is_one_line(bad):
    with pytest.raises(PageWeaverInputError) as err:
        time_vs_nrms(bad)
    assert "\n" not in str(err.value)


def test_the_recorded_run_names_a_key_for_every_point_it_draws():
    from pageweaver_edu.records import recorded_results

    fp8 = recorded_results("union8_fp8_cap64k_h200")
    points = time_vs_nrms(fp8)
    assert {p["row"] for p in points} >= {"union8ws_fp8_fixed_w128", "union8_fp8_fixed_w128",
                                         "flashinfer_msa_fp8"}
    assert [p["label"] for p in points if p["nrms"] is None] == [BF16]
    assert all(p["nrms"] == fp8["check"][p["nrms_key"]] for p in points if p["nrms"] is not None)
