"""Fixtures of the browser test: a throw-away JupyterLab on loopback (``labdriver.Lab``) and
Debian's Chromium driven by Playwright (``labdriver.launch``).

* Every JavaScript error of the page (``pageerror``) and every console message of type
  ``error`` fails the test, except ``labdriver.ALLOWED_CONSOLE_ERRORS`` (each with its reason).
* Screenshots go to ``tests/browser/artifacts/`` (git-ignored), or ``$PAGEWEAVER_ARTIFACTS``;
  a failing test also leaves ``FAILED_<test>.png`` and prints the tail of JupyterLab's log.
* Off CI a missing Chromium or Playwright skips these tests; on CI (``CI=true``) it fails.
* Every exception the kernel reports to the page (iopub ``error`` messages: a failing cell, or
  a widget callback that raised, which JupyterLab only counts in its Log Console) fails the
  test: during Run All (``labdriver.run_all``), during widget use, and at teardown.
* ``PAGEWEAVER_BROWSER_BREAK=observe`` kills every widget callback in the kernel, ``=raise``
  makes every callback raise after its redraw (see ``labdriver``): the widget tests must then
  fail.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from labdriver import REPO, JSErrors, KernelErrors, Lab, launch, missing_requirement

ARTIFACTS = Path(os.environ.get("PAGEWEAVER_ARTIFACTS", Path(__file__).parent / "artifacts"))


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(config, items):
    why = missing_requirement()
    if why is None:
        return
    # Off CI a missing browser skips the test; on CI it is a broken setup and fails.
    mark = pytest.mark.usefixtures("_fail_missing") if _in_ci() else pytest.mark.skip(reason=why)
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(mark)


@pytest.fixture
def _fail_missing():
    pytest.fail(f"browser test cannot run on CI: {missing_requirement()}")


def _hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((REPO / "notebooks").glob("*.ipynb"))}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Folder for screenshots; emptied at the start of a run and printed at its end."""
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    yield ARTIFACTS
    shots = sorted(ARTIFACTS.glob("*.png"))
    sys.stdout.write(f"\n[browser] {len(shots)} screenshots in {ARTIFACTS}\n")


@pytest.fixture(scope="session")
def lab():
    before = _hashes()
    server = Lab()
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.tmp, ignore_errors=True)
    # Autosave is off, so the test never writes a notebook; others may edit notebooks/ at the
    # same time, so a change is reported, not failed.
    changed = [k for k, v in _hashes().items() if before.get(k) != v]
    if changed:
        sys.stdout.write(f"\n[browser] notebooks changed during the run: {changed}\n")


@pytest.fixture(scope="session")
def browser_context():
    from playwright.sync_api import sync_playwright

    profile = Path(tempfile.mkdtemp(prefix="pw-chromium-"))
    with sync_playwright() as pw:
        ctx = launch(pw, profile)
        try:
            yield ctx
        finally:
            ctx.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser_context, lab, artifacts, request):
    """A new tab with JavaScript-error and kernel-exception collection; shoots the page if the
    test fails. Both checks run again at teardown, so errors after the last step also fail."""
    pg = browser_context.new_page()
    pg.js_errors = JSErrors(pg)
    pg.kernel_errors = KernelErrors(pg)
    yield pg
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        try:
            pg.screenshot(path=str(artifacts / f"FAILED_{request.node.name}.png"))
        except Exception:  # noqa: BLE001 - the failure itself is what matters
            pass
        sys.stdout.write(f"\n[browser] JupyterLab log tail:\n{lab.log_tail(20)}\n")
    pg.close()
    lab.shutdown_kernels()  # the next chapter gets the CPU to itself
    pg.js_errors.check()
    pg.kernel_errors.check()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep
