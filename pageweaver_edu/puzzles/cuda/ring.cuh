// The helpers of the ring puzzles (5 and 9), the same on a CPU and a GPU; PW_SLOTS is defined
// before this text. One loader thread (warp 0) fills PW_SLOTS slots, two consumer warps (CTA 0
// = warp 1, CTA 1 = warp 2) read them. Event 1 (full[s]) completes once per copy into slot s,
// event 2 (empty[s]) once both CTAs released the stage in it.
//
// Two kinds of check catch a wrong protocol. The slow copies and reads show a race as data
// (a read of the wrong stage or of a tile being overwritten) where the schedule lets it happen.
// The bookkeeping below catches it on every schedule: each wait records how many copies
// (full[s]) or completed releases (empty[s]) it saw, and a read, release or copy that is not
// covered by the right wait is logged as a protocol error, after which the events stop
// blocking (the first error is what the check reports).
#define PW_TILE 32
#define PW_LOG 256
struct Ring {
  uint64_t full[PW_SLOTS];   // event 1: stage in slot s (1 arrival: the loader's copy)
  uint64_t empty[PW_SLOTS];  // event 2: slot s free again (2 arrivals: CTA 0 and CTA 1)
  int tile[PW_SLOTS][PW_TILE];
  int copies[PW_SLOTS];         // stages copied into slot s so far
  int arrivals[PW_SLOTS];       // arrivals on empty[s] so far (two per freed stage)
  int seen_full[2][PW_SLOTS];   // copies[s] when CTA c's last wait on full[s] returned
  int released[2][PW_SLOTS];    // stages CTA c released from slot s
  int seen_empty[PW_SLOTS];     // phases of empty[s] complete when the loader's wait returned
  const unsigned char* member;  // member[n]: bit c set when CTA c needs stage n
  int* log;                  // [0] = records, then (actor, kind, n, s, value) per record
  int* seen;                 // seen[cta * stages + n] = the stage CTA cta found for stage n
  int stages;
  int stuck;                 // a wait gave up (GPU) or a protocol error was logged
  int fault;                 // a protocol error was logged: the log stops there
};
enum { EV_WAIT_FULL, EV_LOAD, EV_READ, EV_RELEASE, EV_WAIT_EMPTY, EV_STUCK,
       // protocol errors (value: what the bookkeeping saw)
       EV_BAD_SLOT, EV_EARLY_READ, EV_READ_RELEASED, EV_EARLY_RELEASE, EV_RELEASE_TURN,
       EV_EARLY_LOAD };
#define PW_V(x) (*(volatile int*)&(x))
__device__ void pw_log(Ring& r, int kind, int n, int s, int value) {
  if (PW_V(r.fault)) return;
  const int at = atomicAdd(r.log, 1);
  if (at < PW_LOG) {
    int* e = r.log + 1 + 5 * at;
    e[0] = threadIdx.x / 32; e[1] = kind; e[2] = n; e[3] = s; e[4] = value;
  }
}
__device__ void pw_fault(Ring& r, int kind, int n, int s, int value) {
  pw_log(r, kind, n, s, value);
  PW_V(r.fault) = 1;
  PW_V(r.stuck) = 1;  // every later wait passes at once: the first error is the report
}
// False (and a logged error) when the reader passes a slot other than n % PW_SLOTS.
__device__ bool pw_slot_ok(Ring& r, int n, int s) {
  if (n >= 0 && n < r.stages && s == n % PW_SLOTS) return true;
  pw_fault(r, EV_BAD_SLOT, n, s, 0);
  return false;
}
__device__ bool pw_wait(Ring& r, uint64_t* ev, int kind, int n, int s, unsigned parity) {
  if (PW_V(r.stuck)) return false;
  if (!pw_event_wait(ev, parity)) {  // only on a GPU: the phase never completed
    PW_V(r.stuck) = 1;
    pw_log(r, EV_STUCK, n, s, (kind << 1) | (int)(parity & 1u));
    return false;
  }
  if ((threadIdx.x & 31) == 0) pw_log(r, kind, n, s, (int)(parity & 1u));
  return true;
}
// The loader's side: wait for event 2 of slot s, copy stage n into slot s (completes event 1).
__device__ void wait_empty(Ring& r, int n, int s, unsigned parity) {
  if (!pw_slot_ok(r, n, s)) return;
  if (pw_wait(r, &r.empty[s], EV_WAIT_EMPTY, n, s, parity))
    PW_V(r.seen_empty[s]) = PW_V(r.arrivals[s]) / 2;
}
__device__ void load_stage(Ring& r, int n, int s) {
  if (!pw_slot_ok(r, n, s)) return;
  if (PW_V(r.seen_empty[s]) < n / PW_SLOTS)  // stage n - PW_SLOTS may still be in use
    pw_fault(r, EV_EARLY_LOAD, n, s, PW_V(r.seen_empty[s]));
  __nanosleep(1000);  // the copy takes a while: consumers that do not wait read too early
  volatile int* t = r.tile[s];
  for (int i = 0; i < PW_TILE; ++i) t[i] = 1000 * n + i;
  PW_V(r.copies[s]) += 1;
  pw_log(r, EV_LOAD, n, s, 0);
  __threadfence_block();
  pw_event_arrive(&r.full[s]);
}
// A consumer warp's side (all 32 lanes call each helper): wait for event 1 of slot s, read
// stage n from it, release it (event 2).
__device__ void wait_full(Ring& r, int n, int s, unsigned parity) {
  if (!pw_slot_ok(r, n, s)) return;
  if (pw_wait(r, &r.full[s], EV_WAIT_FULL, n, s, parity) && (threadIdx.x & 31) == 0)
    PW_V(r.seen_full[threadIdx.x / 32 - 1][s]) = PW_V(r.copies[s]);
}
__device__ void consume_stage(Ring& r, int n, int s) {
  const int lane = threadIdx.x & 31, cta = threadIdx.x / 32 - 1;
  if (!pw_slot_ok(r, n, s)) return;
  if (lane == 0) {
    if (PW_V(r.released[cta][s]) > n / PW_SLOTS)
      pw_fault(r, EV_READ_RELEASED, n, s, 0);
    else if (PW_V(r.seen_full[cta][s]) != n / PW_SLOTS + 1)
      pw_fault(r, EV_EARLY_READ, n, s, PW_V(r.seen_full[cta][s]));
  }
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
  if (lane == 0) {
    r.seen[cta * r.stages + n] = found;
    pw_log(r, EV_READ, n, s, found);
  }
}
__device__ bool needs_stage(Ring& r, int n) {  // this consumer CTA's membership bit
  return (r.member[n] >> (threadIdx.x / 32 - 1)) & 1u;
}
__device__ void release(Ring& r, int n, int s) {
  const int cta = threadIdx.x / 32 - 1;
  if (!pw_slot_ok(r, n, s)) return;
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {
    if (PW_V(r.released[cta][s]) != n / PW_SLOTS)  // twice, or an earlier stage never
      pw_fault(r, EV_RELEASE_TURN, n, s, PW_V(r.released[cta][s]));
    else if (PW_V(r.seen_full[cta][s]) != n / PW_SLOTS + 1)  // its arrival frees another stage
      pw_fault(r, EV_EARLY_RELEASE, n, s, PW_V(r.seen_full[cta][s]));
    PW_V(r.released[cta][s]) += 1;
    atomicAdd(&r.arrivals[s], 1);
    pw_log(r, EV_RELEASE, n, s, 0);
    pw_event_arrive(&r.empty[s]);  // one arrival per CTA
  }
}
