"""Binder's requirements alone run the whole series.

Builds a fresh virtual environment in a temporary folder from ``binder/requirements.txt``
(``pip install -r binder/requirements.txt`` from the repository root, as repo2docker does),
then executes every notebook of ``notebooks/`` with that environment's nbconvert and kernel,
and fails on the first notebook that does not run.

Slow (a few minutes: torch and JupyterLab are installed from scratch), so it runs only when
asked for: ``make binder-test``, ``pytest -m slow`` or ``PAGEWEAVER_SLOW=1``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "binder" / "requirements.txt"
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _only_when_asked(request):
    markexpr = request.config.getoption("markexpr", "") or ""
    asked = re.search(r"(?<!not )\bslow\b", markexpr) is not None
    if not asked and os.environ.get("PAGEWEAVER_SLOW") != "1":
        pytest.skip("slow: run with `make binder-test`, `pytest -m slow` or PAGEWEAVER_SLOW=1")


def _run(cmd, log, **kw):
    """Run ``cmd``; on failure, fail with the tail of its output."""
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    log.write(f"$ {' '.join(map(str, cmd))}\n{r.stdout}\n")
    if r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout[-4000:]}")
    return time.monotonic() - t0


def test_binder_requirements_alone_run_every_notebook(tmp_path):
    assert NOTEBOOKS, "no notebooks"
    reqs = [ln.split("#")[0].strip() for ln in REQUIREMENTS.read_text().splitlines()]
    reqs = [ln for ln in reqs if ln]
    assert not any("pycuda" in ln.lower() for ln in reqs), "Binder has no GPU: no PyCUDA"
    assert "." in reqs, "binder/requirements.txt must install the package itself ('.')"
    assert any(ln.startswith("torch==") and ln.endswith("+cpu") for ln in reqs), "CPU torch"
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"

    venv = tmp_path / "venv"
    py = venv / "bin" / "python"
    log_path = tmp_path / "binder-env.log"
    # A clean environment: nothing of the project's .venv, no user-level Jupyter files.
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH",
                        "PAGEWEAVER_REQUIRE_GPU")}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        MPLCONFIGDIR=str(tmp_path / "mpl"),
        # pip asks the extra (CPU torch) index about every package. Where that index cannot
        # be reached (this project's machines reach PyPI only, and torch==2.13.0+cpu comes
        # from the local wheel pip's find-links points at), pip's default retries and
        # back-off would add minutes; with no retries each miss costs nothing.
        PIP_RETRIES="0",
    )
    base = getattr(sys, "_base_executable", sys.executable)
    timings = {}
    with open(log_path, "w") as log:
        timings["venv"] = _run([base, "-m", "venv", str(venv)], log, env=env)
        timings["pip install -r binder/requirements.txt"] = _run(
            [str(py), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS.relative_to(REPO))],
            log, cwd=REPO, env=env,
        )
        # The kernel must be this environment's, with the package installed into it.
        probe = subprocess.run(
            [str(py), "-c", "import pageweaver_edu, torch, sys; "
             "print(pageweaver_edu.__file__); print(torch.__version__); print(sys.prefix)"],
            capture_output=True, text=True, cwd=tmp_path, env=env, check=True,
        ).stdout.split()
        assert probe[0].startswith(str(venv)), f"package not installed into the venv: {probe}"
        assert probe[1].endswith("+cpu") or "cuda" not in probe[1], probe

        out = tmp_path / "executed"
        failed = {}
        for nb in NOTEBOOKS:  # every notebook, so one run reports every broken chapter
            t0 = time.monotonic()
            r = subprocess.run(
                [str(py), "-m", "nbconvert", "--to", "notebook", "--execute",
                 "--ExecutePreprocessor.timeout=600", "--ExecutePreprocessor.kernel_name=python3",
                 "--output-dir", str(out), str(nb)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env,
            )
            timings[nb.name] = time.monotonic() - t0
            log.write(f"$ nbconvert --execute {nb.name}\n{r.stdout}\n")
            if r.returncode != 0 or not (out / nb.name).exists():
                failed[nb.name] = _error_lines(r.stdout)
    print("\n" + "\n".join(f"{k:<48}{v:8.1f} s" for k, v in timings.items()))
    assert not failed, "notebooks that fail with binder/requirements.txt alone " \
        f"(log: {log_path}):\n" + "\n".join(f"{k}: {v}" for k, v in failed.items())


def _error_lines(output: str) -> str:
    """The exception line(s) of an nbconvert failure, without ANSI colours."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    lines = [ln for ln in plain.splitlines() if re.match(r"^\w*(Error|Exception)\b", ln.strip())]
    return " | ".join(lines[-2:]) or plain[-500:]
