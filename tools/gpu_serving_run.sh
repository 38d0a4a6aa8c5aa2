#!/usr/bin/env bash
# One GPU session for the serving path: install (tools/gpu_setup.sh), then, each under its own
# timeout and in this order, the serving tests (CUDA-graph replays, streams, the group counter,
# the README example), the host-overhead benchmark, and the GPU tests of the kernels the
# serving call launches (one-SM Union8, fused plan, regroup and union preparation).
# Logs and the result file go to $OUT (default: ./gpu_serving_out); the steps (tools/gpu_steps.sh)
# end before BUDGET_S seconds (default 265) have passed. Exit status 1 when a step failed or
# did not start. Env as gpu_setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python3}
OUT=${OUT:-gpu_serving_out}
export PAGEWEAVER_REQUIRE_GPU=1
. tools/gpu_steps.sh "$OUT" "${BUDGET_S:-265}"
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
exit "$rc"
