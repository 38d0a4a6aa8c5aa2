// The ring of the warp-specialized Union8: kStages stages of 32 KiB that the loader (warp 0
// of the producer warpgroup) fills and both consumers walk, in order. The names are those of
// the CPU replay (pageweaver_edu/replay/ws_ring.py): stage position s, the parity of the
// current pass over the ring, `wrapped` once a pass has completed, j the group number.
//
//   full[s]   (event ①) the loader's arrive.expect_tx + the stage's copy bytes;
//   empty[s]  (event ②) one arrival per consumer thread (256): both consumers are done with
//             stage s, the loader may refill it (only waited on once wrapped).
//
// Per group the loader fills one stage with the group's Q (the 8 queries' BF16 rows, 4 KiB
// each), then kStagesPerPage stages per page of U_G (K tile + V^T tile). Beside each page
// stage it writes the stage's metadata (StageMeta: the tokens each slot sees), so consumers
// never start a dependent global load in the page loop. A consumer with no visible slot on a
// stage waits on full (the stage holds its metadata), arrives on empty at once and does no
// MMA; one consumer may run up to kStages stages ahead of the other.
#pragma once

#include "union8ws_shared.cuh"

namespace pageweaver {
namespace union8ws {

template <class Smem>
__device__ __forceinline__ void init_ring_barriers(uint32_t base) {
  for (int s = 0; s < kStages; ++s) {
    mbar_init(base + PW_AT(Smem, full) + 8 * s, 1);
    mbar_init(base + PW_AT(Smem, empty) + 8 * s, kConsumerThreads);
  }
}

// ---------------------------------------------------------------- the loader (warp 0)
// kHalves stages per page: 1 (FP8: K and V^T tiles of a whole page, 16 KiB each) or 2 (BF16:
// half pages); a.k / a.vt hold [pages, H, kHalves, 16 KiB] tiles.
template <class Smem, int kHalves>
__device__ __forceinline__ void load_pages(const Args& a, uint32_t base, int lane) {
  constexpr int kTokens = kPage / kHalves;  // tokens per stage
  const uint32_t stages0 = base + PW_AT(Smem, stages);
  // One register of ring state (the producer warpgroup runs on 24): bit 0 parity, bit 1
  // wrapped (from then on a stage is refilled only after event ②), bits 2..3 j mod 4 (header
  // b = bit 2, its phase parity = bit 3).
  int s = 0;
  uint32_t ring = 0;
  auto next_stage = [&]() {
    if (++s == kStages) s = 0, ring = (ring ^ 1u) | 2u;
  };
  auto wait_free = [&]() {
    if (ring & 2u) mbar_wait(base + PW_AT(Smem, empty) + 8 * s, (ring & 1u) ^ 1u);  // ②
  };
  for (;; ring = (ring + 4u) & 15u) {
    const int b = (ring >> 2) & 1;
    const uint32_t h = base + PW_AT(Smem, headers) + b * kHeaderBytes;
    mbar_wait(base + PW_AT(Smem, hfull) + 8 * b, (ring >> 3) & 1u);
    const int work = lds(h + kHWork), p_begin = lds(h + kHBegin);
    const int stages = lds(h + kHCount) * kHalves, head = lds(h + kHHead);
    const int lim = lane < kGroupSlots ? lds(h + kHLim + 4 * lane) : 0;  // lane r: slot r
    const int qid = lane < kGroupSlots ? lds(h + kHQid + 4 * lane) : -1;
    arrive(base + PW_AT(Smem, hfree) + 8 * b);  // done with the header
    if (work < 0) return;
    // The group's first stage holds its queries: slot r's 16 BF16 Q rows at r * 4 KiB.
    wait_free();
    {
      const uint32_t full = base + PW_AT(Smem, full) + 8 * s;
      const int present = __popc(__ballot_sync(0xffffffffu, qid >= 0));
      if (lane == 0) mbar_arm(full, static_cast<uint32_t>(present * kQRowBytes));
      __syncwarp();  // the expect_tx precedes every copy's bytes
      if (qid >= 0) {
        const __nv_bfloat16* src =
            a.q + (static_cast<size_t>(qid) * a.plan.kv_heads + head) * kHeads * kDim;
        bulk_copy<1>(stages0 + s * kStageBytes + lane * kQRowBytes, src, kQRowBytes, full);
      }
    }
    next_stage();
    int pid = -1, mask = 0;  // U_G entries m .. m + 31, one per lane
    for (int i = 0; i < stages; ++i) {
      const int m = i / kHalves, hf = i % kHalves;
      if ((m & 31) == 0 && hf == 0) {
        const int e = p_begin + m + lane;
        const bool in = m + lane < stages / kHalves;
        pid = in ? __ldg(a.plan.pages + e) : -1;
        mask = in ? __ldg(a.plan.masks + e) : 0;
      }
      // region: ws-loader-page
      wait_free();
      const int p = __shfl_sync(0xffffffffu, pid, m & 31);
      const int mk = __shfl_sync(0xffffffffu, mask, m & 31);
      const bool ok = p >= 0 && p < a.plan.num_pages;
      // lane r < 8: the tokens of this stage slot r sees (t < lim[r]), one byte per slot
      const int seen = (ok && ((mk >> lane) & 1))
                           ? min(max(lim - (p * kPage + hf * kTokens), 0), kTokens) : 0;
      const uint32_t w0 = __reduce_or_sync(0xffffffffu, lane < 4 ? seen << (8 * lane) : 0);
      const uint32_t w1 = __reduce_or_sync(
          0xffffffffu, lane >= 4 && lane < 8 ? seen << (8 * (lane - 4)) : 0);
      if (lane == 0) {
        const uint32_t meta = base + PW_AT(Smem, meta) + s * kMetaBytes;
        sts(meta, static_cast<int>(w0));
        sts(meta + 4, static_cast<int>(w1));
        const uint32_t full = base + PW_AT(Smem, full) + 8 * s;
        const bool copy = ok && kPageCopies;  // (no copies: a PW_ABLATE timing build)
        mbar_arm(full, copy ? static_cast<uint32_t>(kStageBytes) : 0u);
        if (copy) {
          const size_t src =
              ((static_cast<size_t>(p) * a.plan.kv_heads + head) * kHalves + hf) * kTileBytes;
          const uint32_t dst = stages0 + s * kStageBytes;
          bulk_copy<1>(dst, a.k + src, kTileBytes, full);
          bulk_copy<1>(dst + kTileBytes, a.vt + src, kTileBytes, full);
        }
      }
      next_stage();
      // endregion: ws-loader-page
    }
  }
}

// ---------------------------------------------------------------- a consumer's side
// A working stage of one consumer, packed in one register: ring position s and the tokens of
// the stage my warp's rows see (0: they skip the softmax and the fold). One query per warp:
// seen() is its count. Paired rows (ConsumerRing's kPairedRows): seen_lo() for the query of
// my rows g, seen_hi() for that of rows g + 8, and seen() is non-zero when either sees some.
struct Page {
  int packed;  // s | seen << 8, or s | seen_lo << 8 | seen_hi << 16
  __device__ __forceinline__ int s() const { return packed & 0xff; }
  __device__ __forceinline__ int seen() const { return packed >> 8; }
  __device__ __forceinline__ int seen_lo() const { return (packed >> 8) & 0xff; }
  __device__ __forceinline__ int seen_hi() const { return packed >> 16; }
  // The tokens my rows g (x) and g + 8 (y) see: each its own query's with paired rows, else
  // both my warp's query's.
  template <bool kPairedRows>
  __device__ __forceinline__ int2 rows_seen() const {
    return kPairedRows ? make_int2(seen_lo(), seen_hi()) : make_int2(seen(), seen());
  }
  // The page as warp_uniform reads it: the compiler keeps it (and the descriptors made from
  // it) in uniform registers and takes each branch on seen() with the whole warp.
  __device__ __forceinline__ Page uniform() const {
    return Page{static_cast<int>(warp_uniform(static_cast<uint32_t>(packed)))};
  }
};

// One consumer's position in the ring and in the sequence of group headers, and which rows of
// its M64 tile hold which query and head. One query per warp (kPairedRows false): warp w holds
// slot 4c + w, rows g and g + 8 its local heads g and g + 8. Paired rows: warps 2i and 2i + 1
// (i = 0, 1) hold slots 4c + i (rows g) and 4c + i + 2 (rows g + 8), local heads 0..7 in warp
// 2i and 8..15 in warp 2i + 1. A page that one query of the consumer sees then runs its
// exponentials on two warps, 32 per thread each, instead of 64 on one. Slots i and i + 2 are
// paired rather than i and i + 1 because neighbouring slots of a group more often select the
// same pages, in the original order and the regrouped one alike.
template <class Smem, bool kPairedRows = false>
struct ConsumerRing {
  uint32_t base;
  int c, warp;       // consumer, warp in the consumer
  int s = 0;         // next ring position
  uint32_t ph = 0;   // bit 0: parity of the current pass over the ring; bits 1..2: j mod 4,
                     // j the groups opened so far (header b = bit 1, its phase parity = bit 2)
  int left = 0;      // stages of the current group not looked at yet

