"""Simulated unit changes for the intersection-union equivalence test (``iut_equivalence``).

A design of ``cells`` x ``layers`` units, each with ``runs`` replicate log changes and
``floor`` noise samples (late-training drift) of the same variance. Noise is shared across
the cells of one layer with correlation ``icc`` (a layer that moves moves in every metric),
and each layer may have its own SD (unequal noise across layers).
"""

from __future__ import annotations

import numpy as np

from lie_stats.spec import Prediction
from lie_stats.spec.kinds.intersection import decide_intersection
from lie_stats.spec.rules import Decision
from lie_stats.stats.intersection import iut_equivalence

VERDICTS = ("supported", "refuted", "inconclusive")


def iut_verdicts(rng: np.random.Generator, n_sims: int, mu: np.ndarray, sd: np.ndarray, *,
                 bound: float, icc: float = 0.0, runs: int = 2, floor: int = 2,
                 alpha: float = 0.05) -> dict[str, int]:
    """Verdict counts of ``n_sims`` simulated data sets: true log changes ``mu`` and noise
    SDs ``sd``, both ``[cells, layers]``; per-unit noise floor (the kind's ``pool="layer"``)."""
    cells, layers = mu.shape
    unit = np.arange(cells * layers)
    noise_unit = np.repeat(unit, floor)
    ctx = Decision(Prediction("equivalent", bound=bound), alpha, {}, {"pool": "layer"})
    counts = dict.fromkeys(VERDICTS, 0)

    def draw(k: int) -> np.ndarray:
        shared = rng.normal(size=(1, layers, k))
        own = rng.normal(size=(cells, layers, k))
        return (np.sqrt(icc) * shared + np.sqrt(1 - icc) * own) * sd[..., None]

    for _ in range(n_sims):
        d = (mu[..., None] + draw(runs)).reshape(cells * layers, runs)
        z = draw(floor).reshape(-1)
        row = iut_equivalence(d, unit, z, noise_unit, bound=bound, alpha=alpha).iloc[0].to_dict()
        counts[decide_intersection(row, ctx)[0]] += 1
    return counts
