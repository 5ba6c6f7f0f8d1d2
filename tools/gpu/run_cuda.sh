#!/usr/bin/env bash
# Runs hetpass's CUDA checks on a machine with a GPU, from the unpacked bundle that
# tools/gpu/bundle.sh made (docs/cuda.md, "Running on a GPU machine"):
#
#   hetpass-gpu/run_cuda.sh OUT_DIR
#
#   1. refuses, with the reason, where there is no NVIDIA driver or one older than CUDA 13
#      needs (580);
#   2. runs the CUDA test binaries with HETPASS_REQUIRE_CUDA=1 (a skip is a failure);
#   3. runs every bundled model with `hetpass test-onnx` on cuda, sim and cpu (outputs against
#      the references, the ledger against the device counters) and `hetpass run --repeat`
#      for latency (first run and median), steady-state allocations and compile/load time, on
#      cuda with CUPTI's count of the last run's memcpys next to the device counters;
#      maskrcnn_tiny also with the relay and single-flag baseline masks on cuda;
#   4. runs ONNX's node tests on cuda (conformance.py): every run pinned as passing on cpu must
#      pass there too;
#   5. writes OUT_DIR/cuda_report.json and OUT_DIR/cuda_report.md (cuda_report.py).
# Exit status: 0 when every test and model check passed, 1 otherwise, 2 when it refused.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run_cuda.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
repeat=${HETPASS_GPU_REPEAT:-50}

driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
if [ -z "$driver" ]; then
  echo "run_cuda.sh: refused: nvidia-smi finds no NVIDIA driver or GPU on this machine" | tee "$out/refused.txt"
  exit 2
fi
if [ "${driver%%.*}" -lt 580 ]; then
  echo "run_cuda.sh: refused: driver $driver is older than CUDA 13 needs (580 or newer)" | tee "$out/refused.txt"
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1

export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd "$here/bin/hetpass" | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$here/lib/fallback
fi
export HETPASS_LIBDEVICE=$here/lib/libdevice.10.bc
export HETPASS_PTXAS=${HETPASS_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
export HETPASS_REQUIRE_CUDA=1
# cuBLASLt, NVRTC and cuDNN are not carried (too large): the machine's own, from the loader's
# path, its CUDA toolkit or the nvidia-* wheels of its Python, in that order. find_lib VAR SONAME
# WHEEL_DIR... exports VAR (the variable the library reads) where the loader would not find it.
sites=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
find_lib() {
  local var=$1 so=$2 c s d
  shift 2
  [ -n "${!var:-}" ] && return 0
  ldconfig -p 2>/dev/null | grep -q "$so " && return 0
  for c in /usr/local/cuda/lib64/$so /usr/local/cuda*/lib*/$so /usr/local/cuda*/targets/*/lib/$so \
    /usr/local/cuda*/extras/CUPTI/lib64/$so; do
    [ -f "$c" ] && { export "$var=$c"; return 0; }
  done
  for s in $sites; do
    for d in "$@"; do
      [ -f "$s/$d/$so" ] && { export "$var=$s/$d/$so"; return 0; }
    done
  done
  return 0
}
find_lib HETPASS_CUBLASLT libcublasLt.so.13 nvidia/cu13/lib nvidia/cublas/lib
find_lib HETPASS_NVRTC libnvrtc.so.13 nvidia/cu13/lib nvidia/cuda_nvrtc/lib
find_lib HETPASS_CUDNN libcudnn.so.9 nvidia/cudnn/lib nvidia/cu13/lib
find_lib HETPASS_CUPTI libcupti.so.13 nvidia/cuda_cupti/lib nvidia/cu13/lib
# A wheel's cudnn package outside site-packages' usual names: ask Python where nvidia.cudnn is.
if [ -z "${HETPASS_CUDNN:-}" ] && ! ldconfig -p 2>/dev/null | grep -q "libcudnn.so.9 "; then
  d=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)
  [ -n "$d" ] && [ -f "$d/libcudnn.so.9" ] && export HETPASS_CUDNN=$d/libcudnn.so.9