  __device__ __forceinline__ uint32_t stage(int pos) const {
    return base + PW_AT(Smem, stages) + pos * kStageBytes;
  }
  __device__ __forceinline__ uint32_t parity() const { return ph & 1u; }
  __device__ __forceinline__ void advance() {
    if (++s == kStages) s = 0, ph ^= 1u;
  }
  __device__ __forceinline__ void release(int pos) const {
    __syncwarp();
    arrive(base + PW_AT(Smem, empty) + 8 * pos);  // event ②: this thread is done with it
  }

  __device__ __forceinline__ uint32_t header() const {
    return base + PW_AT(Smem, headers) + ((ph >> 1) & 1u) * kHeaderBytes;
  }
  __device__ __forceinline__ int head() const { return lds(header() + kHHead); }
  __device__ __forceinline__ int qid(int slot) const { return lds(header() + kHQid + 4 * slot); }
  // The group slot of my rows g (hr = 0) and g + 8 (hr = 1), and the local head of row g + 8 hr.
  __device__ __forceinline__ int slot(int hr) const {
    return kConsumerSlots * c + (kPairedRows ? (warp >> 1) + 2 * hr : warp);
  }
  __device__ __forceinline__ int local_head(int g, int hr) const {
    return kPairedRows ? 8 * (warp & 1) + g : g + 8 * hr;
  }

