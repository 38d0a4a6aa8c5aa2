"""Small, complete workout of both kernels for compute-sanitizer (memcheck, racecheck).

Covers multi-window chunks (the scratch handshake, also with every chunk forced onto the
counted path), the capacity fallback by page id and by length, short tail windows, empty
rows, every regroup variant, 3 KV heads, union ids far beyond B and an out-of-range π entry,
and the fused online plan (regroup_plan_pairs_w<W>: π and the group rows in one launch);
checks every result against the CPU reference and exits non-zero on a mismatch.
Usage: compute-sanitizer --tool memcheck python3 tools/gpu_sanitize.py
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from pageweaver_edu import greedy_regroup, prepare_unions
from pageweaver_edu.core.grouping import Grouping
from pageweaver_edu.core.inputs import as_request_offsets
from pageweaver_edu.gpu import VARIANTS, gpu_greedy_regroup, gpu_prepare_unions, gpu_regroup_plan
from pageweaver_edu.gpu.loader import synchronize


def main() -> int:
    from pageweaver_edu.gpu import RegroupLaunch
    rng = np.random.default_rng(3)
    n = 700
    topk = rng.integers(-1, 500, size=(n, 16))
    topk[rng.random(n) < 0.05] = -1
    topk[650, 2] = 520  # request 1's first chunk falls back (id >= B)
    offsets = [0, 300, 300, n]
    lengths = np.full(n, 1000)
    lengths[100] = 512 * 128 + 5  # request 0's first chunk falls back by length
    bad = 0
    for variant, (window, _) in VARIANTS.items():
        for lens in (None, lengths):
            grouping = Grouping(window, chunk_size=8 * (window // 8) * 2)
            kw = dict(request_offsets=offsets, lengths=lens, page_size=128)
            got = gpu_greedy_regroup(topk, grouping, variant=variant, **kw).cpu().numpy()
            ok = np.array_equal(got, greedy_regroup(topk, grouping, **kw))
            bad += not ok
            print(f"regroup {variant:14s} W={window:3d} lengths={lens is not None}: "
                  f"{'ok' if ok else 'MISMATCH'}")
    ids = torch.from_numpy(topk.astype(np.int32)).cuda()[None]
    for variant in ("pairs_w64", "bits_t64"):  # every multi-window chunk counted at its end
        grouping = Grouping(64, chunk_size=256)
        plan = RegroupLaunch(n, 1, 16, grouping, as_request_offsets(offsets, n), 128, variant,
                             options=("-DPW_CHUNK_NEVER_CLEAN",))
        ok = all(np.array_equal(plan.run(ids)[0].cpu().numpy(), greedy_regroup(
            topk, grouping, request_offsets=offsets)) for _ in range(2))
        bad += not ok
        print(f"regroup {variant:14s} counted chunks: {'ok' if ok else 'MISMATCH'}")
    heads = np.stack([np.roll(topk, 31 * h, axis=0) for h in range(3)])
    got = gpu_greedy_regroup(torch.from_numpy(heads).cuda(), Grouping(64), request_offsets=offsets)
    perms = [greedy_regroup(heads[h], Grouping(64), request_offsets=offsets) for h in range(3)]
    ok = np.array_equal(got.cpu().numpy(), np.stack(perms))
    bad += not ok
    print(f"regroup 3 heads: {'ok' if ok else 'MISMATCH'}")
    far = np.where(topk >= 0, topk * 4_000_000 + 7, topk)
    for ids, perm in ((topk, perms[0]), (far, perms[0])):
        ref = prepare_unions(ids, perm, offsets, 8)
        ok = same_plan(ref, gpu_prepare_unions(ids, perm, offsets, 8).to_cpu())
        bad += not ok
        print(f"unions max id {int(ids.max())}: {'ok' if ok else 'MISMATCH'}")
    bad += fused_plans(topk, heads, offsets, lengths)
    broken = perms[0].copy()
    broken[5] = 10**7
    gpu_prepare_unions(topk, broken, offsets, 8, validate=False)
    synchronize()
    print("sanitize workout:", "PASS" if bad == 0 else f"{bad} FAILURES")
    return 1 if bad else 0


def same_plan(ref, got) -> bool:
    """Two UnionPlans (CPU reference, GPU result gathered to CSR) equal field by field."""
    fields = ("perm", "group_slots", "page_offsets", "pages", "masks", "cta_any", "page_counts")
    return all(np.array_equal(getattr(ref, f), getattr(got, f)) for f in fields)


def fused_plans(topk, heads, offsets, lengths) -> int:
    """The fused kernel at every W it takes, with and without L_i (fallback chunks), on one
    head and on three: π and the plan (gathered to CSR) against the CPU path."""
    bad = 0
    for window in (32, 64, 128):
        for ids, lens in ((topk, None), (topk, lengths), (heads, None)):
            grouping = Grouping(window)
            got = gpu_regroup_plan(ids, grouping, request_offsets=offsets, lengths=lens).to_cpu()
            many = ids if ids.ndim == 3 else ids[None]
            got = got if isinstance(got, list) else [got]
            refs = [prepare_unions(t, greedy_regroup(t, grouping, request_offsets=offsets,
                                                     lengths=lens), offsets, 8) for t in many]
            ok = all(same_plan(r, gp) for r, gp in zip(refs, got, strict=True))
            bad += not ok
            print(f"fused plan W={window:3d} heads={len(many)} lengths={lens is not None}: "
                  f"{'ok' if ok else 'MISMATCH'}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
