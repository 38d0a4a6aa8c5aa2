"""Seeded synthetic Top-K workloads (:mod:`.generators`) and named presets (:mod:`.presets`).

``python -m pageweaver_edu.workloads`` prints the preset statistics as Markdown.
"""

from .generators import (
    capture_like_workload,
    distinct_rows,
    interleaved_workload,
    uniform_workload,
)
from .presets import (
    PRESET_PARAMS,
    PRESETS,
    make_preset,
    preset_names,
    preset_statistics,
    statistics_markdown,
)

__all__ = [
    "PRESETS",
    "PRESET_PARAMS",
    "capture_like_workload",
    "distinct_rows",
    "interleaved_workload",
    "make_preset",
    "preset_names",
    "preset_statistics",
    "statistics_markdown",
    "uniform_workload",
]
