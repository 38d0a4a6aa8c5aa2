"""``pageweaver report`` in a real browser: every preset's page loads from a file in headless
Chromium with no network, logs no JavaScript error, and every figure draws (each plotly div
has its SVG, with data traces in it).

Any request that is not ``file://`` is aborted and fails the test (the page is self-contained).
Full-page screenshots: tests/browser/artifacts/report_<preset>.png.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from labdriver import JSErrors

from pageweaver_edu.workloads import preset_names

FIGURES_JS = """
() => Array.from(document.querySelectorAll('div.figure')).map(box => {
  const plot = box.querySelector('.js-plotly-plot');
  return {name: box.dataset.figure,
          svg: plot ? plot.querySelectorAll('svg.main-svg').length : 0,
          traces: plot ? plot.querySelectorAll('.cartesianlayer g.trace').length : 0};
})
"""


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "pageweaver_edu.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports")
    out = {}
    for name in preset_names():
        _cli("workload", name, "--out", folder / f"{name}.npz")
        _cli("report", folder / f"{name}.npz", "--out", folder / f"{name}.html")
        out[name] = folder / f"{name}.html"
    return out


@pytest.mark.parametrize("preset", preset_names())
def test_report_page_loads_and_draws(browser_context, reports, artifacts, preset):
    page = browser_context.new_page()
    errors = JSErrors(page)
    outside: list[str] = []

    def only_files(route):
        if route.request.url.startswith("file://"):
            return route.continue_()
        outside.append(route.request.url)
        return route.abort()

    page.route("**/*", only_files)
    try:
        page.goto(reports[preset].as_uri(), wait_until="load")
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('div.figure')).every("
            "b => b.querySelector('.js-plotly-plot svg.main-svg'))", timeout=30_000)
        figures = page.evaluate(FIGURES_JS)
        page.screenshot(path=str(artifacts / f"report_{preset}.png"), full_page=True)
    finally:
        page.close()
    names = [f["name"] for f in figures]
    assert {"supports", "visits", "union-hist", "profile", "rho", "gain", "estimate"} <= set(
        names), names
    assert all(f["svg"] >= 1 and f["traces"] >= 1 for f in figures), figures
    assert not outside, f"the page asked the network for {outside}"
    errors.check()
