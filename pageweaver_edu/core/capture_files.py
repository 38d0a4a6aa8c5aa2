"""Reading capture files without trusting them, and writing outputs without losing data.

A capture file is read only after its declared sizes pass the limits: the file size, the
uncompressed size of every zip member (from the zip directory, which also caps how much is
inflated), and the shape and dtype each ``.npy`` header declares, against
:data:`~pageweaver_edu.core.inputs.MAX_ELEMENTS` and the Top-K limits. Nothing is unpickled:
``.npy`` data is read with ``allow_pickle=False`` and ``.pt`` files with
``torch.load(weights_only=True)``. Every failure is one :class:`PageWeaverInputError` line.
Outputs are written to exactly the path asked for, through a temporary file in the same
folder and :func:`os.replace`, and never onto a file that is being read.
"""

from __future__ import annotations

import lzma
import math
import os
import secrets
import tokenize
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .inputs import PageWeaverInputError, check_elements, check_topk_shape

MAX_FILE_BYTES = 1 << 31  #: size of a capture file, and uncompressed size of a zip's members
#: What a damaged or hostile file may raise while it is read.
# (numpy parses an .npy header with the tokenizer and ast.literal_eval: a mangled header can
# raise SyntaxError or tokenize.TokenError)
READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError,
               NotImplementedError, RuntimeError, SyntaxError, tokenize.TokenError)


def check_file(path: Path) -> None:
    """The capture file exists, is a plain file, and is at most :data:`MAX_FILE_BYTES`."""
    if not path.is_file():
        raise PageWeaverInputError(f"capture file not found: {path}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise PageWeaverInputError(
            f"{path} has {size:,} bytes, more than the limit {MAX_FILE_BYTES:,}")


def zip_members(archive: zipfile.ZipFile, source: str) -> list[zipfile.ZipInfo]:
    """The members of a zip, refused when a name repeats or they inflate past the limit."""
    members = archive.infolist()
    names = [m.filename for m in members]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PageWeaverInputError(f"{source} holds more than one member named {repeated}")
    total = sum(m.file_size for m in members)
    if total > MAX_FILE_BYTES:
        raise PageWeaverInputError(
            f"{source} expands to {total:,} bytes, more than the limit {MAX_FILE_BYTES:,}")
    return members


def read_npy(fh, available: int, field: str, source: str) -> np.ndarray:
    """One ``.npy`` array from ``fh`` after its header passes the limits.

    Parameters
    ----------
    fh : binary file object, seekable
    available : int
        Bytes the file or zip member holds.
    field : str
        The capture field it holds (``topk`` gets the Top-K shape rules).
    source : str
        Names the file in error messages.
    """
    version = np.lib.format.read_magic(fh)
    if version not in ((1, 0), (2, 0)):
        raise PageWeaverInputError(f"{source}: unsupported .npy format version {version}")
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read_header(fh)
    if field == "topk":
        check_topk_shape(shape)
    check_elements(shape, f"{source} {field}")
    declared = math.prod(shape) * dtype.itemsize
    if declared > available - fh.tell():
        raise PageWeaverInputError(
            f"{source}: {field} declares {declared:,} bytes of data but the file holds "
            f"{max(available - fh.tell(), 0):,}")
    fh.seek(0)
    return np.lib.format.read_array(fh, allow_pickle=False)


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """The fields of an ``.npz`` capture (one ``<field>.npy`` member each)."""
    with zipfile.ZipFile(path) as archive:
        fields = {}
        for member in zip_members(archive, str(path)):
            field = member.filename.removesuffix(".npy")
            if field == member.filename:
                raise PageWeaverInputError(
                    f"{path} has a member {member.filename!r} that is not an .npy array")
            with archive.open(member) as fh:
                fields[field] = read_npy(fh, member.file_size, field, str(path))
        return fields


def read_single_npy(path: Path) -> np.ndarray:
    """The Top-K array of a bare ``.npy`` capture."""
    with path.open("rb") as fh:
        return read_npy(fh, path.stat().st_size, "topk", str(path))


def read_pt(path: Path):
    """The object of a ``.pt`` file, loaded with ``weights_only=True`` (no pickled code)."""
    import torch

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            zip_members(archive, str(path))
    try:
        with warnings.catch_warnings():  # torch's deprecation notes would add lines
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types, with several lines of advice
        raise PageWeaverInputError(
            f"{path} is not a readable torch file of tensors ({type(exc).__name__} from "
            "torch.load with weights_only=True)") from None


def write_atomically(path, suffix: str, write, protect=()) -> Path:
    """Write a new file at exactly ``path``, through a temporary file and a rename.

    Parameters
    ----------
    path : str or pathlib.Path
        Where the file goes; it must end in ``suffix`` and must not be a folder.
    suffix : str
        The format's suffix, e.g. ``".npy"``.
    write : callable ``(binary file object) -> None``
        Writes the content.
    protect : iterable of path
        Files that must not be overwritten (the inputs being read).

    Returns
    -------
    pathlib.Path
        The absolute path written.
    """
    path = Path(path)
    if path.suffix.lower() != suffix:
        raise PageWeaverInputError(f"output {path} must end in {suffix}")
    if path.is_dir():
        raise PageWeaverInputError(f"output {path} is a folder, not a {suffix} file name")
    target = path.resolve()
    if not target.parent.is_dir():
        raise PageWeaverInputError(f"output {path}: the folder {target.parent} does not exist")
    for other in map(Path, protect):
        if other.resolve() == target or (path.exists() and other.exists()
                                         and os.path.samefile(other, path)):
            raise PageWeaverInputError(f"output {path} is the input file {other}; "
                                       "choose another name")
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        with temp.open("xb") as fh:  # same folder (a rename, not a copy); mode from umask
            write(fh)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target
