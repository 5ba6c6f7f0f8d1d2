#!/usr/bin/env bash
# The two Quick-start commands (README): `demo` and `test`. Works on a fresh Debian 12 as root:
# installs what is missing, configures, builds (ccache, -j2), then runs the demo or the tests.
#
#   bash tools/dev/run.sh demo     build + run the main job
#   bash tools/dev/run.sh test     build; fuzz the three doors of untrusted bytes: the ONNX
#                                  importer, the text IR parser, the executable loader (clang,
#                                  libFuzzer); the ThreadSanitizer pass (clang); ctest;
#                                  ASan+UBSan build + ctest
#
# Environment: HETPASS_BUILD_DIR (default build), HETPASS_JOBS (default 2),
#              HETPASS_SANITIZE_RUN=always|never (test: the ASan+UBSan pass, default always;
#              CI always runs it),
#              HETPASS_TSAN_RUN=always|never (test: the ThreadSanitizer pass, default always),
#              HETPASS_FUZZ_RUN=always|never (test: the fuzz pass, default always; a cold
#              fuzz build takes ~5 min of one core), HETPASS_FUZZ_SECONDS (default 60: seconds
#              of fuzzing ImportOnnx), HETPASS_FUZZ_PARSE_SECONDS and HETPASS_FUZZ_LOAD_SECONDS
#              (default 40 each: the text IR parser, the executable loader),
#              HETPASS_FUZZ_MAPPED_SECONDS (default 20: the mapped file import against
#              ImportOnnx; docs/fuzzing.md).
set -euo pipefail

cd "$(dirname "$0")/../.."
# ccache hashes absolute paths unless told the base: with it, a fresh clone elsewhere (CI)
# reuses the objects of earlier builds.
export CCACHE_BASEDIR="$PWD"
mode="${1:-}"
jobs="${HETPASS_JOBS:-2}"
build="${HETPASS_BUILD_DIR:-build}"
start=$(date +%s)

