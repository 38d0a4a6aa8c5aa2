"""A throw-away JupyterLab on loopback and the steps a reader takes in it, for Playwright.

Used by the browser test (``conftest.py``, ``test_lab_widgets.py``) and by the reader walk
(``walk_series.py``).

* :class:`Lab` runs JupyterLab from this interpreter's environment (``.venv``) on
  ``127.0.0.1`` and a free port, with token auth (the token travels in the URL) and
  temporary config / runtime / data / settings / workspace / IPython dirs. Autosave is off,
  so the committed notebooks are never written; news and update checks are off.
* :func:`launch` starts Debian's Chromium (``/usr/bin/chromium``, installed by
  ``tools/install_browser.sh``) with a fresh profile; Playwright never downloads a browser.
* :class:`JSErrors` collects uncaught page errors and console errors that are not in
  :data:`ALLOWED_CONSOLE_ERRORS`.

* :class:`KernelErrors` collects every exception the kernel reports to the page (iopub).

Break switches (prove the test catches what it should), ``PAGEWEAVER_BROWSER_BREAK=``

* ``observe``: an IPython startup file in the kernel turns ``observe`` into a no-op for every
  ipywidgets value widget (sliders, dropdowns, checkboxes): controls still render and move,
  but no callback runs, so the figures stop responding;
* ``raise``: every callback registered with ``observe`` runs, redraws, then raises: the
  figures respond, and only the kernel's error messages (the Log Console) show the fault.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("PAGEWEAVER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}

# Console messages of type "error" known to be harmless: (regex, why). Every entry must say
# why the message cannot affect what a reader sees. Empty: with JupyterLab 4.6.6, ipywidgets
# 8.1.9, anywidget 0.11.0, plotly 7.1.0 and Chromium 156 the runs log no console error at all.
ALLOWED_CONSOLE_ERRORS: list[tuple[str, str]] = []

BREAK_OBSERVE = '''\
# Installed by tests/browser (PAGEWEAVER_BROWSER_BREAK=observe): a dead-widget simulation.
import ipywidgets as _w


def _dead_observe(self, handler, names=None, type="change"):
    """Register nothing: the control renders and moves, but no callback ever runs."""
    return None


_w.ValueWidget.observe = _dead_observe
'''

BREAK_RAISE = '''\
# Installed by tests/browser (PAGEWEAVER_BROWSER_BREAK=raise): a hidden-error simulation.
import ipywidgets as _w

_observe = _w.ValueWidget.observe


def _raising_observe(self, handler, names=None, type="change"):
    """Register a notebook's ``handler`` so that it runs and then raises (an exception a
    reader only sees as the Log Console's red counter); ipywidgets' own handlers stay."""
    if getattr(handler, "__module__", "").startswith(("ipywidgets", "traitlets")):
        return _observe(self, handler, names=names, type=type)

    def run_then_raise(change):
        handler(change)
        raise RuntimeError("planted by PAGEWEAVER_BROWSER_BREAK=raise")
    return _observe(self, run_then_raise, names=names, type=type)


_w.ValueWidget.observe = _raising_observe
'''
BREAKS = {"observe": BREAK_OBSERVE, "raise": BREAK_RAISE}

LAB_SETTINGS = {
    # Never write the committed notebooks, whatever the test does to them.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    # No "news" toast and no update check (no network here; they would cover the page).
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Keep every cell in the DOM (no virtual scrolling), so outputs can be found and shot.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}

ACTIVE = ".jp-NotebookPanel:not(.lm-mod-hidden)"
RUN_TIMEOUT_MS = 150_000  # a chapter is "well under 30 s" on CPU; leave room for a slow CI
CHANGE_TIMEOUT_S = 20.0

# What a plotly figure draws: every main SVG without the hover layer (which follows the
# mouse), so equal snapshots mean the figure really did not change.
FIGURE_SNAPSHOT_JS = """
el => Array.from(el.querySelectorAll('.js-plotly-plot svg.main-svg')).map(svg => {
  const c = svg.cloneNode(true);
  c.querySelectorAll('.hoverlayer').forEach(h => h.remove());
  return c.outerHTML;
}).join('\\n')
"""

RUN_STATE_JS = """
() => {
  const nb = document.querySelector('ACTIVE');
  if (!nb) return 'no notebook';
  const errors = Array.from(nb.querySelectorAll('.jp-OutputArea-output'))
    .filter(o => /Traceback \\(most recent call last\\)/.test(o.textContent));
  const ind = nb.querySelector('.jp-Notebook-ExecutionIndicator');
  const idle = ind && ind.getAttribute('data-status') === 'idle';
  if (errors.length && idle) return 'error';
  const prompts = Array.from(nb.querySelectorAll('.jp-CodeCell .jp-InputPrompt'));
  const done = prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
  return idle && done ? 'done' : 'running';
}
""".replace("ACTIVE", ACTIVE)


PROMPTS_JS = """
() => {
  const nb = document.querySelector('ACTIVE');
  const ind = nb && nb.querySelector('.jp-Notebook-ExecutionIndicator');
  const prompts = nb ? Array.from(nb.querySelectorAll('.jp-CodeCell .jp-InputPrompt')) : [];
  return [ind && ind.getAttribute('data-status'), prompts.map(p => p.textContent).join(' ')];
}
""".replace("ACTIVE", ACTIVE)


def missing_requirement() -> str | None:
    """Why the browser test cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (make browser-setup)"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"{CHROMIUM} is missing (tools/install_browser.sh)"
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return "jupyterlab is not installed (make setup)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: ``url(path)`` gives an authenticated address of a lab page."""

    def __init__(self, tmp: Path | None = None, break_mode: str | None = None):
        self.tmp = Path(tmp or tempfile.mkdtemp(prefix="pw-lab-"))
        self.port = _free_port()
        self.token = secrets.token_hex(24)
        self.log_path = self.tmp / "jupyterlab.log"
        self.proc: subprocess.Popen | None = None
        self.log = None
        mode = os.environ.get("PAGEWEAVER_BROWSER_BREAK", "") if break_mode is None else break_mode
        if mode not in ("", *BREAKS):
            raise ValueError(f"PAGEWEAVER_BROWSER_BREAK={mode!r}: one of {sorted(BREAKS)}")
        self.break_mode = mode

    def url(self, path: str = "lab") -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}/{path}{sep}token={self.token}"

    def start(self, timeout: float = 60.0) -> Lab:
        settings = self.tmp / "lab-settings"
        for plugin, values in LAB_SETTINGS.items():
            f = settings / f"{plugin}.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(values))
        ipython = self.tmp / "ipython"
        startup = ipython / "profile_default" / "startup"
        startup.mkdir(parents=True, exist_ok=True)
        # The kernels import this checkout's package, whatever checkout .venv was installed from.
        (startup / "00_this_checkout.py").write_text(
            f"import sys\nsys.path.insert(0, {str(REPO)!r})\n")
        if self.break_mode:
            (startup / "01_break_widgets.py").write_text(BREAKS[self.break_mode])
        env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PATH", "PYTHONPATH")}
        env.update(
            JUPYTER_CONFIG_DIR=str(self.tmp / "config"),
            JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"),
            JUPYTER_DATA_DIR=str(self.tmp / "data"),
            IPYTHONDIR=str(ipython),
            PYTHONUNBUFFERED="1",
        )
        cmd = [
            sys.executable, "-m", "jupyterlab",
            "--no-browser",
            "--ServerApp.open_browser=False",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={REPO}",
            "--ServerApp.allow_root=True",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={self.tmp / 'workspaces'}",
            "--LabApp.extension_manager=readonly",
        ]
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=REPO)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited at start:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer in {timeout:.0f} s:\n{self.log_tail()}")

    def shutdown_kernels(self) -> None:
        """Stop every running kernel (a closed tab leaves its kernel running)."""
        with urllib.request.urlopen(self.url("api/kernels"), timeout=10) as r:
            kernels = json.loads(r.read())
        for k in kernels:
            req = urllib.request.Request(self.url(f"api/kernels/{k['id']}"), method="DELETE")
            with urllib.request.urlopen(req, timeout=30):
                pass

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
            self.log = None


