#!/usr/bin/env bash
# run_fuzzer.sh: the ctest commands of test/fuzz (registered in test/fuzz/CMakeLists.txt).
#
#   run_fuzzer.sh replay FUZZER REGRESSIONS_DIR EXT
#       Runs FUZZER once on every REGRESSIONS_DIR/*.EXT (the saved findings of one fuzzer,
#       test/fuzz/regressions/<target>/, see the README there); fails on the first that still
#       crashes, and on a file the replay would skip (another extension there, or a file lying
#       directly in regressions/ instead of a fuzzer's folder). Passes when there is none.
#   run_fuzzer.sh fuzz FUZZER WORK_DIR SECONDS SHARED_DIR SEED_TOOL KIND
#       Regenerates the seed corpus (make_corpus.sh KIND, with SEED_TOOL) in WORK_DIR/seeds,
#       then fuzzes for SECONDS; inputs that add coverage go to WORK_DIR/corpus (kept between
#       local runs). On a finding, prints the sanitizer report, the reproducer's path and how to
#       replay and keep it, and fails. The full libFuzzer log is WORK_DIR/fuzz.log, the figures
#       of the last run (runs, exec/s, cov, ft, corpus) WORK_DIR/summary.txt.
#
# Limits, the same for both modes and every fuzzer (a replay must see what the fuzzing saw):
#   -rss_limit_mb=2048      the process; above it libFuzzer reports an out-of-memory finding
#   -malloc_limit_mb=512    one allocation: inputs are at most a few hundred KB, the importer
#                           folds at most 2^16 elements, the IR fuzzer caps elided constants at
#                           1 MB and executables hold their constants' bytes, so a larger malloc
#                           means a hostile size became memory instead of an error
#   -timeout=20             seconds per input (ASan: a slow input is a hang, not a big model)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
limits=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=20)
symbolizer=/usr/lib/llvm-16/bin/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

mode="${1:-}"
case "$mode" in
  replay)
    [ $# -eq 4 ] || { echo "usage: run_fuzzer.sh replay FUZZER DIR EXT" >&2; exit 2; }
    fuzzer="$2" dir="$3" ext="$4"
    shopt -s nullglob
    # Every file must be replayed by some fuzzer: a misplaced or misnamed reproducer never runs.
    for f in "$dir"/*; do
      case "$f" in
        *."$ext") ;;
        *)
          echo "error: $f: the saved findings in $(basename "$dir")/ are *.$ext files" >&2
          exit 1
          ;;
      esac
    done
    for f in "$(dirname "$dir")"/*; do
      if [ -f "$f" ] && [ "$(basename "$f")" != README.md ]; then
        echo "error: $f: keep a saved finding in its fuzzer's folder, regressions/<target>/" >&2
        exit 1
      fi
    done
    files=("$dir"/*."$ext")
    if ((${#files[@]} == 0)); then
      echo "no saved findings ($dir/*.$ext): nothing to replay"
      exit 0
    fi
    echo "replaying ${#files[@]} saved finding(s) with $(basename "$fuzzer")"
    status=0
    for f in "${files[@]}"; do
      if "$fuzzer" "${limits[@]}" "$f" >"${TMPDIR:-/tmp}/replay.$$.log" 2>&1; then
        echo "  ok    $(basename "$f")"
      else
        status=1
        echo "  CRASH $f"
        grep -v -e '^INFO:' -e '^\*\*\*' -e '^Running:' "${TMPDIR:-/tmp}/replay.$$.log" |
          sed 's/ (BuildId: [0-9a-f]*)//' | head -n 60
        echo "  replay: $fuzzer $f"
      fi
    done
    rm -f "${TMPDIR:-/tmp}/replay.$$.log"
    exit "$status"
    ;;
  fuzz)
    [ $# -eq 7 ] || {
      echo "usage: run_fuzzer.sh fuzz FUZZER WORK_DIR SECONDS SHARED_DIR SEED_TOOL KIND" >&2
      exit 2
    }
    fuzzer="$2" work="$3" seconds="$4" shared="$5" tool="$6" kind="$7"
    mkdir -p "$work/corpus" "$work/artifacts"
    rm -f "$work"/artifacts/*
    bash "$here/make_corpus.sh" "$kind" "$work/seeds" "$shared" "$tool"
    echo "fuzzing $(basename "$fuzzer") for ${seconds}s (log: $work/fuzz.log)"
    status=0
    "$fuzzer" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
      -dict="$work/seeds.dict" -artifact_prefix="$work/artifacts/" \
      "$work/corpus" "$work/seeds" >"$work/fuzz.log" 2>&1 || status=$?
    # The last progress line (#runs, cov, ft, corp, exec/s) and the final stats.
    # (None when the seeds already crash.)
    {
      grep -E '^#[0-9]+' "$work/fuzz.log" | tail -n 1 || true
      grep -E '^stat::' "$work/fuzz.log" || true
    } | tee "$work/summary.txt"
    shopt -s nullglob
    found=("$work"/artifacts/*)
    if ((status != 0 || ${#found[@]} > 0)); then
      echo
      echo "================ FUZZER FINDING (libFuzzer exit status $status) ================"
      # The report: from the sanitizer's or libFuzzer's first ERROR line on.
      sed -n '/==ERROR\|^==[0-9]*==ERROR\|runtime error\|internal error\|_fuzzer: \|ERROR: libFuzzer/,$p' \
        "$work/fuzz.log" | sed 's/ (BuildId: [0-9a-f]*)//' | head -n 120
      for f in "${found[@]}"; do
        echo "reproducer: $f"
      done
      echo "replay it:  $fuzzer $(printf '%s ' "${limits[@]}")${found[0]:-REPRODUCER}"
      echo "keep it:    cp REPRODUCER $here/regressions/$(basename "$work")/<what-it-does>.$(
        case "$kind" in model) echo onnx ;; tensor) echo pb ;; hir) echo hir ;; exe) echo hvm ;; esac)"
      echo "================================================================================="
      exit 1
    fi
    echo "no finding in ${seconds}s"
    ;;
  *)
    echo "usage: run_fuzzer.sh replay|fuzz ..." >&2
    exit 2
    ;;
esac
