"""The FP8 E4M3 KV caches FlashInfer takes, and the float64 references the peer rows are checked
against.

FlashInfer's FP8 paths take ONE scale per tensor (:func:`quantize_kv_per_tensor`; ours is one per
KV head, :func:`pageweaver_edu.replay.e4m3.quantize_kv`); its MSA kernel reads K and V as the two
halves of one ``[pages, H, 128, 256]`` allocation (:func:`interleaved_fp8_cache`).
:func:`peer_references` computes, for sampled rows, the float64 reference on the BF16 K/V and on
that per-tensor FP8 cache.
"""

from __future__ import annotations

import numpy as np

from ..core.attention import reference_attention
from ..core.inputs import PageWeaverInputError
from .selection import GROUP


def quantize_kv_per_tensor(k, v):
    """E4M3 K/V ``[pages, H, P, D]`` with ONE scale per tensor (``amax / 448`` over all heads),
    as FlashInfer's FP8 paths take it; returned as :class:`pageweaver_edu.replay.e4m3.Fp8KV`
    whose per-head scale vectors repeat that one scale (so ``reference_on_cache`` applies)."""
    import torch

    from ..replay.e4m3 import E4M3_MAX, Fp8KV, to_e4m3

    if k.dim() != 4 or k.shape != v.shape:
        raise PageWeaverInputError(f"k/v must be [pages, H, P, D]; got {tuple(k.shape)}, "
                                   f"{tuple(v.shape)}")
    out = []
    for x in (k, v):
        amax = float(x.detach().abs().float().amax())
        scale = amax / E4M3_MAX if amax > 0 else 1.0
        out += [to_e4m3(x.float() / scale),
                torch.full((k.shape[1],), scale, dtype=torch.float32, device=x.device)]
    return Fp8KV(out[0], out[2], out[1], out[3])


def interleaved_fp8_cache(kv):
    """The MSA cache: ``kv.k8`` / ``kv.v8`` ``[pages, H, 128, 128]`` E4M3 copied into ONE
    ``[pages, H, 128, 256]`` allocation; returns (cache, k view ``cache[..., :128]``,
    v view ``cache[..., 128:]``)."""
    import torch

    pages, heads, page, d = kv.k8.shape
    cache = torch.empty((pages, heads, page, 2 * d), dtype=torch.float8_e4m3fn,
                        device=kv.k8.device)
    cache[..., :d].copy_(kv.k8)
    cache[..., d:].copy_(kv.v8)
    return cache, cache[..., :d], cache[..., d:]


def peer_references(q, k, v, topk, causal_pos=None, lengths=None, rows=None):
    """Float64 references of the peer rows on the queries ``rows`` (default: all).

    Parameters
    ----------
    q : torch.Tensor, bf16 ``[N, H*16, 128]``
    k, v : torch.Tensor, bf16 ``[pages, H, 128, 128]``
    topk : numpy int ``[H, N, K]``
    causal_pos, lengths : numpy int ``[N]`` or None
    rows : numpy int ``[R]``, optional

    Returns
    -------
    (numpy float64 ``[R, H*16, 128]``, Fp8KV, numpy float64 ``[R, H*16, 128]``)
        The reference on the BF16 K/V, the per-tensor FP8 cache (on ``k``'s device) and the
        reference on that dequantized cache.
    """
    import torch

    from ..replay.fp8 import reference_on_cache

    topk = np.asarray(topk)
    rows = np.arange(q.shape[0]) if rows is None else np.asarray(rows)
    qs = q[torch.from_numpy(rows).to(q.device)].cpu()
    cs = None if causal_pos is None else np.asarray(causal_pos)[rows]
    ls = None if lengths is None else np.asarray(lengths)[rows]
    ref_bf16 = np.concatenate([reference_attention(
        qs[:, h * GROUP:(h + 1) * GROUP].double(), k[:, h].double().cpu(),
        v[:, h].double().cpu(), topk[h, rows], lengths=ls, causal_pos=cs)
        for h in range(topk.shape[0])], axis=1)
    kv8 = quantize_kv_per_tensor(k, v)
    return ref_bf16, kv8, reference_on_cache(qs, kv8.to("cpu"), topk[:, rows], cs, ls)
