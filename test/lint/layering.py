#!/usr/bin/env python3
"""The include graph of the library points down: every #include of a project header in src/
and include/passes/ names a layer at or below the including file's own layer. Tests, tools and
benchmarks are exempt (they sit on top of everything).

The layers, lowest first:
  support         status macros
  ir              values, types, the op-definition machinery (OpDef, OpRegistry), parser,
                  printer, verifier
  shape_funcs     the op families (shape rules, masks, reference kernels), primitive functions'
                  masks and shape functions, symbolic values
  runtime         devices, pooling allocator, NDArray, TensorArg
  compile_engine  kernel providers and their kernels, the engine, capabilities
  pass            the Pass interface, pass manager, module verification, pass registry
  transforms      infer-types, fold-constants, cse, dce, fuse-ops, bind-params
  device_planner  plan-devices and its rules
  analysis        copy ledger, baseline masks
  manifest_alloc  manifest-alloc
  memory_planner  plan-memory (storage sharing, in-place outputs, kill points)
  pipeline        src/pass/register_all_passes.cc: the list of every pass (it names them all,
                  as src/shape_funcs/register_all.cc names every op family)
  vm              executable, compiler, interpreter
  frontend        the ONNX importer
  testing         include/passes/testing: helpers for users' tests

An edge from a layer to itself is fine; one to a higher layer is reported with the file, the
line and both layers, and the test fails. A layer may use any layer below it.

usage: layering.py REPO_ROOT
"""
import os
import re
import sys

LAYERS = ["support", "ir", "shape_funcs", "runtime", "compile_engine", "pass", "transforms",
          "device_planner", "analysis", "manifest_alloc", "memory_planner", "pipeline", "vm", "frontend", "testing"]
RANK = {name: i for i, name in enumerate(LAYERS)}
# Files whose layer is not their folder's, with the reason.
FILE_LAYERS = {
    "src/pass/register_all_passes.cc": "pipeline",  # registers every pass, so sits above them
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of_file(rel):
    if rel in FILE_LAYERS:
        return FILE_LAYERS[rel]
    parts = rel.split("/")
    if parts[0] == "src":
        return parts[1]
    if parts[:2] == ["include", "passes"]:
        return parts[2]
    return None


def layer_of_include(path):
    parts = path.split("/")
    if parts[0] == "passes" and len(parts) > 2:
        return parts[1]
    if len(parts) > 1 and parts[0] in RANK:
        return parts[0]
    return None  # a third-party header, or a sibling in the same folder


def main():
    root = sys.argv[1]
    bad = []
    edges = 0
    for top in ("src", os.path.join("include", "passes")):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith("_test.cc") or not name.endswith((".cc", ".h", ".def")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                src_layer = layer_of_file(rel)
                if src_layer not in RANK:
                    bad.append(f"{rel}: folder '{src_layer}' is not a known layer (add it to LAYERS)")
                    continue
                text = open(os.path.join(root, rel), encoding="utf-8").read()
                for m in INCLUDE.finditer(text):
                    dst_layer = layer_of_include(m.group(1))
                    if dst_layer is None:
                        continue
                    if dst_layer not in RANK:
                        continue  # not a library layer (third-party paths such as "llvm/...")
                    edges += 1
                    if RANK[dst_layer] > RANK[src_layer]:
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append(f"{rel}:{line}: {src_layer} includes {m.group(1)} ({dst_layer}, "
                                   f"a higher layer)")
    for b in bad:
        print(b)
    print(f"{edges} project includes checked across {len(LAYERS)} layers: "
          f"{'OK' if not bad else f'{len(bad)} upward'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
