"""Top-K captures: the in-memory form and the file formats (.npz, .npy, .pt).

A capture is ``topk`` (required, ``[N, K]`` int, -1 padding) with optional
``request_offsets`` (``[R+1]``, cu_seqlens style), ``lengths``, ``causal_pos`` and
``page_size``. A bare ``.npy`` holds ``topk`` alone; a ``.pt`` holds the same dict or a
tensor. Every field is validated on load, so a file that is not a Top-K array fails with a
message that says why.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .inputs import (
    PageWeaverInputError,
    as_positions,
    as_request_offsets,
    as_topk,
    positive_int,
)

FIELDS = ("topk", "request_offsets", "lengths", "causal_pos", "page_size")


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
            page_size=positive_int(int(np.asarray(page_size)), "page_size"),
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
    """Write a capture as ``.npz`` (every field that is set).

    Parameters
    ----------
    capture : Capture
    path : str or os.PathLike
        Destination file; overwritten.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    fields = {"topk": capture.topk, "request_offsets": capture.request_offsets}
    fields["page_size"] = np.int64(capture.page_size)
    for name in ("lengths", "causal_pos"):
        if getattr(capture, name) is not None:
            fields[name] = getattr(capture, name)
    with path.open("wb") as fh:
        np.savez_compressed(fh, **fields)
    return path


def _from_mapping(mapping, source: str) -> Capture:
    if "topk" not in mapping:
        raise PageWeaverInputError(f"{source} has no 'topk' array (found: {sorted(mapping)})")
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise PageWeaverInputError(f"{source} has unknown fields {unknown}; expected {FIELDS}")
    return Capture.from_arrays(**{k: mapping[k] for k in mapping})


def _load_pt(path: Path) -> Capture:
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for non-tensor files
        raise PageWeaverInputError(f"{path} is not a readable torch file: {exc}") from None
    if isinstance(obj, dict):
        return _from_mapping(obj, str(path))
    if isinstance(obj, torch.Tensor):
        return Capture.from_arrays(obj)
    raise PageWeaverInputError(f"{path} holds a {type(obj).__name__}, not a tensor or dict")


def load_capture(path) -> Capture:
    """Read a capture from ``.npz``, ``.npy`` or ``.pt``.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    Capture

    Raises
    ------
    PageWeaverInputError
        Missing file, unknown suffix, unreadable content or invalid fields.
    """
    path = Path(path)
    if not path.is_file():
        raise PageWeaverInputError(f"capture file not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                return _from_mapping({k: data[k] for k in data.files}, str(path))
        if suffix == ".npy":
            return Capture.from_arrays(np.load(path, allow_pickle=False))
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, PageWeaverInputError):
            raise
        raise PageWeaverInputError(f"{path} is not a valid {suffix} file: {exc}") from None
    if suffix == ".pt":
        return _load_pt(path)
    raise PageWeaverInputError(f"{path}: unknown capture format {suffix!r} (use .npz, .npy, .pt)")
