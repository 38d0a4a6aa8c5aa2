"""The widgets' latency as a reader feels it, from the browser benchmark's recorded file.

``benchmarks/bench_widget_latency.py`` drives JupyterLab in headless Chromium, moves every
control of every widget chapter and times each move from the input event until the figures stop
changing (``widget_latency_<machine>.json``). A chapter prints its own rows with
:func:`latency_table`; the Python side of an update is a small part of that time (the browser
redraws the figures), so no chapter times its update functions in Python.
"""

from __future__ import annotations

from pageweaver_edu.records import list_records
from pageweaver_edu.records.files import ROOT


def latency_record(root: str = str(ROOT)) -> dict:
    """The newest recorded browser latency file.

    Returns
    -------
    dict
        ``{"device", "cores", "date", "commit", "chromium", "moves", "target_ms",
        "results": [{"chapter", "control", "median_ms", "min_ms", "max_ms", ...}]}``.
    """
    records = list_records(root, "widget_latency_*")
    if not records:
        raise FileNotFoundError("no widget_latency_<machine>.json under benchmarks/results/")
    return max(records, key=lambda r: str(r.get("date", "")))


def latency_table(chapter: str, record: dict | None = None) -> str:
    """One chapter's controls: median, fastest and slowest move in ms, against the target.

    Parameters
    ----------
    chapter : str
        Two-digit chapter number, e.g. ``"03"``.
    record : dict, optional
        A loaded latency file (default: :func:`latency_record`).

    Returns
    -------
    str
        The run's header (machine, date, commit) and one line per control.
    """
    rec = latency_record() if record is None else record
    rows = [r for r in rec["results"] if r["chapter"] == chapter]
    if not rows:
        raise ValueError(f"the latency file of {rec['date'][:10]} has no control of chapter "
                         f"{chapter}")
    target = float(rec["target_ms"])
    lines = [f"browser, input to settled figure: {rec['device']} ({rec['cores']} cores), "
             f"Chromium {rec['chromium']}, {rec['date'][:10]}, commit {rec['commit']}, "
             f"{rec['moves']} moves per control",
             f"{'control':<34} {'median ms':>10} {'min':>7} {'max':>7}  <= {target:.0f} ms"]
    for r in rows:
        ok = "yes" if r["median_ms"] <= target else "no"
        lines.append(f"{r['control']:<34} {r['median_ms']:>10.0f} {r['min_ms']:>7.0f} "
                     f"{r['max_ms']:>7.0f}  {ok}")
    return "\n".join(lines)
