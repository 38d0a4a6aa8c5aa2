"""FlashInfer peer rows of ``bench_union8.py``, on the same inputs in the same run.

Rows (each checked before it is timed: every output row finite, NRMS against the float64
reference on ``SAMPLE_ROWS`` sampled queries, and NRMS against our Union8 output):

* ``flashinfer_decode_bf16_tc`` / ``flashinfer_decode_fp8_tc`` / ``flashinfer_decode_bf16`` /
  ``flashinfer_decode_fp8``: ``BatchDecodeWithPagedKVCacheWrapper`` with / without tensor
  cores (with them FlashInfer runs its FA2 batch-prefill kernels), BF16 or FP8 E4M3 KV, one
  request per (query, KV head) whose pages are that head's Top-K pages with a visible token
  (:func:`pageweaver_edu.peers.decode_requests`; built on the GPU outside the timed
  region). ``plan()`` is timed apart with a host timer (``plan_us``): it copies the page table
  to the host, a host sync per call that our path does not need.
* ``flashinfer_msa_fp8``: ``flashinfer.msa_ops.msa_sparse_attention`` (SM90, FP8 E4M3 K/V in
  one interleaved cache, per-tensor scales), its default route (the CuTe DSL union schedule for
  >= 8192 queries per sequence, else the Cake generated programs); ``flashinfer_msa_fp8_programs``
  with the Cake programs forced. ``route`` says which body ran.

FP8 rows use ONE scale per tensor (FlashInfer's FP8 paths take per-tensor scales) and are
checked against the float64 reference on that dequantized cache; BF16 rows against the
reference on the BF16 K/V. A row whose FlashInfer call fails is reported in ``check``
(``<row>_error``, one line) and the run carries on. torch and FlashInfer are imported inside the
functions, so ``--help`` needs neither.
"""

from __future__ import annotations

import time

import numpy as np

SAMPLE_ROWS = 64
TOL = {"bf16": 1e-2, "fp8": 5e-2}
DECODE_ROWS = (("flashinfer_decode_bf16_tc", True, "bf16"),
               ("flashinfer_decode_fp8_tc", True, "fp8"),
               ("flashinfer_decode_bf16", False, "bf16"),
               ("flashinfer_decode_fp8", False, "fp8"))
MSA_ROWS = (("flashinfer_msa_fp8", "default"), ("flashinfer_msa_fp8_programs", "programs"))
ROW_NAMES = tuple(r[0] for r in DECODE_ROWS) + tuple(r[0] for r in MSA_ROWS)


def available() -> tuple[bool, str]:
    """(True, version) when FlashInfer imports, else (False, why)."""
    from pageweaver_edu.peers import flashinfer_available

    return flashinfer_available()


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:400]


def _gpu_nrms(a, b) -> float:
    import torch

    a, b = a.float(), b.float()
    return float(torch.linalg.norm(a - b) / torch.clamp(torch.linalg.norm(b), min=1e-30))


def _checked(name, kind, out, rows, refs, against, check) -> bool:
    """Record finiteness and NRMS of one peer output; print and return whether it passes."""
    import torch

    from pageweaver_edu.replay.fp8 import nrms

    finite = bool(torch.isfinite(out).all())
    err = nrms(out[torch.from_numpy(rows).to(out.device)].double().cpu(), refs[kind])
    check[f"{name}_all_finite"] = finite
    check[f"{name}_nrms_vs_float64"] = err
    if against is not None:
        check[f"{name}_nrms_vs_union8"] = _gpu_nrms(out, against)
    ok = finite and err < TOL[kind]
    check[f"{name}_ok"] = ok
    print(f"  check {name}: nrms vs float64 {err:.2e}, finite {finite}"
          + ("" if ok else f"  MISMATCH (tolerance {TOL[kind]:g})"), flush=True)
    return ok


