"""Compile a model for the simulated accelerator and print the copy ledger next to the counters.

    PYTHONPATH=build/python python3 examples/python/ledger_vs_counters.py [MODEL_DIR]

MODEL_DIR holds model.onnx and test_data_set_*/ (default: ../shared/models/nonzero_gather).
The ledger is computed before anything runs; the counters are what the device measured.
"""

from __future__ import annotations

import os
import pathlib
import sys

import hetpass


def main() -> int:
    shared = pathlib.Path(os.environ.get(
        "HETPASS_SHARED_DIR", pathlib.Path(__file__).resolve().parents[2].parent / "shared"))
    model_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else shared / "models" / "nonzero_gather"
    exe = hetpass.compile(hetpass.import_onnx(model_dir / "model.onnx"), device="sim")
    print(exe.ledger)
    ok = True
    for d in sorted(model_dir.glob("test_data_set_*")):
        args = [hetpass.read_onnx_tensor(str(p)) for p in sorted(d.glob("input_*.pb"))]
        outs = exe.run(*args)
        cmp = exe.compare_with_ledger()
        print(f"\n{d.name}: inputs {[a.shape for a in args]} -> outputs {[o.shape for o in outs]}")
        print(f"symbols: {exe.last_symbols}")
        print(cmp.table())
        print(cmp.summary())
        ok = ok and cmp.agrees
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
