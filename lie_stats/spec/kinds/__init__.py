"""The test kinds of lie_stats, one family a folder; importing this package registers them.

| folder | kinds |
|---|---|
| :mod:`.correlation` | ``correlation``, ``partial_correlation``, ``replication`` |
| :mod:`.equivalence` | ``correlation_equivalence``, ``tost_relative``, ``tost_paired`` |
| :mod:`.groups` | ``group_difference`` |
| :mod:`.trend` | ``trend``, ``enrichment``, ``boundary_ratio``, ``depth_crossover`` |
| :mod:`.models` | ``model_comparison``, ``mixed_model`` |
| :mod:`.clustered` | ``share_above``, ``head_mean`` |
| :mod:`.ranks` | ``delta_rank``, ``delta_order``, ``ratio_of_changes`` |
| :mod:`.pairwise` | ``head_enrichment_excess``, ``enrichment_profile``, ``functional_boundary_shift`` |
| :mod:`.classification` | ``class_interaction``, ``threshold_agreement``, ``stabilization_time``, ``class_auc`` |
| :mod:`.agreement` | ``verdict_agreement`` (built with :func:`compression_agreement`) |
| :mod:`.intersection` | ``iut_equivalence`` |
| :mod:`.meta` | ``meta_replication`` |

A family is one folder, ``<family>/``:

- ``__init__.py``: for each of its kinds, the binding (selected data -> the statistic of
  :mod:`lie_stats.stats`), the decision rule when no shared rule of
  :mod:`lie_stats.spec.rules` fits, the checks only that kind knows (its validate hook), and
  one :func:`~lie_stats.spec.registry.register_test` call;
- ``design.py``: ``DESIGNS``, a dict from each of its kinds to the
  :class:`~lie_stats.spec.simulate.Design` that simulates its data under the null and with
  the reference effect planted (``lie-stats diagnose`` draws from it, and so can a kind's
  calibration check), built from the blocks of :mod:`lie_stats.spec.simulate`.

Every folder of this package is imported (in name order; the order does not matter), then
its ``design`` module, whose designs :data:`DESIGNS` merges (a kind given a design twice is
an error). A new kind is its statistic in :mod:`lie_stats.stats` plus its folder here;
``lie-stats kinds`` lists it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from .agreement import compression_agreement, compression_tag

_FAMILIES = [info.name for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
             if not info.name.startswith("_")]

#: The family modules (binding and rule) of this package, in the order they were imported.
FAMILY_MODULES = tuple(importlib.import_module(f"{__name__}.{name}").__name__ for name in _FAMILIES)


def _collect_designs(families: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``DESIGNS`` of the ``design`` modules of the family packages ``families``, merged,
    and the module each design comes from; a kind given a design twice is an error."""
    out: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for family in families:
        package = importlib.import_module(family)
        if not any(m.name == "design" for m in pkgutil.iter_modules(package.__path__)):
            continue
        module = importlib.import_module(f"{family}.design")
        for kind, design in getattr(module, "DESIGNS", {}).items():
            if kind in out:
                raise RuntimeError(f"design for kind {kind!r} defined in both {owner[kind]} and "
                                   f"{module.__name__}")
            out[kind], owner[kind] = design, module.__name__
    return out, owner


#: The built-in designs, by kind name (each family's ``design.DESIGNS``), and the module
#: each comes from.
DESIGNS, DESIGN_HOMES = _collect_designs(FAMILY_MODULES)


def design_for(kind: Any) -> Any:
    """The kind's own design (``register_test(design=...)``), else the built-in one of its
    family's folder, else None."""
    return getattr(kind, "design", None) or DESIGNS.get(kind.name)


__all__ = ["compression_agreement", "compression_tag", "FAMILY_MODULES", "DESIGNS",
           "DESIGN_HOMES", "design_for"]
