"""Correlation kinds: the tested role permuted over heads within layers; the reference rho
planted within layers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...simulate import (Arrays, Design, null_permute, plant_correlation, reference_number,
                        zero_or_null_center)


def _plant_rho(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    rho = reference_number(spec, ("rho", "r"), "correlation")
    method = str(spec.resolved_params().get("method", "spearman"))
    return plant_correlation(arrays, rho, method, rng), rho


_CORRELATION = Design(
    null=null_permute("y"), plant=_plant_rho, null_value=zero_or_null_center,
    what="null: y permuted over heads within layers; planted: the reference rho within layers")

DESIGNS = {
    "correlation": _CORRELATION,
    "partial_correlation": _CORRELATION,
    "replication": _CORRELATION,
}
