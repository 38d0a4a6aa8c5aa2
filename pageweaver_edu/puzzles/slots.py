"""Puzzle 5: the slot protocol of Figure 3 — one loader, two consumer CTAs, two KV slots,
event ① (full: the stage is in the slot) and event ② (empty: both CTAs are done with it), each
waited on with the parity of the phase it needs.

The CTAs are two consumer warps of one block here (the real kernel's cluster of two CTAs
shares the same events through distributed shared memory). The harness fills every slot
slowly and reads it slowly, so a wait that passes too early shows up as a read of the wrong
stage (the hazard), and a wait for a phase that never completes shows up as a stuck wait (on
the CPU, the simulator's deadlock report; on a GPU, a wait that gave up after 1 s). Each CTA
must read every stage, in order, exactly once (chapter 06's simulator,
:func:`pageweaver_edu.replay.pipeline.simulate`, replays the same protocol with durations).
"""

from __future__ import annotations

import numpy as np

from .checks import TODO, Case, Puzzle
from .engine import Kernel, PuzzleLaunchError

LOG = 256  # records kept of the protocol's events

RING_PRELUDE = f"""\
#define PW_SLOTS 2
#define PW_TILE 32
#define PW_LOG {LOG}
struct Ring {{
  uint64_t full[PW_SLOTS];   // event 1: stage in slot s (1 arrival: the loader's copy)
  uint64_t empty[PW_SLOTS];  // event 2: slot s free again (2 arrivals: CTA 0 and CTA 1)
  int tile[PW_SLOTS][PW_TILE];
  int* log;                  // [0] = records, then (actor, kind, n, s, value) per record
  int* seen;                 // seen[cta * stages + n] = the stage CTA cta found for stage n
  int stages;
  int stuck;
}};
enum {{ EV_WAIT_FULL, EV_LOAD, EV_READ, EV_RELEASE, EV_WAIT_EMPTY, EV_STUCK }};
__device__ void pw_log(Ring& r, int kind, int n, int s, int value) {{
  const int at = atomicAdd(r.log, 1);
  if (at < PW_LOG) {{
    int* e = r.log + 1 + 5 * at;
    e[0] = threadIdx.x / 32; e[1] = kind; e[2] = n; e[3] = s; e[4] = value;
  }}
}}
__device__ void pw_wait(Ring& r, uint64_t* ev, int kind, int n, int s, unsigned parity) {{
  if (*(volatile int*)&r.stuck) return;
  if (!pw_event_wait(ev, parity)) {{  // only on a GPU: the phase never completed
    *(volatile int*)&r.stuck = 1;
    pw_log(r, EV_STUCK, n, s, (kind << 1) | (int)(parity & 1u));
    return;
  }}
  if ((threadIdx.x & 31) == 0) pw_log(r, kind, n, s, (int)(parity & 1u));
}}
// The loader's side: wait for event 2 of slot s, copy stage n into slot s (completes event 1).
__device__ void wait_empty(Ring& r, int n, int s, unsigned parity) {{
  pw_wait(r, &r.empty[s], EV_WAIT_EMPTY, n, s, parity);
}}
__device__ void load_stage(Ring& r, int n, int s) {{
  __nanosleep(4000);  // a slow copy: consumers that do not wait read an old stage
  volatile int* t = r.tile[s];
  for (int i = 0; i < PW_TILE; ++i) t[i] = 1000 * n + i;
  pw_log(r, EV_LOAD, n, s, 0);
  __threadfence_block();
  pw_event_arrive(&r.full[s]);
}}
// A consumer warp's side: wait for event 1 of slot s, read stage n from it, release it (event 2).
__device__ void wait_full(Ring& r, int n, int s, unsigned parity) {{
  pw_wait(r, &r.full[s], EV_WAIT_FULL, n, s, parity);
}}
__device__ void consume_stage(Ring& r, int n, int s) {{
  const int lane = threadIdx.x & 31, cta = threadIdx.x / 32 - 1;
  volatile int* t = r.tile[s];
  const int first = t[lane];
  __nanosleep(4000);  // a slow read: a loader that does not wait overwrites the slot meanwhile
  __syncwarp();
  const int again = t[lane];
  // -2: the slot changed during the read (torn); -1: no stage was ever loaded into it.
  int found = first != again || (first >= 0 && first % 1000 != lane) ? -2
              : (first < 0 ? -1 : first / 1000);
  const int lane0 = __shfl_sync(0xffffffffu, found, 0);
  if (!__all_sync(0xffffffffu, found == lane0)) found = -2;  // lanes saw different stages
  if (lane == 0) {{
    r.seen[cta * r.stages + n] = found;
    pw_log(r, EV_READ, n, s, found);
  }}
}}
__device__ void release(Ring& r, int n, int s) {{
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {{
    pw_log(r, EV_RELEASE, n, s, 0);
    pw_event_arrive(&r.empty[s]);  // one arrival per CTA
  }}
}}
"""

