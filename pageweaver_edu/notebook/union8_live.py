"""The live cells of chapters 07, 08 and 12: the cluster kernels on the H200.

* :data:`UNION8` (chapter 07) — the BF16 cluster kernel ``kernels/union8.cu`` over one
  capture's original-order and W128 plans: every row written, bitwise the same in both
  orders, NRMS against float64, and the attention kernel alone timed.
* :data:`ONLINE_COST` (chapter 08) — complete calls T0, T_fixed and T_online at W128 and the
  cost accounting S_exec, C_online, S_net (docs/definitions.md#cost-accounting).
* :data:`FP8_UNION8` (chapter 12) — the FP8 cluster kernel ``kernels/union8_fp8.cu`` against
  the CPU emulation of its arithmetic and the float64 reference on the FP8 cache.

Each is a :class:`~.live.LiveKernel`: ``KERNEL.run(**inputs)`` runs it on a GPU or shows the
recorded file. Chapter 07's figure of one row's online-softmax state (:func:`state_figure`) and
its exercise (:data:`ONLINE_STEP`) are here too.
"""

from __future__ import annotations

import numpy as np

from ..core.attention import reference_attention
from ..core.grouping import Grouping
from ..core.union_plan import prepare_unions
from ..records import result_medians
from ..regroup.bitmap import greedy_regroup
from ..replay.fp8 import fp8_union_attention, nrms
from .exercises import Exercise
from .live import LiveKernel

#: The attention-alone rows chapter 07 shows from the record.
UNION8_ROWS = ("union8_original_attn", "union8_fixed_w128_attn", "union4_original_attn",
               "union8_fixed_w128_3slots_attn")
#: The complete-call rows of chapter 08: T0, T_fixed and T_online at W128.
CALL_ROWS = ("union8_original", "union8_fixed_w128", "union8_online_w128")


def _union8_recorded(records, **_) -> dict:
    rec = records["union8_cap64k_h200"]
    c = rec["check"]
    print(f"  NRMS vs float64 on {128} sampled rows: {c['nrms_vs_float64']:.2e}; "
          f"all rows written: {c['all_rows_written']}")
    print("  bitwise identical to the original order:", c["bitwise_identical"])
    for r in rec["results"]:
        if r["name"] in UNION8_ROWS:
            print(f"  {r['name']:31s} {r['median_us']:8.1f} µs  "
                  f"({r['tflops_c4']:.0f} TFLOP/s on the C4 work)")
    return {n: m for n, m in result_medians(rec).items() if n in UNION8_ROWS}


def _union8_live(records, q, k, v, capture, plans, rng) -> dict:
    """``q`` [N, 16, 128], ``k``/``v`` [pages, 128, 128] (BF16 values as float32 arrays);
    ``plans``: label -> CPU UnionPlan of ``capture``, the first the original order."""
    import torch

    from ..gpu import Bf16UnionAttention, GpuUnionPlan
    from ..gpu.timing import bench_gpu

    cap = capture
    tq = torch.from_numpy(q).to(torch.bfloat16).cuda()
    tk = torch.from_numpy(k).to(torch.bfloat16).cuda().contiguous()
    tv = torch.from_numpy(v).to(torch.bfloat16).cuda().contiguous()
    att = Bf16UnionAttention(tq, (tk, tv), cap.causal_pos, cap.lengths)
    gpu_plans = {key: GpuUnionPlan.from_cpu(p) for key, p in plans.items()}
    outs = {}
    for key, p in gpu_plans.items():
        att.out.fill_(float("nan"))
        outs[key] = att.run(p).clone()
    first, *others = outs
    rows = np.sort(rng.choice(cap.num_queries, 128, replace=False))
    ref_rows = reference_attention(q[rows], k, v, cap.topk[rows], lengths=cap.lengths[rows],
                                   causal_pos=cap.causal_pos[rows])
    got_rows = outs[first][torch.from_numpy(rows).cuda()].float().cpu().numpy()
    print("live on", torch.cuda.get_device_name())
    print("all rows written:", not bool(torch.isnan(outs[first]).any()))
    for key in others:
        print(f"{first} vs {key} bitwise identical:", torch.equal(outs[first], outs[key]))
    err = np.linalg.norm(got_rows - ref_rows) / np.linalg.norm(ref_rows)
    print(f"NRMS vs float64 (128 rows): {err:.2e}")
    out = {}
    for key, p in gpu_plans.items():
        out[key] = bench_gpu(lambda p=p: att.run(p), reps=20, warmup=3)["median_us"]
        print(f"union8 {key:8s} attention: {out[key]:8.1f} µs (median)")
    return out


#: Chapter 07. Inputs: ``q``, ``k``, ``v``, ``capture``, ``plans``, ``rng``.
UNION8 = LiveKernel("BF16 cluster kernel, kernels/union8.cu", reference_attention,
                    ("union8_cap64k_h200",), _union8_recorded, _union8_live)


