#!/usr/bin/env python3
"""Summarises a run_cuda.sh output folder into cuda_report.json and a markdown report.

usage: cuda_report.py OUT_DIR [--commit=HASH]

Per step run_cuda.sh planned (plan.txt) and ran (steps.tsv): passed, failed (its exit status)
or missing (it never finished). Per test binary: tests run, failed, skipped
(HETPASS_REQUIRE_CUDA=1 makes a skip a failure). Per model and device: sets passed, whether the
device counters matched the copy ledger (hetpass's own comparison: ledger_agrees), median
latency, compile + load time, steady-state device allocations, the copy counters, and on cuda
CUPTI's memcpy records of the last run against the counters, calls and bytes of h2d, d2h and
d2d; the same for maskrcnn_tiny on cuda with both baselines' masks.

A check reads "agrees", "DIFFERS" or "not measured" (a field the JSON lacks, e.g. CUPTI's bytes
from a binary older than them): "not measured" is never counted as agreement, so all_passed is
true only when every planned step passed and every check of every row (models and baselines)
was measured and agreed.

Writes OUT_DIR/cuda_report.json and OUT_DIR/cuda_report_<gpu>_<date>_<commit>.md (the name
docs/gpu/ keeps), plus the same markdown as OUT_DIR/cuda_report.md (a fixed name for scripts);
exits 0 only when all passed. The commit: --commit, else $HETPASS_COMMIT, else the commit= line
of OUT_DIR/environment.txt (run_cuda.sh writes it), else "unknown".
"""
import argparse
import datetime
import glob
import json
import os
import re
import sys

AGREES, DIFFERS, NOT_MEASURED = "agrees", "DIFFERS", "not measured"
DIRECTIONS = ("h2d", "d2h", "d2d")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        err = path[:-5] + ".err" if path.endswith(".json") else None
        text = ""
        if err and os.path.exists(err):
            with open(err, errors="replace") as f:
                text = f.read().strip()[-600:]
        return {"error": f"{os.path.basename(path)}: {e}", "stderr": text}


def median(times):
    if isinstance(times, dict):
        for key in ("median", "median_us", "warm_median"):
            if key in times:
                return times[key]
    return None


def number(v):
    # JSON booleans are ints to Python: a true where a count belongs is not a count.
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def compare(what, a, b, a_name, b_name):
    """One check: a field of two sources, "not measured" where either lacks it."""
    a, b = number(a), number(b)
    status = NOT_MEASURED if a is None or b is None else (AGREES if a == b else DIFFERS)
    return {"what": what, a_name: a, b_name: b, "status": status}


def issued(counters, d):
    """The counters' calls of direction d that reached CUDA: copies of zero bytes count as calls
    (the ledger promises them) but make no CUDA call, so CUPTI records none (`<d>_empty`, where
    the JSON has it; an older hetpass's counters lack it and compare as they are)."""
    calls, empty = number(counters.get(f"{d}_calls")), number(counters.get(f"{d}_empty"))
    return calls if calls is None or empty is None else calls - empty


def cupti_checks(cupti, counters):
    """CUPTI's memcpy records of the last run against the device counters of that run: calls
    (less the counters' copies of zero bytes, which make no CUDA call) and bytes of each
    direction, and no record of a kind the counters have no direction for (CUPTI's "other":
    arrays, peer, host-to-host), which would be a copy the counters missed."""
    cupti = cupti if isinstance(cupti, dict) else {}
    checks = []
    for d in DIRECTIONS:
        checks.append(compare(f"{d} calls", cupti.get(d), issued(counters, d), "cupti", "counters"))
        checks.append(compare(f"{d} bytes", cupti.get(f"{d}_bytes"), counters.get(f"{d}_bytes"), "cupti", "counters"))
    checks.append(compare("other calls", cupti.get("other"), 0, "cupti", "counters"))
    return checks


def cupti_problems(checks):
    """What keeps CUPTI = counters from agreeing: each difference, and one line for the fields
    that were not measured."""
    problems = [f"CUPTI {c['what']} DIFFERS: CUPTI {c['cupti']}, counters {c['counters']}"
                for c in checks if c["status"] == DIFFERS]
    missing = [c["what"] for c in checks if c["status"] == NOT_MEASURED]
    if missing:
        problems.append(f"CUPTI = counters not measured for {', '.join(missing)} (not in the run's JSON)")
    return problems


