"""The reader's tools: kernel excerpts by marked region and self-checking exercises."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pageweaver_edu.notebook import exercises, kernel_code

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_code, "kernel_dir", lambda: tmp_path)
    return tmp_path


def test_excerpt_returns_the_marked_lines(kernels):
    (kernels / "k.cu").write_text("int a;\n  // region: body\n    x = 1;\n      y = 2;\n"
                                  "  // endregion: body\nint b;\n")
    ex = kernel_code.kernel_excerpt("k.cu", "body")
    assert (ex.first, ex.last) == (3, 4)
    assert ex.code == "x = 1;\n  y = 2;"
    assert "kernels/k.cu, lines 3-4" in ex._repr_markdown_()
    assert "```cuda" in ex._repr_markdown_()


@pytest.mark.parametrize("text, problem", [
    ("// region: a\n// region: b\n// endregion: b\n// endregion: a\n", "inside"),
    ("// region: a\n// endregion: a\n// region: a\n// endregion: a\n", "twice"),
    ("// endregion: a\n", "without"),
    ("// region: a\nx;\n", "never closed"),
])
def test_bad_regions_are_named(kernels, text, problem):
    (kernels / "k.cu").write_text(text)
    with pytest.raises(ValueError, match=problem):
        kernel_code.kernel_regions("k.cu")


def test_missing_region_lists_the_others(kernels):
    (kernels / "k.cu").write_text("// region: a\nx;\n// endregion: a\n")
    with pytest.raises(KeyError, match=r"has no region 'b'; it has \['a'\]"):
        kernel_code.kernel_excerpt("k.cu", "b")


def _notebook_excerpts():
    pattern = re.compile(r"kernel_excerpt\(\s*[\"']([\w.]+)[\"']\s*,\s*[\"']([\w.-]+)[\"']")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for match in pattern.finditer("".join(cell["source"])):
                yield path.name, match.group(1), match.group(2)


def test_every_excerpt_a_chapter_names_exists():
    for chapter, file, region in _notebook_excerpts():
        excerpt = kernel_code.kernel_excerpt(file, region)  # KeyError names the chapter's slip
        assert excerpt.code.strip(), f"{chapter}: region {region!r} of {file} is empty"


def _square_cases(rng):
    for _ in range(20):
        yield (int(rng.integers(-50, 50)),), {}
    yield (0,), {}


SQUARE = exercises.Exercise("square", "Return x * x.", lambda x: x * x, _square_cases)


def test_exercise_passes_the_reference(capsys):
    assert SQUARE.check(lambda x: x ** 2, seed=7)
    assert capsys.readouterr().out.strip() == "✓ square: all 21 cases of seed 7 agree with the " \
                                              "reference."


def test_exercise_names_the_first_differing_case():
    result = SQUARE.run(lambda x: x * abs(x))
    assert not result.passed
    assert "differs. inputs: " in result.message and "yours: " in result.message
    assert "\n" not in result.message


def test_exercise_reports_exceptions_and_unwritten_code():
    def unwritten(x):
        raise NotImplementedError

    assert SQUARE.run(unwritten).message == "square: not written yet. Return x * x."
    boom = SQUARE.run(lambda x: 1 // 0)
    assert "raised ZeroDivisionError" in boom.message and not boom.passed


def test_same_value_compares_shapes_and_values():
    assert exercises.same_value(np.arange(3), [0, 1, 2])
    assert not exercises.same_value(np.arange(3), np.arange(4))
    assert not exercises.same_value(np.zeros(2), np.array([0.0, 1e-30]))
    assert exercises.same_value({1, 2}, {2, 1})
    assert exercises.same_value((np.arange(2), 3), (np.arange(2), 3))
    close = exercises.close_value(rtol=1e-3)
    assert close([1.0, 2.0], [1.0005, 2.0]) and not close([1.0], [1.1])
