# shellcheck shell=bash
# The step helper of the GPU runner scripts (tools/gpu_test.sh, gpu_h200_run.sh,
# gpu_serving_run.sh, gpu_union8ws_check.sh, gpu_peers_run.sh), sourced by them as
#   . tools/gpu_steps.sh LOG_DIR [BUDGET_S]
# step NAME LIMIT_S CMD...
#   runs CMD under `timeout` (LIMIT_S 0: no limit of its own), the limit cut to what is left of
#   the budget, with stdout and stderr in LOG_DIR/NAME.log; then prints "NAME: rc=R after T s"
#   (T counted from the source line; R = 124: timed out) and the log's last STEP_TAIL lines
#   (default 3). A step left with fewer than 15 s of the budget is not started (rc=skipped).
#   STEP_TEE=1: the output also goes to stdout as it comes, and the tail is not printed again.
#   A prefix sets either for one step only: `STEP_TAIL=0 step ...`.
# step_done NAME STATUS
#   records and prints the status of work run outside `step` (its log in LOG_DIR/NAME.log).
# The budget ends BUDGET_S seconds after the source line, or earlier where the runner itself
# runs as a step of another (STEP_DEADLINE, which `step` hands to CMD 10 s before its own
# limit, so that nested steps end and report in time); neither: no budget.
# Globals: rc (0 until a step fails or is not started, then 1), STEP_RC[NAME] (each status),
# STEP_T0 (the start, in seconds since the epoch).

STEP_LOGS=$1
mkdir -p "$STEP_LOGS"
STEP_T0=$(date +%s)
STEP_END=${STEP_DEADLINE:-}
if [ -n "${2:-}" ] && { [ -z "$STEP_END" ] || [ $(( STEP_T0 + $2 )) -lt "$STEP_END" ]; }; then
  STEP_END=$(( STEP_T0 + $2 ))
fi
rc=0
declare -gA STEP_RC=()

# shellcheck disable=SC2034  # rc and STEP_RC are read by the scripts that source this
step_done() {
  local name=$1 status=$2
  STEP_RC[$name]=$status
  [ "$status" = 0 ] || rc=1
  echo "$name: rc=$status after $(( $(date +%s) - STEP_T0 )) s"
  [ -n "${STEP_TEE:-}" ] || tail -n "${STEP_TAIL:-3}" "$STEP_LOGS/$name.log"
}

step() {
  local name=$1 limit=$2 log=$STEP_LOGS/$1.log left status
  shift 2
  if [ -n "$STEP_END" ]; then
    left=$(( STEP_END - $(date +%s) ))
    { [ "$limit" != 0 ] && [ "$limit" -le "$left" ]; } || limit=$left
    if [ "$limit" -lt 15 ]; then
      echo "$name: not started, ${left} s of the budget left" >"$log"
      [ -z "${STEP_TEE:-}" ] || cat "$log"
      step_done "$name" skipped
      return
    fi
  fi
  [ "$limit" = 0 ] || set -- env STEP_DEADLINE=$(( $(date +%s) + limit - 10 )) timeout "$limit" "$@"
  if [ -n "${STEP_TEE:-}" ]; then
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
  else
    "$@" >"$log" 2>&1
    status=$?
  fi
  [ "$limit" = 0 ] || [ "$status" != 124 ] || echo "$name: timed out after $limit s"
  step_done "$name" "$status"
}
