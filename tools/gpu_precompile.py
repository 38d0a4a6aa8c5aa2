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

from pageweaver_edu.gpu import UNION_KERNELS  # noqa: E402
from pageweaver_edu.gpu.loader import load_module  # noqa: E402


def main() -> int:
    t0 = time.perf_counter()
    done = []
    for name in ("regroup.cu", "union_prepare.cu", "bench_spin.cu"):
        load_module(name)
        done.append(name)
    for front_end in UNION_KERNELS:
        for slots in front_end.prebuilt_slots:
            for options in getattr(front_end, "prebuilt_options", ((),)):
                for group in front_end.entries:
                    front_end.kernel(group, slots, options)
        done.append(f"{front_end.source} ({', '.join(map(str, front_end.prebuilt_slots))} slots)")
    print(f"compiled {', '.join(done)} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
