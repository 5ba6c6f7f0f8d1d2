#!/usr/bin/env bash
# ctest cuda.gpu_bundle: tools/gpu/bundle.sh makes a bundle under 64 MiB from this build, and
# the unpacked bundle runs here with only its own libraries (the CUDA tests skip: no GPU).
set -euo pipefail
build=$1
src=$2
shared=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$src/tools/gpu/bundle.sh" "$build" "$tmp/b.tar.xz" "$shared"
# Only what this check runs is unpacked (CI's disk is small): hetpass, the runtime tests, the
# libraries and one model.
tar -xJf "$tmp/b.tar.xz" -C "$tmp" hetpass-gpu/bin/hetpass hetpass-gpu/bin/hetpass_runtime_tests \
  hetpass-gpu/lib hetpass-gpu/models/mlp_dynamic_batch
rm "$tmp/b.tar.xz"
root=$tmp/hetpass-gpu
if LD_LIBRARY_PATH=$root/lib ldd "$root/bin/hetpass" | grep "not found"; then
  echo "bundle_check: the bundled hetpass misses a library" >&2
  exit 1
fi
LD_LIBRARY_PATH=$root/lib "$root/bin/hetpass_runtime_tests" --gtest_filter='CudaDevice.*:MakeDevice.*' --gtest_brief=1
out=$(LD_LIBRARY_PATH=$root/lib "$root/bin/hetpass" run "$root/models/mlp_dynamic_batch/model.onnx" --device=cuda \
  --input "#0=$root/models/mlp_dynamic_batch/test_data_set_0/input_0.pb" 2>&1 || true)
echo "$out" | grep -q -- "--device=cuda: cuda: no usable GPU" || { echo "unexpected: $out" >&2; exit 1; }
echo "bundle_check: ok"
