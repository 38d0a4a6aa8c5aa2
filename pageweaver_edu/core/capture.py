"""Top-K captures: the in-memory form and the file formats (.npz, .npy, .pt).

A capture is ``topk`` (required, ``[N, K]`` int, -1 padding) with optional
``request_offsets`` (``[R+1]``, cu_seqlens style), ``lengths``, ``causal_pos`` and
``page_size``. A bare ``.npy`` holds ``topk`` alone; a ``.pt`` holds the same dict or a
tensor. Every field is validated on load, so a file that is not a Top-K array fails with a
message that says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .capture_files import (
    READ_ERRORS,
    check_field_names,
    check_file,
    read_npz,
    read_pt,
    read_single_npy,
)
from .inputs import (
    PageWeaverInputError,
    as_positions,
    as_request_offsets,
    as_topk,
    positive_int,
)
from .outputs import write_atomically


@dataclass(frozen=True)
class Capture:
    """A validated Top-K capture.

    Attributes
    ----------
    topk : numpy.ndarray of int64, shape [N, K]
    request_offsets : numpy.ndarray of int64, shape [R + 1]
    lengths : numpy.ndarray of int64, shape [N], or None
    causal_pos : numpy.ndarray of int64, shape [N], or None
    page_size : int
    """

    topk: np.ndarray
    request_offsets: np.ndarray
    lengths: np.ndarray | None = None
    causal_pos: np.ndarray | None = None
    page_size: int = 128

    @classmethod
    def from_arrays(
        cls, topk, request_offsets=None, lengths=None, causal_pos=None, page_size=128
    ) -> Capture:
        """Validate raw arrays into a :class:`Capture`.

        Parameters
        ----------
        topk : array_like of int, shape [N, K]
        request_offsets : array_like of int, shape [R + 1], optional
            One request holding every row when None.
        lengths, causal_pos : array_like of int, shape [N], optional
        page_size : int
            P, tokens per page.
        """
        arr = as_topk(topk)
        n = arr.shape[0]
        return cls(
            topk=arr,
            request_offsets=as_request_offsets(request_offsets, n),
            lengths=as_positions(lengths, n, "lengths"),
            causal_pos=as_positions(causal_pos, n, "causal_pos"),
            page_size=positive_int(page_size, "page_size"),
        )

    @property
    def num_queries(self) -> int:
        """N."""
        return int(self.topk.shape[0])

    @property
    def num_requests(self) -> int:
        """R."""
        return len(self.request_offsets) - 1

    def regroup_kwargs(self) -> dict:
        """Keyword arguments shared by the regroup functions."""
        return {
            "request_offsets": self.request_offsets,
            "lengths": self.lengths,
            "page_size": self.page_size,
        }


def save_capture(capture: Capture, path) -> Path:
    """Write a capture as ``.npz`` (every field that is set) at exactly ``path``.

    Parameters
    ----------
    capture : Capture
    path : str or pathlib.Path
        Must end in ``.npz``; written through a temporary file and a rename
        (:func:`~pageweaver_edu.core.outputs.write_atomically`).

    Returns
    -------
    pathlib.Path
        The absolute path written.
    """
    fields = {"topk": capture.topk, "request_offsets": capture.request_offsets}
    fields["page_size"] = np.int64(capture.page_size)
    for name in ("lengths", "causal_pos"):
        if getattr(capture, name) is not None:
            fields[name] = getattr(capture, name)
    return write_atomically(path, ".npz", lambda fh: np.savez_compressed(fh, **fields))


def _from_mapping(mapping, source: str) -> Capture:
    check_field_names(list(mapping), source)
    return Capture.from_arrays(**mapping)


def load_capture(path) -> Capture:
    """Read a capture from ``.npz``, ``.npy`` or ``.pt``, within the limits of
    :mod:`~pageweaver_edu.core.capture_files` (nothing is unpickled).

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    Capture

    Raises
    ------
    PageWeaverInputError
        Missing or oversized file, unknown suffix, unreadable content or invalid fields.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".npy", ".pt"):
        raise PageWeaverInputError(
            f"{path}: unknown capture format {suffix!r} (use .npz, .npy, .pt)")
    check_file(path)
    try:
        if suffix == ".npz":
            return _from_mapping(read_npz(path), str(path))
        if suffix == ".npy":
            return Capture.from_arrays(read_single_npy(path))
        obj = read_pt(path)
    except PageWeaverInputError:
        raise
    except READ_ERRORS as exc:
        raise PageWeaverInputError(f"{path} is not a valid {suffix} file: {exc}") from None
    if isinstance(obj, dict):
        return _from_mapping(obj, str(path))
    return Capture.from_arrays(obj)
