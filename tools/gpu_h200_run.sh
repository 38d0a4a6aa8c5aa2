#!/usr/bin/env bash
# One complete device session for issue 4 (used through the lent H200's `run` tool):
# install from the carried wheelhouse, GPU tests, benchmark, compute-sanitizer.
# Logs and the result file go to $OUT (at most 8 files come back).
set -uo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-out}
mkdir -p "$O"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
step() { echo; echo "== $1 (+$(( $(date +%s) - t0 )) s)"; }
step setup
PYCUDA_WHEEL_OUT="$O" tools/gpu_setup.sh >"$O/setup.log" 2>&1; echo "setup rc=$?"; tail -3 "$O/setup.log"
step gpu-tests
PAGEWEAVER_REQUIRE_GPU=1 timeout 240 python3 -m pytest -q -p no:cacheprovider -x \
  tests/test_gpu_kernels.py tests/test_gpu_device.py tests/test_kernels_compile.py \
  >"$O/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -25 "$O/gpu_tests.log"
step bench
timeout 200 python3 benchmarks/bench_gpu_regroup.py --out "$O/gpu_regroup_h200.json" \
  >"$O/bench.log" 2>&1; echo "bench rc=$?"
if grep -q '^wrote' "$O/bench.log"; then sed -n '/^wrote/,$p' "$O/bench.log"; else tail -20 "$O/bench.log"; fi
step sanitizer
for tool in memcheck racecheck synccheck; do
  echo "--- $tool" >>"$O/sanitize.log"
  timeout 150 compute-sanitizer --tool "$tool" --print-limit 20 python3 tools/gpu_sanitize.py \
    >>"$O/sanitize.log" 2>&1; echo "$tool rc=$?"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|sanitize workout" "$O/sanitize.log" | tail -2
done
if [ -n "${FULL-1}" ]; then  # FULL= skips the whole-suite step
  step full-gpu-test
  SKIP_SETUP=1 timeout "${FULL_TIMEOUT:-200}" tools/gpu_test.sh >"$O/full_test.log" 2>&1
  echo "gpu_test rc=$?"
  grep -E "passed|failed|error" "$O/full_test.log" | tail -4
fi
step done
