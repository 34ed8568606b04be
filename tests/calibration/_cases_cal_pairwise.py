"""Calibration cases of the classification, group, pairwise and agreement kinds: each case
simulates one data set with the structure of real head data and returns the kind's VERDICT
(its registered decision rule on the statistic's result row) and whether the deciding p is
below alpha. The tests (``tests/calibration/test_{classification,pairwise,agreement}.py``)
run a few hundred of each; ``benchmarks/calibration_cal_pairwise.py`` the full figures.

Nulls: layer effects in the metrics (SD 1.5 between layers, 1 within), label prevalence
varying by layer (0.15-0.5 anchors), unequal layer sizes (4-12 heads), few clusters (5 or 8
layers), ties (metrics rounded to one decimal), mean-reverting trajectories (AR(1) head
departures). Powers: the planted effect named in each case.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lie_stats.spec import Prediction
from lie_stats.spec.kinds.agreement import decide_agreement
from lie_stats.spec.rules import Decision
from lie_stats.stats.classification import (
    class_auc,
    class_interaction,
    threshold_agreement,
    threshold_zones,
    time_to_fraction,
)
from lie_stats.stats.correlation import correlation
from lie_stats.stats.groups import group_difference
from lie_stats.stats.pairwise import boundary_enrichment, functional_boundary_shift, head_enrichment_excess

from ._design_cal_pairwise import (
    ANCHOR,
    MIXED,
    WORKER,
    flat,
    killing_pair,
    kind_verdict,
    layer_enrichment_pair,
    layer_sizes,
    layered_labels,
    layered_metric,
    reverting_heads,
    strata_of,
)

ALPHA = 0.05
#: Monte Carlo resamples of every p: p = (1 + b) / 200, so P(p < 0.05) = P(b <= 8) = 9/200
#: exactly under the null (:data:`MC_RATE`).
N_PERM = 199
MC_RATE = 9 / 200


@dataclass(frozen=True)
class Case:
    """One calibration design: ``simulate(rng) -> (verdict, p < alpha)``.

    ``null``: whether no effect is planted; ``supported_rate`` / ``refuted_rate``: each
    verdict's rate under the null (alpha / 2 for a two-sided p decided by the sign, alpha for
    a one-sided p and its opposite); ``p_rate``: the rate of p < alpha under the null."""

    kind: str
    description: str
    null: bool
    simulate: Callable[[np.random.Generator], tuple[str, bool]]
    supported_rate: float = MC_RATE / 2
    refuted_rate: float = MC_RATE / 2
    p_rate: float = MC_RATE


def _p(row) -> float:
    return float(row["p_value"].iloc[0])


# ----------------------------------------------------------------------------- labelled heads


def _labelled(rng, n_layers, shift=0.0, decimals=1):
    sizes = layer_sizes(rng, n_layers)
    labels = flat(layered_labels(rng, sizes), sizes)
    x = flat(layered_metric(rng, sizes), sizes) + shift * (labels == ANCHOR)
    if decimals is not None:
        x = np.round(x, decimals)
    return sizes, labels, x


def auc_case(n_layers: int, shift: float = 0.0):
    def simulate(rng):
        sizes, labels, x = _labelled(rng, n_layers, shift)
        row = class_auc(x, labels == ANCHOR, strata=strata_of(sizes), n_perm=N_PERM, n_boot=0,
                        seed=int(rng.integers(1 << 30)))
        return kind_verdict("class_auc", row, Prediction("positive", value=0.5)), _p(row) < ALPHA
    return simulate


def group_case(n_layers: int, shift: float = 0.0):
    def simulate(rng):
        sizes, labels, x = _labelled(rng, n_layers, -shift)  # anchors lower: workers - anchors > 0
        keep = np.isin(labels, (ANCHOR, WORKER))
        row = group_difference(x[keep], labels[keep] == WORKER, strata=strata_of(sizes)[keep],
                               n_perm=N_PERM, n_boot=0, seed=int(rng.integers(1 << 30)))
        return kind_verdict("group_difference", row, Prediction("positive")), _p(row) < ALPHA
    return simulate


def interaction_case(n_layers: int, delta: float = 0.0):
    def simulate(rng):
        sizes, labels, x = _labelled(rng, n_layers)
        keep = np.isin(labels, (ANCHOR, WORKER))
        strata = strata_of(sizes)
        layer_y = 1.5 * rng.normal(size=n_layers)[strata]
        slope = 0.5 + delta * (labels == WORKER)  # workers' slope larger by delta
        y = np.round(slope * (x - x.mean()) + layer_y + rng.normal(size=x.size), 1)
        row = class_interaction(y[keep], x[keep], labels[keep] == WORKER, strata=strata[keep],
                                n_perm=N_PERM, n_boot=0, seed=int(rng.integers(1 << 30)))
        return kind_verdict("class_interaction", row, Prediction("positive")), _p(row) < ALPHA
    return simulate


def threshold_case(n_layers: int, signal: float = 0.0):
    zone_of = {ANCHOR: 0.0, MIXED: 1.0, WORKER: 2.0}

    def simulate(rng):
        sizes, labels, score = _labelled(rng, n_layers, decimals=None)
        score = 0.3 * score + signal * (labels == WORKER) - signal * (labels == ANCHOR)
        observed = np.array([zone_of[int(c)] for c in labels])
        row = threshold_agreement(threshold_zones(np.round(score, 1), 0.5), observed,
                                  strata=strata_of(sizes), n_perm=N_PERM, n_boot=0,
                                  seed=int(rng.integers(1 << 30)))
        return kind_verdict("threshold_agreement", row, Prediction("positive")), _p(row) < ALPHA
    return simulate


STEPS = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])


def stabilization_case(n_layers: int, shift: float = 0.0):
    def simulate(rng):
        sizes, labels, _ = _labelled(rng, n_layers)
        strata = strata_of(sizes)
        log_tau = 3.0 + 0.8 * rng.normal(size=n_layers)[strata] + 0.5 * rng.normal(size=labels.size)
        log_tau = log_tau - shift * (labels == WORKER)  # workers settle sooner
        traj = 1.0 - np.exp(-STEPS[:, None] / np.exp(log_tau)[None, :])
        traj = traj + 0.01 * rng.normal(size=traj.shape)
        t = time_to_fraction(traj, STEPS, fraction=0.9, scale="log")
        keep = np.isin(labels, (ANCHOR, WORKER)) & np.isfinite(t)
        row = group_difference(t[keep], labels[keep] == WORKER, strata=strata[keep], n_perm=N_PERM,
                               n_boot=0, seed=int(rng.integers(1 << 30)))
        return kind_verdict("stabilization_time", row, Prediction("negative")), _p(row) < ALPHA
    return simulate


# ----------------------------------------------------------------------------- pairwise


def excess_case(n_layers: int, drift: float = 0.0, phi: float = 0.8):
    def simulate(rng):
        hv, lv = reverting_heads(rng, n_layers=n_layers, drift=drift, phi=phi)
        row = head_enrichment_excess(hv, lv, n_perm=N_PERM, n_boot=0, seed=int(rng.integers(1 << 30)))
        return kind_verdict("head_enrichment_excess", row, Prediction("above", value=1.0)), _p(row) < ALPHA
    return simulate


def shift_case(anchors: int = 0, summary: str = "cv"):
    def simulate(rng):
        k0, k1, w0, w1 = killing_pair(rng, anchors=anchors)
        row = functional_boundary_shift(k0, k1, w0, w1, summary=summary, n_perm=N_PERM, n_boot=0,
                                        seed=int(rng.integers(1 << 30)), alternative="less")
        return kind_verdict("functional_boundary_shift", row, Prediction("below", value=1.0)), _p(row) < ALPHA
    return simulate


def profile_case(n_layers: int = 12, boundary: float = 1.0):
    def simulate(rng):
        first, last = layer_enrichment_pair(rng, n_layers=n_layers, boundary=boundary)
        row = boundary_enrichment(first, last, n_boot=0, alternative="greater")
        return kind_verdict("enrichment_profile", row, Prediction("above", value=1.0)), _p(row) < ALPHA
    return simulate


#: p < alpha rate of the exact layer-permutation p over C(12, 2) = 66 boundary choices:
#: p = k / 66 < 0.05 for k <= 3.
PROFILE_RATE = 3 / 66


# ----------------------------------------------------------------------------- agreement

COMPRESSIONS = ("none", "adaptive", "fixed:64")


def agreement_verdicts(rng, rhos, *, n_layers: int = 12, n_heads: int = 8,
                       compression_sd: float = 0.5) -> tuple[str, bool]:
    """The ``correlation`` kind's verdict (prediction positive) under each compression:
    compression ``c`` observes the head metric with its own noise (SD ``compression_sd``)
    and a within-layer correlation ``rhos[c]`` with the other metric; layer effects shared
    by both metrics. Returns the agreement verdict and whether the old any-difference rule
    (range of the codes > 0.5) would have refuted."""
    strata = np.repeat(np.arange(n_layers), n_heads)
    layer = 1.5 * rng.normal(size=n_layers)[strata]
    y = layer + rng.normal(size=strata.size)
    e = rng.normal(size=strata.size)
    row = {}
    codes = []
    for comp, rho in zip(COMPRESSIONS, rhos):
        x = layer + rho * (y - layer) + math.sqrt(1 - rho ** 2) * e + compression_sd * rng.normal(size=strata.size)
        res = correlation(x, y, strata=strata, n_perm=N_PERM, n_boot=0, seed=int(rng.integers(1 << 30)))
        v = kind_verdict("correlation", res, Prediction("positive"))
        code = {"supported": 1.0, "inconclusive": 0.0, "refuted": -1.0}[v]
        codes.append(code)
        row[f"verdict_{comp.replace(':', '_')}"] = code
    row["effect"] = max(codes) - min(codes)
    ctx = Decision(Prediction("equivalent", bound=0.5), ALPHA, {}, {"compressions": list(COMPRESSIONS)})
    return decide_agreement(row, ctx)[0], row["effect"] > 0.5


def agreement_case(rhos):
    def simulate(rng):
        verdict, old_refuted = agreement_verdicts(rng, rhos)
        return verdict, old_refuted  # second: the old rule's "refuted"
    return simulate


CASES: dict[str, Case] = {
    "class_auc/null 12 layers": Case("class_auc", "12 layers of 4-12 heads, ties, layer effects", True, auc_case(12)),
    "class_auc/null 5 layers": Case("class_auc", "5 layers of 4-12 heads, ties, layer effects", True, auc_case(5)),
    "class_auc/power": Case("class_auc", "anchors +0.8 within-layer SD, 12 layers", False, auc_case(12, 0.8)),
    "group_difference/null 12 layers": Case("group_difference", "workers vs anchors, 12 layers, ties", True, group_case(12)),
    "group_difference/null 5 layers": Case("group_difference", "workers vs anchors, 5 layers, ties", True, group_case(5)),
    "group_difference/power": Case("group_difference", "workers +0.8 SD over anchors, 12 layers", False, group_case(12, 0.8)),
    "class_interaction/null 8 layers": Case("class_interaction", "common slope 0.5, layer effects in x and y, ties", True, interaction_case(8)),
    "class_interaction/power": Case("class_interaction", "workers' slope +0.8 over anchors', 8 layers", False, interaction_case(8, 0.8)),
    "threshold_agreement/null 12 layers": Case("threshold_agreement", "score unrelated to labels within layers", True, threshold_case(12)),
    "threshold_agreement/power": Case("threshold_agreement", "score +-0.4 for workers / anchors", False, threshold_case(12, 0.4)),
    "stabilization_time/null 8 layers": Case("stabilization_time", "log time constants with layer effects", True, stabilization_case(8)),
    "stabilization_time/power": Case("stabilization_time", "workers' log time constant 0.5 lower", False, stabilization_case(8, 0.5)),
    "head_enrichment_excess/null AR(1) 24 layers": Case("head_enrichment_excess", "24 layers x 8 heads x 10 steps, departures AR(1) phi 0.8 (increment variance ratio 0.48)", True, excess_case(24), MC_RATE, MC_RATE),
    "head_enrichment_excess/null AR(1) phi 0.3": Case("head_enrichment_excess", "as above, faster reversion phi 0.3 (ratio 0.16)", True, excess_case(24, phi=0.3), MC_RATE, MC_RATE),
    "head_enrichment_excess/null AR(1) 6 layers": Case("head_enrichment_excess", "6 layers (exact sign flips), phi 0.8", True, excess_case(6), 3 / 64, 3 / 64, 3 / 64),
    "head_enrichment_excess/power": Case("head_enrichment_excess", "head 0 of each layer drifts 1.0 log units (3.3 departure SD), 24 layers", False, excess_case(24, 1.0)),
    "functional_boundary_shift/null": Case("functional_boundary_shift", "value norms unrelated to the Killing geometry, 12 layers x 8 heads", True, shift_case(0), MC_RATE, MC_RATE),
    "functional_boundary_shift/power": Case("functional_boundary_shift", "3 boundary anchors: rows 4x more dispersed, value norm x0.1", False, shift_case(3)),
    "enrichment_profile/null": Case("enrichment_profile", "exchangeable layer growth, 12 layers", True, profile_case(12), PROFILE_RATE, PROFILE_RATE, PROFILE_RATE),
    "enrichment_profile/power": Case("enrichment_profile", "first and last layer grow 2x more", False, profile_case(12, 2.0)),
    "verdict_agreement/agree, no effect": Case("verdict_agreement", "3 compressions, within-layer rho 0 in each", True, agreement_case((0.0, 0.0, 0.0))),
    "verdict_agreement/agree, rho 0.2": Case("verdict_agreement", "3 compressions, rho 0.2 in each (target power about 1/2)", True, agreement_case((0.2, 0.2, 0.2))),
    "verdict_agreement/opposite": Case("verdict_agreement", "rho 0.35, 0.35 and -0.35 (one compression reverses the effect)", False, agreement_case((0.35, 0.35, -0.35))),
}


def run_case(case: Case, n: int, seed: int) -> dict[str, int]:
    """Counts of each verdict and of the case's second flag over ``n`` simulations."""
    rng = np.random.default_rng(seed)
    counts = {"supported": 0, "refuted": 0, "inconclusive": 0, "flag": 0}
    for _ in range(n):
        verdict, flag = case.simulate(rng)
        counts[verdict] += 1
        counts["flag"] += int(flag)
    return counts


def check_null(name: str, n: int, seed: int) -> dict[str, int]:
    """Run a null case and assert each verdict's count and the p < alpha count lie in their
    binomial 99 % bands; returns the counts."""
    from ._design import binomial_band

    case = CASES[name]
    assert case.null, name
    counts = run_case(case, n, seed)
    for key, rate in (("supported", case.supported_rate), ("refuted", case.refuted_rate),
                      ("flag", case.p_rate)):
        lo, hi = binomial_band(n, rate)
        assert lo <= counts[key] <= hi, (name, key, counts, (lo, hi))
    return counts
