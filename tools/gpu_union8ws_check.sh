#!/usr/bin/env bash
# One short GPU session for the warp-specialized Union8 (kernels/union8ws.cu): install
# (tools/gpu_setup.sh), compile the builds the tests use (each in its own process, at once),
# time the fast and accurate modes on one preset with their checks (benchmarks/bench_union8.py
# --fp8, no peers), then run the accurate mode's GPU tests and those of
# tests/gpu/test_union8ws.py with PAGEWEAVER_REQUIRE_GPU=1. Every stage has a time limit and
# leaves its log under $OUT; the exit status is non-zero when a stage failed.
# Env: OUT (default /tmp/pw_out), PYTHON, WHEELHOUSE, PRESET (cap64k), REPS (10), BENCH_LIMIT
# and TEST_LIMIT (seconds), TEST_SELECT (pytest -k expression for tests/gpu/test_union8ws.py;
# default: all but the preset-sized and the largest random cases), SKIP_SETUP=1.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
O=${OUT:-/tmp/pw_out}
mkdir -p "$O"
t0=$SECONDS
rc=0
stamp() { echo "[$((SECONDS - t0)) s] $*"; }

if [ -z "${SKIP_SETUP:-}" ]; then
  tools/gpu_setup.sh >"$O/setup.log" 2>&1 || { tail -20 "$O/setup.log"; exit 1; }
fi
stamp "setup done"
export PAGEWEAVER_REQUIRE_GPU=1

# PyCUDA writes its cache file in place: compile each distinct build once, in parallel.
builds=("union8_fp8.cu" "union_prepare.cu" "regroup.cu" "ws" "ws trim=True" "ws accurate=True"
        "ws tc_sum=True" "ws lazy=True" "ws lazy=True tc_sum=True" "ws overlap=False"
        "ws slots=2" "ws accurate=True slots=2" "ws bf16")
pids=()
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
for p in "${pids[@]}"; do wait "$p" || rc=1; done
stamp "precompile rc=$rc"

run() {  # run NAME LIMIT_S CMD...: one stage, its log under $O, its tail on stdout
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$O/$name.log" 2>&1
  local r=$?
  [ $r = 0 ] || rc=1
  stamp "$name rc=$r"
  tail -n 25 "$O/$name.log"
}
par=()
"$PY" -c "import xdist" 2>/dev/null && par=(-n 8)
run bench "${BENCH_LIMIT:-110}" "$PY" benchmarks/bench_union8.py --fp8 --no-peers \
  --presets "${PRESET:-cap64k}" --more-heads '' --reps "${REPS:-10}" --baseline-reps 2 \
  --flex-presets '' --check-rows 32 --out-dir "$O"
run pytest "${TEST_LIMIT:-150}" "$PY" -m pytest -q -p no:cacheprovider "${par[@]}" \
  tests/gpu/test_union8ws_accurate.py tests/gpu/test_union8ws.py \
  -k "accurate or (${TEST_SELECT:-not presets and not preset_and_online and not 1000 and not 700})"
exit $rc
