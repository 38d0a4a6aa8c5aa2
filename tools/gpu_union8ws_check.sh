#!/usr/bin/env bash
# One short GPU session for the warp-specialized Union8 (kernels/union8ws.cu): install
# (tools/gpu_setup.sh), compile the builds the tests use (tools/gpu_precompile.py --test-builds,
# each in its own process, 12 at once),
# time the fast and accurate modes on one preset with their checks (benchmarks/bench_union8.py
# --fp8, no peers), then run the accurate mode's GPU tests and those of
# tests/gpu/test_union8ws.py with PAGEWEAVER_REQUIRE_GPU=1. Every stage is a step of
# tools/gpu_steps.sh (all but the compiles with a time limit); each leaves its log under $OUT
# and prints its tail; the exit status is 1 when a stage failed (a failed install stops the run).
# Env: OUT (default /tmp/pw_out), PYTHON, WHEELHOUSE, PRESET (cap64k), REPS (10), SETUP_LIMIT,
# BENCH_LIMIT and TEST_LIMIT (seconds: 300, 110, 150), TEST_SELECT (pytest -k expression for
# tests/gpu/test_union8ws.py; default: all but the preset-sized and the largest random cases),
# SKIP_SETUP=1, SKIP_BENCH=1 (the tests alone).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python3}
O=${OUT:-/tmp/pw_out}
. tools/gpu_steps.sh "$O"
STEP_TAIL=25

if [ -z "${SKIP_SETUP:-}" ]; then
  step setup "${SETUP_LIMIT:-300}" tools/gpu_setup.sh
  [ "$rc" = 0 ] || exit 1
fi
export PAGEWEAVER_REQUIRE_GPU=1

# PyCUDA writes its cache file in place: compile each distinct build once, in parallel.
step precompile 0 "$PY" tools/gpu_precompile.py --test-builds --jobs 12
par=()
"$PY" -c "import xdist" 2>/dev/null && par=(-n 8)
[ -n "${SKIP_BENCH:-}" ] || step bench "${BENCH_LIMIT:-110}" "$PY" benchmarks/bench_union8.py \
  --fp8 --no-peers --presets "${PRESET:-cap64k}" --more-heads '' --reps "${REPS:-10}" \
  --baseline-reps 2 --flex-presets '' --check-rows 32 --out-dir "$O"
step pytest "${TEST_LIMIT:-150}" "$PY" -m pytest -q -p no:cacheprovider "${par[@]}" \
  tests/gpu/test_union8ws_accurate.py tests/gpu/test_union8ws.py \
  -k "accurate or (${TEST_SELECT:-not presets and not preset_and_online and not 1000 and not 700})"
exit "$rc"
