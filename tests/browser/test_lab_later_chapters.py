"""Chapters 08, 12 and 13 in a real browser: they run, read well and their widgets respond.

* ``08_online_regroup_cost``: Run All; the orderings scatter draws its points with no text
  label on top of another (the check of ``walk_series.CHECKS_JS``).
* ``12_fp8_union8``: Run All; the error-budget app's control descriptions are not cut off, its
  figure fills the output's width, and unticking "Q per-row scale" redraws the bars and the
  status line.
* ``13_your_own_capture``: Run All; the capture app's figures fill the output's width, and
  choosing another **g** redraws its figures and status line.

Any JavaScript error or kernel exception fails the test (conftest.py); every control of the
widget chapters is moved twice (``test_lab_widget_errors``); screenshots go to
tests/browser/artifacts/.
The kernel imports this checkout's ``pageweaver_edu`` (``labdriver.Lab`` puts the checkout
first on ``sys.path``), whatever checkout the environment was installed from.
"""

from __future__ import annotations

import re

from labdriver import (
    ACTIVE,
    FIGURE_SNAPSHOT_JS,
    open_notebook,
    run_all,
    select_other,
    shot,
    wait_for_change,
    widget_output,
)
from test_lab_widget_errors import move_every_control
from walk_series import CHECKS_JS

from pageweaver_edu.notebook.online_cost import RECORDED_PRESETS

#: Width of a widget's plotly SVG over the width of its output area (plotly's default 700 px
#: is ~0.7 of a 1400 px window's notebook).
WIDTHS_JS = """
el => Array.from(el.querySelectorAll('.js-plotly-plot svg.main-svg')).map(svg =>
  svg.getBoundingClientRect().width / el.getBoundingClientRect().width)
"""


def _run(page, lab, artifacts, name: str) -> None:
    open_notebook(page, lab, name)
    seconds = run_all(page, artifacts, name[:2])
    print(f"\n{name}: Run All Cells took {seconds:.1f} s in the browser")
    page.wait_for_timeout(1000)  # let the last figures finish drawing


def _full_width(app, what: str) -> None:
    app.locator(".js-plotly-plot svg.main-svg").first.wait_for(state="attached")
    deadline_ok = False
    for _ in range(50):  # the refit follows the first drawing by one kernel round trip
        widths = app.evaluate(WIDTHS_JS)
        if widths and min(widths) > 0.95:
            deadline_ok = True
            break
        app.page.wait_for_timeout(200)
    assert deadline_ok, f"{what}: figure widths {widths} of the output, expected > 0.95"


def test_08_figures_have_no_overlapping_labels(page, lab, artifacts):
    _run(page, lab, artifacts, "08_online_regroup_cost.ipynb")
    scatter = page.locator(f"{ACTIVE} .jp-OutputArea-output").filter(
        has=page.locator(".gtitle", has_text="complete-call time vs union visits"))
    assert scatter.count() == 1, "the orderings scatter did not render"
    shot(page, artifacts, "08_orderings", scatter)
    findings = scatter.evaluate(CHECKS_JS)
    assert not [f for f in findings if "overlapping" in f], findings
    names = [t for t in scatter.locator(".textpoint text").all_text_contents() if t.strip()]
    assert sorted(names) == sorted(RECORDED_PRESETS)  # one name per preset (and its colour)
    page.js_errors.check()


def test_12_budget_widget_reads_well_and_responds(page, lab, artifacts):
    _run(page, lab, artifacts, "12_fp8_union8.ipynb")
    app, rowscale = widget_output(page, "widget-checkbox", "Q per-row scale")
    findings = app.evaluate(CHECKS_JS)
    assert not [f for f in findings if "cut off" in f or "without a description" in f], findings
    _full_width(app, "chapter 12 budget app")

    def bars():
        return app.evaluate(FIGURE_SNAPSHOT_JS)

    def status():
        return app.locator(".widget-label").filter(has_text="kernel total").first.inner_text()

    bars0, status0 = bars(), status()
    shot(page, artifacts, "12_budget_before", app)
    rowscale.locator("input[type=checkbox]").uncheck()
    wait_for_change(bars, bars0, "budget bars after unticking 'Q per-row scale'")
    wait_for_change(status, status0, "budget status after unticking 'Q per-row scale'")
    shot(page, artifacts, "12_budget_no_rowscale", app)
    move_every_control(page, artifacts, "12")
    page.js_errors.check()


def test_13_capture_app_fills_the_width_and_responds(page, lab, artifacts):
    _run(page, lab, artifacts, "13_your_own_capture.ipynb")
    app, g_menu = widget_output(page, "widget-dropdown", "g")
    _full_width(app, "chapter 13 capture app")

    def figures():
        return app.evaluate(FIGURE_SNAPSHOT_JS)

    def status():
        return app.locator(".widget-html-content").first.inner_text()

    fig0, status0 = figures(), status()
    assert re.search(r"g = 8\b", status0), f"unexpected initial status: {status0!r}"
    shot(page, artifacts, "13_app_before", app)
    new_g = select_other(g_menu)
    wait_for_change(figures, fig0, f"capture app figures after g → {new_g}")
    status1 = wait_for_change(status, status0, f"capture app status after g → {new_g}")
    assert f"g = {new_g}" in status1, status1
    shot(page, artifacts, f"13_app_g{new_g}", app)
    assert app.locator(".widget-dropdown select").nth(2).input_value() != "", \
        "the chunk-size menu shows no selection"
    move_every_control(page, artifacts, "13")
    page.js_errors.check()
