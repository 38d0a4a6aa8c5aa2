"""tools/gpu_precompile.py on a CPU: the one list of builds the GPU runners compile first, and
its parallel driver (each build in its own process, at most N at once, failures reported)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.tool_module import load_tool

ROOT = Path(__file__).resolve().parents[2]


def test_the_builds_cover_every_prebuilt_and_test_build_once():
    from pageweaver_edu.gpu import UNION_KERNELS
    from pageweaver_edu.gpu.union8ws import SLOTS, fp8_build_options

    tool = load_tool("gpu_precompile")
    base = [label for label, _ in tool.builds()]
    every = [label for label, _ in tool.builds(test_builds=True)]
    assert len(set(every)) == len(every) and every[:len(base)] == base
    assert base[:3] == list(tool.MODULES)
    for front_end in UNION_KERNELS:
        for slots in front_end.prebuilt_slots:
            for options in getattr(front_end, "prebuilt_options", ((),)):
                for group in front_end.entries:
                    assert any(label.startswith(f"{front_end.__name__} g={group} slots={slots}")
                               and label.endswith(" ".join(options)) for label in base)
    for kw in tool.TEST_WS_BUILDS:
        kw = dict(kw)
        slots = kw.pop("slots", SLOTS)
        label = f"Fp8WsUnionAttention g=8 slots={slots} {' '.join(fp8_build_options(**kw))}"
        assert label in every


def test_parallel_driver_limits_and_reports():
    tool = load_tool("gpu_precompile")
    started = []

    def start(i):
        started.append((i, time.perf_counter()))
        return subprocess.Popen([sys.executable, "-c",
                                 f"import sys, time; time.sleep(0.2); sys.exit({int(i == 3)})"])

    t0 = time.perf_counter()
    codes = tool.run_parallel(5, 2, start)
    assert codes == [0, 0, 0, 1, 0] and [i for i, _ in started] == list(range(5))
    assert time.perf_counter() - t0 >= 0.6  # 5 sleeps of 0.2 s, two at a time: three rounds


def test_every_child_is_counted_compiled_or_failed():
    """The children's command line is right. On a CPU each one loads its build and stops where
    the GPU (or PyCUDA) is needed, and the parent counts them all as failed and exits 1; on a
    GPU runner every build compiles and the parent exits 0."""
    from pageweaver_edu.gpu.device import gpu_available

    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_precompile.py"),
                           "--jobs", "4"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    n = len(load_tool("gpu_precompile").builds())
    if gpu_available():
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"compiled {n} of {n} builds" in proc.stdout and "failed" not in proc.stdout
        return
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"compiled 0 of {n} builds" in proc.stdout and "failed: regroup.cu" in proc.stdout
    assert proc.stderr.count("Traceback") == n  # one child per build, each stopped alone
