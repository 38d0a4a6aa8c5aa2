"""Public library entries: a bad argument is a PageWeaverInputError naming it, never a raw
NumPy / Python error, and never a quietly wrong result."""

import re

import numpy as np
import pytest
import torch

from pageweaver_edu import (
    Grouping,
    PageWeaverInputError,
    decode_bitmap,
    encode_bitmaps,
    greedy_regroup,
    membership_mask,
    popcount_delta,
    reference_attention,
    token_support,
)
from pageweaver_edu.core.bitmap import bitmap_words
from pageweaver_edu.core.union_metrics import group_union, useful_fraction
from pageweaver_edu.pagepairs.attention import page_pair_attention

G3 = np.array([[1, 2], [8, 9], [2, 3], [3, 4], [8, 10], [9, 10]])
Q, KV = np.ones((6, 1, 4)), np.ones((16, 4, 4))

BAD_CALLS = {
    "bf16 torch topk": (lambda: greedy_regroup(torch.tensor(G3, dtype=torch.bfloat16),
                                               Grouping(8)), "topk has dtype torch.bfloat16"),
    "D = 0": (lambda: reference_attention(np.ones((6, 1, 0)), np.ones((16, 4, 0)),
                                          np.ones((16, 4, 0)), G3), "H, D >= 1"),
    "P = 0": (lambda: reference_attention(Q, np.ones((16, 0, 4)), np.ones((16, 0, 4)), G3),
              "P >= 1"),
    "P = 0, page pairs": (lambda: page_pair_attention(Q, np.ones((16, 0, 4)),
                                                      np.ones((16, 0, 4)), G3), "P >= 1"),
    "float page table": (lambda: reference_attention(Q, KV, KV, G3,
                                                     page_table=np.arange(16.0)[None]),
                         "page_table must have an integer dtype"),
    "page table -1 for a selected page": (
        lambda: reference_attention(Q, KV, KV, G3, page_table=np.full((1, 16), -1)),
        "maps to -1 (unmapped)"),
    "scale NaN": (lambda: reference_attention(Q, KV, KV, G3, scale=float("nan")), "scale"),
    "scale string": (lambda: reference_attention(Q, KV, KV, G3, scale="0.5"), "scale"),
    "member out of range": (lambda: membership_mask(G3, [0, 7]), "members holds 7"),
    "negative member": (lambda: group_union(G3, [0, -1]), "members holds -1"),
    "float member": (lambda: membership_mask(G3, [0, 1.7]), "members must have an integer"),
    "heads = 0": (lambda: useful_fraction(G3, [0, 1], heads=0), "heads"),
    "negative bitmap word": (lambda: decode_bitmap([-1]), "words holds -1"),
    "float bitmap words": (lambda: popcount_delta([1.9], [0]), "bits must have an integer"),
    "uint64 bitmap words": (lambda: popcount_delta(np.array([2**40], np.uint64), [0]),
                            "bits holds 1099511627776"),
    "NaN in a token support": (lambda: token_support([0, float("nan")], 4), "pages"),
    "float length": (lambda: token_support([0], 4, length=2.5), "length L_i"),
    "bool page size": (lambda: token_support([0], True), "page_size P"),
    "capacity past the limit": (lambda: encode_bitmaps(G3, capacity=2**31), "capacity B"),
    "bitmaps past the limit": (lambda: bitmap_words(65536, rows=1 << 20), "more than the limit"),
    "timedelta lengths": (lambda: greedy_regroup(G3, Grouping(8), lengths=np.arange(6).astype(
        "m8[s]")), "lengths must have an integer dtype"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_argument_is_named(case):
    call, needle = BAD_CALLS[case]
    with pytest.raises(PageWeaverInputError, match=re.escape(needle)):
        call()


def test_unmapped_pages_nobody_selects_are_fine():
    table = np.full((1, 16), -1)
    table[0, :11] = np.arange(11)[::-1]
    out = reference_attention(Q, KV, KV, G3, page_table=table)
    assert out.shape == (6, 1, 4) and np.isfinite(out).all()


def test_bitmap_words_keep_every_bit():
    assert popcount_delta(np.array([2**32 - 1], np.uint64), [0]).tolist() == 32
    assert decode_bitmap(np.array([0, 1 << 31], np.int64)).tolist() == [63]


@pytest.mark.parametrize(("call", "needle"), [
    (lambda t: t.cuda_ids(np.array([[2**33]]), "topk", (2,)), "topk holds 8589934592"),
    (lambda t: t.cuda_ids(torch.tensor([[2**33]]), "topk", (2,)), "topk holds values outside"),
    (lambda t: t.cuda_ids(np.zeros((2, 2)), "topk", (2,)), "topk must have an integer dtype"),
    (lambda t: t.cuda_positions(np.full(3, 2.5), 3, "lengths"), "lengths must have an integer"),
    (lambda t: t.cuda_positions(torch.full((3,), -1), 3, "lengths"), "lengths holds values"),
    (lambda t: t.cuda_positions(np.arange(3).astype("m8[s]"), 3, "lengths"), "timedelta64"),
])
def test_gpu_inputs_are_not_converted(monkeypatch, call, needle):
    """The GPU front ends' host checks: no float or timedelta becomes an int32, nothing past
    int32 is clamped (CPU tensors stand in for CUDA ones)."""
    from pageweaver_edu.gpu import tensors
    from tests.helpers.fake_gpu import cpu_tensors_as_cuda

    cpu_tensors_as_cuda(monkeypatch)
    with pytest.raises(PageWeaverInputError, match=re.escape(needle)):
        call(tensors)
