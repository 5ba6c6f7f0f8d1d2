"""What a call through Python costs on top of the C++ VM: Executable.__call__ against the same
executable's C++ run loop, in one process, on the same arguments.

    PYTHONPATH=build/python python3 bench/python/call_overhead.py [--rounds 7] [--iterations 2000]

Models (cpu device, the default pipeline):
  mlp16   ../shared/models/mlp_dynamic_batch (1024-512-256-128), batch 16
  mlp1    the same, batch 1
  tiny    one negative() over 16 floats: the VM does almost nothing, so the difference is the
          binding itself
Baseline: Executable._time_cpp_runs, a C++ loop of VirtualMachine::RunStaged on arguments staged
once (what a C++ caller of the VM pays per call). Python: exe(x) in a loop, which also wraps the
NumPy input (zero copy) and the result (zero copy). Rounds alternate the two; the figure is the
median of the rounds, in microseconds per call. The goal is under 5 us extra per call.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

import hetpass


def python_loop(exe, args, iterations):
    t0 = time.perf_counter()
    for _ in range(iterations):
        exe(*args)
    return (time.perf_counter() - t0) / iterations


def measure(name, exe, args, rounds, iterations):
    exe(*args)  # warm: kernels, pool plan
    py, cpp = [], []
    for _ in range(rounds):
        py.append(python_loop(exe, args, iterations) * 1e6)
        cpp.append(exe._time_cpp_runs(*args, iterations=iterations) * 1e6)
    p, c = statistics.median(py), statistics.median(cpp)
    print(f"{name:8s} C++ VM {c:9.2f} us   Python call {p:9.2f} us   extra {p - c:7.2f} us"
          f"   ratio {p / c:5.3f}")
    return p - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=2000)
    a = ap.parse_args()
    shared = pathlib.Path(os.environ.get(
        "HETPASS_SHARED_DIR", pathlib.Path(__file__).resolve().parents[2].parent / "shared"))
    mlp_path = shared / "models" / "mlp_dynamic_batch" / "model.onnx"
    if not mlp_path.is_file():
        print(f"error: {mlp_path} is missing", file=sys.stderr)
        return 1
    mlp = hetpass.compile(hetpass.import_onnx(mlp_path), device="cpu")
    tiny = hetpass.compile(
        hetpass.parse("def @main(%x: f32[n]) {\n  %y = negative(%x)\n  return %y\n}\n"), device="cpu")
    rng = np.random.default_rng(0)
    print(f"hetpass Python call overhead ({a.rounds} rounds x {a.iterations} calls, median)")
    extra = {
        "mlp16": measure("mlp16", mlp, [rng.standard_normal((16, 1024), dtype=np.float32)],
                         a.rounds, max(1, a.iterations // 10)),
        "mlp1": measure("mlp1", mlp, [rng.standard_normal((1, 1024), dtype=np.float32)],
                        a.rounds, max(1, a.iterations // 10)),
        "tiny": measure("tiny", tiny, [np.ones(16, np.float32)], a.rounds, a.iterations),
    }
    print("goal: under 5 us extra per call;", "met" if extra["tiny"] < 5 else "NOT met",
          f"(tiny: {extra['tiny']:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
