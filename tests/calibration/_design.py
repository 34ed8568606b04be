"""Simulated cubes with the structure of real head data, and the binomial bands of rates.

A calibration check runs a test kind's whole evaluation (selection, statistic, decision
rule: :func:`lie_stats.spec.evaluate_cube`) on many simulated cubes and counts verdicts.
Under a true null the number of cubes with a given verdict is Binomial(n, rate): the check
passes when the count lies in the central 99 % band (``scipy.stats.binom.ppf``).

Two kinds of simulated data check a kind, and they are different generators on purpose:

- here, parametric data with a known truth (normal layer effects of a given intra-class
  correlation, AR(1) trajectories, lognormal pair forms, replicate runs with a noise floor):
  whether the statistic and the rule hold their level under the null the test assumes, on
  structures chosen to break naive tests;
- the kind's design (``lie_stats/spec/kinds/<family>/design.py``): a spec's own selected
  data with the tested effect taken out (permuted, swapped, sign-flipped, detrended) or the
  reference effect planted, which ``lie-stats diagnose`` runs through the same binding and
  rule (``tests/spec/test_adding_a_kind.py`` calibrates a kind on its design that way).

None of the generators of ``tests/calibration/`` draws as a design does (each starts from
nothing, a design from real data), so they stay here.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import stats as sps

from lie_stats import schema


def binomial_band(n: int, rate: float, level: float = 0.99) -> tuple[int, int]:
    """Central ``level`` band of a Binomial(n, rate) count.

    >>> binomial_band(300, 0.025)
    (2, 15)
    """
    lo, hi = sps.binom(n, rate).ppf([(1 - level) / 2, (1 + level) / 2])
    return int(lo), int(hi)


def layered_pair(rng: np.random.Generator, *, n_layers: int = 12, n_heads: int = 8,
                 layer_sd: float = 1.5, layer_rho: float = 0.9,
                 within_rho: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """[layer, head] arrays x and y: layer effects of SD ``layer_sd`` in both, correlated
    ``layer_rho`` across layers (co-varying layer means, the between-layer association a
    pooled correlation picks up), and a head-level correlation ``within_rho`` inside layers."""
    u = rng.normal(size=n_layers)
    v = layer_rho * u + np.sqrt(1 - layer_rho ** 2) * rng.normal(size=n_layers)
    e1 = rng.normal(size=(n_layers, n_heads))
    e2 = within_rho * e1 + np.sqrt(1 - within_rho ** 2) * rng.normal(size=(n_layers, n_heads))
    return layer_sd * u[:, None] + e1, layer_sd * v[:, None] + e2


def head_cube(x: np.ndarray, y: np.ndarray, *, x_var: str = "head_contribution",
              y_var: str = "change_from_init") -> xr.Dataset:
    """A one-model, two-checkpoint cube holding ``x`` at the first step and ``y`` at the last."""
    n_layers, n_heads = x.shape
    dims = (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    nan = np.full_like(x, np.nan)
    coords = {schema.MODEL: ["sim"], schema.STEP: [0, 100], schema.LAYER: np.arange(n_layers),
              schema.HEAD: np.arange(n_heads)}
    return xr.Dataset({x_var: (dims, np.stack([x, nan])[None]),
                       y_var: (dims, np.stack([nan, y])[None])}, coords)
