"""hetpass.testing: exact copy counts and copy budgets, with the reasons in the failure."""

from __future__ import annotations

import numpy as np
import pytest

import hetpass
from hetpass.testing import copy_budget, describe_copies, expect_copies, ledger_counts
from test_executable import slice_args
from test_ledger import LOOP_TEXT


@pytest.fixture
def exe(mlp_sim):
    return hetpass.compile(mlp_sim, device="sim")


def test_expect_copies_on_a_ledger_passes_and_fails_with_reasons(exe):
    expect_copies(exe.ledger, h2d=1, d2h=1, d2d=0, param=3, syncs=1)
    with pytest.raises(AssertionError) as info:
        expect_copies(exe.ledger, d2h=0)
    msg = str(info.value)
    assert "d2h: expected exactly 0, got 1" in msg
    assert "the ledger of @main" in msg
    # The offending copy, its devices and why it happens.
    assert "d2h %s sim->cpu" in msg
    assert "returned from @main" in msg


def test_expect_copies_on_counters_and_executables(exe):
    exe(*slice_args(4))
    expect_copies(exe.counters, h2d=1, d2h=1, syncs=1)
    expect_copies(exe, h2d=1, d2h=1)
    with pytest.raises(AssertionError) as info:
        expect_copies(exe.counters, h2d=0)
    msg = str(info.value)
    assert "h2d: expected exactly 0, got 1" in msg
    assert "the counters of the last run" in msg
    assert "h2d %x cpu->sim" in msg and "runs on sim" in msg


def test_expect_copies_rejects_other_objects():
    with pytest.raises(TypeError, match="CopyLedger"):
        expect_copies({"h2d": 1}, h2d=1)


def test_a_check_given_no_count_is_an_error(exe):
    # It would assert nothing: every copy would pass and the test would stay green.
    keywords = "h2d=, d2h=, d2d=, param=, syncs="
    for call in (lambda: expect_copies(exe.ledger), lambda: expect_copies(exe, symbols={"n": 4}),
                 lambda: expect_copies({"h2d": 1})):
        with pytest.raises(TypeError, match=r"expect_copies\(\) was given nothing") as info:
            call()
        assert keywords in str(info.value)
    # copy_budget refuses at the call, before the block runs.
    with pytest.raises(TypeError, match=r"copy_budget\(\) was given nothing to check") as info:
        copy_budget(exe, exact=True)
    assert keywords in str(info.value)
    ran = []
    with pytest.raises(TypeError, match="nothing to check"):
        with copy_budget(exe):
            ran.append(exe(*slice_args(4)))
    assert not ran and exe.runs == 0
    # A zero is a count to check.
    expect_copies(exe.ledger, d2d=0)
    with copy_budget(exe, d2d=0):
        exe(*slice_args(4))


def test_loop_ledger_needs_its_region_symbols():
    ledger = hetpass.compile(hetpass.parse(LOOP_TEXT), device="sim").ledger
    counts = ledger_counts(ledger, {"$loop0": 3})
    assert counts["h2d"] == 3 and counts["d2h"] == 3
    expect_copies(ledger, h2d=3, d2h=3, syncs=3, symbols={"$loop0": 3})
    with pytest.raises(ValueError, match="loop0"):
        expect_copies(ledger, h2d=3)  # the count needs the region symbol


def test_copy_budget_passes_and_fails(exe):
    with copy_budget(exe, d2h=2, h2d=2):
        exe(*slice_args(4))
        exe(*slice_args(5))
    with copy_budget(exe, d2h=1, exact=True):
        exe(*slice_args(4))
    with pytest.raises(AssertionError) as info:
        with copy_budget(exe, d2h=1):
            exe(*slice_args(4))
            exe(*slice_args(6))
    msg = str(info.value)
    assert "d2h: expected at most 1, got 2" in msg
    assert "2 run(s) of @main on sim" in msg
    assert "returned from @main" in msg
    with pytest.raises(AssertionError, match="expected exactly 2, got 0"):
        with copy_budget(exe, h2d=2, exact=True):
            pass


def test_copy_budget_on_cpu_is_zero(mlp):
    exe = hetpass.compile(mlp, device="cpu")
    with copy_budget(exe, h2d=0, d2h=0, d2d=0, syncs=0, exact=True):
        for n in (1, 2, 3):
            exe(*slice_args(n))


def test_describe_copies(exe):
    text = describe_copies(exe.ledger)
    assert text.count("\n") + 1 == len(exe.ledger)
    assert "no d2d copy" in describe_copies(exe.ledger, "d2d")
    assert "no ledger" in describe_copies(None)


def test_counters_after_an_error_are_of_the_failed_run(exe):
    x, b, e, _ = slice_args(4)
    with pytest.raises(hetpass.Error):
        exe(x, b, e, np.array([0, 1], np.int64))
    # A failed run counts in neither runs nor total counters.
    assert exe.runs == 0
    assert exe.total_counters.h2d_calls == 0
