"""Walk the notebook series in JupyterLab as a reader would, and record what they would see.

    .venv/bin/python tests/browser/walk_series.py [NN_name.ipynb ...] [--out DIR]

For every chapter (default: all of notebooks/NN_*.ipynb): open it in a throw-away JupyterLab
(see labdriver.py), Run ▸ Run All Cells, then screenshot every figure, widget, table and
markdown output (element shots, DIR/NN/kK_kind.png) and page through the notebook (DIR/NN/
page_P.png). Alongside, automatic checks flag what reads badly:

* outputs or tables wider than the notebook (horizontal scroll) and text lines that scroll;
* plotly figures without axis titles, with a clipped title, with text smaller than 10 px, or
  with overlapping in-bar labels;
* widget controls without a description, or with a description cut off (…);
* JavaScript errors in the page; cells that fail.

Findings go to DIR/report.md (and report.json). Default DIR: tests/browser/artifacts/walk.
Not a test: a tool for the reader-experience pass; the browser test is test_lab_widgets.py.
"""

# ruff: noqa: E501  (long lines are embedded JavaScript)
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from labdriver import (  # noqa: E402
    ACTIVE,
    REPO,
    JSErrors,
    Lab,
    launch,
    missing_requirement,
    open_notebook,
    run_all,
)

CHECKS_JS = r"""
(el) => {
  const out = [];
  const box = el.getBoundingClientRect();
  const area = el.closest('.jp-OutputArea') || el;
  const avail = area.getBoundingClientRect().width;
  if (el.scrollWidth > el.clientWidth + 2)
    out.push(`scrolls horizontally (${el.scrollWidth}px content in ${el.clientWidth}px)`);
  el.querySelectorAll('table').forEach(t => {
    const w = t.getBoundingClientRect().width;
    if (w > avail + 2) out.push(`table ${Math.round(w)}px wider than the output (${Math.round(avail)}px)`);
  });
  el.querySelectorAll('pre').forEach(p => {
    if (p.scrollWidth > p.clientWidth + 2)
      out.push(`text line(s) too long: ${p.scrollWidth}px in ${p.clientWidth}px`);
  });
  // plotly
  const plots = el.matches('.js-plotly-plot') ? [el] : Array.from(el.querySelectorAll('.js-plotly-plot'));
  plots.forEach((p, i) => {
    const svg = p.querySelector('svg.main-svg');
    if (!svg) { out.push(`figure ${i}: no SVG rendered`); return; }
    const sw = svg.getBoundingClientRect();
    const xt = Array.from(p.querySelectorAll('.g-xtitle text, .g-x2title text')).map(t => t.textContent.trim()).filter(Boolean);
    const yt = Array.from(p.querySelectorAll('.g-ytitle text, .g-y2title text')).map(t => t.textContent.trim()).filter(Boolean);
    const ticks = (sel) => Array.from(p.querySelectorAll(sel)).some(t => t.textContent.trim());
    const hasCartesian = ticks('.xtick text') || ticks('.ytick text');
    if (ticks('.xtick text') && !xt.length) out.push(`figure ${i}: no x-axis title`);
    if (ticks('.ytick text') && !yt.length) out.push(`figure ${i}: no y-axis title`);
    const hit = (A, B) => Math.min(A.right, B.right) - Math.max(A.left, B.left) > 2 &&
                          Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top) > 2;
    const title = p.querySelector('.gtitle');
    if (title && title.textContent.trim()) {
      const T = title.getBoundingClientRect();
      p.querySelectorAll('.legend .traces').forEach(l => {
        if (hit(T, l.getBoundingClientRect())) out.push(`figure ${i}: title overlaps the legend entry "${l.textContent.slice(0, 40)}"`);
      });
    }
    p.querySelectorAll('.gtitle, .g-xtitle text, .g-ytitle text, .legendtext').forEach(t => {
      const r = t.getBoundingClientRect();
      if (r.width && (r.right > sw.right + 1 || r.left < sw.left - 1))
        out.push(`figure ${i}: text cut at the figure edge: "${t.textContent.slice(0, 60)}"`);
    });
    const small = new Set();
    p.querySelectorAll('svg text').forEach(t => {
      const fs = parseFloat(getComputedStyle(t).fontSize || '12');
      if (fs && fs < 10 && t.textContent.trim()) small.add(`${fs}px`);
    });
    if (small.size) out.push(`figure ${i}: text smaller than 10px (${[...small].join(', ')})`);
    // overlapping in-bar / scatter text labels
    const labels = Array.from(p.querySelectorAll('.bartext, .textpoint text, .annotation-text'))
      .map(t => ({t: t.textContent, r: t.getBoundingClientRect()}))
      .filter(o => o.r.width > 0 && o.t.trim());
    let overlaps = 0, example = '';
    for (let a = 0; a < labels.length; a++) for (let b = a + 1; b < labels.length; b++) {
      const A = labels[a].r, B = labels[b].r;
      const ox = Math.min(A.right, B.right) - Math.max(A.left, B.left);
      const oy = Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top);
      if (ox > 2 && oy > 2) { overlaps++; if (!example) example = `"${labels[a].t}" / "${labels[b].t}"`; }
    }
    if (overlaps) out.push(`figure ${i}: ${overlaps} overlapping text labels (e.g. ${example})`);
  });
  // widgets
  el.querySelectorAll('.widget-slider, .widget-dropdown, .widget-text, .widget-toggle-buttons, .widget-radio, .widget-select, .widget-inline-hbox.widget-checkbox').forEach(w => {
    const lab = w.querySelector(':scope > .widget-label, .widget-label-basic span');
    const txt = lab ? lab.textContent.trim() : '';
    if (!txt) out.push(`widget ${w.className.match(/widget-[a-z-]+/g).slice(-1)} without a description`);
    // MathJax's assistive MathML (invisible, for screen readers) sticks out of a LaTeX
    // description; measure what is drawn.
    const aria = lab ? Array.from(lab.querySelectorAll('mjx-assistive-mml')) : [];
    aria.forEach(a => a.style.setProperty('display', 'none', 'important'));
    if (lab && lab.scrollWidth > lab.clientWidth + 1)
      out.push(`widget description cut off: "${txt.slice(0, 60)}"`);
    aria.forEach(a => a.style.removeProperty('display'));
  });
  el.querySelectorAll('.widget-button').forEach(b => {
    if (!b.textContent.trim() && !b.getAttribute('title')) out.push('button without text or tooltip');
  });
  return out;
}
"""