def launch(pw, profile: Path):
    """Debian's Chromium, headless, fresh profile in ``profile``; a persistent context."""
    ctx = pw.chromium.launch_persistent_context(
        str(profile),  # a fresh, empty --user-data-dir
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_FLAGS,
        viewport=VIEWPORT,
        device_scale_factor=1,
    )
    ctx.set_default_timeout(30_000)
    return ctx


class JSErrors:
    """Collects uncaught page errors and console errors that are not allow-listed."""

    def __init__(self, page=None):
        self.errors: list[str] = []
        self.allowed: list[str] = []
        if page is not None:
            page.on("console", self.on_console)
            page.on("pageerror", self.on_pageerror)

    def on_console(self, msg) -> None:
        if msg.type != "error":
            return
        loc = (msg.location or {}).get("url", "")
        whole = f"{msg.text} @ {loc}"
        if any(re.search(rx, whole) for rx, _ in ALLOWED_CONSOLE_ERRORS):
            self.allowed.append(whole)
        else:
            self.errors.append(f"console.error: {whole}")

    def on_pageerror(self, exc) -> None:
        self.errors.append(f"pageerror: {exc}")

    def check(self) -> None:
        assert not self.errors, "JavaScript errors in the page:\n" + "\n".join(self.errors)


class KernelErrors:
    """Every exception a kernel reports to the page, read from the kernels' websockets.

    A cell that raises and a widget callback that raises (the traceback JupyterLab sends to
    its Log Console, with only a red counter in the status bar to show it) both arrive as an
    iopub ``error`` message; a traceback written to stderr (a logged exception) arrives as an
    iopub ``stream`` message. Both protocols are read: JupyterLab 4's binary
    ``v1.kernel.websocket.jupyter.org`` frames and the legacy JSON frames.
    """

    def __init__(self, page=None):
        self.errors: list[str] = []
        if page is not None:
            page.on("websocket", self.on_websocket)

    def on_websocket(self, ws) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", self.on_frame)

    def on_frame(self, payload) -> None:
        msg = _kernel_message(payload)
        if msg is None or msg.get("channel") != "iopub":
            return
        kind = msg.get("header", {}).get("msg_type")
        content = msg.get("content", {})
        if kind == "error":
            tb = "\n".join(content.get("traceback", []))
            self.errors.append(f"{content.get('ename')}: {content.get('evalue')}\n"
                               f"{_ANSI.sub('', tb)[-2500:]}")
        elif kind == "stream" and content.get("name") == "stderr" and \
                "Traceback (most recent call last)" in content.get("text", ""):
            self.errors.append(_ANSI.sub("", content["text"])[-2500:])

    def check(self, what: str = "the kernel") -> None:
        assert not self.errors, f"{what} reported {len(self.errors)} exception(s):\n" + \
            "\n----\n".join(self.errors)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _kernel_message(payload) -> dict | None:
    """One kernel message of a websocket frame (dict with ``channel``), or None."""
    if isinstance(payload, str):
        try:
            return json.loads(payload)
        except ValueError:
            return None
    data = bytes(payload)
    if len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    if not 2 <= n <= 64 or len(data) < 8 * (n + 1):
        return None
    offsets = [int.from_bytes(data[8 * (i + 1):8 * (i + 2)], "little") for i in range(n)]
    parts = [data[a:b] for a, b in zip(offsets, [*offsets[1:], len(data)], strict=True)]
    try:
        channel = parts[0].decode()
        header, _parent, _meta, content = (json.loads(p) for p in parts[1:5])
    except (ValueError, UnicodeDecodeError):
        return None
    return {"channel": channel, "header": header, "content": content}


