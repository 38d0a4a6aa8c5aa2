"""Compile-once loading of ``kernels/*.cu`` and error-checked launches (PyCUDA).

Sources are found through ``importlib.resources.files("pageweaver_edu.kernels")`` (the
top-level ``kernels/`` folder is mapped to that package by ``pyproject.toml``), with a
fallback to ``<checkout>/kernels`` when the package is imported from a source tree that was
not installed. Each ``.cu`` file is compiled once per process (PyCUDA also keeps its on-disk
cubin cache), for the device's own architecture (``sm_90`` on the H200: these kernels use no
``sm_90a``-only instruction, so the plain target is the right one).

Launches go to the legacy default stream, which is PyTorch's default stream too, so they are
ordered after the torch ops that produced their inputs without any host synchronisation.
Every launch is checked: a failed ``cuLaunchKernel`` raises :class:`GPULaunchError` naming
the kernel, and with ``PAGEWEAVER_GPU_SYNC=1`` each launch is also synchronised so that a
fault inside the kernel is reported against the kernel that caused it.
"""

from __future__ import annotations

import os
import threading
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

from ..device import ensure_context, require_gpu

ENV_SYNC = "PAGEWEAVER_GPU_SYNC"
NVCC_OPTIONS = ["-std=c++17", "-O3", "-lineinfo"]

_lock = threading.Lock()
_modules: dict[str, object] = {}
_functions: dict[tuple[str, str], object] = {}
_files = ExitStack()


class GPULaunchError(RuntimeError):
    """A kernel failed to launch or faulted while running (message names the kernel)."""


def kernel_dir() -> Path:
    """Folder holding the shipped ``.cu``/``.cuh`` sources, as a real filesystem path."""
    try:
        root = resources.files("pageweaver_edu.kernels")
        return Path(_files.enter_context(resources.as_file(root)))
    except ModuleNotFoundError:
        checkout = Path(__file__).resolve().parents[2] / "kernels"
        if checkout.is_dir():
            return checkout
        raise


def kernel_sources() -> list[Path]:
    """Every ``kernels/*.cu`` file, sorted by name."""
    return sorted(kernel_dir().glob("*.cu"))


def load_module(filename: str):
    """The compiled PyCUDA module of ``kernels/<filename>`` (compiled on first use)."""
    require_gpu()
    with _lock:
        mod = _modules.get(filename)
        if mod is None:
            ensure_context()
            import pycuda.driver as drv
            from pycuda.compiler import SourceModule

            folder = kernel_dir()
            source = (folder / filename).read_text(encoding="utf-8")
            major, minor = drv.Context.get_device().compute_capability()
            try:
                mod = SourceModule(
                    source,
                    options=list(NVCC_OPTIONS),
                    no_extern_c=True,
                    arch=f"sm_{major}{minor}",
                    include_dirs=[str(folder)],
                )
            except drv.CompileError as exc:
                raise GPULaunchError(f"nvcc failed on {filename}:\n{exc}") from exc
            _modules[filename] = mod
    return mod


def get_kernel(filename: str, name: str, arg_format: str):
    """A prepared kernel ``name`` from ``kernels/<filename>`` (cached).

    ``arg_format`` is PyCUDA's prepared-call format: ``P`` pointer (pass
    ``tensor.data_ptr()``), ``i`` int32, ``q`` int64.
    """
    key = (filename, name)
    func = _functions.get(key)
    if func is None:
        func = load_module(filename).get_function(name)
        func.prepare(arg_format)
        func.pw_name = name
        _functions[key] = func
    return func


def _check_stream() -> None:
    import torch

    if torch.cuda.current_stream().cuda_stream != 0:
        # PyCUDA cannot launch on a foreign stream handle: order by a (rare) host wait.
        torch.cuda.current_stream().synchronize()


def launch(func, grid: tuple[int, ...], block: tuple[int, int, int], *args) -> None:
    """Launch a prepared kernel on the default stream and check the launch."""
    import pycuda.driver as drv

    if grid[0] <= 0:
        return
    _check_stream()
    try:
        func.prepared_async_call(grid, block, None, *args)
        if os.environ.get(ENV_SYNC, "") == "1":
            drv.Context.synchronize()
    except drv.Error as exc:
        raise GPULaunchError(f"kernel {func.pw_name} grid={grid} block={block}: {exc}") from exc


def synchronize() -> None:
    """Wait for the device and surface any pending kernel fault as GPULaunchError."""
    import pycuda.driver as drv

    try:
        drv.Context.synchronize()
    except drv.Error as exc:
        raise GPULaunchError(f"a PageWeaver kernel faulted: {exc}") from exc
