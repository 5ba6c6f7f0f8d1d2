"""hetpass: compiler passes for dynamic-shape tensor programs on heterogeneous devices.

The five lines::

    import hetpass, numpy as np
    model = hetpass.import_onnx("model.onnx")
    exe = hetpass.compile(model, device="sim")
    y = exe(np.ones((16, 1024), np.float32))
    print(exe.ledger, exe.counters, exe.compare_with_ledger())

Everything here is the C++ library (``hetpass._hetpass``, pybind11); errors are
:mod:`hetpass.errors` exceptions. docs/python.md documents the API.
"""

from __future__ import annotations

from . import errors
from ._hetpass import (
    ComparisonField,
    ComparisonRow,
    CopyLedger,
    Counters,
    Executable,
    Expr,
    LedgerComparison,
    LedgerEntry,
    LedgerRegion,
    Module,
    OpInfo,
    OpInput,
    PassInfo,
    ProfileEntry,
    compile,
    import_onnx,
    ops,
    parse,
    passes,
    read_onnx_tensor,
)
from .errors import Error

__version__ = "0.1.0"

__all__ = [
    "ComparisonField",
    "ComparisonRow",
    "CopyLedger",
    "Counters",
    "Error",
    "Executable",
    "Expr",
    "LedgerComparison",
    "LedgerEntry",
    "LedgerRegion",
    "Module",
    "OpInfo",
    "OpInput",
    "PassInfo",
    "ProfileEntry",
    "compile",
    "errors",
    "import_onnx",
    "ops",
    "parse",
    "passes",
    "read_onnx_tensor",
]
