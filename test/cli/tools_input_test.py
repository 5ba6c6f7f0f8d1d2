#!/usr/bin/env python3
"""What a new user meets first, for each tool (hetpass, hetpass-opt, pass-viz): a directory, an
empty file or a missing one where a file is expected, a binary file given to a text reader,
--help, --version, an unknown command. Each must end with a clear message naming the path or
the problem and a non-zero exit (0 for --help and --version), never an abort, a MemoryError or
a silent exit 0 having read nothing.

usage: tools_input_test.py HETPASS HETPASS_OPT PASS_VIZ SOURCE_DIR WORK_DIR
"""
import os
import subprocess
import sys

hetpass, opt, viz, source, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def call(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


# The hostile paths: a directory (named like a model, as users do), an empty file, a missing one.
directory = os.path.join(work, "model.onnx")
os.makedirs(directory, exist_ok=True)
hir_dir = os.path.join(work, "dir.hir")
os.makedirs(hir_dir, exist_ok=True)
empty_onnx = os.path.join(work, "empty.onnx")
empty_hir = os.path.join(work, "empty.hir")
for path in (empty_onnx, empty_hir):
    open(path, "w").close()
missing = os.path.join(work, "missing.onnx")
missing_hir = os.path.join(work, "missing.hir")
shared_model = os.path.join(source, "..", "shared", "models", "mlp_dynamic_batch", "model.onnx")
if not os.path.exists(shared_model):
    failures.append(f"missing test data: {shared_model}")
binary_as_hir = os.path.join(work, "model_bytes.hir")
with open(shared_model, "rb") as f, open(binary_as_hir, "wb") as g:
    g.write(f.read())

out = os.path.join(work, "viz")
cases = [
    # (argv, substring the message must hold)
    ([hetpass, "import", directory], "is a directory, not an ONNX model"),
    ([hetpass, "import", empty_onnx], "is empty (expected an ONNX model"),
    ([hetpass, "import", missing], "missing.onnx': no such file"),
    ([hetpass, "run", directory], "is a directory, not an ONNX model"),
    ([hetpass, "run", empty_onnx], "is empty (expected an ONNX model"),
    ([hetpass, "run", hir_dir], "is a directory, not text IR"),
    ([hetpass, "run", empty_hir], "is empty (expected text IR"),
    ([hetpass, "run", missing_hir], "missing.hir': no such file"),
    ([hetpass, "test-onnx", shared_model], "is not a directory: test-onnx takes a folder"),
    ([opt, hir_dir], "is a directory, not text IR"),
    ([opt, empty_hir], "is empty (expected text IR"),
    ([opt, missing_hir], "missing.hir': no such file"),
    ([opt, directory], "is a directory, not an ONNX model"),
    ([opt, binary_as_hir], "is a binary file, not text IR: hetpass-opt reads text IR (.hir) and ONNX models"),
    ([opt, os.path.join(source, "examples", "dynamic_mlp.hir")],
     "is not accepted here; allow it with --allow-elided-constants"),
    ([viz, hir_dir, "--out", out], "is a directory, not text IR"),
    ([viz, empty_hir, "--out", out], "is empty (expected text IR"),
    ([viz, missing_hir, "--out", out], "missing.hir': no such file"),
    ([viz, directory, "--out", out], "is a directory, not an ONNX model"),
    ([hetpass, "frobnicate", "x"], "hetpass: unknown command 'frobnicate'"),
    ([hetpass], "hetpass: no command given"),
]
for argv, message in cases:
    p = call(argv)
    shown = " ".join(os.path.basename(a) for a in argv)
    check(p.returncode not in (0, -6, 134), f"`{shown}` exited {p.returncode}")
    check(message in p.stderr, f"`{shown}`: wanted '{message}' in stderr, got: {p.stderr.strip()[:400]}")
    check("bad_alloc" not in p.stderr and "terminate called" not in p.stderr,
          f"`{shown}` aborted: {p.stderr.strip()[:400]}")

# --help: exit 0, the tool's own usage and flags, not another tool's.
for tool, own, foreign in [(hetpass, "--random-inputs", "--list-ops"),
                           (opt, "--list-ops", "--random-inputs"),
                           (viz, "--dump-after", "--random-inputs")]:
    p = call([tool, "--help"])
    name = os.path.basename(tool)
    check(p.returncode == 0, f"{name} --help exited {p.returncode}")
    check(own in p.stdout, f"{name} --help does not list {own}: {p.stdout[:300]}")
    check(foreign not in p.stdout, f"{name} --help lists another tool's {foreign}")
    p = call([tool, "--version"])
    check(p.returncode == 0 and p.stdout.startswith(f"{name} ") and "Debug build" not in p.stdout
          and " build)" in p.stdout, f"{name} --version: exit {p.returncode}, {p.stdout.strip()}")

# --copy-ledger is spelled alike in both tools: bare means text, =json works.
mlp = os.path.join(source, "examples", "dynamic_mlp.hir")
inputs = ["--input", "x=4x32x32", "--input", "begin=[0,0]", "--input", "end=[3,126]",
          "--input", "strides=[1,1]"]
p = call([hetpass, "run", mlp, "--random-weights", "--copy-ledger"] + inputs)
check(p.returncode == 0 and "copy ledger of @main" in p.stdout,
      f"hetpass run --copy-ledger: exit {p.returncode}, {p.stderr.strip()[:300]}")
p = call([opt, mlp, "--allow-elided-constants", "--device=sim", "--copy-ledger"])
check(p.returncode == 0 and "copy ledger of @main" in p.stdout,
      f"hetpass-opt --copy-ledger: exit {p.returncode}, {p.stderr.strip()[:300]}")
p = call([opt, mlp, "--allow-elided-constants", "--device=sim", "--copy-ledger=json"])
check(p.returncode == 0 and p.stdout.startswith('{"function": "main"'),
      f"hetpass-opt --copy-ledger=json: exit {p.returncode}, {p.stdout[:100]}")
# hetpass-opt reads ONNX models itself, with the default pipeline of a device.
p = call([opt, shared_model, "--device=sim", "--copy-ledger"])
check(p.returncode == 0 and "h2d: 1 cop" in p.stdout,
      f"hetpass-opt model.onnx --device=sim: exit {p.returncode}, {p.stderr.strip()[:300]}")

if failures:
    print("FAILED:\n" + "\n".join(failures))
    sys.exit(1)
print(f"tools input: all {len(cases)} hostile inputs and the help/version checks passed")
