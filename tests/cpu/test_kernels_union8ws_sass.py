"""Every build of the warp-specialized Union8 (kernels/union8ws.cu) compiles for sm_90a within
its register budget: a CPU-only SASS check.

Each build the front end can ask for (``fp8_build_options`` of ``pageweaver_edu.gpu.union8ws``:
the fast mode, its trimmed step, its measured alternatives, the accurate mode, the serial
schedule and the timing ablations; the BF16 entry comes with every build) is compiled and
disassembled. Per entry: no stack, no spills, no local memory; the warpgroups resize their
registers (``setmaxnreg``) and no instruction names a register at or above the consumers'
budget (``kConsumerRegs``); the FP8 entry multiplies on FP8 tensor cores (QGMMA E4M3; no HGMMA
outside the timing ablations) unless the build drops the products, the BF16 entry on BF16 ones.
"""

from __future__ import annotations

import re

import pytest

from pageweaver_edu.gpu.union8ws import ABLATIONS, fp8_build_options
from tests.helpers.sass_tools import KERNELS, compile_cubin, ptxas_resources, sass_functions

SOURCE = KERNELS / "union8ws.cu"
BUILDS = {
    "fast": {},
    "trim": {"trim": True},
    "tc_sum": {"tc_sum": True},
    "lazy": {"lazy": True},
    "lazy_tc_sum": {"lazy": True, "tc_sum": True},
    "serial": {"overlap": False},
    "accurate": {"accurate": True},
    **{f"ablate_{a}": {"ablate": a} for a in ABLATIONS if a != "full"},
}
NO_PRODUCTS = {"ablate_no_mma", "ablate_ring_only"}


def consumer_registers() -> int:
    """``kConsumerRegs`` of the kernel source."""
    src = SOURCE.read_text(encoding="utf-8")
    return int(re.search(r"constexpr int kConsumerRegs = (\d+);", src).group(1))


@pytest.fixture(scope="module", params=sorted(BUILDS))
def built(request, tmp_path_factory):
    cubin = tmp_path_factory.mktemp("union8ws") / f"{request.param}.cubin"
    report = compile_cubin(SOURCE, cubin, *fp8_build_options(**BUILDS[request.param]))
    return request.param, report, sass_functions(cubin)


def test_no_spills_no_stack_no_local_memory(built):
    name, report, sass = built
    found = ptxas_resources(report)
    for entry in ("union8ws_fp8", "union8ws_bf16"):
        stack, st, ld, _ = found[entry]
        assert (stack, st, ld) == (0, 0, 0), f"{name}/{entry}: stack {stack}, spills {st}/{ld}"
        assert not re.search(r"\b(LDL|STL)\b", sass[entry]), f"{name}/{entry}: local memory"


def test_registers_within_the_consumer_budget(built):
    name, _, sass = built
    budget = consumer_registers()
    for entry in ("union8ws_fp8", "union8ws_bf16"):
        code = sass[entry]
        assert "USETMAXREG" in code, f"{name}/{entry}: no setmaxnreg"
        highest = max(int(r) for r in re.findall(r"\bR(\d+)\b", code))
        assert highest < budget, f"{name}/{entry}: R{highest} at or above {budget} registers"


def test_tensor_core_types(built):
    name, _, sass = built
    fp8, bf16 = sass["union8ws_fp8"], sass["union8ws_bf16"]
    if name not in NO_PRODUCTS:
        assert re.search(r"QGMMA\.64x\d+x32\.F32\.E4M3\.E4M3", fp8), f"{name}: no FP8 wgmma"
    if not name.startswith("ablate_"):  # (with P = 0 the compiler may pick another MMA type)
        assert "HGMMA" not in fp8, f"{name}: BF16 wgmma in the FP8 entry"
    assert re.search(r"HGMMA\.64x\d+x16\.F32\.BF16", bf16) and "QGMMA" not in bf16
