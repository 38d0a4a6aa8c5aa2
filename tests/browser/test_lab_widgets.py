"""The series in a real browser: JupyterLab + ipywidgets + plotly in headless Chromium.

nbval proves the kernels run; this proves that what a reader sees renders and responds:

* ``03_greedy_regroup``: Run ▸ Run All Cells, then change the grouping widget's **W** menu
  and then its **g** menu; its figure (SVG) and status line must change each time.
* ``06_figure3_pipeline``: Run All, step the animated timeline (click on its slider, then
  ▶ play): the frame (slider label and bars) must change; tick the explorer's "broken
  protocol" switch: its status line must report a hazard and its timeline must change.

Any JavaScript error in the page and any exception the kernel reports fails the test
(conftest.py); then every control is moved twice (``test_lab_widget_errors``). Screenshots
of every step land in tests/browser/artifacts/. ``PAGEWEAVER_BROWSER_BREAK=observe`` kills every
widget callback in the kernel: both tests must then fail.
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

from pageweaver_edu.notebook.pipeline import BROKEN  # the explorer checkbox's description


def test_03_greedy_regroup_widgets_respond(page, lab, artifacts):
    open_notebook(page, lab, "03_greedy_regroup.ipynb")
    seconds = run_all(page, artifacts, "03")
    print(f"\n03_greedy_regroup: Run All Cells took {seconds:.1f} s in the browser")

    # The grouping explorer is the one app with a W menu (the W-curve app has none).
    app, w_menu = widget_output(page, "widget-dropdown", "W")
    g_menu = app.locator(".widget-dropdown").filter(
        has=page.locator(".widget-label", has_text=re.compile(r"^\s*g\s*$")))
    assert g_menu.count() == 1, "the grouping explorer has no g menu"
    app.locator(".js-plotly-plot svg.main-svg").first.wait_for(state="attached")

    def figure():
        return app.evaluate(FIGURE_SNAPSHOT_JS)

    def status():
        return app.locator(".widget-html-content").first.inner_text()

    fig0, status0 = figure(), status()
    assert fig0, "the grouping figure has no SVG"
    shot(page, artifacts, "03_grouping_before", app)

    new_w = select_other(w_menu)
    fig1 = wait_for_change(figure, fig0, f"grouping figure after W → {new_w}")
    status1 = wait_for_change(status, status0, f"grouping status line after W → {new_w}")
    shot(page, artifacts, f"03_grouping_W{new_w}", app)

    new_g = select_other(g_menu)
    wait_for_change(figure, fig1, f"grouping figure after g → {new_g}")
    wait_for_change(status, status1, f"grouping status line after g → {new_g}")
    shot(page, artifacts, f"03_grouping_W{new_w}_g{new_g}", app)
    move_every_control(page, artifacts, "03")
    page.js_errors.check()


def test_06_figure3_animation_and_explorer(page, lab, artifacts):
    open_notebook(page, lab, "06_figure3_pipeline.ipynb")
    seconds = run_all(page, artifacts, "06")
    print(f"\n06_figure3_pipeline: Run All Cells took {seconds:.1f} s in the browser")

    # 1. The animated timeline: plotly frames, a slider and ▶ play, all in the page.
    # (a plotly mimetype output is itself the .js-plotly-plot element)
    anim = page.locator(f"{ACTIVE} .jp-OutputArea-output").filter(
        has=page.locator(".slider-container")).first
    anim.wait_for(state="attached", timeout=30_000)
    anim.scroll_into_view_if_needed()

    def frame():
        return anim.evaluate(FIGURE_SNAPSHOT_JS)

    def frame_label():  # the slider's current-value text, e.g. "t ≤ 26.5"
        return anim.locator(".slider-group > text.slider-label").first.text_content()

    f0, label0 = frame(), frame_label()
    shot(page, artifacts, "06_timeline_initial", anim)
    box = anim.locator(".slider-rail-touch-rect").first.bounding_box()
    assert box, "the animation slider has no rail"
    page.mouse.click(box["x"] + 0.25 * box["width"], box["y"] + box["height"] / 2)
    label1 = wait_for_change(frame_label, label0, "animation slider label after a click")
    f1 = wait_for_change(frame, f0, "animation frame after a slider click")
    shot(page, artifacts, "06_timeline_slider_25pct", anim)

    play = anim.locator(".updatemenu-button").filter(has_text=re.compile("play", re.I))
    assert play.count() == 1, "no ▶ play button"
    play.click()
    wait_for_change(frame_label, label1, "animation slider label after ▶ play")
    wait_for_change(frame, f1, "animation frame after ▶ play")
    shot(page, artifacts, "06_timeline_playing", anim)

    # 2. The explorer: ipywidgets + FigureWidget, callbacks in the kernel.
    explorer, broken = widget_output(page, "widget-checkbox", BROKEN)

    def timeline():
        return explorer.evaluate(FIGURE_SNAPSHOT_JS)

    def status():
        return explorer.locator(".widget-html-content").first.inner_text()

    t0, s0 = timeline(), status()
    assert "hazards: 0" in s0, f"unexpected initial explorer status: {s0!r}"
    shot(page, artifacts, "06_explorer_before", explorer)
    broken.locator("input[type=checkbox]").check()
    s1 = wait_for_change(status, s0, "explorer status after ticking 'broken protocol'")
    wait_for_change(timeline, t0, "explorer timeline after ticking 'broken protocol'")
    assert "hazards: 0" not in s1, f"the broken protocol shows no hazard: {s1!r}"
    shot(page, artifacts, "06_explorer_broken", explorer)
    move_every_control(page, artifacts, "06")
    page.js_errors.check()
