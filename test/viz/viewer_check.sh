#!/usr/bin/env bash
# The viewer on a real model: pass-viz draws every stage of maskrcnn_tiny (shared/models) for
# the accelerator, and headless Chromium opens index.html from disk. Checks, from the page's own
# report (<body data-*> after load, tools/viz/viewer/README.md):
#   - the viewer reports no error, and every stage's pictures are present in the page;
#   - the page opens on a copy view, and at plan-devices and at manifest-alloc the copy view
#     lists exactly as many copies as the copy ledger (hetpass-opt --copy-ledger=json on the
#     same pipeline, an independent count);
#   - the hops filter (hops=0) collapses the copy view's chains: fewer nodes shown, none lost;
#   - the search finds the ONNX node /roi_heads/Reshape and centres it;
#   - no console error; a screenshot of the copy view is kept for a look by eye.
# Exits 77 (ctest SKIP_RETURN_CODE) only when no Chromium is installed; a missing model fails.
#   viewer_check.sh PASS_VIZ HETPASS HETPASS_OPT SHARED_DIR WORK_DIR
set -u
pass_viz="$1"; hetpass="$2"; opt="$3"; shared="$4"; work="$5"
model="$shared/models/maskrcnn_tiny/model.onnx"
if [ ! -f "$model" ]; then
  echo "FAIL: $model is missing (shared/models must sit beside the checkout)"; exit 1
fi
browser=""
for candidate in chromium chromium-browser google-chrome; do
  if command -v "$candidate" >/dev/null 2>&1; then browser="$(command -v "$candidate")"; break; fi
done
if [ -z "$browser" ]; then
  echo "SKIP: no chromium found (bash tools/dev/run.sh test installs it)"; exit 77
fi

rm -rf "$work"; mkdir -p "$work"
site="$work/site"
placed='infer-types,fold-constants,cse,dce,plan-devices{target=sim}'
pipeline="$placed,fuse-ops,manifest-alloc"
if ! "$pass_viz" "$model" --passes="$pipeline" --out "$site" --stats 2>"$work/pass_viz.err"; then
  echo "FAIL: pass-viz failed:"; tail -5 "$work/pass_viz.err"; exit 1
fi
stages=$(grep -c "full graph:" "$work/pass_viz.err")
if [ "$stages" -ne 8 ]; then
  echo "FAIL: expected 8 stages (input + 7 passes), pass-viz drew $stages"; exit 1
fi

# The ledger's entry count after a pipeline, from hetpass-opt on the imported text IR.
"$hetpass" import "$model" -o "$work/model.hir" || { echo "FAIL: hetpass import"; exit 1; }
ledger_entries() {
  "$opt" "$work/model.hir" --passes="$1" --copy-ledger=json |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)["entries"]))'
}
placed_copies=$(ledger_entries "$placed") || { echo "FAIL: ledger after plan-devices"; exit 1; }
final_copies=$(ledger_entries "$pipeline") || { echo "FAIL: ledger after manifest-alloc"; exit 1; }

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --no-first-run --disable-sync --user-data-dir="$profile"
       --enable-logging=stderr --v=0 --virtual-time-budget=15000)
page="file://$(cd "$site" && pwd)/index.html"
failed=0
# body QUERY NAME: loads the page with ?QUERY, keeps the <body> tag in $work/NAME.body
body() {
  "$browser" "${flags[@]}" --dump-dom "$page$1" >"$work/$2.html" 2>"$work/$2.err"
  grep -o '<body[^>]*>' "$work/$2.html" | head -1 >"$work/$2.body"
  if grep -E 'CONSOLE|Uncaught' "$work/$2.err" | grep -qiE 'error|uncaught'; then
    echo "FAIL ($2): console errors:"; grep -E 'CONSOLE|Uncaught' "$work/$2.err"; failed=1
  fi
}
attr() { grep -o "data-$2=\"[^\"]*\"" "$work/$1.body" | head -1 | cut -d'"' -f2; }
expect() {  # expect NAME ATTR VALUE
  local got; got=$(attr "$1" "$2")
  if [ "$got" != "$3" ]; then echo "FAIL ($1): data-$2 is '$got', expected '$3'"; failed=1; fi
}

body "" default
expect default viewer-status ok
expect default stages 8
present=$(attr default pictures-present); wanted=$(attr default pictures-expected)
templates=$(grep -c '<template id="hp-svg-' "$site/index.html")
if [ -z "$present" ] || [ "$present" != "$wanted" ] || [ "$present" != "$templates" ] ||
   [ "$present" -lt 8 ]; then
  echo "FAIL: pictures present $present, expected $wanted, templates $templates"; failed=1
fi
expect default current-view copies

# Stage 5 is plan-devices, stage 7 manifest-alloc.
body "?stage=5" placed
expect placed current-view copies
expect placed copy-rows "$placed_copies"
body "?stage=7" final
expect final current-view copies
expect final copy-rows "$final_copies"

# The hops filter collapses the copy view's chains to the copies themselves.
body "?stage=5&hops=0" hops
expect hops viewer-status ok
expect hops hops 0
visible=$(attr hops visible-nodes); all=$(attr hops view-nodes)
if [ -z "$visible" ] || [ -z "$all" ] || [ "$visible" -le 0 ] || [ "$visible" -ge "$all" ]; then
  echo "FAIL: hops=0 shows $visible of $all nodes"; failed=1
fi

body "?stage=7&search=/roi_heads/Reshape" search
found=$(attr search search-found); location=$(attr search search-location)
if [ -z "$found" ] || [[ "$location" != *"/roi_heads/Reshape"* ]]; then
  echo "FAIL: search for /roi_heads/Reshape found '$found' at '$location'"; failed=1
fi

"$browser" "${flags[@]}" --window-size=1500,1000 --screenshot="$work/copy_view.png" "$page?stage=5&copy=6" \
  >/dev/null 2>"$work/shot.err"
size=$(stat -c %s "$work/copy_view.png" 2>/dev/null || echo 0)
if [ "$size" -lt 20000 ]; then echo "FAIL: screenshot missing or trivial ($size bytes)"; failed=1; fi
[ "$failed" -eq 0 ] || exit 1
echo "viewer check passed: $present pictures, copy rows $placed_copies / $final_copies as the" \
     "ledger, /roi_heads/Reshape -> $found; screenshot $work/copy_view.png"
