"""Host inputs turned into the CUDA tensors the kernels read, and their raw pointers.

Every GPU front end takes NumPy arrays or torch tensors; these helpers check them once and
hand back contiguous CUDA tensors of the kernel's dtype (torch is imported inside them, so
importing this module needs no GPU).
"""

from __future__ import annotations

import numpy as np

from ..core.inputs import INT32_MAX, INT32_MIN, PageWeaverInputError, integer_array


def cuda_ids(x, name: str, ndims: tuple[int, ...]):
    """``x`` as a contiguous, 16-byte aligned int32 CUDA tensor.

    Parameters
    ----------
    x : torch.Tensor or array_like of int
        Page ids or π in int32's range; negative entries are padding and become -1.
    name : str
        Name used in error messages.
    ndims : tuple of int
        Accepted numbers of dimensions.

    Returns
    -------
    torch.Tensor of int32 on the GPU, the shape of ``x``
        ``x`` itself when it already is one.
    """
    import torch

    x = _integer_tensor(x, name, INT32_MIN)
    if x.dim() not in ndims:
        dims = " or ".join(map(str, ndims))
        raise PageWeaverInputError(f"{name} must have {dims} dims, got {tuple(x.shape)}")
    if not x.is_cuda:
        x = x.cuda()
    if x.dtype != torch.int32:
        x = x.clamp(min=-1).to(torch.int32)
    x = x.contiguous()
    if x.data_ptr() % 16:  # the kernels read rows with 16-byte loads
        x = x.clone()
    return x


def cuda_positions(x, n: int, name: str):
    """An optional per-query vector (c_i or L_i) as int32 CUDA ``[N]``, or None.

    Parameters
    ----------
    x : torch.Tensor or array_like of int, shape [N], or None
    n : int
        N.
    name : str
        Name used in error messages.

    Returns
    -------
    torch.Tensor of int32 on the GPU, shape [N], or None
    """
    import torch

    if x is None:
        return None
    t = _integer_tensor(x, name, 0)
    if tuple(t.shape) != (n,):
        raise PageWeaverInputError(f"{name} must have shape [N] = ({n},), got {tuple(t.shape)}")
    return t.to(device="cuda", dtype=torch.int32).contiguous()


def _integer_tensor(x, name: str, low: int):
    """``x`` as a torch integer tensor whose values are in ``low .. INT32_MAX`` (checked on the
    host for arrays, on the tensor's device when it is wider than int32)."""
    import torch

    if not isinstance(x, torch.Tensor):
        return torch.from_numpy(np.ascontiguousarray(integer_array(x, name, low, INT32_MAX)))
    if x.dtype == torch.bool or x.is_floating_point() or x.is_complex():
        raise PageWeaverInputError(f"{name} must have an integer dtype, got {x.dtype}")
    if x.dtype != torch.int32 and x.numel() and (int(x.min()) < low or int(x.max()) > INT32_MAX):
        raise PageWeaverInputError(f"{name} holds values outside {low}..{INT32_MAX}")
    return x


def pointer(t) -> int:
    """Device address of a tensor for a kernel argument; 0 (nullptr) for None."""
    return 0 if t is None else t.data_ptr()
