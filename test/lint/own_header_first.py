#!/usr/bin/env python3
"""Every library or tool .cc includes its own header first (a project header before any system
or third-party header), so each header is known to compile on its own. Programs (files defining main)
and tests are exempt: they have no header of their own.

usage: own_header_first.py REPO_ROOT
"""
import os
import re
import sys


def main():
    root = sys.argv[1]
    bad = []
    checked = 0
    for top in ("src", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(".cc") or name.endswith("_test.cc"):
                    continue
                path = os.path.join(dirpath, name)
                text = open(path, encoding="utf-8").read()
                if re.search(r"^int main\(", text, re.M):
                    continue
                first = re.search(r"^#include\s+(\S+)", text, re.M)
                checked += 1
                inc = first.group(1) if first else ""
                third_party = re.match(r'"(absl|llvm|gtest|gmock|benchmark|onnx|google|graphviz|pybind11)/', inc)
                if first and (not inc.startswith('"') or third_party):
                    bad.append(f"{os.path.relpath(path, root)}: first include is {first.group(1)}")
    for line in bad:
        print("FAIL " + line + " (include the file's own header first)")
    print(f"{checked - len(bad)}/{checked} library and tool sources include their own header first")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
