"""What every Union kernel front end shares: checking q and the positions, compiling the
kernel's entry points, and launching them over a :class:`~.union_plan.GpuUnionPlan`.

A Union kernel (docs/definitions.md#union8-execution) runs each group of g execution slots
over its page union U_G and writes every slot's output straight to its original row. Its
launch arguments are the kernel's own tensors (q, the KV cache, o, ...) followed by the
union plan of ``kernels/union_plan_args.cuh``. A front end is a subclass of
:class:`UnionAttention` that names the source, its entry per g, the format and pointers of its
own arguments, its dynamic shared memory and how its KV cache is given (:meth:`bind`);
:mod:`.union8` (BF16 KV) and :mod:`.union8_fp8` (FP8 KV) are the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..core.attention import softmax_scale
from ..core.inputs import PageWeaverInputError
from .device import require_gpu
from .loader import get_kernel, launch
from .tensors import cuda_positions, pointer
from .union_plan import GpuUnionPlan

HEADS, DIM, PAGE = 16, 128, 128  # local Q heads per KV head, d, tokens per page P
ALIGN = 16  # bytes: the bulk copies and vector loads / stores of q, the caches and o
#: PyCUDA format of ``UnionPlanArgs``: perm, groups, page_offsets, page_counts, pages, masks,
#: causal_pos, lengths, then N, G, H, pool pages, scale·log2(e) and a padding int (88 bytes).
PLAN_FORMAT = "PPPPPPPP" + "iiiifi"


def check_operand(name: str, x, dtype) -> None:
    """Refuse (one line) a kernel operand that is not a contiguous CUDA tensor of ``dtype``
    starting at a multiple of :data:`ALIGN` bytes (a view at an odd offset, say).

    Parameters
    ----------
    name : str
        The operand's name in the message.
    x : torch.Tensor
    dtype : torch.dtype
    """
    if x.dtype != dtype or not x.is_cuda or not x.is_contiguous():
        raise PageWeaverInputError(f"{name} must be a contiguous {dtype} CUDA tensor, got "
                                   f"{x.dtype} on {x.device}, contiguous={x.is_contiguous()}")
    if x.data_ptr() % ALIGN:
        raise PageWeaverInputError(
            f"{name} starts at address {x.data_ptr():#x}, not a multiple of {ALIGN} bytes "
            "(the kernels copy it in 16-byte units)")


@dataclass(frozen=True)
class UnionEntry:
    """One entry point of a Union kernel source.

    Attributes
    ----------
    name : str
        The ``extern "C"`` kernel name.
    ctas : int
        CTAs per group (Union8: a cluster of 2, Union4: 1).
    """

    name: str
    ctas: int


class UnionAttention:
    """A prepared Union kernel launch for fixed q, KV cache and positions.

    Parameters
    ----------
    q : torch.Tensor of bfloat16 on the GPU, shape [N, H*16, 128], contiguous
    kv : object
        The KV cache in the form the subclass takes (:meth:`bind`).
    causal_pos, lengths : torch.Tensor or array_like of int, shape [N], optional
        c_i and L_i.
    slots : int
        KV slots per CTA (the ``PW_UNION_SLOTS`` build).
    scale : float, optional
        Softmax scale; ``1/sqrt(128)`` when None.
    out : torch.Tensor of bfloat16, shape [N, H*16, 128], optional
        Written in place; rows the plan does not run stay untouched.

    Notes
    -----
    :meth:`run` picks the entry for the plan's g (:attr:`entries`), so one object runs Union8
    plans (g = 8) and Union4 plans (g = 4) over the same inputs.
    """

    #: Kernel source in ``kernels/``.
    source: ClassVar[str]
    #: g -> entry point.
    entries: ClassVar[dict[int, UnionEntry]]
    #: PyCUDA format of the kernel's own arguments (before the union plan).
    operand_format: ClassVar[str]
    threads: ClassVar[int] = 128
    #: ``PW_UNION_SLOTS`` builds compiled ahead of parallel test workers (tools/gpu_precompile.py).
    prebuilt_slots: ClassVar[tuple[int, ...]] = (2,)
    arch: ClassVar[str] = "compute_90a"  # clusters and multicast bulk copies
    code: ClassVar[str] = "sm_90a"

    @classmethod
    def smem_bytes(cls, slots: int) -> int:
        """Dynamic shared memory of one CTA with ``slots`` KV slots, in bytes."""
        raise NotImplementedError

    @classmethod
    def kernel(cls, group: int, slots: int = 2, options: tuple[str, ...] = ()):
        """The compiled entry point for g (cached by :func:`~.loader.get_kernel`).

        Parameters
        ----------
        group : int
            g; a key of :attr:`entries`.
        slots : int
            KV slots per CTA (``-DPW_UNION_SLOTS``).
        options : tuple of str
            Further nvcc options of the build (e.g. ``-D`` switches of a variant).

        Returns
        -------
        func : pycuda.driver.Function
        smem : int
            Dynamic shared memory per CTA in bytes.
        """
        if group not in cls.entries:
            raise PageWeaverInputError(
                f"{cls.__name__} has no kernel for g = {group}; it runs g in {sorted(cls.entries)}")
        smem = cls.smem_bytes(slots)
        func = cls.module_function(cls.entries[group].name, cls.operand_format + PLAN_FORMAT,
                                   slots, options, max_dynamic_shared=smem)
        return func, smem

    @classmethod
    def module_function(cls, name: str, arg_format: str, slots: int,
                        options: tuple[str, ...] = (), max_dynamic_shared: int = 0):
        """Entry ``name`` of :attr:`source` built with ``slots`` KV slots and ``options``
        (:func:`~.loader.get_kernel`: the build is compiled once for all its entries)."""
        return get_kernel(cls.source, name, arg_format, arch=cls.arch, code=cls.code,
                          options=(f"-DPW_UNION_SLOTS={slots}", *options),
                          max_dynamic_shared=max_dynamic_shared)

    def __init__(self, q, kv, causal_pos=None, lengths=None, slots: int = 2,
                 scale: float | None = None, out=None):
        import torch

        require_gpu()
        self.heads, self.num_pages = self.bind(kv)
        n, qh, d = q.shape
        if d != DIM or qh != HEADS * self.heads:
            raise PageWeaverInputError(
                f"need q [N, H*16, 128] with H = {self.heads}; got {tuple(q.shape)}")
        check_operand("q", q, torch.bfloat16)
        if out is not None:
            check_operand("out", out, torch.bfloat16)
            if out.shape != q.shape:
                raise PageWeaverInputError(
                    f"out must have q's shape {tuple(q.shape)}, got {tuple(out.shape)}")
        self.q, self.n, self.slots = q, n, slots
        self.causal = cuda_positions(causal_pos, n, "causal_pos")
        self.lengths = cuda_positions(lengths, n, "lengths")
        self.scale_log2 = softmax_scale(scale, DIM) * float(np.log2(np.e))
        self.out = torch.empty_like(q) if out is None else out

    #: Further nvcc options of this object's build (see :meth:`kernel`).
    build_options: tuple[str, ...] = ()

    def bind(self, kv) -> tuple[int, int]:
        """Check and keep the KV cache; returns (H KV heads, pages in the pool)."""
        raise NotImplementedError

    def launch_grid(self, plan: GpuUnionPlan) -> tuple[int, int]:
        """The launch grid for ``plan``: by default every group's CTAs along x, heads along y."""
        return plan.num_groups * self.entries[plan.group].ctas, self.heads

    def operands(self) -> tuple[int, ...]:
        """Device pointers of the kernel's own arguments, in its ``Args`` order."""
        raise NotImplementedError

    def run(self, plan: GpuUnionPlan):
        """Launch over ``plan`` and return :attr:`out`.

        Parameters
        ----------
        plan : GpuUnionPlan
            Built for these N and H, with a g this kernel has an entry for.

        Returns
        -------
        torch.Tensor of bfloat16, shape [N, H*16, 128]
        """
        if plan.heads != self.heads or plan.n != self.n:
            raise PageWeaverInputError(
                f"{type(self).__name__} runs N = {self.n}, H = {self.heads}; the plan has "
                f"N = {plan.n}, H = {plan.heads}")
        func, smem = self.kernel(plan.group, self.slots, self.build_options)
        groups = plan.num_groups
        launch(func, self.launch_grid(plan), (self.threads, 1, 1),
               *self.operands(), plan.perm.data_ptr(), plan.groups.data_ptr(),
               plan.page_offsets.data_ptr(), plan.page_counts.data_ptr(), plan.pages.data_ptr(),
               plan.masks.data_ptr(),
               pointer(self.causal), pointer(self.lengths), self.n, groups, self.heads,
               self.num_pages, self.scale_log2, 0, shared_size=smem)
        return self.out
