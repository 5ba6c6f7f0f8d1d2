#!/usr/bin/env python3
"""Summarises a run_cuda.sh output folder into cuda_report.json and cuda_report.md.

usage: cuda_report.py OUT_DIR

Per test binary: tests run, failed, skipped (HETPASS_REQUIRE_CUDA=1 makes a skip a failure).
Per model and device: sets passed, whether the device counters matched the copy ledger,
median latency, compile + load time, steady-state device allocations, the copy counters; and
maskrcnn_tiny on cuda with our masks and both baselines.
"""
import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        err = path[:-5] + ".err" if path.endswith(".json") else None
        text = ""
        if err and os.path.exists(err):
            with open(err) as f:
                text = f.read().strip()[-600:]
        return {"error": f"{os.path.basename(path)}: {e}", "stderr": text}


def median(times):
    if isinstance(times, dict):
        for key in ("median", "median_us", "warm_median"):
            if key in times:
                return times[key]
    return None


def main(out):
    report = {"gpu": "", "environment": "", "tests": {}, "models": {}, "baselines": {}}
    for name in ("gpu.txt", "environment.txt"):
        p = os.path.join(out, name)
        if os.path.exists(p):
            with open(p) as f:
                report[name[:-4]] = f.read().strip()
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
    ok = True
    for path in sorted(glob.glob(os.path.join(out, "hetpass_*_tests.json"))):
        d = load(path)
        name = os.path.basename(path)[:-5]
        failed, skipped, failures = 0, 0, []
        for suite in d.get("testsuites", []):
            for t in suite.get("testsuite", []):
                if t.get("failures"):
                    failed += 1
                    msg = t["failures"][0].get("failure", "")[:400]
                    failures.append(f"{suite['name']}.{t['name']}: {msg}")
                if t.get("result") == "SKIPPED":
                    skipped += 1
        report["tests"][name] = {"tests": d.get("tests"), "failed": failed, "skipped": skipped,
                                 "failures": failures[:20], "error": d.get("error")}
        ok &= failed == 0 and "error" not in d
    for path in sorted(glob.glob(os.path.join(out, "test_*_*.json"))):
        base = os.path.basename(path)[5:-5]
        model, dev = base.rsplit("_", 1)
        t = load(path)
        r = load(os.path.join(out, f"run_{model}_{dev}.json"))
        sets = t.get("sets", [])
        entry = {
            "passed": t.get("passed"), "total": t.get("total"),
            "ledger_agrees": all(s.get("ledger_agrees") for s in sets) if sets else None,
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
            "run_ledger_summary": r.get("ledger_summary"),
            "error": t.get("error") or r.get("error"),
            "stderr": (t.get("stderr") or r.get("stderr") or "")[-600:],
        }
        # CUPTI's memcpy records of the last run against the device's counters of that run:
        # host<->device directions must agree exactly (device-to-device records also include the
        # VM's loop stacking, a copy inside a kernel that the counters count as a launch).
        cupti, c = r.get("cupti"), r.get("counters") or {}
        entry["cupti_agrees"] = None if cupti is None else (
            cupti.get("h2d") == c.get("h2d_calls") and cupti.get("d2h") == c.get("d2h_calls"))
        report["models"].setdefault(model, {})[dev] = entry
        ok &= bool(t.get("total")) and t.get("passed") == t.get("total")
        ok &= entry["cupti_agrees"] is not False
    for path in sorted(glob.glob(os.path.join(out, "run_maskrcnn_tiny_cuda_*.json"))):
        b = os.path.basename(path)[len("run_maskrcnn_tiny_cuda_"):-5]
        r = load(path)
        report["baselines"][b] = {"median_us": median(r.get("times_us")), "counters": r.get("counters"),
                                  "ledger_agrees": r.get("ledger_agrees"), "error": r.get("error")}
    report["all_passed"] = ok
    with open(os.path.join(out, "cuda_report.json"), "w") as f:
        json.dump(report, f, indent=1)

    md = ["# hetpass on a GPU (tools/gpu/run_cuda.sh)", "", f"GPU: {report['gpu']}", "",
          "```", report["environment"], "```", "",
          "Libraries loaded: " + (", ".join(f"{k} `{v}`" for k, v in sorted(loaded.items())) or "none reported"), "",
          "## Tests (HETPASS_REQUIRE_CUDA=1)", "", "| binary | tests | failed | skipped |", "|---|---|---|---|"]
    for n, t in report["tests"].items():
        md.append(f"| {n} | {t['tests']} | {t['failed']} | {t['skipped']} |")
    for n, t in report["tests"].items():
        for f in t["failures"]:
            md.append(f"- {n}: {f.splitlines()[0] if f else ''}")
    md += ["", "## Models", "",
           "| model | device | sets passed | ledger = counters | CUPTI h2d/d2h/d2d | CUPTI = counters | median µs | "
           "first run µs | compile+load ms | steady allocs | d2h | h2d | syncs | launches |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, devs in report["models"].items():
        for dev, e in devs.items():
            c = e.get("counters") or {}
            cu = e.get("cupti")
            cupti_text = f"{cu['h2d']}/{cu['d2h']}/{cu['d2d']}" if cu else ("n/a" if dev != "cuda" else "error")
            md.append(f"| {m} | {dev} | {e['passed']}/{e['total']} | {e['ledger_agrees']} | {cupti_text} | "
                      f"{'' if e['cupti_agrees'] is None else e['cupti_agrees']} | {e['median_us']} | {e['cold_us']} | "
                      f"{e['compile_ms']} | {e['steady_state_device_allocs']} | {c.get('d2h_calls')} | "
                      f"{c.get('h2d_calls')} | {c.get('syncs')} | {c.get('launches')} |")
    for m, devs in report["models"].items():
        for dev, e in devs.items():
            if e.get("cupti_error"):
                md.append(f"- {m} on {dev}: CUPTI unavailable: {e['cupti_error']}")
    md += ["", "## maskrcnn_tiny on cuda: our masks vs baselines", "", "| masks | median µs | d2h | syncs |", "|---|---|---|---|"]
    ours = report["models"].get("maskrcnn_tiny", {}).get("cuda", {})
    rows = [("ours", ours.get("median_us"), ours.get("counters") or {})]
    rows += [(b, v["median_us"], v["counters"] or {}) for b, v in report["baselines"].items()]
    for name, us, c in rows:
        md.append(f"| {name} | {us} | {c.get('d2h_calls')} | {c.get('syncs')} |")
    md += ["", f"all passed: {ok}", ""]
    with open(os.path.join(out, "cuda_report.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
