// CUDA semantics on a CPU, for the puzzles: every thread of a block is a fiber (ucontext) and a
// scheduler switches between them only where CUDA threads wait for each other: __syncthreads,
// the warp collectives (__syncwarp, __shfl*_sync, __ballot_sync, __any/__all_sync,
// __reduce_min/max/add_sync) and the events of the slot protocol (pw_event_wait). Between two
// such points a thread runs alone, so a data race shows exactly where the protocol lets one
// thread run ahead of another. Blocks run one after the other; __shared__ arrays are statics
// (one block at a time uses them). A collective that can never complete (a barrier some thread
// never reaches, a wait for a phase nobody completes, a shuffle whose mask names an exited
// lane) ends the launch with a message naming every waiting thread.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__
constexpr int warpSize = 32;
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace pw_sim {
enum State { READY, AT_BARRIER, AT_WARP, AT_EVENT, DONE };
enum Op { SHFL, BALLOT, ANY, ALL, SYNCWARP, RMIN, RMAX, RADD };
constexpr size_t kStack = 256 * 1024;

struct Thread {
  ucontext_t ctx;
  char* stack = nullptr;
  State state = READY;
  dim3 idx;
  unsigned linear = 0;
  Op op = SHFL;            // the warp collective it waits in
  unsigned mask = 0;       // its member mask
  uint64_t value = 0;      // what it contributes
  int src = 0;             // the lane it reads (shuffles)
  uint64_t result = 0;     // what the collective returns to it
  const uint64_t* event = nullptr;  // the event it waits on and the parity it waits for
  unsigned parity = 0;
};

struct Block {
  std::vector<Thread> threads;
  ucontext_t scheduler;
  int current = -1;
  std::string error;
};
inline Block* block = nullptr;
inline std::function<void()>* body = nullptr;
inline std::map<const uint64_t*, std::string> event_names;

inline const char* op_name(Op op) {
  static const char* names[] = {"__shfl_sync", "__ballot_sync", "__any_sync", "__all_sync",
                                "__syncwarp", "__reduce_min_sync", "__reduce_max_sync",
                                "__reduce_add_sync"};
  return names[op];
}
inline unsigned phase_of(const uint64_t* ev) { return static_cast<unsigned>(*ev >> 32); }

inline void trampoline() {
  (*body)();
  block->threads[block->current].state = DONE;
}

// Give the CPU back to the scheduler until this thread's wait is over.
inline void park(State state) {
  Thread& t = block->threads[block->current];
  t.state = state;
  swapcontext(&t.ctx, &block->scheduler);
}

inline Thread& me() { return block->threads[block->current]; }
inline unsigned lane_of(const Thread& t) { return t.linear & 31u; }

inline uint64_t collective(Op op, unsigned mask, uint64_t value, int src = 0) {
  Thread& t = me();
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.src = src;
  park(AT_WARP);
  return me().result;
}

inline std::string thread_name(const Thread& t) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "thread %u (warp %u, lane %u)", t.linear, t.linear / 32,
                t.linear % 32);
  return buf;
}

