"""Rank kinds over parameter categories and runs: ``delta_rank``, ``delta_order``,
``ratio_of_changes`` (:mod:`lie_stats.stats.ranks`).

``delta_rank`` is where a parameter category ranks (1 = changed most) in one model's
parameter-delta map (METRICS.md §6.4; :mod:`lie_stats.delta`), shown by one-sided tests
over layers against every other category; ``delta_order`` whether declared groups of
categories hold the top ranks in order, every pair tested over layers; ``ratio_of_changes`` the mean change of one
selection over the mean change of another over the same units (pretraining against
post-training, runs paired in order), Fieller's test over layers within runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ....errors import SpecError, StatsInputError
from .... import columns as C
from ....columns import (BOOT_SHARE, N_CATEGORIES, N_SHOWN_LARGER, N_SHOWN_SMALLER, ORDER_HOLDS,
                              P_ABOVE, P_BELOW, P_ORDER, P_REVERSED)
from ....stats.ranks import delta_order, delta_rank, ratio_of_changes
from ...parts import Prediction
from ...registry import UNITS, register_test
from ...rules import Decision, finite
from ...tables import DELTA_ROLES, TestInput, delta_inputs, model_matrix

__all__ = ["decide_delta_rank", "decide_delta_order", "decide_ratio_of_changes", "ratio_band"]


def _run_delta_rank(data: TestInput) -> Any:
    p = data.params
    tot, lv, nv, cats = delta_inputs(data, "delta_rank")
    return delta_rank(tot, lv, nv, categories=cats, target=p["target"], n_boot=p["n_boot"],
                               ci=p["ci"], seed=p["seed"])


def _run_delta_order(data: TestInput) -> Any:
    p = data.params
    tot, lv, nv, cats = delta_inputs(data, "delta_order")
    return delta_order(tot, lv, nv, categories=cats, groups=[list(g) for g in p["order"]],
                                n_boot=p["n_boot"], seed=p["seed"])


def decide_delta_rank(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """The rank r = 1 + (categories that changed more) is shown above v when at least
    floor(v - 1) + 1 categories are shown to have changed more than the target, and shown
    below v when at least K - ceil(v - 1) are shown to have changed less (one-sided tests
    over layers, Holm at (1 - ci) / 2 each way: :func:`lie_stats.stats.ranks.delta_rank`).
    Supported when the rank is shown on the predicted side of v, refuted when it is shown
    on the other, inconclusive otherwise. The bootstrap interval of the rank is reported,
    not used: with 12 layers a percentile interval covers too little.

    >>> ctx = Decision(Prediction("above", value=6.0), 0.05, {}, {"ci": 0.95})
    >>> decide_delta_rank({"n_categories": 11, "n_shown_larger": 6, "n_shown_smaller": 0}, ctx)[0]
    'supported'
    >>> decide_delta_rank({"n_categories": 11, "n_shown_larger": 5, "n_shown_smaller": 6}, ctx)[0]
    'refuted'
    >>> decide_delta_rank({"n_categories": 11, "n_shown_larger": 5, "n_shown_smaller": 5}, ctx)[0]
    'inconclusive'
    """
    k, larger, smaller = row.get(N_CATEGORIES), row.get(N_SHOWN_LARGER), row.get(N_SHOWN_SMALLER)
    if not finite(k, larger, smaller):
        return "inconclusive", "no pairwise tests of the rank on these data"
    v, d = float(ctx.prediction.value), ctx.prediction.direction
    level = (1.0 - float(ctx.params.get("ci", 0.95))) / 2.0
    need_above = math.floor(v - 1) + 1  # categories shown larger: rank > v
    need_below = int(k) - math.ceil(v - 1)  # categories shown smaller: rank < v
    above, below = larger >= need_above, smaller >= need_below
    shown = (f"{int(larger)} categories shown to have changed more and {int(smaller)} less than the "
             f"target (Holm, {level:g} each way; rank > {v:g} needs {need_above} more, rank < {v:g} "
             f"needs {need_below} less)")
    if (d == "above" and above) or (d == "below" and below):
        return "supported", f"the rank is shown {d} {v:g}: {shown}"
    if (d == "above" and below) or (d == "below" and above):
        return "refuted", f"the rank is shown on the other side of {v:g}: {shown}"
    return "inconclusive", f"the rank is not shown on either side of {v:g}: {shown}"


def decide_delta_order(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Pairwise tests over layers at level 1 - value (value 0.95: 5 %). Supported when every
    pair of the declared order is shown in its order (``p_order``, the largest pairwise p,
    below the level: an intersection-union test); refuted when some pair is shown reversed
    (``p_reversed``, Bonferroni over the pairs, below the level); inconclusive otherwise.
    The bootstrap share of resamples in which the order holds is reported, not used (it
    is no test: on 12 layers a share of 95 % is reached by orders that do not hold).

    >>> ctx = Decision(Prediction("above", value=0.95), 0.05, {}, {})
    >>> decide_delta_order({"p_order": 0.01, "p_reversed": 1.0, "order_holds": 1}, ctx)[0]
    'supported'
    >>> decide_delta_order({"p_order": 0.9, "p_reversed": 0.001, "order_holds": 0}, ctx)[0]
    'refuted'
    """
    p_order, p_rev = row.get(P_ORDER), row.get(P_REVERSED)
    if not finite(p_order, p_rev):
        return "inconclusive", "no pair of categories to order on these data"
    level = 1.0 - float(ctx.prediction.value)
    if p_order < level:
        return "supported", (f"every pair of the declared order is shown in its order (largest pairwise "
                             f"p {p_order:.3g} < {level:g})")
    if p_rev < level:
        return "refuted", (f"a pair of the declared order is shown reversed (p {p_rev:.3g} < {level:g}, "
                           f"Bonferroni over the pairs)")
    holds = "holds" if row.get(ORDER_HOLDS) == 1 else "fails"
    return "inconclusive", (f"the order {holds} on the point values but is not shown (largest pairwise p "
                            f"{p_order:.3g}, reversed p {p_rev:.3g}, level {level:g})")


