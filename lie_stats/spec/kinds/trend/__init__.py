"""Kinds over training and depth: ``trend``, ``enrichment``, ``boundary_ratio``,
``depth_crossover`` (METRICS.md §6; :mod:`lie_stats.stats.trend`).

``trend`` is a monotone trend over checkpoints, tested over independent runs (the
checkpoints of one run are autocorrelated); ``enrichment`` the ratio last / first over paired
units, tested by swapping first and last in whole clusters; ``boundary_ratio`` the boundary
layers of one model over its interior layers, tested by permuting layers;
``depth_crossover`` the step at which the depth-gradient slope changes sign in a declared
direction, as a fraction of training, tested by the slope's sign early and at the end.
Each verdict comes from the test (each side at alpha / 2); intervals describe the estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .... import schema
from .... import columns as C
from ....columns import (BOOT_SHARE_CROSSING, P_EARLY, P_EARLY_AGAINST, P_LATE, P_LATE_AGAINST,
                              P_MIN)
from ....stats.trend import SIGNS, boundary_ratio, depth_crossover, enrichment, trend_over_runs
from ...parts import SUMMARIES
from ...registry import RESAMPLING, register_test
from ...rules import Decision, decide_one_sided, finite
from ...tables import TestInput, columns_of, one_model, step_series

__all__ = ["decide_crossing", "decide_ratio_test"]


def _run_trend(data: TestInput) -> Any:
    p = data.params
    values, steps, flat = step_series(data, "values")
    runs = (flat[schema.MODEL].values if schema.MODEL in flat.coords
            else np.zeros(values.shape[1], dtype=object))
    labels = list(dict.fromkeys(runs.tolist()))
    series = np.stack([np.nanmean(values[:, runs == r], axis=1) for r in labels], axis=1)
    return trend_over_runs(series, steps, method=p["method"], n_perm=p["n_perm"], seed=p["seed"])


def decide_ratio_test(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the exact test's one-sided p towards the prediction is below alpha / 2,
    refuted when the one-sided p the other way is, inconclusive otherwise or when the
    smallest attainable p is not below alpha / 2 (decide_one_sided). The test is of "no
    effect" (first and last exchangeable, or boundary and interior layers exchangeable), so
    a prediction against a value other than 1 is inconclusive; the interval describes the
    estimate.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("above", value=2.0), 0.05, {}, {})
    >>> decide_ratio_test({"p_greater": 0.001, "p_less": 1.0, "p_min": 0.001}, ctx)[0]
    'inconclusive'
    """
    if float(ctx.prediction.value) != 1.0:
        return "inconclusive", (f"the test is of a ratio of 1 (no effect); a prediction against "
                                f"{ctx.prediction.value} has no calibrated test in this kind")
    return decide_one_sided(row, ctx)


def _run_enrichment(data: TestInput) -> Any:
    p = data.params
    table, (first, last), strata = columns_of(data, "first", "last")
    return enrichment(first, last, clusters=strata, paired=True, n_boot=p["n_boot"],
                      ci=p["ci"], seed=p["seed"], n_perm=p["n_perm"],
                      alternative=p["alternative"])


def _run_boundary_ratio(data: TestInput) -> Any:
    p = data.params
    one_model(data, "values", "boundary_ratio")
    table = data.table("values")
    return boundary_ratio(table["values"].to_numpy(float),
                          clusters=table[schema.LAYER].to_numpy(), summary=p["summary"],
                          n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                          alternative=p["alternative"])


def _run_depth_crossover(data: TestInput) -> Any:
    p = data.params
    one_model(data, "values", "depth_crossover")
    values, steps, flat = step_series(data, "values")
    row = depth_crossover(values, steps, layer_of_head=flat[schema.LAYER].values,
                          n_boot=p["n_boot"], seed=p["seed"], ci=p["ci"], from_sign=p["from_sign"],
                          early_fraction=p["early_fraction"], n_perm=p["n_perm"])
    # stats reports the interval in steps and the effect as a fraction of training; put the
    # interval on the effect's scale (fraction of the last step) so the two compare
    last = float(np.max(steps))
    return row.assign(**{C.CI_LOW: row[C.CI_LOW] / last, C.CI_HIGH: row[C.CI_HIGH] / last})


