"""A script under ``tools/`` or ``benchmarks/`` loaded as a module (the folders are no
packages), for the tests that call its functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_tool(name: str, folder: str = "tools"):
    """``<folder>/<name>.py`` (``tools`` by default) as a fresh module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
