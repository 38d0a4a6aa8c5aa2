"""The paper's numbers live in one table (pageweaver_edu/notebook/paper_numbers.py): printed as
the paper prints them, ranges kept as ranges, and no chapter module or notebook code cell
carries its own copy."""

import json
import re
from pathlib import Path

import pytest

from pageweaver_edu.notebook.paper_numbers import PAPER, paper_table, paper_text

ROOT = Path(__file__).resolve().parents[2]
#: Literals that only the table may hold.
LITERALS = ("1.36633", "1.27037", "1.30792", "95.96", "37.55", "58.41", "34.65", "19.3",
            "34.6", "1.371", "1.368", "1.832", "1.827", "102_429", "89_426", "1.075", "1.701")


def test_ranges_print_as_ranges_and_values_as_printed():
    assert paper_text("grouping_w64") == "19.3–19.5 µs" and PAPER["grouping_w64"].value == \
        pytest.approx(19.4)
    assert paper_text("t0") == "1.36633 ms" and paper_text("vs_flashinfer") == "1.701×"
    assert paper_text("online_w128_change") == "-3.26 to -7.66 %"
    assert paper_text("service_pairs") == "+0.630/+0.666/+0.641 %"
    assert PAPER["nrms_union8"].low == 2.246 and PAPER["nrms_union8"].high == 3.967


def test_the_three_original_order_calls_are_separate_experiments():
    names = {PAPER[k].experiment for k in ("t0", "offline_original", "union8_l43_fig5")}
    assert len(names) == 3
    table = paper_table()
    assert table.count("\n") == len(PAPER) + 1 and "1.36633 ms" in table and "1.371 ms" in table


def test_eq7_of_the_table_adds_up():
    t0, tf, ton = (PAPER[k].value for k in ("t0", "t_fixed", "t_online"))
    assert 1e3 * (t0 - tf) == pytest.approx(PAPER["s_exec"].value, abs=0.006)
    assert 1e3 * (ton - tf) == pytest.approx(PAPER["c_online"].value, abs=0.006)
    assert 1e3 * (t0 - ton) == pytest.approx(PAPER["s_net"].value, abs=0.006)


def _code_cells():
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                yield path.name, "".join(cell["source"])


def test_no_module_or_code_cell_keeps_its_own_copy():
    sources = [(p.name, p.read_text(encoding="utf-8"))
               for p in (ROOT / "pageweaver_edu" / "notebook").glob("*.py")
               if p.name != "paper_numbers.py"] + list(_code_cells())
    found = [(name, lit) for name, text in sources for lit in LITERALS
             if re.search(r"(?<![\d.])" + re.escape(lit) + r"(?![\d])", text)]
    assert not found, found


def test_the_docs_table_is_the_library_table():
    text = (ROOT / "docs" / "definitions.md").read_text(encoding="utf-8")
    block = text.split("<!-- paper-numbers:begin -->\n")[1].split("\n<!-- paper-numbers:end -->")[0]
    assert block == paper_table()
