"""The regroup kernels (kernels/regroup.cu) take exactly the arguments their launchers pass: a
CPU-only check.

PyCUDA packs a prepared launch's arguments by its format (``ARG_FORMAT`` of
``pageweaver_edu.gpu.regroup``, ``PLAN_ARG_FORMAT`` of ``pageweaver_edu.gpu.regroup_plan``)
while each entry reads its parameters where its signature puts them, so a format that differs
from the signature hands the kernel shifted arguments. Every entry's parameter sizes (from the
cubin's ELF info) are those of its format, in order.
"""

from __future__ import annotations

import pytest

from pageweaver_edu.gpu.regroup import ARG_FORMAT, VARIANTS
from pageweaver_edu.gpu.regroup_plan import PLAN_ARG_FORMAT, PLAN_WINDOWS
from tests.helpers.sass_tools import KERNELS, compile_cubin, parameter_sizes

SIZES = {"P": 8, "q": 8, "i": 4, "f": 4}  # bytes of each format letter


@pytest.fixture(scope="module")
def entries(tmp_path_factory):
    cubin = tmp_path_factory.mktemp("regroup") / "regroup.cubin"
    compile_cubin(KERNELS / "regroup.cu", cubin)
    return parameter_sizes(cubin)


def test_every_entry_takes_its_launch_format(entries):
    want = {f"regroup_{v}": ARG_FORMAT for v in VARIANTS}
    want |= {f"regroup_plan_pairs_w{w}": PLAN_ARG_FORMAT for w in PLAN_WINDOWS}
    assert set(entries) == set(want)
    for name, fmt in want.items():
        assert entries[name] == [SIZES[c] for c in fmt], f"{name}: {entries[name]} != {fmt!r}"
