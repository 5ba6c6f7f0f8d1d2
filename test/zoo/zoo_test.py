#!/usr/bin/env python3
"""The model zoo (test/zoo/models, made by tools/models/export_zoo.py) on cpu and sim.

    zoo_test.py HETPASS MODEL_DIR EXPECTED_JSON
    zoo_test.py --listing MODELS_DIR EXPECTED_JSON

For one model, on each of cpu and sim, `hetpass test-onnx MODEL_DIR --device=D --json` must:
  * pass both test sets (outputs against PyTorch eager's, rtol 1e-3 / atol 1e-4);
  * make exactly the copies its IR-level copy ledger promised (ledger_agrees);
  * on cpu, copy nothing;
  * on sim, make exactly the copies pinned in EXPECTED_JSON per test set (h2d and d2h calls
    and bytes, syncs), since a copy count is a fact, not a bound;
  * on sim, copy nothing device-to-host beyond the outputs but scalars (<= 8 bytes each): every
    non-output d2h copy of the ledger has a constant size of at most 8 bytes, except those the
    expected file lists under "exceptions" with the reason (the docs' zoo table repeats it).
--listing checks the zoo itself: every model has an entry in EXPECTED_JSON and every entry a
model, each model.onnx is at most 2 MB and all of them at most 30 MB, and each model has
test_data_set_0 and test_data_set_1 (two different dynamic sizes; meta.json says which).
Exit status 0 when all hold; the first failures are printed.
"""
import json
import os
import re
import subprocess
import sys

SCALAR_BYTES = 8


def run(hetpass, model_dir, device):
    p = subprocess.run([hetpass, "test-onnx", model_dir, f"--device={device}", "--json"], capture_output=True,
                       text=True, timeout=900)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{device}: hetpass test-onnx exited {p.returncode} without JSON:\n{p.stderr[-3000:]}")


def evaluate(expr, bindings):
    """A ledger size ("8", "dyn11*4", "height*width*12") with the run's symbol values."""
    if not re.fullmatch(r"[\w$*+ ()-]+", expr):
        return None
    try:
        return eval(expr, {"__builtins__": {}}, dict(bindings))
    except Exception:
        return None


def listing(models_dir, expected_path):
    expected = {k for k in json.load(open(expected_path)) if not k.startswith("_")}
    models = {d for d in os.listdir(models_dir) if os.path.isdir(os.path.join(models_dir, d))}
    errors = [f"{m}: no entry in {expected_path}" for m in sorted(models - expected)]
    errors += [f"{m}: pinned in {expected_path} but not in {models_dir}" for m in sorted(expected - models)]
    total = 0
    for m in sorted(models):
        size = os.path.getsize(os.path.join(models_dir, m, "model.onnx"))
        total += size
        if size > 2 << 20:
            errors.append(f"{m}: model.onnx is {size} B, over 2 MB")
        for k in (0, 1):
            if not os.path.exists(os.path.join(models_dir, m, f"test_data_set_{k}", "output_0.pb")):
                errors.append(f"{m}: no test_data_set_{k}")
    if total > 30 << 20:
        errors.append(f"the zoo's models take {total} B, over 30 MB")
    print(f"{len(models)} zoo models, {total} B of model.onnx")
    if len(models) < 10:
        errors.append(f"{len(models)} models; the zoo has at least ten")
    for e in errors:
        print(e)
    return 1 if errors else 0


def main():
    if sys.argv[1] == "--listing":
        return listing(sys.argv[2], sys.argv[3])
    hetpass, model_dir, expected_path = sys.argv[1:4]
    name = os.path.basename(os.path.normpath(model_dir))
    if not os.path.exists(os.path.join(model_dir, "model.onnx")):
        raise SystemExit(f"missing zoo model {model_dir}/model.onnx")
    expected_all = json.load(open(expected_path))
    if name not in expected_all:
        raise SystemExit(f"{name}: no entry in {expected_path} (pin its sim copy counts there)")
    expected = expected_all[name]
    errors = []
    for device in ("cpu", "sim"):
        r = run(hetpass, model_dir, device)
        if r["total"] != 2 or r["passed"] != 2:
            errors.append(f"{device}: {r['passed']}/{r['total']} test sets passed: "
                          + "; ".join(s["message"] for s in r["sets"] if not s["pass"]))
        for k, s in enumerate(r["sets"]):
            c = s["counters"]
            got = [c["h2d_calls"], c["h2d_bytes"], c["d2h_calls"], c["d2h_bytes"], c["syncs"]]
            print(f"[ {name} {device} set {k} ] h2d {got[0]} ({got[1]} B) d2h {got[2]} ({got[3]} B) syncs {got[4]} "
                  f"max |err| {s['max_abs_err']:.3g}")
            if not s["ledger_agrees"]:
                errors.append(f"{device} set {k}: the run's copies differ from the ledger: {s['ledger_summary']}")
            if device == "cpu" and any(got):
                errors.append(f"cpu set {k}: copies on a host-only run: {got}")
            if device == "sim":
                want = expected["sim"][k]
                if got != want:
                    errors.append(f"sim set {k}: [h2d calls, h2d bytes, d2h calls, d2h bytes, syncs] = {got}, "
                                  f"pinned {want}")
        if device != "sim":
            continue
        # Device-to-host copies that are not outputs: scalars only, unless explained.
        big = []
        for e in r["ledger"]["entries"]:
            if e["direction"] != "d2h" or e["reason"].startswith("returned from"):
                continue
            sizes = {evaluate(e["bytes"], s["bindings"]) for s in r["sets"]}
            if None in sizes or max(sizes) > SCALAR_BYTES:
                big.append(f"{e['value']} ({e['bytes']} B: {e['reason']})")
        allowed = expected.get("exceptions", {}).get("count", 0)
        if len(big) != allowed:
            errors.append(f"sim: {len(big)} non-scalar d2h copies beyond the outputs, {allowed} explained:\n    "
                          + "\n    ".join(big))
    if errors:
        print(f"{name}: FAILED\n  " + "\n  ".join(errors))
        return 1
    print(f"{name}: both test sets pass on cpu and sim; sim copies as pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
