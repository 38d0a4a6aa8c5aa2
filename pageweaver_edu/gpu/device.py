"""The one place that decides whether the live GPU kernels can run.

The GPU path needs three things: PyCUDA importable (it compiles and launches ``kernels/*.cu``),
a CUDA device visible to the driver, and PyTorch with CUDA (launches take torch CUDA tensors
and run on torch's current stream). Importing this module — or the package — never touches
the GPU: the probe runs on first use, never imports ``pycuda.autoinit`` and creates no
context. :func:`ensure_context` makes the device's *primary* context current (the one PyTorch
uses too) through ``pycuda.autoprimaryctx``, only when a kernel is about to be loaded.

``PAGEWEAVER_REQUIRE_GPU=1`` turns every "GPU unavailable, skipping" into a failure (the GPU
runner sets it, so a broken install cannot pass by skipping).
"""

from __future__ import annotations

import functools
import os

ENV_REQUIRE_GPU = "PAGEWEAVER_REQUIRE_GPU"

__all__ = [
    "ENV_REQUIRE_GPU",
    "GPUUnavailableError",
    "ensure_context",
    "gpu_available",
    "gpu_required_by_env",
    "gpu_unavailable_reason",
    "require_gpu",
]


class GPUUnavailableError(RuntimeError):
    """A GPU entry point was called where the GPU path cannot run; the message says why."""


def gpu_required_by_env() -> bool:
    """True when ``PAGEWEAVER_REQUIRE_GPU=1`` (GPU tests must run, not skip)."""
    return os.environ.get(ENV_REQUIRE_GPU, "").strip().lower() in {"1", "true", "yes", "on"}


@functools.lru_cache(maxsize=1)
def _probe() -> str | None:
    """None when the GPU path can run, else the reason it cannot (cached)."""
    try:
        import pycuda.driver as drv
    except Exception as exc:  # ImportError, or a broken build that fails to load libcuda
        return (
            f"PyCUDA is not importable ({type(exc).__name__}: {exc}); install the 'gpu' "
            "extra or run tools/gpu_setup.sh"
        )
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as exc:
        return f"the CUDA driver did not initialise ({type(exc).__name__}: {exc})"
    if count == 0:
        return "the CUDA driver reports no device"
    major, minor = drv.Device(0).compute_capability()
    if (major, minor) < (8, 0):
        return f"device 0 has compute capability {major}.{minor}; the kernels need 8.0 or newer"
    try:
        import torch
    except Exception as exc:
        return f"PyTorch is not importable ({type(exc).__name__}: {exc})"
    if not torch.cuda.is_available():
        return "PyTorch was built without CUDA or sees no CUDA device"
    return None


def gpu_unavailable_reason() -> str | None:
    """Why the GPU path cannot run here, or None when it can."""
    return _probe()


def gpu_available() -> bool:
    """True when PyCUDA imports, a CUDA device is present and PyTorch sees it."""
    return _probe() is None


def require_gpu() -> None:
    """Raise :class:`GPUUnavailableError` (naming the reason) unless the GPU path can run."""
    reason = _probe()
    if reason is not None:
        raise GPUUnavailableError(f"the PageWeaver GPU kernels cannot run here: {reason}")


@functools.lru_cache(maxsize=1)
def ensure_context():
    """Make device 0's primary context current in this process (shared with PyTorch).

    Returns
    -------
    pycuda.driver.Context
    """
    require_gpu()
    import torch

    torch.cuda.init()  # PyTorch retains the same primary context
    import pycuda.autoprimaryctx  # noqa: F401  (lazy: pushes the primary context)
    import pycuda.driver as drv

    return drv.Context.get_current()
