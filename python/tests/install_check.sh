#!/bin/sh
# python.install: `cmake --install` of the python component into a scratch prefix; the package
# must import from there with the build tree off the path, and run a module end to end.
set -eu
build="$1" site="$2" python="$3"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" --component python >/dev/null
test -f "$prefix/$site/hetpass/__init__.py"
test -f "$prefix/$site/hetpass/_hetpass.pyi"
test -f "$prefix/$site/hetpass/py.typed"
cd "$prefix"
PYTHONPATH="$prefix/$site" "$python" - "$prefix/$site" <<'PY'
import sys, numpy as np
import hetpass
assert hetpass.__file__.startswith(sys.argv[1]), hetpass.__file__
m = hetpass.parse("def @main(%x: f32[n, 4]) {\n  %y = add(%x, %x)\n  return %y\n}\n")
exe = hetpass.compile(m, device="cpu")
y = exe(np.ones((3, 4), np.float32))
assert (y == 2).all() and y.shape == (3, 4)
print("installed hetpass imports from", hetpass.__file__)
PY
