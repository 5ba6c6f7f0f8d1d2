#!/usr/bin/python3
"""Import: how long a real-sized ONNX model takes to become ready to run, and how much memory
that takes, against ONNX Runtime's session creation (issue 33's last acceptance point, the
measuring part). Two models a user would bring, exported here with random weights:

  resnet50   torchvision's ResNet-50 (eval), opset 17, dynamic batch; runs on 1x3x224x224
  bert6      a 6-layer BERT-base-width encoder, Hugging Face style (word, position and
             token-type embeddings, post-norm layers, additive attention mask, pooler): hidden
             768, 12 heads, FFN 3072, vocab 30522, 512 positions; opset 17, dynamic batch and
             sequence; runs on input_ids and attention_mask int64 [1, 128]

usage: /usr/bin/python3 bench/import/import_bench.py [--hetpass build/hetpass] [--ort-module DIR]
           [--work /tmp/hetpass_import_bench] [--models resnet50,bert6] [--repeat 3] [--cpu 1]
           [--kernel-cache cold|warm] [--reexport] [--json OUT]

Export: Debian's python3-torch 1.13.1 / python3-torchvision 0.14.1, torch.onnx.export (the
TorchScript exporter), do_constant_folding=True, torch.manual_seed(0), into --work; a file that
is already there is reused unless --reexport. The run inputs are written beside it as .npy
(seeded): the inputs have dynamic dims, which `--random-inputs` cannot fill, so each is given
with --input.

Per model, each side in --repeat fresh processes, pinned to one core (--cpu; compare.sh's
default), one after the other:
  hetpass    `hetpass run MODEL.onnx --device=cpu --random-inputs --json --input ...` with an
             empty kernel cache per process (HETPASS_KERNEL_CACHE_DIR; --kernel-cache=warm: one
             cache, filled by an unmeasured first process). From its JSON:
               import   compile_stages_ms.import: reading the file into the IR
               ready    the sum of compile_stages_ms (import, verify, pipeline, passes, ledger,
                        vm-compile, vm-load): everything before the first run, the time until the
                        model can run (JIT kernels still being generated in the background run on
                        reference kernels meanwhile: docs/runtime.md, tiered compilation)
  ORT        `node bench/import/ort_create.mjs MODEL.onnx`: one InferenceSession.create per
             process, graphOptimizationLevel 'all' (ORT_ENABLE_ALL), one intra-op thread, from
             the call to the resolved session. Like hetpass's ready time, it is a fresh process's
             first: both pay their one-time initialisation.
Times are the fastest of the --repeat processes; memory the highest.

Peak resident memory of a process (MB = 2^20 bytes here, the file's too): /usr/bin/time's
"Maximum resident set size" (the kernel's ru_maxrss; `time -v` in the progress lines). For
hetpass that figure alone is too low: hetpass resets the peak (/proc/self/clear_refs) at every
compile stage and before the runs, so that its JSON can say which stage used the memory, and
ru_maxrss keeps only the peak since the last reset. So hetpass's `RSS` is the highest of its
JSON's compile_stages_peak_rss_mb, its run_peak_rss_mb and time's figure: the whole process, the
one run of the model included; `ready RSS` is the compile stages' alone. ORT's is the node
process's, node and the binding included; `node --baseline` is a node process that only loads
onnxruntime-node, and `ORT net` is ORT's figure less that baseline.

Harness floor: as bench/compile_time.sh and bench/ort/compare.sh do, a one-Relu model
(libonnx-testdata's test_relu, --floor-model) is measured first on both sides; `cons` is the
ratio that credits ORT with the whole floor difference, ready / (ORT - max(0, ORT's floor -
ours)), never kinder to us than the raw one. The goals, as pass/fail columns:
  ready<=ORT   hetpass ready at most ORT's session creation, read on `cons` (the raw ratio where
               no floor was measured)
  RSS<=1.5x    hetpass's whole-process peak at most 1.5x the model file
`3-run RSS` is the peak of one more hetpass process that runs the model 3 times (--repeat=3,
the kernel cache as the others'): the memory of a process that keeps running it. It is higher
where kernels change tier after the first run: from its second run a Winograd-eligible 3x3
convolution (conv_kernel.cc) holds its weights in oneDNN's Winograd layout beside the first,
direct one (docs/runtime.md, "Released constants"). The goal column is read on `RSS`, the
process that runs the model once.
`net/file` is that peak less hetpass's own floor peak (the one-Relu process: libraries, LLVM's
code pages, one JIT kernel), over the file: what the model itself costs. It is shown beside the
goal, never instead of it; for a file of about 100 MB the floor alone is most of 1.5x.
A missed goal is a measurement, not an error: the script exits non-zero only when something
failed to export or run. Run it on an idle machine; on the 2-core development VM with a build
running, figures vary by tens of percent.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MB = float(1 << 20)
RSS_GOAL = 1.5  # hetpass's peak resident memory at most this many times the model file
STEADY_RUNS = 3  # the runs of the process whose peak is `3-run RSS`
FLOOR_MODEL = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"

BERT = dict(vocab=30522, hidden=768, layers=6, heads=12, ffn=3072, positions=512, types=2)
SEQ = 128


class Failure(Exception):
    """A step that did not complete: the row says so and the script exits 1 at the end."""


# ---- export ----------------------------------------------------------------------------------

def build_resnet50():
    import torchvision
    return torchvision.models.resnet50(weights=None)


def build_bert():
    """The zoo's bert_posemb (tools/models/export_zoo.py's BertPosEmb: Hugging Face style, position
    ids a registered buffer sliced to the sequence, token types, an additive attention mask,
    post-norm layers with exact GELU, a tanh pooler) at BERT-base width."""
    sys.path.insert(0, os.path.join(REPO, "tools", "models"))
    from export_zoo import BertPosEmb
    return BertPosEmb(vocab=BERT["vocab"], d=BERT["hidden"], layers=BERT["layers"],
                      heads=BERT["heads"], ffn=BERT["ffn"], max_pos=BERT["positions"],
                      types=BERT["types"])


def resnet50_inputs():
    rng = np.random.default_rng(0)
    return {"input": rng.standard_normal((1, 3, 224, 224), dtype=np.float32)}


def bert_inputs():
    rng = np.random.default_rng(0)
    return {"input_ids": rng.integers(0, BERT["vocab"], (1, SEQ), dtype=np.int64),
            "token_type_ids": np.zeros((1, SEQ), dtype=np.int64),
            "attention_mask": np.ones((1, SEQ), dtype=np.int64)}


# name -> (builder, inputs (name -> array, in the graph's order), output names, dynamic axes)
MODELS = {
    "resnet50": (build_resnet50, resnet50_inputs, ["logits"],
                 {"input": {0: "batch"}, "logits": {0: "batch"}}),
    "bert6": (build_bert, bert_inputs, ["sequence", "pooled"],
              {"input_ids": {0: "batch", 1: "seq"}, "token_type_ids": {0: "batch", 1: "seq"},
               "attention_mask": {0: "batch", 1: "seq"},
               "sequence": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}}),
}
OPSET = 17


def export(name, path):
    """torch.onnx.export of MODELS[name] to path (through a temporary name, so an interrupted
    export leaves no file that a later run would reuse)."""
    import torch
    build, make_inputs, out_names, axes = MODELS[name]
    torch.manual_seed(0)
    module = build().eval()
    inputs = make_inputs()
    args = tuple(torch.from_numpy(x) for x in inputs.values())
    tmp = path + ".partial"
    with torch.no_grad():
        torch.onnx.export(module, args, tmp, opset_version=OPSET, input_names=list(inputs),
                          output_names=out_names, dynamic_axes=axes, do_constant_folding=True)
    os.replace(tmp, path)
    return torch.__version__


def prepare(name, work, reexport):
    """The model file (exported when missing or with --reexport) and its run inputs as .npy;
    returns (path, [NAME=FILE.npy, ...]). The export runs in a child process (this script with
    --export-only), so torch and the exported model never occupy this one's memory."""
    path = os.path.join(work, f"{name}.onnx")
    if reexport or not os.path.exists(path):
        t0 = time.time()
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--export-only", name, path],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise Failure(f"export of {name} failed:\n{p.stderr[-1500:]}")
        how = f"exported by torch {p.stdout.strip()} in {time.time() - t0:.1f} s"
    else:
        how = "exists; --reexport to export again"
    print(f"{name}.onnx: {os.path.getsize(path) / MB:.1f} MB ({os.path.getsize(path)} bytes, {how})",
          flush=True)
    specs = []
    for input_name, x in MODELS[name][1]().items():
        npy = os.path.join(work, f"{name}.{input_name}.npy")
        np.save(npy, x)
        specs.append(f"{input_name}={npy}")
    return path, specs


