#!/usr/bin/env bash
# Runs the GEMM-library MLP benchmarks (gemm_lib_<name>: four libraries and our own kernels) in one go, pinned to one core, and
# prints a table: per library, the best variant's median forward time per batch size and its
# ratio to ONNX Runtime's CPU provider on the same MLP (63 / 253 / 963 us at M = 1 / 16 / 64, one
# thread; ratio < 1 means faster than ORT). PyTorch on OpenBLAS (49 / 655 / 1294 us) is shown
# for reference.
#
# usage: compare.sh [BUILD_DIR] [extra args for every binary, e.g. --seconds=2]
#   BUILD_DIR defaults to ./build; CPU=<n> pins to another core (default 1).
#
# Library configurations run:
#   openblas            the environment as is (this VM exports OPENBLAS_CORETYPE=Haswell)
#   openblas[auto]      OPENBLAS_CORETYPE unset: OpenBLAS's own CPU detection
#   blis[zen3]          BLIS_ARCH_TYPE=6: BLIS 0.9.0 does not know CPU family 0x1A (Zen 5) and
#                       falls back to the generic C kernels (about 10x slower); 6 = zen3
#   onednn, libxsmm     as detected (oneDNN: avx512_core_bf16; LIBXSMM: cpx)
#   own                 our own AVX-512 small-M micro-kernels (gemm_own.cc), no library
# Every binary checks its outputs against a double-precision reference; the script exits 1 if
# any check failed.
set -euo pipefail

build_dir=${1:-build}
shift || true
bin=$build_dir/bench/gemm_libs
cpu=${CPU:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

extra_args=("$@")
run_cfg() {  # label binary [VAR=value | -u VAR]...
  local label=$1 binary=$2
  shift 2
  echo "running $label ..." >&2
  env "$@" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 \
    taskset -c "$cpu" "$bin/$binary" "${extra_args[@]}" |
    sed "s/^RESULT /RESULT label=$label /" >>"$out"
}

date -u +"run at %Y-%m-%dT%H:%M:%SZ on cpu $cpu ($(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg))"
run_cfg openblas gemm_lib_openblas
run_cfg "openblas[auto]" gemm_lib_openblas -u OPENBLAS_CORETYPE
run_cfg "blis[zen3]" gemm_lib_blis BLIS_ARCH_TYPE=6
run_cfg onednn gemm_lib_onednn
run_cfg libxsmm gemm_lib_libxsmm
run_cfg own gemm_lib_own

awk '
  function kv(line, key,   re, s) {
    re = " " key "=[^ ]*"
    if (match(line, re)) { s = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2); return s }
    return ""
  }
  /^RESULT / {
    label = kv($0, "label"); variant = kv($0, "variant"); m = kv($0, "M") + 0
    us = kv($0, "median_us") + 0; check = kv($0, "check")
    extra = kv($0, "core") kv($0, "arch") kv($0, "target") kv($0, "isa")
    if (!(label in seen)) { seen[label] = 1; order[++n] = label; info[label] = extra }
    all[++na] = sprintf("| %-16s | %-9s | %2d | %8.1f | %5.2f | %s |", label, variant, m, us, us / ort[m], check)
    if (check != "ok") failed = 1
    k = label SUBSEP m
    if (!(k in best) || us < best[k]) { best[k] = us; bestv[k] = variant }
  }
  BEGIN { ort[1] = 63; ort[16] = 253; ort[64] = 963; pt[1] = 49; pt[16] = 655; pt[64] = 1294 }
  END {
    printf "\nBest variant per library and batch size: median us (ratio to ORT 63/253/963; <1 = faster)\n\n"
    printf "| %-16s | %-26s | %-26s | %-26s |\n", "library", "M=1", "M=16", "M=64"
    printf "|%s|%s|%s|%s|\n", "------------------", "----------------------------", "----------------------------", "----------------------------"
    for (i = 1; i <= n; ++i) {
      l = order[i]; printf "| %-16s |", l
      for (j = 1; j <= 3; ++j) {
        m = (j == 1 ? 1 : j == 2 ? 16 : 64); k = l SUBSEP m
        printf " %-26s |", sprintf("%7.1f (%.2fx) %s", best[k], best[k] / ort[m], bestv[k])
      }
      printf "\n"
    }
    printf "| %-16s | %-26s | %-26s | %-26s |\n", "ORT CPU (given)", "63.0 (1.00x)", "253.0 (1.00x)", "963.0 (1.00x)"
    printf "| %-16s | %-26s | %-26s | %-26s |\n", "PyTorch+OpenBLAS", "49.0 (0.78x)", "655.0 (2.59x)", "1294.0 (1.34x)"
    printf "\nAll variants\n\n| %-16s | %-9s | %2s | %8s | %5s | %s |\n", "library", "variant", "M", "med us", "xORT", "check"
    for (i = 1; i <= na; ++i) print all[i]
    printf "\ndetected: "
    for (i = 1; i <= n; ++i) printf "%s %s; ", order[i], info[order[i]]
    printf "\n"
    exit failed
  }' "$out"
