"""Scaffolding shared by the BF16 and FP8 runs of ``bench_union8.py``: a preset's inputs on the
GPU, its orderings with their union statistics and CPU plans, NaN-poisoned checks, timing rows,
the gather / FlexAttention baselines and the smoke test's inputs.

A sibling module of the script (``python3 benchmarks/bench_union8.py`` puts this folder on
``sys.path``). torch is imported inside the functions, so ``--help`` needs no GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.inputs import PageWeaverInputError
from pageweaver_edu.core.union_metrics import union_stats
from pageweaver_edu.core.union_plan import prepare_unions
from pageweaver_edu.regroup.bitmap import greedy_regroup
from pageweaver_edu.workloads import capture_like_workload, make_preset, preset_names

FLOP_PER_C4_ROUND = 64 * 128 * 128 * 4  # 64 rows x 128 tokens x d=128, QK and PV, 2 flop/FMA

#: Capture-like generator settings the benchmark runs by name beside the presets. They are not
#: presets: other K, context lengths, topic sizes and run lengths, so a speed ratio measured
#: on them says whether it holds off the calibrated shapes.
SETTINGS = {
    # K = 16 (what FlashInfer's MSA takes on SM90): a 24K-token context with short, drifting
    # topic runs, and a 48K one with long, stable runs
    "cap24k-top16": {"n": 6_144, "prefix_tokens": 18_432, "k": 16, "topic_pages": 8,
                     "drift": 1.5, "run_mean": 1.5, "revisit": 0.6, "memory": 2},
    "cap48k-top16": {"n": 10_000, "prefix_tokens": 40_960, "k": 16, "topic_pages": 11,
                     "drift": 0.4, "run_mean": 8.0, "revisit": 0.9, "memory": 5},
    # wider selections than MSA takes on SM90 (our rows and the decode peers only): K = 24
    # over a 32K-token context, shorter topic runs, more drift
    "cap32k-top24": {"n": 8_192, "prefix_tokens": 24_576, "k": 24, "topic_pages": 12,
                     "drift": 1.2, "run_mean": 3.5, "revisit": 0.7, "memory": 3},
    # K = 32 near the 512-page capacity: 6,000 queries after 57,344 tokens (495 pages)
    "cap56k-top32": {"n": 6_000, "prefix_tokens": 57_344, "k": 32, "topic_pages": 16,
                     "drift": 0.5, "run_mean": 1.8, "revisit": 0.95, "memory": 6},
}


def make_workload(name: str, seed: int = 0):
    """The capture of a preset (:func:`~pageweaver_edu.workloads.make_preset`) or of one of the
    benchmark's :data:`SETTINGS` (``capture_like_workload``, P = 128), for ``seed``."""
    if name in SETTINGS:
        return capture_like_workload(**SETTINGS[name], page_size=128, seed=seed)
    if name not in preset_names():
        raise PageWeaverInputError(
            f"unknown workload {name!r}; presets: {', '.join(preset_names())}; benchmark "
            f"settings: {', '.join(SETTINGS)}")
    return make_preset(name, seed=seed)


