"""The built-in designs, one module per family of test kinds.

Each module of this package defines ``DESIGNS``, a dict from kind name to its
:class:`~lie_stats.diagnosis.simulate.Design`; :data:`DESIGNS` here merges them (a kind
named twice is an error). A new design is a new module here, or a kind's own
``register_test(design=...)``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..simulate import Design

__all__ = ["DESIGNS", "design_for"]


def _collect() -> dict[str, Design]:
    out: dict[str, Design] = {}
    owner: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for kind, design in getattr(module, "DESIGNS", {}).items():
            if kind in out:
                raise RuntimeError(f"design for kind {kind!r} defined in both {owner[kind]} and "
                                   f"{module.__name__}")
            out[kind], owner[kind] = design, module.__name__
    return out


#: The built-in designs, by kind name.
DESIGNS: dict[str, Design] = _collect()


def design_for(kind: Any) -> Design | None:
    """The kind's own design (``register_test(design=...)``), else the built-in one, else None."""
    return getattr(kind, "design", None) or DESIGNS.get(kind.name)
