#!/usr/bin/env bash
# Makes the self-contained bundle that runs hetpass's CUDA checks on a GPU machine whose image
# is not this one (docs/cuda.md, "Running on a GPU machine"): the binaries, every shared
# library they load that is not part of glibc (found with ldd), CUDA's libdevice, the shared
# models, ONNX's node tests with the conformance runner, the runner and the commit it was all
# built from (COMMIT, which the report names), compressed into one file under 64 MiB.
#
#   tools/gpu/bundle.sh BUILD_DIR OUT.tar.xz [SHARED_DIR]
#
# cuBLASLt and cuDNN are not carried (hundreds of MiB): the runner finds them on the GPU
# machine. libstdc++ and libgcc_s go to lib/fallback, used only where the machine lacks them
# (a newer system copy is preferred: libraries found there may need its newer symbols).
set -euo pipefail
build=$(cd "${1:?usage: bundle.sh BUILD_DIR OUT.tar.xz [SHARED_DIR]}" && pwd)
out=${2:?usage: bundle.sh BUILD_DIR OUT.tar.xz [SHARED_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
shared=${3:-$here/../../../shared}
limit=$((64 << 20))

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/hetpass-gpu
mkdir -p "$root/bin" "$root/lib/fallback" "$root/models"

bins=("$build/hetpass" "$build/hetpass-opt")
for t in runtime compile_engine vm; do
  [ -x "$build/test/hetpass_${t}_tests" ] && bins+=("$build/test/hetpass_${t}_tests")
done
# The stage holds only what must change (stripped binaries and libraries); read-only data are
# symlinks that tar follows (-h). Disk is what CI runs short of: the stage is written once,
# never copied then stripped.
carry() {  # carry SRC DEST: a stripped copy, or a plain one where strip cannot handle it
  strip --strip-unneeded -o "$2" "$1" 2>/dev/null || cp -L "$1" "$2"
}
for b in "${bins[@]}"; do
  carry "$b" "$root/bin/$(basename "$b")"
done

# Every non-glibc library any binary loads; a missing one stops the bundle.
if ldd "${bins[@]}" | grep -q "not found"; then
  ldd "${bins[@]}" | grep "not found" >&2
  echo "bundle.sh: a binary needs a library this machine lacks" >&2
  exit 1
fi
ldd "${bins[@]}" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  name=$(basename "$lib")
  case "$name" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) continue ;;
    libstdc++.so*|libgcc_s.so*) carry "$lib" "$root/lib/fallback/$name" ;;
    libcuda.so*|libcublas*|libcudnn*|libnvJitLink*|libnvrtc*)
      echo "bundle.sh: $name is linked directly; the CUDA libraries must be opened at run time" >&2
      exit 1 ;;
    *) carry "$lib" "$root/lib/$name" ;;
  esac
done

libdevice=$(grep -o 'HETPASS_CUDA_LIBDEVICE="[^"]*"' "$build/build.ninja" | head -1 | cut -d'"' -f2 || true)
[ -n "$libdevice" ] || libdevice=/usr/local/cuda/nvvm/libdevice/libdevice.10.bc
ln -s "$libdevice" "$root/lib/libdevice.10.bc"

for m in "$shared"/models/*/; do
  [ -f "$m/model.onnx" ] && ln -s "$(cd "$m" && pwd)" "$root/models/$(basename "$m")"
done
cp "$here/run_cuda.sh" "$here/cuda_report.py" "$root/"
# The commit the binaries come from, for the report's header and file name (the GPU machine has
# no checkout): "-dirty" where files differ from it (untracked ones too: CMake's globs compile
# them), since the report then measures more than that commit; "unknown" outside a checkout.
# HETPASS_COMMIT overrides, for a build made from another tree than this script's.
src=$(cd "$here/../.." && pwd)
commit=${HETPASS_COMMIT:-}
if [ -z "$commit" ]; then
  commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ "$commit" != unknown ] && [ -n "$(git -C "$src" status --porcelain 2>/dev/null | head -1)" ]; then
    commit=$commit-dirty
  fi
fi
echo "$commit" > "$root/COMMIT"

# ONNX's node tests with the conformance runner and the cpu runs pinned as passing: on the GPU
# every one of them must pass on cuda too (run_cuda.sh). Left out, with a note, where
# libonnx-testdata is not installed here.
node=${ONNX_NODE_TESTS:-/usr/share/libonnx-testdata/data/node}
if [ -d "$node" ]; then
  mkdir -p "$root/onnx"
  ln -s "$(cd "$node" && pwd)" "$root/onnx/node"
  cp "$here/../../test/onnx/conformance.py" "$root/onnx/"
  sed -n 's/ cpu$/ cuda/p' "$here/../../test/onnx/conformance_expected.txt" > "$root/onnx/cuda_expected.txt"
else
  echo "bundle.sh: $node is missing (libonnx-testdata): the bundle has no node tests" >&2
fi

tar -h -C "$stage" -cf - hetpass-gpu | xz -T0 -6 > "$out"
size=$(stat -c %s "$out")
echo "bundle.sh: $out: $((size >> 20)) MiB ($size bytes), $(ls "$root/bin" | wc -l) binaries, $(ls "$root/lib" | wc -l) libraries, $(ls "$root/models" | wc -l) models, commit $commit"
if [ "$size" -gt "$limit" ]; then
  echo "bundle.sh: the bundle is larger than 64 MiB, the most a GPU machine takes" >&2
  exit 1
fi
