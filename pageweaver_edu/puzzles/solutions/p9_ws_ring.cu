// Puzzle 9: the warp-specialized ring, skip but release (reference solution).
__device__ void loader(Ring& r, int stages) {
  for (int n = 0; n < stages; ++n) {
    const int s = n % PW_SLOTS;
    if (n >= PW_SLOTS) wait_empty(r, n, s, (n / PW_SLOTS - 1) & 1);
    load_stage(r, n, s);
  }
}
__device__ void consumer(Ring& r, int stages) {
  for (int n = 0; n < stages; ++n) {
    const int s = n % PW_SLOTS;
    // Wait even for a stage this CTA skips: its release must count toward the phase of
    // empty[s] that frees stage n, not toward the one of stage n - PW_SLOTS.
    wait_full(r, n, s, (n / PW_SLOTS) & 1);
    if (needs_stage(r, n)) consume_stage(r, n, s);
    release(r, n, s);
  }
}
