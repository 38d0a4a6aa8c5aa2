"""The "Live on an H200" cells: one object per live kernel, in the spirit of GPU-Puzzles'
problem objects.

A :class:`LiveKernel` names a kernel, the CPU reference it is checked against, the recorded
result files that stand in for it without a GPU, and the two ways to show it. A chapter's live
cell is ``KERNEL.run(**inputs)``:

* on a GPU it runs the kernel on ``inputs``, checks it against the reference (an
  AssertionError when they differ), times it with :func:`pageweaver_edu.gpu.timing.bench_gpu`
  (CUDA events, L2 flushed, stream kept busy ahead, median) and prints a table;
* on a CPU it says why not and prints the recorded rows (``benchmarks/results/*.json``,
  committed, so the printed text is deterministic);
* with ``PAGEWEAVER_REQUIRE_GPU=1`` and no GPU it fails.

This module holds the framework and the kernels of chapters 04 and 05 (:data:`REGROUP`,
:data:`UNION_PREPARE`); :mod:`.union8_live` holds the attention kernels of chapters 07, 08 and
12, and the later chapters' modules the records they show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.grouping import Grouping
from ..core.union_plan import prepare_unions
from ..gpu import device
from ..records import record_header, recorded_results
from ..regroup.bitmap import greedy_regroup
from ..workloads.presets import make_preset
from .paper_numbers import PAPER

#: The paper's grouping-alone times on its H200 (arXiv:2610.11201 §5.4), µs, as it prints them.
PAPER_US = {"gpu_regroup_w64": PAPER["grouping_w64"].number_text(),
            "gpu_regroup_w128": PAPER["grouping_w128"].number_text()}
#: The project's speed targets on cap64k, µs.
TARGET_US = {"gpu_regroup_w64": 10.0, "gpu_regroup_w128": 17.0, "gpu_union_prepare": 15.0,
             "gpu_regroup_plan_w128": 18.0}
PLAN_FIELDS = ("perm", "group_slots", "page_offsets", "pages", "masks", "cta_any",
               "page_counts")


@dataclass(frozen=True)
class LiveRun:
    """What a live cell produced.

    Attributes
    ----------
    medians : dict of str to float
        Median µs per row name, measured or recorded.
    where : str
        ``"live on <device>"`` or ``"recorded"``.
    records : dict of str to dict
        The kernel's recorded result files, by stem.
    """

    medians: dict
    where: str
    records: dict


@dataclass(frozen=True)
class LiveKernel:
    """A kernel a chapter runs live on an H200.

    Attributes
    ----------
    title : str
        What runs, e.g. ``"greedy regroup, kernels/regroup.cu"``.
    reference : callable
        The CPU ground truth the GPU result is checked against.
    stems : tuple of str
        Recorded result files ``benchmarks/results/<stem>.json`` it shows.
    recorded : callable ``(records, **inputs) -> dict``
        Prints the recorded rows; returns their medians.
    live : callable ``(records, **inputs) -> dict``, or None
        Runs, checks, times and prints; returns the medians. None: nothing of it runs live
        yet, the records are shown on a GPU too.
    any_device : bool
        Each stem's newest file on any device (True), or the stem's own file, so that a cell
        that sets several files side by side keeps them on one device (False).
    """

    title: str
    reference: Callable
    stems: tuple[str, ...]
    recorded: Callable[..., dict]
    live: Callable[..., dict] | None = None
    any_device: bool = True

    def describe(self) -> str:
        """One line: the kernel, its reference and its record."""
        files = ", ".join(f"benchmarks/results/{s}.json" for s in self.stems)
        return f"{self.title}; checked against {self.reference.__name__}; recorded in {files}"

    def run(self, **inputs) -> LiveRun:
        """The live cell: run on a GPU, else show the record (see the module docstring)."""
        here = gpu_here()
        records = {stem: recorded_results(stem, self.any_device) for stem in self.stems}
        if here and self.live is not None:
            import torch

            return LiveRun(self.live(records, **inputs),
                           f"live on {torch.cuda.get_device_name()}", records)
        if here:
            print(f"GPU present, but {self.title} has no live run yet; the recorded files:")
        else:
            print(f"No GPU here ({device.gpu_unavailable_reason()}).")
        for rec in records.values():
            print(f"Showing the recorded result file benchmarks/results/{rec['file']}:")
            print(record_header(rec))
        return LiveRun(self.recorded(records, **inputs), "recorded", records)


def gpu_here() -> bool:
    """Whether the GPU path runs here; with ``PAGEWEAVER_REQUIRE_GPU=1`` a missing one raises
    :class:`~pageweaver_edu.gpu.device.GPUUnavailableError`."""
    if device.gpu_required_by_env():
        device.require_gpu()
    return device.gpu_available()


HEADER = (f"{'kernel (cap64k, one KV head)':38s} {'median µs':>10s} {'paper µs':>11s} "
          f"{'target µs':>10s}  matches CPU")


def _us(x) -> str:
    return "–" if x is None else f"{x:,.2f}"


def _row(name: str, median, matches=None) -> str:
    return (f"{name:38s} {_us(median):>10s} {PAPER_US.get(name, '–'):>11s} "
            f"{_us(TARGET_US.get(name)):>10s}  {'–' if matches is None else matches}")


def recorded_table(rec: dict, names) -> str:
    """Text table of the rows ``names`` of a record: median, paper, target, CPU check."""
    rows = {r["name"]: r for r in rec.get("results", [])}
    return "\n".join([HEADER, *(_row(name, rows.get(name, {}).get("median_us"),
                                     rows.get(name, {}).get("matches_cpu")) for name in names)])


def _medians(rec: dict, names) -> dict:
    return {r["name"]: r["median_us"] for r in rec["results"] if r["name"] in names}


def cuda_capture(cap, announce: bool = True):
    """(Top-K int32 ``[1, N, K]``, L_i int64 ``[N]`` or None) of a capture on the GPU, after
    printing the device and the workload's shape (``announce``; a command's output stays
    its own without it)."""
    import torch

    topk = torch.from_numpy(cap.topk.astype(np.int32)).cuda().unsqueeze(0)
    lengths = None if cap.lengths is None else torch.from_numpy(
        np.asarray(cap.lengths, dtype=np.int64)).cuda()
    if announce:
        print(f"live on {torch.cuda.get_device_name()}: N = {cap.num_queries:,} queries, "
              f"Top{cap.topk.shape[1]}, P = {cap.page_size}, g = 8, B = 512")
    return topk, lengths


def _regroup_names(windows) -> list[tuple[int, str | None, str]]:
    """(W, variant, row name) per run: the paper's form bits_t<W>, then the default kernel."""
    return [(w, v, f"gpu_regroup_w{w}" + (f"[{v}]" if v else ""))
            for w in windows for v in (f"bits_t{w}", None)]


