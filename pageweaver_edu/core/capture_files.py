"""Reading capture files without trusting them.

Every size a file declares is checked before it is read, inflated or allocated: the file
size; the zip directory (at most :data:`MAX_MEMBERS` members, distinct names, only stored or
deflated members, each declared size possible for its compressed size, and the declared sizes
summed against :data:`MAX_UNZIPPED_BYTES`); each ``.npy`` header (its field, shape and dtype
against :mod:`~pageweaver_edu.core.inputs`' limits, and exactly as many data bytes as the file
holds after the header); and every tensor of a ``.pt`` file (its storages are zip members,
bounded above) before it is converted: its flags, layout and strides. Nothing is unpickled:
``.npy`` data is read with ``allow_pickle=False`` and ``.pt`` files with
``torch.load(weights_only=True)``. Every failure is one :class:`PageWeaverInputError` line.
"""

from __future__ import annotations

import collections
import lzma
import math
import tokenize
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .inputs import (
    MAX_QUERIES,
    MAX_REQUESTS,
    PageWeaverInputError,
    check_elements,
    check_tensor,
    check_topk_shape,
)

FIELDS = ("topk", "request_offsets", "lengths", "causal_pos", "page_size")
MAX_FILE_BYTES = 1 << 28  #: size of a capture file
MAX_UNZIPPED_BYTES = 1 << 28  #: declared uncompressed size of a zip's members, summed
MAX_MEMBERS = 64  #: members of a zip (an .npz has at most 5, a .pt one per tensor and 4 more)
#: deflate's largest expansion: a 258-byte match costs at least 2 bits, so at most 1032:1
DEFLATE_MAX_RATIO = 1032
#: What a damaged or hostile file may raise while it is read.
# (numpy parses an .npy header with the tokenizer and ast.literal_eval: a mangled header can
# raise SyntaxError or tokenize.TokenError)
READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError,
               NotImplementedError, RuntimeError, SyntaxError, tokenize.TokenError)


def check_file(path: Path) -> None:
    """The capture file exists, is a plain file, and is at most :data:`MAX_FILE_BYTES`."""
    if not path.is_file():
        raise PageWeaverInputError(f"capture file not found (or not a regular file): {path}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise PageWeaverInputError(
            f"{path} has {size:,} bytes, more than the limit {MAX_FILE_BYTES:,}")


def _check_member(m: zipfile.ZipInfo, source: str) -> None:
    if m.flag_bits & 0x1:
        raise PageWeaverInputError(f"{source}: member {m.filename!r} is encrypted")
    if m.compress_type == zipfile.ZIP_STORED:
        possible = m.compress_size
    elif m.compress_type == zipfile.ZIP_DEFLATED:
        possible = DEFLATE_MAX_RATIO * m.compress_size + 64
    else:  # bzip2 and lzma inflate a whole block at once, past any declared size
        raise PageWeaverInputError(
            f"{source}: member {m.filename!r} uses zip compression method "
            f"{m.compress_type}; only stored (0) and deflated (8) members are read")
    if m.file_size > possible:
        raise PageWeaverInputError(
            f"{source}: member {m.filename!r} declares {m.file_size:,} bytes from "
            f"{m.compress_size:,} compressed, more than its method can hold")


