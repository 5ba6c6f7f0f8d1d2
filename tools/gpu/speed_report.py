#!/usr/bin/env python3
"""Summarises the speed side of a run_cuda.sh output folder into speed.json and speed.md.

usage: speed_report.py OUT_DIR [--commit=HASH]

Reads, per model, hetpass's `run` JSONs on cuda and cpu (run_<model>_<device>.json: median and
first-run latency, launches, syncs, and on cuda CUPTI's kernel records of the last run: how many,
their GPU time, the span from the first record to the last), the `--profile` run on cuda
(profile_<model>_cuda.json: the host's time per VM instruction, summed by opcode and per
inference), and the peers' timings (peers.json from tools/gpu/peers.py, realistic.json from
tools/gpu/realistic.py: PyTorch eager, torch.compile, torch.compile with CUDA graphs).

Derived columns, each from one run of one process:
  cuda/eager, cuda/compile   hetpass cuda's median over the peer's median (below 1: hetpass faster);
  GPU busy                   CUPTI kernel + memcpy GPU time of the last run over its median latency
                             (low: the host, not the GPU, bounds the run);
  host µs/launch             the profile run's host time in invoke_kernel instructions per call (a
                             launch's cost to the host: argument set-up, plan look-ups, the launch).
                             From a hetpass older than its profile's "runs after the first" (the
                             JSON's profile_runs key missing), the first run's set-up is included
                             and the column is marked with *.
A missing input reads "-"; a peer's error is listed under the table. Nothing here is a check:
cuda_report.py holds the pass/fail verdicts.
"""
import argparse
import glob
import json
import os
import re
import sys

MODES = ("eager", "compile", "compile_graphs")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}"


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None


def graphs_cell(s):
    """Graph launches of the last run and the kernels they ran: "45 (335)"; "-" for a run made
    before device graphs existed or without them."""
    if s.get("graph_launches") is None:
        return "-"
    return f"{s['graph_launches']} ({s.get('graph_kernels', 0)})"


def run_summary(out, model, dev):
    r = load(os.path.join(out, f"run_{model}_{dev}.json"))
    if not isinstance(r, dict) or "times_us" not in r:
        return None
    c = r.get("counters") or {}
    s = {"median_us": r["times_us"].get("median"), "first_us": r["times_us"].get("cold"),
         "launches": c.get("launches"), "syncs": c.get("syncs"), "compile_ms": r.get("compile_ms"),
         # Device graphs (docs/runtime.md): absent from runs made before they existed.
         "graph_launches": c.get("graph_launches"), "graph_kernels": c.get("graph_kernels")}
    cu = r.get("cupti")
    if isinstance(cu, dict) and "kernels" in cu:
        s.update({"kernels": cu.get("kernels"), "kernel_us": cu.get("kernel_us"), "memcpy_us": cu.get("memcpy_us"),
                  "span_us": cu.get("span_us"), "top_kernels": cu.get("top_kernels", []),
                  "kernel_error": cu.get("kernel_error")})
        busy = (cu.get("kernel_us") or 0) + (cu.get("memcpy_us") or 0)
        s["gpu_busy"] = ratio(busy, s["median_us"])
    return s


def profile_summary(out, model, suffix=""):
    """The --profile run on cuda (suffix "_nographs": the same with --device_graphs=false)."""
    p = load(os.path.join(out, f"profile_{model}_cuda{suffix}.json"))
    if not isinstance(p, dict) or not isinstance(p.get("profile"), list):
        return None
    entries = p["profile"]
    # pc 0 of the entry function is its first argument check: once per inference.
    runs = max((e["calls"] for e in entries if e.get("pc") == 0 and e.get("function") == p.get("function", "main")),
               default=0)
    by_op = {}
    for e in entries:
        o = by_op.setdefault(e["opcode"], {"calls": 0, "total_us": 0.0})
        o["calls"] += e["calls"]
        o["total_us"] += e["total_us"]
    total = sum(o["total_us"] for o in by_op.values())
    inv = by_op.get("invoke_kernel", {"calls": 0, "total_us": 0.0})
    return {"runs": runs, "first_run_included": "profile_runs" not in p,
            "host_us_per_inference": total / runs if runs else None,
            "host_us_per_launch": inv["total_us"] / inv["calls"] if inv["calls"] else None,
            "median_us": (p.get("times_us") or {}).get("median"),
            "by_opcode": {k: {"calls_per_inference": v["calls"] / runs if runs else None,
                              "us_per_inference": v["total_us"] / runs if runs else None}
                          for k, v in sorted(by_op.items(), key=lambda kv: -kv[1]["total_us"])},
            "top_instructions": sorted(entries, key=lambda e: -e["total_us"])[:5]}


