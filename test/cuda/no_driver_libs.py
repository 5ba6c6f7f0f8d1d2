#!/usr/bin/env python3
"""No built binary records a NEEDED entry for the CUDA driver or the big CUDA libraries.

Why: a binary that NEEDs libcuda.so.1 does not even start on a machine without a driver (CI's),
and cuBLASLt / cuDNN / nvJitLink / NVRTC add ~0.4 s to every process start when linked (each
gtest case is a process): the cuda device reaches the driver through the CUDA runtime and opens
the libraries on first use (cmake/cuda.cmake, docs/cuda.md).

usage: no_driver_libs.py BUILD_DIR
"""
import os
import re
import subprocess
import sys

FORBIDDEN = re.compile(r"lib(cuda|cublas|cublasLt|cudnn[a-z_]*|nvJitLink|nvrtc|cupti)\.so")


def main():
    build = sys.argv[1]
    binaries = []
    for dirpath, _, files in os.walk(build):
        if "CMakeFiles" in dirpath or "/ort" in dirpath:
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            if os.access(path, os.X_OK) and not name.endswith((".sh", ".py", ".so")):
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        binaries.append(path)
    bad = []
    for path in sorted(binaries):
        out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out):
            if FORBIDDEN.match(lib):
                bad.append(f"{os.path.relpath(path, build)} NEEDs {lib}")
    for b in bad:
        print(b)
    if len(binaries) < 3:
        print(f"only {len(binaries)} binaries found under {build}: wrong directory?")
        return 1
    print(f"{len(binaries)} binaries checked: {'OK' if not bad else f'{len(bad)} forbidden NEEDED entries'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
