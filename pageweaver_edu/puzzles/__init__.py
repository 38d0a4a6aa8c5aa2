"""Kernel puzzles that build Union8 from the bottom up: the reader writes CUDA C, the series
runs it in a SIMT simulator on a CPU (or for real on a GPU) and checks it against the
project's references on fresh random cases.

======  ==========================================  ===============================
number  what the reader writes                       checked against
======  ==========================================  ===============================
1       A_i: causal and length masks per token       ``core.supports.token_support``
2       a window's bitmaps, ``popcount(b & ~u)``     ``core.bitmap``
3       one greedy round's warp arg-min              ``regroup.bitmap.greedy_regroup``
4       U_G with membership bytes (prefix sum)       ``core.union_plan.prepare_unions``
5       the Figure 3 slot protocol (parities)        every stage read once, in order
6       the online-softmax step of one page          ``core.attention.reference_attention``
7       E4M3 row quantization of Q and P             ``replay.e4m3``
8       a mini Union kernel of 8 queries             ``core.attention.reference_attention``
9       the warp-specialized ring: skip but release  every needed stage read once, in order
======  ==========================================  ===============================
"""

from __future__ import annotations

from importlib import resources

from ..notebook.kernel_code import kernel_excerpt
from .attention import SOFTMAX_STEP, UNION_KERNEL
from .checks import Puzzle, Result, check
from .engine import PuzzleLaunchError, default_device
from .fp8 import FP8_ROWS
from .groups import GREEDY_PICK, UNION_EMIT
from .selection import BITMAP_DELTAS, VISIBLE_TOKENS
from .slots import SLOT_RING, WS_RING

PUZZLES: dict[int, Puzzle] = {p.number: p for p in (
    VISIBLE_TOKENS, BITMAP_DELTAS, GREEDY_PICK, UNION_EMIT, SLOT_RING, SOFTMAX_STEP, FP8_ROWS,
    UNION_KERNEL, WS_RING)}

__all__ = ["PUZZLES", "Puzzle", "PuzzleLaunchError", "Result", "check", "default_device",
           "real_kernel", "reference_solution"]


def reference_solution(number: int) -> str:
    """The reference solution of puzzle ``number`` (for the tests; the chapters never show it)."""
    folder = resources.files("pageweaver_edu.puzzles.solutions")
    return folder.joinpath(PUZZLES[number].solution).read_text(encoding="utf-8")


class Locked(str):
    """A line shown instead of the real kernel's code while the puzzle is unsolved."""

    def _repr_markdown_(self) -> str:
        return str(self)


def real_kernel(result: Result):
    """The real kernel's code for the piece the reader just built, once the puzzle is solved.

    Returns
    -------
    KernelExcerpt or Locked
        The excerpt (shown as highlighted CUDA) when ``result.solved``, else one line saying
        that it opens once the puzzle is solved.
    """
    puzzle = PUZZLES[result.puzzle]
    if not result.solved:
        return Locked(f"Solve puzzle {puzzle.number} to see the same piece in "
                      f"`kernels/{puzzle.excerpt[0]}`.")
    return kernel_excerpt(*puzzle.excerpt)
