#!/usr/bin/env bash
# hetpass against ONNX Runtime's CPU provider, side by side in one run, one thread each, on every
# model folder of ../shared/models (model.onnx + test_data_set_N/input_*.pb): median time per
# inference and the ratio ours / ORT (< 1: we are faster), raw and conservative.
#
#   bash bench/ort/compare.sh [BUILD_DIR] [RUNS]     (ROUNDS=<n> rounds per row, default 5)
#
# The two sides are not timed alike: ORT through node (session.run called from JavaScript: the
# binding, its promise, the output tensors wrapped for JavaScript), hetpass inside its own process
# (`hetpass run --repeat`). A one-Relu model (FLOOR_MODEL, libonnx-testdata's test_relu) measures
# that harness floor on both sides first, in the same run, and every row has two ratios:
#   ratio         ours / ORT: the median of the rounds' ratios [their range]
#   conservative  ours / (ORT - (ORT floor - our floor)): ORT credited with the whole floor
#                 difference, as if all of it were harness and none of it ORT's own per-call work,
#                 so the figure is the least favourable to us this harness can support; the median
#                 of the rounds' [range]. "n/a (ORT within the floor difference)" where a round's
#                 ORT time is not above the difference. A floor difference below zero (ORT's floor
#                 under ours) counts as zero: the column is never kinder to us than the raw one.
# Both floors are printed above and below the table. Every performance goal against ORT
# (docs/onnx.md, docs/zoo.md, issue 14) is read on the conservative column; the raw one says how
# much of a small model's time is the harness.
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
floor_dir="${FLOOR_MODEL:-/usr/share/libonnx-testdata/data/node/test_relu}"
source bench/ort/ensure_ort.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The floor's medians, "OURS_US ORT_US", written by the floor row; absent when not measured.
floor_file="$scratch/floor"
# One row: model name, set number, model dir[, "floor"]. ROUNDS rounds (default 5), each ORT then
# hetpass for RUNS runs: the machine's speed drifts (other tenants, frequency) over the seconds a
# model takes, so each round's ratio compares two measurements taken moments apart, and the row
# gives the median of the rounds' ratios with their range, next to the median of each side's
# round medians. The floor row writes its two medians to $floor_file; the others read them for
# the conservative column.
measure() {
  local model=$1 set=$2 dir=$3 role=${4:-row} set_dir="$3/test_data_set_$2"
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
  python3 - "$model" "$set" "$role" "$floor_file" "${pairs[@]}" <<'PY'
import json, os, statistics, sys
model, s, role, floor_file, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
ours = [json.loads(x)["times_us"]["median"] for x in rest[0::2]]
ort = [json.loads(x)["median_us"] for x in rest[1::2]]
ratios = [a / b for a, b in zip(ours, ort)]
row = "%-30s %4s %12.1f %12.1f %8.2f  %-13s" % (model, s, statistics.median(ours),
      statistics.median(ort), statistics.median(ratios), "[%.2f-%.2f]" % (min(ratios), max(ratios)))
if role == "floor":
    with open(floor_file, "w") as f:
        f.write("%.3f %.3f\n" % (statistics.median(ours), statistics.median(ort)))
    print(row, " (the floor)")
elif not os.path.exists(floor_file):
    print(row, " n/a (no floor measured)")
else:
    floor_ours, floor_ort = map(float, open(floor_file).read().split())
    # ORT is credited with the whole floor difference; a negative one is not held against it.
    credit = max(0.0, floor_ort - floor_ours)
    if any(b <= credit for b in ort):
        print(row, " n/a (ORT within the floor difference)")
    else:
        cons = [a / (b - credit) for a, b in zip(ours, ort)]
        print(row, " %12.2f  [%.2f-%.2f]" % (statistics.median(cons), min(cons), max(cons)))
PY
}

# "# harness floor ...": both floors and the difference the conservative column subtracts, above
# and below the table (tools/models/zoo_report.py reads this line).
floor_line() {
  if [ -f "$floor_file" ]; then
    awk -v dir="$floor_dir" '{ d = $2 - $1; if (d < 0) d = 0
      printf "# harness floor (one Relu, %s): hetpass %.1f us, ORT %.1f us; " \
             "conservative = ours / (ORT - %.1f us)\n", dir, $1, $2, d }' "$floor_file"
  else
    echo "# harness floor not measured (no $floor_dir/model.onnx, or a side failed on it:" \
         "install libonnx-testdata or set FLOOR_MODEL): no conservative ratio"
  fi
}

if [ -f "$floor_dir/model.onnx" ]; then
  floor_row=$(measure "(harness floor: one Relu)" 0 "$floor_dir" floor)
else
  floor_row=""
fi
floor_line
printf "%-30s %4s %12s %12s %8s  %-13s  %12s  %s\n" model set "hetpass us" "ORT us" "ratio" \
  "[rounds]" "conservative" "[rounds]"
[ -z "$floor_row" ] || echo "$floor_row"
for dir in "$models_dir"/*/; do
  model=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  for set_dir in "$dir"/test_data_set_*; do
    measure "$model" "${set_dir##*_}" "$dir"
  done
done
floor_line
