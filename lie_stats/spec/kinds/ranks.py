"""Rank kinds over parameter categories and runs: ``delta_rank``, ``delta_order``,
``ratio_of_changes`` (:mod:`lie_stats.stats.ranks`).

``delta_rank`` is where a parameter category ranks (1 = changed most) in one model's
parameter-delta map (METRICS.md §6.4; :mod:`lie_stats.delta`), bootstrapping layers;
``delta_order`` whether declared groups of categories hold the top ranks in order, with the
bootstrap share of resamples in which they do; ``ratio_of_changes`` the mean change of one
selection over the mean change of another over the same units (pretraining against
post-training, runs paired in order), Fieller's test over layers within runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import SpecError, StatsInputError
from ...stats import columns as C
from ...stats.ranks import BOOT_SHARE, ORDER_HOLDS, P_ABOVE, P_BELOW, delta_order, delta_rank, ratio_of_changes
from ..parts import Prediction
from ..registry import register_test
from ..rules import Decision, decide_interval, finite
from ..tables import DELTA_ROLES, TestInput, delta_inputs, model_matrix

__all__ = ["decide_delta_order", "decide_ratio_of_changes", "ratio_band"]


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


def decide_delta_order(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the declared order holds on the full data and in at least a share
    value of the bootstrap resamples; refuted when it fails on the full data and holds in at
    most 1 - value; inconclusive otherwise.

    >>> ctx = Decision(Prediction("above", value=0.95), 0.05, {}, {})
    >>> decide_delta_order({"order_holds": 1.0, "boot_share": 0.99}, ctx)[0]
    'supported'
    >>> decide_delta_order({"order_holds": 0.0, "boot_share": 0.0}, ctx)[0]
    'refuted'
    """
    holds, share = row.get(ORDER_HOLDS), row.get(BOOT_SHARE)
    if not finite(holds, share):
        return "inconclusive", "no order statistic on these data"
    v = float(ctx.prediction.value)
    if holds == 1 and share >= v:
        return "supported", f"the declared order holds, and in {share:.1%} of bootstrap resamples (>= {v:.0%})"
    if holds == 0 and share <= 1 - v:
        return "refuted", (f"the declared order fails, and holds in only {share:.1%} of bootstrap "
                           f"resamples (<= {1 - v:.0%})")
    return "inconclusive", f"the order {'holds' if holds == 1 else 'fails'} but its bootstrap share is {share:.1%}"


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


register_test("delta_rank", _run_delta_rank, decide_interval, roles=DELTA_ROLES,
              params={"target": None, "n_boot": 2000, "ci": 0.95}, required_params=("target",),
              directions=("above", "below"),
              description="rank (1 = changed most) of one parameter category in the parameter-delta "
                          "map of one model, bootstrap over layers (METRICS §6.4, "
                          "lie_stats.stats.ranks.delta_rank); roles: param_delta, "
                          "param_delta_layer, param_base_norm_layer at one step")
register_test("delta_order", _run_delta_order, decide_delta_order, roles=DELTA_ROLES,
              params={"order": None, "n_boot": 2000}, required_params=("order",),
              directions=("above",),
              description="whether declared groups of parameter categories (params order: a list "
                          "of lists of categories) hold the top ranks in order, with its bootstrap share over layers (METRICS §6.4, "
                          "lie_stats.stats.ranks.delta_order)")
register_test("ratio_of_changes", _run_ratio_of_changes, decide_ratio_of_changes, roles=("pre_last", "post_last"),
              optional_roles=("pre_first", "post_first"),
              params={"ci": 0.95}, directions=("above", "below", "equivalent"),
              description="mean change of pre over mean change of post, paired by unit (|log(last / "
                          "first)| when the firsts are selected), Fieller's t tests and interval "
                          "over layers within runs, one-sided level (1 - ci) / 2 "
                          "(lie_stats.stats.ranks.ratio_of_changes)")
