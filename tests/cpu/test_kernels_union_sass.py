"""The Union kernels' slot protocol compiles without cluster-scope fences in the stage loop
(a CPU-only SASS check; see kernels/cluster_pipeline.cuh).

On sm_90a an mbarrier wait with acquire.cluster is followed by an L1 invalidation
(``CCTL.IVALL``) and a release.cluster arrive is preceded by ``MEMBAR.ALL.GPU``; once per
stage they cost the Union8 kernels much of their time (benchmarks/union8_notes.md). Both may
appear only at the cluster barriers that open and close the kernel (UCGABAR_ARV /
UCGABAR_WAIT). Also checked: no local memory, and multicast bulk copies in every two-CTA
entry. Every front end of ``pageweaver_edu.gpu.UNION_KERNELS`` is checked, each entry point.
"""

from __future__ import annotations

import re

import pytest

from pageweaver_edu.gpu import UNION_KERNELS
from tests.helpers.sass_tools import KERNELS, compile_cubin, sass_functions

BUILDS = {cls.source: tuple(cls.entries.values()) for cls in UNION_KERNELS}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def sass(request, tmp_path_factory):
    cubin = tmp_path_factory.mktemp("union") / (request.param + ".cubin")
    compile_cubin(KERNELS / request.param, cubin)
    return request.param, sass_functions(cubin)


def instructions(code: str) -> list[str]:
    """The SASS instructions of one function, in order, without addresses or encodings."""
    return [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", code)]


def test_cluster_fences_only_at_cluster_barriers(sass):
    source, functions = sass
    for entry in BUILDS[source]:
        name = entry.name
        ins = instructions(functions[name])
        assert any("SYNCS.PHASECHK" in i for i in ins), f"{name}: no mbarrier wait found"
        for k, i in enumerate(ins):
            if "CCTL.IVALL" in i:
                assert "UCGABAR_WAIT" in ins[k - 1], f"{name}: L1 invalidation after {ins[k - 1]!r}"
            if "MEMBAR.ALL.GPU" in i:
                assert any("UCGABAR_ARV" in j for j in ins[k + 1:k + 4]), \
                    f"{name}: GPU-wide fence before {ins[k + 1:k + 4]}"
        assert not any(re.match(r"(LDL|STL)\b", i) for i in ins), f"{name} touches local memory"
        if entry.ctas > 1:
            assert any("MULTICAST" in i for i in ins), f"{name}: no multicast bulk copy"

