"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


@st.composite
def topk_arrays(draw, max_n: int = 40, max_k: int = 6, max_page: int = 48):
    """Top-K arrays with padding (-1, -7), duplicates and empty rows."""
    n = draw(st.integers(0, max_n))
    k = draw(st.integers(1, max_k))
    pages = draw(st.integers(1, max_page))
    values = draw(
        st.lists(
            st.one_of(st.integers(0, pages - 1), st.sampled_from([-1, -7])),
            min_size=n * k,
            max_size=n * k,
        )
    )
    return np.array(values, dtype=np.int64).reshape(n, k)


@st.composite
def grouping_case(draw, max_n: int = 40):
    """(topk, window, group, request_offsets, chunk_size) with valid multiples."""
    topk = draw(topk_arrays(max_n=max_n))
    n = topk.shape[0]
    group = draw(st.sampled_from([1, 2, 3, 4, 8]))
    window = group * draw(st.integers(1, 4))
    chunk = draw(st.one_of(st.none(), st.integers(1, 4).map(lambda c: c * group)))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    offsets = np.array([0, *cuts, n], dtype=np.int64)
    return topk, window, group, offsets, chunk