# ---- measuring -------------------------------------------------------------------------------

def run_process(cmd, env=None):
    """Runs cmd to its end under /usr/bin/time; returns (stdout, stderr, the process's peak RSS in
    MB). Not wait4 on a child of this process: a child's ru_maxrss starts from the RSS of the
    process it was forked from (the kernel carries the old memory's peak across exec), so it would
    count this script's own memory; /usr/bin/time's is a couple of MB."""
    with tempfile.TemporaryDirectory(prefix="import_bench_") as tmp:
        rss = os.path.join(tmp, "maxrss")
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss] + cmd, env=env, capture_output=True,
                           text=True, errors="replace")
        if p.returncode != 0:
            tail = (p.stderr.strip() or p.stdout.strip())[-1500:]
            raise Failure(f"exit {p.returncode}: {' '.join(cmd)}\n{tail}")
        with open(rss) as f:  # "Maximum resident set size" of -v, in KB
            maxrss_kb = int(f.read().split()[-1])
    return p.stdout, p.stderr, maxrss_kb / 1024.0


def pinned(cpu, cmd):
    return cmd if cpu is None else ["taskset", "-c", str(cpu)] + cmd


def hetpass_once(args, model, specs, cache_dir, runs=1):
    cmd = [args.hetpass, "run", model, "--device=cpu", "--random-inputs", "--json", f"--repeat={runs}"]
    for spec in specs:
        cmd += ["--input", spec]
    env = dict(os.environ, HETPASS_KERNEL_CACHE_DIR=cache_dir)
    stdout, _, maxrss = run_process(pinned(args.cpu, cmd), env)
    r = json.loads(stdout)
    stages = r["compile_stages_ms"]
    ready_peak = max(r["compile_stages_peak_rss_mb"].values())
    return {"import_ms": stages["import"], "ready_ms": sum(stages.values()),
            "compile_ms": r["compile_ms"], "kernels_final_ms": r["kernels_final_ms"],
            "run_cold_ms": r["times_us"]["cold"] / 1000.0, "stages_ms": stages,
            "stages_peak_rss_mb": r["compile_stages_peak_rss_mb"],
            "ready_peak_rss_mb": ready_peak, "run_peak_rss_mb": r["run_peak_rss_mb"],
            "time_rss_mb": maxrss, "peak_rss_mb": max(ready_peak, r["run_peak_rss_mb"], maxrss)}


