"""Simulated data and verdict counts for the trend and interval kinds' calibration.

Each ``*_verdicts`` function simulates ``n_sims`` data sets with the structure of real head
data, runs the kind's statistic (:mod:`lie_stats.stats`) and its registered decision rule
(:func:`lie_stats.spec.registry.get_kind`), and counts verdicts and ``p < alpha``. The
calibration tests call them with a few hundred sims; ``benchmarks/calibration_cal_trend.py``
with the full sizes. Structures:

- layer effects: a layer's heads share a random effect with intra-class correlation
  ``icc`` (0.5: as much variance between layers as within);
- co-varying: in ``enrichment``, the layer effect is shared by the first and last value;
- AR(1) trajectories: each run's checkpoint series is a stationary AR(1) with ``phi``;
- unequal layer sizes: ``heads`` is a sequence, one count per layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lie_stats.spec import Decision, Prediction
from lie_stats.spec.registry import frame_row, get_kind
from lie_stats.stats import boundary_ratio, depth_crossover, enrichment, head_mean
from lie_stats.stats.trend import trend_over_runs

ALPHA = 0.05
VERDICTS = ("supported", "refuted", "inconclusive")


def _count(rows, test: str, prediction: Prediction, params=None) -> dict[str, int]:
    """Verdict counts and the number of p < alpha over result frames ``rows``."""
    decide = get_kind(test).decide
    ctx = Decision(prediction, ALPHA, {}, params or {})
    out = dict.fromkeys((*VERDICTS, "p<alpha"), 0)
    for frame in rows:
        row = frame_row(frame, test)
        out[decide(row, ctx)[0]] += 1
        p = row.get("p_value")
        out["p<alpha"] += int(p is not None and np.isfinite(p) and p < ALPHA)
    return out


def layered_values(rng: np.random.Generator, heads: Sequence[int], *, icc: float = 0.5,
                   shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-head values and their layer labels: layer effect of variance ``icc``, head noise
    of variance ``1 - icc``, plus ``shift`` everywhere."""
    layer = np.repeat(np.arange(len(heads)), heads)
    u = np.sqrt(icc) * rng.normal(size=len(heads))
    return shift + u[layer] + np.sqrt(1 - icc) * rng.normal(size=layer.size), layer


def head_mean_verdicts(n_sims: int, seed: int, heads: Sequence[int], *, shift: float = 0.0,
                       icc: float = 0.5, n_perm: int = 999) -> dict[str, int]:
    """``head_mean`` against 0 ("above"): null when ``shift`` is 0."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_sims):
        x, layer = layered_values(rng, heads, icc=icc, shift=shift)
        rows.append(head_mean(x, layer, null_value=0.0, n_boot=199, n_perm=n_perm, seed=int(rng.integers(1 << 30))))
    return _count(rows, "head_mean", Prediction("above", value=0.0))


def share_above_verdicts(n_sims: int, seed: int, heads: Sequence[int], *, share: float = 0.5,
                         icc: float = 0.5, n_perm: int = 999) -> dict[str, int]:
    """``share_above`` of a threshold at the ``share`` quantile against 0.5 ("above"):
    integer-valued heads (ties at the threshold count below it); null when ``share`` is 0.5."""
    from lie_stats.stats import share_above
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    rows = []
    threshold = float(norm.ppf(1 - share))
    for _ in range(n_sims):
        x, layer = layered_values(rng, heads, icc=icc)
        rows.append(share_above(x, threshold, layer, null_value=0.5, n_boot=199, n_perm=n_perm,
                                seed=int(rng.integers(1 << 30))))
    return _count(rows, "share_above", Prediction("above", value=0.5))


def boundary_verdicts(n_sims: int, seed: int, heads: Sequence[int], *, boost: float = 1.0,
                      icc: float = 0.5, summary: str = "mean") -> dict[str, int]:
    """``boundary_ratio`` ("above" 1) of positive head values ``exp(0.5 x)`` (x layered);
    the first and last layers multiplied by ``boost`` (null: 1)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_sims):
        x, layer = layered_values(rng, heads, icc=icc)
        vals = np.exp(0.5 * x)
        vals[(layer == 0) | (layer == len(heads) - 1)] *= boost
        rows.append(boundary_ratio(vals, clusters=layer, summary=summary, n_boot=0))
    return _count(rows, "boundary_ratio", Prediction("above", value=1.0))


