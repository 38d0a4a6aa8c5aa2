"""Recorded GPU benchmark results (``benchmarks/results/*.json``), readable without a GPU.

Notebooks show these on CPU-only machines in place of a live run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ENV_RESULTS = "PAGEWEAVER_RESULTS_DIR"


def results_dirs() -> list[Path]:
    """Folders searched, in order: $PAGEWEAVER_RESULTS_DIR, the checkout, ./ and ../."""
    dirs = []
    if os.environ.get(ENV_RESULTS):
        dirs.append(Path(os.environ[ENV_RESULTS]))
    dirs.append(Path(__file__).resolve().parents[2] / "benchmarks" / "results")
    cwd = Path.cwd()
    dirs += [cwd / "benchmarks" / "results", cwd.parent / "benchmarks" / "results"]
    return dirs


def recorded_results(name: str = "gpu_regroup_h200") -> dict:
    """Load ``benchmarks/results/<name>.json``.

    Parameters
    ----------
    name : str
        File stem (``.json`` optional), e.g. ``"gpu_regroup_h200"``.

    Returns
    -------
    dict
        ``{"device", "date", "commit", "driver", "cuda", "workload", "results": [...]}``.
    """
    stem = name[:-5] if name.endswith(".json") else name
    for folder in results_dirs():
        path = folder / f"{stem}.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    searched = ", ".join(str(d) for d in results_dirs())
    raise FileNotFoundError(f"no recorded result {stem}.json in: {searched}")


def result_medians(record: dict) -> dict[str, float]:
    """``{name: median_us}`` of a loaded record."""
    return {r["name"]: float(r["median_us"]) for r in record.get("results", [])}
