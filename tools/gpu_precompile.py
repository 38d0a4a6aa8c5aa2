"""Compile the kernel builds once, before parallel test workers or benchmarks start.

PyCUDA caches cubins on disk but writes the cache file in place, so several processes that
compile the same build at once may read a half-written file. The GPU runners run this first
(``tools/gpu_test.sh`` whenever it runs pytest-xdist workers, ``tools/gpu_union8ws_check.sh``).

    python3 tools/gpu_precompile.py [--test-builds] [--jobs N]

The builds: the regroup, union-preparation and spin modules, then every front end's prebuilt
builds (its ``prebuilt_slots`` x ``prebuilt_options`` x entries); ``--test-builds`` adds the
warp-specialized FP8 builds the GPU tests ask for beyond those (:data:`TEST_WS_BUILDS`).
``--jobs N`` compiles each build in its own process, N at a time (distinct builds never share
a cache file); without it they compile one after the other in this process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODULES = ("regroup.cu", "union_prepare.cu", "bench_spin.cu")
#: ``Fp8WsUnionAttention`` keywords (``slots`` the ring depth) of the builds that
#: tests/gpu/test_union8ws.py and tests/gpu/test_union8ws_accurate.py use besides the
#: prebuilt ones.
TEST_WS_BUILDS = ({"tc_sum": True}, {"lazy": True}, {"lazy": True, "tc_sum": True},
                  {"overlap": False}, {"slots": 2}, {"accurate": True, "slots": 2})


def builds(test_builds: bool = False) -> list[tuple[str, Callable[[], object]]]:
    """(label, compile) of every build, in a fixed order."""
    from pageweaver_edu.gpu import UNION_KERNELS, Fp8WsUnionAttention
    from pageweaver_edu.gpu.loader import load_module
    from pageweaver_edu.gpu.union8ws import SLOTS, fp8_build_options

    out = [(name, partial(load_module, name)) for name in MODULES]
    for front_end in UNION_KERNELS:
        for slots in front_end.prebuilt_slots:
            for options in getattr(front_end, "prebuilt_options", ((),)):
                for group in front_end.entries:
                    out.append((f"{front_end.__name__} g={group} slots={slots} "
                                f"{' '.join(options)}".strip(),
                                partial(front_end.kernel, group, slots, options)))
    if test_builds:
        for kw in TEST_WS_BUILDS:
            kw = dict(kw)
            slots = kw.pop("slots", SLOTS)
            options = fp8_build_options(**kw)
            out.append((f"Fp8WsUnionAttention g=8 slots={slots} {' '.join(options)}",
                        partial(Fp8WsUnionAttention.kernel, 8, slots, options)))
    return out


def run_parallel(count: int, jobs: int, start: Callable[[int], subprocess.Popen]) -> list[int]:
    """Start ``start(i)`` for i in range(count), at most ``jobs`` at once; the return codes."""
    codes: list[int | None] = [None] * count
    running: dict[int, subprocess.Popen] = {}
    nxt = 0
    while nxt < count or running:
        while nxt < count and len(running) < jobs:
            running[nxt] = start(nxt)
            nxt += 1
        for i, proc in list(running.items()):
            if proc.poll() is not None:
                codes[i] = proc.returncode
                del running[i]
        time.sleep(0.05)
    return [int(c) for c in codes]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test-builds", action="store_true")
    ap.add_argument("--jobs", type=int, default=0, help="processes at once (0: this one)")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # a child's build
    args = ap.parse_args(argv)
    todo = builds(args.test_builds)
    t0 = time.perf_counter()
    if args.one is not None:
        todo[args.one][1]()
        return 0
    if args.jobs <= 0:
        for _, compile_it in todo:
            compile_it()
        failed = []
    else:
        extra = ["--test-builds"] if args.test_builds else []
        codes = run_parallel(len(todo), args.jobs, lambda i: subprocess.Popen(
            [sys.executable, __file__, "--one", str(i), *extra]))
        failed = [label for (label, _), code in zip(todo, codes, strict=True) if code != 0]
    print(f"compiled {len(todo) - len(failed)} of {len(todo)} builds in "
          f"{time.perf_counter() - t0:.1f} s" + (f"; failed: {', '.join(failed)}" if failed
                                                 else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
