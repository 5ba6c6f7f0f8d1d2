#!/usr/bin/env bash
# Browser check of index.html: headless Chromium loads the page pass-viz wrote, takes a
# screenshot and dumps the DOM after load. Passes when Chromium exits 0, the screenshot is a
# real PNG of some size, the page script reports every picture loaded (data-status="ok") and
# the console shows no error. Exits 77 (ctest SKIP_RETURN_CODE) only when no Chromium is found.
#   browser_check.sh PASS_VIZ TEST_DIR WORK_DIR
set -u
pass_viz="$1"; tests="$2"; work="$3"

browser=""
for candidate in chromium chromium-browser google-chrome; do
  if command -v "$candidate" >/dev/null 2>&1; then browser="$(command -v "$candidate")"; break; fi
done
if [ -z "$browser" ]; then
  echo "SKIP: no chromium found (bash tools/dev/run.sh test installs it)"
  exit 77
fi

rm -rf "$work"; mkdir -p "$work"
out="$work/site"
if ! "$pass_viz" "$tests/hetero.hir" --passes=infer-types,cse,dce --out "$out" \
     --format=svg,png 2>"$work/pass_viz.err"; then
  echo "FAIL: pass-viz failed: $(cat "$work/pass_viz.err")"; exit 1
fi
page="file://$(cd "$out" && pwd)/index.html"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --no-first-run --disable-sync --user-data-dir="$profile"
       --enable-logging=stderr --v=0 --virtual-time-budget=5000)

shot="$work/index.png"
"$browser" "${flags[@]}" --window-size=1400,1000 --screenshot="$shot" "$page" \
  >"$work/shot.out" 2>"$work/shot.err"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: chromium --screenshot exited $rc"; cat "$work/shot.err"; exit 1
fi
size=$(stat -c %s "$shot" 2>/dev/null || echo 0)
if [ "$size" -lt 20000 ] || [ "$(head -c 4 "$shot" | tail -c 3)" != "PNG" ]; then
  echo "FAIL: screenshot $shot missing or trivial ($size bytes)"; exit 1
fi

"$browser" "${flags[@]}" --dump-dom "$page" >"$work/dom.html" 2>"$work/dom.err"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: chromium --dump-dom exited $rc"; cat "$work/dom.err"; exit 1
fi
if ! grep -q 'data-status="ok"' "$work/dom.html"; then
  echo "FAIL: the page reports a problem:"; grep -o '<title>[^<]*</title>' "$work/dom.html"
  grep -o 'data-status="[^"]*"' "$work/dom.html"; exit 1
fi
pictures=$(grep -o 'data-pictures="[0-9]*"' "$work/dom.html" | grep -o '[0-9]*')
if [ "${pictures:-0}" -ne 4 ]; then
  echo "FAIL: expected 4 pictures on the page, the page saw ${pictures:-none}"; exit 1
fi
# Console messages land in the log as CONSOLE lines; any error or uncaught exception fails.
if grep -E 'CONSOLE|Uncaught' "$work/shot.err" "$work/dom.err" | grep -qiE 'error|uncaught'; then
  echo "FAIL: console errors:"; grep -E 'CONSOLE|Uncaught' "$work/shot.err" "$work/dom.err"
  exit 1
fi
echo "browser check passed: $shot ($size bytes), $pictures pictures loaded"
