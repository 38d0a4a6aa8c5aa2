#!/usr/bin/env bash
# FlashInfer peers on the lent H200, run from the repository root:
#   bash tools/gpu_peers_run.sh [PARTS_DIR ...] [-- BENCH_ARGS ...]
# 1. gathers SHA256SUMS and the flashinfer-peers-*.tar.xz.partNN files from the PARTS_DIRs (the
#    folders where the parts arrived, e.g. /tmp/pw-parts from the first call and
#    wheelhouse/peers from this one) and installs them with tools/install_peers.sh into
#    PEERS_TARGET (/tmp/pw-peers); skipped when that tree already holds the same bundle;
# 2. exports PYTHONPATH (the tree and the CuTe DSL's dsl_packages; no .pth), puts FlashInfer's
#    JIT workspace (FLASHINFER_WORKSPACE_BASE) and the CuTe DSL cache (CUTE_DSL_CACHE_DIR) under
#    PEERS_JIT (/tmp/pw-jit), imports flashinfer and cutlass (versions printed);
# 3. installs PyCUDA + this package (tools/gpu_setup.sh) when pycuda does not import;
# 4. runs tests/gpu/test_peers.py with PAGEWEAVER_REQUIRE_PEERS=1 and PAGEWEAVER_REQUIRE_GPU=1
#    (a missing FlashInfer, GPU or PyCUDA fails instead of skipping; SKIP_TESTS=1 skips it);
# 5. with BENCH_ARGS: python3 benchmarks/bench_union8.py BENCH_ARGS (result files written to
#    benchmarks/results/ and copied to $OUT);
# 6. prints the JIT cache's size; PEERS_PACK_JIT=1 packs it to $OUT/peers_jitcache.tar.xz when
#    that is at most 16 MiB (one file back); PEERS_JIT_FROM=that file (carried along) unpacks it
#    before step 2, so a fresh machine skips the JIT compiles.
# Each of 1 (the install), 2 (the imports), 3, 4 and 5 runs as a step of tools/gpu_steps.sh and
# prints its status line; 4 and 5 have time limits (TEST_TIMEOUT_S, 300; BENCH_TIMEOUT_S, 420).
# The log is tee'd to $OUT/peers_run.log. Exit status: 1 when 1 or 2 failed (nothing else runs
# then) or any later step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-out}
mkdir -p "$O"
exec > >(tee -a "$O/peers_run.log") 2>&1
PY=${PYTHON:-python3}
TARGET=${PEERS_TARGET:-/tmp/pw-peers}
JIT=${PEERS_JIT:-/tmp/pw-jit}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
dirs=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; break; fi
  dirs+=("$1"); shift
done
STEP_TEE=1
. tools/gpu_steps.sh "$(mktemp -d)"

echo "== install FlashInfer peers into $TARGET"
gather=$(mktemp -d)
for d in "${dirs[@]}"; do
  [ -d "$d" ] || { echo "gpu_peers_run: no folder $d (skipped)"; continue; }
  for f in "$d"/SHA256SUMS "$d"/flashinfer-peers-*.tar.xz.part*; do
    [ -f "$f" ] && ln -sf "$(readlink -f "$f")" "$gather/$(basename "$f")"
  done
done
if [ -f "$gather/SHA256SUMS" ] && [ -f "$TARGET/peers_env.sh" ] \
   && cmp -s "$gather/SHA256SUMS" "$TARGET/SHA256SUMS.installed"; then
  echo "gpu_peers_run: $TARGET already holds this bundle"
elif [ -f "$gather/SHA256SUMS" ]; then
  rm -rf "$TARGET"
  step install_peers 0 bash tools/install_peers.sh "$gather" "$TARGET"
  [ "$rc" = 0 ] || exit 1
  cp "$gather/SHA256SUMS" "$TARGET/SHA256SUMS.installed"
elif [ -f "$TARGET/peers_env.sh" ]; then
  echo "gpu_peers_run: no parts given; using the bundle installed in $TARGET"
else
  echo "gpu_peers_run: no SHA256SUMS in ${dirs[*]:-(no folders given)} and nothing in $TARGET"
  exit 1
fi
rm -rf "$gather"
# shellcheck disable=SC1091
source "$TARGET/peers_env.sh"
PYTHONPATH="$PYTHONPATH:$(pwd)"  # this package, when gpu_setup.sh has not installed it
export PYTHONPATH
mkdir -p "$JIT"
if [ -n "${PEERS_JIT_FROM:-}" ] && [ -f "$PEERS_JIT_FROM" ]; then  # a cache packed earlier
  xz -dc "$PEERS_JIT_FROM" | tar -x -C "$JIT" && echo "gpu_peers_run: JIT cache from $PEERS_JIT_FROM"
fi
export FLASHINFER_WORKSPACE_BASE=$JIT CUTE_DSL_CACHE_DIR=$JIT/cute_dsl
if [ -z "${CUDA_HOME:-}" ] && command -v nvcc >/dev/null; then  # FlashInfer's JIT finds nvcc here
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  export CUDA_HOME
fi
echo "export PYTHONPATH=$PYTHONPATH FLASHINFER_WORKSPACE_BASE=$JIT CUTE_DSL_CACHE_DIR=$JIT/cute_dsl"

step import_flashinfer 0 "$PY" - <<'PYEOF'
import time
t = time.perf_counter()
import flashinfer
from flashinfer.msa_ops import msa_sparse_attention  # noqa: F401
import cutlass, cutlass.cute  # noqa: F401, E401
import torch
print(f"flashinfer {flashinfer.__version__} from {flashinfer.__file__} "
      f"({time.perf_counter() - t:.1f} s), cutlass-dsl {getattr(cutlass, '__version__', '?')}, "
      f"torch {torch.__version__}", flush=True)
print(f"device {torch.cuda.get_device_name()} cc {torch.cuda.get_device_capability()}")
PYEOF
[ "$rc" = 0 ] || exit 1

if ! "$PY" -c "import pycuda.driver" 2>/dev/null && [ -z "${SKIP_SETUP:-}" ]; then
  STEP_TEE='' step gpu_setup 0 env PYTHON="$PY" bash tools/gpu_setup.sh  # its log's tail only
fi

if [ -z "${SKIP_TESTS:-}" ]; then
  step pytest "${TEST_TIMEOUT_S:-300}" env PAGEWEAVER_REQUIRE_PEERS=1 PAGEWEAVER_REQUIRE_GPU=1 \
    "$PY" -m pytest -q -rs -s -p no:randomly -p no:cacheprovider tests/gpu/test_peers.py
fi

if [ $# -gt 0 ]; then
  echo "== bench_union8.py $*"
  step bench "${BENCH_TIMEOUT_S:-420}" env OUT="$O" "$PY" benchmarks/bench_union8.py "$@"
fi

echo "== JIT cache"
du -sh "$JIT" 2>/dev/null
du -sh "$JIT"/.cache/flashinfer/*/*/cached_ops "$JIT"/cute_dsl 2>/dev/null
if [ -n "${PEERS_PACK_JIT:-}" ]; then
  tar -C "$JIT" -cf - . | xz -6 -T0 > "$O/peers_jitcache.tar.xz"
  size=$(stat -c %s "$O/peers_jitcache.tar.xz")
  echo "peers_jitcache.tar.xz: $(( size / 1048576 )) MiB"
  if [ "$size" -gt $(( 16 * 1048576 )) ]; then
    echo "over 16 MiB: not brought back"; rm -f "$O/peers_jitcache.tar.xz"
  fi
fi
echo "== done, exit status $rc"
exit "$rc"