def measure_hetpass(args, model, specs):
    """--repeat processes; times the fastest, memory the highest (per figure)."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="hetpass_import_cache_") as caches:
        if args.kernel_cache == "warm":
            hetpass_once(args, model, specs, os.path.join(caches, "warm"))  # fills it, unmeasured
        for k in range(args.repeat):
            cache = os.path.join(caches, "warm" if args.kernel_cache == "warm" else f"cold{k}")
            runs.append(hetpass_once(args, model, specs, cache))
        # One more process that runs the model STEADY_RUNS times: the memory of a process that
        # keeps running it (the Winograd tier's second weight layout comes from the second run).
        cache = os.path.join(caches, "warm" if args.kernel_cache == "warm" else "steady")
        steady = hetpass_once(args, model, specs, cache, runs=STEADY_RUNS)
    best = {}
    for key in runs[0]:
        pick = max if key.endswith("_mb") else min
        if key.startswith("stages_"):  # per stage
            best[key] = {s: pick(r[key][s] for r in runs) for s in runs[0][key]}
        else:
            best[key] = pick(r[key] for r in runs)
    best["runs"] = runs
    best["steady_rss_mb"] = steady["peak_rss_mb"]
    return best


def measure_ort(args, model):
    """--repeat fresh node processes, one session each; None for model: the --baseline process."""
    cmd = ["node", os.path.join(HERE, "ort_create.mjs"), model or "--baseline"]
    env = dict(os.environ, ORT_NODE_MODULE=args.ort_module)
    runs = []
    for _ in range(args.repeat):
        stdout, _, maxrss = run_process(pinned(args.cpu, cmd), env)
        r = json.loads(stdout.strip().splitlines()[-1])
        r["peak_rss_mb"] = maxrss
        runs.append(r)
    best = {"peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            "after_import_rss_mb": max(r["after_import_rss_mb"] for r in runs),
            "import_ms": min(r["import_ms"] for r in runs), "runs": runs}
    if model:
        best["create_ms"] = min(r["create_ms"] for r in runs)
    return best


def ensure_ort_module(args):
    """--ort-module, else BUILD_DIR/ort's (BUILD_DIR: the folder of --hetpass), installed by
    bench/ort/ensure_ort.sh when missing, as the other ORT benches do."""
    if args.ort_module:
        if not os.path.isdir(args.ort_module):
            raise Failure(f"no onnxruntime-node at {args.ort_module}")
        return os.path.abspath(args.ort_module)
    build = os.path.dirname(os.path.abspath(args.hetpass))
    out = subprocess.run(["bash", "-c", 'build="$1"; source bench/ort/ensure_ort.sh; echo "$ORT_NODE_MODULE"',
                          "_", build], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"bench/ort/ensure_ort.sh failed:\n{out.stderr[-1500:]}")
    return out.stdout.strip()


# ---- report ----------------------------------------------------------------------------------

def conservative(ours, ort, floor):
    """ours / (ORT - max(0, ORT's floor - our floor)); None where ORT is within the difference."""
    denominator = ort - max(0.0, floor["ort"]["create_ms"] - floor["hetpass"]["ready_ms"])
    return ours / denominator if denominator > 0 else None


def print_table(rows, floor, baseline):
    head = ("model", "file MB", "import ms", "ready ms", "ORT ms", "ready/ORT", "cons", "RSS MB",
            "RSS/file", "net/file", "ready RSS", "3-run RSS", "ORT RSS", "ORT net", "ready<=ORT", "RSS<=1.5x")
    fmt = "%-10s %8s %10s %9s %9s %9s %6s %8s %8s %8s %9s %9s %8s %8s %10s %9s"
    print(fmt % head)
    for row in rows:
        if "error" in row:
            file_mb = "%.1f" % row["file_mb"] if "file_mb" in row else "-"
            print("%-10s %8s  (failed: %s)" % (row["model"], file_mb, row["error"].splitlines()[0]))
            continue
        h, o = row["hetpass"], row["ort"]
        cons = row["ratio_conservative"]
        print(fmt % (row["model"], "%.1f" % row["file_mb"], "%.1f" % h["import_ms"], "%.1f" % h["ready_ms"],
                     "%.1f" % o["create_ms"], "%.2f" % row["ratio"], "-" if cons is None else "%.2f" % cons,
                     "%.1f" % h["peak_rss_mb"], "%.2f" % row["rss_per_file"],
                     "-" if row["net_rss_per_file"] is None else "%.2f" % row["net_rss_per_file"],
                     "%.1f" % h["ready_peak_rss_mb"], "%.1f" % h["steady_rss_mb"],
                     "%.1f" % o["peak_rss_mb"], "%.1f" % row["ort_net_rss_mb"],
                     "pass" if row["goal_ready"] else "FAIL", "pass" if row["goal_rss"] else "FAIL"))
    if floor:
        print("# harness floor (one Relu, %s): hetpass ready %.1f ms, peak %.1f MB; ORT session %.1f ms, "
              "peak %.1f MB" % (floor["model"], floor["hetpass"]["ready_ms"], floor["hetpass"]["peak_rss_mb"],
                                floor["ort"]["create_ms"], floor["ort"]["peak_rss_mb"]))
    else:
        print("# harness floor not measured (no --floor-model file, or a side failed on it): "
              "ready<=ORT read on the raw ratio")
    print("# node --baseline (node + onnxruntime-node loaded, no session): peak %.1f MB"
          % baseline["peak_rss_mb"])
    print("# times: fastest of the processes; memory: highest (MB = 2^20 bytes); "
          "see this script's docstring for each column")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetpass", default=os.path.join(REPO, "build/hetpass"))
    ap.add_argument("--ort-module", default=None,
                    help="onnxruntime-node's folder (default: BUILD_DIR/ort/node_modules/onnxruntime-node, "
                         "BUILD_DIR the folder of --hetpass, installed by bench/ort/ensure_ort.sh)")
    ap.add_argument("--work", default="/tmp/hetpass_import_bench", help="exported models and inputs")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeat", type=int, default=3, help="processes per side and model (default 3)")
    ap.add_argument("--cpu", default="1", help="core both sides are pinned to (taskset); 'none': not pinned")
    ap.add_argument("--kernel-cache", choices=["cold", "warm"], default="cold")
    ap.add_argument("--floor-model", default=FLOOR_MODEL)
    ap.add_argument("--reexport", action="store_true", help="export even where the file exists")
    ap.add_argument("--json", default=None, metavar="OUT", help="write every figure to OUT")
    ap.add_argument("--export-only", nargs=2, metavar=("MODEL", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.export_only:  # the child of prepare()
        print(export(*args.export_only))
        return
    args.cpu = None if args.cpu == "none" else int(args.cpu)
    names = args.models.split(",")
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model {n} (known: {', '.join(MODELS)})")
    if not os.access(args.hetpass, os.X_OK):
        sys.exit(f"import_bench.py: no hetpass at {args.hetpass} (--hetpass)")
    try:
        args.ort_module = ensure_ort_module(args)
    except Failure as e:
        sys.exit(f"import_bench.py: {e}")
    os.makedirs(args.work, exist_ok=True)

    hetpass_version = subprocess.run([args.hetpass, "--version"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(args.ort_module, "package.json")) as f:
        ort_version = json.load(f)["version"]
    print(f"{hetpass_version} ({args.hetpass}); onnxruntime-node {ort_version} ({args.ort_module}); "
          f"{args.repeat} processes per side, {'not pinned' if args.cpu is None else f'core {args.cpu}'}, "
          f"{args.kernel_cache} kernel cache", flush=True)

    failed = False
    baseline = measure_ort(args, None)
    floor = None
    if os.path.exists(args.floor_model):
        try:
            floor = {"model": args.floor_model, "hetpass": measure_hetpass(args, args.floor_model, []),
                     "ort": measure_ort(args, args.floor_model)}
        except Failure as e:
            print(f"harness floor failed, no conservative ratio: {e}", flush=True)
            failed = True

    rows = []
    for name in names:
        row = {"model": name}
        rows.append(row)
        try:
            path, specs = prepare(name, args.work, args.reexport)
            row["file"] = path
            row["file_mb"] = os.path.getsize(path) / MB
            h = row["hetpass"] = measure_hetpass(args, path, specs)
            print(f"  hetpass: import {h['import_ms']:.1f} ms, ready {h['ready_ms']:.1f} ms "
                  f"(compile_ms {h['compile_ms']:.1f}, kernels final {h['kernels_final_ms']:.1f}, "
                  f"first run {h['run_cold_ms']:.1f}), peak {h['peak_rss_mb']:.1f} MB "
                  f"(ready {h['ready_peak_rss_mb']:.1f}, run {h['run_peak_rss_mb']:.1f}, "
                  f"time -v {h['time_rss_mb']:.1f}); {STEADY_RUNS} runs in one process: peak "
                  f"{h['steady_rss_mb']:.1f} MB", flush=True)
            print("    stages ms (peak MB): " + ", ".join(f"{s} {ms:.1f} ({h['stages_peak_rss_mb'][s]:.0f})"
                                                   for s, ms in h["stages_ms"].items()), flush=True)
            o = row["ort"] = measure_ort(args, path)
            print(f"  ORT: session {o['create_ms']:.1f} ms, peak {o['peak_rss_mb']:.1f} MB "
                  f"(after loading the binding {o['after_import_rss_mb']:.1f})", flush=True)
        except Failure as e:
            row["error"] = str(e)
            print(f"  {name} failed: {e}", flush=True)
            failed = True
            continue
        row["ratio"] = h["ready_ms"] / o["create_ms"]
        row["ratio_conservative"] = conservative(h["ready_ms"], o["create_ms"], floor) if floor else None
        row["rss_per_file"] = h["peak_rss_mb"] / row["file_mb"]
        row["net_rss_per_file"] = ((h["peak_rss_mb"] - floor["hetpass"]["peak_rss_mb"]) / row["file_mb"]
                                   if floor else None)
        row["ort_net_rss_mb"] = o["peak_rss_mb"] - baseline["peak_rss_mb"]
        on = row["ratio_conservative"] if floor else row["ratio"]
        row["goal_ready"] = on is not None and on <= 1.0
        row["goal_rss"] = h["peak_rss_mb"] <= RSS_GOAL * row["file_mb"]

    print()
    print_table(rows, floor, baseline)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"hetpass": hetpass_version, "onnxruntime_node": ort_version, "repeat": args.repeat,
                       "cpu": args.cpu, "kernel_cache": args.kernel_cache, "node_baseline": baseline,
                       "floor": floor, "models": rows}, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
