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
#      cuda with CUPTI's count and bytes of the last run's memcpys next to the device counters;
#      maskrcnn_tiny also with the relay and single-flag baseline masks on cuda (CUPTI too);
#   4. runs ONNX's node tests on cuda (conformance.py): every run pinned as passing on cpu must
#      pass there too;
#   5. writes OUT_DIR/cuda_report.json and OUT_DIR/cuda_report_<gpu>_<date>_<commit>.md (also
#      as OUT_DIR/cuda_report.md) with cuda_report.py, however the run ends.
# Every step is listed in OUT_DIR/plan.txt before the first one runs, and each one's exit status
# is recorded in OUT_DIR/steps.tsv when it ends: a step that fails does not stop the later ones,
# and the report fails on a step that failed or never finished.
# Exit status: 0 when every step and every check of the report passed, 1 otherwise (the report
# is still written), 2 when it refused.
set -euo pipefail
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
case ${driver%%.*} in
  '' | *[!0-9]*)
    echo "run_cuda.sh: refused: nvidia-smi reports no driver version ($driver)" | tee "$out/refused.txt"
    exit 2 ;;
esac
if [ "${driver%%.*}" -lt 580 ]; then
  echo "run_cuda.sh: refused: driver $driver is older than CUDA 13 needs (580 or newer)" | tee "$out/refused.txt"
  exit 2
fi
rm -f "$out/refused.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true