def verdict(checks):
    """The worst status of some checks: a difference outweighs what was not measured."""
    statuses = {c["status"] for c in checks}
    return DIFFERS if DIFFERS in statuses else NOT_MEASURED if NOT_MEASURED in statuses else AGREES


def ledger_check(flags):
    """hetpass's ledger = counters verdicts (True/False, None where a JSON lacks one)."""
    if not flags or any(f is None for f in flags):
        return NOT_MEASURED
    return AGREES if all(f is True for f in flags) else DIFFERS


def read_steps(out):
    """The steps run_cuda.sh planned, in order, with each one's exit status (None: it never
    finished); None when the folder has no plan.txt (a run_cuda.sh older than it)."""
    plan_path = os.path.join(out, "plan.txt")
    if not os.path.exists(plan_path):
        return None
    with open(plan_path) as f:
        planned = [line.rstrip("\n") for line in f if line.strip()]
    rcs = {}
    steps_path = os.path.join(out, "steps.tsv")
    if os.path.exists(steps_path):
        with open(steps_path) as f:
            for line in f:
                name, _, rc = line.rstrip("\n").rpartition("\t")
                if name:
                    rcs[name] = int(rc) if rc.strip().lstrip("-").isdigit() else rc
    steps = []
    for name in planned:
        rc = rcs.get(name)
        status = ("missing (did not finish)" if rc is None else "passed" if rc == 0
                  else "not run: time budget" if rc == "budget" else f"failed (exit {rc})")
        steps.append({"step": name, "rc": rc, "status": status})
    for name, rc in rcs.items():
        if name not in planned:
            steps.append({"step": name, "rc": rc, "status": "not in the plan" if rc == 0 else f"failed (exit {rc})"})
    return steps


def gpu_label(gpu):
    """"NVIDIA H200, 580.159.04, 143771 MiB" -> "h200": the words of the name up to the first
    with a digit, for the report's file name."""
    name = gpu.splitlines()[0].split(",")[0] if gpu else ""
    words = [w for w in name.lower().split() if w not in ("nvidia", "geforce", "tesla", "quadro")]
    label = ""
    for w in words:
        label += w.split("-")[0]
        if re.search(r"\d", w):
            break
    return re.sub(r"[^a-z0-9]", "", label) or "gpu"


def find_commit(arg, environment):
    for c in (arg, os.environ.get("HETPASS_COMMIT")):
        if c:
            return c.strip()
    m = re.search(r"^commit=(\S+)", environment, re.M)
    return m.group(1) if m else "unknown"


def cell(checks):
    """A table cell for CUPTI = counters: "yes", or calls' and bytes' verdicts apart."""
    if not checks:
        return "n/a"
    calls = verdict([c for c in checks if c["what"].endswith("calls")])
    nbytes = verdict([c for c in checks if c["what"].endswith("bytes")])
    word = {AGREES: "yes", DIFFERS: "NO", NOT_MEASURED: NOT_MEASURED}
    return "yes" if calls == nbytes == AGREES else f"calls {word[calls]}, bytes {word[nbytes]}"


