"""benchmarks/ncu_step_phases.py on a small made-up source page: the page step's phases are
found by their SASS landmarks, every sample lands in exactly one region, and the shares add up."""

from __future__ import annotations

import csv
import json

from tests.helpers.tool_module import load_tool

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
          "stall_long_sb", "stall_selected", "stall_long_sb (Not Issued)"]
# one consumer step copy between a group's code and the producer's, (sass, samples)
PAGE = [
    ("FFMA R1, R2, R3, R4", 5),                                     # 0 group work
    ("BSYNC B1", 1),                                                # 1
    ("ISETP.NE.AND P0, PT, R29, R4, PT", 4),                        # 2 walk
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R31+0x380d0], R4", 2),   # 3
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R31+0x380d0], R16", 1),  # 4
    ("BSYNC B2", 1),                                                # 5
    ("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R16+0x38100], RZ", 1),        # 6 a skipped stage
    ("WARPSYNC.ALL", 1),                                            # 7 start the products
    ("WARPGROUP.ARRIVE", 1),                                        # 8
    ("QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], R24, gsb0", 3),  # 9
    ("WARPGROUP.DEPBAR.LE gsb0, 0x1", 7),                           # 10 wait for S
    ("MUFU.EX2 R1, R1", 9),                                         # 11 softmax A
    ("WARPGROUP.DEPBAR.LE gsb0, 0x0", 2),                           # 12 fold 0
    ("FFMA R5, R5, R6, R7", 1),                                     # 13
    ("WARPGROUP.ARRIVE", 1),                                        # 14 PV half 1
    ("QGMMA.64x64x32.F32.E4M3.E4M3 R24, R120, gdesc[UR8], R24, gsb0", 4),  # 15
    ("MUFU.EX2 R2, R2", 6),                                         # 16 softmax B
    ("WARPGROUP.DEPBAR.LE gsb0, 0x0", 2),                           # 17 fold 1
    ("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R0+0x38100], RZ", 1),         # 18 release
    ("STG.E desc[UR20][R14.64], R1", 3),                            # 19 stores
    ("WARPSYNC.ALL", 1),                                            # 20 producer
    ("USETMAXREG.DEALLOC.CTAPOOL 0x18", 1),                         # 21
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R0+0x38100], R2", 10),   # 22 loader
    ("@P0   EXIT", 1),                                              # 23
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7+0x38140], R12", 8),   # 24 scheduler
]


def test_phases_of_a_page_step(tmp_path, capsys):
    phases_tool = load_tool("ncu_step_phases", "benchmarks")
    src = tmp_path / "src.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "union8ws_fp8"])
        w.writerow(HEADER)
        # every sample a long-scoreboard wait at a probe, else issuing
        w.writerows([f"0x{i:x}", s, n, 10, n if "PHASECHK" in s else 0,
                     0 if "PHASECHK" in s else n, 0] for i, (s, n) in enumerate(PAGE))
    det = tmp_path / "details.csv"
    with det.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ID", "Section Name", "Metric Name", "Metric Unit", "Metric Value"])
        w.writerow(["0", "GPU Speed Of Light Throughput", "Duration", "us", "655.97"])
        w.writerow(["0", "Scheduler Statistics", "No Eligible", "%", "67.88"])
        w.writerow(["0", "SchedulerStats", "", "", ""])  # a rule's row: no metric
    out = tmp_path / "phases.json"
    env = json.dumps({"device": "test", "commit": "abc"})
    assert phases_tool.main([str(src), "--labels", "fast", "--details", str(det), "--out",
                           str(out), "--env", env]) == 0
    rec = json.loads(out.read_text())
    assert rec["device"] == "test"
    assert rec["kernels"]["fast"]["metrics"] == {"duration_us": 655.97, "no_eligible_pct": 67.88}
    phases = rec["kernels"]["fast"]["phases"]
    ranges = {k: v["sass_ranges"] for k, v in phases.items()}
    assert ranges["walk"] == [[2, 7]] and ranges["wait for S"] == [[10, 11]]
    assert ranges["start QK(k+1) and PV half 0 (k)"] == [[7, 10]]
    assert ranges["softmax part A"] == [[11, 12]] and ranges["fold 0"] == [[12, 14]]
    assert ranges["start PV half 1"] == [[14, 16]] and ranges["softmax part B"] == [[16, 17]]
    assert ranges["fold 1 (accurate: and P's split)"] == [[17, 19]]
    assert ranges["producer: loader"] == [[20, 24]] and ranges["producer: scheduler"] == [[24, 25]]
    total = sum(n for _, n in PAGE)
    assert rec["kernels"]["fast"]["total_samples"] == total
    assert abs(sum(v["samples_pct"] for v in phases.values()) - 100) < 0.05
    walk = phases["walk"]["states_pct"]
    assert list(walk) == ["selected", "long_sb"]  # largest first, the Not Issued copies left out
    assert walk["long_sb"] == round(100 * 3 / total, 2)
    rest = phases["consumer: group boundaries and the rest"]
    assert rest["samples_pct"] == round(100 * (5 + 1 + 3) / total, 2)
    assert abs(sum(v["consumer_time_pct"] for k, v in phases.items()
                   if not k.startswith("producer")) - 100) < 0.2
    assert "consumer_time_pct" not in phases["producer: loader"]
    assert "softmax part A" in capsys.readouterr().out
    assert phases_tool.metric_key("Executed Ipc Active", "inst/cycle") == (
        "executed_ipc_active_instcycle")
