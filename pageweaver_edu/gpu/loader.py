"""Compile-once loading of ``kernels/*.cu`` and error-checked launches (PyCUDA).

Sources are found through ``importlib.resources.files("pageweaver_edu.kernels")`` (the
top-level ``kernels/`` folder is mapped to that package by ``pyproject.toml``), with a
fallback to ``<checkout>/kernels`` when the package is imported from a source tree that was
not installed. Each ``.cu`` file is compiled once per process and set of options (PyCUDA also
keeps its on-disk cubin cache), by default for the device's own architecture (``sm_90`` on the
H200: the regroup and union-preparation kernels use no ``sm_90a``-only instruction, so the plain
target is the right one). A kernel that needs more names it: ``union8.cu`` passes
``arch="compute_90a", code="sm_90a"`` (multicast bulk copies) and a ``-D`` option.

Launches go to torch's current stream, whatever stream the caller is on, with no host
synchronisation (:func:`.streams.stream_scope`: PyCUDA launches on a PyCUDA stream paired with
torch's, forked and joined with one event each way; directly on the legacy default stream).
``launch(..., shared_size=)`` passes a dynamic shared-memory size; a kernel that needs more
than 48 KiB of it is prepared with ``get_kernel(..., max_dynamic_shared=)``, which raises the
function's limit once. Every launch is checked: a failed ``cuLaunchKernel`` raises
:class:`GPULaunchError` naming the kernel, and with ``PAGEWEAVER_GPU_SYNC=1`` each launch
outside a graph capture is also synchronised so that a fault inside the kernel is reported
against the kernel that caused it. ``PAGEWEAVER_WAIT_TIMEOUT_NS=<ns>`` compiles every kernel
with that bound for the FP8 kernels' mbarrier waits (``PW_WAIT_TIMEOUT_NS``, 10 s by default):
a run under compute-sanitizer, whose instrumentation slows every wait, raises it so that a slow
wait is not taken for a protocol error.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

from ..core.inputs import PageWeaverInputError
from .device import ensure_context, require_gpu
from .streams import capturing, ensure_spare, stream_scope

ENV_SYNC = "PAGEWEAVER_GPU_SYNC"
ENV_WAIT_TIMEOUT = "PAGEWEAVER_WAIT_TIMEOUT_NS"
NVCC_OPTIONS = ["-std=c++17", "-O3", "-lineinfo"]

_lock = threading.Lock()
_modules: dict[tuple, object] = {}
_functions: dict[tuple, object] = {}
_launches: dict[str, OrderedDict] = {}  # family -> key -> prepared launch (cached_launch)
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


def wait_bound_options() -> tuple[str, ...]:
    """``("-DPW_WAIT_TIMEOUT_NS=<ns>ull",)`` when ``PAGEWEAVER_WAIT_TIMEOUT_NS`` holds a
    positive integer of nanoseconds below 2^64, ``()`` when it is unset or empty; any other
    value raises :class:`~pageweaver_edu.core.inputs.PageWeaverInputError`."""
    raw = os.environ.get(ENV_WAIT_TIMEOUT, "").strip()
    if not raw:
        return ()
    if not raw.isdigit() or not 0 < int(raw) < 2**64:
        raise PageWeaverInputError(
            f"{ENV_WAIT_TIMEOUT} must be a positive integer of nanoseconds, got {raw!r}")
    return (f"-DPW_WAIT_TIMEOUT_NS={int(raw)}ull",)


def load_module(filename: str, arch: str | None = None, code: str | None = None,
                options: tuple[str, ...] = ()):
    """The compiled PyCUDA module of ``kernels/<filename>`` (compiled on first use).

    Parameters
    ----------
    filename : str
        Source file in :func:`kernel_dir`.
    arch, code : str, optional
        nvcc ``-arch`` / ``-code``; ``arch`` defaults to the device's ``sm_XY``.
    options : tuple of str
        Extra nvcc options after :data:`NVCC_OPTIONS` (e.g. ``-DNAME=value``), then
        :func:`wait_bound_options`.
    """
    require_gpu()
    options = (*options, *wait_bound_options())
    with _lock:
        key = (filename, arch, code, options)
        mod = _modules.get(key)
        if mod is None:
            ensure_context()
            import pycuda.driver as drv
            from pycuda.compiler import SourceModule

            folder = kernel_dir()
            source = (folder / filename).read_text(encoding="utf-8")
            if arch is None:
                major, minor = drv.Context.get_device().compute_capability()
                arch = f"sm_{major}{minor}"
            try:
                mod = SourceModule(
                    source,
                    options=[*NVCC_OPTIONS, *options],
                    no_extern_c=True,
                    arch=arch,
                    code=code,
                    include_dirs=[str(folder)],
                )
            except drv.CompileError as exc:
                raise GPULaunchError(f"nvcc failed on {filename}:\n{exc}") from exc
            _modules[key] = mod
    return mod


def get_kernel(filename: str, name: str, arg_format: str, *, arch: str | None = None,
               code: str | None = None, options: tuple[str, ...] = (),
               max_dynamic_shared: int = 0):
    """A prepared kernel ``name`` from ``kernels/<filename>`` (cached).

    Parameters
    ----------
    filename : str
        Source file in ``kernels/``.
    name : str
        Its ``extern "C"`` entry point.
    arg_format : str
        PyCUDA's prepared-call format: ``P`` pointer (pass ``tensor.data_ptr()``), ``i``
        int32, ``q`` int64, ``f`` float32.
    arch, code : str, optional
        nvcc ``-arch`` / ``-code``; the device's own ``sm_XY`` when None.
    options : tuple of str
        Further nvcc options (``-D...``); part of the cache key, as arch and code are.
    max_dynamic_shared : int
        > 0 sets the function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` (needed before a launch
        with more than 48 KiB).

    Returns
    -------
    pycuda.driver.Function
        Prepared with ``arg_format``.
    """
    options = tuple(options)
    key = (filename, name, arch, code, options, wait_bound_options(), max_dynamic_shared)
    func = _functions.get(key)
    if func is None:
        import pycuda.driver as drv

        func = load_module(filename, arch, code, options).get_function(name)
        if max_dynamic_shared:
            func.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               max_dynamic_shared)
        func.prepare(arg_format)
        func.pw_name = name
        _functions[key] = func
        ensure_spare()  # kernels are prepared outside captures: so is the first spare stream
    return func


def launch(func, grid: tuple[int, ...], block: tuple[int, int, int], *args,
           shared_size: int = 0) -> None:
    """Launch a prepared kernel on torch's current stream (:func:`stream_scope`) and check the
    launch.

    Parameters
    ----------
    func : pycuda.driver.Function
        From :func:`get_kernel`.
    grid : tuple of int
        Blocks per dimension; a zero dimension launches nothing.
    block : tuple of int
        Threads per block (x, y, z).
    *args
        The kernel's arguments, in ``func``'s prepared format.
    shared_size : int
        Dynamic shared memory per block in bytes.
    """
    import pycuda.driver as drv

    if min(grid) <= 0:
        return
    with stream_scope() as stream:
        try:
            func.prepared_async_call(grid, block, stream, *args, shared_size=shared_size)
            if os.environ.get(ENV_SYNC, "") == "1" and not capturing():
                drv.Context.synchronize()
        except drv.Error as exc:
            raise GPULaunchError(
                f"kernel {func.pw_name} grid={grid} block={block}: {exc}") from exc


def zero_async(tensor) -> None:
    """Zero a CUDA tensor of a whole number of 32-bit words on torch's current stream (a
    memset node when captured)."""
    import pycuda.driver as drv

    words = tensor.numel() * tensor.element_size() // 4
    with stream_scope() as stream:
        drv.memset_d32_async(tensor.data_ptr(), 0, words, stream)


def multiprocessors() -> int:
    """Streaming multiprocessors of the current device (the grid of a persistent kernel)."""
    require_gpu()
    ensure_context()
    import pycuda.driver as drv

    return int(drv.Context.get_device().get_attribute(
        drv.device_attribute.MULTIPROCESSOR_COUNT))


def synchronize() -> None:
    """Wait for the device and surface any pending kernel fault as GPULaunchError."""
    import pycuda.driver as drv

    try:
        drv.Context.synchronize()
    except drv.Error as exc:
        raise GPULaunchError(f"a PageWeaver kernel faulted: {exc}") from exc


def cached_launch(family: str, key, make, keep: int = 64):
    """The prepared launch of ``family`` (a front end's name) for ``key``, made by ``make()`` on
    first use; the ``keep`` most recently used of each family are kept (the ``*_launch``
    functions of the front ends). Every family's cache lives here, beside the modules and
    functions, so that one place holds what a process has prepared."""
    cache = _launches.setdefault(family, OrderedDict())
    prepared = cache.get(key)
    if prepared is None:
        prepared = cache[key] = make()
        while len(cache) > keep:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return prepared
