"""Every chapter with widgets: Run All, then move every control twice, with no hidden error.

A widget callback that raises still leaves the figure redrawn; JupyterLab only counts the
traceback in its Log Console. Here every exception the kernel reports (``KernelErrors``,
read from the kernel's websocket) fails the test: during Run All, during the moves, and at
teardown (conftest.py). Every move must also redraw something outside the moved control
(``widget_actions.move``), and each app is shot after its moves
(``tests/browser/artifacts/<NN>_app<k>_moved.png``).

The chapters with widgets are found in the notebooks' code (ipywidgets imports and the
``*_app`` / ``pipeline_explorer`` / ``CtaStepper`` builders); chapters 03, 06, 12 and 13 also
have their own tests (test_lab_widgets.py, test_lab_later_chapters.py), which move their
controls the same way.

``PAGEWEAVER_BROWSER_BREAK=raise`` (every callback raises after its redraw) makes every test
here fail; so does a FigureWidget given NumPy arrays (plotly's merge of the browser's answer
raises "The truth value of an array ... is ambiguous").
"""

from __future__ import annotations

import pytest
from labdriver import ACTIVE, open_notebook, run_all, shot
from widget_actions import controls, exercise, widget_chapters

OWN_TESTS = {"03", "06", "12", "13"}  # test_lab_widgets.py, test_lab_later_chapters.py


def move_every_control(page, artifacts, stem: str, moves: int = 2) -> dict:
    """Move each control ``moves`` times; fail on a dead control or a kernel exception."""
    times = exercise(page, moves)
    assert times, f"{stem}: no widget control found after Run All"
    dead = [k for k, v in times.items() if None in v]
    assert not dead, f"{stem}: these controls redrew nothing: {dead}"
    for k in sorted({c.output for c in controls(page)}):
        out = page.locator(f"{ACTIVE} .jp-OutputArea-output").nth(k)
        shot(page, artifacts, f"{stem}_app{k}_moved", out)
    page.kernel_errors.check(f"{stem}: the kernel, while the widgets moved,")
    return times


def test_widget_chapters_are_all_covered():
    found = {name[:2] for name in widget_chapters()}
    assert {"01", "03", "06", "13"} <= found, found  # the finder still finds them
    assert OWN_TESTS <= found


@pytest.mark.parametrize("name", [n for n in widget_chapters() if n[:2] not in OWN_TESTS])
def test_widgets_move_without_kernel_errors(page, lab, artifacts, name):
    open_notebook(page, lab, name)
    seconds = run_all(page, artifacts, name[:2])
    print(f"\n{name}: Run All Cells took {seconds:.1f} s in the browser")
    page.wait_for_timeout(1000)  # the last figures finish drawing
    times = move_every_control(page, artifacts, name[:2])
    print(f"{name}: {len(times)} controls moved, no kernel exception")
