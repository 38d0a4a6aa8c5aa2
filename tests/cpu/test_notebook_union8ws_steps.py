"""Chapter 12's step table of the warp-specialized Union8, read from its result file."""

from __future__ import annotations

import json
from pathlib import Path

from pageweaver_edu.notebook import union8ws_steps as steps

ROOT = Path(__file__).resolve().parents[2]


def _record(w128):
    rows = []
    for name, us in w128.items():
        rows += [{"name": f"{name}_w128", "median_us": us},
                 {"name": f"{name}_original", "median_us": 1.1 * us}]
    return {"results": rows}


def test_only_the_build_up_steps_get_a_ratio():
    table = steps.step_table(_record({"cluster": 1800, "ws_serial_4stages": 900,
                                      "ws_overlap_6stages": 720, "ws_ablate_ring_only": 350}))
    rows = table.splitlines()[2:]
    assert [r.rsplit("|", 2)[1].strip() for r in rows] == ["–", "2.00", "1.25", "–"]
    assert "ring of copies alone" in rows[-1]


def test_rows_of_no_step_are_left_out():
    """A run may time a build option beside the steps (an A/B row): the table shows the steps."""
    table = steps.step_table(_record({"ws_overlap_6stages": 720, "ws_overlap_6stages_option": 700}))
    assert len(table.splitlines()) == 3 and "700" not in table


def test_recorded_file_has_every_step():
    table = steps.step_table()
    assert len(table.splitlines()) == 2 + len(steps.STEPS)
    assert "commit" in steps.step_record_header()


def test_record_header_names_the_file_it_read():
    path, header = steps.step_record_header().split(":\n", 1)
    rec = json.loads((ROOT / path).read_text(encoding="utf-8"))
    assert f"{rec['device']}, {rec['date']}" in header and f"commit {rec['commit']}" in header


def test_lockstep_table_puts_each_ablation_beside_the_one_sm_kernel():
    rows = {}
    for i, ab in enumerate(("", *(a for a in steps.ABLATION_ROWS if a))):
        sfx = f"_{ab}" if ab else ""
        rows |= {f"cluster{sfx}_original": 2000 + i, f"cluster{sfx}_w128": 1800 + i,
                 f"union4_cluster{sfx}_original": 1500 + i}
    rows |= {"ws_overlap_6stages_w128": 720, "ws_ablate_ring_only_w128": 350,
             "ws_ablate_no_softmax_w128": 420, "ws_ablate_no_mma_w128": 400}
    table = steps.lockstep_table({"results": [{"name": k, "median_us": v}
                                              for k, v in rows.items()]})
    lines = table.splitlines()[2:]
    assert len(lines) == len(steps.ABLATION_ROWS)
    assert [c.strip() for c in lines[0].split("|")[2:6]] == ["2,000", "1,800", "1,500", "720"]
    assert [c.strip() for c in lines[1].split("|")[2:6]] == ["2,001", "1,801", "1,501", "350"]
    assert lines[-1].split("|")[5].strip() == "–"  # the one-SM kernel has no every-page build


def test_every_ab_run_is_recorded_and_its_table_reads_the_file():
    from pageweaver_edu.notebook.union8ws_steps import AB_RUNS, ab_table
    from pageweaver_edu.records import recorded_results, result_medians

    for stem, variants in AB_RUNS.items():
        rec = recorded_results(stem)
        where, table = ab_table(stem, rec)
        assert where.startswith(f"benchmarks/results/{rec['file']}:") and rec["commit"] in where
        rows = table.splitlines()[2:]
        assert len(rows) == len(variants), stem
        us = result_medians(rec)
        for row, (name, (_, base)) in zip(rows, variants.items(), strict=True):
            nrms = 100 * rec["check"][name]["nrms_vs_float64"]
            assert f"| {us[f'{name}_w128_attn']:,.1f} |" in row and f"| {nrms:.3f} % |" in row
            if base is not None:
                ratio = us[f"{base}_w128_attn"] / us[f"{name}_w128_attn"]
                assert f"| {ratio:.3f} |" in row


def test_ab_table_ratios_and_bits():
    from pageweaver_edu.notebook.union8ws_steps import ab_table
    from pageweaver_edu.records import recorded_results

    stem = "union8ws_ab_acc_uniform_f16res_cap64k_h100"
    rec = recorded_results(stem)
    rows = ab_table(stem, rec)[1].splitlines()[2:]
    assert rows[0].endswith("| baseline | 0.220 % | yes |") and rows[1].endswith("| yes |")
    assert rows[2].endswith("| no |")  # the FP16 residual: its own rounding
    # a file without the middle variant: its row is left out, the ratios stay to the baseline
    rec2 = {**rec, "results": [r for r in rec["results"] if not r["name"].startswith("uniform_")
                               or r["name"].startswith("uniform_f16res")]}
    assert len(ab_table(stem, rec2)[1].splitlines()) == 2 + 2


def test_not_kept_runs_read_their_files_and_lose_or_tie():
    from pageweaver_edu.notebook.union8ws_steps import NOT_KEPT_RUNS, ab_table
    from pageweaver_edu.records import recorded_results, result_medians

    for stem, variants in NOT_KEPT_RUNS.items():
        rec = recorded_results(stem)
        rows = ab_table(stem, rec)[1].splitlines()[2:]
        assert len(rows) == len(variants), stem
        us = result_medians(rec)
        for name, (_, base) in variants.items():
            assert rec["check"][name]["bitwise_equal_to_first"]
            if base is not None:  # none of them won by more than the noise of a run
                assert us[f"{base}_w128_attn"] / us[f"{name}_w128_attn"] < 1.01, (stem, name)


def test_phase_table_reads_the_consumer_phases_of_each_kernel():
    from pageweaver_edu.notebook.union8ws_steps import PHASES_STEM, phase_table
    from pageweaver_edu.records import recorded_results

    rec = recorded_results(PHASES_STEM)
    where, table = phase_table(rec)
    assert where.startswith(f"benchmarks/results/{rec['file']}:") and rec["commit"] in where
    lines = table.splitlines()
    kernels = list(rec["kernels"].values())
    assert len(lines) == 2 + sum(not p.startswith("producer") for p in kernels[0]["phases"])
    walk = lines[2].split("|")
    assert walk[1].strip() == "walk"
    assert [float(c) for c in walk[2:-1]] == [k["phases"]["walk"]["consumer_time_pct"]
                                              for k in kernels]
    # the consumers' phases are the whole of their time
    for col in range(len(kernels)):
        assert abs(sum(float(r.split("|")[2 + col]) for r in lines[2:]) - 100) < 0.5
