"""CPU tests: the reference, the replays, the notebook library, the kernels compiled with nvcc."""
