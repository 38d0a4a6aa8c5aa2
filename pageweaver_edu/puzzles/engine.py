"""Compile a reader's CUDA C and launch it: on a CPU in the SIMT simulator, on a GPU for real.

The same source text goes to both. On a CPU it is compiled by the system C++ compiler against
``cuda/simt_cpu.h`` (every CUDA thread a fiber, warps meeting in their collectives, events with
phases) into a shared library that runs in a forked child process, so that a crash or an endless
loop in the reader's code ends the launch with a message instead of the notebook's kernel. On a
GPU it is compiled by nvcc through PyCUDA against ``cuda/simt_gpu.cuh`` (the same helper names
on real mbarriers and the hardware E4M3 conversion) and launched with the same arguments.

The reader's code and the puzzle's harness sit inside ``extern "C"`` on both sides (the GPU
needs unmangled kernel names), so the puzzles use no templates.
"""

from __future__ import annotations

import ctypes
import faulthandler
import functools
import hashlib
import os
import pickle
import select
import signal
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
CPU_TIMEOUT_S = 20.0
CXX_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-w")
_libraries: dict[str, ctypes.CDLL] = {}
_modules: dict[str, object] = {}


class PuzzleLaunchError(RuntimeError):
    """The reader's code did not compile, deadlocked, crashed or ran too long (message says
    which, in the reader's terms)."""


@dataclass(frozen=True)
class Kernel:
    """What the puzzle launches around the reader's code.

    Attributes
    ----------
    name : str
        The ``__global__`` function launched (the reader's own, or the harness's).
    params : tuple of (str, str)
        Its parameters as (C type, name); a type with ``*`` is an array.
    prelude : str
        Code placed before the reader's (types and helpers the puzzle gives).
    harness : str
        Code placed after the reader's (a harness kernel calling the reader's device code).
    """

    name: str
    params: tuple[tuple[str, str], ...]
    prelude: str = ""
    harness: str = ""


def _scalar(ctype: str, value):
    if "float" in ctype:
        return np.float32(value)
    if "unsigned" in ctype:
        return np.uint32(value)
    return np.int32(value)


def _body(kernel: Kernel, source: str) -> str:
    return (f"{kernel.prelude}\nextern \"C\" {{\n#line 1 \"your_code.cu\"\n{source}\n"
            f"#line 1 \"puzzle_harness.cu\"\n{kernel.harness}\n}}\n")


def _cpu_source(kernel: Kernel, source: str) -> str:
    params = ", ".join(f"{t} {n}" for t, n in kernel.params)
    names = ", ".join(n for _, n in kernel.params)
    return (f"#include \"simt_cpu.h\"\n{_body(kernel, source)}"
            f"extern \"C\" int pw_entry(unsigned gx, unsigned bx, char* error, int error_size, "
            f"{params}) {{\n  return pw_sim::launch([&] {{ {kernel.name}({names}); }}, "
            f"dim3(gx), dim3(bx), error, error_size);\n}}\n")


