"""Kinds over pairwise forms of heads: ``head_enrichment_excess``, ``enrichment_profile``,
``functional_boundary_shift`` (:mod:`lie_stats.stats.pairwise`).

Each takes a pairwise variable (``head`` x ``head_j``, e.g. the Killing form) and summarizes
a layer's pairs i < j with ``layer_summary``: ``"cv"`` (std / mean |.|, which on
killing_norm is killing_cv, METRICS.md §4.4) or ``"mean_abs"`` (mean |.|); a head's own
summary is over its pairs. ``head_enrichment_excess`` compares the most enriched head of
each layer with the layer (METRICS.md §6.1) against a null permuting each checkpoint's
per-head changes among the layer's heads; ``enrichment_profile`` is the boundary layers'
enrichment over the interior's (§6.1, §6.3) with an exact layer-permutation p;
``functional_boundary_shift`` the same for the functional (value-norm weighted) form over
the total form's, permuting the value norms within layers. The one-sided direction of each
p follows the prediction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import schema
from ...errors import SpecError, StatsInputError
from ...stats import columns as C
from ...stats.pairwise import (
    boundary_enrichment,
    functional_boundary_shift,
    head_enrichment_excess,
    pair_summary,
    row_summary,
    symmetric_pairs,
)
from ..registry import register_test
from ..rules import Decision, decide_interval, finite
from ..tables import TestInput, head_matrix, pair_matrix, present_units

__all__ = ["LAYER_SUMMARIES", "P_OPPOSITE", "decide_head_enrichment_excess", "decide_interval_and_p"]

#: Summaries of a layer's (or a head's) pairs.
LAYER_SUMMARIES = ("cv", "mean_abs")
#: Result column of the one-sided p opposite to the prediction.
P_OPPOSITE = "p_opposite"
_ENUMS = {"layer_summary": LAYER_SUMMARIES}


def _steps_differ(first_step: Any, last_step: Any) -> None:
    if first_step is not None and first_step == last_step:
        raise StatsInputError(f"the first and last checkpoint are the same (step {first_step}): "
                              f"no enrichment to measure.")


def _run_head_enrichment_excess(data: TestInput) -> Any:
    p = data.params
    summary = p["layer_summary"]
    da = data.arrays["values"].reset_coords(drop=True)
    if schema.STEP not in da.dims or schema.HEAD_J not in da.dims:
        raise SpecError("selection['values'] must be a pairwise variable (head, head_j) with "
                        "step='all' (the heads' trajectories over every checkpoint).")
    da = da.transpose(schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD, schema.HEAD_J)
    heads, layers = [], []
    for m in range(da.sizes[schema.MODEL]):
        x = symmetric_pairs(da.isel({schema.MODEL: m}).values.astype(np.float64))  # [S, L, H, H]
        for layer in range(x.shape[1]):
            xl = x[:, layer]
            fin = np.isfinite(xl)
            hk = fin.any(axis=(0, 2))
            if not hk.any():
                continue  # padding or a layer not selected
            xl = xl[:, hk][:, :, hk]
            off = ~np.eye(xl.shape[-1], dtype=bool)
            sk = np.isfinite(xl[:, off]).all(axis=1)  # checkpoints this model has
            xl = xl[sk]
            if xl.shape[-1] < 3:
                raise StatsInputError(f"model {m}, layer {layer}: {xl.shape[-1]} heads; a head's own "
                                      f"pair summary needs at least 2 partners (3 heads).")
            heads.append(row_summary(xl, summary=summary))
            layers.append(pair_summary(xl, summary=summary))
    if not layers:
        raise StatsInputError("no layer of the selection has pair data.")
    alternative = "greater" if data.prediction.direction == "above" else "less"
    return head_enrichment_excess(heads, layers, n_perm=p["n_perm"], seed=p["seed"],
                                     n_boot=p["n_boot"], ci=p["ci"], alternative=alternative)


def decide_head_enrichment_excess(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the permutation p (the most enriched heads exceed what exchangeable
    per-checkpoint changes give) is below alpha and the interval of the ratio max head /
    layer enrichment lies above the value; refuted when p_opposite < alpha (the heads end
    more alike than exchangeable changes would leave them); inconclusive otherwise.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("above", value=1.0), 0.05, {}, {})
    >>> decide_head_enrichment_excess({"p_value": 0.001, "p_opposite": 0.99, "ci_low": 3.0, "ci_high": 9.0}, ctx)[0]
    'supported'
    >>> decide_head_enrichment_excess({"p_value": 0.99, "p_opposite": 0.001, "ci_low": 1.5, "ci_high": 2.0}, ctx)[0]
    'refuted'
    """
    p, p_less = row.get(C.P_VALUE), row.get(P_OPPOSITE)
    lo = row.get(C.CI_LOW)
    a, value = ctx.alpha, float(ctx.prediction.value)
    if not finite(p, p_less):
        return "inconclusive", "the permutation test gave no p-value on these data"
    if p < a and finite(lo) and lo > value:
        return "supported", (f"the most enriched heads exceed the exchangeable-heads null (p < "
                             f"alpha {a}) and the ratio's interval lies above {value}")
    if p_less < a:
        return "refuted", (f"the most enriched heads fall short of the exchangeable-heads null "
                           f"(p_opposite < alpha {a}): head differences do not persist")
    if p < a:
        return "inconclusive", f"p < alpha ({a}) but the ratio's interval reaches {value}"
    return "inconclusive", f"p >= alpha ({a}): no evidence either way"