def time_flashinfer(x, args, add, check: dict, t: dict, against=None) -> None:
    """Add the FlashInfer rows (see the module docstring) for preset inputs ``x``
    (:class:`union8_bench_common.PresetInputs`) through ``add(name, fn, reps=..., **extra)``;
    checks and errors go to ``check``, medians to ``t["peers"][name]``. ``against``: our
    Union8 output of this run (for ``<row>_nrms_vs_union8``). ``args.reps`` times the
    tensor-core and MSA rows, ``args.baseline_reps`` the CUDA-core decode rows (tens of ms)."""
    import torch

    from pageweaver_edu import peers as pf

    ok, version = available()
    check["flashinfer_version"] = version if ok else None
    if not ok:
        check["flashinfer_error"] = version
        print(f"  flashinfer rows skipped: {version}", flush=True)
        return
    peers = t.setdefault("peers", {})
    cap, n = x.cap, x.n
    rng = np.random.default_rng(16)
    rows = np.sort(rng.choice(n, min(n, SAMPLE_ROWS), replace=False))
    check["flashinfer_checked_rows"] = len(rows)
    try:
        t0 = time.perf_counter()
        ref_bf16, kv8, ref_fp8 = pf.peer_references(x.q, x.k, x.v, x.topk, cap.causal_pos,
                                                    cap.lengths, rows)
        check["flashinfer_reference_s"] = round(time.perf_counter() - t0, 2)
    except Exception as exc:  # noqa: BLE001 - report and skip the peer rows
        check["flashinfer_error"] = _one_line(exc)
        print("  flashinfer references failed:", check["flashinfer_error"], flush=True)
        return
    refs = {"bf16": ref_bf16, "fp8": ref_fp8}
    ks, vs = float(kv8.k_scale[0]), float(kv8.v_scale[0])
    check["flashinfer_fp8_scales"] = [ks, vs]

    # ---- paged decode, one request per (query, KV head)
    try:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        req = pf.decode_requests(x.t32, cap.causal_pos, cap.lengths, cap.page_size,
                                 num_pages=x.pages, device=x.q.device)
        torch.cuda.synchronize()
        conv_s = time.perf_counter() - t0
        check["flashinfer_decode_requests"] = {
            "requests": req.batch, "pages": int(req.indptr[-1]), "empty": req.num_empty,
            "conversion_ms": round(conv_s * 1e3, 2), "outside_timed_region": True}
    except Exception as exc:  # noqa: BLE001
        req = None
        check["flashinfer_decode_error"] = _one_line(exc)
        print("  flashinfer decode conversion failed:", check["flashinfer_decode_error"])
    for name, tc, kind in DECODE_ROWS if req is not None else ():
        try:
            k, v = (x.k, x.v) if kind == "bf16" else (kv8.k8, kv8.v8)
            peer = pf.DecodePeer(x.q, k, v, req, use_tensor_cores=tc, k_scale=ks, v_scale=vs)
            plan_s = peer.plan()
            peer.out.fill_(float("nan"))
            out = peer.run().clone()
            torch.cuda.synchronize()
            _checked(name, kind, out, rows, refs, against, check)
            del out
            peers[name] = add(name, peer.run, reps=None if tc else args.baseline_reps,
                              plan_us=round(plan_s * 1e6, 1), backend=peer.resolved_backend,
                              tensor_cores=tc, kv=kind, requests=req.batch)
        except Exception as exc:  # noqa: BLE001 - report and carry on
            check[f"{name}_error"] = _one_line(exc)
            print(f"  {name} failed: {check[f'{name}_error']}", flush=True)
        finally:
            peer = None
            torch.cuda.empty_cache()

    # ---- MSA sparse attention (SM90, FP8 KV)
    try:
        inp = pf.msa_inputs(x.topk, cap.causal_pos, cap.lengths, num_pages=x.pages,
                            page_size=cap.page_size)
        check["flashinfer_msa_inputs"] = {"seqused_k": inp.seqused_k, "q_offset": inp.q_offset,
                                          "page_table_width": inp.num_pages,
                                          "empty": int(inp.empty.sum())}
    except Exception as exc:  # noqa: BLE001 (PageWeaverInputError: not representable)
        inp = None
        check["flashinfer_msa_error"] = _one_line(exc)
        print("  flashinfer MSA not run:", check["flashinfer_msa_error"], flush=True)
    for name, route in MSA_ROWS if inp is not None else ():
        try:
            peer = pf.MsaPeer(x.q, kv8, inp, route=route)
            peer.out.fill_(float("nan"))
            out, ran = peer.probe()
            out = out.clone()
            torch.cuda.synchronize()
            check["flashinfer_msa_route" if route == "default" else
                  "flashinfer_msa_programs_route"] = ran
            _checked(name, "fp8", out, rows, refs, against, check)
            del out
            peers[name] = add(name, peer.run, route=ran, kv="fp8",
                              softmax_scale=round(peer.kw["softmax_scale"], 8),
                              v_global_scale=round(peer.kw["v_global_scale"], 8))
        except Exception as exc:  # noqa: BLE001
            check[f"{name}_error"] = _one_line(exc)
            print(f"  {name} failed: {check[f'{name}_error']}", flush=True)
        finally:
            peer = None
            torch.cuda.empty_cache()


