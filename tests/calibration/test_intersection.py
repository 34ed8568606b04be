"""The ``iut_equivalence`` VERDICT at the bound, under shared and unequal layer noise, and its power.

Design of A1: 4 cells (metric x family) x 12 layers = 48 units, 2 replicate runs, 2 noise
samples per unit (late-pretraining drift), bound 0.1 % (b = log 1.001), alpha 0.05.

- "supported" at the bound: the intersection-union test is level alpha when one unit sits
  exactly at the bound and every other unit is far inside it (the least favourable null);
  the count must lie in the 99 % binomial band of alpha, with independent noise and with
  layers of unequal noise (lognormal SD, the bound unit in the noisiest layer) shared across
  cells (ICC 0.5);
- "refuted" when every unit sits at the bound (the least favourable null of the union
  claim "some unit beyond"): Bonferroni keeps the rate at most alpha;
- power: every change 0 with noise b / 10 is supported; noise 20 b (the real data's
  ~2 %) supports nothing and says the floor is too wide.

300 simulations per case, seeds fixed before the first run.
"""

from __future__ import annotations

import numpy as np
import pytest

from ._design import binomial_band
from ._design_claims import iut_verdicts

pytestmark = pytest.mark.slow

N_SIMS, ALPHA = 300, 0.05
CELLS, LAYERS = 4, 12
B = float(np.log1p(1e-3))


def _at_bound(layer_sd: np.ndarray) -> np.ndarray:
    mu = np.zeros((CELLS, LAYERS))
    mu.flat[int(np.argmax(layer_sd))] = B  # the bound unit in the noisiest layer
    return mu


def test_supported_at_the_bound_holds_alpha():
    sd = np.full((CELLS, LAYERS), B / 20)
    mu = np.zeros((CELLS, LAYERS))
    mu[1, 5] = B
    counts = iut_verdicts(np.random.default_rng(11), N_SIMS, mu, sd, bound=1e-3)
    lo, hi = binomial_band(N_SIMS, ALPHA)
    assert lo <= counts["supported"] <= hi, counts


def test_supported_at_the_bound_holds_alpha_with_unequal_shared_layer_noise():
    rng = np.random.default_rng(12)
    sd = np.exp(rng.normal(0.0, 0.5, size=(CELLS, LAYERS))) * B / 20
    counts = iut_verdicts(rng, N_SIMS, _at_bound(sd), sd, bound=1e-3, icc=0.5)
    assert counts["supported"] <= binomial_band(N_SIMS, ALPHA)[1], counts


def test_refuted_when_every_unit_is_at_the_bound_is_at_most_alpha():
    mu = B * np.where(np.arange(CELLS * LAYERS) % 2 == 0, 1.0, -1.0).reshape(CELLS, LAYERS)
    counts = iut_verdicts(np.random.default_rng(13), N_SIMS, mu, np.full((CELLS, LAYERS), B),
                          bound=1e-3, icc=0.5)
    assert counts["refuted"] <= binomial_band(N_SIMS, ALPHA)[1], counts
    assert counts["supported"] == 0


def test_power_when_every_change_is_tiny_and_none_when_the_floor_is_wide():
    zero = np.zeros((CELLS, LAYERS))
    counts = iut_verdicts(np.random.default_rng(14), 100, zero, np.full((CELLS, LAYERS), B / 10),
                          bound=1e-3, icc=0.5)
    assert counts["supported"] >= 90, counts
    wide = iut_verdicts(np.random.default_rng(15), 50, zero, np.full((CELLS, LAYERS), 20 * B),
                        bound=1e-3, icc=0.5)
    assert wide["supported"] == 0 and wide["inconclusive"] >= 45, wide
