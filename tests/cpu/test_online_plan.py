"""The fused online plan's host side (docs/definitions.md#fused-online-plan), no GPU needed: a
GpuUnionPlan in rows of g·K reads back as the CSR plan (CPU tensors stand in for CUDA ones),
the tables give every window and chunk its first group, and chapter 05's and 08's helpers
(pageweaver_edu.notebook.online_plan) on a plan and on recorded-file stand-ins."""

from __future__ import annotations

import numpy as np
import pytest

from pageweaver_edu import greedy_regroup, prepare_unions
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.notebook import online_plan
from pageweaver_edu.workloads import make_preset

torch = pytest.importorskip("torch")


def _as_rows(plan, heads, per_group):
    """The row layout of CPU plans (one per head), as the fused kernel writes it."""
    from pageweaver_edu.gpu import GpuUnionPlan

    csr = GpuUnionPlan.from_cpu(plan)
    groups = csr.groups.shape[0]
    pages = torch.full((groups * per_group,), -7, dtype=torch.int32)
    masks = torch.full((groups * per_group,), 0xEE, dtype=torch.uint8)  # unused entries
    offsets, counts = csr.page_offsets.cpu(), csr.page_counts.cpu()
    for gi in range(groups):
        lo, c = int(offsets[gi]), int(counts[gi])
        pages[gi * per_group:gi * per_group + c] = csr.pages.cpu()[lo:lo + c]
        masks[gi * per_group:gi * per_group + c] = csr.masks.cpu()[lo:lo + c]
    starts = torch.arange(0, (groups + 1) * per_group, per_group, dtype=torch.int32)
    return GpuUnionPlan(csr.perm.cpu(), csr.groups.cpu(), starts, pages, masks, None,
                        counts, csr.group, heads, csr.n, row_capacity=per_group)


def test_row_plan_reads_back_as_the_csr_plan(monkeypatch):
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)  # from_cpu on a CPU
    cap = make_preset("cap16k-high-overlap")
    heads = [np.roll(cap.topk, 131 * h, axis=0) for h in range(2)]
    plans = [prepare_unions(t, greedy_regroup(t, Grouping(64)), cap.request_offsets)
             for t in heads]
    rows = _as_rows(plans, 2, 8 * cap.topk.shape[1])
    assert rows.trimmed() is rows
    for ref, got in zip(plans, rows.to_cpu(), strict=True):
        for field in ("perm", "group_slots", "page_offsets", "pages", "masks", "cta_any",
                      "page_counts"):
            assert np.array_equal(getattr(ref, field), getattr(got, field)), field


def test_row_layout_of_a_plan():
    topk = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])
    plan = prepare_unions(topk, greedy_regroup(topk, Grouping(6, 3)), group=3)
    lay = online_plan.row_layout(plan, 6)
    assert lay["csr_offsets"].tolist() == [0, 4] and lay["row_offsets"].tolist() == [0, 6]
    assert lay["counts"].tolist() == [4, 3] and (lay["csr_entries"], lay["row_entries"]) == (7, 12)
    with pytest.raises(ValueError, match="more than 3"):
        online_plan.row_layout(plan, 3)


def _record(commit="abc1234", twopass=True):
    names = {"union8ws_fp8_original": 816.0, "union8ws_fp8_fixed_w64": 740.0,
             "union8ws_fp8_fixed_w128": 730.0, "union8ws_fp8_online_w64": 742.0,
             "union8ws_fp8_online_w128": 735.0, "gpu_regroup_w64": 10.5,
             "gpu_regroup_plan_w64": 14.3, "gpu_regroup_w128": 16.4,
             "gpu_regroup_plan_w128": 20.5}
    if twopass:
        names |= {"union8ws_fp8_online_w64_twopass": 748.0,
                  "union8ws_fp8_online_w128_twopass": 742.6}
    acct = {f"union8ws_w{w}": {"C_online_us": names[f"union8ws_fp8_online_w{w}"]
                               - names[f"union8ws_fp8_fixed_w{w}"],
                               "C_online_twopass_us": 8.0, "S_net_us": 80.0}
            for w in (64, 128)} if twopass else {}
    return {"workload": "cap64k", "kv_heads": 1, "date": "2026-12-02T07:00:00Z",
            "commit": commit, "accounting": acct,
            "results": [{"name": k, "median_us": v} for k, v in names.items()]}


def test_waterfalls_from_one_run_and_the_old_files(monkeypatch, capsys):
    monkeypatch.setattr(online_plan, "recorded_results", lambda stem: _record())
    fig = online_plan.online_waterfalls()
    before, after = fig.data
    assert before.y[0] == after.y[0] == 816.0 and before.y[1] == after.y[1] == 730.0 - 816.0
    assert before.y[2] == pytest.approx(12.6) and after.y[2] == pytest.approx(5.0)
    assert "C_online +5.0 µs" in fig.layout.annotations[1].text
    monkeypatch.setattr(online_plan, "recorded_results", lambda stem: _record(twopass=False))
    assert online_plan.online_waterfalls() is None
    assert "recorded before the fused online plan" in capsys.readouterr().out


def test_online_table_rows():
    table = online_plan.online_table([_record()])
    assert table.startswith("Recorded runs:") and table.count("* ") == 1  # the header, once
    lines = table.split("\n\n")[-1].splitlines()
    assert len(lines) == 4 and lines[2].startswith("| cap64k | 1 | 64 | 14.3 | 10.5 | 816 |")
    assert lines[3].endswith("| +5.0 | – | +8.0 | +80.0 |")  # a file without the pairs
    paired = _record()
    paired["accounting"]["union8ws_w128"]["C_online_paired_us"] = 3.98
    assert online_plan.online_table([paired]).splitlines()[-1].endswith(
        "| +5.0 | +4.0 | +8.0 | +80.0 |")
    assert online_plan.online_table([]).startswith("No recorded FP8 file")


def test_recorded_fused_rows_print_dashes_when_missing(capsys):
    got = online_plan._fused_recorded({online_plan.FP8_STEM: _record(twopass=False)})
    assert got["gpu_regroup_plan_w128"] == 20.5
    got = online_plan._fused_recorded({online_plan.FP8_STEM: {"results": []}})
    assert got == {} and "gpu_regroup_plan_w64" in capsys.readouterr().out