def nrms(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def write_result(rec: dict, path: Path) -> Path:
    """Write a result record as JSON to ``path`` (its folder made) and copy it into $OUT when
    that is set and another folder (the device runner brings $OUT back)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
    copy = Path(os.environ.get("OUT", path.parent)) / path.name
    if copy.resolve() != path.resolve():
        shutil.copy(path, copy)
    return path


@dataclass
class PresetInputs:
    """A preset with H KV heads (head h: the preset's Top-K with seed h) and random BF16 Q/K/V
    on the GPU; ``t32`` / ``lens64`` are the Top-K and L_i as the GPU regroup takes them."""

    caps: list
    topk: np.ndarray  # [H, N, K]
    n: int
    kk: int
    pages: int
    offsets: object
    q: object
    k: object
    v: object
    cpos: object
    lens: object
    t32: object
    lens64: object

    @property
    def cap(self):
        return self.caps[0]

    def check_rows(self, rows):
        """The sampled rows ``rows`` (sorted query indices) as the CPU checks take them: Q
        ``[rows, H·16, 128]`` on the CPU, Top-K ``[H, rows, K]``, c_i and L_i (or None)."""
        import torch

        cap = self.cap
        return (self.q[torch.from_numpy(rows).cuda()].cpu(), self.topk[:, rows],
                None if cap.causal_pos is None else cap.causal_pos[rows],
                None if cap.lengths is None else cap.lengths[rows])

    def prepare(self, perm, group: int = 8):
        """The GPU union plan of π ``perm`` ([H, N] on the GPU), prepared as a live call does
        it: on the GPU, no host work on data, untrimmed."""
        from pageweaver_edu.gpu import gpu_prepare_unions

        return gpu_prepare_unions(self.t32, perm, self.offsets, group, trim=False,
                                  validate=False)


def preset_inputs(name: str, heads: int) -> PresetInputs:
    import torch

    caps = [make_workload(name, seed=h) for h in range(heads)]
    cap = caps[0]
    topk = np.stack([c.topk for c in caps])  # [H, N, K]
    n, kk = topk.shape[1], topk.shape[2]
    pages = int(topk.max()) + 1
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((n, heads * 16, 128), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), generator=gen, device="cuda").to(torch.bfloat16)
    cpos = None if cap.causal_pos is None else torch.from_numpy(cap.causal_pos).cuda()
    lens = None if cap.lengths is None else torch.from_numpy(cap.lengths).cuda()
    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    lens64 = None if cap.lengths is None else torch.from_numpy(cap.lengths).to(torch.int64).cuda()
    return PresetInputs(caps, topk, n, kk, pages, cap.request_offsets, q, k, v, cpos, lens, t32,
                        lens64)


@dataclass
class Orderings:
    """Per ordering ("original", "w<W>", "random"): every head's π (``perms``, and on the GPU
    ``perm_gpu``), union statistics (``stats``, plus "original_g4") and the CPU-prepared Union8
    plan (``plans``); ``plan4`` the Union4 plan of the original order; ``cpu_s[W]`` the CPU
    greedy's time for window W (all heads)."""

    perms: dict
    stats: dict
    plans: dict
    plan4: object
    perm_gpu: dict
    cpu_s: dict


def prepare_orderings(x: PresetInputs, windows, rng) -> Orderings:
    """The original order, the CPU greedy for every W in ``windows`` (= the GPU greedy bit for
    bit, as tests/gpu checks) and a random order drawn from ``rng``."""
    import torch

    from pageweaver_edu.gpu import GpuUnionPlan

    caps, n, offsets = x.caps, x.n, x.offsets
    perms = {"original": [np.arange(n)] * len(caps)}
    cpu_s = {}
    for w in windows:
        t0 = time.perf_counter()
        perms[f"w{w}"] = [greedy_regroup(c.topk, Grouping(w), **c.regroup_kwargs()) for c in caps]
        cpu_s[w] = time.perf_counter() - t0
    perms["random"] = [rng.permutation(n) for _ in caps]
    stats = {}
    for key, ps in perms.items():
        st = [union_stats(c.topk, p, offsets, 8) for c, p in zip(caps, ps, strict=True)]
        stats[key] = {"union_visits": sum(s.union_visits for s in st),
                      "c4": sum(s.c4 for s in st), "edges": sum(s.edges for s in st)}
    stats["original_g4"] = {"c4": sum(union_stats(c.topk, None, offsets, 4).union_visits
                                      for c in caps)}
    plans = {key: GpuUnionPlan.from_cpu([prepare_unions(c.topk, p, offsets, 8)
                                         for c, p in zip(caps, ps, strict=True)])
             for key, ps in perms.items()}
    plan4 = GpuUnionPlan.from_cpu([prepare_unions(c.topk, None, offsets, 4) for c in caps])
    perm_gpu = {key: torch.from_numpy(np.stack(ps).astype(np.int32)).cuda()
                for key, ps in perms.items()}
    return Orderings(perms, stats, plans, plan4, perm_gpu, cpu_s)


def poisoned(*atts):
    """``fresh(fn)``: fill the outputs of the prepared launches ``atts`` with NaN, run ``fn``,
    synchronise and return a copy of its output (a row the kernel forgot stays NaN)."""
    import torch

    def fresh(fn):
        for att in atts:
            att.out.fill_(float("nan"))
        out = fn()
        torch.cuda.synchronize()
        return out.clone()

    return fresh


class Timings:
    """The ``results`` rows of a run: :meth:`add` times ``fn`` with
    :func:`pageweaver_edu.gpu.timing.bench_gpu` (``args.reps`` unless ``reps``, ``args.spin_us``)
    and returns the median in µs. With ``c4`` the row gets ``tflops_c4`` (and, given
    ``fp8_peak_tflops``, ``fraction_of_fp8_peak_c4``); ``extra`` items are appended."""

    def __init__(self, args, fp8_peak_tflops: float | None = None):
        self.args, self.fp8_peak_tflops, self.results = args, fp8_peak_tflops, []

    def add(self, rname, fn, reps=None, c4=None, **extra) -> float:
        from pageweaver_edu.gpu.timing import bench_gpu

        reps = self.args.reps if reps is None else reps
        r = bench_gpu(fn, reps=reps, warmup=3, spin_us=self.args.spin_us)
        row = {"name": rname, "median_us": round(r["median_us"], 2),
               "p10_us": round(r["p10_us"], 2), "p90_us": round(r["p90_us"], 2), "reps": reps}
        if c4 is not None:
            tf = c4 * FLOP_PER_C4_ROUND / (r["median_us"] * 1e6)
            row["tflops_c4"] = round(tf, 1)
            if self.fp8_peak_tflops is not None:
                row["fraction_of_fp8_peak_c4"] = round(tf / self.fp8_peak_tflops, 3)
        row.update(extra)
        self.results.append(row)
        print(f"  {rname:34s} {row['median_us']:11.1f} us", flush=True)
        return row["median_us"]


def time_baselines(x: PresetInputs, name: str, heads: int, args, add, check: dict, t: dict,
                   against=None) -> None:
    """``gather_reference`` (t["gather"]) and, for ``args.flex_presets`` with one KV head, one
    ``flex_attention_q<a>_kv<b>`` row per ``args.flex_blocks`` (t["flex"]); a failed FlexAttention
    is reported in ``check`` and the run carries on. With ``against`` (a Union8 output) the
    gather runs once first and both baselines' NRMS against it go to ``check`` (and a failure is
    printed); without it the baselines are only timed."""
    import torch

    from pageweaver_edu.replay.baselines import FlexPageAttention, dedup_topk, gather_reference

    q, k, v, cpos, lens = x.q, x.k, x.v, x.cpos, x.lens
    ids = dedup_topk(x.t32)
    gout = torch.empty_like(q)

    def gather():
        return gather_reference(q, k, v, ids, cpos, lens, chunk=args.gather_chunk, out=gout)

    if against is not None:
        gather()
        torch.cuda.synchronize()
        check["gather_nrms_vs_union8"] = nrms(gout.float().cpu(), against.float().cpu())
    t["gather"] = add("gather_reference", gather, reps=args.baseline_reps, chunk=args.gather_chunk)
    if name not in args.flex_presets or heads != 1:
        return
    for block in args.flex_blocks:
        try:
            fx = FlexPageAttention(q, k, v, ids, cpos, lens, block=block)
            if against is not None:
                check[f"flex_{block[0]}x{block[1]}_nrms_vs_union8"] = nrms(
                    fx.result().float().cpu(), against.float().cpu())
            t.setdefault("flex", []).append(add(
                f"flex_attention_q{block[0]}_kv{block[1]}", fx, reps=args.baseline_reps,
                mask_build_s=round(fx.mask_build_s, 3), compile_s=round(fx.compile_s, 2)))
            del fx
        except Exception as exc:  # report and carry on with the other measurements
            check[f"flex_{block[0]}x{block[1]}_error"] = f"{type(exc).__name__}: {exc}"[:500]
            if against is not None:
                print("flex failed:", check[f"flex_{block[0]}x{block[1]}_error"], flush=True)


@dataclass
class SmokeCase:
    """The smoke test's inputs: 37 queries, 9 pages, 2 KV heads (tail groups), Top-K with
    padding, causal positions and lengths (numpy and, as ``c`` / ``ln``, on the GPU)."""

    topk: np.ndarray
    cpos: np.ndarray
    lens: np.ndarray
    q: object
    k: object
    v: object
    c: object
    ln: object


def smoke_case() -> SmokeCase:
    import torch

    rng = np.random.default_rng(0)
    n, pages, heads = 37, 9, 2
    topk = rng.integers(-1, pages, size=(heads, n, 5))
    cpos = rng.integers(0, pages * 128, size=n)
    lens = rng.integers(1, pages * 128, size=n)
    q = torch.randn((n, heads * 16, 128), device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, 128, 128), device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), device="cuda").to(torch.bfloat16)
    c, ln = torch.from_numpy(cpos).cuda(), torch.from_numpy(lens).cuda()
    return SmokeCase(topk, cpos, lens, q, k, v, c, ln)


