"""Puzzles 5 and 9: the slot protocol of Figure 3 — one loader, two consumer CTAs, two KV slots,
event ① (full: the stage is in the slot) and event ② (empty: both CTAs are done with it), each
waited on with the parity of the phase it needs.

The CTAs are two consumer warps of one block here (the real kernel's cluster of two CTAs
shares the same events through distributed shared memory). The harness fills every slot
slowly and reads it slowly, so a wait that passes too early shows up as a read of the wrong
stage (the hazard), and a wait for a phase that never completes shows up as a stuck wait (on
the CPU, the simulator's deadlock report; on a GPU, a wait that gave up after 1 s). Each CTA
must read every stage it needs, in order, exactly once (chapter 06's simulator,
:func:`pageweaver_edu.replay.pipeline.simulate`, replays the same protocol with durations).
Puzzle 9 is the ring of the warp-specialized kernel: four slots, and a membership bit per stage
and CTA, so that a CTA skips the stages it does not need and must still release them.
"""

from __future__ import annotations

import numpy as np

from .checks import TODO, Case, Puzzle
from .engine import Kernel, PuzzleLaunchError

LOG = 256  # records kept of the protocol's events

def ring_prelude(slots: int) -> str:
    """The helpers a ring puzzle gives the reader, for a ring of ``slots`` slots."""
    return RING_HELPERS.replace("PW_SLOTS_VALUE", str(slots))


RING_HELPERS = f"""\
#define PW_SLOTS PW_SLOTS_VALUE
#define PW_TILE 32
#define PW_LOG {LOG}
struct Ring {{
  uint64_t full[PW_SLOTS];   // event 1: stage in slot s (1 arrival: the loader's copy)
  uint64_t empty[PW_SLOTS];  // event 2: slot s free again (2 arrivals: CTA 0 and CTA 1)
  int tile[PW_SLOTS][PW_TILE];
  const unsigned char* member;  // member[n]: bit c set when CTA c needs stage n
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
  __nanosleep(1000);  // the copy takes a while: consumers that do not wait read too early
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
  __nanosleep(20000);  // a slow read: a loader that does not wait overwrites the slot meanwhile
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
__device__ bool needs_stage(Ring& r, int n) {{  // this consumer CTA's membership bit
  return (r.member[n] >> (threadIdx.x / 32 - 1)) & 1u;
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
__global__ void slot_ring(int stages, const unsigned char* member, int* log, int* seen) {
  __shared__ Ring r;
  if (threadIdx.x == 0) {
    const char* full[] = {"full[0]", "full[1]", "full[2]", "full[3]"};
    const char* empty[] = {"empty[0]", "empty[1]", "empty[2]", "empty[3]"};
    for (int s = 0; s < PW_SLOTS; ++s) {
      pw_event_init(&r.full[s], 1, full[s]);
      pw_event_init(&r.empty[s], 2, empty[s]);
      for (int i = 0; i < PW_TILE; ++i) r.tile[s][i] = -1;
    }
    r.member = member; r.log = log; r.seen = seen; r.stages = stages; r.stuck = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) loader(r, stages);
  if (threadIdx.x >= 32) consumer(r, stages);
}
"""
RING_PARAMS = (("int", "stages"), ("const unsigned char*", "member"), ("int*", "log"),
               ("int*", "seen"))
ACTORS = ("loader", "CTA 0 ", "CTA 1 ")
LEGEND = "threads 0-31 = warp 0 (the loader: thread 0), warp 1 = CTA 0, warp 2 = CTA 1"


def _slot_cases(rng: np.random.Generator) -> list[Case]:
    def every(n: int) -> np.ndarray:
        return np.full(n, 3, np.uint8)

    random = [Case(f"{n} stages", {"member": every(n)}) for n in rng.integers(3, 12, size=2)]
    return random + [Case("1 stage", {"member": every(1)}),
                     Case("2 stages (no slot reused)", {"member": every(2)}),
                     Case("6 stages", {"member": every(6)})]


