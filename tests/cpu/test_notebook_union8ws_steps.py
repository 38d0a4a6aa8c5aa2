"""Chapter 12's step table of the warp-specialized Union8, read from its result file."""

from __future__ import annotations

from pageweaver_edu.notebook import union8ws_steps as steps


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


def test_recorded_file_has_every_step():
    table = steps.step_table()
    assert len(table.splitlines()) == 2 + len(steps.STEPS)
    assert "commit" in steps.step_record_header()