def decide_interval_and_p(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the interval lies entirely on the predicted side of the value and the
    one-sided p in the predicted direction is below alpha; refuted when the interval lies
    entirely on the other side and the one-sided p in that direction (p_opposite) is below
    alpha; inconclusive otherwise.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("below", value=1.0), 0.05, {}, {})
    >>> decide_interval_and_p({"p_value": 0.01, "ci_low": 0.5, "ci_high": 0.9}, ctx)[0]
    'supported'
    >>> decide_interval_and_p({"p_value": 0.30, "ci_low": 0.5, "ci_high": 0.9}, ctx)[0]
    'inconclusive'
    >>> decide_interval_and_p({"p_value": 0.99, "p_opposite": 0.01, "ci_low": 1.1, "ci_high": 1.9}, ctx)[0]
    'refuted'
    >>> decide_interval_and_p({"p_value": 0.60, "p_opposite": 0.40, "ci_low": 1.1, "ci_high": 1.9}, ctx)[0]
    'inconclusive'
    """
    verdict, reason = decide_interval(row, ctx)
    p, a = row.get(C.P_VALUE), ctx.alpha
    if verdict == "refuted":
        p_opp = row.get(P_OPPOSITE)
        if finite(p_opp) and p_opp < a:
            return "refuted", f"{reason}, and the permutation p in that direction < alpha ({a})"
        return "inconclusive", f"{reason}, but the permutation p in that direction >= alpha ({a})"
    if verdict != "supported":
        return verdict, reason
    if finite(p) and p < a:
        return "supported", f"{reason}, and the permutation p < alpha ({a})"
    return "inconclusive", f"{reason}, but the permutation p >= alpha ({a})"


def _run_enrichment_profile(data: TestInput) -> Any:
    p = data.params
    summary = p["layer_summary"]
    first, s0 = pair_matrix(data, "first")
    last, s1 = pair_matrix(data, "last")
    _steps_differ(s0, s1)
    lk, hk = present_units(first, last)
    first, last = first[lk][:, hk][:, :, hk], last[lk][:, hk][:, :, hk]
    alternative = "greater" if data.prediction.direction == "above" else "less"
    return boundary_enrichment(first, last, summary=summary, n_boot=p["n_boot"],
                                         ci=p["ci"], seed=p["seed"], alternative=alternative)


def _run_functional_boundary_shift(data: TestInput) -> Any:
    p = data.params
    summary = p["layer_summary"]
    k0, s0 = pair_matrix(data, "first")
    k1, s1 = pair_matrix(data, "last")
    w0, t0 = head_matrix(data, "w_first")
    w1, t1 = head_matrix(data, "w_last")
    _steps_differ(s0, s1)
    if (s0, s1) != (t0, t1):
        raise StatsInputError(f"the Killing form is selected at steps ({s0}, {s1}) but value_norm "
                              f"at ({t0}, {t1}); the functional form needs both at the same "
                              f"checkpoints.")
    lk, hk = present_units(k0, k1)
    k0, k1 = k0[lk][:, hk][:, :, hk], k1[lk][:, hk][:, :, hk]
    w0, w1 = w0[lk][:, hk], w1[lk][:, hk]
    alternative = "less" if data.prediction.direction == "below" else "greater"
    return functional_boundary_shift(k0, k1, w0, w1, summary=summary, n_perm=p["n_perm"],
                                               n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                                               alternative=alternative)


register_test("head_enrichment_excess", _run_head_enrichment_excess, decide_head_enrichment_excess, roles=("values",),
              params={"layer_summary": "cv", "n_perm": 9999, "n_boot": 2000, "ci": 0.95},
              enums=_ENUMS, directions=("above",),
              description="per layer, the most enriched head's enrichment over the layer's "
                          "(METRICS §6.1) of a pair form's summary (values: a pairwise variable, "
                          "step='all'; head value = the summary over the head's own pairs), "
                          "against a null permuting each checkpoint's per-head changes among the "
                          "layer's heads (lie_stats.stats.pairwise.head_enrichment_excess)")
register_test("enrichment_profile", _run_enrichment_profile, decide_interval_and_p,
              roles=("first", "last"),
              params={"layer_summary": "cv", "n_boot": 2000, "ci": 0.95},
              enums=_ENUMS, directions=("above", "below"),
              description="boundary layers' enrichment of a pair form's summary over the "
                          "interior's (METRICS §6.1, §6.3; first/last: a pairwise variable of one "
                          "model), exact layer-permutation p, heads bootstrapped within layers "
                          "(lie_stats.stats.pairwise.boundary_enrichment)")
register_test("functional_boundary_shift", _run_functional_boundary_shift, decide_interval_and_p,
              roles=("first", "last", "w_first", "w_last"),
              params={"layer_summary": "cv", "n_perm": 9999, "n_boot": 2000, "ci": 0.95},
              enums=_ENUMS, directions=("below", "above"),
              description="boundary enrichment of the functional Killing form (METRICS §8: "
                          "K[i,j] w_i w_j, w = value_norm / layer mean) over the total form's; "
                          "p permutes the value norms among a layer's heads "
                          "(lie_stats.stats.pairwise.functional_boundary_shift)")
