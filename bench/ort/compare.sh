#!/usr/bin/env bash
# hetpass against ONNX Runtime's CPU provider, side by side in one run, one thread each, on every
# model folder of ../shared/models (model.onnx + test_data_set_N/input_*.pb): median time per
# inference and the ratio ours / ORT (< 1: we are faster).
#
#   bash bench/ort/compare.sh [BUILD_DIR] [RUNS]     (ROUNDS=<n> rounds per row, default 5)
#
# ORT comes from npm (`onnxruntime-node`), installed with --ignore-scripts (its install script
# downloads GPU binaries; the CPU binding ships in the package) into BUILD_DIR/ort. It is driven
# from bench/ort/ort_bench.mjs only, never linked into hetpass. Both sides are pinned to one core
# (CPU=<n>, default 1); hetpass uses its default of one kernel-library thread.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
runs="${2:-200}"
rounds="${ROUNDS:-5}"
cpu="${CPU:-1}"
models_dir="${MODELS_DIR:-../shared/models}"
source bench/ort/ensure_ort.sh
# One row: model name, set number, model dir. ROUNDS rounds (default 5), each ORT then hetpass
# for RUNS runs: the machine's speed drifts (other tenants, frequency) over the seconds a model
# takes, so each round's ratio compares two measurements taken moments apart, and the row gives
# the median of the rounds' ratios with their range, next to the median of each side's round
# medians.
measure() {
  local model=$1 set=$2 dir=$3 set_dir="$3/test_data_set_$2"
  local inputs=()
  for pb in "$set_dir"/input_*.pb; do
    idx=$(basename "$pb" .pb); idx=${idx#input_}
    inputs+=(--input "#$idx=$pb")   # by position: input_<i>.pb is graph input i
  done
  local ort_json ours_json pairs=()
  for ((round = 0; round < rounds; ++round)); do
    ort_json=$(taskset -c "$cpu" node bench/ort/ort_bench.mjs "$dir" --set="$set" --runs="$runs" 2>&1) || {
      printf "%-30s %4s %12s %12s %8s  (ORT failed: %s)\n" "$model" "$set" - - - "${ort_json:0:80}"; return; }
    ours_json=$(taskset -c "$cpu" "$build/hetpass" run "$dir/model.onnx" --device=cpu --json \
                --repeat="$runs" "${inputs[@]}" 2>&1) || {
      printf "%-30s %4s %12s %12s %8s  (hetpass: %s)\n" "$model" "$set" - - - "${ours_json:0:100}"
      return; }
    pairs+=("$ours_json" "$ort_json")
  done
  python3 - "$model" "$set" "${pairs[@]}" <<'PY'
import json, statistics, sys
model, s, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
ours = [json.loads(x)["times_us"]["median"] for x in rest[0::2]]
ort = [json.loads(x)["median_us"] for x in rest[1::2]]
ratios = [a / b for a, b in zip(ours, ort)]
print("%-30s %4s %12.1f %12.1f %8.2f  [%.2f-%.2f]" % (model, s, statistics.median(ours),
      statistics.median(ort), statistics.median(ratios), min(ratios), max(ratios)))
PY
}

printf "%-30s %4s %12s %12s %8s  %s\n" model set "hetpass us" "ORT us" "ratio" "[rounds' range]"
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
