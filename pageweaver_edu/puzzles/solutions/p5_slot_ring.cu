// Puzzle 5: the slot protocol of Figure 3 (reference solution).
__device__ void loader(Ring& r, int stages) {
  for (int n = 0; n < stages; ++n) {
    const int s = n % PW_SLOTS;
    // Stage n reuses slot s after stage n - PW_SLOTS: wait for the phase both CTAs completed
    // when they released it, the (n / PW_SLOTS - 1)-th phase of empty[s]. The first
    // PW_SLOTS stages find their slots free.
    if (n >= PW_SLOTS) wait_empty(r, n, s, (n / PW_SLOTS - 1) & 1);
    load_stage(r, n, s);
  }
}
__device__ void consumer(Ring& r, int stages) {
  for (int n = 0; n < stages; ++n) {
    const int s = n % PW_SLOTS;
    wait_full(r, n, s, (n / PW_SLOTS) & 1);  // the (n / PW_SLOTS)-th phase of full[s]
    consume_stage(r, n, s);
    release(r, n, s);
  }
}
