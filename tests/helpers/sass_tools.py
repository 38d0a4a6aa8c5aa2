"""Compile a kernel for sm_90a and read its SASS on a CPU-only machine (shared by the SASS
tests). nvcc and cuobjdump come from $CUDA_HOME/bin, the ``nvidia-*`` wheels (the ``dev``
extra: ``nvidia-cuda-cuobjdump`` with ``nvidia-cuda-nvdisasm``, which it calls) or PATH."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def cuda_tool(name: str) -> str | None:
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


NVCC = cuda_tool("nvcc")
CUOBJDUMP = cuda_tool("cuobjdump")
NVDISASM = cuda_tool("nvdisasm")


def compile_cubin(source: Path, cubin: Path, *options: str) -> str:
    """nvcc -O3 for sm_90a into ``cubin``; returns ptxas' -v report (skips without nvcc)."""
    if NVCC is None:
        pytest.skip("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    proc = subprocess.run(
        [NVCC, "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
         "-cubin", f"-I{KERNELS}", *options, "-o", str(cubin), str(source)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"nvcc failed:\n{proc.stderr}"
    return proc.stderr + proc.stdout


PTXAS_PROPS = re.compile(
    r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
    r"(\d+) bytes spill loads\s*\n.*?Used (\d+) registers", re.S)


def ptxas_resources(report: str) -> dict[str, tuple[int, int, int, int]]:
    """{entry name: (stack frame bytes, spill store bytes, spill load bytes, registers)} from
    the ptxas ``-v`` report that :func:`compile_cubin` returns."""
    return {m[0]: tuple(int(x) for x in m[1:]) for m in PTXAS_PROPS.findall(report)}


def _cuobjdump(cubin: Path, flag: str) -> str:
    """``cuobjdump <flag> cubin`` (skips without cuobjdump / nvdisasm)."""
    if CUOBJDUMP is None or NVDISASM is None:
        pytest.skip("cuobjdump/nvdisasm not found: pip install nvidia-cuda-cuobjdump "
                    "nvidia-cuda-nvdisasm (the dev extra) or use a CUDA toolkit")
    env = dict(os.environ, PATH=f"{Path(NVDISASM).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               NVDISASM_PATH=str(Path(NVDISASM).parent))
    proc = subprocess.run([CUOBJDUMP, flag, str(cubin)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, f"cuobjdump failed:\n{proc.stderr}"
    return proc.stdout


KPARAM = re.compile(r"EIATTR_KPARAM_INFO\s*\n.*?Ordinal\s*:\s*0x([0-9a-f]+).*?"
                    r"Size\s*:\s*0x([0-9a-f]+)", re.S)


def parameter_sizes(cubin: Path) -> dict[str, list[int]]:
    """{entry name: the byte size of each kernel parameter, in order} of a cubin (its ELF
    ``.nv.info.<entry>`` sections)."""
    parts = re.split(r"\n\.nv\.info\.(\S+)\n", _cuobjdump(cubin, "-elf"))
    found = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        body = body.split("\n\n\n", 1)[0]  # this section's attributes only
        sizes = {int(o, 16): int(n, 16) for o, n in KPARAM.findall(body)}
        found[name] = [sizes[o] for o in range(len(sizes))]  # ordinals 0 .. n - 1
    return found


def sass_functions(cubin: Path) -> dict[str, str]:
    """{entry name: SASS text} of a cubin (skips without cuobjdump / nvdisasm)."""
    parts = re.split(r"\n\s*Function : (\S+)\n", _cuobjdump(cubin, "--dump-sass"))
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


