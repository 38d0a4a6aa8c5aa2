"""Peer kernels beside ours: FlashInfer 0.7.4 on PageWeaver's inputs, and the checks that the
converted inputs select exactly the token sets ``A_i = {t : floor(t/P) in S_i, t < L_i,
t <= c_i}`` (docs/definitions.md#supports).

Our inputs: ``q`` ``[N, H*16, 128]`` BF16 (16 local Q heads per KV head), ``k``/``v``
``[pages, H, 128, 128]`` (page p of KV head h is ``k[p, h]``), ``topk`` ``[H, N, K]`` (one
Top-K per KV head; ``< 0`` padding, duplicates allowed), optional ``causal_pos`` c_i and
``lengths`` L_i (``[N]``).

* :mod:`.availability` — whether ``import flashinfer`` works, and why not;
* :mod:`.selection` — the shapes the peers take and each query's visible-token limit;
* :mod:`.decode` — paged-decode requests, one per (query, KV head), and their CPU verifier;
  :mod:`.decode_peer` runs ``BatchDecodeWithPagedKVCacheWrapper`` on them;
* :mod:`.fp8_cache` — per-tensor FP8 E4M3 K/V, the interleaved MSA cache, the float64
  references the peer rows are checked against;
* :mod:`.msa` — when ``flashinfer.msa_ops.msa_sparse_attention`` (SM90) can state our A_i, and
  its arguments; :mod:`.msa_peer` runs it (default or generated-program route).

Importable without FlashInfer (and without a GPU): the library is imported only inside the
functions and classes that run it.
"""

from .availability import flashinfer_available
from .decode import DecodeRequests, decode_request_tokens, decode_requests, verify_decode_requests
from .decode_peer import DecodePeer
from .fp8_cache import interleaved_fp8_cache, peer_references, quantize_kv_per_tensor
from .msa import MsaInputs, msa_inputs, msa_kwargs, msa_token_counts
from .msa_peer import MsaPeer, msa_programs_route, msa_route_probe
from .selection import GROUP, HEAD_DIM, MSA_TOPK, PAGE, topk_3d, visible_limit

__all__ = [
    "GROUP",
    "HEAD_DIM",
    "MSA_TOPK",
    "PAGE",
    "DecodePeer",
    "DecodeRequests",
    "MsaInputs",
    "MsaPeer",
    "decode_request_tokens",
    "decode_requests",
    "flashinfer_available",
    "interleaved_fp8_cache",
    "msa_inputs",
    "msa_kwargs",
    "msa_programs_route",
    "msa_route_probe",
    "msa_token_counts",
    "peer_references",
    "quantize_kv_per_tensor",
    "topk_3d",
    "verify_decode_requests",
    "visible_limit",
]
