"""Compile every kernel module once, in this process, before parallel test workers start.

PyCUDA caches cubins on disk but writes the cache file in place, so several processes that
compile the same module at once may read a half-written file. ``tools/gpu_test.sh`` runs this
first whenever it runs pytest-xdist workers. Usage: python3 tools/gpu_precompile.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pageweaver_edu.gpu.loader import load_module  # noqa: E402
from pageweaver_edu.gpu.union8 import get_union_kernel  # noqa: E402


def main() -> int:
    t0 = time.perf_counter()
    for name in ("regroup.cu", "union_prepare.cu", "bench_spin.cu"):
        load_module(name)
    for slots in (2, 3):  # 3 slots: bench_union8's variant
        for kind in ("union8", "union4"):
            get_union_kernel(kind, slots)
    done = ["regroup", "union_prepare", "bench_spin", "union8/union4 (2, 3 slots)"]
    try:  # the FP8 kernel, where this checkout has it
        from pageweaver_edu.gpu.union8_fp8 import get_fp8_kernel
    except ImportError:
        get_fp8_kernel = None
    if get_fp8_kernel is not None:
        for kind in ("union8", "union4"):
            get_fp8_kernel(kind)
        done.append("union8_fp8/union4_fp8")
    print(f"compiled {', '.join(done)} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