def speedups(t: dict, best: float | None, basis: str, prefix: str = "speedup_vs_") -> dict:
    """``<prefix><peer row>`` = peer median / ``best`` (ours, µs) for every peer row timed,
    and ``<prefix>flashinfer_basis`` naming what ``best`` is (nothing when ``best`` is None)."""
    peers = t.get("peers") or {}
    if not best or not peers:
        return {}
    out = {f"{prefix}{name}": round(peers[name] / best, 3) for name in ROW_NAMES if name in peers}
    out[f"{prefix}flashinfer_basis"] = basis
    return out


def summary_ratios(t: dict, best: float, basis: str, ws_basis: str,
                   acc_basis: str = "") -> dict:
    """The summary's peer ratios: :func:`speedups` against ``best`` (our best Union8 of the
    run, named by ``basis``) and, with the ``speedup_union8ws_vs_`` prefix, against the best of
    the warp-specialized rows ``t["ws_T0"]`` / ``t["ws_fixed"]`` / ``t["ws_online"]`` (named by
    ``ws_basis``); with ``speedup_union8ws_fp8acc_vs_``, against the best of the accurate
    mode's rows ``t["wsa_*"]`` (named by ``acc_basis``), when timed."""
    out = speedups(t, best, basis)
    for key, prefix, name in (("ws", "speedup_union8ws_vs_", ws_basis),
                              ("wsa", "speedup_union8ws_fp8acc_vs_", acc_basis)):
        rows = [t[f"{key}_{k}"] for k in ("T0", "fixed", "online") if f"{key}_{k}" in t]
        out.update(speedups(t, min(rows, default=None), name, prefix=prefix))
    return out


def print_peer_table(records) -> None:
    """One line per result record: peer medians (µs) and our best against them."""
    recs = [r for r in records if any(x["name"] in ROW_NAMES for x in r["results"])]
    if not recs:
        return
    print("\nFlashInfer peers, us (x = peer / our best; route of flashinfer_msa_fp8)")
    for r in recs:
        m = {x["name"]: x for x in r["results"]}
        s = r["summary"]
        cells = []
        for name in ROW_NAMES:
            if name in m:
                short = name.replace("flashinfer_", "")
                cells.append(f"{short} {m[name]['median_us']:.0f}"
                             f" (x{s.get(f'speedup_vs_{name}', float('nan')):.2f})")
        print(f"{r['workload']:17s} {r['kv_heads']:2d} " + ", ".join(cells)
              + f"  [{r['check'].get('flashinfer_msa_route', '-')}]")
