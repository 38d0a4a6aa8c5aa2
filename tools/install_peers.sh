#!/usr/bin/env bash
# Install the FlashInfer peer bundle made by tools/fill_peers.sh on the offline GPU machine:
#   tools/install_peers.sh PARTS_DIR TARGET_DIR
# PARTS_DIR holds SHA256SUMS and every flashinfer-peers-*.tar.xz.partNN it lists. Verifies
# each part's checksum, joins them (cat), unpacks into TARGET_DIR (a site-packages tree:
# flashinfer/, tvm_ffi/, nvidia_cutlass_dsl/, *.dist-info), writes TARGET_DIR/peers_env.sh and
# prints the export line (TARGET_DIR and the CuTe DSL's dsl_packages folder; the DSL's .pth
# file is not used). Exits non-zero with one line naming the problem when a part is missing or
# corrupt. Nothing is installed into the system's site-packages; torch stays the image's.
set -euo pipefail
die() { echo "install_peers: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: tools/install_peers.sh PARTS_DIR TARGET_DIR"
SRC=$1
DST=$2
[ -d "$SRC" ] || die "parts folder $SRC does not exist"
SUMS=$SRC/SHA256SUMS
[ -f "$SUMS" ] || die "$SUMS is missing (copy it with the parts)"
mapfile -t PARTS < <(awk '$2 ~ /\.part[0-9]+$/ {print $2}' "$SUMS" | sort)
[ ${#PARTS[@]} -gt 0 ] || die "$SUMS lists no .partNN files"
for p in "${PARTS[@]}"; do
  [ -f "$SRC/$p" ] || die "missing part $p in $SRC (${#PARTS[@]} parts listed in SHA256SUMS)"
  want=$(awk -v f="$p" '$2 == f {print $1}' "$SUMS")
  got=$(sha256sum "$SRC/$p" | cut -d' ' -f1)
  [ "$want" = "$got" ] || die "corrupt part $p in $SRC (sha256 $got, SHA256SUMS says $want)"
done
joined=${PARTS[0]%.part*}
want=$(awk -v f="$joined" '$2 == f {print $1}' "$SUMS")
mkdir -p "$DST"
DST=$(cd "$DST" && pwd)
if [ -n "$want" ]; then
  got=$(cd "$SRC" && cat "${PARTS[@]}" | sha256sum | cut -d' ' -f1)
  [ "$want" = "$got" ] || die "joined $joined has sha256 $got, SHA256SUMS says $want"
fi
(cd "$SRC" && cat "${PARTS[@]}") | xz -dc | tar -x -C "$DST" \
  || die "unpacking $joined into $DST failed (disk full? xz missing?)"
[ -f "$DST/flashinfer/__init__.py" ] || die "$DST/flashinfer/__init__.py missing after unpacking"
DSLP=$DST/nvidia_cutlass_dsl/dsl_packages
[ -d "$DSLP" ] || die "$DSLP missing after unpacking"
line="export PYTHONPATH=$DST:$DSLP\${PYTHONPATH:+:\$PYTHONPATH}"
echo "$line" > "$DST/peers_env.sh"
echo "install_peers: ${#PARTS[@]} parts verified, $(du -sm "$DST" | cut -f1) MiB in $DST"
echo "$line"
