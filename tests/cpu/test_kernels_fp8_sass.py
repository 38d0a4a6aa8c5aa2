"""The FP8 Union8 kernel really runs on Hopper FP8 tensor cores: a CPU-only SASS check.

kernels/union8_fp8.cu is compiled for sm_90a (nvcc needs no GPU) and disassembled with
cuobjdump (the ``nvidia-cuda-cuobjdump`` wheel, with ``nvidia-cuda-nvdisasm`` that it calls
for SASS; both in the ``dev`` extra, or a CUDA toolkit's). Both entry points must contain
QGMMA (wgmma with E4M3 operands) and no local-memory traffic (no spills, no stack, no
LDL/STL); Union8 must stage pages with multicast bulk copies (UBLKCP ... MULTICAST).
"""

from __future__ import annotations

import re

import pytest

from tests.helpers.sass_tools import KERNELS, compile_cubin, ptxas_resources, sass_functions

SOURCE = KERNELS / "union8_fp8.cu"
ENTRIES = ("union8_fp8", "union4_fp8")


@pytest.fixture(scope="module", params=[2, 3], ids=["slots2", "slots3"])
def built(request, tmp_path_factory):
    slots = request.param
    cubin = tmp_path_factory.mktemp("fp8") / f"union8_fp8_s{slots}.cubin"
    return cubin, compile_cubin(SOURCE, cubin, f"-DPW_UNION_SLOTS={slots}")


def test_no_spills_no_stack(built):
    _, report = built
    found = ptxas_resources(report)
    assert set(ENTRIES) <= set(found), report
    for name in ENTRIES:
        stack, st, ld, regs = found[name]
        assert (stack, st, ld) == (0, 0, 0), f"{name}: stack {stack}, spills {st}/{ld}"
        assert regs <= 255


def test_sass_has_qgmma_and_no_local_memory(built):
    cubin, _ = built
    sass = sass_functions(cubin)
    assert set(ENTRIES) <= set(sass), sorted(sass)
    for name in ENTRIES:
        code = sass[name]
        qgmma = re.findall(r"QGMMA\.64x128x32\.F32\.E4M3\.E4M3", code)
        assert len(qgmma) >= 8, f"{name}: {len(qgmma)} QGMMA (4 for QK + 4 for PV expected)"
        assert not re.search(r"\b(LDL|STL)\b", code), f"{name} touches local memory"
        assert "HMMA" not in code  # no fallback to the BF16 / FP16 tensor-core path
    assert "MULTICAST" in sass["union8_fp8"] and "UBLKCP" in sass["union8_fp8"]
