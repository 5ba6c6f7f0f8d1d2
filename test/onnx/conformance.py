#!/usr/bin/env python3
"""ONNX's own backend node tests (Debian's libonnx-testdata) through `hetpass test-onnx`.

For every test folder (model.onnx + test_data_set_N) and every device, the model is imported,
compiled once and run on each set; outputs are compared with ONNX's backend-test tolerances
(rtol 1e-3, atol 1e-7): count, dtype, shape and values, and every run's copies must agree
with its copy ledger. A test whose model the importer rejects as unsupported (an op type, an
attribute value or an opset it does not handle: exit status 3, which only the importer gives)
is listed as unsupported, not hidden; any other error (a pass, the verifier, the VM compiler, a
kernel, the ledger check: exit status 4) is a failure.

The passing runs are pinned in a checked-in list (--expected, default conformance_expected.txt
beside this script, one "test device" per line): a run that stops passing fails the ctest, and
a run that starts passing fails it too, asking for the list to be updated (--update rewrites
it), so the list only changes in a reviewed commit. Prints pass/total per op and overall and
the unsupported ops; exits 1 on any failure of a supported op (unless on the known-failures
list below with a reason) or any difference from the pinned list.

usage: conformance.py HETPASS DATA_DIR [--devices=cpu,sim] [--jobs=2] [--filter=SUBSTR]
                      [--json=FILE] [--expected=FILE] [--update] [--passes=PIPELINE]

--passes replaces hetpass's default pipeline (tools/gpu/run_cuda.sh puts inputs and results on
the GPU with it, so one-op models run their op there).
"""
import collections
import concurrent.futures
import json
import os
import subprocess
import sys

# test folder -> reason. Each entry is a real, understood failure; the run fails if an entry
# starts passing (remove it then) or if a failure is not listed.
_BF16_TRUNCATED = ("the reference output truncates float to bfloat16 (ONNX <= 1.13's test "
                   "generator); hetpass rounds to nearest even, as PyTorch, ONNX >= 1.14's "
                   "reference and ONNX Runtime do")
_LIKE_SHAPE = ("the model declares input 'like' as [3, 4] but the test data holds shape [1]; "
               "an input whose static dims differ from the declared ones is an error (as in "
               "ONNX Runtime)")
_RANDOM = ("its output is one sample of random draws (NumPy's generator in ONNX's test "
           "generator, seeded or not); hetpass draws from its own mt19937_64 stream, so the "
           "values differ while the distribution is the same (random_test.cc checks it)")
KNOWN_FAILURES = {
    **{t: _RANDOM for t in ["test_bernoulli", "test_bernoulli_double",
                            "test_bernoulli_double_expanded", "test_bernoulli_expanded",
                            "test_bernoulli_seed", "test_bernoulli_seed_expanded",
                            "test_training_dropout", "test_training_dropout_default",
                            "test_training_dropout_default_mask", "test_training_dropout_mask"]},
    "test_cast_FLOAT_to_BFLOAT16": _BF16_TRUNCATED,
    "test_castlike_FLOAT_to_BFLOAT16": _LIKE_SHAPE + "; its output is also " + _BF16_TRUNCATED,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": _LIKE_SHAPE + "; its output is also " + _BF16_TRUNCATED,
    "test_castlike_BFLOAT16_to_FLOAT": _LIKE_SHAPE,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": _LIKE_SHAPE,
}
# Known failures whose output can still match now and then (a handful of Bernoulli draws):
# such a pass is neither reported as unexpected nor pinned, or the test would be flaky.
CHANCE_PASSES = {t for t, why in KNOWN_FAILURES.items() if why is _RANDOM}


def varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message (bytes for wire type 2)."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, value


def op_types(model_path):
    """ModelProto.graph (7) -> GraphProto.node (1) -> NodeProto.op_type (4)."""
    with open(model_path, "rb") as f:
        model = f.read()
    ops = []
    for field, wire, graph in fields(model):
        if field == 7 and wire == 2:
            for gf, gw, node in fields(graph):
                if gf == 1 and gw == 2:
                    for nf, nw, v in fields(node):
                        if nf == 4 and nw == 2:
                            ops.append(v.decode())
    return ops


def run_one(hetpass, test_dir, device, passes=None):
    extra = [f"--passes={passes}"] if passes else []
    p = subprocess.run([hetpass, "test-onnx", test_dir, f"--device={device}", "--json",
                        "--rtol=1e-3", "--atol=1e-7"] + extra, capture_output=True, text=True,
                       timeout=600)
    if p.returncode == 3:
        return "unsupported", p.stderr.strip()
    if p.returncode == 0:
        return "pass", ""
    message = p.stderr.strip()
    try:
        result = json.loads(p.stdout)
        failed = [s for s in result["sets"] if not s["pass"]]
        if failed:
            message = f"{failed[0]['set']}: {failed[0]['message']}"
    except (ValueError, KeyError):
        pass
    return "fail", message


