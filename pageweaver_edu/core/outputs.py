"""Writing an output file without losing data: the path rules and the atomic write.

An output is written at exactly the path asked for (through a symlink, at the file it names),
through a temporary file in the same folder and :func:`os.replace`. The only thing it may
replace is a regular file of the user's own, whose permission bits it keeps; a folder, a
device, a pipe, a socket, someone else's file, a symlink loop, an empty or over-long name and
an input being read are refused before anything is written. A write that fails (a full disk)
removes the temporary file and names the file it was writing. Every refusal is one
:class:`~pageweaver_edu.core.inputs.PageWeaverInputError` line.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from .inputs import PageWeaverInputError


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _resolved(path: Path) -> Path | None:
    """``path`` with its symlinks followed; None for a loop (it cannot be the output)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def check_output(path, suffixes: tuple[str, ...], protect=()) -> tuple[Path, int | None]:
    """Where an output goes, and the permission bits of the file it replaces.

    Parameters
    ----------
    path : str or pathlib.Path
        The output path as given; it must end in one of ``suffixes``.
    suffixes : tuple of str
        Accepted suffixes, lower case (``(".npy",)``).
    protect : iterable of path
        Inputs being read, which the output must not be.

    Returns
    -------
    target : pathlib.Path
        The absolute path to write (symlinks followed).
    mode : int or None
        Permission bits of the regular file at ``target``; None when there is none.
    """
    if str(path) == "":
        raise PageWeaverInputError("the output path is empty")
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise PageWeaverInputError(f"output {path} must end in {' or '.join(suffixes)}")
    try:
        target = path.resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before 3.13)
        raise PageWeaverInputError(f"output {path} cannot be resolved: {exc}") from None
    if not target.parent.is_dir():
        raise PageWeaverInputError(f"output {path}: the folder {target.parent} does not exist")
    if len(os.fsencode(target.name)) > _name_max(target.parent):
        raise PageWeaverInputError(f"output {path}: the file name is longer than the "
                                   f"{_name_max(target.parent)} bytes the folder allows")
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise PageWeaverInputError(f"output {path} cannot be examined: {exc.strerror}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        what = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise PageWeaverInputError(f"output {path} is {what}; refusing to replace it")
    if info is not None and info.st_uid != os.geteuid():
        raise PageWeaverInputError(f"output {path} belongs to another user; refusing to "
                                   "replace it")
    for other in map(Path, protect):
        if _resolved(other) == target or (info is not None and other.is_file()
                                          and os.path.samefile(other, target)):
            raise PageWeaverInputError(f"output {path} is the input file {other}; "
                                       "choose another name")
    return target, None if info is None else stat.S_IMODE(info.st_mode)


def write_atomically(path, suffixes: str | tuple[str, ...], write, protect=()) -> Path:
    """Write a new file at exactly ``path``, through a temporary file and a rename.

    Parameters
    ----------
    path : str or pathlib.Path
        Where the file goes (rules: :func:`check_output`).
    suffixes : str or tuple of str
        The format's suffix(es), e.g. ``".npy"``.
    write : callable ``(binary file object) -> None``
        Writes the content.
    protect : iterable of path
        Files that must not be overwritten (the inputs being read).

    Returns
    -------
    pathlib.Path
        The absolute path written.
    """
    suffixes = (suffixes,) if isinstance(suffixes, str) else tuple(suffixes)
    target, mode = check_output(path, suffixes, protect)
    # a short name of its own: ``.<name>.<token>.tmp`` would pass NAME_MAX for a long name
    temp = target.with_name(f".pageweaver-{secrets.token_hex(6)}.tmp")
    try:
        with temp.open("xb") as fh:  # same folder (a rename, not a copy); mode from umask
            write(fh)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise PageWeaverInputError(f"could not write {target}: "
                                   f"{exc.strerror or exc}") from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target