# ---- what a reader does ------------------------------------------------------------------


def shot(page, folder: Path, name: str, locator=None) -> Path:
    """Screenshot of the page, or of one element (scrolled into view), as folder/name.png."""
    path = folder / f"{name}.png"
    if locator is not None:
        locator.scroll_into_view_if_needed()
        locator.screenshot(path=str(path))
    else:
        page.screenshot(path=str(path))
    return path


def open_notebook(page, lab: Lab, name: str) -> None:
    """Open notebooks/<name> in a fresh workspace and wait for an idle kernel."""
    page.goto(lab.url(f"lab/tree/notebooks/{name}?reset"))
    page.wait_for_selector(f"{ACTIVE} .jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_selector(
        f"{ACTIVE} .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000
    )


def menu(page, top: str, item: str) -> None:
    page.get_by_role("menuitem", name=top, exact=True).click()
    page.get_by_role("menuitem", name=item, exact=True).click()


def run_all(page, folder: Path, stem: str) -> float:
    """Edit ▸ Clear Outputs of All Cells, then Run ▸ Run All Cells; wait until the kernel is
    idle and every code cell has an execution count. Raises AssertionError on a traceback
    or a widget that did not render, and (when the page has ``kernel_errors``, a
    :class:`KernelErrors`) on any exception the kernel reported. Returns the seconds it took."""
    page.locator(f"{ACTIVE} .jp-Notebook").click(position={"x": 5, "y": 5})
    menu(page, "Edit", "Clear Outputs of All Cells")
    t0 = time.monotonic()
    menu(page, "Run", "Run All Cells")
    state = settle(page, RUN_STATE_JS, ("done", "error"), RUN_TIMEOUT_MS / 1000)
    seconds = time.monotonic() - t0
    outputs = page.locator(f"{ACTIVE} .jp-OutputArea-output")
    texts = outputs.all_inner_texts()
    if state != "done":
        shot(page, folder, f"{stem}_run_error")
        tb = next((t for t in texts if "Traceback" in t), "")
        detail = page.evaluate(PROMPTS_JS)
        raise AssertionError(f"{stem}: Run All ended in state {state!r} {detail}:\n{tb[-3000:]}")
    text = "\n".join(texts)
    for bad in ("Error displaying widget", "Failed to load model class", "Model not found"):
        assert bad not in text, f"{stem}: a widget did not render ({bad!r})"
    shot(page, folder, f"{stem}_after_run_all")
    if getattr(page, "kernel_errors", None) is not None:
        page.kernel_errors.check(f"{stem}: the kernel, during Run All,")
    return seconds