@functools.lru_cache(maxsize=1)
def compiler_missing() -> str | None:
    """Why the CPU simulator cannot compile here (no C++ compiler), or None."""
    cxx = os.environ.get("CXX", "g++")
    try:
        subprocess.run([cxx, "--version"], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return f"the CPU simulator needs a C++17 compiler ({cxx}); none was found"
    return None


def _cache_dir() -> Path:
    folder = Path(tempfile.gettempdir()) / f"pageweaver_puzzles_{os.getuid()}"
    folder.mkdir(exist_ok=True)
    return folder


def _header_dir(header: str) -> Path:
    """A folder holding ``simt_cpu.h`` and, where the compiler can make one, its precompiled
    form (it halves every puzzle's compile time; the header alone works too)."""
    folder = _cache_dir() / f"simt-{hashlib.sha256(header.encode()).hexdigest()[:16]}"
    if not (folder / "simt_cpu.h").exists():
        folder.mkdir(exist_ok=True)
        tmp = folder / f"simt_cpu.h.{os.getpid()}"
        tmp.write_text(header, encoding="utf-8")
        os.replace(tmp, folder / "simt_cpu.h")
    pch = folder / "simt_cpu.h.gch"
    if not pch.exists():
        tmp = folder / f"pch.{os.getpid()}"
        done = subprocess.run([os.environ.get("CXX", "g++"), *CXX_FLAGS, "-x", "c++-header",
                               str(folder / "simt_cpu.h"), "-o", str(tmp)],
                              capture_output=True, timeout=120)
        if done.returncode == 0:
            os.replace(tmp, pch)
    return folder


def _cpu_library(kernel: Kernel, source: str) -> ctypes.CDLL:
    text = _cpu_source(kernel, source)
    header = (CUDA_DIR / "simt_cpu.h").read_text(encoding="utf-8")
    key = hashlib.sha256((text + header).encode()).hexdigest()[:24]
    if key in _libraries:
        return _libraries[key]
    folder = _cache_dir()
    lib = folder / f"{key}.so"
    if not lib.exists():
        src = folder / f"{key}.{os.getpid()}.cpp"  # own names: parallel test workers
        src.write_text(text, encoding="utf-8")
        cxx = os.environ.get("CXX", "g++")
        done = subprocess.run(
            [cxx, *CXX_FLAGS, "-shared", f"-I{_header_dir(header)}", "-o",
             f"{lib}.{os.getpid()}", str(src)], capture_output=True, text=True, timeout=120)
        src.unlink()
        if done.returncode != 0:
            raise PuzzleLaunchError("your code does not compile:\n" + _compile_lines(done.stderr))
        os.replace(f"{lib}.{os.getpid()}", lib)
    _libraries[key] = ctypes.CDLL(str(lib))
    return _libraries[key]


def _compile_lines(stderr: str) -> str:
    """The compiler's errors about the reader's file (all of them when none names it)."""
    lines = [ln for ln in stderr.splitlines() if "error" in ln]
    mine = [ln[ln.index("your_code.cu"):] for ln in lines if "your_code.cu" in ln]
    return "\n".join(mine or lines or stderr.splitlines()[-20:])


def _ctypes_args(kernel: Kernel, args) -> list:
    out = []
    for (ctype, _), value in zip(kernel.params, args, strict=True):
        if "*" in ctype:
            out.append(ctypes.c_void_p(value.ctypes.data))
        elif "float" in ctype:
            out.append(ctypes.c_float(value))
        elif "unsigned" in ctype:
            out.append(ctypes.c_uint(value))
        else:
            out.append(ctypes.c_int(value))
    return out


def _run_cpu(kernel: Kernel, source: str, grid: int, block: int, args: list) -> None:
    lib = _cpu_library(kernel, source)
    arrays = [i for i, (t, _) in enumerate(kernel.params) if "*" in t]
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded Jupyter kernel
        pid = os.fork()
    if pid == 0:  # child: run the block(s), send back the arrays and the simulator's message
        try:
            faulthandler.disable()  # a crash is reported by the parent, in the reader's terms
            error = ctypes.create_string_buffer(16384)
            rc = lib.pw_entry(ctypes.c_uint(grid), ctypes.c_uint(block), error, 16384,
                              *_ctypes_args(kernel, args))
            payload = pickle.dumps((rc, error.value.decode(errors="replace"),
                                    [args[i] for i in arrays]))
            with os.fdopen(write, "wb") as pipe:
                pipe.write(payload)
        finally:
            os._exit(0)
    os.close(write)
    chunks, start = [], time.monotonic()
    with os.fdopen(read, "rb") as pipe:
        while True:
            left = CPU_TIMEOUT_S - (time.monotonic() - start)
            ready, _, _ = select.select([pipe], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise PuzzleLaunchError(
                    f"the launch ran for more than {CPU_TIMEOUT_S:.0f} s in the CPU simulator: "
                    "a loop that never ends (a spin on memory instead of a wait?)")
            chunk = os.read(pipe.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        name = signal.Signals(sig).name if sig else f"exit status {os.WEXITSTATUS(status)}"
        raise PuzzleLaunchError(f"your kernel crashed the CPU simulator ({name}): a read or "
                                "write outside an array?")
    rc, message, results = pickle.loads(b"".join(chunks))
    for i, result in zip(arrays, results, strict=True):
        args[i][...] = result
    if rc:
        raise PuzzleLaunchError(message)


def gpu_source(kernel: Kernel, source: str) -> str:
    """The CUDA text nvcc compiles for the GPU (include ``CUDA_DIR``)."""
    return f"#include \"simt_gpu.cuh\"\n{_body(kernel, source)}"


def _gpu_function(kernel: Kernel, source: str):
    from ..gpu.device import ensure_context

    ensure_context()
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    text = gpu_source(kernel, source)
    key = hashlib.sha256(text.encode()).hexdigest()
    if key not in _modules:
        major, minor = drv.Context.get_device().compute_capability()
        try:
            _modules[key] = SourceModule(text, options=["-std=c++17", "-O3"], no_extern_c=True,
                                         arch=f"sm_{major}{minor}", include_dirs=[str(CUDA_DIR)])
        except drv.CompileError as exc:
            raise PuzzleLaunchError("your code does not compile:\n"
                                    + _compile_lines(str(exc))) from exc
    return _modules[key].get_function(kernel.name)


def _run_gpu(kernel: Kernel, source: str, grid: int, block: int, args: list) -> None:
    import pycuda.driver as drv

    func = _gpu_function(kernel, source)
    call = [drv.InOut(v) if "*" in t else _scalar(t, v)
            for (t, _), v in zip(kernel.params, args, strict=True)]
    try:
        func(*call, block=(block, 1, 1), grid=(grid, 1))
        drv.Context.synchronize()
    except drv.Error as exc:
        raise PuzzleLaunchError(f"the launch failed on the GPU: {exc}") from exc


def default_device() -> str:
    """``"gpu"`` where the GPU path can run (PyCUDA, a CUDA device, torch with CUDA), else
    ``"cpu"`` (the simulator)."""
    from ..gpu.device import gpu_available

    return "gpu" if gpu_available() else "cpu"


def launch(kernel: Kernel, source: str, grid: int, block: int, args: list,
           device: str = "cpu") -> None:
    """Run ``kernel`` with the reader's ``source`` on ``grid`` blocks of ``block`` threads.

    Parameters
    ----------
    kernel : Kernel
    source : str
        The reader's CUDA C.
    grid, block : int
        Blocks and threads per block (x only).
    args : list
        One value per ``kernel.params``: numpy arrays (C-contiguous, of the parameter's element
        type; updated in place with what the kernel wrote) and Python numbers.
    device : {"cpu", "gpu"}

    Raises
    ------
    PuzzleLaunchError
        Compile error, deadlock, crash or timeout, named in the message.
    """
    if device == "gpu":
        _run_gpu(kernel, source, grid, block, args)
    else:
        _run_cpu(kernel, source, grid, block, args)
