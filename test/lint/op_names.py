#!/usr/bin/env python3
"""No string literal naming a built-in op outside the places that own op names: the op families
(src/shape_funcs), the ONNX importer (src/frontend), the op lists (include/passes/shape_funcs/
*.def) and tests. Everywhere else an op is identified by what it is: its role, pattern, flags
(OpDef) or, for kernels that implement particular ops, its OpId (passes/shape_funcs/op_ids.h),
so renaming an op is a compile error rather than a silently dead string comparison.

The op names are read from the two op lists (elementwise_ops.def, ops.def); the registry test
checks those lists against the registry. A literal that happens to spell an op name but means
something else (a VM opcode, a libm symbol, an attribute value, another system's op name) is
listed in ALLOWED with the reason.

usage: op_names.py REPO_ROOT
"""
import os
import re
import sys

# (path, literal) -> why the literal is not a reference to our op.
ALLOWED = {
    ("include/passes/vm/executable.h", "device_copy"): "VM opcode name",
    ("include/passes/vm/executable.h", "shape_of"): "VM opcode name",
    ("src/compile_engine/jit/llvm_emitter.cc", "tanh"): "the libm symbol the JIT calls",
    ("src/compile_engine/image_match.cc", "floor"): "a nearest-rounding mode (attribute value)",
    ("src/compile_engine/image_match.cc", "ceil"): "a nearest-rounding mode (attribute value)",
    ("src/compile_engine/cuda/nvrtc_image.cc", "ceil"): "a nearest-rounding mode (attribute value)",
    ("src/compile_engine/image_match.cc", "round"): "a nearest-rounding mode (attribute value)",
    ("src/compile_engine/cuda/nvrtc_image.cc", "round"): "a nearest-rounding mode (attribute value)",
    ("src/analysis/baseline_masks.cc", "*"): "Relay's op names (another system's), cited in the "
                                            "baseline table's relay_op column",
    ("tools/viz/picture.cc", "device_copy"): "legend text of the copy colour",
    ("src/compile_engine/image_match.cc", "max"): "roi_align's pooling mode (attribute value)",
    ("src/ir/parser.cc", "min"): "the dim-expression function min(a, b) of the text IR",
    ("src/ir/parser.cc", "max"): "the dim-expression function max(a, b) of the text IR",
}
OWNERS = ("src/shape_funcs/", "src/frontend/", "include/passes/shape_funcs/")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def op_names(root):
    names = set()
    for f in ("elementwise_ops.def", "ops.def"):
        text = open(os.path.join(root, "include/passes/shape_funcs", f), encoding="utf-8").read()
        names |= set(re.findall(r'^HETPASS_(?:UNARY|BINARY|COMPARE|OP)\(\s*\w+,\s*"([^"]+)"', text, re.M))
    return names


def strip_comments(text):
    # Comments may name ops freely; drop them but keep line numbers.
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main():
    root = sys.argv[1]
    names = op_names(root)
    if len(names) < 50:
        print(f"only {len(names)} op names read from the op lists: the lists moved?")
        return 1
    bad, checked, used = [], 0, set()
    for top in ("src", "include", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                if not name.endswith((".cc", ".h")) or "test" in name:  # tests and their helpers
                    continue
                if rel.startswith(OWNERS):
                    continue
                checked += 1
                text = strip_comments(open(os.path.join(root, rel), encoding="utf-8").read())
                for m in LITERAL.finditer(text):
                    lit = m.group(1)
                    if lit not in names:
                        continue
                    if (rel, lit) in ALLOWED or (rel, "*") in ALLOWED:
                        used.add((rel, lit) if (rel, lit) in ALLOWED else (rel, "*"))
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f'{rel}:{line}: "{lit}" names an op: use its role, flags or OpId')
    for key in sorted(set(ALLOWED) - used):  # an exception nothing needs any more
        bad.append(f'{key[0]}: allowlist entry "{key[1]}" matches nothing: remove it')
    for b in bad:
        print(b)
    print(f"{checked} files checked against {len(names)} op names: "
          f"{'OK' if not bad else f'{len(bad)} op-name literals'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
