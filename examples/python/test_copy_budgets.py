"""Copy budgets of an imported ONNX model, asserted from pytest.

Mask R-CNN (../shared/models/maskrcnn_tiny, a PyTorch export with If/Loop, NonMaxSuppression
and RoiAlign) compiled for the simulated accelerator three times: with hetpass's per-input
masks and with the two baselines (the same placement and fusion; only the masks differ, see
docs/baselines). The ledger promises a count before anything runs; the runs on both test sets
(different image sizes and detection counts) must make exactly those copies.

    PYTHONPATH=build/python python3 -m pytest examples/python/test_copy_budgets.py
"""

from __future__ import annotations

import os
import pathlib

import pytest

import hetpass
from hetpass.testing import copy_budget, expect_copies

SHARED = pathlib.Path(os.environ.get("HETPASS_SHARED_DIR",
                                     pathlib.Path(__file__).resolve().parents[2].parent / "shared"))
MODEL = SHARED / "models" / "maskrcnn_tiny"


@pytest.fixture(scope="module")
def model() -> hetpass.Module:
    if not (MODEL / "model.onnx").is_file():
        raise FileNotFoundError(f"{MODEL}/model.onnx is missing (../shared beside the checkout)")
    return hetpass.import_onnx(MODEL / "model.onnx")


def inputs(k: int):
    d = MODEL / f"test_data_set_{k}"
    return [hetpass.read_onnx_tensor(str(p)) for p in sorted(d.glob("input_*.pb"))]


# masks -> (device-to-host copies per inference as the ledger writes them, per test set)
# The mask-pasting loop runs 16 and 13 times; its scan output is stacked on sim, one counted
# device-to-device copy per iteration, whatever the masks.
LOOP_TRIPS = (16, 13)
BUDGETS = {
    None: ("$if0_else + $if1_else + 11", (13, 13)),
    "relay": ("$if0_else + $if1_else + $loop2 + 19", (37, 34)),
    "single-flag": ("$if0_else + $if1_else + $loop2*9 + 46", (192, 165)),
}


@pytest.mark.parametrize("baseline", list(BUDGETS), ids=lambda b: b or "hetpass")
def test_device_to_host_copies(model, baseline):
    exe = hetpass.compile(model, device="sim", baseline=baseline)
    promised, per_set = BUDGETS[baseline]
    assert str(exe.ledger.count("d2h")) == promised
    assert str(exe.ledger.count("d2d")) == "$loop2"
    for k, d2h in enumerate(per_set):
        exe(*inputs(k))
        expect_copies(exe, d2h=d2h, d2d=LOOP_TRIPS[k], syncs=d2h)
        assert exe.compare_with_ledger().agrees


def test_our_masks_keep_the_detector_within_its_budget(model):
    exe = hetpass.compile(model, device="sim")
    with copy_budget(exe, d2h=2 * 13, d2d=sum(LOOP_TRIPS)):
        exe(*inputs(0))
        exe(*inputs(1))
