"""Threads: calls release the GIL; one Executable serves one call at a time (its counters stay
its own), and clone() gives each thread a VM of its own over the same compiled program.
Device memory limits raise MemoryError naming the value. (docs/python.md, "Threads")"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hetpass
from conftest import SIM_PIPELINE, model_dir

THREADS = 4
CALLS = 60


def mlp_onnx():
    d = model_dir("mlp_dynamic_batch")
    module = hetpass.import_onnx(d / "model.onnx")
    x = hetpass.read_onnx_tensor(str(d / "test_data_set_0" / "input_0.pb"))
    return module, x


def batches(x: np.ndarray):
    rng = np.random.default_rng(7)
    return [rng.standard_normal((b, x.shape[1])).astype(np.float32) for b in (1, 3, 8, 16)]


def run_threads(target):
    errors: list[BaseException] = []

    def guarded(t):
        try:
            target(t)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_clones_run_in_parallel_bit_identical_with_exact_counters(device):
    module, x = mlp_onnx()
    exe = hetpass.compile(module, device=device)
    inputs = batches(x)
    want = [exe(i).copy() for i in inputs]
    want_counters = []
    for i in inputs:
        exe(i)
        want_counters.append(exe.counters.to_dict())
    clones = [exe.clone() for _ in range(THREADS)]

    def work(t):
        c = clones[t]
        for k in range(CALLS):
            j = (k + t) % len(inputs)
            got = c(inputs[j])
            assert np.array_equal(got, want[j]), f"thread {t} call {k}: outputs differ"
            counters = c.counters.to_dict()
            for key in ("h2d_calls", "h2d_bytes", "d2h_calls", "d2h_bytes", "launches", "syncs"):
                assert counters[key] == want_counters[j][key], (t, k, key)
            assert c.compare_with_ledger().exact

    run_threads(work)
    assert [c.runs for c in clones] == [CALLS] * THREADS


def test_one_executable_shared_by_threads_serves_one_call_at_a_time(mlp_sim):
    exe = hetpass.compile(mlp_sim, passes=SIM_PIPELINE)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (2, 5, 9)]
    bounds = [np.array(v, dtype=np.int64) for v in ([0, 0], [100, 3], [1, 1])]
    want = [exe(x, *bounds).copy() for x in xs]

    def work(t):
        for k in range(CALLS):
            j = (k * 7 + t) % len(xs)
            assert np.array_equal(exe(xs[j], *bounds), want[j])
            assert exe.compare_with_ledger().exact

    exe.reset_counters()
    run_threads(work)
    assert exe.runs == THREADS * CALLS
    # Every call copied its slice back once: the totals are the sum of exactly these calls.
    assert exe.total_counters.d2h_calls == THREADS * CALLS


def test_device_memory_limit_raises_memory_error_naming_the_value():
    module, x = mlp_onnx()
    big = np.random.default_rng(5).standard_normal((256, x.shape[1])).astype(np.float32)
    exe = hetpass.compile(module, device="sim")
    exe(x[:1])
    small_peak = exe.counters.peak_held_bytes
    want = exe(big).copy()
    big_peak = exe.counters.peak_held_bytes
    assert small_peak < big_peak
    limited = hetpass.compile(module, device="sim", device_memory_limit=(small_peak + big_peak) // 2)
    with pytest.raises(MemoryError) as e:
        limited(big)
    msg = str(e.value)
    assert msg.startswith("@main pc ") and "sim: device memory limit: requested " in msg, msg
    limited.trim_memory()
    limited(x[:1])  # within the limit: the same executable goes on
    # Below the constants, the load itself fails, naming the constant.
    with pytest.raises(MemoryError, match=r"placing constant 0 \(%fc1_weight"):
        hetpass.compile(module, device="sim", device_memory_limit=1024)
    with pytest.raises(ValueError, match="device_memory_limit must be >= 0"):
        hetpass.compile(module, device="sim", device_memory_limit=-1)
    exe.trim_memory()
    assert np.array_equal(exe(big), want)