def ratio_band(prediction: Prediction) -> tuple[float, float]:
    """The band of ratios a prediction of ``ratio_of_changes`` puts the ratio in.

    >>> ratio_band(Prediction("equivalent", value=500.0, bound=1.0))
    (50.0, 5000.0)
    """
    v = float(prediction.value)
    if prediction.direction == "equivalent":
        b = float(prediction.bound)
        return v / 10.0 ** b, v * 10.0 ** b
    if prediction.direction == "below":
        return -np.inf, v
    return v, np.inf


def _run_ratio_of_changes(data: TestInput) -> Any:
    p = data.params
    mats = {}
    for role in ("pre_first", "pre_last", "post_first", "post_last"):
        if role in data.arrays:
            mats[role] = model_matrix(data, role)
    if ("pre_first" in mats) != ("post_first" in mats):
        raise SpecError("ratio_of_changes: give both pre_first and post_first (changes |log(last / first)|) "
                        "or neither (the last selections are changes already).")
    shapes = {r: m[0].shape for r, m in mats.items()}
    if len(set(shapes.values())) != 1:
        raise SpecError(f"ratio_of_changes: the selections must have the same number of models and units; "
                        f"got {shapes}. Pair pretraining runs with their post-training runs in order.")
    if len({str(m[2][0]) for m in mats.values()}) != 1:
        raise SpecError("ratio_of_changes: the selections cover different units (layers, categories).")
    # models pair by position: pre model i with post model i (a first may be another model, e.g.
    # the base a tuned model started from)

    def change(side: str) -> np.ndarray:
        last = mats[f"{side}_last"][0]
        if f"{side}_first" not in mats:
            return last
        first = mats[f"{side}_first"][0]
        with np.errstate(divide="ignore", invalid="ignore"):
            bad = np.isfinite(first) & np.isfinite(last) & ((first <= 0) | (last <= 0))
            if bad.any():
                raise StatsInputError(f"ratio_of_changes: {int(bad.sum())} {side}-training value(s) are not "
                                      f"positive; |log(last / first)| needs positive values.")
            return np.abs(np.log(last / first))

    pre, post = change("pre"), change("post")
    layer = mats["pre_last"][2][1]
    n_models, n_units = pre.shape
    strata = np.repeat(np.arange(n_models), n_units)
    clusters = np.tile(layer, n_models)
    pre, post = pre.reshape(-1), post.reshape(-1)
    ok = np.isfinite(pre) & np.isfinite(post)
    if p["unit"] == "run":
        # each run's summed change is one cluster, one stratum: the variance is between runs
        # (df = runs - 1)
        return ratio_of_changes(pre[ok], post[ok], strata=None, clusters=strata[ok], ci=p["ci"],
                                reference=ratio_band(data.prediction))
    return ratio_of_changes(pre[ok], post[ok], strata=strata[ok], clusters=clusters[ok], ci=p["ci"],
                            reference=ratio_band(data.prediction))


