"""Pictures of a module at every pipeline stage: what ``pass-viz`` writes, from Python.

``render(module, "viz")`` writes ``viz/index.html`` and one picture per view of every stage of
the device's default pipeline (``device="sim"`` unless given; the same stages as ``pass-viz``
and ``hetpass run``), ``passes="infer-types,plan-devices{target=sim},manifest-alloc"`` another
pipeline, ``passes="none"`` the input alone (docs/pass_viz.md). The module itself is not
changed: the passes run on a copy.
"""

from __future__ import annotations

import os
from typing import Iterable, List, Optional, Union

from . import _hetpass
from ._hetpass import Module

__all__ = ["render"]


def render(
    module: Module,
    out_dir: Union[str, "os.PathLike[str]"],
    passes: Optional[str] = None,
    *,
    device: str = "sim",
    formats: Iterable[str] = ("svg",),
    dump_after: Iterable[str] = ("all",),
    picture_seconds: float = 5.0,
    copy_view: bool = True,
    copy_hops: int = 2,
) -> List[dict]:
    """Draws the input stage and the module after every pass in ``dump_after``.

    Returns one dict per stage: ``title``, ``pass``, ``copies`` (how many) and ``files``
    (written, relative to ``out_dir``). The index is ``out_dir/index.html``. A failing pass
    still leaves the pictures up to it, with the error on the page, and then raises.
    """
    return _hetpass._render(
        module,
        os.fspath(out_dir),
        passes,
        device,
        list(formats),
        list(dump_after),
        float(picture_seconds),
        bool(copy_view),
        int(copy_hops),
    )
