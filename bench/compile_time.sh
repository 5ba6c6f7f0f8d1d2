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
# ORT comes from npm as in bench/ort/compare.sh. CPU=<n> picks the core (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
processes="${2:-5}"
creations="${CREATIONS:-7}"
repeats="${REPEATS:-5}"
cpu="${CPU:-1}"
models_dir="${MODELS_DIR:-../shared/models}"
source bench/ort/ensure_ort.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

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

printf "%-28s %8s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %5s\n" model "ORT crt" "ORT 1st" \
  cold final warm "inp cold" "inp warm" warm/ORT cold/ORT "fresh w/f" "fresh c/f" same
for dir in "$models_dir"/*/; do
  dir=${dir%/}
  model=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  ort_runs="$scratch/$model.ort"
  : >"$ort_runs"
  failed=""
  for ((p = 0; p < processes; ++p)); do
    taskset -c "$cpu" node bench/ort/ort_bench.mjs "$dir" --create="$creations" >>"$ort_runs" 2>&1 ||
      { failed="ORT: $(tail -c 100 "$ort_runs")"; break; }
    cache="$scratch/cache_${model}_$p"
    mkdir -p "$cache"
    for step in cold:--repeat=2 warm:--repeat=2 inproc_warm:--compile-repeat=$repeats; do
      ours "$dir" "$cache" "${step#*:}" >"$scratch/$model.${step%%:*}.$p" 2>&1 ||
        { failed="hetpass: $(head -c 100 "$scratch/$model.${step%%:*}.$p")"; break 2; }
    done
    ours "$dir" off --compile-repeat="$repeats" >"$scratch/$model.inproc_cold.$p" 2>&1 ||
      { failed="hetpass: $(head -c 100 "$scratch/$model.inproc_cold.$p")"; break; }
    rm -rf "$cache"
  done
  if [ -n "$failed" ]; then
    printf "%-28s  (%s)\n" "$model" "$failed"
    continue
  fi
  python3 - "$model" "$ort_runs" "$scratch" "$processes" <<'PY'
import json, statistics, sys
model, ort_path, scratch, processes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ort = [json.loads(l) for l in open(ort_path) if l.startswith("{")]
create = statistics.median(t for o in ort for t in o["create_ms"][1:] or o["create_ms"])
first = statistics.median(o["create_ms_first"] for o in ort)
runs = {k: [json.load(open(f"{scratch}/{model}.{k}.{p}")) for p in range(processes)]
        for k in ("cold", "warm", "inproc_cold", "inproc_warm")}
med = lambda xs: statistics.median(xs)
cold = med([r["compile_ms"] for r in runs["cold"]])
final = med([r["kernels_final_ms"] for r in runs["cold"]])
warm = med([r["compile_ms"] for r in runs["warm"]])
inproc = {k: med([t for r in runs[k] for t in r["compile_repeats_ms"][1:]])
          for k in ("inproc_cold", "inproc_warm")}
same = all([o["fnv1a"] for o in c["outputs"]] == [o["fnv1a"] for o in w["outputs"]]
           for c, w in zip(runs["cold"], runs["warm"]))
print("%-28s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.2f %8.2f %9.2f %9.2f %5s" %
      (model, create, first, cold, final, warm, inproc["inproc_cold"], inproc["inproc_warm"],
       inproc["inproc_warm"] / create, inproc["inproc_cold"] / create, warm / first, cold / first,
       "yes" if same else "NO"))
PY
done
echo "(ms, medians; see the header of bench/compile_time.sh for each column)"
