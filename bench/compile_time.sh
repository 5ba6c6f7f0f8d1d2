#!/usr/bin/env bash
# Compile time of every shared model (../shared/models/*/model.onnx) against ONNX Runtime's
# session creation (issue 14: warm at most ORT, cold at most 3x ORT), one core each.
#
#   bash bench/compile_time.sh [BUILD_DIR] [PROCESSES]
#
# Per model, each figure the median over PROCESSES (default 5) processes:
#   ORT create   the session creations after the first in one node process (CREATIONS, default
#                7), graphOptimizationLevel 'all' (ORT_ENABLE_ALL), one thread
#                (bench/ort/ort_bench.mjs --create): what a process that already made a session
#                pays for the next
#   ORT first    the first creation of a fresh process, which also pays ORT's one-time
#                initialisation
#   ours         `hetpass run MODEL --device=cpu --json` compile_ms: import, pass pipeline, VM
#                load until the model can run. JIT kernels are generated on a background thread
#                (tiered compilation, docs/runtime.md): until each is ready its group runs on the
#                reference kernels
#     cold       a fresh process, empty kernel cache directory (HETPASS_KERNEL_CACHE_DIR)
#     final      the same process: when the last JIT kernel was ready (kernels_final_ms; at most,
#                when that was during the first run)
#     warm       a fresh process on the cache the cold one filled
#     in-proc cold / in-proc warm
#                the compiles after the first of --compile-repeat=REPEATS (default 5) in one
#                process, without a kernel cache / on the warm one: the counterpart of ORT create
#   warm/ORT     in-proc warm / ORT create        cold/ORT   in-proc cold / ORT create
#   fresh w/f    warm / ORT first                 fresh c/f  cold / ORT first
#   same         the warm run's outputs bit-identical to the cold run's (FNV-1a digests; both from
#                a second run, after every JIT kernel was final)
# The two sides are not timed alike: ORT's creations inside node (the JavaScript binding, reading
# the file, its promise), ours inside hetpass's process. So a one-Relu model (FLOOR_MODEL,
# libonnx-testdata's test_relu) is measured first, in the same run, as the harness floor of every
# figure, and each ratio has a conservative twin that credits ORT with the whole floor
# difference: ours / (ORT - (ORT's floor - our floor)), the floors of the same two columns:
#   cons w/O     inp warm / (ORT crt - (floor's ORT crt - floor's inp warm))
#   cons c/O     inp cold / (ORT crt - (floor's ORT crt - floor's inp cold))
#   cons w/f     warm / (ORT 1st - (floor's ORT 1st - floor's warm))
#   cons c/f     cold / (ORT 1st - (floor's ORT 1st - floor's cold))
# n/a where ORT's figure is not above the floor difference (the row says "ORT within the floor
# difference"); a difference below zero (ORT's floor under ours) counts as zero, so a conservative
# ratio is never kinder to us than its raw twin. Both sides' floors are printed above and below
# the table. Every performance goal against ORT (issue 14: warm at most ORT, cold at most 3x ORT)
# is read on the conservative columns.
# ORT comes from npm as in bench/ort/compare.sh. CPU=<n> picks the core (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
processes="${2:-5}"
creations="${CREATIONS:-7}"
repeats="${REPEATS:-5}"
cpu="${CPU:-1}"
models_dir="${MODELS_DIR:-../shared/models}"
floor_dir="${FLOOR_MODEL:-/usr/share/libonnx-testdata/data/node/test_relu}"
source bench/ort/ensure_ort.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The floor row's medians (JSON, one per column), read by every other row; absent when the floor
# was not measured.
floor_file="$scratch/floor.json"

