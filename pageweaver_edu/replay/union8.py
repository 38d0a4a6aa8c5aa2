"""The Union8 kernel's arithmetic replayed on the CPU, tile by tile, for one group.

Follows ``kernels/union8.cu``: every execution slot walks its group's union U_G in order, skips
the pages it does not select, and folds each 64-token stage of a page into its FP32
online-softmax state. The output equals the float64 reference to BF16 rounding, and the same
query gives bitwise the same output in any group: rows never share softmax state.
"""

from __future__ import annotations

import numpy as np


def emulate_union_group(q, k, v, plan, group: int, causal_pos=None, lengths=None,
                        stage: int = 64, scale=None, trace=None):
    """CPU, tile-by-tile emulation of one group of the Union8 kernel (one KV head).

    Follows ``kernels/union8.cu`` step by step: each execution slot r walks U_G in order, skips
    pages it does not select, and for each stage of ``stage`` consecutive tokens of a page (the
    kernel's half-page KV stages; a stage whose first token is past min(c_i + 1, L_i) is
    skipped) updates its FP32 online-softmax state per row:
    ``m' = max(m, rowmax S)``, ``l = l * 2^(m - m') + rowsum 2^(S - m')``,
    ``O = O * 2^(m - m') + bf16(P) V``. Scores use log2 units (scale * log2 e folded in).

    Parameters
    ----------
    q : array_like, shape [N, 16, d]; k, v : array_like, shape [pages, P, d]
        Values as the kernel sees them (e.g. BF16 tensors converted to float32).
    plan : :class:`pageweaver_edu.core.union_plan.UnionPlan`
    group : int
        Group index.
    trace : list, optional
        When given, one dict per (slot, page, stage) step is appended: the slot, page, stage
        index within the page, and the running max / sum of head 0 after the step.

    Returns
    -------
    dict
        ``{original query id: output [16, d] float32}`` for the group's slots.
    """
    import torch

    def bf16(x):
        return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(
            torch.bfloat16).float().numpy()

    q, k, v = (np.asarray(x, dtype=np.float32) for x in (q, k, v))
    page, dim = k.shape[1], k.shape[2]
    scale_log2 = np.float32((scale or dim**-0.5) * np.log2(np.e))
    base, size = (int(x) for x in plan.group_slots[group])
    pages, masks = plan.group_pages(group)
    out = {}
    for r in range(size):
        qid = int(plan.perm[base + r])
        limit = np.iinfo(np.int64).max
        if causal_pos is not None:
            limit = min(limit, int(causal_pos[qid]) + 1)
        if lengths is not None:
            limit = min(limit, int(lengths[qid]))
        heads = q.shape[1]
        m = np.full(heads, -np.inf, np.float32)
        l = np.zeros(heads, np.float32)  # noqa: E741
        o = np.zeros((heads, dim), np.float32)
        for p, mask in zip(pages, masks, strict=True):
            if not (mask >> r) & 1:
                continue  # the warp skips the arithmetic (it still takes part in ①/②)
            for start in range(0, page, stage):
                first = int(p) * page + start
                if first >= limit:  # the stage's first token is masked: all of it is
                    break
                rel = np.arange(start, start + stage)
                s = (q[qid] @ k[p, rel].T).astype(np.float32) * scale_log2
                s[:, first - start + rel >= limit] = -np.inf
                m_new = np.maximum(m, s.max(axis=1))
                alpha = np.exp2(m - m_new)
                pr = np.exp2(s - m_new[:, None])
                l = l * alpha + pr.sum(axis=1)  # noqa: E741
                o = o * alpha[:, None] + bf16(pr) @ v[p, rel]
                m = m_new
                if trace is not None:
                    trace.append({"slot": r, "page": int(p), "stage": start // stage,
                                  "m": float(m[0]), "l": float(l[0])})
        out[qid] = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1)[:, None], 0.0)
    return out
