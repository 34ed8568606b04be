"""``correlation_equivalence`` (TOST of the within-layer correlation within ±bound): the
null puts the within-layer correlation at +bound or -bound (the edge of equivalence, where
each one-sided test holds its level); the planted effect is no correlation (``y`` permuted
over heads within layers)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..simulate import (Arrays, Design, bound_of, permute_heads, plant_correlation,
                        zero_or_null_center)


def _method(spec: Any) -> str:
    return str(spec.resolved_params().get("method", "spearman"))


def _null_at_bound(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    """y permuted within layers (the real association removed), then rebuilt with the
    within-layer correlation +bound or -bound on the kind's scale."""
    rho = bound_of(spec) * rng.choice((-1.0, 1.0))
    shuffled = {**arrays, "y": permute_heads(arrays["y"], rng)}
    return plant_correlation(shuffled, rho, _method(spec), rng)


def _plant_uncorrelated(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    return {**arrays, "y": permute_heads(arrays["y"], rng)}, 0.0


DESIGNS = {
    "correlation_equivalence": Design(
        null=_null_at_bound, plant=_plant_uncorrelated, null_value=zero_or_null_center, sign=False,
        what="null: y permuted over heads within layers, then rebuilt with the within-layer "
             "correlation at +bound or -bound; planted: y permuted within layers (correlation 0)"),
}