# The commit the binaries were built from, for the report's header and file name: bundle.sh
# wrote it into COMMIT (the GPU machine has no checkout); HETPASS_COMMIT overrides.
commit=${HETPASS_COMMIT:-$(cat "$here/COMMIT" 2>/dev/null || git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}

status=0
reported=0
# This run's records only: an OUT_DIR used before must not lend its steps to this report.
rm -f "$out/plan.txt" "$out/steps.tsv" "$out/tests.txt" "$out/models.txt" "$out/cuda_report.json" "$out/cuda_report.md"

report() {
  reported=1
  python3 "$here/cuda_report.py" "$out" --commit="$commit"
}
# Whatever stops the script early (an unexpected error under set -e, an interrupt), the report
# of what ran is still written: it names every planned step that did not finish as missing.
on_exit() {
  local rc=$?
  # Once: an interrupt reaches timeout too, which passes it on to this process group again.
  trap - EXIT
  trap '' INT TERM
  if [ "$reported" = 0 ]; then
    echo "run_cuda.sh: stopped early (exit $rc); writing the report of what ran" >&2
    report || true
    [ "$rc" -ne 0 ] || rc=1
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# grep without -q, here and below: with pipefail, grep -q leaving at the first match can kill
# the writer with SIGPIPE, and the pipeline would then read as no match.
if ldd "$here/bin/hetpass" | grep "not found" > /dev/null; then
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
  ldconfig -p 2>/dev/null | grep "$so " > /dev/null && return 0
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
if [ -z "${HETPASS_CUDNN:-}" ] && ! ldconfig -p 2>/dev/null | grep "libcudnn.so.9 " > /dev/null; then
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
  echo "commit=$commit"
  echo "driver=$driver"
  echo "ptxas=$HETPASS_PTXAS"
  echo "cublaslt=$cublaslt"
  echo "nvrtc=$nvrtc"
  echo "cudnn=$cudnn"
  echo "cupti=$cupti_lib"
  ldd "$here/bin/hetpass" | grep -E "libstdc|libgcc_s" || true
} > "$out/environment.txt"

# HETPASS_GPU_STEPS: which of tests, models, conformance to run (default all three; the report
# is written whichever ran). GTEST_FILTER narrows the tests, HETPASS_GPU_CONFORMANCE the
# conformance variants (default "default on_gpu").
steps=" ${HETPASS_GPU_STEPS:-tests models conformance} "

# step LOG NAME STDOUT STDERR CMD...: the plan pass lists NAME in plan.txt; the run pass runs
# CMD with its output in STDOUT and STDERR ("-": into STDOUT, a log) and records its exit status
# in steps.tsv and, as "NAME exit RC", in LOG. A failed step fails the run, not the script: the
# later steps still run, and the report sees them all. A JSON a failing command printed (hetpass
# run prints its report before failing on a ledger that disagrees) stays in STDOUT.
step() {
  local log=$1 name=$2 stdout=$3 stderr=$4 rc=0
  shift 4
  if [ "$pass" = plan ]; then
    printf '%s\n' "$name" >> "$out/plan.txt"
    return 0
  fi
  if [ "$stderr" = - ]; then
    "$@" > "$stdout" 2>&1 || rc=$?
  else
    "$@" > "$stdout" 2> "$stderr" || rc=$?
  fi
  printf '%s\t%s\n' "$name" "$rc" >> "$out/steps.tsv"
  echo "$name exit $rc" | tee -a "$out/$log"
  if [ "$rc" -ne 0 ]; then status=1; fi
}

# A requested conformance run the bundle cannot make is a failed step, not a silent omission.
no_conformance() {
  echo "conformance cuda: not run (no node tests in the bundle, or no python3)"
  return 1
}

# ONNX's node tests on cuda: every run pinned as passing on cpu must pass on cuda, twice: with
# the default pipeline (inputs and results on the host, so plan-devices keeps a one-op model's
# elementwise op there: no copy pays for itself) and with inputs and results on the GPU, which
# puts every op a cuda kernel runs on the GPU.
on_gpu="infer-types,fold-constants,cse,dce,loop-append-to-scan,plan-devices{target=cuda,inputs=target,outputs=target},fuse-ops,manifest-alloc,plan-memory{share=false}"

# Every step of this run, through `step`: called once to write the plan, once to run it, so
# that the two cannot list different steps.
all_steps() {
  local t name m f i dev b variant
  if [[ "$steps" == *" tests "* ]]; then
    for t in "$here"/bin/hetpass_*_tests; do
      name=$(basename "$t")
      step tests.txt "$name" "$out/$name.log" - timeout 300 "$t" --gtest_output="json:$out/$name.json"
    done
  fi
  if [[ "$steps" == *" models "* ]]; then
    for m in "$here"/models/*/; do
      name=$(basename "$m")
      inputs=()
      i=0
      for f in "$m"/test_data_set_0/input_*.pb; do
        inputs+=(--input "#$i=$f")
        i=$((i + 1))
      done
      for dev in cuda sim cpu; do
        step models.txt "test-onnx $name $dev" "$out/test_${name}_${dev}.json" "$out/test_${name}_${dev}.err" \
          timeout 300 "$here/bin/hetpass" test-onnx "$m" --device="$dev" --json
        cupti=()
        if [ "$dev" = cuda ]; then cupti=(--cupti); fi
        step models.txt "run $name $dev" "$out/run_${name}_${dev}.json" "$out/run_${name}_${dev}.err" \
          timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device="$dev" "${inputs[@]}" --repeat "$repeat" \
          --json "${cupti[@]}"
      done
      if [ "$name" = maskrcnn_tiny ]; then
        for b in relay single-flag; do
          step models.txt "run $name cuda baseline $b" "$out/run_${name}_cuda_$b.json" "$out/run_${name}_cuda_$b.err" \
            timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device=cuda --baseline-masks="$b" "${inputs[@]}" \
            --repeat "$repeat" --json --cupti
        done
      fi
    done
  fi
  if [[ "$steps" == *" conformance "* ]]; then
    for variant in ${HETPASS_GPU_CONFORMANCE:-default on_gpu}; do
      if [ ! -d "$here/onnx/node" ] || ! command -v python3 > /dev/null; then
        step tests.txt "conformance cuda $variant" "$out/conformance_cuda_$variant.txt" - no_conformance
        continue
      fi
      args=()
      if [ "$variant" = on_gpu ]; then args=(--passes="$on_gpu"); fi
      step tests.txt "conformance cuda $variant" "$out/conformance_cuda_$variant.txt" - \
        python3 "$here/onnx/conformance.py" "$here/bin/hetpass" "$here/onnx/node" --devices=cuda \
        --jobs="$(nproc)" --expected="$here/onnx/cuda_expected.txt" "${args[@]}" \
        --json="$out/conformance_cuda_$variant.json"
      if [ "$pass" = run ]; then
        grep -E "^overall|^pinned" "$out/conformance_cuda_$variant.txt" | tee -a "$out/tests.txt" || true
      fi
    done
  fi
}

pass=plan
all_steps
pass=run
all_steps
report || status=1
exit "$status"
