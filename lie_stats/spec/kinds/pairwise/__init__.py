"""Kinds over pairwise forms of heads: ``head_enrichment_excess``, ``enrichment_profile``,
``functional_boundary_shift`` (:mod:`lie_stats.stats.pairwise`).

Each takes a pairwise variable (``head`` x ``head_j``, e.g. the Killing form) and summarizes
a layer's pairs i < j with ``layer_summary``: ``"cv"`` (std / mean |.|, which on
killing_norm is killing_cv, METRICS.md §4.4) or ``"mean_abs"`` (mean |.|); a head's own
summary is over its pairs. ``head_enrichment_excess`` compares the most enriched head of
each layer with the layer (METRICS.md §6.1) against a time-reversal (sign-flip) null of head
departures from the layer that revert; ``enrichment_profile`` is the boundary layers'
enrichment over the interior's (§6.1, §6.3) with an exact layer-permutation p;
``functional_boundary_shift`` the same for the functional (value-norm weighted) form over
the total form's, permuting the value norms within layers. The one-sided direction of each
p follows the prediction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .... import schema
from ....errors import SpecError, StatsInputError
from .... import columns as C
from ....columns import N_ANCHORS, P_OPPOSITE, RATIO_TOTAL
from ....stats.pairwise import (boundary_enrichment, functional_boundary_shift, head_enrichment_excess,
                               pair_summary, row_summary, symmetric_pairs)
from ...registry import register_test
from ...rules import Decision, finite
from ...tables import TestInput, head_matrix, need_classes, pair_matrix, present_units

__all__ = ["LAYER_SUMMARIES", "decide_head_enrichment_excess",
           "decide_p_in_direction", "decide_functional_shift"]

#: Summaries of a layer's (or a head's) pairs.
LAYER_SUMMARIES = ("cv", "mean_abs")
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
    """Supported when the sign-flip p (the most enriched heads exceed what heads whose
    departures from their layer revert, time-reversibly, give) is below alpha; refuted when
    p_opposite < alpha (the largest head shortfall persistently exceeds the largest head
    excess); inconclusive otherwise. The ratio's interval only describes the effect.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("above", value=1.0), 0.05, {}, {})
    >>> decide_head_enrichment_excess({"p_value": 0.001, "p_opposite": 0.99, "ci_low": 3.0, "ci_high": 9.0}, ctx)[0]
    'supported'
    >>> decide_head_enrichment_excess({"p_value": 0.99, "p_opposite": 0.001, "ci_low": 1.5, "ci_high": 2.0}, ctx)[0]
    'refuted'
    >>> decide_head_enrichment_excess({"p_value": 0.30, "p_opposite": 0.70, "ci_low": 1.5, "ci_high": 2.0}, ctx)[0]
    'inconclusive'
    """
    p, p_less = row.get(C.P_VALUE), row.get(P_OPPOSITE)
    a = ctx.alpha
    if not finite(p, p_less):
        return "inconclusive", "the sign-flip test gave no p-value on these data"
    if p < a:
        return "supported", (f"the most enriched heads exceed the time-reversal null of reverting "
                             f"head departures (p < alpha {a}): a head-level excess persists")
    if p_less < a:
        return "refuted", (f"the largest head shortfall exceeds the largest head excess beyond the "
                           f"time-reversal null (p_opposite < alpha {a}): heads fall behind their "
                           f"layer, none persistently ahead")
    return "inconclusive", (f"p >= alpha ({a}): the head excess is within what reverting head "
                            f"departures give")


def decide_p_in_direction(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the one-sided p in the predicted direction is below alpha; refuted
    when the one-sided p in the other direction (p_opposite) is below alpha; inconclusive
    otherwise. The interval (heads resampled within layers) only describes the effect: it
    can leave out the few heads that carry it, so it does not decide.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("below", value=1.0), 0.05, {}, {})
    >>> decide_p_in_direction({"p_value": 0.01, "p_opposite": 0.99, "ci_low": 0.5, "ci_high": 1.2}, ctx)[0]
    'supported'
    >>> decide_p_in_direction({"p_value": 0.30, "p_opposite": 0.70, "ci_low": 0.5, "ci_high": 0.9}, ctx)[0]
    'inconclusive'
    >>> decide_p_in_direction({"p_value": 0.99, "p_opposite": 0.01, "ci_low": 1.1, "ci_high": 1.9}, ctx)[0]
    'refuted'
    """
    p, p_opp, a = row.get(C.P_VALUE), row.get(P_OPPOSITE), ctx.alpha
    d, value = ctx.prediction.direction, ctx.prediction.value
    if not finite(p, p_opp):
        return "inconclusive", "the permutation test gave no one-sided p-values on these data"
    if p < a:
        return "supported", f"the one-sided permutation p ({d} {value}) < alpha ({a})"
    if p_opp < a:
        return "refuted", f"the one-sided permutation p opposite to the prediction ({d} {value}) < alpha ({a})"
    return "inconclusive", f"p >= alpha ({a}) in either direction: no evidence either way"


