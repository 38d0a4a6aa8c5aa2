"""GPU-bound timing of short launches (CUDA events; the stream is kept busy ahead).

PyCUDA has no graph API and its launch path costs microseconds on the host, so a timed
region that starts while the GPU is idle would measure the host. As triton's ``do_bench``
does with its cache-flush kernel, every repetition first enqueues work that keeps the GPU
busy — an L2 flush (a 256 MiB torch fill) and a ``spin_ns`` kernel — and only then the start
event, the launches and the end event. By the time the GPU reaches the start event all of
them are queued, so the interval holds device time only.
"""

from __future__ import annotations

import statistics

from .loader import get_kernel, launch


def _intervals(fns, reps: int, warmup: int, spin_us: float, flush: bool) -> list[list[float]]:
    """Device times (µs) of each of ``fns``, interleaved: repetition i times fns[0], fns[1], ...
    one after the other, each behind its own L2 flush and spin kernel."""
    import torch

    spin = get_kernel("bench_spin.cu", "spin_ns", "Q")
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        for fn in fns:
            fn()
    torch.cuda.synchronize()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(reps)] for _ in fns]
    for i in range(reps):
        for fn, ev in zip(fns, events, strict=True):
            if flush:
                cache.zero_()
            launch(spin, (1, 1), (32, 1, 1), int(spin_us * 1000))
            ev[i][0].record()
            fn()
            ev[i][1].record()
    torch.cuda.synchronize()
    return [[1000.0 * s.elapsed_time(e) for s, e in ev] for ev in events]


def _spread(times: list[float]) -> dict:
    t = sorted(times)
    q = len(t)
    return {"median_us": statistics.median(t), "p10_us": t[q // 10], "p90_us": t[(9 * q) // 10],
            "min_us": t[0]}


def bench_gpu(fn, reps: int = 200, warmup: int = 20, spin_us: float = 300.0,
              flush: bool = True) -> dict:
    """Median (and spread) of the device time of ``fn()`` in microseconds.

    Every repetition runs behind a 256 MiB L2 flush and a spin kernel, so that the host's
    launch path stays out of the CUDA-event interval.

    Parameters
    ----------
    fn : callable
        Enqueues the GPU work to time (no synchronization inside).
    reps, warmup : int
        Timed and untimed calls.
    spin_us : float
        Length of the spin kernel before each timed call.
    flush : bool
        Flush L2 before each timed call.

    Returns
    -------
    dict
        ``median_us``, ``p10_us``, ``p90_us``, ``min_us``, ``reps``, ``l2_flushed``.
    """
    (times,) = _intervals([fn], reps, warmup, spin_us, flush)
    return {**_spread(times), "reps": reps, "l2_flushed": flush}


def bench_gpu_difference(fn_a, fn_b, reps: int = 200, warmup: int = 20, spin_us: float = 300.0,
                         flush: bool = True) -> dict:
    """The device time of ``fn_b()`` minus that of ``fn_a()``, in microseconds, from pairs.

    Repetition i times ``fn_a`` and then ``fn_b`` (each as :func:`bench_gpu` does); the
    statistics are those of the ``reps`` differences b_i - a_i. A small difference of two
    long calls (C_online = T_online - T_fixed on a multi-millisecond attention call) is then
    not drowned by the drift of the clock between two separately timed rows.

    Parameters
    ----------
    fn_a, fn_b : callable
        Enqueue the GPU work to compare.
    reps, warmup, spin_us, flush
        As :func:`bench_gpu`.

    Returns
    -------
    dict
        ``median_us``, ``p10_us``, ``p90_us``, ``min_us`` of the differences, ``a_median_us``,
        ``b_median_us``, ``reps``, ``l2_flushed``.
    """
    a, b = _intervals([fn_a, fn_b], reps, warmup, spin_us, flush)
    return {**_spread([y - x for x, y in zip(a, b, strict=True)]),
            "a_median_us": statistics.median(a), "b_median_us": statistics.median(b),
            "reps": reps, "l2_flushed": flush}
