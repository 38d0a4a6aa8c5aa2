"""Named, calibrated workloads (presets) and their measured reuse statistics.

Each preset is a fixed call of one generator; :func:`make_preset` builds it for a seed and
:func:`preset_statistics` measures it (original order and greedy W64/W128, g = 8, B = 512),
so notebooks, the CLI and ``docs/presets.md`` all quote numbers computed by the same code.

``cap64k`` copies the shape of the paper's L43/r1 capture (arXiv:2610.11201, §5.4): 15,272
queries after a 49,152-token prefix, P = 128, Top16, so 504 pages of context. Its generator
parameters were tuned until two summary statistics matched the paper's: ρ_Q = 2.39 in
original order (244,352 edges / 102,429 union visits) and -12.70 % union visits at W128. It
is a synthetic stand-in, not model data: only those two numbers were matched.

Run ``python -m pageweaver_edu.workloads`` to print the statistics table as Markdown.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.capture import Capture
from ..core.grouping import Grouping
from ..core.inputs import PageWeaverInputError
from ..core.union_metrics import union_stats
from ..core.windows import window_table
from ..regroup.bitmap import regroup_table
from .generators import capture_like_workload, interleaved_workload

#: Generator parameters shared by the 64K-shaped capture-like presets (found by measuring).
CAP64K_SHAPE = {"topic_pages": 9, "drift": 0.7, "run_mean": 2.2, "revisit": 0.9, "memory": 4}

#: name -> (generator, keyword arguments); the seed is added by :func:`make_preset`.
PRESET_PARAMS: dict[str, tuple[Callable[..., Capture], dict]] = {
    "cap64k": (
        capture_like_workload,
        {"n": 15_272, "prefix_tokens": 49_152, "page_size": 128, "k": 16, **CAP64K_SHAPE},
    ),
    "cap16k-high-overlap": (
        capture_like_workload,
        {
            "n": 4_096,
            "prefix_tokens": 12_288,
            "page_size": 128,
            "k": 16,
            "topic_pages": 13,
            "drift": 0.6,
            "run_mean": 6.0,
            "revisit": 0.8,
            "memory": 4,
        },
    ),
    "interleaved-32k": (interleaved_workload, {"n": 8_192, "num_pages": 256, "k": 16}),
    "interleaved-64k": (interleaved_workload, {"n": 15_272, "num_pages": 512, "k": 16}),
    "beyond-capacity": (
        capture_like_workload,
        {"n": 8_192, "prefix_tokens": 73_728, "page_size": 128, "k": 16, **CAP64K_SHAPE},
    ),
}

#: name -> one-line description.
PRESETS: dict[str, str] = {
    "cap64k": "L43/r1-shaped capture: 15,272 queries after a 49,152-token prefix, P=128, Top16, "
    "504 pages; calibrated to rho ~ 2.4 and ~ -12.7% union visits at W128",
    "cap16k-high-overlap": "16K high-overlap control: 4,096 queries after a 12,288-token "
    "prefix, 128 pages, long topic runs; rho ~ 4",
    "interleaved-32k": "interleaved supports, 32K tokens (256 pages), 8 communities of 32 "
    "pages, 8,192 queries; query i uses community i % 8",
    "interleaved-64k": "interleaved supports, 64K tokens (512 pages), 16 communities of 32 "
    "pages, 15,272 queries; query i uses community i % 16",
    "beyond-capacity": "cap64k-like chunk of 8,192 queries after a 73,728-token prefix "
    "(81,920 tokens, 640 pages > B = 512): the capacity fallback keeps the identity order",
}


def preset_names() -> list[str]:
    """Names accepted by :func:`make_preset`, in documentation order."""
    return list(PRESETS)


def make_preset(name: str, seed: int = 0) -> Capture:
    """Build a named workload.

    Parameters
    ----------
    name : str
        One of :func:`preset_names`.
    seed : int
        Seed of the generator; the same (name, seed) always gives the same capture.

    Returns
    -------
    Capture
        ``topk`` int64 ``[N, 16]`` and, for the causal presets, ``lengths`` and
        ``causal_pos`` int64 ``[N]``.

    Raises
    ------
    PageWeaverInputError
        Unknown name (the message lists the valid ones) or an invalid seed.
    """
    if name not in PRESET_PARAMS:
        raise PageWeaverInputError(
            f"unknown workload preset {name!r}; valid presets: {', '.join(preset_names())}"
        )
    generator, kwargs = PRESET_PARAMS[name]
    return generator(**kwargs, seed=seed)


def preset_statistics(
    name: str, seed: int = 0, windows=(64, 128), group: int = 8, capacity: int = 512
) -> dict:
    """Measure a preset: edges, union visits, ρ_Q and C4 in original and regrouped order.

    Parameters
    ----------
    name : str
        A preset name, or pass a :class:`Capture` to measure any capture.
    seed : int
    windows : sequence of int
        Greedy regroup windows W (multiples of ``group``).
    group : int
        g.
    capacity : int
        B, bitmap capacity in pages.

    Returns
    -------
    dict
        ``name``, ``queries`` (N), ``k`` (K), ``pages`` (largest page id + 1), ``edges``,
        ``fallback`` (True when some chunk keeps the identity order because it needs more
        than B pages), and
        ``union_visits``, ``rho``, ``c4`` (dicts keyed ``"original"``, ``"W64"``, ...)
        plus ``change_pct`` (union-visit change in % per window).
    """
    cap = name if isinstance(name, Capture) else make_preset(name, seed)
    label = "capture" if isinstance(name, Capture) else name
    orig = union_stats(cap.topk, request_offsets=cap.request_offsets, group=group)
    runs = {"original": (orig, None)}
    table = window_table(cap.topk, Grouping(group, group, capacity), **cap.regroup_kwargs())
    for w in windows:
        perm = regroup_table(table.for_window(w))
        runs[f"W{w}"] = (union_stats(cap.topk, perm, cap.request_offsets, group), perm)
    base = orig.union_visits
    return {
        "name": label,
        "queries": cap.num_queries,
        "k": int(cap.topk.shape[1]),
        "pages": int(cap.topk.max(initial=-1)) + 1,
        "edges": orig.edges,
        "fallback": bool(table.fallback.any()),
        "union_visits": {key: s.union_visits for key, (s, _) in runs.items()},
        "change_pct": {
            key: 100.0 * (s.union_visits - base) / base if base else 0.0
            for key, (s, _) in runs.items()
            if key != "original"
        },
        "rho": {key: s.rho for key, (s, _) in runs.items()},
        "c4": {key: s.c4 for key, (s, _) in runs.items()},
    }


def statistics_markdown(names=None, seed: int = 0) -> str:
    """The preset statistics (W64 and W128) as a Markdown table, one row per preset."""
    head = (
        "| preset | N | K | pages | edges | union visits original | W64 | W128 "
        "| ρ original | ρ W128 | C4 original | C4 W128 |\n"
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    )
    lines = [head]
    for name in names or preset_names():
        s = preset_statistics(name, seed)
        uv, pct = s["union_visits"], s["change_pct"]
        lines.append(
            f"| `{name}` | {s['queries']:,} | {s['k']} | {s['pages']} | {s['edges']:,} "
            f"| {uv['original']:,} | {uv['W64']:,} ({pct['W64']:+.2f}%) "
            f"| {uv['W128']:,} ({pct['W128']:+.2f}%) | {s['rho']['original']:.3f} "
            f"| {s['rho']['W128']:.3f} | {s['c4']['original']:,} | {s['c4']['W128']:,} |"
        )
    return "\n".join(lines)

