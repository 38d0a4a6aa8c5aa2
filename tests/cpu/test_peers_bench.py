"""The FlashInfer helpers of the benchmark (benchmarks/peers_flashinfer.py) on a CPU: the summary
ratios, the peer table, and the rows skipped (with the reason) where FlashInfer does not import;
and the workloads the benchmark runs by name (presets and its own capture-like settings)."""

from __future__ import annotations

import sys
from pathlib import Path


def _bench_module():
    bench = str(Path(__file__).resolve().parents[2] / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import peers_flashinfer

    return peers_flashinfer


def test_bench_peer_helpers(capsys):
    bench = _bench_module()
    t = {"peers": {"flashinfer_msa_fp8": 1116.0, "flashinfer_decode_bf16_tc": 1834.0}}
    got = bench.speedups(t, 1000.0, "ours")
    assert got == {"speedup_vs_flashinfer_decode_bf16_tc": 1.834,
                   "speedup_vs_flashinfer_msa_fp8": 1.116, "speedup_vs_flashinfer_basis": "ours"}
    assert bench.speedups({}, 1000.0, "ours") == {} and bench.speedups(t, None, "x") == {}
    assert "speedup_ws_vs_flashinfer_msa_fp8" in bench.speedups(t, 500.0, "ws",
                                                                 prefix="speedup_ws_vs_")
    both = bench.summary_ratios({**t, "ws_T0": 900.0, "ws_fixed": 800.0}, 1000.0, "ours", "ws")
    assert both["speedup_union8ws_vs_flashinfer_msa_fp8"] == 1.395
    assert both["speedup_union8ws_vs_flashinfer_basis"] == "ws"
    assert both["speedup_vs_flashinfer_msa_fp8"] == 1.116
    assert bench.summary_ratios(t, 1000.0, "ours", "ws") == got
    rec = {"workload": "cap64k", "kv_heads": 1, "summary": got,
           "check": {"flashinfer_msa_route": "cute_dsl_union"},
           "results": [{"name": "flashinfer_msa_fp8", "median_us": 1116.0}]}
    bench.print_peer_table([rec])
    out = capsys.readouterr().out
    assert "msa_fp8 1116 (x1.12)" in out and "cute_dsl_union" in out


def test_bench_peer_rows_skip_without_flashinfer(monkeypatch):
    bench = _bench_module()
    monkeypatch.setattr(bench, "available", lambda: (False, "ModuleNotFoundError: flashinfer"))
    check, t = {}, {}
    bench.time_flashinfer(None, None, None, check, t)
    assert check == {"flashinfer_version": None,
                     "flashinfer_error": "ModuleNotFoundError: flashinfer"} and t == {}


def test_bench_workloads_are_presets_or_its_settings():
    """The benchmark runs every preset and its own capture-like settings by name: a setting is
    no preset, builds a causal capture with its K and every row of K distinct valid pages, and
    an unknown name is refused with both lists."""
    import numpy as np
    import pytest
    import union8_bench_common as common

    from pageweaver_edu.core.inputs import PageWeaverInputError
    from pageweaver_edu.workloads import make_preset, preset_names

    assert not set(common.SETTINGS) & set(preset_names())
    for name, params in common.SETTINGS.items():
        cap = common.make_workload(name, seed=1)
        assert cap.topk.shape == (params["n"], params["k"])
        assert np.array_equal(cap.causal_pos, params["prefix_tokens"] + np.arange(params["n"]))
        assert (cap.topk * 128 <= cap.causal_pos[:, None]).all()
        assert all(len(set(row)) == params["k"] for row in cap.topk.tolist())
    assert np.array_equal(common.make_workload("cap64k", 2).topk, make_preset("cap64k", 2).topk)
    with pytest.raises(PageWeaverInputError, match="cap32k-top24"):
        common.make_workload("cap64")