def zip_members(archive: zipfile.ZipFile, source: str) -> list[zipfile.ZipInfo]:
    """The members of a zip, refused when there are too many, a name repeats, a member's
    method or declared size is impossible, or they declare more than the limit in all."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise PageWeaverInputError(
            f"{source} has {len(members):,} members, more than the limit {MAX_MEMBERS}")
    counts = collections.Counter(m.filename for m in members)
    repeated = sorted(n for n, c in counts.items() if c > 1)
    if repeated:
        raise PageWeaverInputError(f"{source} holds more than one member named {repeated}")
    for m in members:
        _check_member(m, source)
    total = sum(m.file_size for m in members)
    if total > MAX_UNZIPPED_BYTES:
        raise PageWeaverInputError(
            f"{source} expands to {total:,} bytes, more than the limit {MAX_UNZIPPED_BYTES:,}")
    return members


def check_declared(field: str, shape: tuple, source: str) -> None:
    """The shape a file declares for a capture field, before anything is allocated."""
    if field == "topk":
        check_topk_shape(shape)
        return
    longest = {"request_offsets": MAX_REQUESTS + 1, "page_size": 1}.get(field, MAX_QUERIES)
    if math.prod(shape) > longest:
        raise PageWeaverInputError(
            f"{source}: {field} has shape {tuple(shape)}, more than the limit {longest:,} "
            "elements")
    check_elements(shape, f"{source} {field}")


def read_npy(fh, available: int, field: str, source: str) -> np.ndarray:
    """One ``.npy`` array from ``fh`` after its header passes the limits.

    Parameters
    ----------
    fh : binary file object, seekable
    available : int
        Bytes the file or zip member holds (header included).
    field : str
        The capture field it holds (its shape limits: :func:`check_declared`).
    source : str
        Names the file in error messages.
    """
    version = np.lib.format.read_magic(fh)
    if version not in ((1, 0), (2, 0)):
        raise PageWeaverInputError(f"{source}: unsupported .npy format version {version}")
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    with warnings.catch_warnings():  # a Python-2 header is refused, not read with a warning
        warnings.simplefilter("error")
        try:
            shape, _, dtype = read_header(fh)
        except UserWarning:
            raise PageWeaverInputError(f"{source}: {field} has a Python 2 .npy header; save "
                                       "it again with Python 3") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise PageWeaverInputError(f"{source}: {field} has dtype {dtype}, not plain numbers")
    check_declared(field, shape, source)
    declared, left = math.prod(shape) * dtype.itemsize, available - fh.tell()
    if declared != left:
        raise PageWeaverInputError(
            f"{source}: {field} declares {declared:,} bytes of data but the file holds "
            f"{max(left, 0):,} after its header")
    fh.seek(0)
    return np.lib.format.read_array(fh, allow_pickle=False)


def check_field_names(keys: list, source: str) -> None:
    """The keys of a capture file: strings, ``topk`` among them, each one of :data:`FIELDS`."""
    if not all(isinstance(k, str) for k in keys):
        raise PageWeaverInputError(f"{source} has keys that are not field names: "
                                   f"{sorted(repr(k) for k in keys if not isinstance(k, str))}")
    if "topk" not in keys:
        raise PageWeaverInputError(f"{source} has no 'topk' array (found: {sorted(keys)})")
    unknown = sorted(set(keys) - set(FIELDS))
    if unknown:
        raise PageWeaverInputError(f"{source} has unknown fields {unknown}; expected {FIELDS}")


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """The fields of an ``.npz`` capture (one ``<field>.npy`` member each)."""
    with zipfile.ZipFile(path) as archive:
        members = zip_members(archive, str(path))
        fields = {m.filename.removesuffix(".npy"): m for m in members}
        for m in members:
            if not m.filename.endswith(".npy"):
                raise PageWeaverInputError(
                    f"{path} has a member {m.filename!r} that is not an .npy array")
        check_field_names(list(fields), str(path))
        arrays = {}
        for field, member in fields.items():
            with archive.open(member) as fh:
                arrays[field] = read_npy(fh, member.file_size, field, str(path))
        return arrays


def read_single_npy(path: Path) -> np.ndarray:
    """The Top-K array of a bare ``.npy`` capture."""
    with path.open("rb") as fh:
        return read_npy(fh, path.stat().st_size, "topk", str(path))


def _check_file_tensor(t, name: str) -> None:
    """A tensor from a file: flags and layout (:func:`check_tensor`), then its strides: every
    element its own (dense in some order of the dimensions: no stride 0, no overlap, no gap)
    and inside its storage, so that converting it copies exactly what the file holds."""
    check_tensor(t, name)
    dense = 1
    dims = zip(t.stride(), t.shape, strict=True)
    for stride, size in sorted((st, sz) for st, sz in dims if sz > 1):
        if stride != dense:
            raise PageWeaverInputError(
                f"{name} has strides {tuple(t.stride())} for shape {tuple(t.shape)} (expanded, "
                "overlapping or strided); save it with .contiguous()")
        dense *= size
    end = (t.storage_offset() + t.numel()) * t.element_size()
    if end > t.untyped_storage().nbytes():
        raise PageWeaverInputError(f"{name} reaches past the end of its storage")


def read_pt(path: Path):
    """The tensor, or dict of field name to tensor or int, of a ``.pt`` capture.

    Only torch.save's zip format is read, with ``weights_only=True``; its storages are the
    members :func:`zip_members` bounded, and each tensor's flags and strides are checked
    before anything converts it.
    """
    import torch

    if not zipfile.is_zipfile(path):
        raise PageWeaverInputError(f"{path} is not a readable torch file: not torch.save's zip "
                                   "format (the legacy format is not read)")
    with zipfile.ZipFile(path) as archive:
        zip_members(archive, str(path))
    try:
        with warnings.catch_warnings():  # torch's deprecation notes would add lines
            warnings.simplefilter("ignore")
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types, with several lines of advice
        raise PageWeaverInputError(
            f"{path} is not a readable torch file of tensors ({type(exc).__name__} from "
            "torch.load with weights_only=True)") from None
    if not isinstance(obj, (dict, torch.Tensor)):
        raise PageWeaverInputError(f"{path} holds a {type(obj).__name__}, not a tensor or dict")
    values = obj.items() if isinstance(obj, dict) else [("topk", obj)]
    for key, value in values:
        if isinstance(value, torch.Tensor):
            _check_file_tensor(value, f"{path} {key}")
        elif isinstance(key, str) and not (key == "page_size" and isinstance(value, int)):
            raise PageWeaverInputError(f"{path} holds a {type(value).__name__} for {key!r}; a "
                                       ".pt capture holds tensors (and an int page_size)")
    return obj
