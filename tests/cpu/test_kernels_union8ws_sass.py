"""Every build of the warp-specialized Union8 (kernels/union8ws.cu) compiles for sm_90a within
its register budget and launches with the registers of its split: a CPU-only SASS check.

Each build the front end can ask for (``fp8_build_options`` of ``pageweaver_edu.gpu.union8ws``:
the fast mode, its measured alternatives, the accurate mode, the serial schedule, the timing
ablations, and a two-stage ring; the BF16 entry comes with every build) is compiled once and
disassembled. Per entry: no stack, no spills, no local memory; the warpgroups resize their
registers (``setmaxnreg``) and no instruction names a register at or above the consumers'
budget (``kConsumerRegs``); the FP8 entry multiplies on FP8 tensor cores (QGMMA E4M3; no HGMMA
outside the timing ablations) unless the build drops the products, the BF16 entry on BF16 ones.

The register split: the kernel launches 384 threads with the registers ptxas gives the entry
(R per thread); the producer warpgroup lowers itself to ``kProducerRegs`` with
``setmaxnreg.dec`` and the two consumer warpgroups raise themselves to ``kConsumerRegs`` with
``setmaxnreg.inc``, which waits until the pool has the registers. The pool has them only when
128 (R - producer) >= 256 (consumer - R), so R must be at least 168: below it the consumers
would wait forever. The front end refuses such a build at load time
(``Fp8WsUnionAttention.kernel``); this test keeps every build from getting there.
"""

from __future__ import annotations

import re

import pytest

from pageweaver_edu.gpu.union8ws import (
    ABLATIONS,
    CONSUMER_REGS,
    ORDER_THREADS,
    PRODUCER_REGS,
    SLOTS,
    fp8_build_options,
    min_entry_registers,
)
from tests.helpers.sass_tools import KERNELS, compile_cubin, ptxas_resources, sass_functions

SOURCES = (KERNELS / "union8ws.cu", KERNELS / "union8ws_shared.cuh",
           KERNELS / "union8ws_scheduler.cuh")
ENTRIES = ("union8ws_fp8", "union8ws_bf16")
ORDER_ENTRY = "union8ws_claim_order"  # one CTA, launched before either entry
BUILDS = {
    "fast": {},
    "tc_sum": {"tc_sum": True},
    "lazy": {"lazy": True},
    "lazy_tc_sum": {"lazy": True, "tc_sum": True},
    "serial": {"overlap": False},
    "serial_two_stages": {"overlap": False, "slots": 2},
    "accurate": {"accurate": True},
    **{f"ablate_{a}": {"ablate": a} for a in ABLATIONS if a != "full"},
}
NO_PRODUCTS = {"ablate_no_mma", "ablate_ring_only"}


def build_options(slots: int = SLOTS, **options) -> tuple[str, ...]:
    """The nvcc options the front end compiles a build with: the ring depth
    (``-DPW_UNION_SLOTS``, as ``UnionAttention.kernel`` adds it), then ``fp8_build_options``."""
    return (f"-DPW_UNION_SLOTS={slots}", *fp8_build_options(**options))


@pytest.fixture(scope="module", params=sorted(BUILDS))
def built(request, tmp_path_factory):
    """One compile per build, shared by every test of this module: (build name, ptxas -v
    report, {entry: SASS})."""
    cubin = tmp_path_factory.mktemp("union8ws") / f"{request.param}.cubin"
    report = compile_cubin(SOURCES[0], cubin, *build_options(**BUILDS[request.param]))
    return request.param, report, sass_functions(cubin)


def test_front_end_constants_are_the_kernels():
    src = "\n".join(p.read_text(encoding="utf-8") for p in SOURCES)
    assert int(re.search(r"kProducerRegs = (\d+);", src).group(1)) == PRODUCER_REGS
    assert int(re.search(r"kConsumerRegs = (\d+);", src).group(1)) == CONSUMER_REGS
    assert int(re.search(r"#define PW_UNION_SLOTS (\d+)", src).group(1)) == SLOTS
    assert re.search(r"kThreads = 128 \* \(1 \+ kConsumers\)", src)
    assert min_entry_registers() == 168
    assert int(re.search(r"kOrderThreads = (\d+)", src).group(1)) == ORDER_THREADS


def test_no_spills_no_stack_no_local_memory(built):
    name, report, sass = built
    found = ptxas_resources(report)
    for entry in (*ENTRIES, ORDER_ENTRY):
        stack, st, ld, _ = found[entry]
        assert (stack, st, ld) == (0, 0, 0), f"{name}/{entry}: stack {stack}, spills {st}/{ld}"
        assert not re.search(r"\b(LDL|STL)\b", sass[entry]), f"{name}/{entry}: local memory"


def test_every_entry_has_the_registers_of_the_split(built):
    name, report, _ = built
    found = ptxas_resources(report)
    assert set(found) >= {*ENTRIES, ORDER_ENTRY}, report
    entries = {e: found[e] for e in ENTRIES}
    for entry, (_, _, _, regs) in entries.items():
        freed = 128 * (regs - PRODUCER_REGS)
        wanted = 256 * (CONSUMER_REGS - regs)
        assert freed >= wanted and regs >= min_entry_registers(), (
            f"{name}/{entry}: {regs} registers; the split frees {freed}, the consumers ask "
            f"{wanted}")


def test_registers_within_the_consumer_budget(built):
    name, _, sass = built
    for entry in ENTRIES:
        code = sass[entry]
        assert "USETMAXREG" in code, f"{name}/{entry}: no setmaxnreg"
        highest = max(int(r) for r in re.findall(r"\bR(\d+)\b", code))
        assert highest < CONSUMER_REGS, (
            f"{name}/{entry}: R{highest} at or above {CONSUMER_REGS} registers")


def test_tensor_core_types(built):
    name, _, sass = built
    fp8, bf16 = sass["union8ws_fp8"], sass["union8ws_bf16"]
    if name not in NO_PRODUCTS:
        assert re.search(r"QGMMA\.64x\d+x32\.F32\.E4M3\.E4M3", fp8), f"{name}: no FP8 wgmma"
    if not name.startswith("ablate_"):  # (with P = 0 the compiler may pick another MMA type)
        assert "HGMMA" not in fp8, f"{name}: BF16 wgmma in the FP8 entry"
    assert re.search(r"HGMMA\.64x\d+x16\.F32\.BF16", bf16) and "QGMMA" not in bf16
