#!/usr/bin/python3
"""The tools' hot-code link took effect (cmake/hot_code.cmake).

usage: hot_code_test.py ORDER_FILE BINARY...

For each binary:
  - lld linked it (.comment) with packed relative relocations (a DT_RELR entry);
  - the functions of the order file that the binary defines sit together at the start of .text,
    in the order's order: their address span is at most 1.25x their total size (alignment
    padding), beginning within 64 KiB of .text's start.
For the first binary (hetpass, the tool the order was profiled on) the share of listed names it
still defines is printed, and below half fails: the list is stale and keeps little code
together; tools/link/profile_hot_code.py writes a new one.
"""
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def text_section(binary):
    for line in run(["readelf", "-SW", binary]).splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 5 and parts[1] == ".text":
            return int(parts[3], 16), int(parts[5], 16)
    fail(f"{binary}: no .text section")


def check(binary, order, first):
    comment = run(["readelf", "-p", ".comment", binary])
    if "LLD" not in comment:
        fail(f"{binary} was not linked by lld:\n{comment}")
    if "(RELR)" not in run(["readelf", "-d", binary]):
        fail(f"{binary} has no DT_RELR entry (-z pack-relative-relocs)")
    symbols = {}
    for line in run(["nm", "-S", "--defined-only", binary]).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            symbols.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
    listed = [symbols[n] for n in order if n in symbols]
    share = len(listed) / len(order)
    print(f"{binary}: defines {len(listed)} of the {len(order)} listed functions ({share:.0%})")
    if first and share < 0.5:
        fail(f"only {share:.0%} of the hot-code list is in {binary}: it is stale, run "
             "tools/link/profile_hot_code.py")
    if not listed:
        fail(f"{binary} defines none of the listed functions")
    # Identical code folded or aliases may share an address: count each address once.
    spans = {}
    for addr, size in listed:
        spans[addr] = max(spans.get(addr, 0), size)
    lo = min(spans)
    hi = max(a + s for a, s in spans.items())
    total = sum(spans.values())
    text_lo, _ = text_section(binary)
    print(f"  listed code: {total / 2**20:.2f} MiB over a span of {(hi - lo) / 2**20:.2f} MiB, "
          f"starting {lo - text_lo} bytes into .text")
    if hi - lo > 1.25 * total:
        fail(f"{binary}: the listed functions are spread over {(hi - lo) / 2**20:.2f} MiB for "
             f"{total / 2**20:.2f} MiB of code: the symbol ordering was not applied")
    if lo - text_lo > 64 * 1024:
        fail(f"{binary}: the listed functions start {lo - text_lo} bytes into .text, not at its start")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        order = [line.strip() for line in f if line.strip()]
    if not order:
        fail(f"{sys.argv[1]} is empty")
    for i, binary in enumerate(sys.argv[2:]):
        check(binary, order, i == 0)
    print("PASS")


if __name__ == "__main__":
    main()