# Debian packages this project builds and tests with (see shared/DEPENDENCIES.md).
packages=(cmake ninja-build g++ ccache python3 libabsl-dev libgtest-dev libgmock-dev
          libbenchmark-dev llvm-16-dev llvm-16-tools libzstd-dev pkg-config libgraphviz-dev graphviz
          chromium libopenblas-dev libblis-dev libdnnl-dev libxsmm-dev
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
          libmimalloc-dev                # the tools' small-object heap (tools/common/small_object_heap.h)
          lld-16                         # the tools' hot-code link (cmake/hot_code.cmake)
          clang-16 libclang-rt-16-dev    # libFuzzer + sanitizer runtimes (fuzz pass)
          python3-dev pybind11-dev python3-numpy python3-pytest)   # the Python package

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
      echo "error: packages missing (${missing[*]}) and not root; install them or run as root" >&2
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# configure_and_build DIR [TARGET...] [-- CMAKE_OPTION...]: one configuration per directory
# (demo and test share `build`), building only the named targets (all if none).
configure_and_build() {
  local dir="$1"; shift
  local targets=() options=()
  while (($#)); do
    if [ "$1" = "--" ]; then shift; options=("$@"); break; fi
    targets+=(--target "$1"); shift
  done
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${options[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" "${targets[@]}"
}

run_demo() {
  configure_and_build "$build" hetpass-opt hetpass-cli pass-viz
  local pipeline="infer-types,fold-constants,cse,dce,plan-devices{target=sim},fuse-ops,manifest-alloc"
  local opt=("$build/hetpass-opt" examples/dynamic_mlp.hir --allow-elided-constants
             "--passes=$pipeline")
  echo
  echo "== hetpass demo: dynamic-batch MLP + run-time slice (examples/dynamic_mlp.hir)"
  echo "== pipeline: $pipeline"
  echo "== @main after the pipeline (the primitive functions follow it in the full output):"
  "${opt[@]}" --elide-constants --timing | sed -n '1,/^}/p'
  echo
  echo "== copy ledger (per inference, bytes in terms of the batch n):"
  "${opt[@]}" --copy-ledger=text
  echo
  local b
  for b in single-flag relay; do
    echo
    echo "== baseline '$b' masks, same placement and fusion (hetpass-opt --list-baseline=$b):"
    "$build/hetpass-opt" examples/dynamic_mlp.hir --allow-elided-constants \
      "--passes=$pipeline" --baseline-masks=$b --copy-ledger=text | grep -E '^(copy ledger|  [a-z0-9]+: )' || true
  done
  # The accelerator: the GPU when one is usable, else (one line saying why) the simulated one.
  local mlp_inputs=(--input x=16x32x32 --input 'begin=[0,0]' --input 'end=[15,126]' --input 'strides=[1,1]')
  local accel=sim probe
  echo
  if probe=$("$build/hetpass" run examples/dynamic_mlp.hir --device=cuda --random-weights "${mlp_inputs[@]}" 2>&1); then
    accel=cuda
    echo "== a GPU is usable: the accelerator below is cuda"
  elif printf '%s\n' "$probe" | grep -q -e "no usable GPU" -e "has no CUDA device"; then
    echo "no GPU here: $(printf '%s\n' "$probe" | sed -n 's/.*--device=cuda: cuda: //p' | head -n 1); going on with sim"
  else
    printf '%s\n' "$probe" >&2
    echo "error: the run on the GPU failed (above)" >&2
    exit 1
  fi
  echo "== compiled and run on the $accel device (batch 16; weights random): the ledger's promise"
  echo "== next to the counters the device measured"
  "$build/hetpass" run examples/dynamic_mlp.hir --device=$accel --random-weights --repeat 5 "${mlp_inputs[@]}"
  # A real PyTorch-exported model with data-dependent shapes (NonZero, TopK with a computed k):
  # imported from ONNX, compiled once, run on both test sets (different dynamic sizes).
  local onnx_model=../shared/models/nonzero_gather
  if [ -f "$onnx_model/model.onnx" ]; then
    echo
    echo "== ONNX: $onnx_model (PyTorch export) on $accel, one compilation for both test sets"
    "$build/hetpass" test-onnx "$onnx_model" --device=$accel
  else
    echo "error: $onnx_model/model.onnx is missing (../shared must sit beside the checkout)" >&2
    exit 1
  fi
  # The headline: Mask R-CNN (If/Loop, NonMaxSuppression, RoiAlign, a mask-pasting Loop whose
  # Resize sizes come from box values), per-input masks against the old single flag.
  local detector=../shared/models/maskrcnn_tiny
  if [ -f "$detector/model.onnx" ]; then
    echo
    echo "== ONNX: $detector on $accel with hetpass's per-input masks: the copy ledger, loop terms"
    echo "== included, next to the counters the device measured"
    "$build/hetpass" test-onnx "$detector" --device=$accel --copy-ledger
    for b in single-flag relay; do
      echo
      echo "== the same program (placement and fusion) under the '$b' baseline masks"
      "$build/hetpass" test-onnx "$detector" --device=$accel --baseline-masks=$b
    done
    echo
    echo "== pass-viz: every stage of the detector, opening on the copy view (why each copy"
    echo "== happens): viz/index.html (docs/pass_viz.md, 'Finding why a value was copied')"
    "$build/tools/viz/pass-viz" "$detector/model.onnx" --out viz \
      --passes='infer-types,fold-constants,cse,dce,plan-devices{target=sim},fuse-ops,manifest-alloc' 2>&1 | tail -n 1
  else
    echo "error: $detector/model.onnx is missing (../shared must sit beside the checkout)" >&2
    exit 1
  fi
}

# The fuzz pass (docs/fuzzing.md): its own clang build directory with only the fuzzers and
# their lean core library (no LLVM, oneDNN or Graphviz), then its ctest, two tests per fuzzer:
# replay its saved findings (test/fuzz/regressions/<target>/), then fuzz from a seed corpus
# made on the spot (make_corpus.sh: the machine's ONNX models and tensors, the repository's .hir
# files, executables compiled from them) for a fixed time:
#   onnx_import_fuzzer  ImportOnnx                            HETPASS_FUZZ_SECONDS (60)
#   onnx_tensor_fuzzer  ParseOnnxTensor                       15
#   ir_parse_fuzzer     ParseModule + verifier, printer round trip, infer-types
#                                                             HETPASS_FUZZ_PARSE_SECONDS (40)
#   vm_load_fuzzer      Executable::Deserialize + VirtualMachine::Load (checksums fixed up)
#                                                             HETPASS_FUZZ_LOAD_SECONDS (40)
#   onnx_mapped_fuzzer  ImportOnnxFile's mapped skeleton against ImportOnnx
#                                                             HETPASS_FUZZ_MAPPED_SECONDS (20)
# ctest runs two at a time (-j2): about 1.5 min of fuzzing. Runs before the main ctest so the
# log still ends with that summary; a finding stops the run here, with the report and the
# reproducer's path.
run_fuzz() {
  local dir="${build}-fuzz"
  local seconds="${HETPASS_FUZZ_SECONDS:-60}"
  local parse_seconds="${HETPASS_FUZZ_PARSE_SECONDS:-40}"
  local load_seconds="${HETPASS_FUZZ_LOAD_SECONDS:-40}"
  local mapped_seconds="${HETPASS_FUZZ_MAPPED_SECONDS:-20}"
  echo "== fuzz pass: ImportOnnx ${seconds}s, ParseOnnxTensor 15s, ParseModule ${parse_seconds}s," \
       "Executable load ${load_seconds}s, mapped import ${mapped_seconds}s ($dir, clang-16 + libFuzzer)"
  configure_and_build "$dir" -- -DHETPASS_FUZZ=ON -DCMAKE_C_COMPILER=clang-16 \
    -DCMAKE_CXX_COMPILER=clang++-16 -DHETPASS_FUZZ_SECONDS="$seconds" \
    -DHETPASS_FUZZ_PARSE_SECONDS="$parse_seconds" -DHETPASS_FUZZ_LOAD_SECONDS="$load_seconds" \
    -DHETPASS_FUZZ_MAPPED_SECONDS="$mapped_seconds"
  if ! (cd "$dir" && ctest -j "$jobs" --output-on-failure); then
    echo "error: the fuzz pass failed: report and reproducer above" \
         "(logs: $dir/test/fuzz/*/fuzz.log)" >&2
    exit 1
  fi
  local f
  for f in "$dir"/test/fuzz/*/summary.txt; do
    echo "== $(basename "$(dirname "$f")"): $(head -n 1 "$f")"
  done
}

# The ThreadSanitizer pass (docs/runtime.md, "Threading"): its own clang build directory with
# the lean library (no oneDNN, LLVM JIT or CUDA: reference kernels) and the tests of the
# runtime's, VM's and compile engine's threads, concurrent inference and fault injection
# included (cmake/tsan.cmake). A race fails the run here, with TSan's report.
run_tsan() {
  local dir="${build}-tsan"
  echo "== ThreadSanitizer pass ($dir, clang-16)"
  configure_and_build "$dir" -- -DHETPASS_TSAN=ON -DCMAKE_C_COMPILER=clang-16 \
    -DCMAKE_CXX_COMPILER=clang++-16
  if ! (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 900); then
    echo "error: the ThreadSanitizer pass failed: report above" >&2
    exit 1
  fi
}

run_tests() {
  configure_and_build "$build" -- -DHETPASS_BUILD_TESTS=ON -DHETPASS_BUILD_BENCH=ON
  if [ "${HETPASS_FUZZ_RUN:-always}" != never ]; then run_fuzz; fi
  if [ "${HETPASS_TSAN_RUN:-always}" != never ]; then run_tsan; fi
  (cd "$build" && ctest -j "$jobs" --output-on-failure --timeout 900)
  local elapsed=$(( $(date +%s) - start ))
  if [ "${HETPASS_SANITIZE_RUN:-always}" != never ]; then
    # Always: a cold run on 2 cores (plain + fuzz + sanitizer builds) fits CI's 90 minutes
    # (times in the README, Quick start); the ASan+UBSan ctest is the log's last summary line.
    echo "== ASan+UBSan pass (plain and fuzz passes took ${elapsed}s)"
    configure_and_build "${build}-asan" -- -DHETPASS_SANITIZE=ON -DHETPASS_BUILD_BENCH=OFF
    (cd "${build}-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest -j "$jobs" --output-on-failure --timeout 1800)
  else
    echo "== ASan+UBSan pass skipped (HETPASS_SANITIZE_RUN=never)"
    # The log must end with ctest's own summary: the suite takes seconds once built.
    (cd "$build" && ctest -j "$jobs" --timeout 900 | tail -n 3)
  fi
}

case "$mode" in
  demo) install_missing; run_demo ;;
  test) install_missing; run_tests ;;
  *) echo "usage: bash tools/dev/run.sh demo|test" >&2; exit 2 ;;
esac
