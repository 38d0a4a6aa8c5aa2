#!/usr/bin/env bash
# The GPU runner (make gpu-test): install (tools/gpu_setup.sh), then the whole test suite
# including the GPU tests, then nbval over every notebook, with PAGEWEAVER_REQUIRE_GPU=1 so
# that nothing GPU-related can pass by skipping. Env: PYTHON, SKIP_SETUP=1, PYTEST_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -n "${SKIP_SETUP:-}" ] || tools/gpu_setup.sh
export PAGEWEAVER_REQUIRE_GPU=1
# shellcheck disable=SC2086
"$PY" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} tests
shopt -s nullglob
nbs=(notebooks/[0-9][0-9]_*.ipynb)
if [ ${#nbs[@]} -gt 0 ]; then
  sanitize=()
  [ -f notebooks/nbval_sanitize.cfg ] && sanitize=(--nbval-sanitize-with notebooks/nbval_sanitize.cfg)
  # --nbval-lax: live GPU cells print other outputs than the CPU-recorded ones.
  "$PY" -m pytest -q -p no:cacheprovider -p no:randomly --nbval-lax "${sanitize[@]}" "${nbs[@]}"
fi
