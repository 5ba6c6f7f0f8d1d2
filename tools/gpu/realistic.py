#!/usr/bin/env python3
"""Models at the sizes people run, built and exported on the GPU machine (their weights are too
large to carry), then timed with PyTorch on the GPU: the realistic rows of run_cuda.sh.

    realistic.py export DIR            # DIR/NAME/model.onnx + test_data_set_K (inputs, outputs);
                                     # $HETPASS_REALISTIC_MODELS (names) narrows it
    realistic.py time DIR OUT.json [--deadline=UNIX_SECONDS] [--repeat=N]

Models (seeded random weights: torch.manual_seed(0), then export_zoo.py's randomize_norms, so
activations stay O(1) through every layer):
  resnet50   torchvision's ResNet-50, batch dynamic; sets: (1, 3, 224, 224) and (32, 3, 224, 224);
  bert_base  export_zoo.py's BertPosEmb at BERT-base size (12 layers, d 768, 12 heads, FFN 3072,
             vocabulary 30522, 512 positions), batch and sequence dynamic; sets: (1, 128), (8, 384).
The ONNX files come from torch.onnx.export's TorchScript exporter (dynamo=False, opset 17), as
the zoo's; the reference outputs are PyTorch eager's on the CPU in float32.

`time` runs each set as peers.py does (eager, torch.compile dynamic default and reduce-overhead;
float32, TF32 off; inputs from the host, outputs back to it), the compiled modes in a child
process each, until the deadline.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402


def definitions(torch, export_zoo):
    import torchvision
    g = torch.Generator().manual_seed(7)

    def img(shape):
        return torch.randn(shape, generator=g)

    return {
        "resnet50": (lambda: torchvision.models.resnet50(weights=None),
                     [[img((1, 3, 224, 224))], [img((32, 3, 224, 224))]], ["image"], ["logits"],
                     {"image": {0: "batch"}, "logits": {0: "batch"}}),
        "bert_base": (lambda: export_zoo.BertPosEmb(vocab=30522, d=768, layers=12, heads=12, ffn=3072, max_pos=512),
                      [bert(torch, 1, 128, 21), bert(torch, 8, 384, 22)],
                      ["input_ids", "token_type_ids", "attention_mask"], ["sequence", "pooled"],
                      {"input_ids": {0: "batch", 1: "seq"}, "token_type_ids": {0: "batch", 1: "seq"},
                       "attention_mask": {0: "batch", 1: "seq"}, "sequence": {0: "batch", 1: "seq"},
                       "pooled": {0: "batch"}}),
    }


def bert(torch, b, s, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 30522, (b, s), generator=g)
    split = torch.randint(1, s, (b, 1), generator=g)
    types = (torch.arange(s)[None, :] >= split).long()
    valid = s - torch.randint(0, s // 4 + 1, (b, 1), generator=g)
    valid[0] = s
    mask = (torch.arange(s)[None, :] < valid).long()
    return [ids, types, mask]


def build(torch, export_zoo, name):
    with torch.device("cpu"):  # as exported, whatever the default device
        torch.manual_seed(0)
        module = definitions(torch, export_zoo)[name][0]()
    # ResNet-50 keeps torchvision's initialisation (BatchNorm as identity in eval): random
    # statistics over fifty layers would overflow. The encoder gets the zoo's.
        return (module if name == "resnet50" else export_zoo.randomize_norms(module)).eval()


def export(out):
    import onnx
    torch, export_zoo = peers.setup_torch(gpu=False)
    only = os.environ.get("HETPASS_REALISTIC_MODELS", "").split()
    for name, (_, sets, ins, outs, axes) in definitions(torch, export_zoo).items():
        if only and name not in only:
            continue
        t0 = time.time()
        module = build(torch, export_zoo, name)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        exporter = "TorchScript (dynamo=False)"
        try:
            torch.onnx.export(module, tuple(sets[0]), path, opset_version=17, input_names=ins, output_names=outs,
                              dynamic_axes=axes, do_constant_folding=True, dynamo=False)
        except Exception as e:  # a PyTorch without the TorchScript exporter: the dynamo one
            print(f"realistic: {name}: dynamo=False failed ({type(e).__name__}: {str(e)[:200]}); dynamo=True",
                  flush=True)
            exporter = "dynamo"
            torch.onnx.export(module, tuple(sets[0]), path, opset_version=17, input_names=ins, output_names=outs,
                              dynamic_axes=axes, dynamo=True, external_data=False)
        mags = []
        for k, inputs in enumerate(sets):
            with torch.no_grad():
                want = module(*inputs)
            want = want if isinstance(want, (tuple, list)) else (want,)
            mags.append([round(float(y.abs().mean()), 4) for y in want])
            sd = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(sd, exist_ok=True)
            for i, (x, n) in enumerate(zip(inputs, ins)):
                export_zoo.save_tensor(os.path.join(sd, f"input_{i}.pb"), x.numpy(), n)
            for j, (y, n) in enumerate(zip(want, outs)):
                export_zoo.save_tensor(os.path.join(sd, f"output_{j}.pb"), y.numpy(), n)
        print(f"realistic: {name}: {os.path.getsize(path) >> 20} MiB by {exporter}, {len(sets)} sets, |out| {mags}, "
              f"{time.time() - t0:.1f} s (onnx {onnx.__version__}, torch {torch.__version__})", flush=True)
    return 0


def time_one(root, name, k, modes, repeat):
    return peers.run_one(root, name, modes, repeat, k=k, builder=build)


def time_all(root, out, deadline, repeat, phase):
    torch, _ = peers.setup_torch()
    report = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "repeat": repeat, "models": {}}
    if phase == "compile" and os.path.exists(out):
        with open(out) as f:
            report["models"] = json.load(f).get("models", {})
    names = sorted(n for n in os.listdir(root) if os.path.exists(os.path.join(root, n, "model.onnx")))
    phases = {"eager": [["eager"]], "compile": [["compile", "compile_graphs"]],
              "all": [["eager"], ["compile", "compile_graphs"]]}[phase]
    for modes in phases:
        for name in names:
            for k in (0, 1):
                if not os.path.isdir(os.path.join(root, name, f"test_data_set_{k}")):
                    continue
                entry = report["models"].setdefault(f"{name} set {k}", {})
                budget = min(240.0, deadline - time.time() - 5) if deadline else 240.0
                if budget < 20:
                    for m in modes:
                        entry[m] = {"error": "not run: time budget"}
                    continue
                cmd = [sys.executable, os.path.abspath(__file__), "one", root, name, str(k), ",".join(modes),
                       str(repeat)]
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
                    line = [l for l in p.stdout.splitlines() if l.startswith("{")]
                    if p.returncode == 0 and line:
                        entry.update(json.loads(line[-1]))
                    else:
                        err = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
                        for m in modes:
                            entry[m] = {"error": f"child exited {p.returncode}: {err}"}
                except subprocess.TimeoutExpired:
                    for m in modes:
                        entry.setdefault(m, {"error": f"not finished in {budget:.0f} s (killed)"})
                print(f"realistic: {name} set {k}: {entry}", flush=True)
                with open(out, "w") as f:
                    json.dump(report, f, indent=1)
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    return 0


def main(argv):
    if argv and argv[0] == "one":
        _, root, name, k, modes, repeat = argv
        print(json.dumps(time_one(root, name, int(k), modes.split(","), int(repeat))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["export", "time"])
    ap.add_argument("dir")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--deadline", type=float, default=0)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--phase", choices=["eager", "compile", "all"], default="all")
    args = ap.parse_args(argv)
    if args.what == "export":
        return export(args.dir)
    if not args.out:
        ap.error("time needs OUT.json")
    return time_all(args.dir, args.out, args.deadline, args.repeat, args.phase)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
