"""Move every ipywidgets control of a chapter as a reader does, and time each move in the page.

Used by the browser test (every chapter with widgets: no kernel exception while they move)
and by ``benchmarks/bench_widget_latency.py`` (input to figure settled, per control).

A *control* is a Dropdown, slider, ToggleButtons or Checkbox of an output area that also holds
a plotly figure or a status line. One *move*: the next option, one slider step (the other
way at the end of the range), the next toggle button, or a click on the checkbox. The move
is made by JavaScript in the page, right after it reads ``performance.now()``; a
MutationObserver on the output area (the moved control's own subtree left out) notes the time
of every change to the figures and status lines; the move has *settled* once nothing changed
for ``QUIET_MS``. Its latency is the last change's time minus the move's start: input to the
end of the redraw as the browser drew it (kernel round trip, Python callback, plotly.js).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from labdriver import ACTIVE, REPO

QUIET_MS = 800  # no change for this long: the redraw is over
SETTLE_TIMEOUT_S = 10.0

#: What marks a chapter with widgets in its code: ipywidgets, or one of the package's builders.
WIDGET_SOURCE = re.compile(r"import ipywidgets|\w+_app\(|pipeline_explorer\(|CtaStepper\(")
CONTROL_SELECTOR = ".widget-dropdown, .widget-slider, .widget-toggle-buttons, .widget-checkbox"

#: (output index, control index, kind, label) of every control of every widget app.
CONTROLS_JS = """
(sel) => {
  const outs = Array.from(document.querySelectorAll('ACTIVE .jp-OutputArea-output'));
  const found = [];
  outs.forEach((o, i) => {
    if (!o.querySelector('.jupyter-widgets')) return;
    if (!o.querySelector('.js-plotly-plot, .widget-html-content')) return;
    Array.from(o.querySelectorAll(sel)).forEach((w, j) => {
      const kind = w.classList.contains('widget-dropdown') ? 'dropdown' :
                   w.classList.contains('widget-slider') ? 'slider' :
                   w.classList.contains('widget-toggle-buttons') ? 'toggle' : 'checkbox';
      const lab = w.querySelector('.widget-label, .widget-label-basic span');
      const text = (lab ? lab.textContent : '').replace(/\\s+/g, ' ').trim();
      found.push([i, j, kind, text]);
    });
  });
  return found;
}
""".replace("ACTIVE", ACTIVE)

#: Start a move of control j of output i: arm the observer, read the clock, act.
MOVE_JS = """
([i, j, sel, back]) => {
  const out = document.querySelectorAll('ACTIVE .jp-OutputArea-output')[i];
  const w = out.querySelectorAll(sel)[j];
  if (window.__pwMove) window.__pwMove.mo.disconnect();
  const st = {t0: 0, last: null, changes: 0};
  st.mo = new MutationObserver(recs => {
    if (recs.some(r => !w.contains(r.target))) { st.last = performance.now(); st.changes++; }
  });
  st.mo.observe(out, {subtree: true, childList: true, attributes: true, characterData: true});
  window.__pwMove = st;
  w.scrollIntoView({block: 'center'});
  st.t0 = performance.now();
  if (w.classList.contains('widget-dropdown')) {
    const s = w.querySelector('select');
    const n = s.options.length;
    s.selectedIndex = (s.selectedIndex + (back ? n - 1 : 1)) % n;
    s.dispatchEvent(new Event('change', {bubbles: true}));
    return s.value;
  }
  if (w.classList.contains('widget-slider')) {
    const h = w.querySelector('.noUi-handle');
    const now = parseFloat(h.getAttribute('aria-valuenow'));
    const max = parseFloat(h.getAttribute('aria-valuemax'));
    const key = (now >= max) !== back ? 'ArrowLeft' : 'ArrowRight';
    h.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true}));
    return key;
  }
  if (w.classList.contains('widget-toggle-buttons')) {
    const bs = Array.from(w.querySelectorAll('button'));
    const k = bs.findIndex(b => b.classList.contains('mod-active'));
    const b = bs[(k + 1) % bs.length];
    b.click();
    return b.textContent.trim();
  }
  const c = w.querySelector('input[type=checkbox]');
  c.click();
  return String(c.checked);
}
""".replace("ACTIVE", ACTIVE)

STATE_JS = """
() => { const s = window.__pwMove; const now = performance.now();
        return s ? [s.changes, s.last === null ? null : s.last - s.t0,
                    s.last === null ? now - s.t0 : now - s.last] : null; }
"""


def widget_chapters() -> list[str]:
    """Names of the notebooks whose code builds widgets."""
    out = []
    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if WIDGET_SOURCE.search(code):
            out.append(path.name)
    return out


@dataclass
class Control:
    output: int
    index: int
    kind: str
    label: str

    @property
    def name(self) -> str:
        return f"{self.kind} '{self.label}'" if self.label else self.kind


def controls(page) -> list[Control]:
    """Every movable control of the open notebook's widget apps, in page order."""
    return [Control(*c) for c in page.evaluate(CONTROLS_JS, CONTROL_SELECTOR)]


def move(page, control: Control) -> float | None:
    """Move ``control`` once; milliseconds from the move to the figure settled, or None if
    nothing outside the control changed within ``SETTLE_TIMEOUT_S``, neither after the move
    nor after one the other way (a slider whose range the app just changed may not move the
    first way): a dead widget."""
    for back in (False, True):
        latency = _timed_move(page, control, back)
        if latency is not None:
            return latency
    return None


def _timed_move(page, control: Control, back: bool) -> float | None:
    page.evaluate(MOVE_JS, [control.output, control.index, CONTROL_SELECTOR, back])
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        changes, latency, quiet = page.evaluate(STATE_JS)
        if changes and quiet >= QUIET_MS:
            return latency
        if not changes and quiet >= SETTLE_TIMEOUT_S * 1e3:
            break
        time.sleep(0.05)
    return None


def exercise(page, moves: int = 1) -> dict[str, list[float | None]]:
    """Move every control ``moves`` times; latencies (ms, None = no redraw) by control,
    named ``out<k> <kind> '<label>'``."""
    times: dict[str, list[float | None]] = {}
    for c in controls(page):
        key = f"out{c.output} {c.name}"
        times[key] = [move(page, c) for _ in range(moves)]
    return times
