"""Every kernels/*.cu compiles for sm_90a with nvcc, with no local-memory spills or stack.

Runs on CPU CI machines (nvcc needs no GPU). Registers spilled to local memory or a stack
frame would put per-round state of the regroup / union kernels in slow memory; the
compiler's resource report (``-Xptxas -v``) must show zero bytes for every kernel.
"""

from __future__ import annotations

import pytest

from tests.helpers.sass_tools import KERNELS, NVCC, compile_cubin, ptxas_resources

SOURCES = sorted(KERNELS.glob("*.cu"))


def test_kernel_sources_exist():
    names = {p.name for p in SOURCES}
    assert {"regroup.cu", "union_prepare.cu"} <= names


@pytest.mark.skipif(NVCC is None, reason="nvcc not found (set CUDA_HOME or put nvcc on PATH)")
@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_compiles_for_sm90a_without_spills(source, tmp_path):
    report = compile_cubin(source, tmp_path / (source.stem + ".cubin"))
    kernels = ptxas_resources(report)
    assert kernels, f"no kernel in the ptxas report of {source.name}:\n{report}"
    bad = [(name, stack, st, ld) for name, (stack, st, ld, _) in kernels.items()
           if stack or st or ld]
    assert not bad, f"stack frame / spills (kernel, stack, stores, loads): {bad}"
