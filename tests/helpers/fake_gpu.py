"""Stand-ins that let the GPU front ends run their host code on a CPU.

:func:`install_fake_pycuda` replaces ``pycuda`` by a recorder: compiling, setting function
attributes and launching only log what they were asked. :func:`cpu_tensors_as_cuda` makes CPU
torch tensors pass for CUDA ones (``.cuda()`` and ``device="cuda"`` stay on the CPU,
``is_cuda`` is true). Together they check launch geometry, argument lists and plan layouts
without a GPU; what a kernel computes is checked by tests/gpu on an H200.
"""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager

SMS = 132  # the fake device's multiprocessors (an H200's)
REGS = 168  # registers per thread the fake compiler reports for every entry


class FakeFunction:
    """A prepared kernel that records its attributes, format and launches in ``log``."""

    def __init__(self, name, log):
        self.name, self.log, self.fmt = name, log, None

    def set_attribute(self, attr, value):
        self.log.append(("attr", self.name, attr, value))

    def get_attribute(self, attr):
        return {"NUM_REGS": REGS}[attr]

    def prepare(self, fmt):
        self.fmt = fmt
        self.log.append(("prepare", self.name, fmt))

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.log.append(("launch", self.name, grid, block, stream, args, shared_size))


def install_fake_pycuda(monkeypatch) -> list:
    """Install the recording ``pycuda`` and make the loader skip the device checks.

    Returns
    -------
    list of tuple
        The log: ``("compile", arch, code, options)``, ``("attr", name, attr, value)``,
        ``("prepare", name, format)``, ``("launch", name, grid, block, stream, args, smem)``,
        ``("memset", address, value, words, stream)``. Launches see the stream None (torch's
        default stream).
    """
    from pageweaver_edu.gpu import loader, serving, streams

    log = []

    class Module:
        def __init__(self, source, **kw):
            log.append(("compile", kw["arch"], kw["code"], tuple(kw["options"])))

        def get_function(self, name):
            return FakeFunction(name, log)

    @contextmanager
    def default_stream():
        yield None

    drv = types.SimpleNamespace(
        Error=RuntimeError, CompileError=RuntimeError,
        memset_d32_async=lambda *args: log.append(("memset", *args)),
        Stream=lambda flags=0: types.SimpleNamespace(handle=0, flags=flags),
        function_attribute=types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="MAXDYN",
                                                 NUM_REGS="NUM_REGS"),
        device_attribute=types.SimpleNamespace(MULTIPROCESSOR_COUNT="SMS"),
        Context=types.SimpleNamespace(
            get_device=lambda: types.SimpleNamespace(
                compute_capability=lambda: (9, 0),
                get_attribute=lambda attr: {"SMS": SMS}[attr]),
            synchronize=lambda: None),
    )
    pkg = types.ModuleType("pycuda")
    pkg.driver, pkg.compiler = drv, types.SimpleNamespace(SourceModule=Module)
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", pkg.compiler)
    monkeypatch.setattr(loader, "require_gpu", lambda: None)
    monkeypatch.setattr(loader, "ensure_context", lambda: None)
    monkeypatch.setattr(loader, "stream_scope", default_stream)
    monkeypatch.setattr(serving, "stream_scope", default_stream)
    monkeypatch.setattr(loader, "_modules", {})
    monkeypatch.setattr(loader, "_functions", {})
    monkeypatch.setattr(loader, "_launches", {})  # prepared launches hold fake functions
    for name in ("_paired", "_own"):  # streams made under the fake go with it
        monkeypatch.setattr(streams, name, {})
    monkeypatch.setattr(streams, "_spare", [])
    return log


def cpu_tensors_as_cuda(monkeypatch) -> None:
    """Let CPU tensors pass for CUDA tensors and let the front ends' device checks pass."""
    import torch

    from pageweaver_edu.gpu import regroup, serving, union_attention, unions

    def strip(kwargs):
        return {k: v for k, v in kwargs.items() if not (k == "device" and str(v) == "cuda")}

    to = torch.Tensor.to
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(torch.Tensor, "to", lambda self, *a, **k: to(
        self, *[x for x in a if str(x) != "cuda"], **strip(k)))
    for name in ("zeros", "empty", "full", "randn", "arange"):
        make = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *a, _make=make, **k: _make(*a, **strip(k)))
    for module in (regroup, serving, union_attention, unions):
        monkeypatch.setattr(module, "require_gpu", lambda: None)
