#!/usr/bin/env bash
# Layout and render seconds of every pass-viz picture, per stage, for every model in
# shared/models and a generated 10k-binding module (docs/pass_viz.md, "Measured times").
#
#   bench/viz/stage_times.sh BUILD_DIR [SHARED_DIR] [OUT_DIR]
#
# Each model runs the pipeline of the accelerator demo with a stage after every pass; one line
# per picture: model, stage, view, graph nodes, engine, build / layout / render seconds, and the
# total per stage. pass-viz is single-threaded; run on an otherwise idle core for figures worth
# quoting (wall time). The per-picture budget stays at its default (5 s): a line marked
# "[... did not finish ...]" is a fallback, which is what a user would see.
set -euo pipefail
build=$(cd "${1:?usage: stage_times.sh BUILD_DIR [SHARED_DIR] [OUT_DIR]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
shared=${2:-$here/../../../shared}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
pass_viz=$build/tools/viz/pass-viz
pipeline='infer-types,fold-constants,cse,dce,plan-devices{target=sim},fuse-ops,manifest-alloc'
[ -x "$pass_viz" ] || { echo "stage_times: $pass_viz is missing (build pass-viz)" >&2; exit 1; }
[ -d "$shared/models" ] || { echo "stage_times: $shared/models is missing" >&2; exit 1; }

inputs=()
for m in "$shared"/models/*/; do
  [ -f "$m/model.onnx" ] && inputs+=("$(basename "$m")=$m/model.onnx")
done
# A generated module of 10k bindings (pass-viz-scale's chain: dense, fused groups, shape
# subgraphs and host round trips), already typed and placed.
"$build/tools/viz/pass-viz-scale" 10000 --write-hir="$out/gen10k.hir" >/dev/null
inputs+=("generated_10k=$out/gen10k.hir")

printf '%-28s %-5s %-10s %7s %-6s %7s %7s %7s %s\n' model stage view nodes engine build \
  layout render note
for entry in "${inputs[@]}"; do
  name=${entry%%=*}
  file=${entry#*=}
  passes=$pipeline
  [[ $file == *.hir ]] && passes='infer-types'
  log="$out/$name.log"
  start=$(date +%s%N)
  if ! "$pass_viz" "$file" --passes="$passes" --out "$out/$name" --stats 2>"$log"; then
    echo "stage_times: pass-viz failed on $name:" >&2
    tail -3 "$log" >&2
    exit 1
  fi
  end=$(date +%s%N)
  # pass-viz: <title>: <view>: N IR bindings, G graph nodes, ...; build B s, layout (E) L s,
  # render R s [note]
  python3 - "$name" "$log" <<'PY'
import re, sys
name, log = sys.argv[1], sys.argv[2]
pat = re.compile(r"pass-viz: stage (\d+):.*?: (copy view|full graph): \d+ IR bindings, (\d+) graph "
                 r"nodes.*build ([\d.]+) s, layout \((\w+)\) ([\d.]+) s, render ([\d.]+) s(.*)")
for line in open(log):
    m = pat.search(line)
    if m:
        stage, view, nodes, build, engine, layout, render, note = m.groups()
        print(f"{name:28s} {stage:5s} {view:10s} {nodes:>7s} {engine:6s} {float(build):7.2f} "
              f"{float(layout):7.2f} {float(render):7.2f} {note.strip()}")
PY
  ms=$(( (end - start) / 1000000 ))
  printf '%-28s whole run (import, passes, every picture, index.html): %d.%03d s\n' "$name" \
    $((ms / 1000)) $((ms % 1000))
done
echo "pictures and logs: $out"
