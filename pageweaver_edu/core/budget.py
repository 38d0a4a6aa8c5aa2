"""The work a regroup will do, counted before it starts, and its limit.

The bitmap regroup advances every window of a table together: each of its rounds (one per
slot of the longest window) reads the bitmap lanes of every row still unassigned, and a
fixed cost per round adds to it. Measured on two CPU cores, its time is close to
``rows · lanes · (width + 1024)`` units of about 2.4 ns, where ``rows`` are the rows it
regroups, ``lanes`` the uint64 lanes of their bitmaps and ``width`` the longest window. A
command adds the units of all its regroups (``pageweaver report`` regroups at up to ten W)
and refuses, before the first one, when they pass :data:`MAX_REGROUP_WORK` (about 20 s).

Beside the regroups, every ordering a command measures passes over the N·K entries again
(canonical rows, the executed order, the distinct pages per group: about 0.3 µs per entry and
pass on two busy cores); :func:`check_scan_work` bounds entries × passes by
:data:`MAX_SCAN_WORK`.
"""

from __future__ import annotations

import numpy as np

from .bitmap import bitmap_words
from .inputs import PageWeaverInputError
from .windows import WindowTable

MAX_REGROUP_WORK = 1 << 33  #: units of ``rows · lanes · (width + 1024)``, summed over a command
ROUND_UNITS = 1024  #: the fixed cost of one round, in units of one row-lane
MAX_SCAN_WORK = 1 << 26  #: Top-K entries × passes over them, summed over a command


def regroup_work(table: WindowTable, windows) -> int:
    """Units of work of regrouping ``table``'s rows at each W of ``windows``.

    Parameters
    ----------
    table : WindowTable
        Rows, chunks and capacity fallback (its own W does not matter).
    windows : iterable of int
        The W of every regroup the caller will run.

    Returns
    -------
    int
        ``Σ_W rows · lanes · (min(W, longest regrouped chunk) + 1024)``; 0 when every chunk
        falls back.
    """
    chunks = table.regrouped_chunks
    if len(chunks) == 0:
        return 0
    lengths = chunks[:, 1] - chunks[:, 0]
    rows, longest = int(lengths.sum()), int(lengths.max())
    # row j of the regrouped rows (counted across chunks) is chunk c's row start_c + j - first_c
    first = np.cumsum(lengths) - lengths
    regrouped = np.repeat(chunks[:, 0] - first, lengths) + np.arange(rows)
    largest = int(table.canonical[regrouped].max(initial=0))
    lanes = -(-bitmap_words(largest + 1) // 2)
    return sum(rows * lanes * (min(int(w), longest) + ROUND_UNITS) for w in windows)


def check_regroup_work(table: WindowTable, windows, what: str = "the regroup") -> None:
    """Refuse, before any bitmap is built, work past :data:`MAX_REGROUP_WORK`."""
    work = regroup_work(table, windows)
    if work > MAX_REGROUP_WORK:
        raise PageWeaverInputError(
            f"{what} would take {work:,} units of work (rows x bitmap lanes x (window + "
            f"{ROUND_UNITS})), more than the limit {MAX_REGROUP_WORK:,}; use fewer or smaller "
            "windows, a lower --capacity, or split the capture")


def check_scan_work(entries: int, passes: int, what: str) -> None:
    """Refuse ``passes`` passes over ``entries`` Top-K entries past :data:`MAX_SCAN_WORK`.

    Parameters
    ----------
    entries : int
        N·K of the capture.
    passes : int
        Orderings measured, plus the passes that build the tables.
    what : str
        The command, for the message.
    """
    if entries * passes > MAX_SCAN_WORK:
        raise PageWeaverInputError(
            f"{what} would pass {passes} times over {entries:,} Top-K entries, more than the "
            f"limit {MAX_SCAN_WORK:,} entries x passes; use fewer windows or split the capture")
