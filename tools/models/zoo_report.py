#!/usr/bin/env python3
"""The model zoo's table in docs/zoo.md, measured: per model, its ops (meta.json), the shape
functions one inference runs and the kernel kinds it runs (`hetpass run --profile` on sim), the
copies on sim and the device-to-host bytes beyond the outputs (`hetpass test-onnx --json`), and,
when given bench/ort/compare.sh's output for the zoo, ours vs ONNX Runtime's time.

    python3 tools/models/zoo_report.py BUILD_DIR [COMPARE_OUTPUT]

    # the timing column: both sides on one core, ORT with all graph optimizations
    MODELS_DIR=test/zoo/models ROUNDS=3 bash bench/ort/compare.sh build 30 > /tmp/zoo_bench.txt

The timing column gives compare.sh's two ratios: raw (ours / ORT) and conservative (ours / (ORT -
the harness floor difference): ORT, timed through node, is credited with the whole difference
between the two sides' one-Relu floors, measured in the same run). Every performance goal is read
on the conservative one; the floors are printed under the table.
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "..", "test", "zoo", "models")


def tensor_bytes(path):
    """Bytes of the data of a serialized onnx.TensorProto (dims and data_type only)."""
    buf = open(path, "rb").read()
    pos, dims, dtype = 0, [], 1

    def varint(p):
        v = s = 0
        while True:
            b = buf[p]
            p += 1
            v |= (b & 0x7F) << s
            s += 7
            if b < 0x80:
                return v, p

    while pos < len(buf):
        key, pos = varint(pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = varint(pos)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wire == 2:
            n, pos = varint(pos)
            if field == 1:  # packed dims
                end = pos + n
                while pos < end:
                    v, pos = varint(pos)
                    dims.append(v)
            pos += n if field != 1 else 0
        elif wire == 5:
            pos += 4
        elif wire == 1:
            pos += 8
    size = {1: 4, 6: 4, 7: 8, 9: 1, 11: 8, 2: 1, 3: 1, 10: 2}[dtype]
    count = 1
    for d in dims:
        count *= d
    return count * size


def inputs_args(model_dir, k):
    args = []
    for i, f in enumerate(sorted(glob.glob(f"{model_dir}/test_data_set_{k}/input_*.pb"))):
        args += ["--input", f"#{i}={f}"]
    return args


def profile(hetpass, model_dir, k):
    # Kernels compiled before the first run (no tiering), ten runs: the profile's time shares.
    out = subprocess.run([hetpass, "run", f"{model_dir}/model.onnx", "--device=sim", "--profile", "--repeat=10",
                          "--background_jit=false"] + inputs_args(model_dir, k),
                         capture_output=True, text=True, check=True).stdout
    kinds = collections.Counter(re.findall(r"^  k\d+ @\S+ @\S+: ([a-z]+)", out, re.M))
    refs = collections.Counter(re.findall(r"^  k\d+ @\S+ @\S+: reference\[([^\]]*)\]", out, re.M))
    shape_funcs = 0
    total_us = reference_us = 0.0
    in_table = False
    for line in out.splitlines():
        if line.startswith("profile"):
            in_table = True
            continue
        f = line.split()
        if not in_table or len(f) < 6 or not re.fullmatch(r"\d+", f[3]):
            continue
        if f[2] == "shape_func":
            shape_funcs += int(f[3])
        if f[0] == "main":  # top level: region bodies are inside their loop/if rows
            total_us += float(f[4])
        if f[2] == "invoke_kernel" and "[reference[" in line:
            reference_us += float(f[4])
    return kinds, refs, shape_funcs // 10, 100.0 * reference_us / total_us if total_us else 0.0


def bench_rows(path):
    """compare.sh's rows, (model, set) -> (ours us, ORT us, raw ratio, conservative ratio), and
    its harness floor line (None when the output has none)."""
    rows, floor = {}, None
    if not path:
        return rows, floor
    for line in open(path):
        if line.startswith("# harness floor"):
            floor = line[2:].strip()
            continue
        f = line.split()
        if len(f) >= 5 and re.fullmatch(r"\d+", f[1]) and f[4] != "-":
            # Field 6 is the conservative ratio, or "n/a" followed by its reason; an output of
            # compare.sh from before that column has none.
            if len(f) <= 6:
                conservative = "-"
            elif f[6] == "n/a":
                conservative = " ".join(f[6:])
            else:
                conservative = f[6]
            rows[(f[0], int(f[1]))] = (float(f[2]), float(f[3]), f[4], conservative)
    return rows, floor


def main():
    hetpass = os.path.join(sys.argv[1], "hetpass")
    bench, floor = bench_rows(sys.argv[2] if len(sys.argv) > 2 else None)
    print("| model | opset | ops | sets (dynamic sizes) | shape funcs / inference | h2d / d2h copies | "
          "d2h beyond outputs | kernels (reference) | time in reference kernels | "
          "ours / ORT: **conservative** (raw; times), set 0 · set 1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in sorted(glob.glob(os.path.join(ZOO, "*", ""))):
        name = os.path.basename(d[:-1])
        meta = json.load(open(os.path.join(d, "meta.json")))
        r = json.loads(subprocess.run([hetpass, "test-onnx", d, "--device=sim", "--json"], capture_output=True,
                                      text=True).stdout)
        sets, copies, beyond, funcs, ratios, ref_share = [], [], [], [], [], []
        kinds, refs = None, None
        for k, s in enumerate(r["sets"]):
            c = s["counters"]
            out_bytes = sum(tensor_bytes(f) for f in glob.glob(f"{d}/test_data_set_{k}/output_*.pb"))
            n_out = len(glob.glob(f"{d}/test_data_set_{k}/output_*.pb"))
            copies.append(f"{c['h2d_calls']} / {c['d2h_calls']}")
            beyond.append(f"{c['d2h_calls'] - n_out} ({c['d2h_bytes'] - out_bytes} B)")
            kk, rr, sf, share = profile(hetpass, d, k)
            funcs.append(str(sf))
            ref_share.append(f"{share:.1f}%")
            kinds, refs = (kk, rr) if kinds is None else (kinds, refs)
            sets.append("x".join(str(v) for v in list(meta["test_sets"][k]["inputs"].values())[0]))
            b = bench.get((name, k))
            ratios.append(f"**{b[3]}** (raw {b[2]}; {b[0]:.0f} / {b[1]:.0f} us)" if b else "-")
        kind_text = ", ".join(f"{n} {kinds[n]}" for n in sorted(kinds))
        ref_text = "; ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(refs.items()))
        print(f"| {name} | {meta['opset']} | {len(meta['ops'])} | {' · '.join(sets)} | {' · '.join(funcs)} | "
              f"{' · '.join(copies)} | {' · '.join(beyond)} | {kind_text}{' (' + ref_text + ')' if refs else ''} | "
              f"{' · '.join(ref_share)} | {' · '.join(ratios)} |")
    if bench:
        # The floor the conservative ratios subtract, from the same run as the table's times.
        print()
        print(f"Timing column: {floor}." if floor else
              "Timing column: the compare.sh output has no harness floor line, so no conservative "
              "ratio; every performance goal is read on the conservative one.")


if __name__ == "__main__":
    main()
