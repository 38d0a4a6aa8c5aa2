"""Progress bars for the command line and the long benchmark loops (tqdm on stderr).

A bar appears only where a person watches and waits: on a terminal, and only once a loop has
run for :data:`DELAY_S` seconds, so short runs print nothing. It never appears when the caller
asks for quiet (``--json``) and never goes to stdout. ``PAGEWEAVER_PROGRESS`` overrides the
terminal test: ``0`` never shows a bar, ``1`` always does (from the first step, also into a
pipe or a CI log).
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

#: Seconds a loop runs before its bar appears (tqdm's ``delay``).
DELAY_S = 2.0
ENV_PROGRESS = "PAGEWEAVER_PROGRESS"


def progress(iterable=None, *, desc: str, total: int | None = None, quiet: bool = False,
             stream=None, unit: str = "step"):
    """A tqdm bar over ``iterable`` (or a manual one with ``total``), on stderr.

    Parameters
    ----------
    iterable : iterable, optional
        What to loop over; without it, call ``.update()`` on the returned bar.
    desc : str
        Label in front of the bar.
    total : int, optional
        Steps, when ``iterable`` has no length.
    quiet : bool
        True under ``--json`` (and anywhere else a bar must not show).
    stream : file, optional
        Where the bar goes (default ``sys.stderr``).
    unit : str
        What one step is.

    Returns
    -------
    tqdm.tqdm
        Disabled (a plain pass-through) where no bar should show.
    """
    stream = sys.stderr if stream is None else stream
    forced = os.environ.get(ENV_PROGRESS, "").strip()
    if quiet or forced == "0":
        disable = True
    elif forced == "1":
        disable = False
    else:
        disable = not (hasattr(stream, "isatty") and stream.isatty())
    return tqdm(iterable, desc=desc, total=total, file=stream, disable=disable, unit=unit,
                delay=0.0 if forced == "1" else DELAY_S, leave=False, dynamic_ncols=True)
