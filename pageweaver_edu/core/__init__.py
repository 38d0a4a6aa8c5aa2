"""The definitions every other part of the package builds on, as exact CPU code.

Inputs and their validation (:mod:`.inputs`), support sets S_i and token sets A_i
(:mod:`.supports`), page bitmaps (:mod:`.bitmap`), request / chunk / window / group tables and
the capacity fallback (:mod:`.windows`), the grouping parameters W, g, B and the chunk size
(:mod:`.grouping`), Top-K capture files (:mod:`.capture`), unions and
their metrics (:mod:`.union_metrics`), the union plan a Union kernel reads (:mod:`.union_plan`)
and the float64 reference attention (:mod:`.attention`).
"""

from .attention import reference_attention
from .bitmap import decode_bitmap, encode_bitmaps, popcount_delta
from .capture import Capture, load_capture, save_capture
from .grouping import Grouping
from .inputs import PageWeaverInputError
from .supports import canonical_rows, support_sets, token_support
from .union_metrics import membership_mask, union_stats
from .union_plan import UnionPlan, prepare_unions
from .windows import WindowTable, window_table

__all__ = [
    "Capture",
    "Grouping",
    "PageWeaverInputError",
    "UnionPlan",
    "WindowTable",
    "canonical_rows",
    "decode_bitmap",
    "encode_bitmaps",
    "load_capture",
    "membership_mask",
    "popcount_delta",
    "prepare_unions",
    "reference_attention",
    "save_capture",
    "support_sets",
    "token_support",
    "union_stats",
    "window_table",
]
