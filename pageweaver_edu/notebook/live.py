"""The "Live on an H200" cells of the chapters: run the kernel on a GPU, else show the record.

Every chapter with a kernel ends with such a cell (``docs/notebook_conventions.md``). Each
starts with :func:`gpu_or_recorded`: with ``PAGEWEAVER_REQUIRE_GPU=1`` it fails where the GPU
path cannot run; on a GPU the cell runs the kernel, checks it against the CPU reference and
times it with :func:`pageweaver_edu.gpu.timing.bench_gpu` (CUDA events, L2 flushed, stream
kept busy ahead, median); on a CPU it says so and prints the recorded H200 result file
(``benchmarks/results/*.json``, committed, so the printed text is deterministic).

:func:`live_regroup` (chapter 04) and :func:`live_union_prepare` (chapter 05) are whole cells;
chapters 07 and 08 call :func:`gpu_or_recorded` and run their own live code.
"""

from __future__ import annotations

import numpy as np

from ..core.grouping import Grouping
from ..core.union_plan import prepare_unions
from ..gpu import device
from ..records import record_header, recorded_results
from ..regroup.bitmap import greedy_regroup
from ..workloads.presets import make_preset

#: The paper's grouping-alone times on its H200 (arXiv:2610.11201 §5.4), µs.
PAPER_US = {"gpu_regroup_w64": 19.3, "gpu_regroup_w128": 34.6}
#: The project's speed targets on cap64k (GPU kernels issue), µs.
TARGET_US = {"gpu_regroup_w64": 10.0, "gpu_regroup_w128": 17.0, "gpu_union_prepare": 15.0}
PLAN_FIELDS = ("perm", "group_slots", "page_offsets", "pages", "masks", "cta_any",
               "page_counts")


def gpu_or_recorded(stem: str) -> dict | None:
    """Start of a live cell.

    Returns None when the GPU path can run (the cell then runs live). Otherwise prints why
    not and the header of ``benchmarks/results/<stem>.json`` and returns that record. With
    ``PAGEWEAVER_REQUIRE_GPU=1`` a missing GPU path raises
    :class:`~pageweaver_edu.gpu.device.GPUUnavailableError` instead.
    """
    if device.gpu_required_by_env():
        device.require_gpu()
    if device.gpu_available():
        return None
    rec = recorded_results(stem)
    print(f"No GPU here ({device.gpu_unavailable_reason()}).")
    print(f"Showing the recorded H200 result file benchmarks/results/{stem}.json:")
    print(record_header(rec))
    return rec


HEADER = (f"{'kernel (cap64k, one KV head)':38s} {'median µs':>10s} {'paper µs':>9s} "
          f"{'target µs':>10s}  matches CPU")


def _us(x) -> str:
    return "–" if x is None else f"{x:,.2f}"


def _row(name: str, median, matches=None) -> str:
    return (f"{name:38s} {_us(median):>10s} {_us(PAPER_US.get(name)):>9s} "
            f"{_us(TARGET_US.get(name)):>10s}  {'–' if matches is None else matches}")


def recorded_table(rec: dict, names) -> str:
    """Text table of the rows ``names`` of a record: median, paper, target, CPU check."""
    rows = {r["name"]: r for r in rec.get("results", [])}
    lines = [HEADER]
    for name in names:
        r = rows.get(name, {})
        lines.append(_row(name, r.get("median_us"), r.get("matches_cpu")))
    return "\n".join(lines)


def _cuda_inputs(cap):
    import torch

    topk = torch.from_numpy(cap.topk.astype(np.int32)).cuda().unsqueeze(0)  # [1, N, K]
    lengths = None if cap.lengths is None else torch.from_numpy(
        np.asarray(cap.lengths, dtype=np.int64)).cuda()
    print(f"live on {torch.cuda.get_device_name()}: N = {cap.num_queries:,} queries, "
          f"Top{cap.topk.shape[1]}, P = {cap.page_size}, g = 8, B = 512")
    return topk, lengths