def decide_crossing(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the depth-gradient slope has the declared from_sign at the early
    checkpoint (after warm-up) and the other sign at the last one, each by a one-sided layer
    permutation test at alpha / 2 (an intersection-union test); refuted when either slope is
    significant against its declared sign at alpha / 4 (Bonferroni over the two); otherwise
    inconclusive. The crossover step, its interval and the share of bootstrap resamples
    that cross describe the estimate.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("crossing"), 0.05, {}, {})
    >>> decide_crossing({"p_early": 0.001, "p_late": 0.004, "p_early_against": 1.0,
    ...                  "p_late_against": 1.0, "p_min": 1e-4}, ctx)[0]
    'supported'
    >>> decide_crossing({"p_early": 0.001, "p_late": 1.0, "p_early_against": 1.0,
    ...                  "p_late_against": 0.001, "p_min": 1e-4}, ctx)[0]
    'refuted'
    """
    a = ctx.alpha
    pe, pl = row.get(P_EARLY), row.get(P_LATE)
    pea, pla = row.get(P_EARLY_AGAINST), row.get(P_LATE_AGAINST)
    share = row.get(BOOT_SHARE_CROSSING)
    crossing = f"; {share:.0%} of bootstrap resamples cross" if finite(share) else ""
    if not finite(pe, pl, pea, pla):
        return "inconclusive", "the slope tests gave no p-value on these data"
    p_min = row.get(P_MIN)
    if finite(p_min) and p_min >= a / 4:
        return "inconclusive", f"too few layers: the smallest p of the slope test ({p_min:.3g}) is not below alpha / 4"
    if pe < a / 2 and pl < a / 2:
        return "supported", (f"the slope has the declared sign early (p {pe:.3g}) and the other sign "
                             f"at the end (p {pl:.3g}), each < alpha / 2{crossing}")
    if pea < a / 4 or pla < a / 4:
        which = "early" if pea < a / 4 else "at the end"
        return "refuted", (f"the slope {which} is significantly against its declared sign "
                           f"(p < alpha / 4){crossing}")
    return "inconclusive", (f"the declared sign change is not shown (early p {pe:.3g}, end p {pl:.3g}; "
                            f"each needs < alpha / 2){crossing}")


register_test("trend", _run_trend, decide_one_sided, roles=("values",),
              params={"method": "spearman", "alternative": "two-sided", "n_perm": 9999},
              description="monotone trend over checkpoints: each run's correlation of the mean "
                          "selected value with step, sign-flip test over runs (one run: "
                          "inconclusive; lie_stats.stats.trend_over_runs)")
register_test("enrichment", _run_enrichment, decide_ratio_test, roles=("first", "last"),
              params={"alternative": "two-sided", **RESAMPLING}, directions=("above", "below"),
              description="enrichment last/first: swap test of first and last in whole clusters, "
                          "cluster-bootstrap interval (METRICS §6.1, lie_stats.stats.enrichment)")
register_test("boundary_ratio", _run_boundary_ratio, decide_ratio_test, roles=("values",),
              params={"summary": "mean", "alternative": "two-sided", "n_boot": 2000, "ci": 0.95},
              enums={"summary": SUMMARIES}, directions=("above", "below"),
              description="boundary layers over interior layers of one model: exact layer-"
                          "permutation test (METRICS §6.3, lie_stats.stats.boundary_ratio); select "
                          "per-head values (summary 'cv' of commutator_mean is head_heterogeneity); "
                          "the interval resamples heads within layers")
register_test("depth_crossover", _run_depth_crossover, decide_crossing, roles=("values",),
              params={"n_boot": 2000, "ci": 0.95, "n_perm": 9999, "from_sign": None,
                      "early_fraction": 0.0},
              required_params=("from_sign",), enums={"from_sign": SIGNS}, directions=("crossing",),
              description="depth-gradient slope of the declared from_sign early (first checkpoint "
                          "at or after early_fraction of training) and the other sign at the end, "
                          "layer-permutation tests; crossover step as a fraction of training "
                          "(METRICS §6.2, lie_stats.stats.depth_crossover)")
