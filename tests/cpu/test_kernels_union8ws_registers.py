"""The warp-specialized Union8's register split holds in every build: a CPU-only check.

kernels/union8ws.cu launches 384 threads with the registers ptxas gives the entry (R per
thread); the producer warpgroup lowers itself to kProducerRegs with ``setmaxnreg.dec`` and the
two consumer warpgroups raise themselves to kConsumerRegs with ``setmaxnreg.inc``, which waits
until the pool has the registers. The pool has them only when 128 (R - producer) >=
256 (consumer - R), so R must be at least 168: below it the consumers would wait forever. The
front end refuses such a build at load time (``Fp8WsUnionAttention.kernel``); this test keeps
every build from getting there.
"""

from __future__ import annotations

import re

import pytest

from pageweaver_edu.gpu.union8ws import CONSUMER_REGS, PRODUCER_REGS, min_entry_registers
from tests.helpers.sass_tools import KERNELS, compile_cubin, ptxas_resources

SOURCES = (KERNELS / "union8ws.cu", KERNELS / "union8ws_shared.cuh")
BUILDS = {"shipped": (), "tc_sum_lazy": ("-DPW_WS_TC_SUM=1", "-DPW_WS_LAZY=1"),
          "two_stages_serial": ("-DPW_UNION_SLOTS=2", "-DPW_WS_OVERLAP=0"),
          "accurate": ("-DPW_WS_ACCURATE=1",), "trim": ("-DPW_WS_TRIM=1",)}


def test_front_end_constants_are_the_kernels():
    src = "\n".join(p.read_text(encoding="utf-8") for p in SOURCES)
    assert int(re.search(r"kProducerRegs = (\d+);", src).group(1)) == PRODUCER_REGS
    assert int(re.search(r"kConsumerRegs = (\d+);", src).group(1)) == CONSUMER_REGS
    assert re.search(r"kThreads = 128 \* \(1 \+ kConsumers\)", src)
    assert min_entry_registers() == 168


@pytest.mark.parametrize("options", BUILDS.values(), ids=BUILDS.keys())
def test_every_entry_has_the_registers_of_the_split(options, tmp_path):
    report = compile_cubin(SOURCES[0], tmp_path / "union8ws.cubin", *options)
    found = ptxas_resources(report)
    entries = {name: res for name, res in found.items() if name.startswith("union8ws_")}
    assert set(entries) == {"union8ws_fp8", "union8ws_bf16"}, report
    for name, (_, _, _, regs) in entries.items():
        freed = 128 * (regs - PRODUCER_REGS)
        wanted = 256 * (CONSUMER_REGS - regs)
        assert freed >= wanted and regs >= min_entry_registers(), (
            f"{name}: {regs} registers; the split frees {freed}, the consumers ask {wanted}")
