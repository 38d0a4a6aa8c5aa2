"""Static checks of the committed notebooks: shape of a chapter, size, no widget state.

nbval (``make nbval``) executes them; these checks keep the committed files honest.
"""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REQUIRED_HEADINGS = ("why", "takeaways", "exercises")


def test_series_exists_and_is_numbered_in_order():
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers[:7] == list(range(7)), f"chapters 00–06 expected, found {numbers}"
    assert numbers == sorted(set(numbers))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_is_clean_and_complete(path):
    assert path.stat().st_size < 1_000_000, "notebook too large: strip figures or outputs"
    nb = json.loads(path.read_text())
    assert "widgets" not in nb.get("metadata", {}), "saved widget state must not be committed"
    sources = ["".join(c["source"]) for c in nb["cells"]]
    assert not any("NBVAL_SKIP" in s for s in sources), "GPU cells must not use NBVAL_SKIP"
    kinds = [c["cell_type"] for c in nb["cells"]]
    markdown = [s for k, s in zip(kinds, sources, strict=True) if k == "markdown"]
    headings = " ".join(
        line.lower() for s in markdown for line in s.splitlines() if line.startswith("#")
    )
    for word in REQUIRED_HEADINGS:
        assert word in headings, f"{path.name} has no '{word}' section"
    code = [s for k, s in zip(kinds, sources, strict=True) if k == "code"]
    assert code and "setup_notebook" in code[0], "first code cell must call setup_notebook"
    assert any("NBVAL_CHECK_OUTPUT" in s for s in code), "no checked cell"
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {})
            assert out.get("output_type") != "error", f"{path.name} was saved with an error"
    text = path.read_text()
    assert not re.search(r"<script[^>]*plotly", text), "plotly.js must not be embedded"
