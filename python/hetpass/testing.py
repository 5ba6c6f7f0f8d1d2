"""Copy budgets for pytest: assert how many transfers a program makes, and see why when it is off.

``expect_copies`` checks exact counts, of a ledger (what the IR promises, before anything runs)
or of counters (what a run measured)::

    hetpass.testing.expect_copies(module.copy_ledger(), h2d=0, d2h=1, syncs=1)
    hetpass.testing.expect_copies(exe.counters, d2h=1)

``copy_budget`` bounds what the calls inside a ``with`` block may do::

    with hetpass.testing.copy_budget(exe, d2h=1):
        exe(x)

A failure is an ``AssertionError`` (pytest shows its message) listing every copy of the
offending direction with the ledger's reason: the value, devices, bytes, and the op input whose
mask asks for the data. A call given no count to check is a ``TypeError``: it would otherwise
pass whatever the program copies.
"""

from __future__ import annotations

import contextlib
from typing import ContextManager, Dict, Iterator, Mapping, Optional, Union

from ._hetpass import CopyLedger, Counters, Executable

__all__ = ["expect_copies", "copy_budget", "ledger_counts", "describe_copies"]

_DIRECTIONS = ("h2d", "d2h", "d2d", "param")
_COUNT_KEYWORDS = ", ".join(f"{k}=" for k in _DIRECTIONS + ("syncs",))


def ledger_counts(ledger: CopyLedger, symbols: Optional[Mapping[str, int]] = None) -> Dict[str, int]:
    """Copies per inference of each direction and the syncs, evaluated with ``symbols``
    (needed only where a count depends on a loop or branch region)."""
    bound = dict(symbols or {})
    counts = {d: ledger.count(d).evaluate(bound) for d in _DIRECTIONS}
    counts["syncs"] = ledger.syncs().evaluate(bound)
    return counts


def describe_copies(ledger: Optional[CopyLedger], direction: Optional[str] = None) -> str:
    """One line per ledger entry (of one direction, or all): the copies and why they happen."""
    if ledger is None:
        return "  (no ledger: counters alone do not say why)"
    lines = []
    for e in ledger.entries:
        if direction is not None and e.direction != direction:
            continue
        where = " (per loop iteration)" if e.in_loop else ""
        lines.append(
            f"  {e.direction} {e.value} {e.src}->{e.dst}, {e.bytes} B{where}: {e.reason}"
        )
    if not lines:
        return f"  (the ledger of @{ledger.function} lists no {direction or ''} copy)"
    return "\n".join(lines)


def _counts_of(source: Union[CopyLedger, Counters, Executable],
               symbols: Optional[Mapping[str, int]]):
    if isinstance(source, Executable):
        source = source.counters
    if isinstance(source, CopyLedger):
        return ledger_counts(source, symbols), source, "the ledger of @" + source.function
    if isinstance(source, Counters):
        d = source.to_dict()
        counts = {k: d[k + "_calls"] for k in _DIRECTIONS}
        counts["syncs"] = d["syncs"]
        return counts, getattr(source, "ledger", None), "the counters of the last run"
    raise TypeError(
        f"expect_copies takes a CopyLedger, Counters or Executable, not {type(source).__name__}"
    )


def _expected(function: str, others: str, **counts: Optional[int]) -> Dict[str, Optional[int]]:
    """The counts a check was given; none at all is a mistake, not a check that passes: a budget
    asserting nothing would let every copy through while the test stays green."""
    if all(v is None for v in counts.values()):
        raise TypeError(
            f"{function}() was given nothing to check: pass at least one of {_COUNT_KEYWORDS} "
            f"(a count each; {others})"
        )
    return counts


def _check(counts: Mapping[str, int], expected: Mapping[str, Optional[int]], at_most: bool,
           ledger: Optional[CopyLedger], what: str) -> None:
    __tracebackhide__ = True
    bad = []
    for key, want in expected.items():
        if want is None:
            continue
        got = counts[key]
        if (got > want) if at_most else (got != want):
            bad.append((key, want, got))
    if not bad:
        return
    relation = "at most" if at_most else "exactly"
    lines = [f"copy budget broken ({what}):"]
    for key, want, got in bad:
        lines.append(f"  {key}: expected {relation} {want}, got {got}")
    for key, _, _ in bad:
        direction = "d2h" if key == "syncs" else key
        lines.append(f"copies ({direction}) and their reasons:")
        lines.append(describe_copies(ledger, direction))
    raise AssertionError("\n".join(lines))


def expect_copies(
    source: Union[CopyLedger, Counters, Executable],
    *,
    h2d: Optional[int] = None,
    d2h: Optional[int] = None,
    d2d: Optional[int] = None,
    param: Optional[int] = None,
    syncs: Optional[int] = None,
    symbols: Optional[Mapping[str, int]] = None,
) -> None:
    """Asserts exact counts of the directions given (others are not checked).

    ``source``: a ledger (counts per inference, ``symbols`` binding region counts such as
    ``$loop0``), counters, or an executable (its last run's counters)."""
    __tracebackhide__ = True
    expected = _expected("expect_copies", "symbols= only binds region counts such as $loop0",
                         h2d=h2d, d2h=d2h, d2d=d2d, param=param, syncs=syncs)
    counts, ledger, what = _counts_of(source, symbols)
    _check(counts, expected, False, ledger, what)


def copy_budget(
    exe: Executable,
    *,
    h2d: Optional[int] = None,
    d2h: Optional[int] = None,
    d2d: Optional[int] = None,
    param: Optional[int] = None,
    syncs: Optional[int] = None,
    exact: bool = False,
) -> ContextManager[None]:
    """Bounds the copies every run of ``exe`` inside the block makes together (at most the
    budget; ``exact=True``: exactly). Directions not given are not checked; giving none is a
    ``TypeError`` at the call, before the block runs."""
    expected = _expected("copy_budget", "exact= only says how they are compared",
                         h2d=h2d, d2h=d2h, d2d=d2d, param=param, syncs=syncs)
    return _budget(exe, expected, exact)


@contextlib.contextmanager
def _budget(exe: Executable, expected: Mapping[str, Optional[int]],
            exact: bool) -> Iterator[None]:
    __tracebackhide__ = True
    before = exe.total_counters.to_dict()
    runs_before = exe.runs
    yield
    after = exe.total_counters.to_dict()
    counts = {k: after[k + "_calls"] - before[k + "_calls"] for k in _DIRECTIONS}
    counts["syncs"] = after["syncs"] - before["syncs"]
    runs = exe.runs - runs_before
    _check(counts, expected, not exact, exe.ledger,
           f"{runs} run(s) of @{exe.function} on {exe.device} inside the block")
