"""Live regroup and union-preparation kernels against the CPU reference. Runs only with a GPU.

Without a GPU every test here is skipped with the reason, or fails under
``PAGEWEAVER_REQUIRE_GPU=1`` (``tests/conftest.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from pageweaver_edu import PageWeaverInputError, greedy_regroup, prepare_unions
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.workloads import make_preset, preset_names
from tests.helpers.strategies import grouping_case


def gpu():
    import pageweaver_edu.gpu as g

    return g


def cpu_vs_gpu(topk, window, group=8, variant=None, capacity=512, chunk_size=None, **kw):
    grouping = Grouping(window, group, capacity, chunk_size)
    ref = greedy_regroup(topk, grouping, **kw)
    got = gpu().gpu_greedy_regroup(topk, grouping, variant=variant, **kw)
    got = got.cpu().numpy()
    assert got.dtype == np.int32
    assert np.array_equal(ref, got), f"first mismatch at slot {np.flatnonzero(ref != got)[:5]}"
    return ref


def assert_same_plan(ref, got):
    for field in ("perm", "group_slots", "page_offsets", "pages", "masks", "cta_any",
                  "page_counts"):
        a, b = getattr(ref, field), getattr(got, field)
        assert a.dtype == b.dtype, (field, a.dtype, b.dtype)
        assert np.array_equal(a, b), field


def random_case(rng):
    n = int(rng.integers(0, 900))
    k = int(rng.choice([1, 3, 4, 8, 16]))
    pages = int(rng.choice([3, 16, 64, 300, 512, 540]))
    topk = rng.integers(-2, pages, size=(n, k))
    if n:
        topk[rng.random(n) < 0.05] = -1  # empty supports
        dup = rng.random(n) < 0.1
        topk[dup, -1] = topk[dup, 0]  # duplicates
    group = int(rng.choice([1, 2, 3, 4, 8, 8, 8]))
    window = group * int(rng.integers(1, 256 // group + 1))
    if rng.random() < 0.5:
        window = min(256 // group * group, int(rng.choice([64, 128])) // group * group or group)
    cuts = np.sort(rng.integers(0, n + 1, size=int(rng.integers(0, 4))))
    offsets = np.array([0, *cuts, n])
    chunk = None if rng.random() < 0.5 else group * int(rng.integers(1, 40))
    capacity = int(rng.choice([512, 512, 100, 300]))
    lengths = None
    if rng.random() < 0.3:
        lengths = rng.integers(0, int(capacity * 4 * 1.02), size=n)
    return topk, window, group, dict(request_offsets=offsets, chunk_size=chunk,
                                     capacity=capacity, lengths=lengths, page_size=4)


@pytest.mark.parametrize("seed", range(40))
def test_random_inputs_match_cpu(seed):
    rng = np.random.default_rng(seed)
    topk, window, group, kw = random_case(rng)
    cpu_vs_gpu(topk, window, group, **kw)


@pytest.mark.parametrize("variant", sorted(__import__("pageweaver_edu.gpu.regroup",
                                                      fromlist=["VARIANTS"]).VARIANTS))
def test_every_variant_matches_cpu(variant):
    wmax, _ = gpu().VARIANTS[variant]
    rng = np.random.default_rng(11 * wmax)
    for window in sorted({wmax, max(8, wmax // 2), 8 * (wmax // 24 or 1)}):
        for pages in (10, 120, 505):
            topk = rng.integers(-1, pages, size=(1000, 16))
            offsets = [0, 333, 333, 1000]
            cpu_vs_gpu(topk, window, 8, variant=variant, request_offsets=offsets, chunk_size=96)


@pytest.mark.parametrize("k", [17, 24])
def test_wide_rows_use_the_bits_family(k):
    rng = np.random.default_rng(k)
    topk = rng.integers(-1, 300, size=(700, k))
    for window in (64, 128):
        cpu_vs_gpu(topk, window, 8, request_offsets=[0, 650, 700], chunk_size=256)
    with pytest.raises(PageWeaverInputError):
        gpu().gpu_greedy_regroup(topk, Grouping(64), variant="pairs_w64")


@settings(max_examples=150, deadline=None)
@given(grouping_case())
def test_hypothesis_cases_match_cpu(case):
    topk, window, group, offsets, chunk = case
    cpu_vs_gpu(topk, window, group, capacity=64, request_offsets=offsets, chunk_size=chunk)


@pytest.mark.parametrize("name", preset_names())
@pytest.mark.parametrize("window", [64, 128])
def test_presets_match_cpu(name, window):
    cap = make_preset(name)
    perm = cpu_vs_gpu(cap.topk, window, 8, **cap.regroup_kwargs())
    plan = gpu().gpu_prepare_unions(cap.topk, perm, cap.request_offsets, 8)
    assert_same_plan(prepare_unions(cap.topk, perm, cap.request_offsets, 8), plan.to_cpu())


def test_ties_and_empty_rows():
    topk = np.array([[1, 2], [1, 2], [-1, -1], [3, 4], [1, 2], [-1, -7], [3, 4], [5, 5]] * 20)
    for group in (1, 2, 4, 8):
        for window in (8, 16, 64, 160):
            if window % group == 0:
                cpu_vs_gpu(topk, window, group)


def test_sorted_rows_with_repeats_and_gaps():
    """Rows sorted by page id take the kernel's no-repeat shortcut; a repeat, even across
    padding, must send them back to the full first-occurrence test."""
    rng = np.random.default_rng(5)
    topk = np.sort(rng.choice(400, size=(600, 16)), axis=1)  # sorted, with chance repeats
    topk[::7, 5] = topk[::7, 4]  # adjacent repeat
    topk[1::7, 6] = -1  # padding between ...
    topk[1::7, 7] = topk[1::7, 5]  # ... a repeat
    topk[2::7, :3] = -1  # leading padding, still ascending
    for window in (64, 128):
        cpu_vs_gpu(topk, window, 8)


def test_paper_worked_example():
    topk = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])
    assert cpu_vs_gpu(topk, 6, 3).tolist() == [0, 2, 3, 1, 4, 5]


def test_fallback_whole_chunk_and_scratch_reset():
    rng = np.random.default_rng(7)
    topk = rng.integers(0, 200, size=(1000, 16))
    topk[700, 3] = 600  # chunk [512, 768) of request 0 needs > B pages
    kw = dict(request_offsets=[0, 900, 1000], chunk_size=256)
    for _ in range(3):  # the per-chunk scratch must be clean again after every launch
        perm = cpu_vs_gpu(topk, 64, **kw)
    assert np.array_equal(perm[512:768], np.arange(512, 768))
    lengths = np.full(1000, 100)
    lengths[950] = 512 * 128 + 1  # request 1 by length
    perm = cpu_vs_gpu(topk, 128, lengths=lengths, **kw)
    assert np.array_equal(perm[900:], np.arange(900, 1000))


@pytest.mark.parametrize("variant", ["pairs_w64", "pairs_w128", "bits_t64", "bits_t128"])
def test_counted_chunk_path(variant):
    """The path a window takes when its chunk is not known to be clean at its end (flagged,
    or some window not yet arrived: several waves). A test build forces it for every
    multi-window chunk: π, the whole-chunk fallback and the scratch words must still be right
    launch after launch."""
    import torch

    from pageweaver_edu.core.inputs import as_request_offsets
    from pageweaver_edu.gpu import RegroupLaunch
    from pageweaver_edu.gpu.regroup import VARIANTS

    window = VARIANTS[variant][0]
    rng = np.random.default_rng(11)
    topk = rng.integers(0, 300, size=(1000, 16))
    offsets, chunk = [0, 900, 1000], 256
    flagged = topk.copy()
    flagged[700, 3] = 600  # chunk [512, 768) of request 0 falls back
    plan = RegroupLaunch(1000, 1, 16, Grouping(window, chunk_size=chunk),
                         as_request_offsets(offsets, 1000), 128, variant,
                         options=("-DPW_CHUNK_NEVER_CLEAN",))
    for ids in (topk, flagged, topk, flagged, flagged, topk):
        got = plan.run(torch.from_numpy(ids.astype(np.int32)).cuda()[None])[0].cpu().numpy()
        ref = greedy_regroup(ids, Grouping(window, chunk_size=chunk), request_offsets=offsets)
        assert np.array_equal(got, ref)
        # [(head, chunk), word]: this launch's words, zeroed on the stream before it
        multi = plan.scratch.view(-1, 2).cpu().numpy()
        windows = plan.chunks.cpu().numpy()[:, 2]
        arrived = multi[:, 0].astype(np.uint64)
        assert np.array_equal(arrived & np.uint64(0xffffffff),
                              np.where(windows > 1, windows, 0).astype(np.uint64))
        assert np.array_equal(multi[:, 1], np.where(windows > 1, windows, 0))


def test_kv_heads_batch_matches_per_head():
    import torch

    cap = make_preset("cap64k")
    heads = np.stack([np.roll(cap.topk, 997 * h, axis=0) for h in range(3)])
    got = gpu().gpu_greedy_regroup(torch.from_numpy(heads).cuda(), Grouping(128)).cpu().numpy()
    perms = []
    for h in range(3):
        ref = greedy_regroup(heads[h], Grouping(128))
        assert np.array_equal(got[h], ref)
        perms.append(ref)
    plans = gpu().gpu_prepare_unions(heads, np.stack(perms)).to_cpu()
    for h in range(3):
        assert_same_plan(prepare_unions(heads[h], perms[h]), plans[h])


@pytest.mark.parametrize("seed", range(12))
def test_union_plan_random(seed):
    rng = np.random.default_rng(100 + seed)
    topk, window, group, kw = random_case(rng)
    group = min(group, 8)
    if rng.random() < 0.3:  # ids far beyond the regroup capacity, up to int32 max
        far = topk * 7919 + rng.integers(0, 2**31 - 5_000_000, size=topk.shape)
        topk = np.where(topk >= 0, far, topk)
    n = topk.shape[0]
    offsets = kw["request_offsets"]
    spans = zip(offsets[:-1], offsets[1:], strict=True)
    perm = (np.concatenate([s + rng.permutation(e - s) for s, e in spans]).astype(np.int64)
            if n else np.zeros(0, dtype=np.int64))
    ref = prepare_unions(topk, perm, offsets, group)
    assert_same_plan(ref, gpu().gpu_prepare_unions(topk, perm, offsets, group).to_cpu())


def test_union_identity_perm_and_untrimmed():
    cap = make_preset("cap16k-high-overlap")
    ref = prepare_unions(cap.topk, None, cap.request_offsets)
    plan = gpu().gpu_prepare_unions(cap.topk, None, cap.request_offsets, trim=False)
    assert_same_plan(ref, plan.to_cpu())


def test_gpu_input_errors():
    g = gpu()
    topk = np.zeros((16, 4), dtype=np.int64)
    with pytest.raises(PageWeaverInputError):
        g.gpu_greedy_regroup(topk, Grouping(8, capacity=1024))
    with pytest.raises(PageWeaverInputError):
        g.gpu_greedy_regroup(topk, Grouping(512))
    with pytest.raises(PageWeaverInputError):
        g.gpu_greedy_regroup(topk, Grouping(12))
    with pytest.raises(PageWeaverInputError):
        g.gpu_prepare_unions(topk, None, group=16)
    with pytest.raises(PageWeaverInputError):
        g.gpu_prepare_unions(topk, np.zeros(16, dtype=np.int64))  # not a permutation
    with pytest.raises(PageWeaverInputError):
        g.gpu_greedy_regroup(topk.astype(float), Grouping(8))


def test_bad_perm_never_reads_out_of_bounds():
    g = gpu()
    topk = np.arange(64).reshape(16, 4)
    perm = np.arange(16)
    perm[3] = 10**6
    plan = g.gpu_prepare_unions(topk, perm, validate=False).to_cpu()
    assert 12 not in plan.pages.tolist()  # row 3 (pages 12..15) selected nothing
