"""Shared by the tests: Hypothesis strategies, the Union kernels' GPU cases, nvcc / cuobjdump
helpers for the SASS checks and stand-ins for PyCUDA and CUDA tensors on a CPU."""
