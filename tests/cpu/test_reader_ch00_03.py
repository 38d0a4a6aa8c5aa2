"""Chapters 00-03 for a first reader: the exercises check what they claim, the chapters open
with what they teach, and the numbers in their prose come from the files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pageweaver_edu.notebook.regroup_cases import DELTA, GREEDY_PICK
from pageweaver_edu.notebook.support_exercises import ATTENDED_TOKENS, RHO_Q

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ("00_overview", "01_support_sets", "02_query_union", "03_greedy_regroup")


def _cells(chapter: str) -> list[dict]:
    path = ROOT / "notebooks" / f"{chapter}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


# --- the exercises: the reference passes, a plausible slip fails with one line ---------------


def _attended_strict_causal(pages, page_size, length, causal_pos):
    t = np.array([p * page_size + k for p in sorted({p for p in pages if p >= 0})
                  for k in range(page_size)], dtype=np.int64)
    return t[(t < length) & (t < causal_pos)]  # off by one: drops t = c_i


def _attended_counts_repeats(pages, page_size, length, causal_pos):
    t = np.array([p * page_size + k for p in pages if p >= 0 for k in range(page_size)],
                 dtype=np.int64)
    return t[(t < length) & (t <= causal_pos)]  # a repeated page shows up twice


def _rho_counts_slots(topk, g):
    edges = sum(len(row) for row in topk)  # counts padding and repeats as edges
    unions = sum(len({p for row in topk[s:s + g] for p in row if p >= 0})
                 for s in range(0, len(topk), g))
    return edges / unions if unions else float("nan")


def _rho_right(topk, g):
    edges = sum(len({p for p in row if p >= 0}) for row in topk)
    unions = sum(len({p for row in topk[s:s + g] for p in row if p >= 0})
                 for s in range(0, len(topk), g))
    return edges / unions if unions else float("nan")


def _delta_with_padding(row, union):
    return len(set(row) - set(union))  # counts -1 as a page


def _delta_right(row, union):
    return len({p for p in row if p >= 0} - set(union))


def _pick_first_in_list(topk, remaining, union):
    return min(remaining, key=lambda j: _delta_right(topk[j], union))  # ties: list order


def _pick_largest_id(topk, remaining, union):
    return min(remaining, key=lambda j: (_delta_right(topk[j], union), -j))


def _pick_right(topk, remaining, union):
    return min(remaining, key=lambda j: (_delta_right(topk[j], union), j))


@pytest.mark.parametrize("exercise, answer", [
    (ATTENDED_TOKENS, lambda pages, page_size, length, causal_pos:
        ATTENDED_TOKENS.reference(pages, page_size, length, causal_pos).tolist()),
    (RHO_Q, _rho_right),
    (DELTA, _delta_right),
    (GREEDY_PICK, _pick_right),
])
def test_a_right_answer_passes(exercise, answer, capsys):
    for seed in range(3):
        assert exercise.check(answer, seed=seed)
    assert capsys.readouterr().out.count("✓") == 3


@pytest.mark.parametrize("exercise, wrong", [
    (ATTENDED_TOKENS, _attended_strict_causal),
    (ATTENDED_TOKENS, _attended_counts_repeats),
    (RHO_Q, _rho_counts_slots),
    (DELTA, _delta_with_padding),
    (GREEDY_PICK, _pick_first_in_list),
    (GREEDY_PICK, _pick_largest_id),
])
def test_a_plausible_slip_fails_in_one_line(exercise, wrong, capsys):
    assert not exercise.check(wrong)
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"✗ {exercise.name}: case ") and "\n" not in out
    assert "differs" in out and "expected" in out


@pytest.mark.parametrize("exercise", [ATTENDED_TOKENS, RHO_Q, DELTA, GREEDY_PICK])
def test_the_starter_says_not_written_yet(exercise, capsys):
    def starter(*args):
        raise NotImplementedError

    assert not exercise.check(starter)
    assert capsys.readouterr().out.startswith(f"✗ {exercise.name}: not written yet.")


def test_cases_hold_the_edge_cases():
    attended = [a for a, _ in ATTENDED_TOKENS.cases(np.random.default_rng(0))]
    assert any(all(p < 0 for p in row) for row, *_ in attended)           # empty support
    assert any(len({p for p in row if p >= 0}) < len([p for p in row if p >= 0])
               for row, *_ in attended)                                    # a repeat
    assert any(0 < c % P < P - 1 for _, P, _, c in attended if P > 2)    # cut inside a page
    picks = [a for a, _ in GREEDY_PICK.cases(np.random.default_rng(0))]
    ties = 0
    for topk, remaining, union in picks:
        costs = [_delta_right(topk[j], union) for j in remaining]
        ties += costs.count(min(costs)) > 1
    assert ties >= 5
    rho = [a for a, _ in RHO_Q.cases(np.random.default_rng(0))]
    assert any(len(topk) % g for topk, g in rho)                           # a short last group


# --- the chapters ----------------------------------------------------------------------------


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_opens_with_what_when_and_how_long(chapter):
    cells = _cells(chapter)
    first = _source(cells[0])
    lines = first.splitlines()
    assert lines[0].startswith("# "), "the first cell starts with the title"
    body = "\n".join(lines[1:])
    assert "**You will learn**" in body and "**You need**" in body
    assert re.search(r"\*\*Time\*\*: about \d+ minutes", body)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_a_checked_exercise_cell(chapter):
    cells = [c for c in _cells(chapter) if c["cell_type"] == "code"]
    exercise = [c for c in cells if ".check(" in _source(c) and "NotImplementedError" in
                _source(c)]
    assert exercise, f"{chapter} has no exercise cell with a starter and a check"
    for cell in exercise:
        assert _source(cell).startswith("# NBVAL_CHECK_OUTPUT")
        text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
        assert "not written yet" in text


WRONG_WORDS = {
    "execution slot": "a member position r (docs/notation.md)",
    "four-slot": "four member positions",
    "logits": "scores Z",
}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_uses_the_notation(chapter):
    text = "\n".join(_source(c) for c in _cells(chapter)).lower()
    for word, instead in WRONG_WORDS.items():
        assert word not in text, f"{chapter} says {word!r}; write {instead}"


def test_overview_prints_the_recorded_regroup_times():
    from pageweaver_edu.notebook.overview import regroup_kernel_times
    from pageweaver_edu.records import recorded_results, result_medians

    m = result_medians(recorded_results("gpu_regroup_h200"))
    text = regroup_kernel_times()
    assert f"{m['gpu_regroup_w64']:.1f}" in text and f"{m['gpu_regroup_w128']:.1f}" in text
    prose = "\n".join(_source(c) for c in _cells("00_overview") if c["cell_type"] == "markdown")
    assert "12 / 20" not in prose


# LiveKernel objects whose live call launches a source of kernels/ (their titles name it).
KERNEL_CELLS = ("REGROUP.run(", "UNION_PREPARE.run(", "UNION8.run(", "ONLINE_COST.run(",
                "FP8_UNION8.run(", "ESTIMATE.run(")


def test_live_kernel_chapters_match_the_notebooks():
    from pageweaver_edu.notebook.overview import live_chapters, live_chapters_text

    found = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        text = "\n".join(_source(c) for c in _cells(path.stem) if c["cell_type"] == "code")
        if any(re.search(r"(?<![\w.])" + re.escape(name), text) for name in KERNEL_CELLS):
            found.append(path.name[:2])
    assert live_chapters() == found
    assert live_chapters_text() == ", ".join(found[:-1]) + " and " + found[-1]
    overview = "\n".join(_source(c) for c in _cells("00_overview"))
    assert "07-08" not in overview and "07–08" not in overview
    words = " ".join(live_chapters_text().split())
    assert words in " ".join(overview.split())              # the takeaway names them
    assert words in " ".join(README.read_text(encoding="utf-8").split())


# --- the README: chapter list first, the verification record in docs/ -----------------------


README = ROOT / "README.md"


def test_readme_lists_every_chapter_before_anything_else():
    text = README.read_text(encoding="utf-8")
    first_section = text.index("\n## ")
    assert "make lab" in text[:first_section] and "make test" in text[:first_section]
    assert text[first_section:].startswith("\n## The chapters\n")
    listed = re.findall(r"^- \[(\d\d) · (.+)\]\(notebooks/(\d\d_\w+\.ipynb)\)$",
                        text, flags=re.MULTILINE)
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [name for _, _, name in listed] == [p.name for p in notebooks]
    for num, title, name in listed:
        first = _source(_cells(name[:-6])[0]).splitlines()[0]
        assert first == f"# {num} · {title}", f"README title of {name} is stale"


def test_readme_links_the_verification_record_and_names_cuda_right():
    text = README.read_text(encoding="utf-8")
    assert "(docs/verification.md)" in text
    assert (ROOT / "docs" / "verification.md").is_file()
    assert "torch 13.0" not in text and "torch built for CUDA 13.0" in text
    assert "Targets, as recorded" not in text  # the record lives in docs/verification.md


def test_results_table_regenerates_the_readme_block():
    from tests.helpers.tool_module import load_tool

    tool = load_tool("results_table")
    text = README.read_text(encoding="utf-8")
    block = text.split(tool.BEGIN, 1)[1].split(tool.END, 1)[0]
    assert block.strip() == tool.tables().strip()
    assert tool._cuda("torch 13.0; Build cuda_13.0.r13.0/compiler.1") == \
        "torch built for CUDA 13.0, nvcc cuda_13.0.r13.0/compiler.1"
