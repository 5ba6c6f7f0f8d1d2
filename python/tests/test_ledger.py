"""The copy ledger as objects: entries, totals, regions, JSON."""

from __future__ import annotations

import json

import pytest

import hetpass
from conftest import SIM_PIPELINE


@pytest.fixture
def ledger(mlp_sim):
    return mlp_sim.run_passes(SIM_PIPELINE).copy_ledger()


def test_entries_carry_direction_bytes_value_reason(ledger):
    assert ledger.function == "main"
    by_dir = {}
    for e in ledger:
        by_dir.setdefault(e.direction, []).append(e)
    assert len(ledger) == len(ledger.entries) == sum(len(v) for v in by_dir.values())
    (h2d,) = by_dir["h2d"]
    assert (h2d.value, h2d.src, h2d.dst) == ("%x", "cpu", "sim")
    assert h2d.bytes.evaluate(n=16) == 16 * 8 * 4
    assert "runs on sim" in h2d.reason
    assert not h2d.synchronizes and not h2d.implied and not h2d.in_loop
    assert h2d.region == -1
    (d2h,) = by_dir["d2h"]
    assert d2h.synchronizes
    assert d2h.src == "sim" and d2h.dst == "cpu"
    # begin/end/strides travel by value in the launch: kernel parameters, not copies.
    assert sorted(e.value for e in by_dir["param"]) == ["%begin", "%end", "%strides"]
    assert all(e.bytes == 16 for e in by_dir["param"])
    assert "LedgerEntry(h2d %x cpu->sim" in repr(h2d)


def test_totals(ledger):
    assert ledger.count("h2d") == 1
    assert ledger.count("d2h") == 1
    assert ledger.count("d2d") == 0
    assert ledger.count("param") == 3
    assert ledger.sites("param") == 3
    assert ledger.syncs() == 1
    assert ledger.bytes("param").evaluate() == 48
    with pytest.raises(ValueError, match="h2x"):
        ledger.count("h2x")


def test_json_and_text(ledger):
    data = json.loads(ledger.to_json())
    assert data["function"] == "main"
    assert len(data["entries"]) == len(ledger)
    assert str(ledger) == ledger.to_text()
    assert "copy ledger of @main" in str(ledger)


def test_ledger_before_manifest_alloc_lists_implied_copies(mlp):
    # After plan-devices the host shape function of the slice needs nothing from the device:
    # its bounds stay on the host, and only the result is copied back.
    ledger = mlp.run_passes("infer-types,plan-devices{target=sim}").copy_ledger()
    assert ledger.count("d2h") == 1


def test_ledger_of_a_missing_function_is_not_found(mlp):
    with pytest.raises(LookupError, match="nope"):
        mlp.copy_ledger("nope")


# A loop whose body runs on both devices: a copy each way per iteration.
LOOP_TEXT = """\
def @main(%x: f32[4]) {
  %n = constant<3> : i64[]
  %c = constant<1> : bool[]
  %r = loop(%n, %c, %x) (%i: i64[], %cond: bool[], %v: f32[4]) {
    %u = add(%v, %v) @sim
    %w = negative(%u) @cpu
    yield %cond, %w
  }
  return %r
}
"""


def test_loop_regions_in_counts():
    ledger = hetpass.parse(LOOP_TEXT).run_passes(SIM_PIPELINE).copy_ledger()
    assert [r.symbol for r in ledger.regions] == ["$loop0"], ledger.to_text()
    region = ledger.regions[0]
    assert region.loop and region.function == "main$loop0"
    assert region.parent == -1
    # One copy each way per iteration: the counts are expressions of the region's symbol.
    assert str(ledger.count("h2d")) == "$loop0"
    assert ledger.count("d2h").evaluate({"$loop0": 3}) == 3
    assert ledger.syncs().evaluate({"$loop0": 5}) == 5
    assert all(e.in_loop and e.region == 0 for e in ledger)
