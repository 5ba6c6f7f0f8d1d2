#!/usr/bin/env bash
# Compile time of every shared model (../shared/models/*/model.onnx) against ONNX Runtime's
# session creation (issue 14: warm at most ORT, cold at most 3x ORT), one core each.
#
#   bash bench/compile_time.sh [BUILD_DIR] [PROCESSES]
#
# Per model:
#   ORT create   median over CREATIONS (default 7) sessions created one after another in one
#                node process, graphOptimizationLevel 'all' (ORT_ENABLE_ALL), one thread
#                (bench/ort/ort_bench.mjs --create); the first creation of a process, which
#                also pays ORT's one-time initialisation, is shown apart (ORT first: median over
#                PROCESSES processes)
#   ours cold    `hetpass run MODEL --device=cpu --json` compile_ms (import, pass pipeline,
#                VM load with every kernel compiled) in a fresh process with an empty kernel
#                cache directory (HETPASS_KERNEL_CACHE_DIR, docs/runtime.md)
#   ours warm    the same in a second process on the cache the cold one filled
# each the median over PROCESSES (default 5) processes, plus warm/ORT and cold/ORT (against
# ORT create). `same` says whether the warm run's outputs are bit-identical to the cold run's
# (their FNV-1a digests). ORT comes from npm as in bench/ort/compare.sh. CPU=<n> picks the core
# (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
processes="${2:-5}"
creations="${CREATIONS:-7}"
cpu="${CPU:-1}"
models_dir="${MODELS_DIR:-../shared/models}"
source bench/ort/ensure_ort.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# ours MODEL_DIR CACHE_DIR: one `hetpass run` on test_data_set_0, its JSON line.
ours() {
  local dir="$1" cache="$2" inputs=()
  for pb in "$dir"/test_data_set_0/input_*.pb; do
    local idx; idx=$(basename "$pb" .pb); idx=${idx#input_}
    inputs+=(--input "#$idx=$pb")
  done
  HETPASS_KERNEL_CACHE_DIR="$cache" taskset -c "$cpu" "$build/hetpass" run "$dir/model.onnx" \
    --device=cpu --json "${inputs[@]}"
}

printf "%-28s %10s %10s %10s %10s %9s %9s %5s\n" model "ORT create" "ORT first" "ours cold" \
  "ours warm" "warm/ORT" "cold/ORT" same
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
    ours "$dir" "$cache" >"$scratch/$model.cold.$p" 2>&1 ||
      { failed="hetpass: $(head -c 100 "$scratch/$model.cold.$p")"; break; }
    ours "$dir" "$cache" >"$scratch/$model.warm.$p" 2>&1 ||
      { failed="hetpass: $(head -c 100 "$scratch/$model.warm.$p")"; break; }
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
cold, warm, same = [], [], True
for p in range(processes):
    c = json.load(open(f"{scratch}/{model}.cold.{p}"))
    w = json.load(open(f"{scratch}/{model}.warm.{p}"))
    cold.append(c["compile_ms"]); warm.append(w["compile_ms"])
    same &= [o["fnv1a"] for o in c["outputs"]] == [o["fnv1a"] for o in w["outputs"]]
c, w = statistics.median(cold), statistics.median(warm)
print("%-28s %10.1f %10.1f %10.1f %10.1f %9.2f %9.2f %5s" %
      (model, create, first, c, w, w / create, c / create, "yes" if same else "NO"))
PY
done
echo "(ms; ORT create: median of the creations after each process's first; ratios against it)"
