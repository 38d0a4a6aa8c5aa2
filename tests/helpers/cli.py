"""The ``pageweaver`` command run in this process, and what a user error must look like."""

from __future__ import annotations

import io
import warnings
from contextlib import redirect_stderr, redirect_stdout

from pageweaver_edu.cli import main


def run_main(*args) -> tuple[int, str, str]:
    """Run ``pageweaver ARGS``; returns (exit status, stdout, stderr).

    Warnings raised meanwhile are appended to stderr, one line each, as a user would see them.
    An exception that escapes :func:`main` (a traceback for the user) propagates.
    """
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse
            code = exc.code
    shown = err.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in seen)
    return code, out.getvalue(), shown


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    """Exit status 2, nothing on stdout, exactly one ``pageweaver...: error:`` line on stderr
    (no traceback, no multi-line message), naming every needle."""
    assert code == 2, (code, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pageweaver") and ": error: " in lines[0], err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
