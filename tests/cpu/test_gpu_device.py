"""Device detection and the CPU-only behaviour of the GPU entry points (runs everywhere)."""

from __future__ import annotations

import numpy as np
import pytest

import pageweaver_edu
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.gpu import device


def test_package_imports_without_gpu():
    import pageweaver_edu.gpu as g

    assert callable(g.gpu_greedy_regroup) and pageweaver_edu.__version__


def test_env_switch(monkeypatch):
    monkeypatch.setenv(device.ENV_REQUIRE_GPU, "1")
    assert device.gpu_required_by_env()
    monkeypatch.setenv(device.ENV_REQUIRE_GPU, "0")
    assert not device.gpu_required_by_env()


def test_reason_is_consistent():
    reason = device.gpu_unavailable_reason()
    assert device.gpu_available() == (reason is None)


def test_entry_points_raise_clear_error_without_gpu():
    if device.gpu_available():
        pytest.skip("a GPU is present: the CPU-only error path does not apply")
    import pageweaver_edu.gpu as g

    with pytest.raises(device.GPUUnavailableError, match="cannot run here"):
        g.gpu_greedy_regroup(np.zeros((8, 2), dtype=np.int64), Grouping(8))
    with pytest.raises(device.GPUUnavailableError):
        g.gpu_prepare_unions(np.zeros((8, 2), dtype=np.int64))
    with pytest.raises(device.GPUUnavailableError):
        device.require_gpu()


def test_recorded_results_reader(tmp_path, monkeypatch):
    from pageweaver_edu.records import recorded_results, result_medians

    (tmp_path / "x_h200.json").write_text(
        '{"device": "d", "results": [{"name": "gpu_regroup_w128", "median_us": 12.5}]}'
    )
    monkeypatch.setenv("PAGEWEAVER_RESULTS_DIR", str(tmp_path))
    rec = recorded_results("x_h200")
    assert result_medians(rec) == {"gpu_regroup_w128": 12.5}
    with pytest.raises(FileNotFoundError):
        recorded_results("does_not_exist")


def test_result_files_named_after_their_device(tmp_path, monkeypatch):
    """A stem with a device tag reads the newest record of that result on any device; other
    results sharing the prefix (more heads, archived commits) are not taken for it."""
    from pageweaver_edu.records import device_tag, recorded_results

    assert device_tag("NVIDIA H100 80GB HBM3") == "h100"
    assert device_tag("NVIDIA H200") == "h200"
    assert device_tag("") == "gpu"
    for stem, date in (("u_cap_h200", "2026-12-01"), ("u_cap_h100", "2026-12-05"),
                       ("u_cap_h8_h100", "2026-12-09"), ("u_cap_h200_abc1234", "2026-12-09")):
        (tmp_path / f"{stem}.json").write_text(f'{{"date": "{date}", "stem": "{stem}"}}')
    monkeypatch.setenv("PAGEWEAVER_RESULTS_DIR", str(tmp_path))
    assert recorded_results("u_cap_h200")["stem"] == "u_cap_h100"
    assert recorded_results("u_cap_h8_h200")["stem"] == "u_cap_h8_h100"
    assert recorded_results("u_cap_h200_abc1234")["stem"] == "u_cap_h200_abc1234"


def test_gpu_tables_follow_cpu_boundaries():
    from pageweaver_edu.core.windows import window_table
    from pageweaver_edu.gpu.tables import regroup_tables, union_group_table

    topk = np.zeros((50, 2), dtype=np.int64)
    wins, chunks = regroup_tables(50, Grouping(8, 4, chunk_size=12), [0, 13, 13, 50])
    plan = window_table(topk, Grouping(8, 4, chunk_size=12), request_offsets=[0, 13, 13, 50])
    assert np.array_equal(wins[:, 0], plan.windows[:, 0])
    assert np.array_equal(wins[:, 0] + wins[:, 1], plan.windows[:, 1])
    assert chunks[:, 2].sum() == len(wins)
    firsts = union_group_table(50, 1, [0, 13, 13, 50], 4)[:, 0].tolist()
    for start, group in (*wins[:, [0, 3]], *chunks[:, [0, 3]]):  # the fused plan's row bases
        assert firsts[group] == start
    table = union_group_table(10, 2, [0, 3, 10], 4)
    assert table[:, 1].sum() == 20 and table[3].tolist() == [10, 3, 10, 0]


def test_result_commit_honours_env(tmp_path, monkeypatch):
    from pageweaver_edu.records.environment import ENV_COMMIT, source_commit

    monkeypatch.setenv(ENV_COMMIT, "abc1234+worktree")
    assert source_commit() == "abc1234+worktree"
    monkeypatch.delenv(ENV_COMMIT)
    assert source_commit(tmp_path) == "uncommitted"  # no git checkout there


def test_regroup_variant_choice():
    from pageweaver_edu import PageWeaverInputError
    from pageweaver_edu.gpu.regroup import pick_variant

    assert [pick_variant(w) for w in (8, 64, 96, 128)] == [
        "pairs_w32", "pairs_w64", "pairs_w128", "pairs_w128"]
    assert pick_variant(256) == "bits_t256" and pick_variant(64, k=17) == "bits_t64"
    assert pick_variant(64, "bits_t128") == "bits_t128"
    for bad in (dict(window=128, variant="pairs_w64"), dict(window=64, variant="x"),
                dict(window=64, variant="pairs_w64", k=17)):
        with pytest.raises(PageWeaverInputError):
            pick_variant(**bad)
