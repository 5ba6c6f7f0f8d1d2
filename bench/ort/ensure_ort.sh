# Sourced by the ORT benches (compare.sh, ../compile_time.sh) with $build set: installs
# onnxruntime-node from npm into $build/ort when missing (--ignore-scripts: its install script
# downloads GPU binaries; the CPU binding ships in the package) and exports ORT_NODE_MODULE,
# which bench/ort/ort_bench.mjs loads.
ort_dir="$build/ort"
if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
  echo "== installing onnxruntime-node into $ort_dir (npm, --ignore-scripts)" >&2
  mkdir -p "$ort_dir"
  npm install --silent --ignore-scripts --no-audit --no-fund --prefix "$ort_dir" onnxruntime-node >&2
fi
ort_abs=$(cd "$ort_dir" && pwd)   # BUILD_DIR may be relative or absolute
export ORT_NODE_MODULE="$ort_abs/node_modules/onnxruntime-node"
