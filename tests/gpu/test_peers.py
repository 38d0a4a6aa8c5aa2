"""FlashInfer peers on the GPU: its paged decode and its SM90 sparse kernel
(``msa_sparse_attention``) on our inputs match the float64 reference — the conversions of
:mod:`pageweaver_edu.peers` select the same A_i as ours.

Small random inputs with causal / length cuts inside the last page, empty supports, duplicate
ids, -1 padding and H = 2 KV heads. Every output is poisoned with NaN first. NRMS tolerance
1e-2 for BF16 KV, 5e-2 for FP8 E4M3 KV (per-tensor scales; reference on the dequantized
cache). GPU tests by their folder (tests/conftest.py skips them without a GPU, or fails them
with PAGEWEAVER_REQUIRE_GPU=1); skipped (with the reason) without FlashInfer too, unless
PAGEWEAVER_REQUIRE_PEERS=1 (tools/gpu_peers_run.sh sets it), which makes a missing FlashInfer
fail. The MSA tests need compute capability 9.0.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from pageweaver_edu import peers as pf
from pageweaver_edu.replay.fp8 import nrms

REQUIRE = os.environ.get("PAGEWEAVER_REQUIRE_PEERS") == "1"
FI_OK, FI_WHY = pf.flashinfer_available()

pytestmark = [pytest.mark.peers] + (
    [] if FI_OK or REQUIRE else [pytest.mark.skip(reason=f"flashinfer not importable: {FI_WHY}")])
SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
TOL = {"bf16": 1e-2, "fp8": 5e-2}
H, P = 2, 128


def test_flashinfer_importable():
    assert FI_OK, f"PAGEWEAVER_REQUIRE_PEERS=1 but flashinfer does not import: {FI_WHY}"
    print(f"flashinfer {FI_WHY}")


def qkv(n, pages, heads=H, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn((n, heads * 16, 128), generator=gen, device="cuda").to(torch.bfloat16)
    k = torch.randn((pages, heads, P, 128), generator=gen, device="cuda").to(torch.bfloat16)
    v = torch.randn((pages, heads, P, 128), generator=gen, device="cuda").to(torch.bfloat16)
    return q, k, v


def topk_with_edge_cases(rng, n, pages, k=16, heads=H):
    topk = rng.integers(-1, pages, size=(heads, n, k))
    topk[:, 0] = -1  # empty support
    topk[:, 1, :5] = topk[:, 1, 5:6]  # duplicate ids
    topk[:, 2, 8:] = -1  # padding
    return topk


def decode_case(seed=0, n=48, pages=12):
    rng = np.random.default_rng(seed)
    topk = topk_with_edge_cases(rng, n, pages)
    cpos = rng.integers(0, pages * P, size=n)
    lens = rng.integers(1, pages * P, size=n)
    cpos[3], lens[4] = 5 * P + 9, 7 * P + 100  # cuts inside a page
    cpos[5] = 40  # below every selected page but page 0: likely empty
    return topk, cpos, lens


@pytest.mark.parametrize("tc,kind", [(True, "bf16"), (True, "fp8"), (False, "bf16"),
                                     (False, "fp8")])
def test_decode_matches_reference(tc, kind):
    topk, cpos, lens = decode_case()
    n, pages = topk.shape[1], 12
    q, k, v = qkv(n, pages)
    ref, kv8, ref8 = pf.peer_references(q, k, v, topk, cpos, lens)
    req = pf.decode_requests(torch.from_numpy(topk).cuda(), cpos, lens, num_pages=pages,
                             device="cuda")
    pf.verify_decode_requests(req, topk, cpos, lens)
    kk, vv = (k, v) if kind == "bf16" else (kv8.k8, kv8.v8)
    peer = pf.DecodePeer(q, kk, vv, req, use_tensor_cores=tc, k_scale=float(kv8.k_scale[0]),
                         v_scale=float(kv8.v_scale[0]))
    peer.plan()
    peer.out.fill_(float("nan"))
    out = peer.run().clone()
    torch.cuda.synchronize()
    assert bool(torch.isfinite(out).all()), "a row was not written (NaN) or is not finite"
    err = nrms(out.double().cpu(), ref if kind == "bf16" else ref8)
    print(f"decode tc={tc} {kind}: nrms {err:.2e}, backend {peer.resolved_backend}, "
          f"{req.num_empty} empty requests")
    assert err < TOL[kind]
    empty = np.repeat(req.empty.cpu().numpy().reshape(n, H), 16, axis=1)
    assert empty.any() and float(out[torch.from_numpy(empty).cuda()].abs().max()) == 0.0


def test_decode_empty_requests_raw_behaviour():
    """What FlashInfer itself writes for a zero-page request (we overwrite it with 0): only
    reported; the plan must accept such requests."""
    topk, cpos, lens = decode_case(seed=1)
    n, pages = topk.shape[1], 12
    q, k, v = qkv(n, pages, seed=1)
    req = pf.decode_requests(torch.from_numpy(topk).cuda(), cpos, lens, device="cuda")
    peer = pf.DecodePeer(q, k, v, req, use_tensor_cores=True)
    peer.plan()
    peer.out.fill_(float("nan"))
    peer.wrapper.run(peer.q, peer.cache, out=peer.out)
    torch.cuda.synchronize()
    raw = peer.out[req.empty]
    print(f"raw rows of {req.num_empty} empty requests: finite {bool(torch.isfinite(raw).all())},"
          f" max |x| {float(raw.float().nan_to_num(nan=-1.0).abs().max()):.3g}")
    assert req.num_empty > 0


def msa_case(seed, n, pages, prefix, heads=H, lengths=True):
    rng = np.random.default_rng(seed)
    topk = topk_with_edge_cases(rng, n, pages, heads=heads)
    cpos = prefix + np.arange(n)  # MSA: causal with one offset per sequence
    lens = cpos + 1 if lengths else None
    return topk, cpos, lens


@pytest.mark.skipif(not SM90, reason="msa_sparse_attention's FP8 path here is SM90's")
@pytest.mark.parametrize("route", ["default", "programs"])
def test_msa_small_matches_reference(route):
    # 40 queries after a 1000-token prefix: cuts inside page 7; the Cake programs route
    topk, cpos, lens = msa_case(0, 40, 9, 1000)
    q, k, v = qkv(40, 9)
    _, kv8, ref8 = pf.peer_references(q, k, v, topk, cpos, lens)
    inp = pf.msa_inputs(topk, cpos, lens, num_pages=9)
    peer = pf.MsaPeer(q, kv8, inp, route=route)
    peer.out.fill_(float("nan"))
    out, ran = peer.probe()
    torch.cuda.synchronize()
    assert bool(torch.isfinite(out).all())
    err = nrms(out.double().cpu(), ref8)
    print(f"msa small route={route}: ran {ran}, nrms {err:.2e}")
    assert ran == "cake_programs" and err < TOL["fp8"]
    empty = np.repeat(inp.empty, 16, axis=1)
    assert empty.any() and float(out[torch.from_numpy(empty).cuda()].abs().max()) == 0.0


@pytest.mark.skipif(not SM90, reason="msa_sparse_attention's FP8 path here is SM90's")
@pytest.mark.parametrize("route,expect", [("default", "cute_dsl_union"),
                                          ("programs", "cake_programs")])
def test_msa_union_route_matches_reference(route, expect):
    # >= 8192 queries in one sequence: FlashInfer's default is its CuTe DSL union schedule
    n, pages, prefix = 8192, 80, 1037  # 80 pages cover the 9229-token context
    topk, cpos, lens = msa_case(1, n, pages, prefix, lengths=False)
    topk = np.where(topk * P <= cpos[None, :, None], topk, -1)  # mostly visible pages
    q, k, v = qkv(n, pages, seed=2)
    rows = np.sort(np.random.default_rng(3).choice(n, 64, replace=False))
    rows[0] = 0  # the empty row
    _, kv8, ref8 = pf.peer_references(q, k, v, topk, cpos, lens, rows)
    inp = pf.msa_inputs(topk, cpos, lens, num_pages=pages)
    peer = pf.MsaPeer(q, kv8, inp, route=route)
    peer.out.fill_(float("nan"))
    out, ran = peer.probe()
    torch.cuda.synchronize()
    assert bool(torch.isfinite(out).all())
    err = nrms(out[torch.from_numpy(rows).cuda()].double().cpu(), ref8)
    print(f"msa n={n} route={route}: ran {ran}, nrms {err:.2e}")
    assert ran == expect and err < TOL["fp8"]
