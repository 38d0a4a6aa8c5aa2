"""Real kernel code in the chapters: excerpts pulled from ``kernels/`` by marked region.

A region in a kernel source is delimited by two comment lines::

    // region: delta-loop
    ... the lines a chapter shows ...
    // endregion: delta-loop

:func:`kernel_excerpt` returns those lines (markers dropped, common indentation removed) with
the file name and line numbers, so a chapter always shows the code that is compiled and never
a copy that drifts. A region name appears once per file; regions do not nest.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from ..gpu.loader import kernel_dir

_BEGIN = re.compile(r"^\s*//\s*region:\s*(?P<name>[\w.-]+)\s*$")
_END = re.compile(r"^\s*//\s*endregion:\s*(?P<name>[\w.-]+)\s*$")


@dataclass(frozen=True)
class KernelExcerpt:
    """Lines ``first`` .. ``last`` (1-based, inclusive) of ``kernels/<file>``.

    Attributes
    ----------
    file : str
        Source file name inside ``kernels/``, e.g. ``"regroup.cu"``.
    region : str
        The region's name.
    first, last : int
        Line numbers of the excerpt's first and last line in the file.
    code : str
        The lines, markers dropped and common indentation removed.
    """

    file: str
    region: str
    first: int
    last: int
    code: str

    def header(self) -> str:
        """One line naming where the excerpt comes from."""
        return f"kernels/{self.file}, lines {self.first}-{self.last} (region {self.region!r})"

    def _repr_markdown_(self) -> str:
        return f"`{self.header()}`\n\n```cuda\n{self.code}\n```"

    def __str__(self) -> str:
        return f"// {self.header()}\n{self.code}"


def _source_lines(file: str) -> list[str]:
    path = kernel_dir() / file
    if not path.is_file():
        raise FileNotFoundError(f"no kernel source kernels/{file}")
    return path.read_text(encoding="utf-8").splitlines()


def kernel_regions(file: str) -> dict[str, tuple[int, int]]:
    """The marked regions of ``kernels/<file>``.

    Returns
    -------
    dict of str to (int, int)
        Region name -> (first, last) line number of its body (1-based, inclusive).

    Raises
    ------
    ValueError
        A region is opened twice, closed without being opened, nested, or never closed.
    """
    lines = _source_lines(file)
    regions: dict[str, tuple[int, int]] = {}
    open_name, open_line = None, 0
    for number, line in enumerate(lines, start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            name = begin["name"]
            if open_name is not None:
                raise ValueError(f"kernels/{file}:{number}: region {name!r} opens inside "
                                 f"{open_name!r}")
            if name in regions:
                raise ValueError(f"kernels/{file}:{number}: region {name!r} appears twice")
            open_name, open_line = name, number
        elif end:
            if end["name"] != open_name:
                raise ValueError(f"kernels/{file}:{number}: endregion {end['name']!r} "
                                 f"without its region")
            regions[open_name] = (open_line + 1, number - 1)
            open_name = None
    if open_name is not None:
        raise ValueError(f"kernels/{file}:{open_line}: region {open_name!r} is never closed")
    return regions


def kernel_excerpt(file: str, region: str) -> KernelExcerpt:
    """The marked region ``region`` of ``kernels/<file>``, ready to display in a notebook.

    Parameters
    ----------
    file : str
        Source file name inside ``kernels/``.
    region : str
        Region name as written after ``// region:``.

    Returns
    -------
    KernelExcerpt
        Shown as a highlighted CUDA block (``_repr_markdown_``) with its file and lines.

    Raises
    ------
    KeyError
        The file has no such region (the message lists the ones it has).
    """
    regions = kernel_regions(file)
    if region not in regions:
        raise KeyError(f"kernels/{file} has no region {region!r}; it has {sorted(regions)}")
    first, last = regions[region]
    lines = _source_lines(file)[first - 1:last]
    return KernelExcerpt(file, region, first, last, textwrap.dedent("\n".join(lines)))
