#!/usr/bin/env bash
# Install what the GPU runner needs into the current python3 (the H200 image's torch venv):
# PyCUDA (built from the sdist), PyCUDA's pure-Python needs, the notebook-test stack, and this
# package (--no-deps: torch must never be reinstalled). Uses the package registry when it is
# reachable, else the local wheelhouse filled by tools/fill_wheelhouse.sh (make wheelhouse).
# Env: PYTHON (python3), WHEELHOUSE (wheelhouse), CUDA_ROOT (from nvcc), PYCUDA_VERSION,
# PAGEWEAVER_OFFLINE=1 (use the wheelhouse without probing the registry; the CI workflows).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WH=${WHEELHOUSE:-wheelhouse}
WH=$(readlink -f "$WH" 2>/dev/null || echo "$WH")
PYCUDA_VERSION=${PYCUDA_VERSION:-2026.1}
PKGS=(pytools platformdirs mako siphash24 nbval nbformat nbclient ipykernel jupyter_client
      jupyter_core ipywidgets anywidget plotly)
pipi() { "$PY" -m pip install --disable-pip-version-check --no-input -q "$@"; }

if [ -z "${CUDA_ROOT:-}" ]; then
  NVCC=$(command -v nvcc || true)
  [ -n "$NVCC" ] || { echo "gpu_setup: nvcc not on PATH; set CUDA_ROOT" >&2; exit 1; }
  CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
fi
export PATH="$CUDA_ROOT/bin:$PATH"

probe=$(mktemp -d)
online=
if [ -z "${PAGEWEAVER_OFFLINE:-}" ] && timeout 20 "$PY" -m pip download --disable-pip-version-check -q --no-deps -d "$probe" pytools \
     >/dev/null 2>&1; then
  echo "gpu_setup: registry reachable: installing from it"
  online=1
  pipi "${PKGS[@]}"
  "$PY" -c "import pycuda.driver" 2>/dev/null || CUDA_ROOT=$CUDA_ROOT pipi "pycuda==${PYCUDA_VERSION}"
else
  echo "gpu_setup: no registry: installing from $WH"
  ls "$WH"/pycuda-*.tar.gz >/dev/null 2>&1 || {
    echo "gpu_setup: $WH has no PyCUDA sdist; run tools/fill_wheelhouse.sh (make wheelhouse)" >&2
    exit 1; }
  pipi --no-index --find-links "$WH" "${PKGS[@]}"
  if ! "$PY" -c "import pycuda.driver" 2>/dev/null; then
    if ls "$WH"/pycuda-"${PYCUDA_VERSION}"-cp*.whl >/dev/null 2>&1; then
      # A wheel built earlier on the same image (PYCUDA_WHEEL_OUT below): no compile.
      pipi --no-index --find-links "$WH" "pycuda==${PYCUDA_VERSION}"
    else
      build=$(mktemp -d)
      tar xzf "$WH"/pycuda-"${PYCUDA_VERSION}".tar.gz -C "$build"
      (
        cd "$build"/pycuda-*
        "$PY" configure.py --cuda-root="$CUDA_ROOT" >/dev/null
        # Compile the extension on every core first; pip then packs the built tree.
        "$PY" setup.py -q build_ext -j "$(nproc)" >/dev/null 2>&1 || true
        "$PY" -m pip wheel --disable-pip-version-check -q --no-index --no-deps \
          --no-build-isolation -w "$build/dist" .
      )
      pipi --no-index --find-links "$WH" "$build"/dist/pycuda-*.whl
      if [ -n "${PYCUDA_WHEEL_OUT:-}" ]; then cp "$build"/dist/pycuda-*.whl "$PYCUDA_WHEEL_OUT"/; fi
    fi
  fi
fi
rm -rf "$probe"
# Optional: parallel pytest/nbval (tools/gpu_test.sh uses it when it imports).
if [ -n "$online" ]; then
  pipi pytest-xdist || echo "gpu_setup: pytest-xdist not installed: tests run serially"
else
  pipi --no-index --find-links "$WH" pytest-xdist 2>/dev/null \
    || echo "gpu_setup: no pytest-xdist in $WH: tests run serially"
fi
pipi --no-deps --no-build-isolation -e .
"$PY" - <<'PYEOF'
import pycuda, torch
from pageweaver_edu.gpu.device import gpu_available, gpu_unavailable_reason
print(f"gpu_setup: pycuda {pycuda.VERSION_TEXT}, torch {torch.__version__}, "
      f"GPU path: {'ready' if gpu_available() else gpu_unavailable_reason()}")
PYEOF