RING_STARTER = f"""\
// Helpers (given): wait_full / wait_empty(r, n, s, parity) wait until the phase of parity
// `parity` of event full[s] / empty[s] has completed; load_stage(r, n, s) copies stage n into
// slot s and completes a phase of full[s]; consume_stage(r, n, s) reads stage n from slot s;
// release(r, n, s) is this CTA's arrival on empty[s]. Stage n uses slot n % PW_SLOTS; a
// fresh event is in phase 0, so a wait for parity 1 passes at once and a wait for parity 0
// waits until the first phase completes.
__device__ void loader(Ring& r, int stages) {{   // runs on one thread
  // {TODO}
}}
__device__ void consumer(Ring& r, int stages) {{ // runs on each consumer warp (CTA 0, CTA 1)
  // {TODO}
}}
"""

RING_HARNESS = """\
__global__ void slot_ring(int stages, int* log, int* seen) {
  __shared__ Ring r;
  if (threadIdx.x == 0) {
    pw_event_init(&r.full[0], 1, "full[0]");
    pw_event_init(&r.full[1], 1, "full[1]");
    pw_event_init(&r.empty[0], 2, "empty[0]");
    pw_event_init(&r.empty[1], 2, "empty[1]");
    for (int s = 0; s < PW_SLOTS; ++s)
      for (int i = 0; i < PW_TILE; ++i) r.tile[s][i] = -1;
    r.log = log; r.seen = seen; r.stages = stages; r.stuck = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) loader(r, stages);
  if (threadIdx.x >= 32) consumer(r, stages);
}
"""
RING = Kernel("slot_ring", (("int", "stages"), ("int*", "log"), ("int*", "seen")),
              prelude=RING_PRELUDE, harness=RING_HARNESS)
ACTORS = ("loader", "CTA 0 ", "CTA 1 ")
LEGEND = "threads 0-31 = warp 0 (the loader: thread 0), warp 1 = CTA 0, warp 2 = CTA 1"


def _ring_cases(rng: np.random.Generator) -> list[Case]:
    random = [Case(f"{n} stages", {"stages": int(n)}) for n in rng.integers(3, 12, size=2)]
    return random + [Case("1 stage", {"stages": 1}), Case("2 stages (no slot reused)",
                                                           {"stages": 2}),
                     Case("6 stages", {"stages": 6})]


def _record(e: np.ndarray) -> str:
    actor, kind, n, s, value = (int(x) for x in e)
    text = {0: f"waited on full[{s}] for parity {value}: passed (stage {n})",
            1: f"loaded stage {n} into slot {s} (event 1 of full[{s}])",
            2: f"read slot {s} for stage {n}: found "
               + ({-1: "nothing loaded yet", -2: "a torn tile"}.get(value, f"stage {value}")),
            3: f"released slot {s} after stage {n} (event 2 of empty[{s}])",
            4: f"waited on empty[{s}] for parity {value}: passed (before stage {n})",
            5: f"waited on {'full' if value >> 1 == 0 else 'empty'}[{s}] for parity {value & 1} "
               f"(stage {n}): never completed"}[kind]
    return f"  {ACTORS[actor] if 0 <= actor < 3 else actor} | {text}"


def _timeline(log: np.ndarray, last: int = 18) -> str:
    count = min(int(log[0]), LOG)
    records = log[1:1 + 5 * count].reshape(count, 5)
    lines = [_record(e) for e in records[-last:]]
    skipped = f"  ... {count - last} earlier events\n" if count > last else ""
    return "the protocol's last events, in order:\n" + skipped + "\n".join(lines)


def _ring_run(launch, case: Case) -> str | None:
    stages = case.data["stages"]
    log = np.zeros(1 + 5 * LOG, np.int32)
    seen = np.full(2 * stages, -7, np.int32)
    stuck = ""
    try:
        launch(1, 96, [stages, log, seen])
    except PuzzleLaunchError as exc:
        if "deadlock" not in str(exc):
            raise
        stuck = f"{exc}\n({LEGEND})"
    count = min(int(log[0]), LOG)
    records = log[1:1 + 5 * count].reshape(count, 5)
    if not stuck and np.any(records[:, 1] == 5):
        stuck = "a wait never completed:\n" + _record(records[records[:, 1] == 5][0])
    read = [(cta, n) for cta in range(2) for n in range(stages) if seen[cta * stages + n] != -7]
    wrong = [(cta, n) for cta, n in read if seen[cta * stages + n] != n]
    if wrong:
        cta, n = wrong[0]
        got = int(seen[cta * stages + n])
        what = {-1: "found nothing loaded in the slot yet",
                -2: "found a torn tile (the loader wrote the slot during the read)"}
        then = f"\nthen: {stuck}" if stuck else ""
        return (f"hazard: CTA {cta}, stage {n} (slot {n % 2}): "
                f"{what.get(got, f'found stage {got} in the slot')}; a CTA may read slot s only "
                f"after the phase of full[s] that loaded its stage, and the loader may refill "
                f"it only after both CTAs released it (empty[s]){then}\n{_timeline(log)}")
    if stuck:
        return f"{stuck}\n{_timeline(log)}"
    missing = [(cta, n) for cta in range(2) for n in range(stages) if (cta, n) not in read]
    if missing:
        cta, n = missing[0]
        return f"CTA {cta} never read stage {n}: every stage must be read once\n{_timeline(log)}"
    return None


SLOT_RING = Puzzle(5, "the Figure 3 slot protocol", RING, RING_STARTER, "p5_slot_ring.cu",
                   _ring_cases, _ring_run, ("union8.cu", "stage-release"))
