#!/usr/bin/env bash
# One short GPU session for the warp-specialized Union8 (kernels/union8ws.cu): install
# (tools/gpu_setup.sh), compile the builds the tests use (each in its own process, at once),
# time the fast and accurate modes on one preset with their checks (benchmarks/bench_union8.py
# --fp8, no peers), then run the accurate mode's GPU tests and those of
# tests/gpu/test_union8ws.py with PAGEWEAVER_REQUIRE_GPU=1. Every stage but the compiles is a
# step of tools/gpu_steps.sh with a time limit; each leaves its log under $OUT and prints its
# tail; the exit status is 1 when a stage failed (a failed install stops the run).
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
builds=("union8_fp8.cu" "union_prepare.cu" "regroup.cu" "ws" "ws accurate=True"
        "ws tc_sum=True" "ws lazy=True" "ws lazy=True tc_sum=True" "ws overlap=False"
        "ws slots=2" "ws accurate=True slots=2" "ws bf16")
pids=()
status=0
: >"$O/precompile.log"
for b in "${builds[@]}"; do
  "$PY" - "$b" >>"$O/precompile.log" 2>&1 <<'PYEOF' &
import sys
from pageweaver_edu.gpu import Bf16WsUnionAttention, Fp8UnionAttention, Fp8WsUnionAttention
from pageweaver_edu.gpu.loader import load_module
from pageweaver_edu.gpu.union8ws import SLOTS, fp8_build_options
words = sys.argv[1].split()
if words[0] != "ws":
    if words[0] == "union8_fp8.cu":
        Fp8UnionAttention.kernel(8, 2)
    else:
        load_module(words[0])
elif words[1:] == ["bf16"]:
    Bf16WsUnionAttention.kernel(8, SLOTS)
else:
    kw = dict(w.split("=") for w in words[1:])
    slots = int(kw.pop("slots", SLOTS))
    opts = fp8_build_options(**{k: v == "True" for k, v in kw.items()})
    Fp8WsUnionAttention.kernel(8, slots, opts)
print("compiled", sys.argv[1])
PYEOF
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
step_done precompile "$status"
par=()
"$PY" -c "import xdist" 2>/dev/null && par=(-n 8)
[ -n "${SKIP_BENCH:-}" ] || step bench "${BENCH_LIMIT:-110}" "$PY" benchmarks/bench_union8.py \
  --fp8 --no-peers --presets "${PRESET:-cap64k}" --more-heads '' --reps "${REPS:-10}" \
  --baseline-reps 2 --flex-presets '' --check-rows 32 --out-dir "$O"
step pytest "${TEST_LIMIT:-150}" "$PY" -m pytest -q -p no:cacheprovider "${par[@]}" \
  tests/gpu/test_union8ws_accurate.py tests/gpu/test_union8ws.py \
  -k "accurate or (${TEST_SELECT:-not presets and not preset_and_online and not 1000 and not 700})"
exit "$rc"
