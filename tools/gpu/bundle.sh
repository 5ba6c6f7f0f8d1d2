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
# HETPASS_BUNDLE_TESTS: which test binaries travel (default all three). A run that also carries
# a checkout (the zoo, the peers' scripts) may leave the larger two out to fit under 64 MiB.
for t in ${HETPASS_BUNDLE_TESTS-runtime compile_engine vm}; do
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
# Opened with dlopen, so ldd does not list it: the tools' small-object heap
# (tools/common/small_object_heap.h). Where it is missing the tools run on glibc alone.
# (awk reads the whole list: an early exit would end ldconfig by SIGPIPE, which pipefail reports.)
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
mimalloc=$({ "$ldconfig" -p 2>/dev/null || true; } | awk '$1 == "libmimalloc.so.2" {p = $NF} END {print p}')
if [ -n "$mimalloc" ]; then carry "$mimalloc" "$root/lib/libmimalloc.so.2"; fi

# Libraries that LLVM links but hetpass never calls travel as stubs, which keeps the bundle and
# a checkout together under the GPU machine's 64 MiB: Z3 (the static analyzer's constraint
# solver; 7 MiB compressed) and ICU's data (libxml2's encoding tables, through libicuuc; 7 MiB).
# A stub defines exactly the symbols the other carried files take from the library: each
# function writes its name and aborts, each datum is zeros (ICU then reports its data invalid
# rather than reading it). HETPASS_BUNDLE_STUBS="" carries the real libraries.
stub_source() {  # stub_source LIB: C for the symbols the other carried files import from LIB
  local lib=$1 others=() f
  for f in "$root"/bin/* "$root"/lib/*.so* "$root"/lib/fallback/*; do
    [ -f "$f" ] && [ "$f" != "$lib" ] && others+=("$f")
  done
  echo '#include <stdio.h>'
  echo '#include <stdlib.h>'
  echo 'static void stub(const char* s) { fprintf(stderr, "hetpass bundle: %s is a stub (tools/gpu/bundle.sh)\n", s); abort(); }'
  join <(nm -D --defined-only "$lib" | awk 'NF == 3 {print $3, $2}' | sed 's/@.*//' | sort -u -k1,1) \
    <(nm -D --undefined-only "${others[@]}" 2> /dev/null | awk '$1 == "U" || $1 == "w" {print $2}' | sed 's/@.*//' | sort -u) |
    while read -r sym type; do
      case $type in
        T | t | W | i) echo "void $sym(void) { stub(\"$sym\"); }" ;;
        *) echo "__attribute__((aligned(64))) const unsigned char $sym[64] = {0};" ;;
      esac
    done
}
for name in ${HETPASS_BUNDLE_STUBS-libz3.so.4 libicudata.so.72}; do
  [ -f "$root/lib/$name" ] || continue
  src=$stage/${name%%.so*}_stub.c
  stub_source "$root/lib/$name" > "$src"
  cc -shared -fPIC -O1 -Wl,-soname,"$name" -o "$root/lib/$name.stub" "$src"
  mv "$root/lib/$name.stub" "$root/lib/$name"
  echo "bundle.sh: $name is a stub of $(grep -c '^void\|^__attr' "$src") symbols"
done

libdevice=$(grep -o 'HETPASS_CUDA_LIBDEVICE="[^"]*"' "$build/build.ninja" | head -1 | cut -d'"' -f2 || true)
[ -n "$libdevice" ] || libdevice=/usr/local/cuda/nvvm/libdevice/libdevice.10.bc
ln -s "$libdevice" "$root/lib/libdevice.10.bc"

for m in "$shared"/models/*/; do
  [ -f "$m/model.onnx" ] && ln -s "$(cd "$m" && pwd)" "$root/models/$(basename "$m")"
done
cp "$here/run_cuda.sh" "$here/cuda_report.py" "$here/speed_report.py" "$root/"
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

# One LZMA2 stream with a dictionary larger than a binary: each binary links LLVM statically
# (HETPASS_LLVM_STATIC), and a window that spans two of them stores the second's copy of LLVM
# as matches against the first (measured: 65 MiB with xz -6's 8 MiB window, 38 MiB this way,
# in about 90 s; decompressing needs 96 MiB of memory).
tar -h -C "$stage" -cf - hetpass-gpu | xz -T1 --lzma2=preset=3,dict=96MiB > "$out"
size=$(stat -c %s "$out")
echo "bundle.sh: $out: $((size >> 20)) MiB ($size bytes), $(ls "$root/bin" | wc -l) binaries, $(ls "$root/lib" | wc -l) libraries, $(ls "$root/models" | wc -l) models, commit $commit"
if [ "$size" -gt "$limit" ]; then
  echo "bundle.sh: the bundle is larger than 64 MiB, the most a GPU machine takes" >&2
  exit 1
fi
