"""compile() and the Executable: NumPy in and out, counters, the ledger check, profiles, errors."""

from __future__ import annotations

import numpy as np
import pytest

import hetpass
from conftest import MLP_TEXT
from test_ledger import LOOP_TEXT

W = np.zeros((4, 8), np.float32)
W[0, 0], W[1, 1], W[2, 2], W[3, 3] = 1, 2, 3, 4


def mlp_reference(x, begin, end, strides):
    a = np.maximum(x @ W.T + 1, 0)
    return a[begin[0]:end[0]:strides[0], begin[1]:end[1]:strides[1]]


def slice_args(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    return x, np.array([0, 1], np.int64), np.array([n, 4], np.int64), np.array([1, 2], np.int64)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_results_match_numpy_for_changing_batch(mlp, device):
    exe = hetpass.compile(mlp, device=device)
    assert exe.device == device and exe.function == "main"
    for n in (1, 5, 16, 3):
        args = slice_args(n)
        y = exe(*args)
        assert isinstance(y, np.ndarray) and y.dtype == np.float32
        np.testing.assert_allclose(y, mlp_reference(*args), rtol=1e-6)
        assert exe.last_symbols["n"] == n
    assert exe.runs == 4
    assert [name for name, _ in exe.inputs] == ["x", "begin", "end", "strides"]
    assert exe.inputs[0][1].startswith("f32[n, 8]")


def test_compile_leaves_the_module_alone(mlp):
    before = str(mlp)
    exe = hetpass.compile(mlp, device="sim")
    assert str(mlp) == before
    assert "device_copy" in str(exe.module)


def test_sim_counters_are_exactly_the_ledger(mlp_sim):
    exe = hetpass.compile(mlp_sim, device="sim")
    exe(*slice_args(16))
    c = exe.counters
    assert (c.h2d_calls, c.d2h_calls, c.d2d_calls, c.syncs) == (1, 1, 0, 1)
    assert c.h2d_bytes == 16 * 8 * 4
    assert c.param_calls == 3 and c.param_bytes == 48
    assert c.launches > 0
    cmp = exe.compare_with_ledger()
    assert cmp.exact and cmp.agrees and bool(cmp)
    assert "exactly" in cmp.summary()
    assert {r.name for r in cmp.rows} >= {"h2d", "d2h", "d2d"}
    h2d = next(r for r in cmp.rows if r.name == "h2d")
    assert h2d.count.verdict == "match" and h2d.count.measured == 1
    cmp.check()
    assert c.to_dict()["h2d_calls"] == 1


def test_cpu_run_copies_nothing_and_shares_memory(mlp):
    exe = hetpass.compile(mlp, device="cpu")
    args = slice_args(8)
    y = exe(*args)
    c = exe.counters
    assert (c.h2d_calls, c.d2h_calls, c.d2d_calls, c.syncs) == (0, 0, 0, 0)
    # The result is a view of the VM's pooled block, not a copy.
    assert not y.flags.owndata
    assert exe.compare_with_ledger().exact


def test_cpu_inputs_are_borrowed_and_results_outlive_later_runs():
    m = hetpass.parse("def @main(%x: f32[n]) {\n  %y = negative(%x)\n  return %y\n}\n")
    exe = hetpass.compile(m, device="cpu")
    x = np.arange(6, dtype=np.float32)
    y1 = exe(x)
    y2 = exe(x * 2)
    # A result kept by the caller is never reused for the next run's results.
    np.testing.assert_array_equal(y1, -x)
    np.testing.assert_array_equal(y2, -2 * x)
    # Non-contiguous and read-only inputs work (a strided one is copied first).
    strided = np.arange(12, dtype=np.float32)[::2]
    np.testing.assert_array_equal(exe(strided), -strided)
    ro = np.arange(3, dtype=np.float32)
    ro.setflags(write=False)
    np.testing.assert_array_equal(exe(ro), -ro)
    # Lists take the parameter's dtype.
    np.testing.assert_array_equal(exe([1, 2, 3]), np.array([-1, -2, -3], np.float32))


def test_identity_result_is_a_copy_not_the_input():
    m = hetpass.parse("def @main(%x: f32[n]) {\n  return %x\n}\n")
    exe = hetpass.compile(m, device="cpu")
    x = np.ones(4, np.float32)
    y = exe(x)
    y[0] = 7
    assert x[0] == 1


def test_several_results_are_a_tuple_and_run_is_a_list():
    m = hetpass.parse(
        "def @main(%x: f32[n]) {\n  %a = exp(%x) @sim\n  %b = negative(%x) @sim\n  return %a, %b\n}\n")
    exe = hetpass.compile(m, device="sim")
    x = np.zeros(3, np.float32)
    a, b = exe(x)
    np.testing.assert_array_equal(a, np.ones(3, np.float32))
    np.testing.assert_array_equal(b, np.zeros(3, np.float32))
    out = exe.run(x)
    assert isinstance(out, list) and len(out) == 2
    assert exe.counters.d2h_calls == 2


def test_loop_counts_bind_the_region_symbol():
    exe = hetpass.compile(hetpass.parse(LOOP_TEXT), device="sim")
    y = exe(np.ones(4, np.float32))
    np.testing.assert_array_equal(y, np.full(4, -8, np.float32))  # -(2v), three times
    assert exe.counters.d2h_calls == 3
    cmp = exe.compare_with_ledger()
    assert cmp.exact, str(cmp)


def test_dtype_mismatch_names_the_input_and_both_types(mlp):
    exe = hetpass.compile(mlp, device="sim")
    x, b, e, s = slice_args(4)
    with pytest.raises(ValueError) as info:
        exe(x.astype(np.float64), b, e, s)
    msg = str(info.value)
    assert "input 0 'x' of @main" in msg
    assert "f32[n, 8]" in msg and "float64" in msg
    assert isinstance(info.value, hetpass.errors.InvalidArgumentError)
    with pytest.raises(ValueError, match="'begin'"):
        exe(x, b.astype(np.int32), e, s)
    with pytest.raises(ValueError, match="no hetpass dtype"):
        exe(x.astype(np.complex64), b, e, s)
    with pytest.raises(ValueError, match="big-endian"):
        exe(x.astype(">f4"), b, e, s)
    with pytest.raises(ValueError, match="input 1 'begin' of @main expects i64.*cannot convert a str"):
        exe(x, "0, 1", e, s)
    with pytest.raises(ValueError, match="input 0 'x' of @main expects f32.*cannot convert a dict"):
        exe({"a": 1}, b, e, s)


def test_shape_mismatch_names_the_input(mlp):
    exe = hetpass.compile(mlp, device="sim")
    x, b, e, s = slice_args(4)
    with pytest.raises(ValueError, match="x"):
        exe(np.zeros((4, 9), np.float32), b, e, s)  # static dim 8
    with pytest.raises(ValueError, match="x"):
        exe(np.zeros((4, 8, 1), np.float32), b, e, s)  # rank
    with pytest.raises(ValueError, match="begin"):
        exe(x, np.zeros(3, np.int64), e, s)
    # After errors the executable still runs correctly.
    np.testing.assert_allclose(exe(x, b, e, s), mlp_reference(x, b, e, s), rtol=1e-6)


def test_argument_count_lists_the_parameters(mlp):
    exe = hetpass.compile(mlp, device="cpu")
    with pytest.raises(ValueError, match=r"takes 4 inputs \(x, begin, end, strides\), got 1"):
        exe(np.zeros((2, 8), np.float32))


def test_run_time_error_in_a_shape_function_is_an_exception(mlp):
    exe = hetpass.compile(mlp, device="sim")
    x, b, e, _ = slice_args(4)
    with pytest.raises(hetpass.Error) as info:
        exe(x, b, e, np.array([0, 1], np.int64))  # stride 0
    assert "strided_slice" in str(info.value)


def test_profile(mlp):
    exe = hetpass.compile(mlp, device="sim", profile=True)
    exe(*slice_args(4))
    prof = exe.profile()
    assert prof and all(p.calls >= 1 and p.total_us >= 0 for p in prof)
    assert any(p.opcode == "invoke_kernel" for p in prof)
    plain = hetpass.compile(mlp, device="sim")
    with pytest.raises(RuntimeError, match="profile=True"):
        plain.profile()


def test_compile_errors(mlp):
    with pytest.raises(ValueError, match="tpu"):
        hetpass.compile(mlp, device="tpu")
    with pytest.raises(ValueError, match="baseline"):
        hetpass.compile(mlp, device="sim", baseline="tvm")
    with pytest.raises(LookupError, match="nope"):
        hetpass.compile(mlp, device="sim", function="nope")
    with pytest.raises(ValueError, match="no-such-pass"):
        hetpass.compile(mlp, device="sim", passes="no-such-pass")


def test_cuda_runs_or_says_why(mlp):
    try:
        exe = hetpass.compile(mlp, device="cuda")
    except hetpass.Error as e:
        # No GPU here (or a build without CUDA): the reason, never a crash.
        assert isinstance(e, RuntimeError)
        assert "cuda" in str(e).lower()
        return
    args = slice_args(16)
    np.testing.assert_allclose(exe(*args), mlp_reference(*args), rtol=1e-5)
    assert exe.compare_with_ledger().exact


def test_baselines_copy_more(mlp_sim):
    ours = hetpass.compile(mlp_sim, device="sim")
    single = hetpass.compile(mlp_sim, device="sim", baseline="single-flag")
    assert ours.ledger.count("d2h") == 1
    assert single.ledger.count("d2h") == 2
    args = slice_args(8)
    np.testing.assert_allclose(single(*args), ours(*args))
    assert single.counters.d2h_calls == 2 and ours.counters.d2h_calls == 1
    assert single.compare_with_ledger().agrees


def test_onnx_model_on_both_test_sets(nonzero_gather_dir):
    model = hetpass.import_onnx(nonzero_gather_dir / "model.onnx")
    exe = hetpass.compile(model, device="sim")
    for k in (0, 1):
        d = nonzero_gather_dir / f"test_data_set_{k}"
        x = hetpass.read_onnx_tensor(str(d / "input_0.pb"))
        outs = exe.run(x)
        for j, got in enumerate(outs):
            want = hetpass.read_onnx_tensor(str(d / f"output_{j}.pb"))
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert exe.compare_with_ledger().exact
        assert exe.counters.d2h_calls == 4


def test_mlp_onnx_matches_reference_on_cpu(mlp_onnx_dir):
    exe = hetpass.compile(hetpass.import_onnx(mlp_onnx_dir / "model.onnx"), device="cpu")
    for k in (0, 1):
        d = mlp_onnx_dir / f"test_data_set_{k}"
        y = exe(hetpass.read_onnx_tensor(str(d / "input_0.pb")))
        np.testing.assert_allclose(y, hetpass.read_onnx_tensor(str(d / "output_0.pb")),
                                   rtol=1e-4, atol=1e-5)


def test_read_onnx_tensor_errors(tmp_path):
    with pytest.raises(hetpass.Error):
        hetpass.read_onnx_tensor(str(tmp_path / "none.pb"))


def test_kernels_and_listing(mlp):
    exe = hetpass.compile(mlp, device="sim")
    assert exe.kernels()
    assert "invoke_kernel" in exe.listing()
    assert "manifest-alloc" in exe.pipeline


SEQ_TEXT = """\
def @main(%s: seq<f32[?]>, %o: opt<f32[2]>, %i: i64[]) {
  %n = seq.length(%s)
  %e = seq.at(%s, %i)
  %s2 = seq.insert(%s, %e)
  %h = opt.has(%o)
  return %n, %s2, %h
}
"""


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_sequences_are_lists_and_optionals_none_or_a_value(device):
    exe = hetpass.compile(hetpass.parse(SEQ_TEXT), device=device)
    assert [t for _, t in exe.inputs] == ["seq<f32[?]> @cpu", "opt<f32[2]> @cpu", "i64[] @cpu"]
    a, b = np.ones(3, np.float32), np.zeros(2, np.float32)
    n, seq, has = exe([a, b], None, 1)
    assert int(n) == 2 and not bool(has)
    assert isinstance(seq, list) and [x.tolist() for x in seq] == [[1, 1, 1], [0, 0], [0, 0]]
    n, seq, has = exe((a,), np.ones(2, np.float32), 0)
    assert int(n) == 1 and bool(has) and len(seq) == 2
    seq[0][0] = 5  # results are the caller's: the input is untouched
    assert a[0] == 1
    with pytest.raises(ValueError, match="input 0 's' of @main is a sequence"):
        exe(a, None, 0)
    with pytest.raises(ValueError, match="input 0 's' of @main element 1 expects"):
        exe([a, b.astype(np.float64)], None, 0)
