"""The FP8 tensor core's accumulator, as the CPU emulation models it.

An FP8 ``wgmma`` (E4M3 operands, FP32 accumulator) does not keep every bit of its FP32
accumulator: after each instruction (k = 32 products per output) the sum is held with
:data:`MMA_MANTISSA_BITS` mantissa bits, the lower ones cut off (toward zero). A product that
runs over several k-steps, or over a high and a low operand part one after the other (the
accurate mode's two-level operands), is cut once per step. :func:`mma_steps` repeats that
order: the k-steps of the first A part, then those of the second, each added to the
accumulator in FP32 and then truncated.
"""

from __future__ import annotations

K_STEP = 32  # products per output in one FP8 wgmma
MMA_MANTISSA_BITS = 13  # of the FP32 accumulator's 23, kept after each k-step


def truncate_mantissa(x, bits: int):
    """float32 ``x`` with its mantissa cut to ``bits`` bits (toward zero; any shape)."""
    import torch

    xi = x.contiguous().view(torch.int32)
    return (xi & ~((1 << (23 - bits)) - 1)).view(torch.float32)


def mma_steps(equation: str, a_parts, b, bits: int | None):
    """``sum(a_parts) · b`` as the FP8 tensor core accumulates it.

    Parameters
    ----------
    equation : str
        ``"bhd,btd->bht"`` (S = Q K^T, k over d) or ``"bht,btd->bhd"`` (O_p = P V, k over t).
    a_parts : sequence of torch.Tensor of float32
        The A operand's parts in the order the kernel issues them (one part: the fast mode;
        high then low: the accurate mode); k is their last dimension.
    b : torch.Tensor of float32, shape [b, t, d]
    bits : int or None
        Accumulator mantissa bits kept after each k-step; None: one exact FP32 einsum of the
        summed parts.

    Returns
    -------
    torch.Tensor of float32
    """
    import torch

    if bits is None:
        return torch.einsum(equation, sum(a_parts), b)
    over_t = equation == "bht,btd->bhd"
    acc = None
    for a in a_parts:
        for k in range(0, a.shape[-1], K_STEP):
            bk = b[:, k:k + K_STEP] if over_t else b[..., k:k + K_STEP]
            step = torch.einsum(equation, a[..., k:k + K_STEP].float(), bk.float())
            acc = truncate_mantissa(step if acc is None else acc + step, bits)
    return acc
