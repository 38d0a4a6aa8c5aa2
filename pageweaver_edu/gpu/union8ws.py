"""The warp-specialized Union8 kernels (``kernels/union8ws.cu``): one persistent CTA per SM.

A producer warpgroup streams each group (its Q, then the pages of U_G) through a ring of
``slots`` 32 KiB stages; two consumer warpgroups, the paper's two CTAs of a group, read every
stage (docs/definitions.md#the-warp-specialized-kernel). Inputs as for the cluster kernels:

* :class:`Fp8WsUnionAttention` — an :class:`~.fp8_tiles.Fp8Cache`; the FP8 cluster kernel's
  arithmetic op for op (outputs bitwise identical to it), with two measured alternatives as
  options (``tc_sum``, ``lazy``), and the accurate mode (``accurate=True``: Q and P as two-level
  E4M3 operands);
* :class:`Bf16WsUnionAttention` — BF16 ``(k, v)``, packed once into half-page tiles
  (:func:`~.bf16_tiles.bf16_half_pages`); BF16 products accumulated in FP32.

The CTAs take groups from a group counter held by the launch object (one int64 on the
device). Every CTA claims once past the last group, so the launch's last claim is known on the
device; the CTA that makes it sets the counter back to 0 for the next launch. No host state
follows the counter, so launches, graph replays and a captured-but-never-replayed launch all
leave it right. Claim i runs group ``order[i]``, the plan's groups by |U_G|, largest first: a
one-CTA kernel of the same module (``union8ws_claim_order``) writes the order on the same
stream just before each launch, from the plan's page counts, with no host synchronisation.
"""

from __future__ import annotations

from ..core.inputs import PageWeaverInputError
from ..replay.fp8 import P_SCALE_LOG2
from .bf16_tiles import Bf16HalfPages, bf16_half_pages
from .fp8_tiles import TILE_BYTES, Fp8Cache
from .loader import GPULaunchError, launch, multiprocessors
from .union8 import Bf16UnionAttention
from .union8_fp8 import Fp8UnionAttention, ablation_option
from .union_attention import DIM, HEADS, UnionEntry, check_operand
from .union_plan import GpuUnionPlan

ORDER_THREADS = 1024  # kOrderThreads: the claim-order kernel's one CTA (union8ws_scheduler.cuh)
SLOTS = 6  # ring stages: 6 x 32 KiB + two 16 KiB Q tiles fit the 227 KiB of an H200 SM
Q_TILE_BYTES = 4 * HEADS * DIM * 2  # one consumer's 4 queries x 16 heads x 128 dims, BF16
#: The lazy FP8 consumer's constants (``kLazyShift``, ``kLazyTau`` in
#: union8ws_mainloop_fp8_lazy.cuh): P is scaled by 2^6 and a row's reference maximum moves
#: when a page passes it by more than 2.
LAZY_SHIFT, LAZY_TAU = 6, 2.0
#: Timing-only builds of the FP8 kernel (``PW_ABLATE``): the step table's ablations.
ABLATIONS = ("full", "no_softmax", "no_mma", "ring_only", "no_copies")
#: The register split (``kProducerRegs``, ``kConsumerRegs`` in union8ws.cu): the producer
#: warpgroup (128 threads) gives registers back, the two consumer warpgroups (256) take them.
PRODUCER_REGS, CONSUMER_REGS = 24, 240


