#!/usr/bin/env bash
# hetpass against ONNX Runtime's CPU provider, side by side in one run, one thread each, on every
# model folder of ../shared/models (model.onnx + test_data_set_N/input_*.pb): median time per
# inference and the ratio ours / ORT (< 1: we are faster).
#
#   bash bench/ort/compare.sh [BUILD_DIR] [RUNS]
#
# ORT comes from npm (`onnxruntime-node`), installed with --ignore-scripts (its install script
# downloads GPU binaries; the CPU binding ships in the package) into BUILD_DIR/ort. It is driven
# from bench/ort/ort_bench.mjs only, never linked into hetpass. Both sides are pinned to one core
# (CPU=<n>, default 1); hetpass uses its default of one kernel-library thread.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
runs="${2:-200}"
cpu="${CPU:-1}"
models_dir="${MODELS_DIR:-../shared/models}"
source bench/ort/ensure_ort.sh
# One row: model name, set number, model dir.
measure() {
  local model=$1 set=$2 dir=$3 set_dir="$3/test_data_set_$2"
  local ort_json ours_json
  ort_json=$(taskset -c "$cpu" node bench/ort/ort_bench.mjs "$dir" --set="$set" --runs="$runs" 2>&1) || {
    printf "%-30s %4s %12s %12s %8s  (ORT failed: %s)\n" "$model" "$set" - - - "${ort_json:0:80}"; return; }
  local inputs=()
  for pb in "$set_dir"/input_*.pb; do
    idx=$(basename "$pb" .pb); idx=${idx#input_}
    inputs+=(--input "#$idx=$pb")   # by position: input_<i>.pb is graph input i
  done
  ours_json=$(taskset -c "$cpu" "$build/hetpass" run "$dir/model.onnx" --device=cpu --json \
              --repeat="$runs" "${inputs[@]}" 2>&1) || {
    printf "%-30s %4s %12s %12s %8s  (hetpass: %s)\n" "$model" "$set" - \
      "$(python3 -c 'import json,sys; print("%.1f" % json.loads(sys.argv[1])["median_us"])' "$ort_json")" - "${ours_json:0:100}"
    return; }
  python3 - "$model" "$set" "$ours_json" "$ort_json" <<'PY'
import json, sys
model, s, ours, ort = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
a, b = ours["times_us"]["median"], ort["median_us"]
print("%-30s %4s %12.1f %12.1f %8.2f" % (model, s, a, b, a / b))
PY
}

printf "%-30s %4s %12s %12s %8s\n" model set "hetpass us" "ORT us" "ratio"
# The harness floor: a one-Relu model through both drivers. ORT's side is timed through node
# (session.run from JavaScript), ours inside the process, so a model that takes a few us on
# both is dominated by this floor; read small ratios next to it.
floor_dir="${FLOOR_MODEL:-/usr/share/libonnx-testdata/data/node/test_relu}"
if [ -f "$floor_dir/model.onnx" ]; then
  measure "(harness floor: one Relu)" 0 "$floor_dir"
else
  echo "(harness floor not measured: $floor_dir/model.onnx is missing; install libonnx-testdata)"
fi
for dir in "$models_dir"/*/; do
  model=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  for set_dir in "$dir"/test_data_set_*; do
    measure "$model" "${set_dir##*_}" "$dir"
  done
done