def main():
    hetpass, data = sys.argv[1], sys.argv[2]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[3:] if a.startswith("--") and "=" in a)
    update = "--update" in sys.argv[3:]
    expected_path = opts.get("expected", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "conformance_expected.txt"))
    devices = opts.get("devices", "cpu,sim").split(",")
    jobs = int(opts.get("jobs", "2"))
    tests = sorted(d for d in os.listdir(data) if os.path.isfile(os.path.join(data, d, "model.onnx")))
    if "filter" in opts:
        tests = [t for t in tests if opts["filter"] in t]
    if not tests:
        print(f"no tests under {data}")
        return 1
    # The op a node test is about: the last non-Constant node of its graph.
    op_of = {}
    for t in tests:
        ops = [o for o in op_types(os.path.join(data, t, "model.onnx")) if o != "Constant"] or ["Constant"]
        op_of[t] = ops[-1]
    work = [(t, d) for t in tests for d in devices]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, hetpass, os.path.join(data, t), d, opts.get("passes")): (t, d)
                   for t, d in work}
        for f in concurrent.futures.as_completed(futures):
            results[futures[f]] = f.result()

    per_op = collections.defaultdict(lambda: collections.Counter())
    unsupported = collections.defaultdict(set)
    failures, unexpected_passes = [], []
    for (t, d), (status, message) in sorted(results.items()):
        op = op_of[t]
        per_op[op][status] += 1
        if status == "unsupported":
            reason = message.splitlines()[-1] if message else ""
            unsupported[op].add(reason[:160])
        elif status == "fail" and t not in KNOWN_FAILURES:
            failures.append(f"{t} [{d}] ({op}): {message[:300]}")
        elif status == "pass" and t in KNOWN_FAILURES and t not in CHANCE_PASSES:
            unexpected_passes.append(f"{t} [{d}]: passes now, remove it from KNOWN_FAILURES")

    supported_ops = sorted(op for op, c in per_op.items() if c["pass"] + c["fail"] > 0)
    print(f"{'op':28s} {'pass/supported':>15s} {'unsupported':>12s}  (tests x devices {','.join(devices)})")
    total_pass = total_supported = 0
    for op in sorted(per_op):
        c = per_op[op]
        supported = c["pass"] + c["fail"]
        total_pass += c["pass"]
        total_supported += supported
        print(f"{op:28s} {c['pass']:>7d}/{supported:<7d} {c['unsupported']:>12d}")
    print(f"overall: {total_pass}/{total_supported} runs of supported tests pass; "
          f"{len(supported_ops)} ops supported; {sum(c['unsupported'] for c in per_op.values())} runs unsupported "
          f"of {len(work)}")
    print("unsupported ops (no test of theirs imports): " +
          ", ".join(sorted(op for op in per_op if op not in supported_ops)))
    partly = sorted(op for op in supported_ops if per_op[op]["unsupported"])
    if partly:
        print("supported ops with unsupported variants: " + ", ".join(partly))
    if "json" in opts:
        with open(opts["json"], "w") as f:
            json.dump({"per_op": {op: dict(c) for op, c in per_op.items()},
                       "unsupported": {op: sorted(r) for op, r in unsupported.items()},
                       "failures": failures}, f, indent=1, sort_keys=True)
    # The pinned list, restricted to the tests and devices of this run (a --filter run checks
    # only its own tests).
    # A random-draw test that matched by chance (a few Bernoulli draws can) is no pass to pin.
    passing = {f"{t} {d}" for (t, d), (status, _) in results.items()
               if status == "pass" and t not in CHANCE_PASSES}
    in_run = {f"{t} {d}" for t, d in work}
    pinned = set()
    if os.path.exists(expected_path):
        with open(expected_path) as f:
            pinned = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    elif not update:
        failures.append(f"the pinned list {expected_path} is missing (run with --update)")
    if update:
        kept = {p for p in pinned if p not in in_run}  # other tests' pins stay as they were
        with open(expected_path, "w") as f:
            f.write("# Passing runs of ONNX's node tests (test device), pinned by "
                    "test/onnx/conformance.py --update\n")
            f.writelines(f"{p}\n" for p in sorted(kept | passing))
        print(f"pinned list updated: {len(kept | passing)} runs ({expected_path})")
    else:
        for p in sorted((pinned & in_run) - passing):
            status, message = results[tuple(p.split(" ", 1))]
            failures.append(f"{p}: pinned as passing, now {status}: {message[:300]}")
        for p in sorted(passing - pinned):
            unexpected_passes.append(f"{p}: passes now but is not pinned: "
                                     "run conformance.py --update and commit the list")
        print(f"pinned: {len(pinned & in_run)} runs expected to pass, {len(passing)} pass")
    for line in sorted(set(failures)) + unexpected_passes:
        print("FAIL " + line)
    return 1 if failures or unexpected_passes else 0


if __name__ == "__main__":
    sys.exit(main())
