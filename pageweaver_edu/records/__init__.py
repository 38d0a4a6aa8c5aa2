"""Recorded benchmark results (``benchmarks/results/*.json``): reading them and stamping new ones.

A result file holds ``{"device", "date", "commit", "driver", "cuda", "workload", "results":
[{"name", "median_us", ...}]}``. :mod:`.files` finds and reads them (the notebooks show them
where no GPU is present); :mod:`.environment` describes the machine and commit of a new run.
"""

from .environment import cpu_model, result_environment, source_commit
from .files import (
    device_tag,
    latest_record,
    list_records,
    record_header,
    recorded_results,
    result_medians,
    results_dirs,
)

__all__ = [
    "cpu_model",
    "device_tag",
    "latest_record",
    "list_records",
    "record_header",
    "recorded_results",
    "result_environment",
    "result_medians",
    "results_dirs",
    "source_commit",
]
