"""pageweaver_edu — learn, replay and run PageWeaver (arXiv:2610.11201).

The CPU reference is exact and importable everywhere; GPU entry points live in
:mod:`pageweaver_edu.gpu` and are loaded only on demand.
"""

from .core import (
    Capture,
    Grouping,
    PageWeaverInputError,
    UnionPlan,
    decode_bitmap,
    encode_bitmaps,
    load_capture,
    membership_mask,
    popcount_delta,
    prepare_unions,
    reference_attention,
    save_capture,
    support_sets,
    token_support,
    union_stats,
)
from .regroup import greedy_regroup, greedy_regroup_sets

__version__ = "0.1.0"

__all__ = [
    "Capture",
    "Grouping",
    "PageWeaverInputError",
    "UnionPlan",
    "decode_bitmap",
    "encode_bitmaps",
    "greedy_regroup",
    "greedy_regroup_sets",
    "load_capture",
    "membership_mask",
    "popcount_delta",
    "prepare_unions",
    "reference_attention",
    "save_capture",
    "support_sets",
    "token_support",
    "union_stats",
]
