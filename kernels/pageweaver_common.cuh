// Constants shared by every PageWeaver kernel; the symbols follow docs/definitions.md and the
// notebooks: S_i (a query's selected pages), U_G (a group's page union), π (slot r runs
// original query π[r]), g (queries per group), B (bitmap capacity in pages).
#pragma once

namespace pageweaver {

constexpr int kBitmapCapacity = 512;                 // B: pages a bitmap can hold
constexpr int kBitmapWords = kBitmapCapacity / 32;   // 16 uint32 words, one bit per page
constexpr int kGroupSize = 8;                        // g for Union8: two CTAs of four slots
constexpr int kSlotsPerCta = 4;                      // CTA0 = slots 0-3, CTA1 = slots 4-7
constexpr int kWarpSize = 32;

}  // namespace pageweaver
