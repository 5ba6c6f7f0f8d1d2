#!/usr/bin/python3
"""Profiles which functions the tools execute, for the hot-code link order (cmake/hot_code.cmake).

Why: a process's resident memory counts every page of its executable it touches, and the kernel
maps 16 pages (64 KiB) around each page fault in a file mapping. hetpass links LLVM statically;
the functions one run executes (about 8 MB, mostly LLVM's code generator) are scattered over
its 32 MB of .text, so a one-Relu process had 28 MB of hetpass's code resident. Linked with lld
in the order this script writes, the executed functions sit together at the start of .text.

What it does: runs the built `hetpass` (and `hetpass-opt`) under valgrind's callgrind on a set
of scenarios that cover the paths users take (process start, ONNX import small and large, the
passes, cold and warm kernel caches, the JIT, oneDNN kernels, the sim device, the reference
interpreter), collects the functions each scenario executed in the tool's own binary (mangled
names), and writes them in this order: the functions every scenario ran first, then those fewer
scenarios ran, by count, names sorted within a count (deterministic for the same profiles).
The list is stored compressed (tools/link/hot_functions.tar.xz, about 150 KB for 15k names);
CMake extracts it into the build directory.

When to run it again: after changes that rename or add many functions on the common paths (a
new kernel library, an LLVM upgrade, a large refactor). A stale list links fine (lld ignores
names it does not find) and only keeps less code together; `ctest -R hot_code` reports the
share of listed names the binary still has, and bench/import's RSS figures show the effect.

usage: /usr/bin/python3 tools/link/profile_hot_code.py [--build build] [--shared ../shared]
           [--bench-models /tmp/hetpass_import_bench] [--out tools/link/hot_functions.tar.xz]
Needs: valgrind (Debian package; development only, not a build dependency). bench/import's
exports (resnet50.onnx, bert6.onnx and their .npy inputs) are profiled when --bench-models has
them (run bench/import/import_bench.py once to export them); without them the script says so
and profiles the rest.
"""
import argparse
import collections
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RELU = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"


def scenarios(args):
    """(name, tool, argv, kernel cache: 'cold' | 'warm') for every path worth keeping hot."""
    hetpass = os.path.join(args.build, "hetpass")
    opt = os.path.join(args.build, "hetpass-opt")
    models = os.path.join(args.shared, "models")
    out = [
        ("version", hetpass, ["--version"], "cold"),
        ("relu-cold", hetpass, ["run", RELU, "--device=cpu", "--random-inputs", "--json"], "cold"),
        ("relu-warm", hetpass, ["run", RELU, "--device=cpu", "--random-inputs", "--json"], "warm"),
        ("resnet-tiny-cpu", hetpass,
         ["test-onnx", os.path.join(models, "resnet_tiny_dynamic_batch"), "--device=cpu"], "cold"),
        ("transformer-cpu", hetpass,
         ["test-onnx", os.path.join(models, "transformer_encoder_dynamic"), "--device=cpu"], "cold"),
        ("maskrcnn-sim", hetpass, ["test-onnx", os.path.join(models, "maskrcnn_tiny"), "--device=sim"],
         "cold"),
        ("maskrcnn-opt", opt, [os.path.join(models, "maskrcnn_tiny", "model.onnx"), "--device=sim",
                               "--elide-constants", "-o", "/dev/null"], "cold"),
    ]
    bench = args.bench_models
    r50 = os.path.join(bench, "resnet50.onnx")
    if os.path.exists(r50):
        out.append(("resnet50-cpu", hetpass,
                    ["run", r50, "--device=cpu", "--random-inputs", "--json", "--input",
                     "#0=" + os.path.join(bench, "resnet50.input.npy")], "cold"))
    else:
        print(f"note: {r50} not found (run bench/import/import_bench.py once): not profiled",
              file=sys.stderr)
    bert = os.path.join(bench, "bert6.onnx")
    if os.path.exists(bert):
        argv = ["run", bert, "--device=cpu", "--random-inputs", "--json"]
        for name in ("input_ids", "attention_mask", "token_type_ids"):
            npy = os.path.join(bench, f"bert6.{name}.npy")
            if os.path.exists(npy):
                argv += ["--input", f"{name}={npy}"]
        out.append(("bert6-cpu", hetpass, argv, "cold"))
    else:
        print(f"note: {bert} not found: not profiled", file=sys.stderr)
    return out


def executed_functions(callgrind_out, binary):
    """Mangled names of the functions of `binary` that the profile saw run."""
    objects, names, in_binary, found = {}, {}, False, set()
    pattern = re.compile(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$")
    with open(callgrind_out, errors="replace") as f:
        for line in f:
            m = pattern.match(line.rstrip("\n"))
            if not m:
                continue
            key, index, name = m.groups()
            if key in ("ob", "cob"):
                if name:
                    objects[index] = name
                if key == "ob":  # the object of the fn= lines that follow
                    current = objects.get(index)
                    in_binary = current is not None and os.path.realpath(current) == binary
            else:
                if name:
                    names[index] = name
                if key == "fn" and in_binary:
                    found.add(names[index])
    return found


def profile(args, name, tool, argv, cache, work):
    out = os.path.join(work, name + ".callgrind")
    env = dict(os.environ, HETPASS_KERNEL_CACHE_DIR=os.path.join(work, "cache-" + name),
               # valgrind replaces malloc; the tools' own heap policies would only get in its way
               HETPASS_SMALL_OBJECT_HEAP="0", HETPASS_HUGE_PAGES="0")
    if cache == "warm":  # fill the cache first, unprofiled
        subprocess.run([tool] + argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cmd = ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
           tool] + argv
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 or not os.path.exists(out):
        sys.exit(f"{name}: `{' '.join(cmd)}` failed ({p.returncode}):\n{p.stderr[-2000:]}")
    found = executed_functions(out, os.path.realpath(tool))
    print(f"  {name:<16} {len(found):>6} functions", file=sys.stderr)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--bench-models", default="/tmp/hetpass_import_bench")
    ap.add_argument("--out", default=os.path.join(HERE, "hot_functions.tar.xz"))
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("valgrind not found: apt-get install valgrind")
    counts = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="hetpass_hot_code_") as work:
        runs = scenarios(args)
        print(f"profiling {len(runs)} scenarios under callgrind (minutes each):", file=sys.stderr)
        for name, tool, argv, cache in runs:
            counts.update(profile(args, name, tool, argv, cache, work))
    ordered = sorted(counts, key=lambda n: (-counts[n], n))
    text = "".join(n + "\n" for n in ordered).encode()
    info = tarfile.TarInfo("hot_functions.txt")
    info.size = len(text)
    info.mtime = 0  # the same profiles give the same archive
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        tar.addfile(info, io.BytesIO(text))
    with open(args.out, "wb") as f:
        f.write(buf.getvalue())
    print(f"wrote {args.out}: {len(ordered)} functions ({len(buf.getvalue()) // 1024} KiB)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
