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
#   5. zoo: every zoo model (HETPASS_ZOO, default test/zoo/models of the checkout holding
#      tools/gpu) with test-onnx and run on cuda and cpu, and a --profile run on cuda (the host's
#      time per VM instruction: what a launch costs the host); the shared models get the
#      profile run too;
#   6. peers: PyTorch on the same GPU (tools/gpu/peers.py: eager, then torch.compile with and
#      without CUDA graphs) on the zoo's definitions and inputs;
#   7. realistic: ResNet-50 and a BERT-base-sized encoder exported here (tools/gpu/realistic.py),
#      run by hetpass (cuda and cpu, both sets) and PyTorch;
#   8. writes OUT_DIR/cuda_report.json and OUT_DIR/cuda_report_<gpu>_<date>_<commit>.md (also
#      as OUT_DIR/cuda_report.md) with cuda_report.py, and OUT_DIR/speed.{json,md} with
#      speed_report.py (latency against the peers, GPU time, host cost per launch), however the
#      run ends.
# HETPASS_REALISTIC_MODELS narrows the realistic models; HETPASS_GPU_REALISTIC_REPEAT and
# HETPASS_GPU_ZOO_REPEAT set their repetitions. HETPASS_GPU_SECONDS (default 0: none) is the
# run's time budget: a step that would start after it is recorded as not run (time budget),
# and the torch.compile rows stop at it.
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
zoo_repeat=${HETPASS_GPU_ZOO_REPEAT:-30}
realistic_repeat=${HETPASS_GPU_REALISTIC_REPEAT:-20}
started=$(date +%s)
deadline=0
[ "${HETPASS_GPU_SECONDS:-0}" -gt 0 ] && deadline=$((started + HETPASS_GPU_SECONDS))
# The checkout holding the peers' scripts and the zoo (the device tool runs in a checkout; the
# bundle alone has neither).
repo=${HETPASS_REPO:-$(cd "$here/../.." 2> /dev/null && pwd)}
zoo=${HETPASS_ZOO:-$repo/test/zoo/models}
realistic_dir=${HETPASS_REALISTIC_DIR:-/tmp/hetpass_realistic}

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
rm -f "$out/plan.txt" "$out/steps.tsv" "$out/tests.txt" "$out/models.txt" "$out/cuda_report.json" "$out/cuda_report.md" \
  "$out/speed.json" "$out/speed.md" "$out/peers.json" "$out/realistic.json"