def min_entry_registers() -> int:
    """The fewest registers per thread the entry may be launched with: the 128 producer
    threads' release must cover the 256 consumer threads' increase,
    ``128 (R - 24) >= 256 (240 - R)``, i.e. R >= 168."""
    return -(-(128 * PRODUCER_REGS + 256 * CONSUMER_REGS) // 384)


def emulation_options(tc_sum: bool = False, lazy: bool = False, accurate: bool = False) -> dict:
    """Keyword arguments of :func:`pageweaver_edu.replay.fp8.fp8_union_attention` that emulate
    the FP8 build with these options: the P scale, the lazy rescale, which probabilities l
    sums, and the two-level Q and P of the accurate mode."""
    return {"p_shift": LAZY_SHIFT if lazy else P_SCALE_LOG2,
            "lazy_tau": LAZY_TAU if lazy else None, "p8_sums": bool(tc_sum),
            "operands": "two_level" if accurate else "e4m3"}


def fp8_build_options(ablate: str = "full", overlap: bool = True, tc_sum: bool = False,
                      lazy: bool = False, accurate: bool = False) -> tuple[str, ...]:
    """The nvcc ``-D`` options of one build of ``union8ws_fp8`` (the parameters are
    :class:`Fp8WsUnionAttention`'s); the accurate mode has no lazy or tensor-core-sum form."""
    if accurate and (tc_sum or lazy):
        raise PageWeaverInputError("accurate=True runs its own arithmetic: it takes neither "
                                   "tc_sum nor lazy")
    return (ablation_option(ablate, ABLATIONS),
            f"-DPW_WS_OVERLAP={int(bool(overlap))}",
            f"-DPW_WS_TC_SUM={int(bool(tc_sum))}",
            f"-DPW_WS_LAZY={int(bool(lazy))}",
            f"-DPW_WS_ACCURATE={int(bool(accurate))}")


class _Persistent:
    """What both warp-specialized front ends add to their cluster kernel's: the launch shape,
    the group counter and the shared-memory size."""

    entries: dict[int, UnionEntry]
    threads = 384  # producer warpgroup + two consumer warpgroups
    prebuilt_slots = (SLOTS,)

    @classmethod
    def smem_bytes(cls, slots: int) -> int:
        """``union8ws::kSmemBytes``: 1 KiB alignment slack, ``slots`` x 32 KiB stages, a Q tile
        per consumer, stage metadata (8 B), two 80-byte headers and the barriers (full / empty
        per stage, header full / free per header)."""
        if slots not in range(2, 7):
            raise PageWeaverInputError(f"the ring has 2..6 stages (shared memory), got {slots!r}")
        return (1024 + slots * 2 * TILE_BYTES + 2 * Q_TILE_BYTES + slots * 8 + 2 * 80
                + 16 * slots + 32)

    @classmethod
    def kernel(cls, group: int, slots: int = SLOTS, options: tuple[str, ...] = ()):
        """The cluster kernel's :meth:`~.union_attention.UnionAttention.kernel`, refused unless
        the registers the entry is launched with cover the split (:func:`min_entry_registers`):
        a short pool would leave the consumers' ``setmaxnreg.inc`` waiting forever."""
        func, smem = super().kernel(group, slots, options)
        if not getattr(func, "pw_split_checked", False):
            import pycuda.driver as drv

            regs = func.get_attribute(drv.function_attribute.NUM_REGS)
            if regs < min_entry_registers():
                raise GPULaunchError(
                    f"{func.pw_name} was built with {regs} registers per thread; the producer"
                    f" / consumer split ({PRODUCER_REGS} / {CONSUMER_REGS}) needs "
                    f"{min_entry_registers()}")
            func.pw_split_checked = True
        return func, smem

    def _start_counter(self) -> None:
        import torch

        self.sms = multiprocessors()
        self.counter = torch.zeros(1, dtype=torch.int64, device=self.q.device)
        self.order = torch.empty(0, dtype=torch.int32, device=self.q.device)

    def _claim_order(self, plan: GpuUnionPlan) -> None:
        """Launch ``union8ws_claim_order``: :attr:`order` ([H*G] int32) = the plan's groups by
        |U_G|, largest first, the order in which the CTAs claim them."""
        import torch

        total = plan.num_groups * plan.heads
        if self.order.numel() != total:
            self.order = torch.empty(total, dtype=torch.int32, device=self.q.device)
        func = self.module_function("union8ws_claim_order", "PiP", self.slots, self.build_options)
        launch(func, (1, 1), (ORDER_THREADS, 1, 1), plan.page_counts.data_ptr(), total,
               self.order.data_ptr())

    def launch_grid(self, plan: GpuUnionPlan) -> tuple[int, int]:
        """One CTA per SM (fewer when there are fewer groups)."""
        return max(1, min(self.sms, plan.num_groups * plan.heads)), 1

    def run(self, plan: GpuUnionPlan):
        """Launch over ``plan`` (g = 8) and return :attr:`out`; an empty plan launches nothing."""
        if plan.num_groups * plan.heads == 0:
            return self.out
        self._claim_order(plan)
        return super().run(plan)


class Fp8WsUnionAttention(_Persistent, Fp8UnionAttention):
    """The warp-specialized FP8 Union8 (g = 8) over an :class:`~.fp8_tiles.Fp8Cache`.

    ``slots`` is the ring depth (default 6). By default the build runs the cluster kernel's
    arithmetic, bit for bit. Two measured alternatives (``benchmarks/bench_union8ws_notes.md``):
    ``tc_sum`` takes each page's sum p from the tensor core (1 % slower); ``lazy`` accumulates
    O in the tensor core across pages and rescales a row only when its maximum grows by more
    than a factor 4 (6 % faster, but 4.2 % NRMS against float64 on the 64K presets, over the
    4 % FP8 budget, so it is not the default: its own arithmetic emulates at 3.7 %, the rest
    most likely comes with O accumulated across pages by the FP8 tensor core). ``ablate`` (one
    of :data:`ABLATIONS`) and ``overlap=False`` (products one after the other) build the
    variants of ``benchmarks/bench_union8ws_steps.py``.

    ``accurate=True`` is the accurate mode: the same cache and FP8 tensor cores, with Q and P
    each fed as a high and a low E4M3 part (``kernels/union8ws_mainloop_fp8acc.cuh``; emulated
    by ``replay.fp8`` with ``operands="two_level"``): about 0.22 % NRMS against float64 on the
    FP8 cache where the fast mode has 3.5 %, for twice the tensor-core work per page. It takes
    neither ``tc_sum`` nor ``lazy``. The other parameters are
    :class:`~.union_attention.UnionAttention`'s.
    """

    source = "union8ws.cu"
    entries = {8: UnionEntry("union8ws_fp8", 1)}
    #: the builds tools/gpu_precompile.py compiles: the fast mode and the accurate mode
    prebuilt_options = (fp8_build_options(), fp8_build_options(accurate=True))
    operand_format = "PPPPPPPP"  # q, k, v^T, o, k scales, v scales, group counter, order

    def __init__(self, q, kv: Fp8Cache, causal_pos=None, lengths=None, slots: int = SLOTS,
                 scale=None, out=None, ablate: str = "full", overlap: bool = True,
                 tc_sum: bool = False, lazy: bool = False, accurate: bool = False):
        options = fp8_build_options(ablate, overlap, tc_sum, lazy, accurate)
        super().__init__(q, kv, causal_pos, lengths, slots, scale, out)
        self.build_options = options
        self.tc_sum, self.lazy, self.accurate = bool(tc_sum), bool(lazy), bool(accurate)
        self._start_counter()

    def emulation_options(self) -> dict:
        """:func:`emulation_options` of this build."""
        return emulation_options(self.tc_sum, self.lazy, self.accurate)

    def operands(self) -> tuple[int, ...]:
        """The cluster kernel's six, then the group counter and the claim order."""
        return (*super().operands(), self.counter.data_ptr(), self.order.data_ptr())


class Bf16WsUnionAttention(_Persistent, Bf16UnionAttention):
    """The warp-specialized BF16 Union8 (g = 8); ``kv = (k, v)`` as for
    :class:`~.union8.Bf16UnionAttention` (packed here once) or a
    :class:`~.bf16_tiles.Bf16HalfPages`.
    """

    source = "union8ws.cu"
    entries = {8: UnionEntry("union8ws_bf16", 1)}
    operand_format = "PPPPPPPP"  # q, k tiles, v^T tiles, o, -, -, group counter, order

    def __init__(self, q, kv, causal_pos=None, lengths=None, slots: int = SLOTS, scale=None,
                 out=None):
        super().__init__(q, kv, causal_pos, lengths, slots, scale, out)
        self._start_counter()

    def bind(self, kv) -> tuple[int, int]:
        """``kv``: BF16 ``(k, v)`` (checked as by the cluster kernel, then packed) or tiles."""
        if not isinstance(kv, Bf16HalfPages):
            super().bind(kv)
            kv = bf16_half_pages(self.k, self.v)
            del self.k, self.v
        import torch

        for name, x in (("k_tiles", kv.k_tiles), ("vt_tiles", kv.vt_tiles)):
            check_operand(name, x, torch.uint8)
            if tuple(x.shape[1:]) != (kv.heads, 2, TILE_BYTES) or x.shape != kv.k_tiles.shape:
                raise PageWeaverInputError(
                    f"{name} must be uint8 [pages, H, 2, 16384] (bf16_half_pages), got "
                    f"{tuple(x.shape)}")
        self.cache = kv
        return kv.heads, kv.pages

    def operands(self) -> tuple[int, ...]:
        """q, K tiles, V^T tiles, o, no scales, the group counter, the claim order."""
        c = self.cache
        return (self.q.data_ptr(), c.k_tiles.data_ptr(), c.vt_tiles.data_ptr(),
                self.out.data_ptr(), 0, 0, self.counter.data_ptr(), self.order.data_ptr())