def accounting_lines(med: dict) -> str:
    """T0, T_fixed, T_online (W128) and S_exec, C_online, S_net from the medians of
    :data:`CALL_ROWS`."""
    t0, tf, to = (med[name] for name in CALL_ROWS)
    return (f"T0 {t0:8.1f} µs   T_fixed(W128) {tf:8.1f} µs   T_online(W128) {to:8.1f} µs\n"
            f"S_exec {t0 - tf:7.1f} µs   C_online {to - tf:6.1f} µs   S_net {t0 - to:7.1f} µs")


def _online_recorded(records, **_) -> dict:
    med = result_medians(records["union8_cap64k_h200"])
    print(accounting_lines(med))
    return med


def _online_live(records, capture, fixed_perm) -> dict:
    """Random BF16 q/k/v for ``capture``; ``fixed_perm`` is the precomputed W128 π."""
    import torch

    from ..gpu import Bf16UnionAttention, gpu_prepare_unions, regroup_launch
    from ..gpu.timing import bench_gpu

    cap = capture
    n, pages = cap.num_queries, int(cap.topk.max()) + 1
    q = torch.randn((n, 16, 128), device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, 128, 128), device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, 128, 128), device="cuda").to(torch.bfloat16)
    att = Bf16UnionAttention(q, (k, v), cap.causal_pos, cap.lengths)
    t32 = torch.from_numpy(cap.topk[None]).to(torch.int32).cuda().contiguous()
    lens = torch.from_numpy(cap.lengths).cuda()
    ident = torch.arange(n, dtype=torch.int32, device="cuda")
    fixed = torch.from_numpy(np.asarray(fixed_perm, dtype=np.int32)).cuda()
    regroup = regroup_launch(n, 1, t32.shape[2], Grouping(128), None, cap.page_size)

    def call(perm):  # one complete call: union preparation + attention, no host sync
        return att.run(gpu_prepare_unions(t32, perm, trim=False, validate=False))

    calls = {"union8_original": lambda: call(ident), "union8_fixed_w128": lambda: call(fixed),
             "union8_online_w128": lambda: call(regroup.run(t32, lens))}
    med = {name: bench_gpu(fn, reps=20, warmup=3)["median_us"] for name, fn in calls.items()}
    print(f"live on {torch.cuda.get_device_name()}")
    print(accounting_lines(med))
    return med


#: Chapter 08. Inputs: ``capture``, ``fixed_perm``.
ONLINE_COST = LiveKernel("BF16 cluster kernel, complete calls (kernels/regroup.cu, "
                         "union_prepare.cu, union8.cu)",
                         greedy_regroup, ("union8_cap64k_h200",), _online_recorded, _online_live)


def _fp8_recorded(records, **_) -> dict:
    rec = records["union8_fp8_cap64k_h200"]
    c = rec["check"]
    print(f"  kernel vs float64 on the FP8 cache: NRMS {100 * c['nrms_vs_float64']:.2f} % "
          f"(CPU emulation: {100 * c['emulation_nrms_vs_float64']:.2f} %; "
          f"{c['checked_rows']} sampled rows)")
    print(f"  kernel vs CPU emulation: NRMS {100 * c['nrms_vs_emulation']:.2f} %; "
          f"vs float64 on BF16 K/V {100 * c['nrms_vs_float64_bf16_kv']:.2f} %")
    print("  all rows written:", c["all_rows_written"])
    print("  bitwise identical to the original order:", c["bitwise_identical"])
    return result_medians(rec)


def _fp8_live(records, capture, case, ref, emu) -> dict:
    """``case``: :func:`pageweaver_edu.replay.fp8_budget.make_case` of ``capture``; ``ref``
    float64 on its FP8 cache, ``emu`` the CPU emulation of the kernel on it."""
    import torch

    from ..gpu import Fp8UnionAttention, GpuUnionPlan, fp8_cache_from_kv
    from ..gpu.timing import bench_gpu

    cap, kv = capture, case.kv
    cache = fp8_cache_from_kv(kv.to("cuda"))
    tq = case.q.cuda().contiguous()
    runs = {"original": (None, 8), "W16 regrouped": (greedy_regroup(cap.topk, Grouping(16)), 8),
            "Union4": (None, 4)}
    outs, launches = {}, {}
    for name, (perm, g) in runs.items():
        plan = GpuUnionPlan.from_cpu(prepare_unions(cap.topk, perm, None, g))
        att = Fp8UnionAttention(tq, cache, cap.causal_pos, cap.lengths,
                                out=torch.full_like(tq, float("nan")))
        att.run(plan)
        torch.cuda.synchronize()
        outs[name], launches[name] = att.out.clone(), (att, plan)
    got = outs["original"].float().cpu()
    print("live on", torch.cuda.get_device_name())
    print("all rows written:", not bool(torch.isnan(outs["original"]).any()))
    print("original / W16 / Union4 bitwise identical:",
          all(torch.equal(outs["original"], o) for o in outs.values()))
    print(f"kernel vs float64 on the FP8 cache: NRMS {100 * nrms(got, ref):.2f} % "
          f"(emulation: {100 * nrms(emu, ref):.2f} %)")
    print(f"kernel vs CPU emulation: NRMS {100 * nrms(got, emu.float()):.3f} %")
    med = {}
    for name, (att, plan) in launches.items():
        med[name] = bench_gpu(lambda a=att, p=plan: a.run(p), reps=20, warmup=3)["median_us"]
        print(f"  {name:14s} {med[name]:7.1f} µs (48 queries: launch-bound, not a speed test)")
    return med


