"""Puzzles 5 and 9: the slot protocol of Figure 3 — one loader, two consumer CTAs, two KV slots,
event ① (full: the stage is in the slot) and event ② (empty: both CTAs are done with it), each
waited on with the parity of the phase it needs.

The CTAs are two consumer warps of one block here (the real kernel's cluster of two CTAs
shares the same events through distributed shared memory). The helpers of ``cuda/ring.cuh``
count what every wait saw, so a read, release or refill that no wait covers is a hazard on
every schedule (the slow copies and reads also show it as data where the schedule lets it
happen), and a wait for a phase that never completes shows up as a stuck wait (on the CPU,
the simulator's deadlock report; on a GPU, a wait that gave up after 1 s). Each CTA
must read every stage it needs, in order, exactly once (chapter 06's simulator,
:func:`pageweaver_edu.replay.pipeline.simulate`, replays the same protocol with durations).
Puzzle 9 is the ring of the warp-specialized kernel: four slots, and a membership bit per stage
and CTA, so that a CTA skips the stages it does not need and must still release them.
"""

from __future__ import annotations

import numpy as np

from .checks import TODO, Case, Puzzle
from .engine import CUDA_DIR, Kernel, PuzzleLaunchError

LOG = 256  # records kept of the protocol's events (PW_LOG in cuda/ring.cuh)
RING_HELPERS = (CUDA_DIR / "ring.cuh").read_text(encoding="utf-8")


def ring_prelude(slots: int) -> str:
    """The helpers a ring puzzle gives the reader, for a ring of ``slots`` slots."""
    return f"#define PW_SLOTS {slots}\n{RING_HELPERS}"


RING_STARTER = f"""\
// Helpers (given): wait_full / wait_empty(r, n, s, parity) wait until the phase of parity
// `parity` of event full[s] / empty[s] has completed; load_stage(r, n, s) copies stage n into
// slot s and completes a phase of full[s]; consume_stage(r, n, s) reads stage n from slot s;
// release(r, n, s) is this CTA's arrival on empty[s]. Stage n uses slot s = n % PW_SLOTS; a
// fresh event is in phase 0, so a wait for parity 1 passes at once and a wait for parity 0
// waits until the first phase completes. The loader's helpers run on its one thread; the
// consumer's are warp-collective: all 32 lanes of a consumer warp call them together.
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
      r.copies[s] = r.arrivals[s] = r.seen_empty[s] = 0;
      r.seen_full[0][s] = r.seen_full[1][s] = r.released[0][s] = r.released[1][s] = 0;
    }
    r.member = member; r.log = log; r.seen = seen; r.stages = stages; r.stuck = 0; r.fault = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) loader(r, stages);
  if (threadIdx.x >= 32) consumer(r, stages);
}
"""
RING_PARAMS = (("int", "stages"), ("const unsigned char*", "member"), ("int*", "log"),
               ("int*", "seen"))
ACTORS = ("loader", "CTA 0 ", "CTA 1 ")
LEGEND = ("threads 0-31 = warp 0 (the loader: thread 0), warp 1 = CTA 0, warp 2 = CTA 1; "
          "consume_stage and release are warp-collective: all 32 lanes of a consumer call them")


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
               f"(stage {n}): never completed"}.get(kind, f"the error above (stage {n}, slot {s})")
    return f"  {ACTORS[actor] if 0 <= actor < 3 else actor} | {text}"


def _fault(e: np.ndarray, slots: int) -> str:
    """The protocol error the helpers logged (kinds 6-11 of ``cuda/ring.cuh``), explained."""
    actor, kind, n, s, value = (int(x) for x in e)
    who = ACTORS[actor].strip() if 0 <= actor < 3 else f"warp {actor}"
    copy = n // slots + 1  # stage n is the copy number n / PW_SLOTS + 1 into its slot
    if kind == 6:
        return (f"{who} passed stage {n} and slot {s} to a helper: stages are 0 .. stages - 1, "
                f"and stage n uses slot n % PW_SLOTS")
    what, rule = {
        7: (f"read before it landed: its last wait on full[{s}] returned after {value} "
            f"cop{'y' if value == 1 else 'ies'} into the slot, and stage {n} is copy {copy}",
            f"before each read, wait on full[{s}] for the phase that the stage's copy "
            f"completes"),
        8: ("read after this CTA released it",
            f"release a stage only after reading it: once both CTAs arrived on empty[{s}], "
            f"the loader may overwrite the slot"),
        9: (f"released before it landed: its last wait on full[{s}] returned after {value} "
            f"cop{'y' if value == 1 else 'ies'} into the slot, and stage {n} is copy {copy}",
            f"wait on full[{s}] for every stage, the ones a CTA skips too: an early arrival on "
            f"empty[{s}] counts toward the phase of another stage, so the loader may "
            f"overwrite a slot the other CTA still reads"),
        10: ("released twice" if value >= copy else
             f"released, but stage {value * slots + s} of the same slot never was",
             f"each CTA arrives on empty[{s}] once per stage, in order"),
        11: (f"copied before both CTAs released stage {n - slots}: the loader's last wait on "
             f"empty[{s}] returned after {value} completed phase{'' if value == 1 else 's'} of "
             f"empty[{s}], and refilling the slot for stage {n} needs {copy - 1}",
             f"before each refill, wait on empty[{s}] for the phase that the releases of the "
             f"slot's previous stage complete"),
    }[kind]
    return f"hazard: {who}, stage {n} (slot {s}): {what}; {rule}"


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
        if "no thread can go on" not in str(exc):  # a crash or an endless loop
            raise
        stuck = f"{exc}\n({LEGEND})"
    count = min(int(log[0]), LOG)
    records = log[1:1 + 5 * count].reshape(count, 5)
    faults = records[records[:, 1] >= 6]
    if len(faults):  # the helpers' bookkeeping: wrong on every schedule, so reported first
        return f"{_fault(faults[0], slots)}\n{_timeline(log)}"
    if not stuck and np.any(records[:, 1] == 5):
        stuck = "a wait never completed:\n" + _record(records[records[:, 1] == 5][0])
    needs = [(cta, n) for cta in range(2) for n in range(stages) if (member[n] >> cta) & 1]
    read = [(cta, n) for cta in range(2) for n in range(stages) if seen[cta * stages + n] != -7]
    wrong = [(int(a) - 1, int(n)) for a, kind, n, _, value in records if kind == 2 and value != n]
    wrong = wrong or [(cta, n) for cta, n in read if seen[cta * stages + n] != n]  # log full
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