# ours MODEL_DIR CACHE_DIR [FLAGS...]: one `hetpass run` on test_data_set_0, its JSON line.
ours() {
  local dir="$1" cache="$2" inputs=()
  shift 2
  for pb in "$dir"/test_data_set_0/input_*.pb; do
    local idx; idx=$(basename "$pb" .pb); idx=${idx#input_}
    inputs+=(--input "#$idx=$pb")
  done
  HETPASS_KERNEL_CACHE_DIR="$cache" taskset -c "$cpu" "$build/hetpass" run "$dir/model.onnx" \
    --device=cpu --json "${inputs[@]}" "$@"
}

# measure_model MODEL_DIR NAME KEY [floor]: one row of the table (KEY names its scratch files).
# The floor row writes its medians to $floor_file.
measure_model() {
  local dir="$1" model="$2" key="$3" role="${4:-row}"
  local ort_runs="$scratch/$key.ort" failed="" cache p
  : >"$ort_runs"
  for ((p = 0; p < processes; ++p)); do
    taskset -c "$cpu" node bench/ort/ort_bench.mjs "$dir" --create="$creations" >>"$ort_runs" 2>&1 ||
      { failed="ORT: $(tail -c 100 "$ort_runs")"; break; }
    cache="$scratch/cache_${key}_$p"
    mkdir -p "$cache"
    for step in cold:--repeat=2 warm:--repeat=2 inproc_warm:--compile-repeat=$repeats; do
      ours "$dir" "$cache" "${step#*:}" >"$scratch/$key.${step%%:*}.$p" 2>&1 ||
        { failed="hetpass: $(head -c 100 "$scratch/$key.${step%%:*}.$p")"; break 2; }
    done
    ours "$dir" off --compile-repeat="$repeats" >"$scratch/$key.inproc_cold.$p" 2>&1 ||
      { failed="hetpass: $(head -c 100 "$scratch/$key.inproc_cold.$p")"; break; }
    rm -rf "$cache"
  done
  if [ -n "$failed" ]; then
    printf "%-28s  (%s)\n" "$model" "$failed"
    return
  fi
  python3 - "$model" "$key" "$ort_runs" "$scratch" "$processes" "$role" "$floor_file" <<'PY'
import json, os, statistics, sys
model, key, ort_path, scratch, processes, role, floor_file = sys.argv[1:8]
processes = int(processes)
ort = [json.loads(l) for l in open(ort_path) if l.startswith("{")]
create = statistics.median(t for o in ort for t in o["create_ms"][1:] or o["create_ms"])
first = statistics.median(o["create_ms_first"] for o in ort)
runs = {k: [json.load(open(f"{scratch}/{key}.{k}.{p}")) for p in range(processes)]
        for k in ("cold", "warm", "inproc_cold", "inproc_warm")}
med = lambda xs: statistics.median(xs)
cold = med([r["compile_ms"] for r in runs["cold"]])
final = med([r["kernels_final_ms"] for r in runs["cold"]])
warm = med([r["compile_ms"] for r in runs["warm"]])
inproc = {k: med([t for r in runs[k] for t in r["compile_repeats_ms"][1:]])
          for k in ("inproc_cold", "inproc_warm")}
same = all([o["fnv1a"] for o in c["outputs"]] == [o["fnv1a"] for o in w["outputs"]]
           for c, w in zip(runs["cold"], runs["warm"]))
figures = dict(create=create, first=first, cold=cold, warm=warm, **inproc)
# Each ratio: ours, the ORT figure it is divided by.
pairs = [("inproc_warm", "create"), ("inproc_cold", "create"), ("warm", "first"), ("cold", "first")]
conservative, notes = [], ""
if role == "floor":
    json.dump(figures, open(floor_file, "w"))
    conservative = ["-"] * len(pairs)
elif not os.path.exists(floor_file):
    conservative, notes = ["n/a"] * len(pairs), "  (n/a: no floor measured)"
else:
    floor = json.load(open(floor_file))
    for a, b in pairs:
        # ORT credited with the whole floor difference of these two columns; a negative one is
        # not held against it.
        denominator = figures[b] - max(0.0, floor[b] - floor[a])
        conservative.append("%.2f" % (figures[a] / denominator) if denominator > 0 else "n/a")
    if "n/a" in conservative:
        notes = "  (n/a: ORT within the floor difference)"
print("%-28s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.2f %8.2f %9.2f %9.2f %8s %8s %8s %8s %5s%s" %
      (model, create, first, cold, final, warm, inproc["inproc_cold"], inproc["inproc_warm"],
       inproc["inproc_warm"] / create, inproc["inproc_cold"] / create, warm / first, cold / first,
       *conservative, "yes" if same else "NO", notes))
PY
}

# "# harness floor ...": both sides' floors, above and below the table.
floor_line() {
  if [ -f "$floor_file" ]; then
    python3 - "$floor_file" "$floor_dir" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
print("# harness floor (one Relu, %s), ms: ORT crt %.1f, ORT 1st %.1f; ours cold %.1f, warm %.1f, "
      "inp cold %.1f, inp warm %.1f" % (sys.argv[2], f["create"], f["first"], f["cold"], f["warm"],
                                        f["inproc_cold"], f["inproc_warm"]))
PY
  else
    echo "# harness floor not measured (no $floor_dir/model.onnx, or a side failed on it:" \
         "install libonnx-testdata or set FLOOR_MODEL): no conservative ratio"
  fi
}

floor_row=""
if [ -f "$floor_dir/model.onnx" ]; then
  floor_row=$(measure_model "$floor_dir" "(harness floor: one Relu)" harness_floor floor)
fi
floor_line
printf "%-28s %8s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %8s %8s %8s %8s %5s\n" model "ORT crt" \
  "ORT 1st" cold final warm "inp cold" "inp warm" warm/ORT cold/ORT "fresh w/f" "fresh c/f" \
  "cons w/O" "cons c/O" "cons w/f" "cons c/f" same
[ -z "$floor_row" ] || echo "$floor_row"
for dir in "$models_dir"/*/; do
  dir=${dir%/}
  model=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  measure_model "$dir" "$model" "$model"
done
floor_line
echo "(ms, medians; see the header of bench/compile_time.sh for each column)"
