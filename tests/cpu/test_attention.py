"""The float64 reference attention against a brute-force dense masked softmax.

Definitions: docs/definitions.md#supports.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pageweaver_edu import PageWeaverInputError, reference_attention
from pageweaver_edu.core.supports import token_support


def dense_masked_softmax(q, k, v, topk, lengths, causal, page_table, offsets):
    """Attention over the full K/V of each query's request with a dense token mask."""
    n, heads, dim = q.shape
    page_size = k.shape[1]
    out = np.zeros((n, heads, dim))
    for i in range(n):
        req = np.searchsorted(offsets, i, side="right") - 1
        logical_pages = page_table.shape[1]
        tokens = np.arange(logical_pages * page_size)
        allowed = set(token_support(topk[i], page_size, lengths[i], causal[i]).tolist())
        mask = np.array([t in allowed for t in tokens])
        phys = page_table[req][tokens // page_size] * page_size + tokens % page_size
        kk, vv = k.reshape(-1, dim)[phys], v.reshape(-1, dim)[phys]
        for h in range(heads):
            logits = np.where(mask, kk @ q[i, h] / np.sqrt(dim), -np.inf)
            if mask.any():
                w = np.exp(logits - logits.max())
                out[i, h] = (w / w.sum()) @ vv
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_matches_dense_masked_softmax(seed):
    rng = np.random.default_rng(seed)
    n, heads, dim, page_size, logical = rng.integers(1, 7), 2, 4, rng.integers(1, 5), 6
    offsets = np.array([0, n // 2, n])
    pool = 2 * logical
    page_table = rng.permutation(pool).reshape(2, logical)
    q = rng.standard_normal((n, heads, dim))
    k, v = rng.standard_normal((2, pool, page_size, dim))
    topk = rng.integers(-1, logical, (n, 3))
    lengths = rng.integers(0, logical * page_size + 1, n)
    causal = rng.integers(0, logical * page_size, n)
    got = reference_attention(q, k, v, topk, lengths, causal, offsets, page_table)
    want = dense_masked_softmax(q, k, v, topk, lengths, causal, page_table, offsets)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_empty_support_gives_zero_and_duplicates_count_once():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((3, 2, 8))
    q[2] = q[1]
    k, v = rng.standard_normal((2, 4, 4, 8))
    out = reference_attention(q, k, v, [[-1, -1], [1, 1], [1, -1]], causal_pos=[5, 7, 7])
    assert np.all(out[0] == 0)
    np.testing.assert_array_equal(out[1], out[2])


def test_torch_inputs_are_accepted_without_precision_loss():
    torch = pytest.importorskip("torch")
    q = torch.randn(2, 1, 4, dtype=torch.bfloat16)
    k = torch.randn(3, 2, 4, dtype=torch.float64)
    topk = torch.tensor([[0, 2], [1, -1]])
    out = reference_attention(q, k, k, topk)
    assert out.dtype == np.float64 and out.shape == (2, 1, 4)
    want = reference_attention(q.double().numpy(), k.numpy(), k.numpy(), topk.numpy())
    np.testing.assert_array_equal(out, want)


def test_no_queries_gives_an_empty_output():
    out = reference_attention(np.zeros((0, 2, 4)), np.zeros((3, 2, 4)), np.zeros((3, 2, 4)),
                              np.zeros((0, 2), dtype=np.int64))
    assert out.shape == (0, 2, 4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(q=np.full((2, 1, 4), np.nan)), "NaN"),
        (dict(q=np.zeros((2, 4))), "q must be 3-D"),
        (dict(k=np.zeros((3, 2, 5))), "k and v must both be"),
        (dict(topk=[[0], [5]]), "out of range"),
        (dict(topk=[[0]]), "topk has 1 rows"),
        (dict(q=np.zeros((2, 1, 4), dtype=np.int64)), "floating dtype"),
    ],
)
def test_bad_inputs(change, message):
    args = dict(q=np.zeros((2, 1, 4)), k=np.zeros((3, 2, 4)), v=np.zeros((3, 2, 4)),
                topk=[[0], [1]])
    args.update(change)
    with pytest.raises(PageWeaverInputError, match=message):
        reference_attention(**args)