// Complete the collective of warp w when every lane its mask names waits in it.
inline bool try_warp(int w) {
  std::vector<Thread>& ts = block->threads;
  const int base = 32 * w, n = std::min<int>(32, static_cast<int>(ts.size()) - base);
  int first = -1;
  for (int l = 0; l < n; ++l)
    if (ts[base + l].state == AT_WARP) { first = base + l; break; }
  if (first < 0) return false;
  const unsigned mask = ts[first].mask;
  for (int l = 0; l < 32; ++l) {
    if (!((mask >> l) & 1u)) continue;
    if (l >= n || ts[base + l].state == DONE) {
      block->error = thread_name(ts[first]) + " waits in " + op_name(ts[first].op) +
                     " with mask 0x" + [&] { char b[16]; std::snprintf(b, 16, "%08x", mask);
                                             return std::string(b); }() +
                     ", which names lane " + std::to_string(l) + ", a lane that has exited";
      return false;
    }
    const Thread& o = ts[base + l];
    if (o.state != AT_WARP) return false;
    if (o.op != ts[first].op || o.mask != mask) {
      block->error = thread_name(ts[first]) + " waits in " + op_name(ts[first].op) +
                     " while " + thread_name(o) + " waits in " + op_name(o.op) +
                     " (or with another mask): the lanes of a mask must meet in one collective";
      return false;
    }
  }
  uint64_t ballot = 0, mn = ~0ull, mx = 0, sum = 0;
  for (int l = 0; l < 32; ++l) {
    if (!((mask >> l) & 1u)) continue;
    const uint64_t v = ts[base + l].value;
    ballot |= static_cast<uint64_t>(v != 0) << l;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  for (int l = 0; l < 32; ++l) {
    if (!((mask >> l) & 1u)) continue;
    Thread& t = ts[base + l];
    switch (t.op) {
      case SHFL: {
        const int s = t.src;  // outside the warp or not in the mask: own value (CUDA: undefined)
        t.result = (s >= 0 && s < 32 && ((mask >> s) & 1u)) ? ts[base + s].value : t.value;
        break;
      }
      case BALLOT: t.result = ballot; break;
      case ANY: t.result = ballot != 0; break;
      case ALL: t.result = ballot == mask; break;
      case SYNCWARP: t.result = 0; break;
      case RMIN: t.result = mn; break;
      case RMAX: t.result = mx; break;
      case RADD: t.result = sum; break;
    }
  }
  for (int l = 0; l < 32; ++l)
    if ((mask >> l) & 1u) ts[base + l].state = READY;
  return true;
}

inline std::string wait_of(const Thread& t) {
  if (t.state == AT_BARRIER) return "wait at __syncthreads";
  if (t.state == AT_WARP) return std::string("wait in ") + op_name(t.op);
  auto it = event_names.find(t.event);
  const std::string name = it == event_names.end() ? "an event" : it->second;
  return "wait on " + name + " for parity " + std::to_string(t.parity) + " (its phase is " +
         std::to_string(phase_of(t.event)) + ", parity " +
         std::to_string(phase_of(t.event) & 1u) + ")";
}

// One line per run of consecutive threads that wait in the same place.
inline std::string describe_waits() {
  std::string out;
  const std::vector<Thread>& ts = block->threads;
  for (size_t i = 0; i < ts.size();) {
    if (ts[i].state == DONE || ts[i].state == READY) { ++i; continue; }
    size_t j = i + 1;
    while (j < ts.size() && ts[j].state != DONE && ts[j].state != READY &&
           wait_of(ts[j]) == wait_of(ts[i]))
      ++j;
    const std::string warps = i / 32 == (j - 1) / 32
                                  ? "warp " + std::to_string(i / 32)
                                  : "warps " + std::to_string(i / 32) + "-" +
                                        std::to_string((j - 1) / 32);
    out += "\n  " + (j - i == 1 ? "thread " + std::to_string(i)
                                 : "threads " + std::to_string(i) + "-" + std::to_string(j - 1)) +
           " (" + warps + "): " + wait_of(ts[i]);
    i = j;
  }
  return out;
}

// Run one block: round-robin over the runnable threads, then complete what can complete.
inline bool run_block(const std::function<void()>& kernel, dim3 grid, dim3 blk, dim3 bid,
                      std::string& error) {
  Block b;
  const unsigned n = blk.x * blk.y * blk.z;
  b.threads.resize(n);
  std::function<void()> fn = kernel;
  block = &b;
  body = &fn;
  for (unsigned i = 0; i < n; ++i) {
    Thread& t = b.threads[i];
    t.linear = i;
    t.idx = dim3(i % blk.x, (i / blk.x) % blk.y, i / (blk.x * blk.y));
    t.stack = static_cast<char*>(std::malloc(kStack));
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = t.stack;
    t.ctx.uc_stack.ss_size = kStack;
    t.ctx.uc_link = &b.scheduler;
    makecontext(&t.ctx, trampoline, 0);
  }
  gridDim = grid;
  blockDim = blk;
  blockIdx = bid;
  bool ok = true;
  for (;;) {
    bool ran = false, all_done = true;
    for (unsigned i = 0; i < n; ++i) {
      Thread& t = b.threads[i];
      if (t.state == AT_EVENT && (phase_of(t.event) & 1u) != t.parity) t.state = READY;
      if (t.state == DONE) continue;
      all_done = false;
      if (t.state != READY) continue;
      b.current = static_cast<int>(i);
      threadIdx = t.idx;
      swapcontext(&b.scheduler, &t.ctx);
      ran = true;
    }
    if (all_done) break;
    if (ran) continue;
    bool released = false;
    for (unsigned w = 0; w < (n + 31) / 32; ++w) released |= try_warp(static_cast<int>(w));
    bool all_at_barrier = true;
    for (const Thread& t : b.threads)
      if (t.state != DONE && t.state != AT_BARRIER) all_at_barrier = false;
    if (all_at_barrier) {
      for (Thread& t : b.threads)
        if (t.state == AT_BARRIER) t.state = READY;
      released = true;
    }
    for (const Thread& t : b.threads)
      if (t.state == AT_EVENT && (phase_of(t.event) & 1u) != t.parity) released = true;
    if (released) continue;
    char where[64];
    std::snprintf(where, sizeof where, "block %u: ", bid.x);
    error = std::string(where) + (b.error.empty() ? "deadlock, no thread can go on:"
                                                  : b.error + "; no thread can go on:") +
            describe_waits();
    ok = false;
    break;
  }
  for (Thread& t : b.threads) std::free(t.stack);
  block = nullptr;
  return ok;
}

inline int launch(const std::function<void()>& kernel, dim3 grid, dim3 blk, char* error,
                  int error_size) {
  std::string message;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x)
        if (!run_block(kernel, grid, blk, dim3(x, y, z), message)) {
          std::snprintf(error, error_size, "%s", message.c_str());
          return 1;
        }
  return 0;
}
}  // namespace pw_sim

