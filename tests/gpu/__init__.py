"""GPU tests: the live kernels against the CPU reference (skipped, or failed, without a GPU)."""