def settle(page, js: str, final: tuple[str, ...], timeout: float, stable: float = 1.0) -> str:
    """Poll ``js`` until it returns one of ``final`` for ``stable`` seconds in a row (the
    kernel flickers busy/idle between cells and on widget messages); returns that value."""
    deadline = time.monotonic() + timeout
    since, last = None, None
    while time.monotonic() < deadline:
        now = page.evaluate(js)
        if now in final:
            if now != last:
                since = time.monotonic()
            if time.monotonic() - since >= stable:
                return now
        last = now
        time.sleep(0.1)
    return page.evaluate(js)


def wait_for_change(read, before, what: str, timeout: float = CHANGE_TIMEOUT_S):
    """Poll ``read()`` until it differs from ``before``; fail naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    now = read()
    while now == before and time.monotonic() < deadline:
        time.sleep(0.2)
        now = read()
    assert now != before, f"{what} did not change within {timeout:.0f} s: the widget is dead"
    return now


def widget_output(page, control_class: str, label: str, nth: int | None = None):
    """The output area holding a widget app with a ``control_class`` control (e.g.
    ``widget-dropdown``) whose description is exactly ``label``, and that control.
    ``nth`` picks one app when several have such a control."""
    exact = re.compile(rf"^\s*{re.escape(label)}\s*$")
    desc = page.locator(".widget-label, .widget-label-basic span", has_text=exact)
    control = page.locator(f".{control_class}").filter(has=desc)  # relative, for has=
    page.locator(ACTIVE).locator(control).first.wait_for(state="attached", timeout=30_000)
    out = page.locator(f"{ACTIVE} .jp-OutputArea-output").filter(has=control)
    if nth is None:
        assert out.count() == 1, f"expected one widget app with a {label!r} control, " \
                                 f"found {out.count()}"
        return out, out.locator(control)
    out = out.nth(nth)
    return out, out.locator(f".{control_class}").filter(has=desc)


def select_other(control) -> str:
    """Choose, in a Dropdown widget, the last option different from the current one."""
    select = control.locator("select")
    current = select.input_value()
    values = select.evaluate("s => Array.from(s.options).map(o => o.value)")
    others = [v for v in values if v != current]
    assert others, "dropdown has a single option"
    select.select_option(value=others[-1])
    return others[-1]