def _regroup_recorded(records, windows=(64, 128), **_) -> dict:
    rec = records["gpu_regroup_h200"]
    names = [name for _, _, name in _regroup_names(windows)]
    print(recorded_table(rec, [*names, *(f"cpu_regroup_w{w}" for w in windows)]))
    return _medians(rec, names)


def _regroup_live(records, windows=(64, 128), preset: str = "cap64k", reps: int = 200) -> dict:
    from ..gpu import gpu_greedy_regroup, regroup_launch
    from ..gpu.timing import bench_gpu

    cap = make_preset(preset)
    n, k = cap.topk.shape
    kw = cap.regroup_kwargs()
    topk, lengths = cuda_capture(cap)
    lines, out = [HEADER], {}
    for w, variant, name in _regroup_names(windows):
        ref = greedy_regroup(cap.topk, Grouping(w), **kw)
        got = gpu_greedy_regroup(cap.topk, Grouping(w), variant=variant, **kw).cpu().numpy()
        same = bool(np.array_equal(ref, got))
        assert same, f"{name}: GPU π differs from the CPU one at {np.flatnonzero(ref != got)[:5]}"
        prepared = regroup_launch(n, 1, k, Grouping(w), cap.request_offsets, cap.page_size,
                                  variant)
        perm = prepared.run(topk, lengths)
        out[name] = bench_gpu(lambda p=prepared, perm=perm: p.run(topk, lengths, perm),
                              reps)["median_us"]
        lines.append(_row(name, out[name], same))
    print("\n".join(lines))
    return out


#: Chapter 04: ``kernels/regroup.cu`` on cap64k at each W, both kernel families
#: (``gpu_regroup_w<W>[bits_t<W>]``, the paper's form, and the default pair-mask kernel).
#: Inputs: ``windows``, ``preset``, ``reps``.
REGROUP = LiveKernel("greedy regroup, kernels/regroup.cu", greedy_regroup,
                     ("gpu_regroup_h200",), _regroup_recorded, _regroup_live)

UNION_PREPARE_NAMES = ("gpu_union_prepare", "gpu_union_prepare[count kernel only]",
                       "cpu_union_prepare")


def _union_prepare_recorded(records, **_) -> dict:
    rec = records["gpu_regroup_h200"]
    print(recorded_table(rec, UNION_PREPARE_NAMES))
    return _medians(rec, UNION_PREPARE_NAMES)


def _union_prepare_live(records, preset: str = "cap64k", window: int = 128,
                        reps: int = 200) -> dict:
    import torch

    from ..gpu import gpu_prepare_unions, union_prep_launch
    from ..gpu.timing import bench_gpu

    cap = make_preset(preset)
    n, k = cap.topk.shape
    perm = greedy_regroup(cap.topk, Grouping(window), **cap.regroup_kwargs())
    ref = prepare_unions(cap.topk, perm, cap.request_offsets, 8)
    got = gpu_prepare_unions(cap.topk, perm, cap.request_offsets, 8).to_cpu()
    bad = [f for f in PLAN_FIELDS if getattr(ref, f).dtype != getattr(got, f).dtype
           or not np.array_equal(getattr(ref, f), getattr(got, f))]
    assert not bad, f"GPU union plan differs from the CPU reference in {bad}"
    topk, _ = cuda_capture(cap)
    perm_t = torch.from_numpy(perm.astype(np.int32)).cuda().unsqueeze(0)  # [1, N]
    prepared = union_prep_launch(n, 1, k, cap.request_offsets, 8)
    both, count = UNION_PREPARE_NAMES[:2]
    out = {both: bench_gpu(lambda: prepared.run(topk, perm_t), reps)["median_us"],
           count: bench_gpu(lambda: prepared.count(topk, perm_t), reps)["median_us"]}
    print(f"π from the CPU greedy at W{window}; {len(ref.pages):,} union pages in "
          f"{len(ref.page_counts):,} groups; every field identical to prepare_unions")
    print("\n".join([HEADER, _row(both, out[both], True), _row(count, out[count])]))
    return out


#: Chapter 05: ``kernels/union_prepare.cu`` on cap64k with π of the CPU greedy at W
#: (``window``); both launches, and the counting one alone. Inputs: ``preset``, ``window``,
#: ``reps``.
UNION_PREPARE = LiveKernel("union preparation, kernels/union_prepare.cu", prepare_unions,
                           ("gpu_regroup_h200",), _union_prepare_recorded, _union_prepare_live)