def _ws_cases(rng: np.random.Generator) -> list[Case]:
    random = [Case(f"{n} stages, random membership",
                   {"member": rng.integers(1, 4, n).astype(np.uint8)})
              for n in rng.integers(6, 17, size=2)]
    lopsided = np.full(12, 2, np.uint8)
    lopsided[0] = 3
    return random + [Case("CTA 0 needs only stage 0, CTA 1 all 12", {"member": lopsided}),
                     Case("3 stages, fewer than the slots", {"member": np.array([1, 2, 3],
                                                                                np.uint8)})]


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


def _ring_run(launch, case: Case, slots: int) -> str | None:
    member = case.data["member"]
    stages = len(member)
    log = np.zeros(1 + 5 * LOG, np.int32)
    seen = np.full(2 * stages, -7, np.int32)
    stuck = ""
    try:
        launch(1, 96, [stages, member, log, seen])
    except PuzzleLaunchError as exc:
        if "deadlock" not in str(exc):
            raise
        stuck = f"{exc}\n({LEGEND})"
    count = min(int(log[0]), LOG)
    records = log[1:1 + 5 * count].reshape(count, 5)
    if not stuck and np.any(records[:, 1] == 5):
        stuck = "a wait never completed:\n" + _record(records[records[:, 1] == 5][0])
    needs = [(cta, n) for cta in range(2) for n in range(stages) if (member[n] >> cta) & 1]
    read = [(cta, n) for cta in range(2) for n in range(stages) if seen[cta * stages + n] != -7]
    wrong = [(cta, n) for cta, n in read if seen[cta * stages + n] != n]
    if wrong:
        cta, n = wrong[0]
        got = int(seen[cta * stages + n])
        what = {-1: "found nothing loaded in the slot yet",
                -2: "found a torn tile (the loader wrote the slot during the read)"}
        then = f"\nthen: {stuck}" if stuck else ""
        return (f"hazard: CTA {cta}, stage {n} (slot {n % slots}): "
                f"{what.get(got, f'found stage {got} in the slot')}; a CTA may read slot s only "
                f"after the phase of full[s] that loaded its stage, and the loader may refill "
                f"it only after both CTAs released it (empty[s]){then}\n{_timeline(log)}")
    if stuck:
        return f"{stuck}\n{_timeline(log)}"
    extra = [(cta, n) for cta, n in read if (cta, n) not in needs]
    if extra:
        cta, n = extra[0]
        return (f"CTA {cta} read stage {n}, which it does not need (membership byte "
                f"0b{int(member[n]):02b}): skip it, but still release its slot\n{_timeline(log)}")
    missing = [(cta, n) for cta, n in needs if (cta, n) not in read]
    if missing:
        cta, n = missing[0]
        return (f"CTA {cta} never read stage {n}: every stage a CTA needs must be read once"
                f"\n{_timeline(log)}")
    return None


SLOT_RING = Puzzle(5, "the Figure 3 slot protocol",
                   Kernel("slot_ring", RING_PARAMS, ring_prelude(2), RING_HARNESS),
                   RING_STARTER, "p5_slot_ring.cu", _slot_cases,
                   lambda launch, case: _ring_run(launch, case, 2), ("union8.cu", "stage-release"))

WS_STARTER = f"""\
// The warp-specialized ring: PW_SLOTS = 4 slots, the same helpers as puzzle 5, and
// needs_stage(r, n): true when this consumer CTA selects stage n (its membership bit). A CTA
// reads only the stages it needs, but the loader refills a slot only after BOTH CTAs released
// it, so a CTA releases every stage, the ones it skips included.
__device__ void loader(Ring& r, int stages) {{   // runs on one thread
  // {TODO}
}}
__device__ void consumer(Ring& r, int stages) {{ // runs on each consumer warp (CTA 0, CTA 1)
  // {TODO}
}}
"""

WS_RING = Puzzle(9, "the warp-specialized ring: skip, but release",
                 Kernel("slot_ring", RING_PARAMS, ring_prelude(4), RING_HARNESS),
                 WS_STARTER, "p9_ws_ring.cu", _ws_cases,
                 lambda launch, case: _ring_run(launch, case, 4),
                 ("union8ws_ring.cuh", "ws-loader-page"))
