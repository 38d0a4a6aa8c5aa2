"""The FP8 Union8 kernel really runs on Hopper FP8 tensor cores: a CPU-only SASS check.

kernels/union8_fp8.cu is compiled for sm_90a (nvcc needs no GPU) and disassembled with
cuobjdump (the ``nvidia-cuda-cuobjdump`` wheel, with ``nvidia-cuda-nvdisasm`` that it calls
for SASS; both in the ``dev`` extra, or a CUDA toolkit's). Both entry points must contain
QGMMA (wgmma with E4M3 operands) and no local-memory traffic (no spills, no stack, no
LDL/STL); Union8 must stage pages with multicast bulk copies (UBLKCP ... MULTICAST).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
SOURCE = KERNELS / "union8_fp8.cu"
ARCH = ["-gencode=arch=compute_90a,code=sm_90a"]
ENTRIES = ("union8_fp8", "union4_fp8")


def _tool(name: str) -> str | None:
    """A CUDA binary tool: $CUDA_HOME/bin, the nvidia-* wheels' bin folders, then PATH."""
    cands = [Path(r) / "bin" / name for r in (os.environ.get("CUDA_HOME"),
                                               os.environ.get("CUDA_PATH"), "/usr/local/cuda") if r]
    try:
        import nvidia  # namespace package of the nvidia-* wheels

        for root in nvidia.__path__:
            cands += sorted(Path(root).glob(f"*/bin/{name}"))
    except ImportError:
        pass
    cands += [Path(sys.prefix) / "bin" / name]
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which(name)


NVCC = _tool("nvcc")
CUOBJDUMP = _tool("cuobjdump")
NVDISASM = _tool("nvdisasm")
PROPS = re.compile(
    r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
    r"(\d+) bytes spill loads\s*\n.*?Used (\d+) registers", re.S)


@pytest.fixture(scope="module", params=[2, 3], ids=["slots2", "slots3"])
def built(request, tmp_path_factory):
    if NVCC is None:
        pytest.skip("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    slots = request.param
    cubin = tmp_path_factory.mktemp("fp8") / f"union8_fp8_s{slots}.cubin"
    proc = subprocess.run(
        [NVCC, "-std=c++17", "-O3", *ARCH, "-Xptxas", "-v", "-cubin", f"-I{KERNELS}",
         f"-DPW_UNION_SLOTS={slots}", "-o", str(cubin), str(SOURCE)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"nvcc failed:\n{proc.stderr}"
    return cubin, proc.stderr + proc.stdout


def _sass(cubin: Path) -> dict[str, str]:
    if CUOBJDUMP is None or NVDISASM is None:
        pytest.skip("cuobjdump/nvdisasm not found: pip install nvidia-cuda-cuobjdump "
                    "nvidia-cuda-nvdisasm (the dev extra) or use a CUDA toolkit")
    env = dict(os.environ, PATH=f"{Path(NVDISASM).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               NVDISASM_PATH=str(Path(NVDISASM).parent))
    proc = subprocess.run([CUOBJDUMP, "--dump-sass", str(cubin)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"cuobjdump failed:\n{proc.stderr}"
    parts = re.split(r"\n\s*Function : (\S+)\n", proc.stdout)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_no_spills_no_stack(built):
    _, report = built
    found = {m[0]: m[1:] for m in PROPS.findall(report)}
    assert set(ENTRIES) <= set(found), report
    for name in ENTRIES:
        stack, st, ld, regs = (int(x) for x in found[name])
        assert (stack, st, ld) == (0, 0, 0), f"{name}: stack {stack}, spills {st}/{ld}"
        assert regs <= 255


def test_sass_has_qgmma_and_no_local_memory(built):
    cubin, _ = built
    sass = _sass(cubin)
    assert set(ENTRIES) <= set(sass), sorted(sass)
    for name in ENTRIES:
        code = sass[name]
        qgmma = re.findall(r"QGMMA\.64x128x32\.F32\.E4M3\.E4M3", code)
        assert len(qgmma) >= 8, f"{name}: {len(qgmma)} QGMMA (4 for QK + 4 for PV expected)"
        assert not re.search(r"\b(LDL|STL)\b", code), f"{name} touches local memory"
        assert "HMMA" not in code  # no fallback to the BF16 / FP16 tensor-core path
    assert "MULTICAST" in sass["union8_fp8"] and "UBLKCP" in sass["union8_fp8"]
