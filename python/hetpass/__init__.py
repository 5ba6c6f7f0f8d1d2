"""hetpass: compiler passes for dynamic-shape tensor programs on heterogeneous devices.

The five lines::

    import hetpass, numpy as np
    model = hetpass.import_onnx("model.onnx")
    exe = hetpass.compile(model, device="sim")
    y = exe(np.ones((16, 1024), np.float32))
    print(exe.ledger, exe.counters, exe.compare_with_ledger())

Everything here is the C++ library (``hetpass._hetpass``, pybind11); errors are
:mod:`hetpass.errors` exceptions; :mod:`hetpass.testing` (copy budgets for pytest) and
:mod:`hetpass.viz` (pass-viz pictures) come with ``import hetpass``. docs/python.md documents
the API.
"""

from __future__ import annotations

from . import errors


def _missing_extension_message() -> str:
    """What to run when the package's Python files are here but its extension is not.

    That happens after a build of other targets only (the README's demo builds the command-line
    tools: configuring copies the Python files into build/python/hetpass, only the `_hetpass`
    target builds the extension), or with PYTHONPATH at a copy of python/hetpass. Python's own
    message, "No module named 'hetpass._hetpass'", names no command."""
    # Imported here, not at the top: they would become attributes of the package (hetpass.os).
    import glob
    import importlib.machinery
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    # The build tree's package root is <build>/python (python/CMakeLists.txt): name that build
    # directory in the command, as a path that works from the current directory.
    build = os.path.dirname(os.path.dirname(here))
    if os.path.basename(os.path.dirname(here)) == "python" and os.path.isfile(
            os.path.join(build, "CMakeCache.txt")):
        relative = os.path.relpath(build)
        build_arg = build if relative.startswith("..") else relative
        build_it = "Build it with:"
    else:
        build_arg = "build"
        build_it = ("Build it from the repository root, in the build directory the README's "
                    "commands configure, with:")
    lines = [
        f"hetpass's compiled extension hetpass._hetpass is missing from {here} (the package's "
        "Python files are there, the extension is not). " + build_it,
        f"    cmake --build {build_arg} --target _hetpass",
        f"and run Python with PYTHONPATH={os.path.join(build_arg, 'python')}. Or run "
        "`bash tools/dev/run.sh test`, which builds every target, the extension included "
        "(`bash tools/dev/run.sh demo` builds the command-line tools only). Then "
        f"`cmake --install {build_arg} --component python` installs the package. See "
        "docs/python.md, \"Building, using, installing\".",
    ]
    # An extension built for another interpreter has a suffix this one does not load
    # (_hetpass.cpython-311-...so under Python 3.12), and fails with the same "No module named".
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    names = (os.path.basename(f) for f in glob.glob(os.path.join(here, "_hetpass.*")))
    others = sorted(n for n in names
                    if n[len("_hetpass"):] not in suffixes and not n.endswith((".py", ".pyi")))
    if others:
        lines.append(
            f"Found {', '.join(others)}: built for another Python. This one ({sys.executable}, "
            f"{sys.version.split()[0]}) loads only _hetpass{{{','.join(suffixes)}}}: configure "
            f"with -DPython3_EXECUTABLE={sys.executable}, or run the Python it was built for.")
    return "\n".join(lines)


try:
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
except ModuleNotFoundError as err:
    # Only the extension itself: a library it needs (numpy) missing keeps Python's message.
    if err.name != __name__ + "._hetpass":
        raise
    raise ModuleNotFoundError(_missing_extension_message(), name=err.name) from None
from . import testing, viz  # after the extension: both import from it
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
    "testing",
    "viz",
]