  // Opens the next group: reads its header (returns false at the end of the work), waits for
  // the group's Q stage and returns its position in q_stage; the caller builds its Q tile from
  // it, calls close_q(q_stage), walks the group's stages, reads what it needs of the header
  // and calls close_group().
  __device__ __forceinline__ bool open(int stages_per_page, int& q_stage) {
    mbar_wait(base + PW_AT(Smem, hfull) + 8 * ((ph >> 1) & 1u), (ph >> 2) & 1u);
    if (lds(header() + kHWork) < 0) return false;  // (the loader and scheduler are done too)
    left = lds(header() + kHCount) * stages_per_page;
    mbar_wait(base + PW_AT(Smem, full) + 8 * s, parity());
    q_stage = s;
    advance();
    return true;
  }
  __device__ __forceinline__ void close_group() {
    arrive(base + PW_AT(Smem, hfree) + 8 * ((ph >> 1) & 1u));  // the header is read
    ph = (ph + 2u) & 7u;
  }
  __device__ __forceinline__ void close_q(int q_stage) const {
    fence_proxy_async();  // my Q tile stores, before the tensor cores read them
    arrive(base + PW_AT(Smem, empty) + 8 * q_stage);
    asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");  // the whole Q tile is there
  }

  // The next stage of the group that my consumer works on; stages it skips are released at
  // once. kNone: the group has no more. kBlocked: the next stage to look at would land in
  // ring slot `hold`, which this consumer still holds (the stage whose PV is pending), so the
  // loader cannot fill it: finish that stage first, then look again.
  static constexpr int kFound = 0, kNone = 1, kBlocked = 2;
  // region: ws-consumer-walk
  __device__ __forceinline__ int next(Page& pg, int hold) {
    while (left > 0) {
      if (s == hold) return kBlocked;
      --left;
      mbar_wait(base + PW_AT(Smem, full) + 8 * s, parity());  // ①: the stage, its metadata
      const uint32_t mine = lds(base + PW_AT(Smem, meta) + s * kMetaBytes + 4 * c);
      uint32_t rows = (mine >> (8 * warp)) & 0xffu;
      if (kPairedRows) {  // bytes i and i + 2 of mine, i = warp / 2
        const uint32_t x = (mine >> (8 * (warp >> 1))) & 0x00ff00ffu;
        rows = (x | (x >> 8)) & 0xffffu;
      }
      pg.packed = s | static_cast<int>(rows << 8);
      advance();
      if (mine) return kFound;  // warpgroup-uniform
      arrive(base + PW_AT(Smem, empty) + 8 * pg.s());
    }
    return kNone;
  }
  // endregion: ws-consumer-walk
};

}  // namespace union8ws
}  // namespace pageweaver
