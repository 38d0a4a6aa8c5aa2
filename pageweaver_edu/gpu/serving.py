"""One call for serving code: q, the paged KV cache, Top-K, positions and lengths in, the
attention output out, on torch's current stream and CUDA-graph capturable.

:func:`sparse_union_attention` runs the online path of the series in two launches: the fused
regroup plan (π and the union plan of every group, :mod:`.regroup_plan`) and the
warp-specialized Union8 (:mod:`.union8ws`), FP8 or BF16 by the cache it is given; with
``window=None`` it keeps the original order and builds the plan with the union preparation
(:mod:`.unions`) instead. Nothing inside the call reads the device back or depends on host
state that an earlier call changed: every launch is sized from the shapes alone, the regroup's
handshake words are zeroed on the stream and the Union8's group counter returns to 0 on the
device. So a call can be captured with ``torch.cuda.graph`` and replayed after new Top-K,
q, cache values and lengths are copied into the captured tensors.
"""

from __future__ import annotations

from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError
from .bf16_tiles import Bf16HalfPages
from .device import require_gpu
from .fp8_tiles import Fp8Cache
from .loader import stream_scope
from .regroup_plan import regroup_plan_launch
from .union8ws import Bf16WsUnionAttention, Fp8WsUnionAttention
from .union_attention import PAGE, check_operand
from .unions import union_prep_launch


def sparse_union_attention(q, cache, topk, positions, lengths, *, window: int | None = 128,
                           request_offsets=None, scale: float | None = None, out=None):
    """Sparse attention of N queries over their Top-K pages, Union8 with the online regroup.

    Parameters
    ----------
    q : torch.Tensor of bfloat16 on the GPU, shape [N, H*16, 128], contiguous, 16-byte aligned
    cache : Fp8Cache or Bf16HalfPages
        The paged KV cache of H KV heads in kernel tiles
        (:func:`~.fp8_tiles.fp8_cache_from_bf16`, :func:`~.bf16_tiles.bf16_half_pages`).
    topk : torch.Tensor of int32 on the GPU, shape [N, K] (H = 1) or [H, N, K]
        Page ids per query (``< 0`` padding); K <= 16 for the online regroup.
    positions : torch.Tensor of int32 on the GPU, shape [N]
        c_i: query i sees tokens t <= c_i.
    lengths : torch.Tensor of int32 on the GPU, shape [N]
        L_i: query i sees tokens t < L_i.
    window : int or None
        W of the online regroup (W <= 128, a multiple of 8); None keeps the original order.
    request_offsets : array_like of int, shape [R + 1], optional
        Request boundaries (host values: they shape the launches); one request when None.
    scale : float, optional
        Softmax scale; ``1/sqrt(128)`` when None.
    out : torch.Tensor of bfloat16, shape [N, H*16, 128], optional
        Written in place (every row).

    Returns
    -------
    torch.Tensor of bfloat16, shape [N, H*16, 128]

    Notes
    -----
    The int32 tensors are used as they are (no conversion, no range check that would read
    them back); anything else is refused. Warm up with one eager call on the stream you
    capture on.
    """
    require_gpu()
    import torch

    n = q.shape[0]
    check_operand("topk", topk, torch.int32)  # rows are read with 16-byte loads
    if topk.dim() not in (2, 3) or topk.shape[-2] != n:
        raise PageWeaverInputError(f"topk must be [N, K] or [H, N, K] with N = {n}, got "
                                   f"{tuple(topk.shape)}")
    for name, x in (("positions", positions), ("lengths", lengths)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.int32 or not x.is_cuda:
            raise PageWeaverInputError(f"{name} must be an int32 CUDA tensor")
        if tuple(x.shape) != (n,):
            raise PageWeaverInputError(f"{name} must have shape [N] = ({n},), got "
                                       f"{tuple(x.shape)}")
    ids = topk if topk.dim() == 3 else topk.unsqueeze(0)
    heads, _, k = ids.shape
    if isinstance(cache, Fp8Cache):
        front_end = Fp8WsUnionAttention
    elif isinstance(cache, Bf16HalfPages):
        front_end = Bf16WsUnionAttention
    else:
        raise PageWeaverInputError(
            "cache must be an Fp8Cache (fp8_cache_from_bf16) or Bf16HalfPages (bf16_half_pages),"
            f" got {type(cache).__name__}")
    with stream_scope():
        if window is None:
            identity = torch.arange(n, dtype=torch.int32, device=ids.device).repeat(heads, 1)
            plan = union_prep_launch(n, heads, k, request_offsets, 8).run(ids, identity)
        else:
            launch = regroup_plan_launch(n, heads, k, Grouping(window), request_offsets, PAGE)
            plan = launch.run(ids, lengths.to(torch.int64))
        attention = front_end(q, cache, positions.contiguous(), lengths.contiguous(),
                              scale=scale, out=out)
        return attention.run(plan)
