"""What `import hetpass` gives a fresh interpreter: its submodules, and, where the compiled
extension is missing, an ImportError naming the command that builds it.

Each case runs in a subprocess: this interpreter has imported hetpass (and its submodules)
already, so an attribute missing on a first import would not show here.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import hetpass
from conftest import SOURCE_DIR

PACKAGE_ROOT = pathlib.Path(hetpass.__file__).resolve().parents[1]

# Imports hetpass and prints what happened: the exception's class, module name and message.
IMPORT_AND_REPORT = """\
try:
    import hetpass
except BaseException as e:
    print(type(e).__name__, getattr(e, "name", None))
    print(e)
else:
    print("imported", hetpass.__file__)
"""


def python(code: str, pythonpath: pathlib.Path, cwd: pathlib.Path | None = None):
    # `python -c` puts the working directory first on sys.path: run where no other hetpass is
    # (ctest runs this suite from <build>/python, which holds the built package).
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd or pythonpath,
                          capture_output=True, text=True, timeout=120)


def extension_target() -> str:
    """The CMake target of the extension, read where it is defined: the message must name it."""
    text = (SOURCE_DIR / "python" / "CMakeLists.txt").read_text()
    return re.search(r"pybind11_add_module\((\w+)", text).group(1)


def python_files_only(package_dir: pathlib.Path) -> None:
    """The package's Python files from the source tree, without the extension."""
    package_dir.mkdir(parents=True)
    for f in (SOURCE_DIR / "python" / "hetpass").glob("*.py"):
        shutil.copy(f, package_dir)


def test_import_hetpass_brings_testing_and_viz():
    # The README writes hetpass.testing.expect_copies and hetpass.viz.render after a bare
    # `import hetpass`.
    r = python("import hetpass\n"
               "print(hetpass.testing.expect_copies.__name__, hetpass.testing.copy_budget.__name__,"
               " hetpass.viz.render.__name__)", PACKAGE_ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["expect_copies", "copy_budget", "render"]
    assert {"testing", "viz"} <= set(hetpass.__all__)


def test_missing_extension_names_the_build_command(tmp_path):
    # PYTHONPATH at a copy of the Python files alone (not a build tree): the README's build
    # directory, from the repository root.
    python_files_only(tmp_path / "hetpass")
    r = python(IMPORT_AND_REPORT, tmp_path)
    assert r.returncode == 0, r.stderr
    first, message = r.stdout.split("\n", 1)
    assert first == "ModuleNotFoundError hetpass._hetpass"  # an ImportError, not AttributeError
    assert "hetpass._hetpass is missing from " + str(tmp_path / "hetpass") in message
    assert f"cmake --build build --target {extension_target()}" in message
    assert "PYTHONPATH=build/python" in message
    assert "bash tools/dev/run.sh test" in message
    assert "built for another Python" not in message


def test_missing_extension_in_a_build_tree_names_that_build_directory(tmp_path):
    # The layout CMake configures (python/CMakeLists.txt): <build>/python/hetpass with the
    # Python files copied at configure time, the extension not built (the demo's targets).
    build = tmp_path / "out"
    build.mkdir()
    (build / "CMakeCache.txt").write_text("")
    python_files_only(build / "python" / "hetpass")
    r = python(IMPORT_AND_REPORT, build / "python", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first, message = r.stdout.split("\n", 1)
    assert first == "ModuleNotFoundError hetpass._hetpass"
    assert f"cmake --build out --target {extension_target()}" in message
    assert "PYTHONPATH=out/python" in message
    assert "cmake --install out --component python" in message


def test_extension_of_another_python_is_named(tmp_path):
    # A suffix this interpreter does not load fails with the same "No module named": the
    # message says which file is there and why it is not loaded.
    python_files_only(tmp_path / "hetpass")
    other = "_hetpass.cpython-30-x86_64-linux-gnu.so"
    (tmp_path / "hetpass" / other).write_bytes(b"")
    r = python(IMPORT_AND_REPORT, tmp_path)
    first, message = r.stdout.split("\n", 1)
    assert first == "ModuleNotFoundError hetpass._hetpass"
    assert f"Found {other}: built for another Python" in message
    assert f"-DPython3_EXECUTABLE={sys.executable}" in message