KIND_JS = """
(el) => el.matches('.js-plotly-plot') || el.querySelector('.js-plotly-plot') ?
  (el.querySelector('.jupyter-widgets') ? 'widget' : 'figure') :
  el.querySelector('.jupyter-widgets') ? 'widget' :
  el.querySelector('table') ? 'table' :
  el.matches('.jp-RenderedMarkdown, .jp-RenderedHTML') ? 'html' : 'text'
"""


def walk(lab, ctx, name: str, out: Path) -> dict:
    folder = out / name[:2]
    folder.mkdir(parents=True, exist_ok=True)
    page = ctx.new_page()
    errors = JSErrors(page)
    res = {"notebook": name, "findings": [], "shots": []}
    try:
        open_notebook(page, lab, name)
        res["run_seconds"] = round(run_all(page, folder, "run"), 1)
    except AssertionError as exc:
        res["findings"].append(f"RUN FAILED: {str(exc)[:400]}")
    page.wait_for_timeout(1500)  # let widgets and figures finish drawing
    cells = page.locator(f"{ACTIVE} .jp-Notebook > .jp-Cell, {ACTIVE} .jp-Notebook .jp-Cell")
    n_cells = cells.count()
    for k in range(n_cells):
        cell = cells.nth(k)
        outs = cell.locator(".jp-OutputArea-output")
        for j in range(outs.count()):
            o = outs.nth(j)
            kind = o.evaluate(KIND_JS)
            for f in o.evaluate(CHECKS_JS):
                res["findings"].append(f"cell {k} ({kind}): {f}")
            if kind in ("figure", "widget", "table", "html") or o.evaluate(
                "e => e.getBoundingClientRect().height > 300"
            ):
                path = folder / f"c{k:02d}_{j}_{kind}.png"
                try:
                    o.scroll_into_view_if_needed(timeout=5000)
                    o.screenshot(path=str(path), timeout=10_000)
                    res["shots"].append(str(path.relative_to(out)))
                except Exception as exc:  # noqa: BLE001 - a shot that fails is a finding
                    res["findings"].append(f"cell {k}: screenshot failed: {exc}")
    # Page through the notebook as a reader scrolls.
    scroller = page.locator(f"{ACTIVE} .jp-WindowedPanel-outer").first
    if scroller.count():
        height = scroller.evaluate("e => e.scrollHeight")
        view = scroller.evaluate("e => e.clientHeight")
        for p, top in enumerate(range(0, max(height, 1), max(view - 80, 200))):
            scroller.evaluate(f"e => e.scrollTo(0, {top})")
            page.wait_for_timeout(150)
            page.screenshot(path=str(folder / f"page_{p:02d}.png"))
    res["js_errors"] = errors.errors
    page.close()
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "artifacts" / "walk")
    args = ap.parse_args(argv)
    why = missing_requirement()
    if why:
        print(f"cannot walk the series: {why}", file=sys.stderr)
        return 2
    found = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    names = args.notebooks or [p.name for p in found]
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    lab = Lab(break_mode="").start()
    results = []
    try:
        with sync_playwright() as pw:
            ctx = launch(pw, Path(tempfile.mkdtemp(prefix="pw-chromium-")))
            for name in names:
                t0 = time.monotonic()
                r = walk(lab, ctx, Path(name).name, args.out)
                r["walk_seconds"] = round(time.monotonic() - t0, 1)
                results.append(r)
                print(f"{name}: {len(r['findings'])} findings, {len(r['js_errors'])} JS errors, "
                      f"{r['walk_seconds']} s", flush=True)
            ctx.close()
    finally:
        lab.stop()
    (args.out / "report.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    lines = ["# Reader walk", ""]
    for r in results:
        lines += [f"## {r['notebook']} (run {r.get('run_seconds', '?')} s)", ""]
        lines += [f"- {f}" for f in r["findings"]] or ["- no automatic findings"]
        lines += [f"- JS error: {e}" for e in r["js_errors"]]
        lines += [""]
    (args.out / "report.md").write_text("\n".join(lines))
    print(f"report: {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
