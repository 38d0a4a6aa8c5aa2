"""CPU checks of the FlashInfer peer conversions (pageweaver_edu.peers): the paged-decode
requests and the MSA arguments select exactly A_i (token_support)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from pageweaver_edu import peers
from pageweaver_edu.core.inputs import PageWeaverInputError
from pageweaver_edu.core.supports import token_support


def random_case(seed, heads=2, n=37, pages=9, k=6, page=128, causal=True, lengths=True):
    rng = np.random.default_rng(seed)
    topk = rng.integers(-1, pages, size=(heads, n, k))
    topk[:, 0] = -1  # an empty support
    topk[:, 1, :3] = topk[:, 1, 0:1]  # duplicate ids
    cpos = rng.integers(0, pages * page, size=n) if causal else None
    lens = rng.integers(1, pages * page, size=n) if lengths else None
    if causal:
        cpos[2] = 3 * page + 5  # cut inside a page
    if lengths:
        lens[3] = 2 * page + 17
    return topk, cpos, lens


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cut", [(True, True), (True, False), (False, True), (False, False)])
def test_decode_requests_rebuild_token_support(seed, cut):
    topk, cpos, lens = random_case(seed, heads=1 + seed % 3, causal=cut[0], lengths=cut[1])
    req = peers.decode_requests(topk, cpos, lens, num_pages=9)
    assert req.indptr.dtype == torch.int32 and req.indices.dtype == torch.int32
    assert req.last_page_len.dtype == torch.int32
    assert peers.verify_decode_requests(req, topk, cpos, lens) == topk.shape[0] * topk.shape[1]
    assert req.num_empty >= topk.shape[0]  # query 0 of every head
    npy = peers.decode_requests(topk, cpos, lens, as_numpy=True)
    assert npy.indptr.dtype == np.int32 and isinstance(npy.indices, np.ndarray)
    assert peers.verify_decode_requests(npy, topk, cpos, lens) > 0


def test_decode_requests_layout():
    # 2 heads, query 0 selects pages 3, 1, 1 (head 0) and 2, -1 (head 1); cut at token 3*128+9
    topk = np.array([[[3, 1, 1]], [[2, -1, 2]]])
    req = peers.decode_requests(topk, causal_pos=[3 * 128 + 9], as_numpy=True)
    assert req.indptr.tolist() == [0, 2, 3]
    assert req.indices.tolist() == [1 * 2 + 0, 3 * 2 + 0, 2 * 2 + 1]  # page p of head h: p*H+h
    assert req.last_page_len.tolist() == [10, 128]
    assert req.empty.tolist() == [False, False]
    # every page beyond the cut: zero pages, last_page_len 0
    req = peers.decode_requests(topk, causal_pos=[100], as_numpy=True)
    assert req.indptr.tolist() == [0, 0, 0] and req.last_page_len.tolist() == [0, 0]
    assert req.empty.tolist() == [True, True]


def test_decode_verifier_catches_a_wrong_page_and_length():
    topk, cpos, lens = random_case(7)
    req = peers.decode_requests(topk, cpos, lens, as_numpy=True)
    bad = peers.DecodeRequests(req.indptr, req.indices.copy(), req.last_page_len, req.empty,
                            req.heads, req.queries)
    bad.indices[0] += 2  # the next page of the same head
    with pytest.raises(PageWeaverInputError, match="request"):
        peers.verify_decode_requests(bad, topk, cpos, lens)
    bad = peers.DecodeRequests(req.indptr, req.indices, req.last_page_len.copy(), req.empty,
                            req.heads, req.queries)
    r = int(np.flatnonzero(np.diff(req.indptr) > 0)[0])
    bad.last_page_len[r] = 128 if bad.last_page_len[r] != 128 else 1
    with pytest.raises(PageWeaverInputError):
        peers.verify_decode_requests(bad, topk, cpos, lens)


def test_decode_requests_reject_pages_outside_the_cache():
    with pytest.raises(PageWeaverInputError, match="cache has 4 pages"):
        peers.decode_requests(np.array([[[0, 4]]]), num_pages=4)


def _msa_counts_match_token_support(topk, cpos, lens, inp):
    heads, n = topk.shape[:2]
    lim = peers.visible_limit(n, cpos, lens)
    q_off = inp.q_offset if inp.q_offset is not None else inp.seqused_k - n
    ours, cut, block = peers.msa_token_counts(inp.q2k_indices, lim, inp.seqused_k, q_off)
    assert np.array_equal(ours, cut) and np.array_equal(ours, block)
    for h in range(heads):
        for i in range(n):
            want = token_support(topk[h, i], 128, None if lens is None else int(lens[i]),
                                 None if cpos is None else int(cpos[i]))
            assert int(ours[h, i].sum()) == want.size
            assert bool(inp.empty[i, h]) == (want.size == 0)


@pytest.mark.parametrize("seed", range(4))
def test_msa_inputs_prefix_causal(seed):
    rng = np.random.default_rng(seed)
    heads, n, pages, prefix = 2, 50, 12, 1000 + seed * 77  # cuts fall inside pages
    topk = rng.integers(-1, pages, size=(heads, n, 16))
    topk[:, 0] = -1
    topk[:, 1, :4] = 5
    cpos = prefix + np.arange(n)
    ctx = prefix + n
    for lens in (None, cpos + 1, np.full(n, ctx)):
        inp = peers.msa_inputs(topk, cpos, lens, num_pages=pages)
        assert inp.q2k_indices.shape == (heads, n, 16) and inp.q2k_indices.dtype == np.int32
        q = inp.q2k_indices
        assert np.all((q[..., 1:] > q[..., :-1]) | (q[..., 1:] < 0))  # ascending, -1 after
        assert inp.seqused_k == ctx and inp.q_offset is None  # the default seqused_k - N
        _msa_counts_match_token_support(topk, cpos, lens, inp)


def test_msa_inputs_presets_are_representable():
    from pageweaver_edu.workloads import make_preset

    for name, prefix, off in (("cap64k", 49_152, None), ("cap16k-high-overlap", 12_288, None),
                              ("interleaved-64k", None, 512 * 128)):
        cap = make_preset(name)
        inp = peers.msa_inputs(cap.topk[None], cap.causal_pos, cap.lengths)
        assert inp.q_offset == off
        if prefix is not None:
            assert inp.seqused_k == prefix + cap.topk.shape[0]
        assert not inp.empty.any()


def test_msa_inputs_no_cut_sees_every_selected_token():
    topk, _, _ = random_case(3, heads=2, causal=False, lengths=False)
    inp = peers.msa_inputs(topk, num_pages=9)
    assert inp.seqused_k == 9 * 128 and inp.q_offset == 9 * 128
    _msa_counts_match_token_support(topk, None, None, inp)


@pytest.mark.parametrize("what", ["positions", "length", "wide", "outside", "page"])
def test_msa_inputs_raise_naming_why(what):
    n = 8
    topk = np.tile(np.arange(4), (1, n, 1))
    cpos = 600 + np.arange(n)
    kw = {}
    if what == "positions":
        cpos = cpos.copy()
        cpos[3] += 1
        match = "prefix \\+ i"
    elif what == "length":
        kw["lengths"] = np.full(n, 300)  # cuts page 2 below the causal limit
        match = "cannot state A_i"
    elif what == "wide":
        topk = np.tile(np.arange(17), (1, n, 1))
        match = "at most 16"
    elif what == "outside":
        kw["num_pages"] = 3
        match = "cache has 3 pages"
    else:
        kw["page_size"] = 64
        match = "128-token"
    with pytest.raises(PageWeaverInputError, match=match):
        peers.msa_inputs(topk, cpos, **kw)


def test_msa_inputs_length_cut_without_causal_inside_a_page_raises():
    topk = np.tile(np.arange(3), (1, 4, 1))
    with pytest.raises(PageWeaverInputError, match="cannot state"):
        peers.msa_inputs(topk, None, np.array([300, 300, 300, 300]))
    # a length cut on a page boundary is what seqused_k states
    inp = peers.msa_inputs(topk, None, np.array([256] * 4))
    assert inp.seqused_k == 256 and inp.q_offset == 256


def test_msa_kwargs_and_fp8_cache_on_cpu():
    gen = torch.Generator().manual_seed(0)
    pages, heads, n = 5, 2, 6
    k = torch.randn((pages, heads, 128, 128), generator=gen).to(torch.bfloat16)
    v = torch.randn((pages, heads, 128, 128), generator=gen).to(torch.bfloat16)
    q = torch.randn((n, heads * 16, 128), generator=gen).to(torch.bfloat16)
    kv = peers.quantize_kv_per_tensor(k, v)
    assert kv.k8.dtype == torch.float8_e4m3fn and kv.k_scale.shape == (heads,)
    assert float(kv.k_scale[0]) == float(kv.k_scale[1])  # one scale over all heads
    err = (kv.k8.float() * kv.k_scale[0] - k.float()).abs().max()
    assert float(err) <= float(k.float().abs().max()) / 8  # 3 mantissa bits
    cache, kh, vh = peers.interleaved_fp8_cache(kv)
    assert cache.shape == (pages, heads, 128, 256)
    assert kh.data_ptr() == cache.data_ptr() and vh.data_ptr() - kh.data_ptr() == 128
    assert torch.equal(kh.float(), kv.k8.float()) and torch.equal(vh.float(), kv.v8.float())
    topk = np.tile(np.arange(pages), (heads, n, 1))
    inp = peers.msa_inputs(topk, 3 * 128 + np.arange(n), num_pages=pages)
    kw = peers.msa_kwargs(q, kh, vh, inp, float(kv.k_scale[0]), float(kv.v_scale[0]))
    assert kw["q2k_indices"].dtype == torch.int32 and kw["q2k_indices"].shape == (heads, n, 16)
    assert kw["cu_seqlens_q"].tolist() == [0, n] and kw["seqused_k"].tolist() == [3 * 128 + n]
    assert kw["page_table"].tolist() == [list(range(pages))]
    assert kw["causal"] is True and "q_offset" not in kw
    assert kw["softmax_scale"] == pytest.approx(float(kv.k_scale[0]) / 128 ** 0.5)
    assert kw["v_global_scale"] == pytest.approx(float(kv.v_scale[0]))


def test_peer_references_on_cpu():
    from pageweaver_edu.core.attention import reference_attention

    topk, cpos, lens = random_case(4, heads=2, n=12, pages=5, k=4)
    gen = torch.Generator().manual_seed(1)
    q = torch.randn((12, 32, 128), generator=gen).to(torch.bfloat16)
    k = torch.randn((5, 2, 128, 128), generator=gen).to(torch.bfloat16)
    v = torch.randn((5, 2, 128, 128), generator=gen).to(torch.bfloat16)
    rows = np.array([1, 4, 7])
    ref, kv8, ref8 = peers.peer_references(q, k, v, topk, cpos, lens, rows)
    assert ref.shape == ref8.shape == (3, 32, 128) and kv8.k8.dtype == torch.float8_e4m3fn
    want = reference_attention(q[rows, 16:].double(), k[:, 1].double(), v[:, 1].double(),
                               topk[1, rows], lengths=lens[rows], causal_pos=cpos[rows])
    assert np.array_equal(ref[:, 16:], want)
    assert 0 < np.linalg.norm(ref8 - ref) / np.linalg.norm(ref) < 5e-2  # E4M3, 3 mantissa bits


def test_peers_import_without_flashinfer():
    code = ("import sys, pkgutil, importlib, pageweaver_edu.peers as p; "
            "[importlib.import_module(f'pageweaver_edu.peers.{m.name}') "
            "for m in pkgutil.iter_modules(p.__path__)]; "
            "assert 'flashinfer' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    ok, why = peers.flashinfer_available()
    assert isinstance(ok, bool) and why
