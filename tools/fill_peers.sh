#!/usr/bin/env bash
# Fill DEST (default wheelhouse/peers, git-ignored) with the FlashInfer peer bundle for the
# offline H200: flashinfer-python 0.7.4, apache-tvm-ffi (the version 0.7.4 takes,
# cp312 abi3), nvidia-cutlass-dsl 4.8.1 (meta, -libs-base, -libs-core, -libs-cu13), unpacked
# as one site-packages tree, trimmed to what paged decode and msa_sparse_attention on SM90
# need (tools/peers_bundle.py trim; its docstring lists the rules), packed as ONE xz tarball
# split into parts of at most PEERS_PART_SIZE (28M), with SHA256SUMS and README.txt.
# flashinfer 0.7.4's other Requires-Dist (click, cuda-python, einops, ninja, numpy,
# nvidia-ml-py, packaging, requests, tabulate, torch, tqdm) are on the H200 image already
# (cuda-bindings / cuda-core / cuda-pathfinder stand for cuda-python); cuda-tile, nccl4py,
# nccl-extensions and nvidia-cudnn-frontend are not imported by `import flashinfer`, decode or
# msa_ops (flashinfer guards them), so they are left out. The DSL needs protobuf and
# typing-extensions: on the image too.
# Install on the GPU machine: tools/install_peers.sh PARTS_DIR TARGET_DIR.
# DEST ends up holding only the parts, SHA256SUMS and README.txt (carry those files); the
# downloaded wheels and the unpacked tree stay in PEERS_WORK (default /tmp/pw-peers-build).
# Env: PYTHON (python3, runs pip download), PEERS_WHEEL_CACHE (folders with wheels fetched
# before, tried first, default /tmp/fi), PEERS_PY (3.12; 3.11 builds a CPU-check tree, no
# tarball), PEERS_PART_SIZE (28M), XZ_OPT_LEVEL (-9; about 9 min on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-wheelhouse/peers}
PY=${PYTHON:-python3}
PYV=${PEERS_PY:-3.12}
PART=${PEERS_PART_SIZE:-28M}
CACHE=${PEERS_WHEEL_CACHE:-/tmp/fi}
TVM_FFI=0.1.12   # flashinfer 0.7.4: apache-tvm-ffi>=0.1.11,<0.2
DSL=4.8.1
PKGS=(flashinfer-python==0.7.4 "apache-tvm-ffi==$TVM_FFI" "nvidia-cutlass-dsl==$DSL"
      "nvidia-cutlass-dsl-libs-base==$DSL" "nvidia-cutlass-dsl-libs-core==$DSL"
      "nvidia-cutlass-dsl-libs-cu13==$DSL")
TAG=cp${PYV/./}
NAME=flashinfer-peers-$TAG.tar.xz
WORK=${PEERS_WORK:-${TMPDIR:-/tmp}/pw-peers-build}
DL=$WORK/wheels-$TAG
STAGE=$WORK/site-$TAG
mkdir -p "$DL" "$DEST"
PLAT=(--only-binary=:all: --python-version "$PYV" --implementation cp
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64)
for spec in "${PKGS[@]}"; do
  links=()
  for d in $CACHE; do [ -d "$d" ] && links+=(--find-links "$d"); done
  if [ ${#links[@]} -gt 0 ] && "$PY" -m pip download -q --disable-pip-version-check --no-deps \
       "${PLAT[@]}" --no-index "${links[@]}" -d "$DL" "$spec" >/dev/null 2>&1; then
    echo "fill_peers: $spec from $CACHE"
  else
    echo "fill_peers: $spec from the registry"
    "$PY" -m pip download -q --disable-pip-version-check --no-deps "${PLAT[@]}" -d "$DL" "$spec"
  fi
done
n=$(ls "$DL"/*.whl | wc -l)
[ "$n" -eq ${#PKGS[@]} ] || { echo "fill_peers: expected ${#PKGS[@]} wheels in $DL, found $n" >&2; exit 1; }

rm -rf "$STAGE"
mkdir -p "$STAGE"
for w in "$DL"/*.whl; do "$PY" -m zipfile -e "$w" "$STAGE"; done
before=$(du -sm "$STAGE" | cut -f1)
"$PY" tools/peers_bundle.py trim "$STAGE"
after=$(du -sm "$STAGE" | cut -f1)
echo "fill_peers: unpacked $before MiB, trimmed to $after MiB ($STAGE)"
[ "$PYV" = 3.12 ] || { echo "fill_peers: PEERS_PY=$PYV: CPU-check tree only, no tarball"; exit 0; }

rm -f "$DEST/$NAME".part* "$DEST/SHA256SUMS"
echo "fill_peers: xz ${XZ_OPT_LEVEL:--9} -T0 (minutes on 2 cores) ..."
tar -C "$STAGE" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00Z' \
    -cf - . | xz "${XZ_OPT_LEVEL:--9}" -T0 > "$DEST/$NAME"
(cd "$DEST" && split -b "$PART" -d -a 2 "$NAME" "$NAME.part" && sha256sum "$NAME".part* "$NAME" > SHA256SUMS \
   && rm "$NAME")
cat > "$DEST/README.txt" <<EOF
$NAME.part*: flashinfer-python 0.7.4 + apache-tvm-ffi $TVM_FFI + nvidia-cutlass-dsl $DSL (libs-base, libs-core, libs-cu13), $TAG manylinux x86-64, trimmed to paged decode + msa_sparse_attention on SM90 (tools/peers_bundle.py); join and unpack with tools/install_peers.sh PARTS_DIR TARGET_DIR (prints the PYTHONPATH line).
EOF
echo "fill_peers: $DEST:"
ls -l "$DEST"/"$NAME".part* | awk '{printf "  %-40s %6.1f MiB\n", $9, $5 / 1048576}'
tot=$(cat "$DEST"/"$NAME".part* | wc -c)
echo "fill_peers: total $(awk -v b="$tot" 'BEGIN{printf "%.1f", b / 1048576}') MiB in $(ls "$DEST"/"$NAME".part* | wc -l) parts of at most $PART"