def smoke_outputs(case: SmokeCase, launch, groups=(8, 4)) -> list:
    """``launch(plan, out)`` (``out`` poisoned with NaN, returned) over the CPU plans of every
    g in ``groups`` (Union8 and Union4), then over the GPU regroup's π with the GPU-prepared
    Union8 plan; synchronised."""
    import torch

    from pageweaver_edu.gpu import GpuUnionPlan, gpu_greedy_regroup, gpu_prepare_unions

    topk, q = case.topk, case.q
    heads = topk.shape[0]
    outs = []
    for g in groups:
        plan = GpuUnionPlan.from_cpu([prepare_unions(topk[h], None, None, g)
                                      for h in range(heads)])
        outs.append(launch(plan, torch.full_like(q, float("nan"))))
    t32 = torch.from_numpy(topk).to(torch.int32).cuda().contiguous()
    plan = gpu_prepare_unions(t32, gpu_greedy_regroup(t32, Grouping(8)), trim=False,
                              validate=False)
    outs.append(launch(plan, torch.full_like(q, float("nan"))))
    torch.cuda.synchronize()
    return outs


def smoke_summary(outs, ref) -> tuple[list, bool, bool]:
    """(NRMS of every smoke output against ``ref``, all outputs bitwise identical, any NaN)."""
    import torch

    errs = [nrms(o.float().cpu(), ref) for o in outs]
    same = all(torch.equal(outs[0], o) for o in outs[1:])
    return errs, same, any(bool(torch.isnan(o).any()) for o in outs)


def print_rows(records, header: str, row) -> None:
    """Print ``header``, then ``row(record)`` per result record (``incomplete: <key>`` where a
    record lacks a key the row needs)."""
    print(header)
    for r in records:
        try:
            print(row(r))
        except KeyError as exc:
            print(r["workload"], r["kv_heads"], "incomplete:", exc)
