"""The built-in designs, by kind name: each family folder's ``design.DESIGNS``
(:mod:`lie_stats.spec.kinds`), merged there; a kind's own ``register_test(design=...)``
comes first (:func:`design_for`)."""

from __future__ import annotations

from ..spec.kinds import DESIGN_HOMES, DESIGNS, design_for

__all__ = ["DESIGNS", "DESIGN_HOMES", "design_for"]