def triple(values, keys):
    return "/".join("?" if number(values.get(k)) is None else str(values[k]) for k in keys)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--commit", default="")
    args = parser.parse_args(argv)
    out = args.out
    if not os.path.isdir(out):
        print(f"cuda_report.py: {out} is not a folder (run_cuda.sh's OUT_DIR)", file=sys.stderr)
        return 2

    report = {"gpu": "", "environment": "", "tests": {}, "models": {}, "baselines": {}}
    for name in ("gpu.txt", "environment.txt"):
        p = os.path.join(out, name)
        if os.path.exists(p):
            with open(p, errors="replace") as f:
                report[name[:-4]] = f.read().strip()
    commit = re.sub(r"[^0-9A-Za-z._-]", "", find_commit(args.commit, report["environment"])) or "unknown"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    report["commit"], report["date"] = commit, date
    failures = []  # why all_passed is false, one line each

    # Which cuBLASLt / cuDNN / NVRTC files the processes loaded (dlinfo): the tests print
    # "cuBLASLt: <path>", "cuDNN: <path>" and "NVRTC: <path>" into their logs.
    loaded = {}
    for path in sorted(glob.glob(os.path.join(out, "hetpass_*_tests.log"))):
        with open(path, errors="replace") as f:
            for line in f:
                for lib in ("cuBLASLt", "cuDNN", "NVRTC"):
                    if line.startswith(lib + ": ") and lib not in loaded:
                        loaded[lib] = line[len(lib) + 2:].strip()
    report["loaded"] = loaded

    # The steps and what they should have written. Without a plan (an older run_cuda.sh) the
    # files found stand in for it, and the report cannot tell a missing step: it fails.
    steps = read_steps(out)
    report["steps"] = steps
    step_status = {s["step"]: s["status"] for s in steps or []}
    if steps is None:
        failures.append("plan.txt is missing: which steps were meant to run is unknown")
        names = [os.path.basename(p)[:-5] for p in sorted(glob.glob(os.path.join(out, "hetpass_*_tests.json")))]
        names += [f"test-onnx {b[5:-5].rsplit('_', 1)[0]} {b[5:-5].rsplit('_', 1)[1]}"
                  for b in map(os.path.basename, sorted(glob.glob(os.path.join(out, "test_*_*.json"))))]
        names += [f"run maskrcnn_tiny cuda baseline {os.path.basename(p)[len('run_maskrcnn_tiny_cuda_'):-5]}"
                  for p in sorted(glob.glob(os.path.join(out, "run_maskrcnn_tiny_cuda_*.json")))]
    else:
        names = [s["step"] for s in steps]
        for s in steps:
            if s["status"] != "passed" and s["status"] != "not in the plan":
                failures.append(f"step {s['step']}: {s['status']}")
    test_binaries = [n for n in names if re.fullmatch(r"hetpass_\w+_tests", n)]
    rows = []  # (model, device), in plan order, from test-onnx or run steps
    baselines = []
    for n in names:
        w = n.split()
        if len(w) == 3 and w[0] in ("test-onnx", "run") and (w[1], w[2]) not in rows:
            rows.append((w[1], w[2]))
        elif len(w) == 5 and w[0] == "run" and w[3] == "baseline":
            baselines.append((w[1], w[2], w[4]))

    for name in test_binaries:
        d = load(os.path.join(out, f"{name}.json"))
        failed, skipped, failures_of = 0, 0, []
        for suite in d.get("testsuites", []):
            for t in suite.get("testsuite", []):
                if t.get("failures"):
                    failed += 1
                    msg = t["failures"][0].get("failure", "")[:400]
                    failures_of.append(f"{suite['name']}.{t['name']}: {msg}")
                if t.get("result") == "SKIPPED":
                    skipped += 1
        report["tests"][name] = {"tests": d.get("tests"), "failed": failed, "skipped": skipped,
                                 "failures": failures_of[:20], "error": d.get("error")}
        if "error" in d:
            failures.append(f"{name}: {d['error']}")
        elif failed:
            failures.append(f"{name}: {failed} tests failed")

    for model, dev in rows:
        # A row with only a run (a realistic model's second set: the first row's test-onnx
        # checked every set) has no sets of its own to pass.
        tested = steps is None or f"test-onnx {model} {dev}" in names
        t = load(os.path.join(out, f"test_{model}_{dev}.json")) if tested else {}
        r = load(os.path.join(out, f"run_{model}_{dev}.json"))
        sets = t.get("sets", [])
        c = r.get("counters") if isinstance(r.get("counters"), dict) else {}
        entry = {
            "passed": t.get("passed"), "total": t.get("total"),
            "ledger_agrees": all(s.get("ledger_agrees") is True for s in sets) if sets else None,
            "max_abs_err": max((s.get("max_abs_err") or 0) for s in sets) if sets else None,
            "messages": [s.get("message") for s in sets if s.get("message")][:3],
            "median_us": median(r.get("times_us")),
            "cold_us": (r.get("times_us") or {}).get("cold"),
            "cupti": r.get("cupti"),
            "cupti_error": r.get("cupti_error"),
            "compile_ms": r.get("compile_ms"),
            "steady_state_device_allocs": r.get("steady_state_device_allocs"),
            "counters": r.get("counters"),
            "run_ledger_agrees": r.get("ledger_agrees"),
            "run_ledger_exact": r.get("ledger_exact"),
            "run_ledger_summary": r.get("ledger_summary"),
            "error": t.get("error") or r.get("error"),
            "stderr": (t.get("stderr") or r.get("stderr") or "")[-600:],
            "steps": {k: step_status.get(k) for k in (f"test-onnx {model} {dev}", f"run {model} {dev}")},
        }
        problems = []
        if entry["error"]:
            problems.append(entry["error"])
        if tested and (not t.get("total") or t.get("passed") != t.get("total")):
            problems.append(f"test-onnx: {t.get('passed')}/{t.get('total')} sets passed")
        # The ledger against the counters: hetpass compares them field by field (counts, bytes of
        # copies the IR sizes, syncs), in every test-onnx set and in the timed run.
        entry["ledger_check"] = ledger_check([s.get("ledger_agrees") for s in sets] + [r.get("ledger_agrees")])
        if entry["ledger_check"] != AGREES:
            problems.append(f"ledger = counters: {entry['ledger_check']}"
                            + (f" ({r['ledger_summary']})" if r.get("ledger_summary") else ""))
        # CUPTI, the driver's view, against the counters: on cuda only (the other devices make no
        # CUDA memcpy). Together with the ledger check above, CUPTI = counters = ledger.
        if dev == "cuda":
            entry["cupti_checks"] = cupti_checks(r.get("cupti"), c)
            v = verdict(entry["cupti_checks"])
            entry["cupti_agrees"] = None if v == NOT_MEASURED else v == AGREES
            problems += cupti_problems(entry["cupti_checks"])
            if entry["cupti_error"]:
                problems.append(f"CUPTI unavailable: {entry['cupti_error']}")
        else:
            entry["cupti_checks"], entry["cupti_agrees"] = [], None
        entry["problems"] = problems
        report["models"].setdefault(model, {})[dev] = entry
        failures += [f"{model} on {dev}: {p}" for p in problems]

    for model, dev, b in baselines:
        r = load(os.path.join(out, f"run_{model}_{dev}_{b}.json"))
        c = r.get("counters") if isinstance(r.get("counters"), dict) else {}
        entry = {"model": model, "device": dev, "median_us": median(r.get("times_us")), "counters": r.get("counters"),
                 "ledger_agrees": r.get("ledger_agrees"), "ledger_exact": r.get("ledger_exact"),
                 "ledger_summary": r.get("ledger_summary"), "cupti": r.get("cupti"),
                 "cupti_error": r.get("cupti_error"), "error": r.get("error"),
                 "step": step_status.get(f"run {model} {dev} baseline {b}")}
        problems = [r["error"]] if r.get("error") else []
        entry["ledger_check"] = ledger_check([r.get("ledger_agrees")])
        if entry["ledger_check"] != AGREES:
            problems.append(f"ledger = counters: {entry['ledger_check']}"
                            + (f" ({r['ledger_summary']})" if r.get("ledger_summary") else ""))
        entry["cupti_checks"] = cupti_checks(r.get("cupti"), c) if dev == "cuda" else []
        problems += cupti_problems(entry["cupti_checks"])
        if entry["cupti_error"]:
            problems.append(f"CUPTI unavailable: {entry['cupti_error']}")
        v = verdict(entry["cupti_checks"]) if entry["cupti_checks"] else NOT_MEASURED
        entry["cupti_agrees"] = None if v == NOT_MEASURED else v == AGREES
        entry["problems"] = problems
        report["baselines"][b] = entry
        failures += [f"{model} on {dev} with {b} masks: {p}" for p in problems]

    ok = not failures
    report["failures"] = failures
    report["all_passed"] = ok
    md_name = f"cuda_report_{gpu_label(report['gpu'])}_{date}_{commit}.md"
    report["report_md"] = md_name
    with open(os.path.join(out, "cuda_report.json"), "w") as f:
        json.dump(report, f, indent=1)

    dirty = commit.endswith("-dirty")
    md = ["# hetpass on a GPU (tools/gpu/run_cuda.sh)", "",
          f"Commit measured: `{commit}`"
          + (" (built from a working tree with changes that commit does not have)" if dirty else "")
          + (" (the bundle did not record it)" if commit == "unknown" else "") + f"; report written {date} (UTC).", "",
          f"GPU: {report['gpu']}", "", "```", report["environment"], "```", "",
          "Libraries loaded: " + (", ".join(f"{k} `{v}`" for k, v in sorted(loaded.items())) or "none reported"), "",
          "## Steps", ""]
    if steps is None:
        md.append("No plan.txt: the steps run_cuda.sh meant to run are unknown, so a missing one cannot be told.")
    else:
        passed = sum(s["status"] == "passed" for s in steps)
        md.append(f"{passed} of {len(steps)} steps passed.")
        md += [f"- {s['step']}: {s['status']}" for s in steps if s["status"] != "passed"]
    md += ["", "## Tests (HETPASS_REQUIRE_CUDA=1)", "", "| binary | tests | failed | skipped |", "|---|---|---|---|"]
    for n, t in report["tests"].items():
        md.append(f"| {n} | {t['tests']} | {t['failed']} | {t['skipped']} |")
    for n, t in report["tests"].items():
        if t["error"]:
            md.append(f"- {n}: {t['error']}")
        for f in t["failures"]:
            md.append(f"- {n}: {f.splitlines()[0] if f else ''}")
    calls = tuple(f"{d}_calls" for d in DIRECTIONS)
    nbytes = tuple(f"{d}_bytes" for d in DIRECTIONS)
    md += ["", "## Models", "",
           "Counters and CUPTI: h2d/d2h/d2d of the last timed run; CUPTI only on cuda (`?`: not in the "
           "JSON, so not measured). The ledger column is hetpass's comparison of the ledger with the "
           "counters in every test-onnx set and the timed run.", "",
           "| model | device | sets passed | ledger = counters | counters calls | counters bytes | CUPTI calls | "
           "CUPTI bytes | CUPTI = counters | syncs | launches | median µs | first run µs | compile+load ms | "
           "steady allocs |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    word = {AGREES: "yes", DIFFERS: "NO", NOT_MEASURED: NOT_MEASURED}
    for m, devs in report["models"].items():
        for dev, e in devs.items():
            c = e.get("counters") or {}
            cu = e.get("cupti") if isinstance(e.get("cupti"), dict) else None
            if dev != "cuda":
                cu_calls = cu_bytes = "n/a"
            elif cu is None:
                cu_calls = cu_bytes = NOT_MEASURED
            else:
                cu_calls, cu_bytes = triple(cu, DIRECTIONS), triple(cu, nbytes)
            sets_cell = f"{e['passed']}/{e['total']}" if e["total"] is not None else "run only"
            md.append(f"| {m} | {dev} | {sets_cell} | {word[e['ledger_check']]} | {triple(c, calls)} | "
                      f"{triple(c, nbytes)} | {cu_calls} | {cu_bytes} | {cell(e['cupti_checks'])} | {c.get('syncs')} | "
                      f"{c.get('launches')} | {e['median_us']} | {e['cold_us']} | {e['compile_ms']} | "
                      f"{e['steady_state_device_allocs']} |")
    for m, devs in report["models"].items():
        for dev, e in devs.items():
            for p in e["problems"]:
                md.append(f"- {m} on {dev}: {p}")
            if e.get("run_ledger_agrees") is True and e.get("run_ledger_exact") is False:
                md.append(f"- {m} on {dev}: {e.get('run_ledger_summary')} (the bytes of copies sized only at run "
                          "time have no promise: CUPTI's bytes are their check)")
    md += ["", "## maskrcnn_tiny on cuda: our masks vs baselines", "",
           "| masks | median µs | counters calls | counters bytes | syncs | ledger = counters | CUPTI = counters |",
           "|---|---|---|---|---|---|---|"]
    ours = report["models"].get("maskrcnn_tiny", {}).get("cuda")
    table = [("ours", ours)] if ours else []
    table += [(b, v) for b, v in report["baselines"].items()]
    for name, e in table:
        c = e.get("counters") or {}
        md.append(f"| {name} | {e.get('median_us')} | {triple(c, calls)} | {triple(c, nbytes)} | {c.get('syncs')} | "
                  f"{word[e['ledger_check']]} | {cell(e['cupti_checks'])} |")
    for b, e in report["baselines"].items():
        for p in e["problems"]:
            md.append(f"- {b}: {p}")
    md += ["", f"all passed: {ok}"]
    if not ok:
        md += ["", "Why not:"] + [f"- {f}" for f in failures[:50]]
        if len(failures) > 50:
            md.append(f"- ... and {len(failures) - 50} more (cuda_report.json lists them all)")
    md.append("")
    text = "\n".join(md)
    for name in (md_name, "cuda_report.md"):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    print(text)
    print(f"cuda_report.py: wrote {os.path.join(out, md_name)} (and cuda_report.md, cuda_report.json)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
