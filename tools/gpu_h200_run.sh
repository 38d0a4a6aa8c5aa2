#!/usr/bin/env bash
# One complete verification run on an H200 (a bare machine without a package registry
# or .git): run from the repository root with wheelhouse/ carried along, e.g.
#   PAGEWEAVER_COMMIT=<commit> bash tools/gpu_h200_run.sh
# Steps (tools/gpu_steps.sh: each under its own timeout, and all inside BUDGET_S, default 540 s:
# a step left with under 15 s is not started; setup to nbval took 7 min at 9342316, with a
# PyCUDA build):
#   1. install from wheelhouse/ (the prebuilt PyCUDA wheel when present, else the sdist, ~90 s)
#   2. compile every kernel once (fills PyCUDA's cache before parallel workers start:
#      concurrent compiles of one module could read a half-written cache file)
#   3. pytest, all of tests/ (GPU tests included), PAGEWEAVER_REQUIRE_GPU=1, pytest-xdist if there
#      (tools/gpu_test.sh PARTS=tests)
#   4. nbval over every notebook, PAGEWEAVER_REQUIRE_GPU=1 (tools/gpu_test.sh PARTS=notebooks)
#   5. record the warp-specialized Union8's step table (benchmarks/bench_union8ws_steps.py,
#      benchmarks/results/union8ws_steps_cap64k_h200.json)
#   6. re-record benchmarks/results/gpu_regroup_h200.json (with the N x KV-head sweep)
#   7. re-record benchmarks/results/union8_<preset>_h200.json (U8_PRESETS, cap64k first;
#      U8_MORE_HEADS, default cap64k:8); each file is written as soon as its preset finishes
# U8_FP8=1 adds the FP8 benchmark (bench_union8.py --fp8) after step 4.
# The result files record PAGEWEAVER_COMMIT (default: git's HEAD, else "uncommitted").
# Skipped (slow): compute-sanitizer (SANITIZE=1 runs memcheck + racecheck on
# tools/gpu_sanitize.py and the BF16 and FP8 Union8 smoke tests) and extra FlexAttention block
# sizes.
# Fresh result files go to $OUT/results/ (and benchmarks/results/); logs to $OUT/logs.tar.gz;
# the summary is printed last and kept in $OUT/summary.txt (at most 8 files come back). Exit
# status 1 when a step failed or was not started.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-out}
mkdir -p "$O/results"
L=$(mktemp -d)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PAGEWEAVER_COMMIT=${PAGEWEAVER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo uncommitted)}
PY=${PYTHON:-python3}
. tools/gpu_steps.sh "$L" "${BUDGET_S:-540}"

step setup 150 env PYTHON="$PY" bash tools/gpu_setup.sh
STEP_TAIL=2 step compile 90 "$PY" tools/gpu_precompile.py
STEP_TAIL=4 step pytest 300 env SKIP_SETUP=1 SKIP_PRECOMPILE=1 PARTS=tests PYTHON="$PY" \
  bash tools/gpu_test.sh
STEP_TAIL=4 step nbval 150 env SKIP_SETUP=1 SKIP_PRECOMPILE=1 PARTS=notebooks WORKERS=6 \
  PYTHON="$PY" bash tools/gpu_test.sh

