"""Designs of the equivalence kinds.

- ``tost_paired``, ``tost_relative`` (equivalence of paired values): the paired differences
  re-centred at the bound with their residuals sign-flipped by layer; planted: the same
  re-centred at 0.
- ``correlation_equivalence`` (TOST of the within-layer correlation within +/-bound): the
  null puts the within-layer correlation at +bound or -bound (the edge of equivalence, where
  each one-sided test holds its level); the planted effect is no correlation (``y`` permuted
  over heads within layers)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...simulate import (Arrays, Design, NotPlantable, aligned, bound_of, flip_differences,
                         permute_heads, plant_correlation, zero_or_null_center)


def _null_at_bound(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    a, b = aligned(arrays, "a", "b")
    shift = bound_of(spec) * rng.choice((-1.0, 1.0))
    return {**arrays, "a": a, "b": flip_differences(a, b, shift, rng)}


def _plant_equal(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    a, b = aligned(arrays, "a", "b")
    return {**arrays, "a": a, "b": flip_differences(a, b, 0.0, rng)}, 0.0


def _log_pair(arrays: Arrays) -> tuple[Any, Any]:
    """log(base), log(tuned) aligned unit by unit, each without its (one) model."""
    import xarray as xr

    logs = []
    for role in ("base", "tuned"):
        da = arrays[role].reset_coords(drop=True)
        if "model" in da.dims:
            if da.sizes["model"] != 1:
                raise NotPlantable(f"selection[{role!r}] holds {da.sizes['model']} models, not one")
            da = da.isel(model=0, drop=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs.append(np.log(da.where(da > 0)))
    base, tuned = xr.align(*logs, join="inner")
    return base, tuned.transpose(*base.dims)


def _relative(arrays: Arrays, shift: float, rng: np.random.Generator) -> Arrays:
    base, tuned = _log_pair(arrays)
    return {**arrays, "base": np.exp(base), "tuned": np.exp(flip_differences(base, tuned, shift, rng))}


def _null_relative_at_bound(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    return _relative(arrays, math.log1p(bound_of(spec)) * rng.choice((-1.0, 1.0)), rng)


def _plant_unchanged(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    return _relative(arrays, 0.0, rng), 0.0


_PAIRED_EQUIVALENCE = Design(
    null=_null_at_bound, plant=_plant_equal, null_value=zero_or_null_center, sign=False,
    what="null: paired differences b - a re-centred at +bound or -bound, their residuals "
         "sign-flipped by (model, layer); planted: the same re-centred at 0 (b equals a)")


_RELATIVE_EQUIVALENCE = Design(
    null=_null_relative_at_bound, plant=_plant_unchanged, null_value=zero_or_null_center, sign=False,
    what="null: log(tuned / base) re-centred at +log(1 + bound) or -log(1 + bound), its "
         "residuals sign-flipped by layer; planted: the same re-centred at 0 (no change)")


def _method(spec: Any) -> str:
    return str(spec.resolved_params().get("method", "spearman"))


def _null_correlation_at_bound(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    """y permuted within layers (the real association removed), then rebuilt with the
    within-layer correlation +bound or -bound on the kind's scale."""
    rho = bound_of(spec) * rng.choice((-1.0, 1.0))
    shuffled = {**arrays, "y": permute_heads(arrays["y"], rng)}
    return plant_correlation(shuffled, rho, _method(spec), rng)


def _plant_uncorrelated(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    return {**arrays, "y": permute_heads(arrays["y"], rng)}, 0.0


DESIGNS = {
    "tost_paired": _PAIRED_EQUIVALENCE,
    "tost_relative": _RELATIVE_EQUIVALENCE,
    "correlation_equivalence": Design(
        null=_null_correlation_at_bound, plant=_plant_uncorrelated, null_value=zero_or_null_center,
        sign=False,
        what="null: y permuted over heads within layers, then rebuilt with the within-layer "
             "correlation at +bound or -bound; planted: y permuted within layers (correlation 0)"),
}
