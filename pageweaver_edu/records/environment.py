"""Where and from what a new result was measured: device, date, commit, driver, CUDA, CPU.

The benchmark scripts stamp every result file with :func:`result_environment`.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

#: The commit to record when set (a machine that got a copy of the tree without ``.git``).
ENV_COMMIT = "PAGEWEAVER_COMMIT"
ROOT = Path(__file__).resolve().parents[2]


def _cmd(args: list[str], cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30, cwd=cwd)
    except Exception:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def source_commit(root: Path = ROOT) -> str:
    """``$PAGEWEAVER_COMMIT`` when set; else git's short HEAD of ``root`` (``+worktree`` when
    tracked files differ from it); else ``"uncommitted"``."""
    env = os.environ.get(ENV_COMMIT, "").strip()
    if env:
        return env
    head = _cmd(["git", "rev-parse", "--short", "HEAD"], root)
    if not head:
        return "uncommitted"
    dirty = _cmd(["git", "status", "--porcelain", "--untracked-files=no"], root)
    return head + ("+worktree" if dirty else "")


def cpu_model() -> str:
    """The CPU model string from /proc/cpuinfo (or ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def result_environment(root: Path = ROOT) -> dict:
    """``{"device", "date", "commit", "driver", "cuda"}`` of this run (needs torch with CUDA)."""
    import torch

    driver = _cmd(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if not driver:
        try:
            import pycuda.driver as drv

            driver = f"CUDA driver API {drv.get_driver_version()}"
        except Exception:
            driver = "?"
    nvcc = _cmd(["nvcc", "--version"]).splitlines()
    return {
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": source_commit(root),
        "driver": driver.splitlines()[0],
        "cuda": f"torch {torch.version.cuda}; {nvcc[-1] if nvcc else 'nvcc ?'}",
    }