#: Chapter 12. Inputs: ``capture``, ``case``, ``ref``, ``emu``.
FP8_UNION8 = LiveKernel("FP8 cluster kernel, kernels/union8_fp8.cu", fp8_union_attention,
                        ("union8_fp8_cap64k_h200",), _fp8_recorded, _fp8_live)


def state_figure(trace: list[dict], r: int = 0):
    """Running max m and running sum ℓ of head 0 of member position ``r`` after each stage it
    computes (``trace`` of :func:`~pageweaver_edu.replay.union8.emulate_union_group`), in two
    panels with their own axis titles; marker symbols and dashes tell the series apart."""
    from plotly.subplots import make_subplots

    from .style import style

    steps = [s for s in trace if s["slot"] == r]
    x = [f"p{s['page']}·st{s['stage']}" for s in steps]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    fig.add_scatter(x=x, y=[s["m"] for s in steps], name="running max m", row=1, col=1,
                    mode="lines+markers", marker_symbol="circle", line_shape="hv")
    fig.add_scatter(x=x, y=[s["l"] for s in steps], name="running sum ℓ", row=2, col=1,
                    mode="lines+markers", marker_symbol="square", line_dash="dash")
    style(fig, f"Member position r = {r}, head 0: online-softmax state after each stage",
          "", "", height=520)
    fig.update_xaxes(title_text="page p · stage st (st0 = tokens 0–63, st1 = 64–127) that "
                     "position r computes", tickangle=-60, row=2, col=1)
    fig.update_yaxes(title_text="m (log2 units)", row=1, col=1)
    fig.update_yaxes(title_text="ℓ = Σ 2^(z − m) (no unit)", row=2, col=1)
    return fig


def online_softmax_step(m: float, l: float, o, z, v):  # noqa: E741
    """One online-softmax update of one row by one page, in float64.

    Parameters
    ----------
    m, l : float
        Running max (log2 units; ``-inf`` before the first page) and running sum.
    o : array_like, shape [d]
        Running output (unnormalised).
    z : array_like, shape [t]
        The page's scores in log2 units; masked tokens are ``-inf`` (at least one is finite).
    v : array_like, shape [t, d]
        The page's V rows.

    Returns
    -------
    (m', ℓ', O') : (float, float, numpy.ndarray)
        ``m' = max(m, max z)``, ``α = 2^(m − m')``, ``ℓ' = α ℓ + Σ 2^(z − m')``,
        ``O' = α O + 2^(z − m') V``.
    """
    z, v = np.asarray(z, dtype=np.float64), np.asarray(v, dtype=np.float64)
    m_new = max(float(m), float(z.max()))
    alpha = np.exp2(float(m) - m_new)
    p = np.exp2(z - m_new)
    return m_new, float(alpha * l + p.sum()), alpha * np.asarray(o, dtype=np.float64) + p @ v


def _same_state(got, want) -> bool:
    try:
        return len(got) == 3 and all(
            np.shape(g) == np.shape(w) and np.allclose(g, w, rtol=1e-9, atol=1e-12)
            for g, w in zip(got, want, strict=True))
    except (TypeError, ValueError):
        return False


def _online_cases(rng: np.random.Generator):
    """Random states and pages (d = 4, 8 tokens, some masked), the first page (m = -inf,
    ℓ = 0, O = 0), a page below the running max (α = 1) and a page with one visible token."""
    def page(top, masked):
        z = rng.normal(top, 2.0, 8)
        z[rng.random(8) < masked] = -np.inf
        z[0] = max(z[0], top - 1.0)  # at least one visible token
        return z, rng.normal(size=(8, 4))

    for case in range(24):
        m = -np.inf if case % 6 == 0 else float(rng.normal(0, 3))
        total, o = (0.0, np.zeros(4)) if m == -np.inf else (float(rng.uniform(0.5, 20)),
                                                             rng.normal(size=4))
        yield (m, total, o, *page(float(rng.normal(0, 3)), 0.3)), {}
    z, v = page(-8.0, 0.0)
    yield (2.0, 3.0, np.ones(4), z, v), {}
    z = np.full(8, -np.inf)
    z[5] = 1.5
    yield (0.5, 1.0, np.arange(4.0), z, rng.normal(size=(8, 4))), {}


#: Chapter 07's exercise: one online-softmax update (m, ℓ, α, O) for one page.
ONLINE_STEP = Exercise(
    "online softmax step", "Write online_step(m, l, o, z, v) -> (m_new, l_new, o_new): update "
    "one row's running max m (log2 units), sum ℓ and output O by one page of scores z "
    "(log2 units, -inf = masked) and V rows v, rescaling by α = 2^(m - m_new).",
    online_softmax_step, _online_cases, _same_state)
