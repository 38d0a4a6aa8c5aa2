#!/usr/bin/env bash
# The GPU runner (make gpu-test): install (tools/gpu_setup.sh), then the whole test suite
# including the GPU tests, then nbval over every notebook, with PAGEWEAVER_REQUIRE_GPU=1 so
# that nothing GPU-related can pass by skipping. Both parts run even when the first fails; the
# exit status is non-zero when either failed.
# Env: PYTHON, SKIP_SETUP=1, PYTEST_ARGS, PARTS ("tests notebooks"), WORKERS (pytest-xdist
# processes when pytest-xdist and execnet import; default 8; 0 = serial), SKIP_PRECOMPILE=1.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -n "${SKIP_SETUP:-}" ] || tools/gpu_setup.sh || exit 1
export PAGEWEAVER_REQUIRE_GPU=1
PARTS=${PARTS:-tests notebooks}
WORKERS=${WORKERS:-8}
par=()
if [ "$WORKERS" != 0 ] && "$PY" -c "import xdist, execnet" 2>/dev/null; then
  par=(-n "$WORKERS")
fi
rc=0
# Parallel workers must not compile one module at once (PyCUDA's cache is written in place).
if [ ${#par[@]} -gt 0 ] && [ -z "${SKIP_PRECOMPILE:-}" ]; then
  "$PY" tools/gpu_precompile.py || rc=1
fi
if [[ " $PARTS " == *" tests "* ]]; then
  # shellcheck disable=SC2086
  "$PY" -m pytest -q -p no:cacheprovider "${par[@]}" ${PYTEST_ARGS:-} tests || rc=1
fi
shopt -s nullglob
nbs=(notebooks/[0-9][0-9]_*.ipynb)
if [[ " $PARTS " == *" notebooks "* ]] && [ ${#nbs[@]} -gt 0 ]; then
  sanitize=()
  [ -f notebooks/nbval_sanitize.cfg ] && sanitize=(--nbval-sanitize-with notebooks/nbval_sanitize.cfg)
  # --nbval-lax: live GPU cells print other outputs than the CPU-recorded ones. Under xdist
  # every notebook stays on one worker (--dist loadfile): its cells share one kernel.
  [ ${#par[@]} -gt 0 ] && par+=(--dist loadfile)
  "$PY" -m pytest -q -p no:cacheprovider -p no:randomly "${par[@]}" --nbval-lax \
    "${sanitize[@]}" "${nbs[@]}" || rc=1
fi
exit $rc
