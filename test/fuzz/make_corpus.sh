#!/usr/bin/env bash
# make_corpus.sh KIND OUT_DIR SHARED_DIR SEED_TOOL
#   Builds a seed corpus for one fuzzer from files already on the machine (nothing binary is
#   committed): KIND `model` for onnx_import_fuzzer, `tensor` for onnx_tensor_fuzzer, `hir` for
#   ir_parse_fuzzer, `exe` for vm_load_fuzzer.
#     model   every /usr/share/libonnx-testdata/data/node/*/model.onnx (Debian libonnx-testdata)
#             and every SHARED_DIR/models/*/model.onnx and test/zoo/models/*/model.onnx, those
#             slimmed by SEED_TOOL
#             (onnx_seed_slim: large initializers become ConstantOfShape, a few KB per model),
#             plus the models of hostile_seeds.py (extreme dims, axes and constants)
#     tensor  the test_data_set_*/{input,output}_*.pb of both, up to 64 KB each, plus the
#             tensors of hostile_seeds.py --tensors
#     hir     the repository's .hir files (examples/, test/), each whole and, where it holds
#             several modules separated by `// -----` lines, each module on its own, plus the
#             modules of hostile_hir_seeds.py (extreme dims, literals, nesting)
#     exe     executables that SEED_TOOL (fuzz_seed_tool exe) compiles from those modules for
#             cpu and sim through the default VM pipeline, up to 64 KB each
#   Also writes OUT_DIR.dict, a libFuzzer dictionary. For ONNX: the op types the importer
#   converts and the attribute names its converters read (both taken from
#   src/frontend/onnx_convert*.cc, so it follows the converter table), plus ONNX field values
#   the importer branches on. For hir and exe (whose primitive functions are text IR): the text
#   IR's keywords, op and attribute names, dtypes and devices (fuzz_seed_tool dict, from the op
#   registry). OUT_DIR is emptied first. Prints one line: how many seeds of each source.
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: make_corpus.sh model|tensor|hir|exe OUT_DIR SHARED_DIR SEED_TOOL" >&2
  exit 2
fi
kind="$1" out="$2" shared="$3" tool="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
node_dir=/usr/share/libonnx-testdata/data/node

rm -rf "$out"
mkdir -p "$out"
n_node=0 n_shared=0 n_hostile=0 n_repo=0 n_zoo=0
case "$kind" in
  model)
    for m in "$node_dir"/*/model.onnx; do
      [ -f "$m" ] || continue
      cp "$m" "$out/node_$(basename "$(dirname "$m")").onnx"
      n_node=$((n_node + 1))
    done
    for m in "$shared"/models/*/model.onnx; do
      [ -f "$m" ] || continue
      name="shared_$(basename "$(dirname "$m")").onnx"
      if ! "$tool" "$m" "$out/$name"; then
        echo "make_corpus: cannot slim $m" >&2
        exit 1
      fi
      n_shared=$((n_shared + 1))
    done
    # The model zoo (test/zoo/models): the exporter's idioms of twelve more architectures.
    for m in "$root"/test/zoo/models/*/model.onnx; do
      [ -f "$m" ] || continue
      if ! "$tool" "$m" "$out/zoo_$(basename "$(dirname "$m")").onnx"; then
        echo "make_corpus: cannot slim $m" >&2
        exit 1
      fi
      n_zoo=$((n_zoo + 1))
    done
    n_hostile=$(python3 "$root/test/fuzz/hostile_seeds.py" "$out")
    ;;
  tensor)
    while IFS= read -r -d '' t; do
      rel="${t#"$node_dir"/}"
      cp "$t" "$out/node_${rel//\//_}"
      n_node=$((n_node + 1))
    done < <(find "$node_dir" -path '*/test_data_set_*/*.pb' -size -64k -print0 | sort -z)
    while IFS= read -r -d '' t; do
      rel="${t#"$shared"/models/}"
      cp "$t" "$out/shared_${rel//\//_}"
      n_shared=$((n_shared + 1))
    done < <(find "$shared/models" -path '*/test_data_set_*/*.pb' -size -64k -print0 2>/dev/null | sort -z)
    n_hostile=$(python3 "$root/test/fuzz/hostile_seeds.py" --tensors "$out")
    ;;
  hir | exe)
    # The repository's text IR: every module of every .hir file (build directories aside).
    mapfile -t hir_files < <(find "$root/examples" "$root/test" -name '*.hir' -type f | sort)
    if [ "${#hir_files[@]}" -eq 0 ]; then
      echo "make_corpus: no .hir files under $root/examples and $root/test" >&2
      exit 1
    fi
    "$tool" dict "$out.dict"
    if [ "$kind" = hir ]; then
      for f in "${hir_files[@]}"; do
        rel="${f#"$root"/}"
        name="${rel//\//_}"
        cp "$f" "$out/$name"
        n_repo=$((n_repo + 1))
        # Each `// -----` module on its own (awk: one file per chunk, only when there are two).
        if grep -qx '[[:space:]]*// -----[[:space:]]*' "$f"; then
          n_repo=$((n_repo + $(awk -v out="$out/${name%.hir}" -v chunk=0 '
            /^[[:space:]]*\/\/ -----[[:space:]]*$/ { ++chunk; next }
            { print > (out "_" chunk ".hir") }
            END { print chunk + 1 }' "$f")))
        fi
      done
      n_hostile=$(python3 "$root/test/fuzz/hostile_hir_seeds.py" "$out")
      echo "seed corpus (hir): $n_repo from ${#hir_files[@]} .hir files, $n_hostile from" \
           "hostile_hir_seeds.py; dictionary of $(grep -c '^"' "$out.dict") words"
    else
      summary=$("$tool" exe "$out" 65536 "${hir_files[@]}")  # fails when none compiles
      echo "seed corpus (exe): $summary; dictionary of $(grep -c '^"' "$out.dict") words"
    fi
    exit 0
    ;;
  *)
    echo "make_corpus: unknown kind '$kind' (model, tensor, hir or exe)" >&2
    exit 2
    ;;
esac
if [ "$n_node" -eq 0 ]; then
  echo "make_corpus: no seeds in $node_dir (is libonnx-testdata installed?)" >&2
  exit 1
fi
if [ "$n_shared" -eq 0 ]; then
  echo "make_corpus: warning: no seeds from $shared/models (shared/ beside the checkout?)" >&2
fi

# The dictionary: quoted strings, one a line (libFuzzer's format).
{
  echo "# generated by test/fuzz/make_corpus.sh from src/frontend/onnx_convert*.cc"
  {
    grep -ohE '\{"[A-Za-z0-9]+",' "$root"/src/frontend/onnx_convert*.cc | tr -d '{",'
    grep -ohE 'Attr[A-Za-z]*\(n, "[A-Za-z_]+"' "$root"/src/frontend/onnx_convert*.cc |
      sed -E 's/.*"(.*)"/\1/'
    printf '%s\n' If Loop Scan Constant then_branch else_branch body value ai.onnx \
      ai.onnx.ml com.microsoft batch N seq_len dim_param
  } | sort -u | sed 's/.*/"&"/'
} > "$out.dict"

echo "seed corpus ($kind): $n_node from libonnx-testdata, $n_shared from $shared/models," \
     "$n_zoo from test/zoo/models, $n_hostile from hostile_seeds.py; dictionary of" \
     "$(grep -c '^"' "$out.dict") words"
