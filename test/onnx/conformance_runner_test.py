#!/usr/bin/env python3
"""Tests of conformance.py itself: that it cannot hide a regression.

A fake `hetpass` (this script, called with test-onnx) answers by test name: exit 0 (pass),
3 (unsupported by the importer), 4 (a later stage failed), 1 (wrong output). The runner must
count only 3 as unsupported, fail on 4, fail when a pinned run stops passing or an unpinned
run starts passing, and rewrite the list with --update.

usage: conformance_runner_test.py WORK_DIR
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXIT = {"test_ok": 0, "test_unsupported": 3, "test_stage": 4, "test_wrong": 1}


def fake_hetpass(argv):
    name = os.path.basename(argv[1].rstrip("/"))
    code = EXIT[name]
    if code:
        sys.stderr.write(f"hetpass test-onnx: {name} says {code}\n")
    sys.exit(code)


def run(work, expected, *args):
    fake = os.path.join(work, "hetpass")
    p = subprocess.run([sys.executable, os.path.join(HERE, "conformance.py"), fake,
                        os.path.join(work, "data"), "--devices=cpu", "--jobs=1",
                        f"--expected={expected}", *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "test-onnx":
        fake_hetpass(sys.argv[1:])
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    fake = os.path.join(work, "hetpass")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} {os.path.abspath(__file__)} \"$@\"\n")
    os.chmod(fake, 0o755)
    for name in EXIT:
        os.makedirs(os.path.join(work, "data", name), exist_ok=True)
        open(os.path.join(work, "data", name, "model.onnx"), "wb").close()
    pins = os.path.join(work, "expected.txt")
    failures = []

    def check(what, cond, out):
        if not cond:
            failures.append(f"{what}\n{out}")

    def pin(*lines):
        with open(pins, "w") as f:
            f.writelines(f"{l}\n" for l in lines)

    pin("test_ok cpu")
    code, out = run(work, pins, "--filter=test_ok")
    check("a pinned passing run passes", code == 0, out)
    code, out = run(work, pins, "--filter=test_unsupported")
    check("exit 3 is unsupported, not a failure", code == 0 and "1 runs unsupported" in out, out)
    code, out = run(work, pins, "--filter=test_stage")
    check("exit 4 (a later stage) is a failure", code == 1 and "FAIL test_stage [cpu]" in out, out)
    code, out = run(work, pins, "--filter=test_wrong")
    check("a wrong output is a failure", code == 1 and "FAIL test_wrong [cpu]" in out, out)
    pin()
    code, out = run(work, pins, "--filter=test_ok")
    check("an unpinned pass asks for --update", code == 1 and "not pinned" in out, out)
    pin("test_ok cpu", "test_unsupported cpu")
    code, out = run(work, pins, "--filter=test_unsupported")
    check("a pinned run that stops passing fails", code == 1 and "pinned as passing, now unsupported" in out, out)
    os.remove(pins)
    code, out = run(work, pins, "--filter=test_ok")
    check("a missing pinned list fails", code == 1 and "is missing" in out, out)
    pin("test_stage cpu", "other_test cpu")
    code, out = run(work, pins, "--update")
    with open(pins) as f:
        written = [l.strip() for l in f if not l.startswith("#")]
    check("--update pins exactly the passing runs, keeping other tests' pins",
          written == ["other_test cpu", "test_ok cpu"], out + repr(written))
    for f in failures:
        print("FAIL " + f)
    print(f"{8 - len(failures)}/8 runner checks pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
