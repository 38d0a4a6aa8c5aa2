"""Live GPU kernels of PageWeaver (PyCUDA + torch CUDA tensors).

Importing this package never touches the GPU; the entry points call
:func:`.device.require_gpu` first and raise :class:`~.device.GPUUnavailableError` (with the
reason) on a CPU-only machine.

- :func:`gpu_greedy_regroup` — ``kernels/regroup.cu``, π bit-identical to
  :func:`pageweaver_edu.regroup.greedy_regroup`.
- :func:`gpu_prepare_unions` — ``kernels/union_prepare.cu``, the :class:`GpuUnionPlan` whose
  fields equal :func:`pageweaver_edu.core.prepare_unions`'s.
- :func:`gpu_regroup_plan` — the fused online regroup (``kernels/regroup.cu``): π and the
  union plan in one launch.
- :class:`Bf16UnionAttention`, :class:`Fp8UnionAttention` — the Union8 / Union4 cluster
  kernels (``kernels/union8.cu``, ``kernels/union8_fp8.cu``);
  :class:`Bf16WsUnionAttention`, :class:`Fp8WsUnionAttention` — the warp-specialized Union8
  (``kernels/union8ws.cu``); :data:`UNION_KERNELS` lists every Union kernel front end.
- :func:`sparse_union_attention` — the call for serving code: fused plan + warp-specialized
  Union8 on torch's current stream, CUDA-graph capturable.

Every launch goes to torch's current stream with no host synchronisation
(:func:`.streams.stream_scope`).
"""

from .bf16_tiles import Bf16HalfPages, bf16_half_pages
from .device import (
    GPUUnavailableError,
    gpu_available,
    gpu_required_by_env,
    gpu_unavailable_reason,
    require_gpu,
)
from .fp8_tiles import Fp8Cache, fp8_cache_from_bf16, fp8_cache_from_kv
from .loader import GPULaunchError, kernel_dir, kernel_sources
from .regroup import VARIANTS, RegroupLaunch, gpu_greedy_regroup, pick_variant, regroup_launch
from .regroup_plan import RegroupPlanLaunch, gpu_regroup_plan, regroup_plan_launch
from .serving import sparse_union_attention
from .union8 import Bf16UnionAttention
from .union8_fp8 import Fp8UnionAttention
from .union8ws import Bf16WsUnionAttention, Fp8WsUnionAttention
from .union_attention import UnionAttention, UnionEntry
from .union_plan import GpuUnionPlan
from .unions import UnionPrepLaunch, gpu_prepare_unions, union_prep_launch

#: Every Union kernel front end (precompiled by tools/gpu_precompile.py, SASS-checked by the
#: tests); a new one is a subclass of UnionAttention in its own module, listed here.
UNION_KERNELS: tuple[type[UnionAttention], ...] = (
    Bf16UnionAttention, Fp8UnionAttention, Bf16WsUnionAttention, Fp8WsUnionAttention)

__all__ = [
    "UNION_KERNELS",
    "VARIANTS",
    "Bf16HalfPages",
    "Bf16UnionAttention",
    "Bf16WsUnionAttention",
    "Fp8Cache",
    "Fp8UnionAttention",
    "Fp8WsUnionAttention",
    "GPULaunchError",
    "GPUUnavailableError",
    "GpuUnionPlan",
    "RegroupLaunch",
    "RegroupPlanLaunch",
    "UnionAttention",
    "UnionEntry",
    "UnionPrepLaunch",
    "bf16_half_pages",
    "fp8_cache_from_bf16",
    "fp8_cache_from_kv",
    "gpu_available",
    "gpu_greedy_regroup",
    "gpu_regroup_plan",
    "gpu_prepare_unions",
    "gpu_required_by_env",
    "gpu_unavailable_reason",
    "kernel_dir",
    "kernel_sources",
    "pick_variant",
    "regroup_launch",
    "regroup_plan_launch",
    "require_gpu",
    "sparse_union_attention",
    "union_prep_launch",
]
