"""Simulators and the calibration band shared by the statistics tests.

Calibration: under a true null, a test at alpha 0.05 applied to 2,000 independent
datasets rejects a Binomial(2000, 0.05) number of times; its central 99 % band is [76, 126]
(``scipy.stats.binom(2000, 0.05).ppf([0.005, 0.995])`` = [76, 126]). Permutation tests use 199 (or 499)
resamples per dataset: with B + 1 = 200, p is a multiple of 1/200 and P(p <= 0.05) = 10/200
exactly, so the band argument holds with few permutations.
"""

from __future__ import annotations

import numpy as np

N_DATASETS = 2000
BAND = (76, 126)
ALPHA = 0.05


def rejections(pvalues) -> int:
    """Number of p-values at or below ALPHA."""
    return int(np.count_nonzero(np.asarray(pvalues, dtype=float) <= ALPHA))


def layered(rng: np.random.Generator, n_layers: int = 12, heads: int = 8, layer_sd: float = 1.5):
    """Head data nested in layers: a random layer effect in x and (independently) in y, no
    head-level association: the null that free permutation gets wrong."""
    layer = np.repeat(np.arange(n_layers), heads)
    n = layer.size
    x = layer_sd * rng.normal(size=n_layers)[layer] + rng.normal(size=n)
    y = layer_sd * rng.normal(size=n_layers)[layer] + rng.normal(size=n)
    return x, y, layer
