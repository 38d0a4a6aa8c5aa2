"""CUDA sources of the PageWeaver kernels, shipped inside the wheel as package data.

The top-level ``kernels/`` folder is mapped to the package ``pageweaver_edu.kernels``, so the
same lookup works in a source checkout, an editable install and an installed wheel.
"""

from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent


def kernel_path(name: str) -> Path:
    """Path of a kernel source file such as ``"regroup.cu"``; raises if it is not shipped."""
    path = KERNEL_DIR / name
    if not path.is_file():
        shipped = sorted(p.name for p in KERNEL_DIR.glob("*.cu*"))
        raise FileNotFoundError(f"kernel source {name!r} not found; shipped: {shipped}")
    return path
