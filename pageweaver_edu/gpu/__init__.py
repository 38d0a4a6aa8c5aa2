"""Live GPU kernels of PageWeaver (PyCUDA + torch CUDA tensors).

Importing this package never touches the GPU; the entry points call
:func:`pageweaver_edu.gpu.device.require_gpu` first and raise
:class:`~pageweaver_edu.gpu.device.GPUUnavailableError` (with the reason) on a CPU-only machine.

- :func:`gpu_greedy_regroup` — ``kernels/regroup.cu``, π bit-identical to
  :func:`pageweaver_edu.regroup.bitmap.greedy_regroup`.
- :func:`gpu_prepare_unions` — ``kernels/union_prepare.cu``, the fields of
  :func:`pageweaver_edu.core.union_plan.prepare_unions`.
"""

from .device import (
    GPUUnavailableError,
    gpu_available,
    gpu_required_by_env,
    gpu_unavailable_reason,
    require_gpu,
)
from .loader import GPULaunchError, kernel_dir, kernel_sources
from .regroup import VARIANTS, RegroupLaunch, gpu_greedy_regroup, pick_variant, regroup_launch
from .unions import GpuUnionPlan, gpu_prepare_unions, union_plan

__all__ = [
    "GPULaunchError",
    "GPUUnavailableError",
    "GpuUnionPlan",
    "RegroupLaunch",
    "VARIANTS",
    "gpu_available",
    "gpu_greedy_regroup",
    "gpu_prepare_unions",
    "gpu_required_by_env",
    "gpu_unavailable_reason",
    "kernel_dir",
    "kernel_sources",
    "pick_variant",
    "regroup_launch",
    "require_gpu",
    "union_plan",
]