def peer(peers, model, mode):
    e = ((peers or {}).get("models") or {}).get(model, {}).get(mode)
    return e if isinstance(e, dict) else None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--commit", default="")
    args = ap.parse_args(argv)
    out = args.out
    peers = load(os.path.join(out, "peers.json")) or {}
    realistic = load(os.path.join(out, "realistic.json")) or {}
    gpu = ""
    if os.path.exists(os.path.join(out, "gpu.txt")):
        gpu = open(os.path.join(out, "gpu.txt")).read().strip()

    models = sorted({re.match(r"run_(.+)_(cuda|cpu|sim)\.json$", os.path.basename(p)).group(1)
                     for p in glob.glob(os.path.join(out, "run_*_*.json"))
                     if re.match(r"run_(.+)_(cuda|cpu|sim)\.json$", os.path.basename(p))})
    rows = {}
    for m in models:
        cuda, cpu = run_summary(out, m, "cuda"), run_summary(out, m, "cpu")
        if cuda is None and cpu is None:
            continue
        # The realistic models' peers are keyed "NAME set K"; their set-1 rows are NAME_set1.
        base, k = (m[:-5], 1) if m.endswith("_set1") else (m, 0)
        src = peers if m in (peers.get("models") or {}) else realistic
        key = m if src is peers else f"{base} set {k}"
        row = {"cuda": cuda, "cpu": cpu, "profile": profile_summary(out, m),
               "profile_nographs": profile_summary(out, m, "_nographs"),
               "peers": {mode: peer(src, key, mode) for mode in MODES}}
        cm = (cuda or {}).get("median_us")
        for mode in MODES:
            p = row["peers"][mode] or {}
            row[f"cuda_over_{mode}"] = ratio(cm, p.get("median_us"))
        rows[m] = row

    # Host µs per call by kernel provider, over every profile's invoke_kernel rows.
    providers, providers_first = {}, False
    for path in sorted(glob.glob(os.path.join(out, "profile_*_cuda.json"))):
        p = load(path)
        if not isinstance(p, dict) or not isinstance(p.get("profile"), list):
            continue
        providers_first |= "profile_runs" not in p
        for e in p["profile"]:
            if e.get("opcode") != "invoke_kernel" or not e.get("calls"):
                continue
            m = re.search(r"\[([a-z.]+)", e.get("what", ""))
            providers.setdefault(m.group(1) if m else "?", []).append(e["total_us"] / e["calls"])
    report = {"commit": args.commit, "gpu": gpu, "peers_settings": {k: peers.get(k) for k in
                                                                    ("torch", "cuda", "settings", "compile_settings",
                                                                     "repeat")},
              "models": rows, "host_us_per_call_by_provider": providers}
    with open(os.path.join(out, "speed.json"), "w") as f:
        json.dump(report, f, indent=1)

    md = ["# hetpass cuda against PyTorch on the same GPU (tools/gpu/speed_report.py)", "",
          f"Commit `{args.commit or 'unknown'}`; GPU: {gpu or 'unknown'}.", "",
          f"PyTorch {peers.get('torch', '?')} (CUDA {peers.get('cuda', '?')}): {peers.get('settings', '-')}; "
          f"{peers.get('compile_settings', '-')}. hetpass: `hetpass run --repeat N` median after the first run "
          "(inputs from host memory, outputs back to it, like the peers); cpu is hetpass on this machine's CPU.", "",
          "| model | hetpass cuda µs | cuda, graphs off µs | hetpass cpu µs | eager µs | compile µs | compile+graphs µs | cuda/eager | "
          "cuda/compile | cuda/graphs | launches | graph launches (kernels) | syncs | GPU kernels | GPU busy | "
          "host µs/launch | eager vs ref |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for m, r in rows.items():
        cuda, cpu, prof = r["cuda"] or {}, r["cpu"] or {}, r["profile"] or {}
        pe = {mode: (r["peers"][mode] or {}) for mode in MODES}
        diff = pe["eager"].get("max_abs_diff_vs_reference")
        off = r["profile_nographs"] or {}
        md.append(f"| {m} | {fmt(cuda.get('median_us'))} | {fmt(off.get('median_us'))} | {fmt(cpu.get('median_us'))} | "
                  f"{fmt(pe['eager'].get('median_us'))} | {fmt(pe['compile'].get('median_us'))} | "
                  f"{fmt(pe['compile_graphs'].get('median_us'))} | {fmt(r['cuda_over_eager'], 2)} | "
                  f"{fmt(r['cuda_over_compile'], 2)} | {fmt(r['cuda_over_compile_graphs'], 2)} | "
                  f"{fmt(cuda.get('launches'), 0)} | {graphs_cell(cuda)} | {fmt(cuda.get('syncs'), 0)} | "
                  f"{fmt(cuda.get('kernels'), 0)} | "
                  f"{fmt(cuda.get('gpu_busy'), 2)} | {fmt(prof.get('host_us_per_launch'), 2)}"
                  f"{'*' if prof.get('first_run_included') else ''} | "
                  f"{fmt(diff, 6) if isinstance(diff, float) else fmt(diff)} |")
        for mode in MODES:
            if pe[mode].get("error"):
                notes.append(f"- {m} {mode}: {pe[mode]['error']}")
        if cuda.get("kernel_error"):
            notes.append(f"- {m}: CUPTI kernels: {cuda['kernel_error']}")
    if any((r["profile"] or {}).get("first_run_included") for r in rows.values()):
        notes.insert(0, "- host µs/launch marked *: the profile of this hetpass sums every run, the first "
                        "(one-time set-up) included, so it is not a warm call's cost.")
    md += [""] + notes
    md += ["", "## First runs (µs; torch.compile's includes its compilation)", "",
           "| model | hetpass cuda first | hetpass cuda compile+load ms | eager first | compile first | graphs first |",
           "|---|---|---|---|---|---|"]
    for m, r in rows.items():
        cuda = r["cuda"] or {}
        pe = {mode: (r["peers"][mode] or {}) for mode in MODES}
        md.append(f"| {m} | {fmt(cuda.get('first_us'))} | {fmt(cuda.get('compile_ms'))} | "
                  f"{fmt(pe['eager'].get('first_us'))} | {fmt(pe['compile'].get('first_us'))} | "
                  f"{fmt(pe['compile_graphs'].get('first_us'))} |")
    md += ["", "## Host time per inference on cuda, by VM opcode (the --profile run)", ""]
    for m, r in rows.items():
        prof = r["profile"]
        if not prof or not prof.get("runs"):
            continue
        ops = ", ".join(f"{k} {fmt(v['us_per_inference'])} µs ({fmt(v['calls_per_inference'], 0)}x)"
                        for k, v in list(prof["by_opcode"].items())[:6])
        md.append(f"- {m}: {fmt(prof['host_us_per_inference'])} µs of host time in instructions per inference"
                  f"{' (first run included)' if prof.get('first_run_included') else ''} "
                  f"(median latency of that run {fmt(prof.get('median_us'))} µs): {ops}")
    md += ["", "## Host µs per kernel call on cuda, by provider (every --profile run)", "",
           "Each invoke_kernel row of every profile gives its mean host time per call; the table takes, per "
           "provider (the kernel description's first word: cudnn, cublaslt, nvptx, nvrtc; jit, onednn, native "
           "and reference are host kernels), the smallest, the quartile and the median of those means."
           + (" This run's profiles include the first run (one-time set-up), so these are upper bounds."
              if providers_first else ""), "",
           "| provider | kernel rows | min µs | p25 µs | median µs |", "|---|---|---|---|---|"]
    for name, means in sorted(providers.items()):
        means.sort()
        md.append(f"| {name} | {len(means)} | {fmt(means[0])} | {fmt(means[len(means) // 4])} | "
                  f"{fmt(means[len(means) // 2])} |")
    md += ["", "## Longest GPU kernels of the last cuda run (CUPTI)", ""]
    for m, r in rows.items():
        cuda = r["cuda"] or {}
        if not cuda.get("top_kernels"):
            continue
        top = "; ".join(f"{k['name'][:60]} {fmt(k['us'])} µs x{k['calls']}" for k in cuda["top_kernels"][:4])
        md.append(f"- {m} ({fmt(cuda.get('kernels'), 0)} kernels, {fmt(cuda.get('kernel_us'))} µs GPU, "
                  f"span {fmt(cuda.get('span_us'))} µs): {top}")
    md.append("")
    with open(os.path.join(out, "speed.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
