"""What one serving call costs the host, eager vs replayed from a CUDA graph (recorded).

:func:`show_serving_overhead` prints the newest ``benchmarks/results/serving_overhead_*.json``
(written by ``benchmarks/bench_serving_overhead.py``): for cap16k-high-overlap, 1 and 8 KV
heads, the host microseconds of one :func:`pageweaver_edu.gpu.sparse_union_attention` call on
torch's default stream, on another stream, and of one ``graph.replay()`` of the captured call,
beside the wall time per call of a back-to-back loop.
"""

from __future__ import annotations

from ..records import list_records
from ..records.files import ROOT, record_header

PATTERN = "serving_overhead_*"
WAYS = {"eager_default": "eager, default stream", "eager_side": "eager, another stream",
        "graph_replay": "graph replay"}


def latest_serving_record(root: str = str(ROOT)) -> dict | None:
    """The newest recorded serving-overhead file under ``root`` (by its date), or None."""
    files = list_records(root, PATTERN)
    return max(files, key=lambda f: str(f.get("date", ""))) if files else None


def serving_table(record: dict) -> str:
    """The record's rows: way, KV heads, host µs per call (median, p10–p90), wall µs per call,
    and the eager / replay ratio of the host medians per KV-head count."""
    rows = {r["name"]: r for r in record["results"]}
    lines = [f"{'way':<24}{'H':>3}{'host µs/call':>14}{'p10–p90':>16}{'wall µs/call':>14}"]
    for heads in sorted({r["kv_heads"] for r in rows.values()}):
        for key, label in WAYS.items():
            r = rows.get(f"{key}_h{heads}")
            if r is None:
                continue
            spread = f"{r['p10_us']:.1f}–{r['p90_us']:.1f}"
            lines.append(f"{label:<24}{heads:>3}{r['median_us']:>14.1f}{spread:>16}"
                         f"{r['wall_us']:>14.1f}")
        eager, replay = rows.get(f"eager_default_h{heads}"), rows.get(f"graph_replay_h{heads}")
        if eager and replay:
            lines.append(f"{'':<24}{heads:>3}  host time: eager / replay = "
                         f"{eager['median_us'] / replay['median_us']:.1f}x")
    return "\n".join(lines)


def show_serving_overhead(root: str = str(ROOT)) -> None:
    """Print the newest recorded file's header (device, date, driver, CUDA, commit) and its
    table, or that none is recorded yet."""
    record = latest_serving_record(root)
    if record is None:
        print(f"no benchmarks/results/{PATTERN}.json recorded yet "
              "(python3 benchmarks/bench_serving_overhead.py on a GPU)")
        return
    print(f"{record['path']}: {record['workload']}, W{record['window']}, "
          f"{record['cache'].upper()} cache")
    print(record_header(record))
    print(serving_table(record))
