"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

import io
import warnings
import zipfile

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


# What a capture field may hold in a malformed file: mostly valid entries (so that valid
# captures are drawn too), padding, the int32 bounds and past them; dtypes, shapes and page
# sizes likewise, the valid ones listed more than once.
_CAPTURE_VALUES = [0, 1, 2, 3, 5, 7, -1] * 4 + [-(2**31), 2**31 - 1, 2**31, 2**40]
_CAPTURE_DTYPES = ["<i8", "<i4"] * 4 + ["<u8", "|i1", "<f8", "|b1", "<m8[s]", "<M8[s]", "<c16",
                                        "<U3"]
_CAPTURE_SHAPES = [(4, 2)] * 4 + [(4,), (5,), (0, 3), (2, 2, 2), ()]
_PAGE_SIZES = [128, 4] * 3 + [0, -1, 2.9, True, "128", [1, 2], None]


@st.composite
def _field_array(draw, length: int | None = None):
    """An array of a drawn dtype and shape (``[length]`` for a per-query field, often)."""
    shape = draw(st.sampled_from(_CAPTURE_SHAPES))
    if length is not None and draw(st.integers(0, 3)):
        shape = (length,)
    size = int(np.prod(shape, dtype=np.int64))
    values = draw(st.lists(st.sampled_from(_CAPTURE_VALUES), min_size=size, max_size=size))
    dtype = draw(st.sampled_from(_CAPTURE_DTYPES))
    with np.errstate(all="ignore"):
        return np.array(values, dtype=np.int64).reshape(shape).astype(dtype)


@st.composite
def capture_fields(draw) -> dict:
    """Fields of a capture, each possibly malformed (dtype, shape, values, unknown names)."""
    topk = draw(_field_array())
    fields = {"topk": topk} if draw(st.integers(0, 9)) else {}
    n = topk.shape[0] if topk.ndim else 0
    for name in ("request_offsets", "lengths", "causal_pos", "bogus"):
        if draw(st.integers(0, 4 if name == "bogus" else 2)) == 0:
            fields[name] = draw(_field_array(length=n))
    if draw(st.booleans()):
        fields["page_size"] = draw(st.sampled_from(_PAGE_SIZES))
    return fields


def _npz_bytes(fields: dict, duplicate: bool, compressed: bool) -> bytes:
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as archive:
        items = list(fields.items()) + (list(fields.items())[:1] if duplicate else [])
        for name, value in items:
            member = io.BytesIO()
            np.save(member, np.asarray(value, dtype=object if value is None else None),
                    allow_pickle=value is None)
            with warnings.catch_warnings():  # a repeated name is the point
                warnings.simplefilter("ignore")
                archive.writestr(f"{name}.npy", member.getvalue())
    return buf.getvalue()


def _pt_bytes(fields: dict, as_tensor: bool) -> bytes:
    import torch

    def tensor(value):
        arr = np.asarray(value)
        if arr.dtype.kind in "iufb" and arr.dtype != np.uint64:
            return torch.from_numpy(arr.copy())
        return value.tolist() if isinstance(value, np.ndarray) else value

    buf = io.BytesIO()
    topk = fields.get("topk", np.zeros((1, 1)))
    torch.save(tensor(topk) if as_tensor else {k: tensor(v) for k, v in fields.items()}, buf)
    return buf.getvalue()


@st.composite
def malformed_capture_files(draw) -> tuple[str, bytes]:
    """(suffix, content) of a capture file that may be malformed anywhere: its fields, its
    container (duplicate zip members), or its bytes (truncated, overwritten)."""
    fields = draw(capture_fields())
    suffix = draw(st.sampled_from([".npy", ".npz", ".pt"]))
    if suffix == ".npy":
        buf = io.BytesIO()
        np.save(buf, fields.get("topk", np.zeros(0)))
        data = buf.getvalue()
    elif suffix == ".npz":
        data = _npz_bytes(fields, draw(st.integers(0, 9)) == 0, draw(st.booleans()))
    else:
        data = _pt_bytes(fields, draw(st.booleans()))
    damage = draw(st.sampled_from(["none"] * 4 + ["truncate", "overwrite"]))
    if damage == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == "overwrite" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at + 8:]
    return suffix, data
