"""FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper`` run on our inputs (the GPU side of
:mod:`.decode`): the one-head NHD cache views, ``plan()`` timed apart (it copies the page table to
the host, a host sync per call) and the empty requests' rows set to 0 after each call.
"""

from __future__ import annotations

import time

from ..core.inputs import PageWeaverInputError
from .decode import DecodeRequests
from .selection import GROUP, HEAD_DIM, PAGE


class DecodePeer:
    """FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper`` on our inputs.

    Parameters
    ----------
    q : torch.Tensor, bf16 ``[N, H*16, 128]`` on the GPU
    k, v : torch.Tensor ``[pages, H, 128, 128]``, bf16 or float8_e4m3fn (then ``k_scale`` /
        ``v_scale``, per-tensor floats, dequantize: ``k = k8 * k_scale``)
    req : DecodeRequests (built on the GPU)
    use_tensor_cores : bool
        True runs FlashInfer's tensor-core decode, i.e. its batch-prefill (FA2) kernels.
    backend : str
        ``"fa2"`` (default): the CUDA-core decode kernel without tensor cores and FA2 prefill
        with them; ``"auto"`` lets FlashInfer pick (its choice is :attr:`resolved_backend`).
    """

    def __init__(self, q, k, v, req: DecodeRequests, use_tensor_cores: bool,
                 k_scale: float | None = None, v_scale: float | None = None,
                 backend: str = "fa2", workspace_mb: int = 512):
        import flashinfer
        import torch

        n, hq, d = q.shape
        pages, heads = k.shape[0], k.shape[1]
        if hq != heads * GROUP or d != HEAD_DIM or (req.heads, req.queries) != (heads, n):
            raise PageWeaverInputError(
                f"q {tuple(q.shape)}, k {tuple(k.shape)} and requests (H={req.heads}, "
                f"N={req.queries}) do not match [N, H*16, 128] / [pages, H, 128, 128]")
        self.req, self.heads, self.n = req, heads, n
        self.q = q.contiguous().view(n * heads, GROUP, d)  # request r = i*H + h
        self.cache = (k.contiguous().view(pages * heads, PAGE, 1, d),
                      v.contiguous().view(pages * heads, PAGE, 1, d))
        self.kv_dtype = k.dtype
        self.scales = {} if k.dtype == torch.bfloat16 else {"k_scale": float(k_scale),
                                                           "v_scale": float(v_scale)}
        self.out = torch.empty((n * heads, GROUP, d), dtype=torch.bfloat16, device=q.device)
        self.empty = req.empty.to(q.device) if req.num_empty else None
        ws = torch.zeros(workspace_mb << 20, dtype=torch.uint8, device=q.device)
        self.wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            ws, "NHD", use_tensor_cores=use_tensor_cores, backend=backend)
        self.plan_s = None

    def plan(self) -> float:
        """Run ``plan()`` (it copies the page table to the host: a host sync); return its
        host-timed seconds (device synchronised before and after)."""
        import torch

        torch.cuda.synchronize()
        t0 = time.perf_counter()
        self.wrapper.plan(self.req.indptr, self.req.indices, self.req.last_page_len,
                          GROUP, 1, HEAD_DIM, self.req.page_size, pos_encoding_mode="NONE",
                          q_data_type=torch.bfloat16, kv_data_type=self.kv_dtype,
                          o_data_type=torch.bfloat16)
        torch.cuda.synchronize()
        self.plan_s = time.perf_counter() - t0
        return self.plan_s

    @property
    def resolved_backend(self) -> str:
        return str(getattr(self.wrapper, "resolved_backend", "?"))

    def run(self):
        """One decode call; returns ``[N, H*16, 128]`` bf16 (a view of the output buffer)."""
        self.wrapper.run(self.q, self.cache, out=self.out, **self.scales)
        if self.empty is not None:
            self.out[self.empty] = 0
        return self.out.view(self.n, self.heads * GROUP, HEAD_DIM)
