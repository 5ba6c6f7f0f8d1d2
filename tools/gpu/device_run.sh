#!/usr/bin/env bash
# The one command of a lent GPU machine (docs/cuda.md, "Running on a GPU machine"): unpacks the
# bundle that tools/gpu/bundle.sh wrote to .gpu/b.tar.xz in this checkout, runs run_cuda.sh with
# a time budget and brings back its output folder as one archive.
#
#   here:  HETPASS_BUNDLE_TESTS="runtime compile_engine" tools/gpu/bundle.sh build .gpu/b.tar.xz ../shared
#   there: bash tools/gpu/device_run.sh [full|compile|quick] OUT    (OUT: the device tool's $OUT)
#
# Plans (each fits one 10-minute command with the machine's start):
#   full     every step: tests, shared models, zoo, profiles, peers, realistic models (about 8 min
#            before torch.compile, which takes what is left of the budget);
#   compile  for the compiled peers, which the full plan's budget may not reach: the zoo's eager
#            peers, the realistic models (hetpass and PyTorch), then torch.compile of both for
#            the rest of the budget;
#   quick    the CUDA tests of the kernels, maskrcnn_tiny and resnet_tiny, and four zoo models
#            with their profiles and eager peers (about 4 min).
# The run's folder comes back as OUT/gout.tar.gz with its two reports beside it.
set -uo pipefail
plan=${1:?usage: device_run.sh full|compile|quick OUT}
out=${2:?usage: device_run.sh full|compile|quick OUT}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$repo/.gpu/b.tar.xz
[ -f "$bundle" ] || { echo "device_run.sh: no bundle at $bundle (tools/gpu/bundle.sh)" >&2; exit 2; }
work=$(mktemp -d)
tar -xJf "$bundle" -C "$work" && rm -f "$bundle"
runner=$work/hetpass-gpu/run_cuda.sh
export HETPASS_REPO=$repo PYTHONUNBUFFERED=1
budget=470
case $plan in
  full)
    export HETPASS_GPU_STEPS="tests models zoo profile peers realistic" ;;
  compile)
    export HETPASS_GPU_STEPS="peers realistic"
    export HETPASS_GPU_REALISTIC_REPEAT=${HETPASS_GPU_REALISTIC_REPEAT:-3} ;;
  quick)
    budget=230
    (cd "$work/hetpass-gpu/models" && rm -rf mlp_dynamic_batch mlp_static_batch1 nonzero_gather transformer_encoder_dynamic)
    mkdir -p "$work/zoo"
    for m in gru_seq2seq efficientnet_b0 tiny_gpt detr_sine; do ln -s "$repo/test/zoo/models/$m" "$work/zoo/$m"; done
    export HETPASS_ZOO=$work/zoo HETPASS_GPU_STEPS="tests models zoo profile peers realistic"
    export HETPASS_REALISTIC_MODELS=resnet50 HETPASS_GPU_REALISTIC_REPEAT=5 HETPASS_GPU_ZOO_REPEAT=20
    export HETPASS_GPU_REPEAT=20 GTEST_FILTER='NvrtcAlgorithm.*:Cupti*:CudaDevice*:Cudnn*' ;;
  *) echo "device_run.sh: unknown plan '$plan' (full, compile or quick)" >&2; exit 2 ;;
esac
export HETPASS_GPU_SECONDS=${HETPASS_GPU_SECONDS:-$budget}
timeout $((HETPASS_GPU_SECONDS + 40)) bash "$runner" "$work/out" > "$out/run.log" 2>&1
rc=$?
echo "run_cuda.sh exit $rc"
(cd "$work/out" && tar -czf "$out/gout.tar.gz" --exclude='*.pb' . && cp cuda_report.md speed.md steps.tsv "$out/" 2> /dev/null)
grep -v " exit 0$" "$out/run.log" | head -40
exit "$rc"
