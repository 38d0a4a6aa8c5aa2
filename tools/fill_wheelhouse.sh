#!/usr/bin/env bash
# Fill wheelhouse/ (git-ignored) with everything `tools/gpu_setup.sh` needs on a GPU box that has
# no package registry (the lent H200: Python 3.12, torch 2.11, CUDA 13, nvcc): the PyCUDA sdist
# plus cp312 manylinux wheels of PyCUDA's pure-Python needs and of the notebook-test stack.
# Packages the H200 image already ships (numpy, torch, pytest, hypothesis, ... see
# KINDS.md's list) are removed again so the folder stays small (< ~50 MiB; it travels with
# `carry`, 64 MiB limit).  Usage: tools/fill_wheelhouse.sh [DEST]   (default: wheelhouse)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-wheelhouse}
PY=${PYTHON:-python3}
PYCUDA_VERSION=${PYCUDA_VERSION:-2026.1}
mkdir -p "$DEST"

PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)

# What the GPU runner installs (keep in sync with tools/gpu_setup.sh).
WANT=(pytools platformdirs mako siphash24 typing_extensions markupsafe
      nbval nbformat nbclient ipykernel jupyter_client jupyter_core pyzmq tornado traitlets
      ipywidgets widgetsnbextension jupyterlab_widgets comm plotly narwhals anywidget psygnal
      ipython pytest-xdist execnet)

# 1. PyCUDA itself: sdist only (there are no manylinux wheels).
"$PY" -m pip download --no-deps --no-binary pycuda "pycuda==${PYCUDA_VERSION}" -d "$DEST"

# 2. Wheels with their full transitive closure, resolved for the target interpreter.
"$PY" -m pip download "${PLAT[@]}" -d "$DEST" "${WANT[@]}"

# 3. Drop what the H200 image already has (KINDS.md, "Python packages already there"):
#    pip then keeps the installed copy.  Names are compared in normalized form.
PRESENT="numpy torch triton pytest pluggy iniconfig hypothesis sortedcontainers attrs packaging
pygments jinja2 markupsafe typing_extensions python_dateutil six psutil narwhals setuptools wheel
pip filelock fsspec sympy mpmath networkx nvidia_* cuda_* pyyaml requests urllib3 idna certifi
charset_normalizer coverage"
for f in "$DEST"/*.whl; do
  base=$(basename "$f")
  name=$(echo "${base%%-*}" | tr 'A-Z-.' 'a-z__')
  for p in $PRESENT; do
    # shellcheck disable=SC2053
    if [[ $name == $p ]]; then rm -f "$f"; break; fi
  done
done
# markupsafe/typing_extensions/narwhals are on the image; keep them anyway when the image
# lacks them (the setup script installs with --no-index and tolerates their absence).

du -sh "$DEST"
ls "$DEST"
