"""Fixtures of the Python package's tests: the shared models and the repository's examples.

The tests import `hetpass` from PYTHONPATH (ctest sets it to the build tree's package). A model
a test needs and cannot find is an error, never a skip.
"""

from __future__ import annotations

import os
import pathlib

import pytest

import hetpass

SOURCE_DIR = pathlib.Path(
    os.environ.get("HETPASS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2])
)
SHARED_DIR = pathlib.Path(os.environ.get("HETPASS_SHARED_DIR", SOURCE_DIR.parent / "shared"))

# The dynamic MLP of examples/dynamic_mlp.hir, small: a run-time slice whose begin/end/strides
# the shape function reads on the host, on data the accelerator computed.
MLP_TEXT = """\
def @main(%x: f32[n, 8], %begin: i64[2], %end: i64[2], %strides: i64[2]) {
  %w = constant<[1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0]> : f32[4, 8]
  %b = constant<[1, 1, 1, 1]> : f32[4]
  %h = nn.dense(%x, %w)
  %hb = nn.bias_add(%h, %b) {axis = -1}
  %a = nn.relu(%hb)
  %s = dyn.strided_slice(%a, %begin, %end, %strides)
  return %s
}
"""

# The same with the slice pinned to the accelerator: its bounds travel as kernel parameters and
# only the slice comes back.
MLP_SIM_TEXT = MLP_TEXT.replace("%strides)\n", "%strides) @sim\n")

SIM_PIPELINE = "infer-types,fold-constants,cse,dce,plan-devices{target=sim},fuse-ops,manifest-alloc"


def model_dir(name: str) -> pathlib.Path:
    d = SHARED_DIR / "models" / name
    if not (d / "model.onnx").is_file():
        raise FileNotFoundError(
            f"{d}/model.onnx is missing: ../shared must sit beside the checkout "
            "(or set HETPASS_SHARED_DIR)"
        )
    return d


@pytest.fixture
def mlp() -> hetpass.Module:
    return hetpass.parse(MLP_TEXT, source_name="mlp.hir")


@pytest.fixture
def mlp_sim() -> hetpass.Module:
    return hetpass.parse(MLP_SIM_TEXT, source_name="mlp_sim.hir")


@pytest.fixture(scope="session")
def nonzero_gather_dir() -> pathlib.Path:
    return model_dir("nonzero_gather")


@pytest.fixture(scope="session")
def mlp_onnx_dir() -> pathlib.Path:
    return model_dir("mlp_dynamic_batch")