report() {
  reported=1
  local rc=0
  python3 "$here/cuda_report.py" "$out" --commit="$commit" || rc=$?
  if [ -f "$here/speed_report.py" ]; then python3 "$here/speed_report.py" "$out" --commit="$commit" || rc=1; fi
  return "$rc"
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

# HETPASS_GPU_STEPS: which of tests, models, zoo, profile, peers, realistic, conformance to run
# (default all; the report
# is written whichever ran). GTEST_FILTER narrows the tests, HETPASS_GPU_CONFORMANCE the
# conformance variants (default "default on_gpu").
steps=" ${HETPASS_GPU_STEPS:-tests models zoo profile peers realistic conformance} "

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
  if [ "$deadline" -gt 0 ] && [ "$(date +%s)" -ge "$deadline" ]; then
    printf '%s\t%s\n' "$name" budget >> "$out/steps.tsv"
    echo "$name not run: time budget" | tee -a "$out/$log"
    status=1
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

# set_inputs DIR K: the inputs array of hetpass run for DIR/test_data_set_K.
set_inputs() {
  local f i=0
  inputs=()
  for f in "$1"/test_data_set_"$2"/input_*.pb; do
    [ -f "$f" ] || continue
    inputs+=(--input "#$i=$f")
    i=$((i + 1))
  done
}

# model_steps DIR NAME SET REPEAT DEVICE...: test-onnx (every set, with the tolerance array's
# flags) and run (set SET, REPEAT times; on cuda with CUPTI) per device.
tolerance=()
model_steps() {
  local m=$1 name=$2 set=$3 reps=$4 dev
  shift 4
  set_inputs "$m" "$set"
  for dev in "$@"; do
    step models.txt "test-onnx $name $dev" "$out/test_${name}_${dev}.json" "$out/test_${name}_${dev}.err" \
      timeout 300 "$here/bin/hetpass" test-onnx "$m" --device="$dev" --json "${tolerance[@]}"
    cupti=()
    if [ "$dev" = cuda ]; then cupti=(--cupti); fi
    step models.txt "run $name $dev" "$out/run_${name}_${dev}.json" "$out/run_${name}_${dev}.err" \
      timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device="$dev" "${inputs[@]}" --repeat "$reps" \
      --json "${cupti[@]}"
  done
}

# Every step of this run, through `step`: called once to write the plan, once to run it, so
# that the two cannot list different steps.
all_steps() {
  local t name m dev b variant
  if [[ "$steps" == *" tests "* ]]; then
    for t in "$here"/bin/hetpass_*_tests; do
      name=$(basename "$t")
      step tests.txt "$name" "$out/$name.log" - timeout 300 "$t" --gtest_output="json:$out/$name.json"
    done
  fi
  if [[ "$steps" == *" models "* ]]; then
    for m in "$here"/models/*/; do
      name=$(basename "$m")
      model_steps "$m" "$name" 0 "$repeat" cuda sim cpu
      if [ "$name" = maskrcnn_tiny ]; then
        set_inputs "$m" 0
        for b in relay single-flag; do
          step models.txt "run $name cuda baseline $b" "$out/run_${name}_cuda_$b.json" "$out/run_${name}_cuda_$b.err" \
            timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device=cuda --baseline-masks="$b" "${inputs[@]}" \
            --repeat "$repeat" --json --cupti
        done
      fi
    done
  fi
  if [[ "$steps" == *" zoo "* ]]; then
    for m in "$zoo"/*/; do
      [ -f "$m/model.onnx" ] || continue
      model_steps "$m" "$(basename "$m")" 0 "$zoo_repeat" cuda cpu
    done
  fi
  if [[ "$steps" == *" profile "* ]]; then
    for m in "$here"/models/*/ "$zoo"/*/; do
      [ -f "$m/model.onnx" ] || continue
      name=$(basename "$m")
      set_inputs "$m" 0
      step models.txt "profile $name cuda" "$out/profile_${name}_cuda.json" "$out/profile_${name}_cuda.err" \
        timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device=cuda "${inputs[@]}" --repeat 20 --profile --json
      # The same without device graphs: every kernel launched one by one (the host's cost per
      # launch that graphs amortise).
      step models.txt "profile $name cuda no graphs" "$out/profile_${name}_cuda_nographs.json" \
        "$out/profile_${name}_cuda_nographs.err" timeout 300 "$here/bin/hetpass" run "$m/model.onnx" --device=cuda \
        "${inputs[@]}" --repeat 20 --profile --json --device_graphs=false
    done
  fi
  if [[ "$steps" == *" peers "* ]]; then
    step tests.txt "peers eager" "$out/peers_eager.log" - \
      python3 "$repo/tools/gpu/peers.py" "$zoo" "$out/peers.json" --phase=eager --deadline="$deadline"
  fi
  if [[ "$steps" == *" realistic "* ]]; then
    step tests.txt "realistic export" "$out/realistic_export.log" - \
      python3 "$repo/tools/gpu/realistic.py" export "$realistic_dir"
    # Fifty layers in float32 on two devices: the reference is PyTorch's CPU; 1e-3 both ways.
    tolerance=(--rtol=1e-3 --atol=1e-3)
    for name in ${HETPASS_REALISTIC_MODELS:-resnet50 bert_base}; do
      # The second set (batch 32; 8 x 384) is its own row, without a second test-onnx (the
      # first row's checks both sets).
      model_steps "$realistic_dir/$name" "$name" 0 "$realistic_repeat" cuda cpu
      set_inputs "$realistic_dir/$name" 1
      for dev in cuda cpu; do
        cupti=()
        if [ "$dev" = cuda ]; then cupti=(--cupti); fi
        step models.txt "run ${name}_set1 $dev" "$out/run_${name}_set1_${dev}.json" "$out/run_${name}_set1_${dev}.err" \
          timeout 300 "$here/bin/hetpass" run "$realistic_dir/$name/model.onnx" --device="$dev" "${inputs[@]}" \
          --repeat "$realistic_repeat" --json "${cupti[@]}"
      done
      if [[ "$steps" == *" profile "* ]]; then
        for k in 0 1; do
          set_inputs "$realistic_dir/$name" "$k"
          suffix=$([ "$k" = 0 ] && echo "" || echo "_set$k")
          step models.txt "profile $name$suffix cuda" "$out/profile_$name${suffix}_cuda.json" \
            "$out/profile_$name${suffix}_cuda.err" timeout 300 "$here/bin/hetpass" run "$realistic_dir/$name/model.onnx" \
            --device=cuda "${inputs[@]}" --repeat 5 --profile --json
        done
      fi
    done
    tolerance=()
    step tests.txt "realistic eager" "$out/realistic_eager.log" - \
      python3 "$repo/tools/gpu/realistic.py" time "$realistic_dir" "$out/realistic.json" --phase=eager \
      --deadline="$deadline"
  fi
  # torch.compile last: it takes what time is left.
  if [[ "$steps" == *" peers "* ]]; then
    step tests.txt "peers compile" "$out/peers_compile.log" - \
      python3 "$repo/tools/gpu/peers.py" "$zoo" "$out/peers.json" --phase=compile --deadline="$deadline"
  fi
  if [[ "$steps" == *" realistic "* ]]; then
    step tests.txt "realistic compile" "$out/realistic_compile.log" - \
      python3 "$repo/tools/gpu/realistic.py" time "$realistic_dir" "$out/realistic.json" --phase=compile \
      --deadline="$deadline"
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
