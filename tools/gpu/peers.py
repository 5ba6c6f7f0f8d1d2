#!/usr/bin/env python3
"""Times the zoo's PyTorch definitions on the GPU: the peers of hetpass cuda in run_cuda.sh.

    peers.py ZOO_DIR OUT.json [--deadline=UNIX_SECONDS] [--repeat=N] [--only=A,B] [--compile=A,B]

For each model of tools/models/export_zoo.py's MODELS (the definitions the zoo's ONNX files were
exported from): the module is built as export_zoo.py builds it (torch.manual_seed(0), its
randomize_norms, eval), moved to the GPU, and run on ZOO_DIR/NAME/test_data_set_0's inputs (the
files hetpass runs). One inference is what `hetpass run` times: inputs from host memory to the
GPU, the forward pass, every output back to host memory (`.cpu()`, which waits for the GPU).

Peers, in the order run:
  eager           PyTorch eager on CUDA, torch.no_grad;
  compile         torch.compile(dynamic=True), Inductor's default mode;
  compile_graphs  torch.compile(dynamic=True, mode="reduce-overhead"): Inductor with CUDA graphs.
Precision: float32 with TF32 off (torch.backends.cuda.matmul.allow_tf32 = False,
torch.backends.cudnn.allow_tf32 = False, float32 matmul precision "highest"), as hetpass.
Times: the first call alone (for compile: the compilation), then 3 warm-up calls not counted,
then N timed calls: median and min, in microseconds.

The weights: the zoo's files were exported with Debian's torch 1.13 and the seed; this machine's
PyTorch may draw other numbers from the same seed, so every model also reports the largest
absolute difference of its eager outputs from the zoo's reference outputs (output_*.pb): zero-ish
means the same weights; otherwise the same architecture and shapes ran with other weights (a
detector may then keep another number of boxes), which the report says.

torch.compile runs in one child process per model, killed at its time limit (the smaller of 150 s
and what --deadline leaves), so a compilation that hangs costs only its own row; a model not
reached before the deadline is recorded as "not run: time budget". OUT.json is rewritten after
every model, so a run stopped from outside keeps what finished.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODES = ("eager", "compile", "compile_graphs")
# torch.compile takes tens of seconds per model: the models whose comparison says the most come
# first (attention, convolutional backbones, then the rest).
COMPILE_ORDER = ("bert_posemb", "vit_tiny", "tiny_gpt", "convnext_tiny", "regnet_y", "mobilenet_v3_small",
                 "efficientnet_b0", "shufflenet_v2", "swin_window", "detr_sine", "unet_pad", "perceiver_latent",
                 "lraspp_mobilenet_v3", "flow_warp", "lstm_tagger", "gru_seq2seq", "ssdlite_mobilenet_v3")


def setup_torch(gpu=True):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    # The zoo's definitions make tensors in forward without a device (torch.arange(n), masks),
    # as their CPU export needed: on the GPU those must be made there too. Modules are built on
    # the CPU all the same (build), so that the seed draws the numbers the export drew.
    if gpu:
        torch.set_default_device("cuda")
    sys.path.insert(0, os.path.join(REPO, "tools", "models"))
    import export_zoo  # noqa: E402  (the definitions)
    return torch, export_zoo


def load_set(zoo, name, k=0):
    import onnx
    import onnx.numpy_helper
    d = os.path.join(zoo, name, f"test_data_set_{k}")
    ins, outs = [], []
    i = 0
    while os.path.exists(os.path.join(d, f"input_{i}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(d, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        ins.append(onnx.numpy_helper.to_array(t))
        i += 1
    j = 0
    while os.path.exists(os.path.join(d, f"output_{j}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(d, f"output_{j}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        outs.append(onnx.numpy_helper.to_array(t))
        j += 1
    if not ins:
        raise RuntimeError(f"{d}: no input_0.pb")
    return ins, outs


def build(torch, export_zoo, name):
    spec = export_zoo.MODELS[name]
    with torch.device("cpu"):
        torch.manual_seed(0)
        return export_zoo.randomize_norms(spec[0]()).eval()


def time_calls(torch, fn, host_inputs, repeat):
    """First call, then 3 warm-ups, then `repeat` timed calls of host -> GPU -> host."""
    def once():
        xs = [x.to("cuda") for x in host_inputs]
        with torch.no_grad():
            out = fn(*xs)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        return [o.cpu() for o in out]

    t0 = time.perf_counter()
    outs = once()
    first_us = (time.perf_counter() - t0) * 1e6
    for _ in range(3):
        once()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        once()
        times.append((time.perf_counter() - t0) * 1e6)
    return {"first_us": round(first_us, 1), "median_us": round(statistics.median(times), 1),
            "min_us": round(min(times), 1), "runs": repeat}, outs


def max_diff(outs, refs):
    import numpy as np
    if len(outs) != len(refs):
        return f"{len(outs)} outputs, reference has {len(refs)}"
    worst = 0.0
    for o, r in zip(outs, refs):
        o = o.numpy()
        if o.shape != r.shape:
            return f"shape {list(o.shape)}, reference {list(r.shape)}"
        if o.size:
            worst = max(worst, float(np.abs(o.astype(np.float64) - r.astype(np.float64)).max()))
    return worst


def run_one(zoo, name, modes, repeat, k=0, builder=None):
    """One model in this process (set k; `builder(torch, export_zoo, name)` makes the module,
    default build): the modes asked for; a failing mode records its error."""
    torch, export_zoo = setup_torch()
    ins, refs = load_set(zoo, name, k)
    host = [torch.from_numpy(x.copy()) for x in ins]
    module = (builder or build)(torch, export_zoo, name).cuda()
    result = {}
    for mode in modes:
        try:
            if mode == "eager":
                fn = module
            else:
                torch._dynamo.reset()
                fn = torch.compile(module, dynamic=True,
                                   mode="reduce-overhead" if mode == "compile_graphs" else "default")
            timing, outs = time_calls(torch, fn, host, repeat)
            timing["max_abs_diff_vs_reference"] = max_diff(outs, refs)
            result[mode] = timing
        except Exception as e:  # a peer that cannot run this model: its row says why
            result[mode] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    return result


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("zoo")
    ap.add_argument("out")
    ap.add_argument("--deadline", type=float, default=0, help="UNIX time after which nothing new starts")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--only", default="")
    ap.add_argument("--compile", default=",".join(COMPILE_ORDER), help="models to torch.compile, in order")
    ap.add_argument("--one", default="", help="(internal) run this model's --modes here, print JSON")
    ap.add_argument("--modes", default="compile,compile_graphs")
    ap.add_argument("--phase", choices=["eager", "compile", "all"], default="all",
                    help="eager: every model's eager row; compile: the torch.compile rows (OUT.json's eager "
                         "rows are kept); all: both")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.zoo, args.one, args.modes.split(","), args.repeat)))
        return 0

    torch, export_zoo = setup_torch()
    names = args.only.split(",") if args.only else list(export_zoo.MODELS)
    # Only the models whose test data the zoo folder has (a run may point it at a subset).
    names = [n for n in names if os.path.isdir(os.path.join(args.zoo, n, "test_data_set_0"))]
    previous = {}
    if args.phase == "compile" and os.path.exists(args.out):
        with open(args.out) as f:
            previous = json.load(f).get("models", {})
    report = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
              "settings": "float32, TF32 off (matmul and cuDNN), float32 matmul precision highest; "
                          "one inference = inputs host->GPU, forward under no_grad, outputs ->host; "
                          "first call, 3 warm-ups, then --repeat timed calls",
              "compile_settings": "torch.compile(dynamic=True) mode default (compile) and mode reduce-overhead "
                                  "(compile_graphs, CUDA graphs), torch._dynamo.reset() before each",
              "repeat": args.repeat, "models": previous}

    def save():
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)

    def left():
        return args.deadline - time.time() if args.deadline else float("inf")

    # Eager for every model in this process: cheap, and the baseline every model has.
    for name in names if args.phase != "compile" else []:
        entry = report["models"].setdefault(name, {})
        if left() < 5:
            entry["eager"] = {"error": "not run: time budget"}
            continue
        try:
            entry.update(run_one(args.zoo, name, ["eager"], args.repeat))
        except Exception as e:
            entry["eager"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(f"peers: {name} eager {entry['eager']}", flush=True)
        save()
    # torch.compile, one child process per model, in priority order, until the deadline.
    for name in [n for n in args.compile.split(",") if n in names] if args.phase != "eager" else []:
        entry = report["models"].setdefault(name, {})
        budget = min(150.0, left() - 5)
        if budget < 30:
            for mode in ("compile", "compile_graphs"):
                entry[mode] = {"error": "not run: time budget"}
            save()
            continue
        cmd = [sys.executable, os.path.abspath(__file__), args.zoo, args.out, f"--one={name}",
               f"--repeat={args.repeat}", "--modes=compile,compile_graphs"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
            line = [l for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode == 0 and line:
                entry.update(json.loads(line[-1]))
            else:
                err = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
                for mode in ("compile", "compile_graphs"):
                    entry[mode] = {"error": f"child exited {p.returncode}: {err}"}
        except subprocess.TimeoutExpired:
            for mode in ("compile", "compile_graphs"):
                entry.setdefault(mode, {"error": f"not finished in {budget:.0f} s (killed)"})
        print(f"peers: {name} compile {entry.get('compile')} graphs {entry.get('compile_graphs')}", flush=True)
        save()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
