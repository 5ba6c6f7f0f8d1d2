#!/usr/bin/env python3
"""Scale: generated models of 1k, 10k and 100k ops through parse, the whole default pipeline,
VM compile and load, and one run (issue 18). Per size and stage: wall time and the process's
peak resident memory while the stage ran (`hetpass run --json`: compile_stages_ms,
compile_stages_peak_rss_mb, times_us.cold, run_peak_rss_mb). Then, per stage, the growth from
each size to the next against n log n: a stage whose time grows by more than
n log n's factor x SLACK is flagged.

usage: scale.py [--hetpass build/hetpass] [--sizes 1000,10000,100000] [--device sim]
                [--width 16] [--work DIR] [--repeat 3] [--no-check] [--verify-each]

The model: a residual MLP with a dynamic batch `n`, four ops per block (nn.dense, nn.bias_add,
tanh, add with the block's input), its weights elided (random at run time): the chains of
dense layers and elementwise ops an exporter writes, at any length. Run it on an idle machine:
each figure is the fastest of --repeat processes per size (single runs of the 100k model
varied by up to 40% on the 2-core development VM)."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

SLACK = 1.5


def generate(ops, width):
    blocks = max(1, ops // 4)
    lines = [f"def @main(%x: f32[n, {width}]) {{"]
    prev = "%x"
    for i in range(blocks):
        lines += [
            f"  %w{i} = constant<elided> : f32[{width}, {width}]",
            f"  %c{i} = constant<elided> : f32[{width}]",
            f"  %d{i} = nn.dense({prev}, %w{i})",
            f"  %b{i} = nn.bias_add(%d{i}, %c{i}) {{axis = -1}}",
            f"  %r{i} = tanh(%b{i})",
            f"  %h{i} = add(%r{i}, {prev})",
        ]
        prev = f"%h{i}"
    lines += [f"  return {prev}", "}", ""]
    return "\n".join(lines), blocks * 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetpass", default="build/hetpass")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--device", default="sim")
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--work", default=None)
    ap.add_argument("--repeat", type=int, default=3,
                    help="processes per size; each stage's fastest is reported (default 3)")
    ap.add_argument("--no-check", action="store_true",
                    help="report only (ctest's smoke run: sizes too small to rate growth)")
    ap.add_argument("--verify-each", action="store_true",
                    help="hetpass run --verify-each: the verifier after every pass (inside the "
                         "passes stage) instead of once after the pipeline (its verify stage)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="hetpass_scale_")
    os.makedirs(work, exist_ok=True)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        text, ops = generate(n, args.width)
        path = os.path.join(work, f"scale_{ops}.hir")
        with open(path, "w") as f:
            f.write(text)
        cmd = [args.hetpass, "run", path, f"--device={args.device}", "--random-weights", "--json",
               "--no-guard", "--background-jit=false", "--input", f"x=4x{args.width}"]
        if args.verify_each:
            cmd.append("--verify-each")
        stages, peaks = {}, {}
        for _ in range(args.repeat):  # per stage, the fastest of the processes (timer noise)
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"error: {' '.join(cmd)}\n{p.stderr}")
            r = json.loads(p.stdout)
            got = dict(r["compile_stages_ms"])
            got["run"] = r["times_us"]["cold"] / 1000.0
            for s, ms in got.items():
                stages[s] = min(stages.get(s, ms), ms)
            peaks.update(r["compile_stages_peak_rss_mb"])
            peaks["run"] = r["run_peak_rss_mb"]
        rows.append((ops, stages, peaks, r["instructions"]))
        print(f"{ops} ops: {r['instructions']} VM instructions, compile {r['compile_ms']:.0f} ms", flush=True)

    names = list(rows[0][1].keys())
    print()
    print("stage".ljust(12) + "".join(f"{ops:>10} ops ms  peak MB  us/op".rjust(34) for ops, *_ in rows))
    for s in names:
        line = s.ljust(12)
        for ops, st, pk, _ in rows:
            line += f"{st.get(s, 0):>16.1f} {pk.get(s, -1):>8.1f} {1000 * st.get(s, 0) / ops:>6.2f}".rjust(34)
        print(line)
    total = {ops: sum(st.values()) for ops, st, _, _ in rows}
    print("total".ljust(12) + "".join(f"{total[ops]:>16.1f}".rjust(34) for ops, *_ in rows))
    print()
    worse = []
    for (n1, s1, _, _), (n2, s2, _, _) in zip(rows, rows[1:]):
        bound = (n2 * math.log(n2)) / (n1 * math.log(n1))
        print(f"{n1} -> {n2} ops: n log n grows {bound:.2f}x")
        for s in names:
            a, b = s1.get(s, 0), s2.get(s, 0)
            if a < 1.0:  # under a millisecond: timer noise, not growth
                print(f"  {s:<12} {a:8.1f} -> {b:8.1f} ms (too small to rate)")
                continue
            g = b / a
            flag = "  WORSE than n log n" if g > bound * SLACK else ""
            if flag:
                worse.append(f"{s} ({n1} -> {n2}: {g:.1f}x)")
            print(f"  {s:<12} {a:8.1f} -> {b:8.1f} ms  {g:6.2f}x{flag}")
        # `verify` is the input's check plus the one after the pipeline (hetpass run verifies
        # after every pass only with --verify-each): the second figure counts both against us.
        print(f"  bindings/s through the pass pipeline at {n2} ops: "
              f"{n2 * 1.5 / (s2['passes'] / 1000.0):,.0f} (ops and constants); with the "
              f"verifier: {n2 * 1.5 / ((s2['passes'] + s2.get('verify', 0)) / 1000.0):,.0f}")
    if worse and not args.no_check:
        print("stages growing faster than n log n x %.1f: %s" % (SLACK, ", ".join(worse)))
        sys.exit(1)
    print("every stage within n log n x %.1f" % SLACK)


if __name__ == "__main__":
    main()
