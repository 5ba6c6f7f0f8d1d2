"""Modules, parsing, ONNX import, pipelines, the registries and symbolic sizes."""

from __future__ import annotations

import pathlib

import pytest

import hetpass
from conftest import MLP_TEXT, SIM_PIPELINE


def test_parse_prints_text_ir_that_parses_again(mlp):
    text = str(mlp)
    assert "def @main(%x: f32[n, 8]" in text
    assert "dyn.strided_slice" in text
    again = hetpass.parse(text)
    assert str(again) == text
    assert mlp.functions == ["main"]
    assert mlp.source_name == "mlp.hir"


def test_parse_error_is_a_value_error_naming_line_and_column():
    with pytest.raises(ValueError) as info:
        hetpass.parse("def @main(%x: f32[4]) {\n  %y = add(%x, %nope)\n  return %y\n}\n",
                      source_name="bad.hir")
    err = info.value
    assert isinstance(err, hetpass.errors.InvalidArgumentError)
    assert err.code == "INVALID_ARGUMENT"
    assert "bad.hir:2:" in str(err)
    assert "%nope" in str(err)


def test_unknown_op_names_the_op():
    with pytest.raises(hetpass.Error) as info:
        hetpass.parse("def @main(%x: f32[4]) {\n  %y = no_such_op(%x)\n  return %y\n}\n")
    assert "no_such_op" in str(info.value)


def test_elided_constants_only_when_allowed():
    text = "def @main(%x: f32[2]) {\n  %c = constant<elided> : f32[2]\n  %y = add(%x, %c)\n  return %y\n}\n"
    with pytest.raises(ValueError, match="elided"):
        hetpass.parse(text)
    m = hetpass.parse(text, allow_elided_constants=True)
    assert "constant" in m.text(elide_constants=True)


def test_run_passes_changes_the_module_in_place_and_returns_it(mlp):
    out = mlp.run_passes(SIM_PIPELINE)
    assert out is mlp
    text = str(mlp)
    assert "device_copy" in text
    assert "memory.alloc_storage" in text or "alloc_storage" in text
    assert len(mlp.functions) > 1  # fused primitive functions


def test_copy_is_independent(mlp):
    c = mlp.copy()
    c.run_passes("infer-types,plan-devices{target=sim}")
    assert "device_copy" in str(c)
    assert "device_copy" not in str(mlp)


def test_unknown_pass_lists_the_known_ones(mlp):
    with pytest.raises(ValueError) as info:
        mlp.run_passes("infer-types,no-such-pass")
    assert "no-such-pass" in str(info.value)
    assert "plan-devices" in str(info.value)


def test_bad_pass_option_is_an_error(mlp):
    with pytest.raises(ValueError, match="target"):
        mlp.run_passes("plan-devices{target=tpu}")


def test_import_onnx_from_path_pathlike_and_bytes(nonzero_gather_dir):
    path = nonzero_gather_dir / "model.onnx"
    a = hetpass.import_onnx(str(path))
    b = hetpass.import_onnx(path)
    c = hetpass.import_onnx(path.read_bytes())
    d = hetpass.import_onnx(bytearray(path.read_bytes()))
    assert str(a) == str(b) == str(c) == str(d)
    assert "nonzero" in str(a).lower()


def test_import_onnx_errors(tmp_path: pathlib.Path):
    with pytest.raises(hetpass.Error) as info:
        hetpass.import_onnx(tmp_path / "missing.onnx")
    assert "missing.onnx" in str(info.value)
    with pytest.raises(ValueError):
        hetpass.import_onnx(b"\x08\x07this is not a model")
    with pytest.raises(TypeError):
        hetpass.import_onnx(42)


def test_verify_accepts_a_well_formed_module(mlp):
    mlp.verify()


def test_passes_registry():
    passes = {p.name: p for p in hetpass.passes()}
    for name in ("infer-types", "fold-constants", "plan-devices", "fuse-ops", "manifest-alloc",
                 "baseline-masks"):
        assert name in passes, name
        assert passes[name].summary
    assert any(o.startswith("target") for o in passes["plan-devices"].options)


def test_ops_registry_has_per_input_masks():
    ops = {op.name: op for op in hetpass.ops()}
    assert len(ops) > 100
    sl = ops["dyn.strided_slice"]
    masks = {i.name: i.mask for i in sl.inputs}
    # The slice's shape function reads the data tensor's shape only, and the bounds' values.
    assert masks["data"] == "shape"
    assert masks["begin"] == "value"
    assert [i.needs_value for i in sl.inputs] == [False, True, True, True]
    assert ops["argwhere"].data_dependent_output_shape
    assert not ops["add"].data_dependent_output_shape
    assert all(i.mask in ("none", "shape", "value", "shape+value") for op in ops.values()
               for i in op.inputs)


def test_expr_evaluate_and_errors(mlp):
    ledger = mlp.run_passes(SIM_PIPELINE).copy_ledger()
    h2d = ledger.bytes("h2d")
    assert h2d.symbols == {"n"}
    assert not h2d.is_constant
    assert h2d.evaluate(n=3) == 3 * 8 * 4
    assert h2d.evaluate({"n": 5}) == 5 * 8 * 4
    with pytest.raises(ValueError, match="n"):
        h2d.evaluate()
    with pytest.raises(ValueError, match="not a constant"):
        int(h2d)
    assert int(ledger.count("h2d")) == 1
    assert ledger.count("h2d") == 1
    assert str(h2d) == "n*32"
    assert h2d == ledger.bytes("h2d") and h2d != "n*32" and h2d != None  # noqa: E711
    assert len({h2d, ledger.bytes("h2d")}) == 1