if [ -n "${U8_FP8:-}" ]; then  # FP8 kernels, BF16 and baselines of the same run beside them
  mkdir -p "$O/fp8"
  STEP_TAIL=12 step bench_union8_fp8 150 "$PY" benchmarks/bench_union8.py --fp8 \
    --out-dir "$O/fp8" --presets "${U8_PRESETS:-cap64k}" --more-heads ''
  cp "$O"/fp8/*.json benchmarks/results/ 2>/dev/null
fi

# the warp-specialized Union8 step by step, one run
STEP_TAIL=0 step bench_union8ws_steps 120 env OUT="$O/results" "$PY" \
  benchmarks/bench_union8ws_steps.py
cp "$O"/results/union8ws_steps_*.json benchmarks/results/ 2>/dev/null
sed -n '/attention kernel alone/,$p' "$L/bench_union8ws_steps.log"

STEP_TAIL=0 step bench_regroup 90 "$PY" benchmarks/bench_gpu_regroup.py \
  --out "$O/results/gpu_regroup_h200.json"
cp "$O/results/gpu_regroup_h200.json" benchmarks/results/ 2>/dev/null
sed -n '/^wrote/,$p' "$L/bench_regroup.log" | head -30

STEP_TAIL=0 step bench_union8 150 env OUT="$O/results" "$PY" benchmarks/bench_union8.py \
  --presets "${U8_PRESETS:-cap64k,interleaved-64k,cap16k-high-overlap}" \
  --more-heads "${U8_MORE_HEADS-cap64k:8}"
sed -n '/^preset /,$p' "$L/bench_union8.log"

if [ -n "${SANITIZE:-}" ]; then
  # The FP8 kernels' bounded mbarrier waits fault after 10 s by default; the instrumentation
  # slows every wait, so under the sanitizer the bound is 10 min (gpu.loader.wait_bound_options).
  export PAGEWEAVER_WAIT_TIMEOUT_NS=600000000000
  STEP_TAIL=0  # (the summaries of all sanitizer steps are printed together below)
  for tool in memcheck racecheck; do
    step "san_${tool}_kernels" 120 compute-sanitizer --tool "$tool" --print-limit 20 "$PY" \
      tools/gpu_sanitize.py
    step "san_${tool}_union8" 120 compute-sanitizer --tool "$tool" --print-limit 20 "$PY" \
      benchmarks/bench_union8.py --smoke
    # FP8: only our kernels (torch's amax reduction that builds the FP8 cache is not ours), one
    # family per process: racecheck with a kernel filter failed with an internal sanitizer error
    # when the cluster kernels ran uninstrumented before the instrumented union8ws (2026-12-03)
    for fam in cluster:union ws:union8ws; do
      step "san_${tool}_union8_fp8_${fam%%:*}" 120 compute-sanitizer --tool "$tool" \
        --print-limit 20 --kernel-name "kns=${fam#*:}" "$PY" benchmarks/bench_union8.py --smoke \
        --fp8 --smoke-kernels "${fam%%:*}"
    done
  done
  grep -aE "ERROR SUMMARY|RACECHECK SUMMARY" "$L"/san_*.log
fi

tar czf "$O/logs.tar.gz" -C "$L" .
echo; echo "== summary"
{
  echo "commit recorded: $PAGEWEAVER_COMMIT; wall $(( $(date +%s) - STEP_T0 )) s"
  for s in setup compile pytest nbval bench_union8_fp8 bench_union8ws_steps bench_regroup bench_union8; do
    case $s in
      pytest|nbval) line=$(grep -aE "passed|failed|error" "$L/$s.log" | tail -1) ;;
      bench_*) [ "${STEP_RC[$s]:-}" = 0 ] && line="$(grep -ac MISMATCH "$L/$s.log") MISMATCH lines" \
                 || line=$(tail -1 "$L/$s.log") ;;
      *) line=$(tail -1 "$L/$s.log") ;;
    esac
    printf '%-14s rc=%-8s %s\n' "$s" "${STEP_RC[$s]:-?}" "${line:0:110}"
  done
  "$PY" - "$O/results" <<'PYEOF'
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    m = {x["name"]: x for x in r["results"]}
    if r.get("workload") and "accounting" not in r and "gpu_regroup_w64" not in m:
        print(f"{path.name} ({r['date']}): " + ", ".join(
            f"{k} {v['median_us']:.0f}" for k, v in m.items() if k.endswith("w128")))
        continue
    if "accounting" not in r:  # the regroup / union-preparation file
        ok = all(x.get("matches_cpu", True) for x in r["results"])
        print(f"{path.name} ({r['date']}): regroup W64 {m['gpu_regroup_w64']['median_us']:.1f} us, W128 "
              f"{m['gpu_regroup_w128']['median_us']:.1f} us, union prep "
              f"{m['gpu_union_prepare']['median_us']:.1f} us; all match CPU: {ok}")
        continue
    a, s = r["accounting"]["w128"], r["summary"]
    print(f"{path.name} ({r['date']}): T0 {m['union8_original']['median_us']:.0f} fixed128 "
          f"{m['union8_fixed_w128']['median_us']:.0f} online128 "
          f"{m['union8_online_w128']['median_us']:.0f} us, S_net(W128) {a['S_net_us']:+.1f} us, "
          f"x gather {s['speedup_vs_gather']}, x flex {s.get('speedup_vs_flex', '-')}, "
          f"bitwise {all(r['check']['bitwise_identical'].values())}, "
          f"nrms {r['check']['nrms_vs_float64']:.1e}")
PYEOF
  [ -n "${SANITIZE:-}" ] || echo "not run: compute-sanitizer (SANITIZE=1 adds memcheck + racecheck)"
} | tee "$O/summary.txt"
exit "$rc"
