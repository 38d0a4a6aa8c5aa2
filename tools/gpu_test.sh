#!/usr/bin/env bash
# The GPU runner (make gpu-test): install (tools/gpu_setup.sh), then the whole test suite
# including the GPU tests, then nbval over every notebook, with PAGEWEAVER_REQUIRE_GPU=1 so
# that nothing GPU-related can pass by skipping. Each part is a step of tools/gpu_steps.sh
# whose output goes to stdout as it comes; the parts have no time limit of their own, but run as
# a step of another runner (tools/gpu_h200_run.sh) they end within that step's. Both test parts
# run even when the first fails; the exit status is 1 when the install failed (then nothing
# else runs) or any later part failed.
# Env: PYTHON, SKIP_SETUP=1, PYTEST_ARGS, PARTS ("tests notebooks"), WORKERS (pytest-xdist
# processes when pytest-xdist and execnet import; default 8; 0 = serial), SKIP_PRECOMPILE=1.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python3}
STEP_TEE=1
. tools/gpu_steps.sh "$(mktemp -d)"
if [ -z "${SKIP_SETUP:-}" ]; then
  step setup 0 tools/gpu_setup.sh
  [ "$rc" = 0 ] || exit 1
fi
export PAGEWEAVER_REQUIRE_GPU=1
PARTS=${PARTS:-tests notebooks}
WORKERS=${WORKERS:-8}
par=()
if [ "$WORKERS" != 0 ] && "$PY" -c "import xdist, execnet" 2>/dev/null; then
  par=(-n "$WORKERS")
fi
# Parallel workers must not compile one module at once (PyCUDA's cache is written in place).
if [ ${#par[@]} -gt 0 ] && [ -z "${SKIP_PRECOMPILE:-}" ]; then
  step compile 0 "$PY" tools/gpu_precompile.py --test-builds --jobs "$WORKERS"
fi
if [[ " $PARTS " == *" tests "* ]]; then
  # shellcheck disable=SC2086
  step pytest 0 "$PY" -m pytest -q -p no:cacheprovider "${par[@]}" ${PYTEST_ARGS:-} tests
fi
shopt -s nullglob
nbs=(notebooks/[0-9][0-9]_*.ipynb)
if [[ " $PARTS " == *" notebooks "* ]] && [ ${#nbs[@]} -gt 0 ]; then
  sanitize=()
  [ -f notebooks/nbval_sanitize.cfg ] && sanitize=(--nbval-sanitize-with notebooks/nbval_sanitize.cfg)
  # --nbval-lax: live GPU cells print other outputs than the CPU-recorded ones. Under xdist
  # every notebook stays on one worker (--dist loadfile): its cells share one kernel.
  [ ${#par[@]} -gt 0 ] && par+=(--dist loadfile)
  step nbval 0 "$PY" -m pytest -q -p no:cacheprovider -p no:randomly "${par[@]}" --nbval-lax \
    "${sanitize[@]}" "${nbs[@]}"
fi
exit "$rc"