def enrichment_verdicts(n_sims: int, seed: int, heads: Sequence[int], *, ratio: float = 1.0,
                        icc: float = 0.5, n_perm: int = 999) -> dict[str, int]:
    """``enrichment`` ("above" 1) of paired positive values: ``first = exp(u + e1)`` and
    ``last = ratio * exp(u + e2)`` with one layer effect ``u`` shared by both (co-varying);
    null when ``ratio`` is 1. Clusters are the layers."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_sims):
        layer = np.repeat(np.arange(len(heads)), heads)
        u = np.sqrt(icc) * rng.normal(size=len(heads))[layer]
        e = np.sqrt(1 - icc) * rng.normal(size=(2, layer.size))
        first, last = np.exp(u + e[0]), ratio * np.exp(u + e[1])
        rows.append(enrichment(first, last, clusters=layer, n_boot=199, n_perm=n_perm,
                               seed=int(rng.integers(1 << 30))))
    return _count(rows, "enrichment", Prediction("above", value=1.0))


def ar1(rng: np.random.Generator, n_steps: int, n_series: int, phi: float) -> np.ndarray:
    """[n_steps, n_series] stationary AR(1) series with unit marginal variance."""
    out = np.empty((n_steps, n_series))
    out[0] = rng.normal(size=n_series)
    for t in range(1, n_steps):
        out[t] = phi * out[t - 1] + np.sqrt(1 - phi ** 2) * rng.normal(size=n_series)
    return out


def trend_verdicts(n_sims: int, seed: int, *, n_runs: int = 8, n_steps: int = 17, phi: float = 0.7,
                   slope: float = 0.0, n_perm: int = 999) -> dict[str, int]:
    """``trend`` ("positive") over ``n_runs`` AR(1) runs of ``n_steps`` checkpoints, plus a
    linear rise of ``slope`` per checkpoint (null: 0)."""
    rng = np.random.default_rng(seed)
    rows = []
    steps = np.arange(n_steps) * 32.0
    for _ in range(n_sims):
        y = ar1(rng, n_steps, n_runs, phi) + slope * np.arange(n_steps)[:, None]
        rows.append(trend_over_runs(y, steps, n_perm=n_perm, seed=int(rng.integers(1 << 30))))
    return _count(rows, "trend", Prediction("positive"))


def crossover_verdicts(n_sims: int, seed: int, *, n_layers: int = 12, heads: int = 8,
                       n_steps: int = 8, gradient: float = 0.0, icc: float = 0.5,
                       n_perm: int = 499) -> dict[str, int]:
    """``depth_crossover`` (from_sign positive, early checkpoint = the second) on per-head
    values with fresh layer effects (ICC ``icc``) at every checkpoint and a depth gradient
    running linearly from ``+gradient`` at the second checkpoint to ``-gradient`` at the
    last (null: 0, pure noise at every checkpoint)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n_steps) * 100.0
    depth = np.arange(n_layers) / (n_layers - 1)
    layer = np.repeat(np.arange(n_layers), heads)
    g = gradient * np.clip(1.0 - 2.0 * (np.arange(n_steps) - 1) / (n_steps - 2), -1.0, 1.0)
    rows = []
    for _ in range(n_sims):
        u = np.sqrt(icc) * rng.normal(size=(n_steps, n_layers))
        e = np.sqrt(1 - icc) * rng.normal(size=(n_steps, layer.size))
        vals = (g[:, None] * (depth - 0.5)[None, :] + u)[:, layer] + e
        rows.append(depth_crossover(vals, steps, layer_of_head=layer, n_boot=0, from_sign="positive",
                                    early_fraction=0.1, n_perm=n_perm, seed=int(rng.integers(1 << 30))))
    return _count(rows, "depth_crossover", Prediction("crossing"))