// ---- The CUDA names the puzzles use --------------------------------------------------------
inline void __syncthreads() { pw_sim::park(pw_sim::AT_BARRIER); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  pw_sim::collective(pw_sim::SYNCWARP, mask, 0);
}
inline void __nanosleep(unsigned) { pw_sim::park(pw_sim::READY); }  // lets the others run
inline void __threadfence_block() {}
inline void __threadfence() {}

template <typename T>
inline uint64_t pw_bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T pw_from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  const int lane = static_cast<int>(pw_sim::lane_of(pw_sim::me()));
  const int base = lane & ~(width - 1);
  return pw_from_bits<T>(pw_sim::collective(pw_sim::SHFL, mask, pw_bits(v),
                                            base + (src & (width - 1))));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  const int lane = static_cast<int>(pw_sim::lane_of(pw_sim::me()));
  const int src = (lane % width) + static_cast<int>(d) < width ? lane + static_cast<int>(d) : lane;
  return pw_from_bits<T>(pw_sim::collective(pw_sim::SHFL, mask, pw_bits(v), src));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  const int lane = static_cast<int>(pw_sim::lane_of(pw_sim::me()));
  const int src = (lane % width) >= static_cast<int>(d) ? lane - static_cast<int>(d) : lane;
  return pw_from_bits<T>(pw_sim::collective(pw_sim::SHFL, mask, pw_bits(v), src));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int x, int width = 32) {
  const int lane = static_cast<int>(pw_sim::lane_of(pw_sim::me()));
  const int src = lane ^ x;
  const bool inside = (src & ~(width - 1)) == (lane & ~(width - 1));
  return pw_from_bits<T>(pw_sim::collective(pw_sim::SHFL, mask, pw_bits(v), inside ? src : lane));
}
inline unsigned __ballot_sync(unsigned mask, int p) {
  return static_cast<unsigned>(pw_sim::collective(pw_sim::BALLOT, mask, p != 0));
}
inline int __any_sync(unsigned mask, int p) {
  return static_cast<int>(pw_sim::collective(pw_sim::ANY, mask, p != 0));
}
inline int __all_sync(unsigned mask, int p) {
  return static_cast<int>(pw_sim::collective(pw_sim::ALL, mask, p != 0));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  return static_cast<unsigned>(pw_sim::collective(pw_sim::RMIN, mask, v));
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
  return static_cast<unsigned>(pw_sim::collective(pw_sim::RMAX, mask, v));
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
  return static_cast<unsigned>(pw_sim::collective(pw_sim::RADD, mask, v));
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
// Threads switch only at the waits above, so a read-modify-write is atomic as written.
template <typename T> inline T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
template <typename T> inline T atomicMin(T* p, T v) { T old = *p; *p = std::min(old, v); return old; }
template <typename T> inline T atomicMax(T* p, T v) { T old = *p; *p = std::max(old, v); return old; }
inline unsigned atomicOr(unsigned* p, unsigned v) { unsigned old = *p; *p = old | v; return old; }
inline unsigned atomicAnd(unsigned* p, unsigned v) { unsigned old = *p; *p = old & v; return old; }
template <typename T> inline T atomicExch(T* p, T v) { T old = *p; *p = v; return old; }
inline float __int_as_float(int x) { return pw_from_bits<float>(static_cast<uint32_t>(x)); }
inline int __float_as_int(float x) { return static_cast<int>(pw_bits(x)); }
using std::max;
using std::min;

// ---- Events with phases (an mbarrier of Hopper, as the slot protocol uses it) --------------
// Bits 0-15: arrivals still missing in the current phase; 16-31: arrivals per phase; 32-63:
// the phase. pw_event_wait(ev, p) returns once the phase of parity p has completed, i.e. while
// the current phase's parity differs from p (mbarrier.try_wait.parity).
inline void pw_event_init(uint64_t* ev, unsigned count, const char* name) {
  *ev = (static_cast<uint64_t>(count) << 16) | count;
  pw_sim::event_names[ev] = name;
}
inline void pw_event_arrive(uint64_t* ev) {
  const uint64_t count = (*ev >> 16) & 0xffffu;
  uint64_t pending = (*ev & 0xffffu) - 1;
  uint64_t phase = *ev >> 32;
  if (pending == 0) {
    ++phase;
    pending = count;
  }
  *ev = (phase << 32) | (count << 16) | pending;
}
inline bool pw_event_wait(uint64_t* ev, unsigned parity) {
  pw_sim::Thread& t = pw_sim::me();
  t.event = ev;
  t.parity = parity & 1u;
  if ((pw_sim::phase_of(ev) & 1u) == t.parity) pw_sim::park(pw_sim::AT_EVENT);
  return true;
}

// ---- E4M3 (round to nearest even, saturating at +-448, like cvt.rn.satfinite.e4m3x2) -------
inline unsigned char pw_to_e4m3(float x) {
  const unsigned char sign = (pw_bits(x) >> 24) & 0x80u;
  const float a = std::fabs(x);
  if (std::isnan(x)) return sign | 0x7Fu;
  if (a >= 448.f) return sign | 0x7Eu;
  if (a < 0.015625f) return sign | static_cast<unsigned char>(std::nearbyint(a * 512.f));
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;  // a = 1.m * 2^exponent, exponent in [-6, 8]
  int q = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - exponent)));  // 8 .. 16
  if (q == 16) { q = 8; ++exponent; }
  if (exponent > 8 || (exponent == 8 && q > 14)) return sign | 0x7Eu;
  return sign | static_cast<unsigned char>(((exponent + 7) << 3) | (q - 8));
}
