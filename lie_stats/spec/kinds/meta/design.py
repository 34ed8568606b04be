"""Meta-analysis kinds: the correlation design applied to every run: ``y`` permuted over
heads within each layer of each run (null), the reference rho planted within each layer of
each run (planted). Its own module, so that the designs other kinds' cached diagnoses were
computed with are unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...simulate import Arrays, Design, null_permute, plant_correlation, reference_number


def _plant_rho_every_run(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    rho = reference_number(spec, ("rho", "r"), "correlation")
    method = str(spec.resolved_params().get("method", "spearman"))
    return plant_correlation(arrays, rho, method, rng), rho


def _zero(row: Any, spec: Any) -> float:
    """0: the pooled correlation under the null."""
    return 0.0


DESIGNS = {
    "meta_replication": Design(
        null=null_permute("y"), plant=_plant_rho_every_run, null_value=_zero,
        what=("null: y permuted over heads within the layers of every run; planted: the reference "
              "rho within the layers of every run")),
}