def decide_functional_shift(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """:func:`decide_p_in_direction`, after the claim's declared premise: with
    ``min_anchors`` > 0, at least that many heads labelled anchor (else the test is
    undefined, inconclusive with the label counts); with ``require_total_enrichment``, the
    total form's boundary ratio above 1 (boundary layers more enriched than the interior:
    there is a boundary enrichment to lower), else inconclusive with the ratio and counts.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("below", value=1.0), 0.05, {}, {"require_total_enrichment": True})
    >>> decide_functional_shift({"p_value": 0.01, "p_opposite": 0.99, "ratio_total": 0.58, "n_anchors": 0}, ctx)[0]
    'inconclusive'
    >>> decide_functional_shift({"p_value": 0.01, "p_opposite": 0.99, "ratio_total": 1.8, "n_anchors": 4}, ctx)[0]
    'supported'
    """
    if ctx.params.get("require_total_enrichment"):
        r = row.get(RATIO_TOTAL)
        anchors = row.get(N_ANCHORS)
        counts = f"; anchors: {int(anchors)}" if finite(anchors) else ""
        if not finite(r) or r <= 1.0:
            return "inconclusive", (f"the premise fails: the total form's boundary enrichment ratio "
                                    f"is {r:.3g}, not above 1 (no boundary enrichment to lower"
                                    f"{counts})")
    return decide_p_in_direction(row, ctx)


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
    n_anchors = _anchor_premise(data, lk, hk)
    alternative = "less" if data.prediction.direction == "below" else "greater"
    row = functional_boundary_shift(k0, k1, w0, w1, summary=summary, n_perm=p["n_perm"],
                                    n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                                    alternative=alternative)
    return row.assign(**{N_ANCHORS: n_anchors})


def _anchor_premise(data: TestInput, lk: np.ndarray, hk: np.ndarray) -> float:
    """Heads labelled anchor among the units used (NaN without a ``labels`` selection); too
    few for ``min_anchors`` makes the test undefined (StatsInputError, the label counts)."""
    minimum = int(data.params["min_anchors"])
    if "labels" not in data.arrays:
        if minimum > 0:
            raise SpecError(f"min_anchors = {minimum} needs a 'labels' selection (head_label at "
                            f"one step) to count the anchors.")
        return float("nan")
    labels, _ = head_matrix(data, "labels")
    codes = labels[lk][:, hk].reshape(-1)
    anchor = schema.LABEL_CODES["anchor"]
    need_classes(codes, (anchor,), minimum, "the functional form's anchor premise")
    return float(np.count_nonzero(codes == anchor))


register_test("head_enrichment_excess", _run_head_enrichment_excess, decide_head_enrichment_excess, roles=("values",),
              params={"layer_summary": "cv", "n_perm": 9999, "n_boot": 2000, "ci": 0.95},
              enums=_ENUMS, directions=("above",),
              description="per layer, the most enriched head's enrichment over the layer's "
                          "(METRICS §6.1) of a pair form's summary (values: a pairwise variable, "
                          "step='all'; head value = the summary over the head's own pairs), "
                          "against a time-reversal null flipping the sign of each layer's "
                          "head-departure changes, which keeps each head's temporal dependence "
                          "(lie_stats.stats.pairwise.head_enrichment_excess)")
register_test("enrichment_profile", _run_enrichment_profile, decide_p_in_direction,
              roles=("first", "last"),
              params={"layer_summary": "cv", "n_boot": 2000, "ci": 0.95},
              enums=_ENUMS, directions=("above", "below"),
              description="boundary layers' enrichment of a pair form's summary over the "
                          "interior's (METRICS §6.1, §6.3; first/last: a pairwise variable of one "
                          "model), exact layer-permutation p deciding, heads bootstrapped within "
                          "layers for the interval (lie_stats.stats.pairwise.boundary_enrichment)")
register_test("functional_boundary_shift", _run_functional_boundary_shift, decide_functional_shift,
              roles=("first", "last", "w_first", "w_last"), optional_roles=("labels",),
              params={"layer_summary": "cv", "n_perm": 9999, "n_boot": 2000, "ci": 0.95,
                      "min_anchors": 0, "require_total_enrichment": False},
              enums=_ENUMS, directions=("below", "above"),
              description="boundary enrichment of the functional Killing form (METRICS §8: "
                          "K[i,j] w_i w_j, w = value_norm / layer mean) over the total form's; "
                          "p permutes the value norms among a layer's heads and decides; premise "
                          "params: min_anchors (heads labelled anchor in the optional 'labels' "
                          "selection) and require_total_enrichment (the total form's boundary "
                          "ratio above 1) (lie_stats.stats.pairwise.functional_boundary_shift)")
