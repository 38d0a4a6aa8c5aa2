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
    import torch

    spin = get_kernel("bench_spin.cu", "spin_ns", "Q")
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush:
            cache.zero_()
        launch(spin, (1, 1), (32, 1, 1), int(spin_us * 1000))
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(1000.0 * s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))
    q = len(times)
    return {
        "median_us": statistics.median(times),
        "p10_us": times[q // 10],
        "p90_us": times[(9 * q) // 10],
        "min_us": times[0],
        "reps": reps,
        "l2_flushed": flush,
    }
