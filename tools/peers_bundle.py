#!/usr/bin/env python3
"""Trim and check the FlashInfer peer bundle (tools/fill_peers.sh calls this).

``trim SITE``  removes from an unpacked site-packages tree (flashinfer 0.7.4, apache-tvm-ffi,
the nvidia-cutlass-dsl 4.8.1 wheels) what FlashInfer's paged decode
(``BatchDecodeWithPagedKVCacheWrapper``, with and without tensor cores, BF16 / FP8 E4M3 KV)
and ``flashinfer.msa_ops.msa_sparse_attention`` on SM90 (Cake programs and the CuTe DSL union
route) never read:

* ``flashinfer/data/csrc``: everything but the ``batch_decode*`` (not MLA) and
  ``batch_prefill*`` JIT sources and templates (tensor-core decode runs the FA2 prefill
  kernels; the FA3 ones are kept too), the top-level headers, and ``cake_hopper_msa/``
  (the generated Hopper MSA programs); the header trees ``data/include``, ``data/cutlass``,
  ``data/cccl`` and ``data/spdlog`` stay whole;
* CUDA / C sources outside ``flashinfer/data`` (the ``cake_*_backend/csrc`` families, MoE,
  ``experimental/``): JIT sources of other kernels. Every Python and JSON file stays, since
  ``import flashinfer`` imports ~390 of its modules eagerly;
* the DSL's aarch64 / QNX runtime stubs, ``__pycache__`` folders and ``*.pth`` files (the
  DSL's ``dsl_packages`` folder goes on ``PYTHONPATH`` explicitly).

``check SITE`` then proves on a CPU machine what it can: the JIT specs of the decode and
prefill modules of our configurations and every Cake Hopper MSA program are generated
(``FLASHINFER_CUDA_ARCH_LIST=9.0a``, sources rendered into a scratch workspace), and every
source they list, and every header reached from those through ``#include``, resolves in
the trimmed tree (or is a CUDA / system header, listed). Run it with ``SITE`` (and the DSL's
``dsl_packages``) on ``PYTHONPATH`` and torch importable. Exit status 1 on a missing file.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

CSRC_KEEP = (
    "batch_decode.cu",
    "batch_decode_customize_config.jinja",
    "batch_decode_jit_binding.cu",
    "batch_decode_kernel_inst.jinja",
    "batch_prefill*",
    "*.h",
    "*.cuh",
    "*.hpp",
    "*.inc",
)
CSRC_KEEP_DIRS = ("cake_hopper_msa",)
DATA_KEEP = ("include", "cutlass", "cccl", "spdlog", "csrc", "build_backend.py", "build_utils.py")
SOURCE_SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".c", ".cc", ".cpp", ".cxx", ".inl"}


def _rm(path: Path) -> int:
    """Remove a file or folder; return the bytes it held."""
    if path.is_dir() and not path.is_symlink():
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
        shutil.rmtree(path)
        return size
    size = path.stat().st_size if path.exists() else 0
    path.unlink()
    return size


def trim(site: Path) -> dict:
    """Apply the rules of the module docstring to ``site``; return the bytes removed per rule."""
    fi = site / "flashinfer"
    if not (fi / "__init__.py").exists():
        raise SystemExit(f"peers_bundle trim: {fi} is not an unpacked flashinfer package")
    removed = {"data/csrc": 0, "data/other": 0, "sources_outside_data": 0, "dsl_stubs": 0,
               "pycache_pth": 0}
    data = fi / "data"
    for entry in sorted(data.iterdir()):
        if entry.name not in DATA_KEEP:
            removed["data/other"] += _rm(entry)
    csrc = data / "csrc"
    for entry in sorted(csrc.iterdir()):
        if entry.is_dir():
            keep = entry.name in CSRC_KEEP_DIRS
        else:
            keep = (any(fnmatch.fnmatch(entry.name, pat) for pat in CSRC_KEEP)
                    and "_mla" not in entry.name)
        if not keep:
            removed["data/csrc"] += _rm(entry)
    for path in sorted(fi.rglob("*")):
        if data in path.parents or not path.is_file():
            continue
        if path.suffix in SOURCE_SUFFIXES:
            removed["sources_outside_data"] += _rm(path)
    stubs = site / "nvidia_cutlass_dsl" / "cu13" / "lib" / "stubs"
    if stubs.exists():
        removed["dsl_stubs"] += _rm(stubs)
    for path in sorted(site.rglob("__pycache__"), reverse=True):
        if path.is_dir():
            removed["pycache_pth"] += _rm(path)
    for path in site.glob("*.pth"):
        removed["pycache_pth"] += _rm(path)
    # folders left empty by the source removal
    for path in sorted((p for p in fi.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(path.iterdir()):
            path.rmdir()
    return removed


# ---- check ---------------------------------------------------------------------------------

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# Quoted includes that name CUDA toolkit headers (cutlass writes #include "cuda_runtime.h"):
# resolved by nvcc's own include path on the GPU machine, not by the bundle.
_TOOLKIT = re.compile(r"^(cuda[\w.]*|cu[A-Z][\w.]*|nv\w*\.h|cooperative_groups.*|crt/.*|"
                      r"vector_types\.h|device_\w+\.h|math_constants\.h|library_types\.h)$")


def _include_dirs(spec) -> list[Path]:
    import tvm_ffi.libinfo
    from flashinfer.jit import env as jit_env

    dirs = [Path(p) for p in (getattr(spec, "extra_include_dirs", None) or [])]
    dirs += list(jit_env.CCCL_INCLUDE_DIRS)
    dirs += [Path(tvm_ffi.libinfo.find_include_path()),
             Path(tvm_ffi.libinfo.find_dlpack_include_path()),
             jit_env.FLASHINFER_INCLUDE_DIR, jit_env.FLASHINFER_CSRC_DIR]
    dirs += list(jit_env.CUTLASS_INCLUDE_DIRS)
    dirs.append(jit_env.SPDLOG_INCLUDE_DIR)
    return dirs


def include_closure(sources, dirs) -> tuple[set, dict, set]:
    """Follow ``#include`` from ``sources``: (files reached, quoted includes not found -> the
    file naming them, angle includes not found: CUDA / system headers)."""
    seen, missing, external = set(), {}, set()
    todo = [Path(s).resolve() for s in sources]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            missing[str(path)] = "(listed source)"
            continue
        for kind, name in _INCLUDE.findall(text):
            cands = ([path.parent / name] if kind == '"' else []) + [d / name for d in dirs]
            hit = next((c for c in cands if c.is_file()), None)
            if hit is not None:
                todo.append(hit.resolve())
            elif kind == '"' and not _TOOLKIT.match(name):
                missing.setdefault(name, str(path))
            else:
                external.add(name)
    return seen, missing, external


def check_specs() -> list:
    """The JIT specs our paged-decode rows and the Cake MSA route build (name, spec)."""
    import torch
    from flashinfer.jit import cake_hopper_msa as chm
    from flashinfer.jit.attention.modules import gen_batch_decode_module, gen_batch_prefill_module

    specs = []
    for kv in (torch.bfloat16, torch.float8_e4m3fn):
        tag = "bf16" if kv == torch.bfloat16 else "e4m3"
        specs.append((f"decode_{tag}", gen_batch_decode_module(
            torch.bfloat16, kv, torch.bfloat16, torch.int32, 128, 128, 0, False, False)))
        for backend in ("fa2", "fa3"):
            specs.append((f"prefill_{backend}_{tag}", gen_batch_prefill_module(
                backend, torch.bfloat16, kv, torch.bfloat16, torch.int32, 128, 128, 0, False,
                False, False)))
    for name in sorted(chm.MODULES):
        specs.append((f"cake_hopper_msa:{name}", chm.gen_hopper_msa_module(name)))
    return specs


def check(site: Path) -> int:
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    scratch = tempfile.mkdtemp(prefix="pw-fi-check-")
    os.environ["FLASHINFER_WORKSPACE_BASE"] = scratch
    import flashinfer

    fi_root = Path(flashinfer.__file__).resolve().parent
    if site.resolve() not in fi_root.parents:
        print(f"check: flashinfer imports from {fi_root}, not from {site}: fix PYTHONPATH")
        return 1
    import flashinfer.decode
    import flashinfer.jit.cute_dsl_core  # noqa: F401
    import flashinfer.prefill  # noqa: F401
    from flashinfer.msa_ops import (  # noqa: F401
        _sm90_dispatch,
        cake_hopper_sm90,
        msa_sparse_attention,  # noqa: F401
    )

    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper
    assert wrapper is flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper
    print(f"check: flashinfer {flashinfer.__version__} imports from {fi_root}")

    bad = 0
    reached: set = set()
    externals: set = set()
    specs = check_specs()
    for label, spec in specs:
        seen, missing, external = include_closure(spec.sources, _include_dirs(spec))
        reached |= seen
        externals |= external
        if missing:
            bad += 1
            for name, where in sorted(missing.items()):
                print(f"MISSING {label}: {name} (included from {where})")
    try:  # the CuTe DSL union route's Python kernel, and the DSL itself
        import cutlass  # noqa: F401
        import cutlass.cute  # noqa: F401
        from flashinfer.msa_ops.cute_dsl import sparse_prefill_sm90  # noqa: F401
        dsl = f"cutlass {getattr(cutlass, '__version__', '?')} and the CuTe union kernel import"
    except Exception as exc:  # noqa: BLE001 - report any import failure
        bad += 1
        dsl = f"DSL import FAILED: {type(exc).__name__}: {exc}"
    in_tree = sum(1 for p in reached if site.resolve() in p.parents)
    print(f"check: {len(specs)} JIT specs, {len(reached)} source/header files reached "
          f"({in_tree} in the trimmed tree), {bad} spec(s) with missing files; {dsl}")
    print("check: headers left to the CUDA toolkit / system: "
          + ", ".join(sorted(externals)[:40]) + (" ..." if len(externals) > 40 else ""))
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("trim", "check"))
    ap.add_argument("site", type=Path)
    args = ap.parse_args(argv)
    if args.command == "trim":
        removed = trim(args.site)
        for key, size in removed.items():
            print(f"trim: removed {size / 2**20:8.1f} MiB  {key}")
        return 0
    return check(args.site)


if __name__ == "__main__":
    sys.exit(main())