def decide_ratio_of_changes(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Fieller's one-sided tests of the ratio against the prediction's band, each at level
    ``(1 - ci) / 2`` (the level at which Fieller's ``ci`` interval excludes a value).

    The band is ``(value, inf)`` for "above", ``(-inf, value)`` for "below" and
    ``[value / 10**bound, value * 10**bound]`` for "equivalent" (bound in decades).
    Supported when the ratio is shown inside the band (both one-sided p's ``p_below``,
    ``p_above`` under the level: for "equivalent" the TOST; declare ci = 1 - 2 alpha);
    refuted when it is shown beyond one edge (``1 - p_below`` or ``1 - p_above`` under the
    level); inconclusive otherwise.

    >>> ctx = Decision(Prediction("equivalent", value=500.0, bound=1.0), 0.05, {}, {"ci": 0.9})
    >>> decide_ratio_of_changes({"p_below": 0.001, "p_above": 0.01}, ctx)[0]
    'supported'
    >>> decide_ratio_of_changes({"p_below": 0.999, "p_above": 0.0}, ctx)[0]
    'refuted'
    >>> decide_ratio_of_changes({"p_below": 0.2, "p_above": 0.0}, ctx)[0]
    'inconclusive'
    """
    lo_p, hi_p = row.get(P_BELOW), row.get(P_ABOVE)
    if not finite(lo_p, hi_p):
        return "inconclusive", ("no test of the ratio on these data (a run with a single layer leaves "
                                "no variance to test against)")
    level = (1.0 - float(ctx.params.get("ci", 0.95))) / 2.0
    a, b = ratio_band(ctx.prediction)
    d = ctx.prediction.direction
    band = (f"[{a:g}, {b:g}] ({ctx.prediction.value:g} within {ctx.prediction.bound:g} decade(s))"
            if d == "equivalent" else f"{d} {ctx.prediction.value:g}")
    if max(lo_p, hi_p) < level:
        return "supported", f"Fieller's one-sided test{'s' if d == 'equivalent' else ''} put the ratio {band} (p {max(lo_p, hi_p):.3g} < {level:g})"
    edge = min(1.0 - lo_p, 1.0 - hi_p)
    if edge < level:
        side = f"below {a:g}" if 1.0 - lo_p <= 1.0 - hi_p else f"above {b:g}"
        return "refuted", f"Fieller's one-sided test puts the ratio {side}, outside {band} (p {edge:.3g} < {level:g})"
    return "inconclusive", f"the ratio is not shown {band} nor outside it (p {max(lo_p, hi_p):.3g}, {edge:.3g} >= {level:g})"


register_test("delta_rank", _run_delta_rank, decide_delta_rank, roles=DELTA_ROLES,
              params={"target": None, "n_boot": 2000, "ci": 0.95}, required_params=("target",),
              directions=("above", "below"),
              description="rank (1 = changed most) of one parameter category in the parameter-delta "
                          "map of one model, one-sided t tests over layers against every other "
                          "category, Holm at (1 - ci) / 2 (bootstrap interval reported) (METRICS §6.4, "
                          "lie_stats.stats.ranks.delta_rank); roles: param_delta, "
                          "param_delta_layer, param_base_norm_layer at one step")
register_test("delta_order", _run_delta_order, decide_delta_order, roles=DELTA_ROLES,
              params={"order": None, "n_boot": 2000}, required_params=("order",),
              directions=("above",),
              description="whether declared groups of parameter categories (params order: a list "
                          "of lists of categories) hold the top ranks in order: every pair tested "
                          "over layers at 1 - value, intersection-union (bootstrap share reported) "
                          "(METRICS §6.4, "
                          "lie_stats.stats.ranks.delta_order)")
register_test("ratio_of_changes", _run_ratio_of_changes, decide_ratio_of_changes, roles=("pre_last", "post_last"),
              optional_roles=("pre_first", "post_first"),
              params={"ci": 0.95, "unit": "layer"}, enums={"unit": UNITS},
              hashed_when_declared=("unit",), directions=("above", "below", "equivalent"),
              description="mean change of pre over mean change of post, paired by unit (|log(last / "
                          "first)| when the firsts are selected), Fieller's t tests and interval, "
                          "one-sided level (1 - ci) / 2; unit 'layer': layers as clusters within "
                          "runs (variance within runs, df = layers - runs); unit 'run': each run's "
                          "summed change one cluster (variance between runs, df = runs - 1) "
                          "(lie_stats.stats.ranks.ratio_of_changes)")
