"""hetpass.viz.render: pass-viz's pictures and index from Python."""

from __future__ import annotations

import pytest

import hetpass
import hetpass.viz
from conftest import SIM_PIPELINE


def test_render_writes_index_and_pictures(mlp, tmp_path):
    before = str(mlp)
    stages = hetpass.viz.render(mlp, tmp_path / "viz", passes=SIM_PIPELINE)
    assert str(mlp) == before  # the passes ran on a copy
    assert (tmp_path / "viz" / "index.html").is_file()
    assert len(stages) == 1 + len(SIM_PIPELINE.split(","))
    assert stages[0]["title"] == "stage 0: input"
    assert stages[-1]["pass"] == "manifest-alloc"
    assert stages[-1]["copies"] >= 2
    for s in stages:
        assert s["files"], s
        for f in s["files"]:
            assert (tmp_path / "viz" / f).is_file(), f
            assert f.endswith(".svg")
    html = (tmp_path / "viz" / "index.html").read_text()
    assert "manifest-alloc" in html


def test_render_without_passes_draws_the_default_pipeline(mlp, tmp_path):
    # As pass-viz: no pipeline means the device's default one (placed, with its copies); "none"
    # draws the input alone.
    stages = hetpass.viz.render(mlp, tmp_path / "default", copy_view=False)
    assert [s["pass"] for s in stages][-1] == "plan-memory"
    assert "plan-devices" in [s["pass"] for s in stages]
    assert stages[-1]["copies"] >= 2
    cpu = hetpass.viz.render(mlp, tmp_path / "cpu", device="cpu", copy_view=False)
    assert cpu[-1]["copies"] == 0
    alone = hetpass.viz.render(mlp, tmp_path / "alone", passes="none")
    assert [s["pass"] for s in alone] == [""]
    with pytest.raises(ValueError, match="device must be cpu, sim or cuda, got 'tpu'"):
        hetpass.viz.render(mlp, tmp_path, device="tpu")


def test_render_dump_after_and_formats(mlp, tmp_path):
    stages = hetpass.viz.render(mlp, tmp_path, passes=SIM_PIPELINE, dump_after=["plan-devices"],
                                formats=["svg", "dot"], copy_view=False)
    assert [s["pass"] for s in stages] == ["", "plan-devices"]
    assert any(f.endswith(".dot") for f in stages[1]["files"])


def test_render_errors(mlp, tmp_path):
    with pytest.raises(ValueError, match="no-such-pass"):
        hetpass.viz.render(mlp, tmp_path, passes="no-such-pass")
    with pytest.raises(ValueError, match="cse"):
        hetpass.viz.render(mlp, tmp_path, passes="infer-types", dump_after=["cse"])
    with pytest.raises(ValueError, match="format"):
        hetpass.viz.render(mlp, tmp_path, passes="infer-types", formats=["gif2"])
    with pytest.raises(ValueError, match="copy_hops"):
        hetpass.viz.render(mlp, tmp_path, passes="infer-types", copy_hops=-1)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(hetpass.Error, match="file"):
        hetpass.viz.render(mlp, blocker / "sub", passes="infer-types")


def test_render_failing_pass_keeps_the_pictures_before_it(tmp_path):
    # fuse-ops on untyped IR fails; the input stage is still drawn and the page shows the error.
    m = hetpass.parse("def @main(%x: f32[n]) {\n  %a = exp(%x)\n  return %a\n}\n")
    with pytest.raises(hetpass.Error, match="infer-types"):
        hetpass.viz.render(m, tmp_path, passes="fuse-ops")
    assert (tmp_path / "index.html").is_file()
    assert "infer-types" in (tmp_path / "index.html").read_text()
