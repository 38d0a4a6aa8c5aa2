"""pageweaver_edu — learn, replay and run PageWeaver (arXiv:2610.11201).

The CPU reference is exact and importable everywhere; GPU entry points live in
:mod:`pageweaver_edu.device` and the GPU launch modules and are loaded only on demand.
"""

from .attention import reference_attention
from .bitmap import decode_bitmap, encode_bitmaps, popcount_delta
from .capture import Capture, load_capture, save_capture
from .inputs import PageWeaverInputError
from .regroup_bitmap import greedy_regroup
from .regroup_sets import greedy_regroup_sets
from .supports import support_sets, token_support
from .union_metrics import membership_mask, union_stats
from .union_prep import UnionPlan, prepare_unions

__version__ = "0.1.0"

__all__ = [
    "Capture",
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
