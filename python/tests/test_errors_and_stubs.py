"""The exception classes, and the shipped stubs against the extension."""

from __future__ import annotations

import ast
import pathlib

import pytest

import hetpass
from hetpass import _hetpass, errors


@pytest.mark.parametrize(
    "code, builtin",
    [
        ("INVALID_ARGUMENT", ValueError),
        ("NOT_FOUND", LookupError),
        ("UNIMPLEMENTED", NotImplementedError),
        ("FAILED_PRECONDITION", RuntimeError),
        ("RESOURCE_EXHAUSTED", MemoryError),
        ("OUT_OF_RANGE", IndexError),
        ("DEADLINE_EXCEEDED", TimeoutError),
        ("PERMISSION_DENIED", PermissionError),
        ("INTERNAL", RuntimeError),
        ("DATA_LOSS", RuntimeError),
    ],
)
def test_status_codes_map_to_builtin_exceptions(code, builtin):
    e = errors.from_status(code, "the message")
    assert isinstance(e, errors.Error) and isinstance(e, builtin)
    assert e.code == code and e.message == "the message" and str(e) == "the message"


def test_unimplemented_from_cpp_is_not_implemented_error():
    # bf16 has no NumPy dtype: passing one through the Python API is unimplemented.
    m = hetpass.parse("def @main(%x: bf16[2]) {\n  %y = add(%x, %x)\n  return %y\n}\n")
    exe = hetpass.compile(m, device="cpu")
    with pytest.raises(NotImplementedError, match="bf16"):
        exe([1, 2])


def _stub_names(tree):
    names = set()
    members = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            members[node.name] = {
                n.name if isinstance(n, ast.FunctionDef) else n.target.id
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AnnAssign))
            }
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names, members


def test_stubs_match_the_extension():
    stub = pathlib.Path(hetpass.__file__).with_name("_hetpass.pyi")
    assert (pathlib.Path(hetpass.__file__).parent / "py.typed").is_file()
    names, members = _stub_names(ast.parse(stub.read_text()))
    public = {n for n in dir(_hetpass) if not n.startswith("__")}
    assert names == public, (names ^ public)
    for cls, stub_members in members.items():
        real = {n for n in dir(getattr(_hetpass, cls)) if not n.startswith("__") or n in
                ("__call__", "__int__", "__len__", "__iter__", "__bool__", "__eq__", "__hash__")}
        real.discard("_pybind11_conduit_v1_")
        missing = stub_members - real - {"ledger"}  # Counters.ledger is set per instance
        assert not missing, (cls, missing)
        undocumented = {n for n in real - stub_members if not n.startswith("__")}
        assert not undocumented, (cls, undocumented)