fi
# cuDNN 9's libcudnn.so.9 opens its parts (libcudnn_cnn.so.9, ...) by name: keep its folder on
# the loader's path.
[ -n "${HETPASS_CUDNN:-}" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$HETPASS_CUDNN")
cublaslt=${HETPASS_CUBLASLT:-"libcublasLt.so.13 (on the loader path)"}
nvrtc=${HETPASS_NVRTC:-"libnvrtc.so.13 (on the loader path)"}
cudnn=${HETPASS_CUDNN:-"libcudnn.so.9 (on the loader path)"}
cupti_lib=${HETPASS_CUPTI:-"libcupti.so.13 (on the loader path)"}
{
  echo "driver=$driver"
  echo "ptxas=$HETPASS_PTXAS"
  echo "cublaslt=$cublaslt"
  echo "nvrtc=$nvrtc"
  echo "cudnn=$cudnn"
  echo "cupti=$cupti_lib"
  ldd "$here/bin/hetpass" | grep -E "libstdc|libgcc_s" || true
} > "$out/environment.txt"

# HETPASS_GPU_STEPS: which of tests, models, conformance to run (default all three; the report
# is written after models). GTEST_FILTER narrows the tests, HETPASS_GPU_CONFORMANCE the
# conformance variants (default "default on_gpu").
steps=" ${HETPASS_GPU_STEPS:-tests models conformance} "
status=0
[[ "$steps" == *" tests "* ]] && for t in "$here"/bin/hetpass_*_tests; do
  name=$(basename "$t")
  timeout 300 "$t" --gtest_output="json:$out/$name.json" > "$out/$name.log" 2>&1
  rc=$?
  echo "$name exit $rc" | tee -a "$out/tests.txt"
  [ "$rc" -eq 0 ] || status=1
done


[[ "$steps" == *" models "* ]] && for m in "$here"/models/*/; do
  name=$(basename "$m")
  inputs=()
  i=0
  for f in "$m"/test_data_set_0/input_*.pb; do
    inputs+=(--input "#$i=$f")
    i=$((i + 1))
  done
  for dev in cuda sim cpu; do
    timeout 300 "$here/bin/hetpass" test-onnx "$m" --device="$dev" --json > "$out/test_${name}_${dev}.json" 2> "$out/test_${name}_${dev}.err"
    rc=$?
    echo "test-onnx $name $dev exit $rc" | tee -a "$out/models.txt"
    [ "$rc" -eq 0 ] || status=1
    cupti=()
    [ "$dev" = cuda ] && cupti=(--cupti)
    timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device="$dev" "${inputs[@]}" --repeat "$repeat" --json "${cupti[@]}" \
      > "$out/run_${name}_${dev}.json" 2> "$out/run_${name}_${dev}.err"
    echo "run $name $dev exit $?" | tee -a "$out/models.txt"
  done
  if [ "$name" = maskrcnn_tiny ]; then
    for b in relay single-flag; do
      timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device=cuda --baseline-masks="$b" "${inputs[@]}" \
        --repeat "$repeat" --json > "$out/run_${name}_cuda_$b.json" 2> "$out/run_${name}_cuda_$b.err"
      echo "run $name cuda baseline $b exit $?" | tee -a "$out/models.txt"
    done
  fi
done

# ONNX's node tests on cuda: every run pinned as passing on cpu must pass on cuda, twice: with
# the default pipeline (inputs and results on the host, so plan-devices keeps a one-op model's
# elementwise op there: no copy pays for itself) and with inputs and results on the GPU, which
# puts every op a cuda kernel runs on the GPU.
on_gpu="infer-types,fold-constants,cse,dce,loop-append-to-scan,plan-devices{target=cuda,inputs=target,outputs=target},fuse-ops,manifest-alloc,plan-memory{share=false}"
if [[ "$steps" != *" conformance "* ]]; then
  :
elif [ -d "$here/onnx/node" ] && command -v python3 > /dev/null; then
  for variant in ${HETPASS_GPU_CONFORMANCE:-default on_gpu}; do
    args=()
    [ "$variant" = on_gpu ] && args=(--passes="$on_gpu")
    python3 "$here/onnx/conformance.py" "$here/bin/hetpass" "$here/onnx/node" --devices=cuda \
      --jobs="$(nproc)" --expected="$here/onnx/cuda_expected.txt" "${args[@]}" \
      --json="$out/conformance_cuda_$variant.json" > "$out/conformance_cuda_$variant.txt" 2>&1
    rc=$?
    echo "conformance cuda $variant exit $rc" | tee -a "$out/tests.txt"
    grep -E "^overall|^pinned" "$out/conformance_cuda_$variant.txt" | tee -a "$out/tests.txt"
    [ "$rc" -eq 0 ] || status=1
  done
else
  echo "conformance cuda: not run (no node tests in the bundle, or no python3)" | tee -a "$out/tests.txt"
fi

[[ "$steps" == *" models "* ]] && { python3 "$here/cuda_report.py" "$out" || status=1; }
exit $status