def live_regroup(windows=(64, 128), preset: str = "cap64k", reps: int = 200) -> dict:
    """Chapter 04's cell: ``kernels/regroup.cu`` on ``preset`` at each W, both kernel families.

    ``gpu_regroup_w<W>[bits_t<W>]`` is the paper's GPU form (one thread per query, 16-word
    bitmaps), ``gpu_regroup_w<W>`` the default "pairs" kernel. On a GPU: every π must equal the
    CPU reference (AssertionError otherwise), then each kernel is timed. Returns
    ``{name: median µs}`` (live) or the recorded medians.
    """
    runs = [(w, v) for w in windows for v in (f"bits_t{w}", None)]
    names = [f"gpu_regroup_w{w}" + (f"[{v}]" if v else "") for w, v in runs]
    rec = gpu_or_recorded("gpu_regroup_h200")
    if rec is not None:
        print(recorded_table(rec, [*names, *(f"cpu_regroup_w{w}" for w in windows)]))
        return {r["name"]: r["median_us"] for r in rec["results"] if r["name"] in names}
    from ..gpu import gpu_greedy_regroup, regroup_launch
    from ..gpu.timing import bench_gpu

    cap = make_preset(preset)
    n, k = cap.topk.shape
    kw = cap.regroup_kwargs()
    topk, lengths = _cuda_inputs(cap)
    lines, out = [HEADER], {}
    for (w, variant), name in zip(runs, names, strict=True):
        ref = greedy_regroup(cap.topk, Grouping(w), **kw)
        got = gpu_greedy_regroup(cap.topk, Grouping(w), variant=variant, **kw).cpu().numpy()
        same = bool(np.array_equal(ref, got))
        assert same, f"{name}: GPU π differs from the CPU one at {np.flatnonzero(ref != got)[:5]}"
        plan = regroup_launch(n, 1, k, Grouping(w), cap.request_offsets, cap.page_size, variant)
        perm = plan.run(topk, lengths)
        out[name] = bench_gpu(lambda plan=plan, perm=perm: plan.run(topk, lengths, perm),
                              reps)["median_us"]
        lines.append(_row(name, out[name], same))
    print("\n".join(lines))
    return out


def live_union_prepare(preset: str = "cap64k", window: int = 128, reps: int = 200) -> dict:
    """Chapter 05's cell: ``kernels/union_prepare.cu`` on ``preset`` with π of W ``window``.

    On a GPU: every field of :func:`pageweaver_edu.gpu.gpu_prepare_unions` must equal
    :func:`pageweaver_edu.core.union_plan.prepare_unions` (AssertionError otherwise), then both
    launches are timed. Returns ``{name: median µs}`` (live) or the recorded medians.
    """
    names = ["gpu_union_prepare", "gpu_union_prepare[count kernel only]", "cpu_union_prepare"]
    rec = gpu_or_recorded("gpu_regroup_h200")
    if rec is not None:
        print(recorded_table(rec, names))
        return {r["name"]: r["median_us"] for r in rec["results"] if r["name"] in names}
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
    topk, _ = _cuda_inputs(cap)
    perm_t = torch.from_numpy(perm.astype(np.int32)).cuda().unsqueeze(0)  # [1, N]
    up = union_prep_launch(n, 1, k, cap.request_offsets, 8)
    out = {names[0]: bench_gpu(lambda: up.run(topk, perm_t), reps)["median_us"],
           names[1]: bench_gpu(lambda: up.count(topk, perm_t), reps)["median_us"]}
    print(f"π from the CPU greedy at W{window}; {len(ref.pages):,} union pages in "
          f"{len(ref.page_counts):,} groups; every field identical to prepare_unions")
    print("\n".join([HEADER, _row(names[0], out[names[0]], True), _row(names[1], out[names[1]])]))
    return out
