#!/usr/bin/env bash
# End-to-end tests of the pass-viz CLI: a full run writes one picture per stage and index.html;
# every user error exits 1 (2 for usage) with an `error:` message and never crashes.
#   cli_test.sh PASS_VIZ EXAMPLES_DIR TEST_DIR WORK_DIR
set -u
pass_viz="$1"; examples="$2"; tests="$3"; work="$4"
rm -rf "$work"; mkdir -p "$work"
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect_exit CODE PATTERN -- ARGS...: runs pass-viz, checks the exit code and stderr.
expect_exit() {
  local code="$1" pattern="$2"; shift 3
  "$pass_viz" "$@" >"$work/out.txt" 2>"$work/err.txt"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then
    fail "pass-viz $*: exit $rc, expected $code; stderr: $(cat "$work/err.txt")"
  elif ! grep -q -- "$pattern" "$work/err.txt"; then
    fail "pass-viz $*: stderr lacks '$pattern': $(cat "$work/err.txt")"
  fi
}

# Tests that a full run writes every stage in every format, and index.html.
out="$work/mlp"
expect_exit 0 "wrote 5 stage(s)" -- "$tests/mlp.hir" \
  --passes=infer-types,fold-constants,cse,dce --out "$out" --format=svg,png,dot --stats
for f in index.html stage_00_input.svg stage_00_input.png stage_00_input.dot \
         stage_01_infer-types.svg stage_02_fold-constants.svg stage_03_cse.png stage_04_dce.dot; do
  [ -s "$out/$f" ] || fail "missing or empty $out/$f"
done
grep -q "layout (dot)" "$work/err.txt" || fail "--stats printed no timing"
grep -q "stage 4: after dce" "$out/index.html" || fail "index.html lacks stage 4"

# Tests that the project's example draws (whatever it holds today).
expect_exit 0 "wrote 2 stage(s)" -- "$examples/dynamic_mlp.hir" --passes=infer-types \
  --out "$work/example"

# Tests --dump-after with dashes, and `--out DIR` as two arguments.
out="$work/selected"
expect_exit 0 "wrote 2 stage(s)" -- "$tests/hetero.hir" --passes=infer-types,cse,dce \
  --dump-after=cse --out "$out"
[ -s "$out/stage_01_cse.svg" ] || fail "--dump-after=cse did not write stage_01_cse.svg"
[ -e "$out/stage_02_dce.svg" ] && fail "--dump-after=cse also dumped dce"

# Tests that without --passes the default pipeline of `hetpass run --device=sim` is drawn,
# here from stdin: the input, then a stage per pass (manifest-alloc among them).
out="$work/stdin"
"$pass_viz" - --out "$out" <"$tests/copies.hir" 2>"$work/err.txt" \
  || fail "stdin run failed: $(cat "$work/err.txt")"
[ -s "$out/stage_00_input.svg" ] || fail "stdin run wrote no picture"
ls "$out"/stage_*_manifest-alloc.svg >/dev/null 2>&1 || fail "no default pipeline without --passes"

# Tests the copy view files of a stage with copies, and that a picture whose layout runs past
# --picture-seconds is stopped, says so, and the run still succeeds with the other views.
out="$work/copies"
expect_exit 0 "wrote 1 stage(s)" -- "$tests/copies.hir" --passes=none --out "$out" --stats
[ -s "$out/stage_00_input.copies.svg" ] || fail "no copy view for a module with copies"
grep -q "copy view:" "$work/err.txt" || fail "--stats printed no copy view line"
grep -q 'id="hp-svg-0-copies"' "$out/index.html" || fail "index.html lacks the copy view"
expect_exit 0 "wrote 1 stage(s)" -- "$tests/copies.hir" --passes=none --out "$work/budget" --stats \
  --picture-seconds=0.000001
grep -q "did not finish within" "$work/err.txt" || fail "--picture-seconds was not enforced"
grep -q "did not finish within" "$work/budget/index.html" || fail "index.html lacks the budget note"

# Tests that each user error is reported cleanly.
expect_exit 1 "--copy-hops must be 0 or more" -- "$tests/hetero.hir" --copy-hops=-1 \
  --out "$work/bad7"
expect_exit 1 "bad pipeline" -- "$tests/hetero.hir" --passes=infer-types,no-such-pass \
  --out "$work/bad1"
expect_exit 1 "missing.hir': no such file" -- "$work/missing.hir" --passes=infer-types --out "$work/bad2"
touch "$work/a_file"
expect_exit 1 "cannot create output directory" -- "$tests/hetero.hir" --out "$work/a_file/sub"
expect_exit 1 "not in the pipeline" -- "$tests/hetero.hir" --passes=infer-types \
  --dump-after=dce --out "$work/bad3"
expect_exit 1 "unknown picture format" -- "$tests/hetero.hir" --format=gif --out "$work/bad4"
printf 'def @main(%%x: f32[n]) {\n  %%y = no.such.op(%%x)\n  return %%y\n}\n' >"$work/bad.hir"
expect_exit 1 "bad.hir:2:" -- "$work/bad.hir" --out "$work/bad5"
expect_exit 2 "--out DIR is required" -- "$tests/hetero.hir"
expect_exit 2 "expected exactly one input" -- --out "$work/bad6"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "pass-viz CLI: all checks passed"
