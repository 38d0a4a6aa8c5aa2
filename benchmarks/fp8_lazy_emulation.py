"""How much of the lazy FP8 build's error is its arithmetic? A CPU estimate.

The lazy option of ``union8ws_fp8`` (``benchmarks/bench_union8ws_notes.md``) scales P by 2^6 and
moves a row's reference maximum only when a page passes it by more than tau = 2; the GPU build
measured 4.2 % NRMS against float64. This script emulates each arithmetic on the CPU
(``replay.fp8.fp8_union_attention`` with its ``p_shift``, ``lazy_tau`` and ``p8_sums``) on the
benchmark's shapes (random BF16 Q/K/V drawn on the CPU, seed 0, one KV head) and prints its
NRMS against the float64 reference on the FP8 cache for a sample of rows. What the emulation
does not show is the tensor core's own accumulation of O across pages.

Usage: ``python benchmarks/fp8_lazy_emulation.py [--presets cap64k,...] [--rows 96]``
(a few minutes per preset on two cores)
"""

from __future__ import annotations

import argparse

import numpy as np

from pageweaver_edu.replay.e4m3 import quantize_kv
from pageweaver_edu.replay.fp8 import fp8_union_attention, nrms, reference_on_cache
from pageweaver_edu.workloads import make_preset

#: (label, p_shift, lazy_tau, p8_sums): the shipped eager arithmetic, then lazy variants
ARITHMETICS = (
    ("eager: P x 2^8, rescale every page", 8, None, False),
    ("lazy: P x 2^6, tau = 2 (the option)", 6, 2.0, False),
    ("lazy: P x 2^6, tau = 2, l from P8", 6, 2.0, True),
    ("lazy: P x 2^7, tau = 1", 7, 1.0, False),
    ("lazy: P x 2^8, tau = 0.5", 8, 0.5, False),
)


def preset_sample(name: str, rows: int):
    """``rows`` random rows of preset ``name`` (one KV head, random BF16 Q/K/V drawn on the CPU,
    seed 0): ``(q, kv, topk, causal_pos, lengths, ref)`` with the FP8 cache and the float64
    reference on it, the arguments of ``replay.fp8.fp8_union_attention`` and its yardstick."""
    import torch

    cap = make_preset(name, seed=0)
    topk = cap.topk[None]  # one KV head
    n, pages = topk.shape[1], int(topk.max()) + 1
    gen = torch.Generator().manual_seed(0)
    q = torch.randn((n, 16, 128), generator=gen).to(torch.bfloat16)
    k = torch.randn((pages, 1, 128, 128), generator=gen).to(torch.bfloat16)
    v = torch.randn((pages, 1, 128, 128), generator=gen).to(torch.bfloat16)
    kv = quantize_kv(k, v)
    pick = np.sort(np.random.default_rng(0).choice(n, min(n, rows), replace=False))
    qs, ts = q[torch.from_numpy(pick)], topk[:, pick]
    cs = None if cap.causal_pos is None else cap.causal_pos[pick]
    ls = None if cap.lengths is None else cap.lengths[pick]
    return qs, kv, ts, cs, ls, reference_on_cache(qs, kv, ts, cs, ls)


def preset_nrms(name: str, rows: int) -> dict[str, float]:
    """NRMS against float64 of every arithmetic on ``rows`` random rows of preset ``name``."""
    qs, kv, ts, cs, ls, ref = preset_sample(name, rows)
    return {label: nrms(fp8_union_attention(qs, kv, ts, cs, ls, p_shift=shift, lazy_tau=tau,
                                            p8_sums=p8).float(), ref)
            for label, shift, tau, p8 in ARITHMETICS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="cap64k,interleaved-64k,cap16k-high-overlap")
    ap.add_argument("--rows", type=int, default=96)
    args = ap.parse_args(argv)
    names = [p for p in args.presets.split(",") if p]
    table = {name: preset_nrms(name, args.rows) for name in names}
    print(f"| arithmetic | {' | '.join(names)} |")
    print("|---|" + "--:|" * len(names))
    for label, *_ in ARITHMETICS:
        print(f"| {label} | " + " | ".join(f"{100 * table[n][label]:.2f} %" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
