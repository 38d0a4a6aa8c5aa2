#!/usr/bin/env bash
# One GPU session for the serving path: install (tools/gpu_setup.sh), then, each under its own
# timeout and in this order, the serving tests (CUDA-graph replays, streams, the group counter,
# the README example), the host-overhead benchmark, and the GPU tests of the kernels the
# serving call launches (one-SM Union8, fused plan, regroup and union preparation).
# Logs and the result file go to $OUT (default: ./gpu_serving_out); every step ends before
# BUDGET_S seconds (default 265) have passed. Env as gpu_setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-gpu_serving_out}
mkdir -p "$OUT"
export PAGEWEAVER_REQUIRE_GPU=1
BUDGET_S=${BUDGET_S:-265}
t0=$(date +%s)
step() {  # step NAME SECONDS CMD...: run CMD under a timeout (cut to the budget left), log it
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET_S - ($(date +%s) - t0) ))
  [ "$left" -lt "$limit" ] && limit=$left
  [ "$limit" -gt 0 ] || { echo "$name: no time left"; return; }
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc after $(( $(date +%s) - t0 )) s; $(tail -n 1 "$OUT/$name.log")"
}
step setup 160 tools/gpu_setup.sh
step serving_tests 100 "$PY" -m pytest -q -p no:cacheprovider tests/gpu/test_serving.py
step bench 40 "$PY" benchmarks/bench_serving_overhead.py
cp benchmarks/results/serving_overhead_*.json "$OUT"/ 2>/dev/null
par=()
"$PY" -c "import xdist, execnet" 2>/dev/null && par=(-n 8)
step kernel_tests 999 "$PY" -m pytest -q -p no:cacheprovider "${par[@]}" \
  tests/gpu/test_union8ws.py tests/gpu/test_regroup_plan.py tests/gpu/test_regroup_and_union_prep.py
grep -h -E "passed|failed|error" "$OUT"/*tests.log | tail -n 4
grep -A8 "^row" "$OUT/bench.log"
