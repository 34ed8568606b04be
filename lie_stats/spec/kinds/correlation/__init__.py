"""Correlation kinds: ``correlation``, ``partial_correlation``, ``replication``.

Head-level correlations with permutation p-values within strata (layers by default) and
cluster-bootstrap intervals (:mod:`lie_stats.stats.correlation`), and the replication of an
original correlation as the field does it (:mod:`lie_stats.stats.replication`): the new
within-layer estimate and interval, the one-sided test in the original direction, the Fisher
z test of difference from the original, the small-telescopes test against r33 (the effect
the original had 33 % power to detect) and the replication Bayes factor, the last three
with the within-layer permutation null's standard error. A declared bound on a
``correlation`` prediction is tested (TOST) on the within-layer correlation, as
``correlation_equivalence`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .... import columns as C
from ....columns import PER_HEAD_WITHOUT_STRATA, P_EQUIVALENCE
from ....stats.correlation import MIN_PERM_SE, correlation, partial_correlation
from ....stats.replication import replicate_correlation
from ...parts import spec_error
from ...registry import RESAMPLING, register_test
from ...rules import Decision, decide_directional, decide_sign, finite
from ...tables import TestInput, columns_of
from ..equivalence import PER_HEAD_REASON, correlation_tost, per_head_unstratified

__all__ = ["decide_correlation", "decide_replication"]

_CORRELATION_PARAMS = {"method": "spearman", "alternative": "two-sided", **RESAMPLING}


def _flag_unstratified(row: Any, data: TestInput, table: Any, *p_columns: str) -> Any:
    """Per-head units without layer strata: the p-values blanked and the row flagged (the
    rule then says why it does not decide); the estimates stay for the reader."""
    if not per_head_unstratified(data, table):
        return row
    return row.assign(**{c: np.nan for c in p_columns}, **{PER_HEAD_WITHOUT_STRATA: 1.0})


def _run_correlation(data: TestInput) -> Any:
    p = data.params
    table, (x, y), strata = columns_of(data, "x", "y")
    row = correlation(x, y, strata=strata, method=p["method"], alternative=p["alternative"],
                      n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    bound = data.prediction.bound
    if bound is not None:
        eq = correlation_tost(data, x, y, table, strata, bound)
        row = row.assign(**{P_EQUIVALENCE: float(eq[C.P_VALUE].iloc[0])})
    return _flag_unstratified(row, data, table, C.P_VALUE)


def _run_partial_correlation(data: TestInput) -> Any:
    p = data.params
    table, (x, y, c), strata = columns_of(data, "x", "y", "covar")
    row = partial_correlation(x, y, c, strata=strata, method=p["method"],
                              alternative=p["alternative"], n_perm=p["n_perm"],
                              n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    return _flag_unstratified(row, data, table, C.P_VALUE)


def _run_replication(data: TestInput) -> Any:
    p, ref = data.params, data.reference
    table, (x, y), strata = columns_of(data, "x", "y")
    r0 = ref["r"] if "r" in ref else ref["rho"]
    row = replicate_correlation(x, y, original_r=float(r0), original_n=int(ref["n"]),
                                strata=strata, method=p["method"], n_perm=p["n_perm"],
                                n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                                alpha=p["alpha"])
    return _flag_unstratified(row, data, table, C.P_VALUE, C.P_ORIGINAL_DIRECTION,
                              C.P_SMALL_TELESCOPES, C.P_DIFFERENCE)


def decide_correlation(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when p < alpha and effect - null_center (the correlation beyond what the
    within-strata permutation null expects) has the predicted sign; refuted when p < alpha
    with the opposite sign, or when the prediction declares a bound and the TOST
    p_equivalence < alpha; inconclusive otherwise, and on per-head units without layer strata.

    When layer means co-vary, the pooled correlation carries the between-layer association;
    its sign is not the sign the within-strata permutation p tests. A prediction about heads
    is therefore judged on ``effect - null_center`` (the null's exact expectation); without a
    null centre (free permutation) on ``effect - value``.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("positive"), 0.05, {}, {})
    >>> decide_correlation({"p_value": 0.01, "effect": 0.30, "null_center": 0.45}, ctx)[0]
    'refuted'
    >>> decide_correlation({"p_value": 0.01, "effect": 0.30}, ctx)[0]
    'supported'
    """
    if row.get(PER_HEAD_WITHOUT_STRATA) == 1.0:
        return "inconclusive", PER_HEAD_REASON
    center = row.get(C.NULL_CENTER)
    if finite(center):
        return decide_sign(row, ctx, reference=float(center), what="effect - null_center")
    return decide_directional(row, ctx)


def decide_replication(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the one-sided test in the original direction has p < alpha and the
    small-telescopes test does not find the effect smaller than r33; refuted when it does
    (p_small_telescopes < alpha, which includes effects of the opposite sign); inconclusive
    otherwise, and on per-head units without layer strata.

    Both tests are on the within-layer correlation (``effect``): the one-sided test is the
    within-layer permutation p; small telescopes compares Fisher's z of the within-layer
    correlation with r33 (on tau's scale for Kendall) by the within-layer permutation
    null's standard error, so layer means that co-vary cannot refute. The Fisher z test of
    difference from the original and the replication Bayes factor are reported beside the
    verdict (extra columns).

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("negative"), 0.05, {"rho": -0.274, "n": 96}, {})
    >>> decide_replication({"p_original_direction": 0.001, "p_small_telescopes": 0.6}, ctx)[0]
    'supported'
    >>> decide_replication({"p_original_direction": 0.4, "p_small_telescopes": 0.01}, ctx)[0]
    'refuted'
    """
    if row.get(PER_HEAD_WITHOUT_STRATA) == 1.0:
        return "inconclusive", PER_HEAD_REASON
    p1, pst = row.get(C.P_ORIGINAL_DIRECTION), row.get(C.P_SMALL_TELESCOPES)
    if finite(p1) and not finite(pst):
        return "inconclusive", (f"the within-layer permutation null has {row.get(C.N_PERM, 0):.0f} "
                                f"permutations, under the {MIN_PERM_SE} the small-telescopes "
                                f"standard error needs")
    if not finite(p1, pst):
        return "inconclusive", "the replication tests gave no p-values on these data"
    a = ctx.alpha
    if pst < a:
        return "refuted", (f"small telescopes: the effect is smaller than r33, the one the original "
                           f"had 33 % power to detect (p < alpha {a})")
    if p1 < a:
        return "supported", (f"one-sided test in the original direction p < alpha ({a}) and not "
                             f"smaller than r33")
    return "inconclusive", (f"one-sided test in the original direction p >= alpha ({a}), but the "
                            f"effect is not shown smaller than r33")


def _validate_replication(spec: Any, params: Mapping[str, Any]) -> None:
    """The original correlation is a number in (-1, 1) other than 0, its n an integer >= 5,
    and the predicted direction is its sign."""
    r0 = spec.reference.get("r", spec.reference.get("rho"))
    if not isinstance(r0, (int, float)) or not -1 < r0 < 1 or r0 == 0:
        raise spec_error(spec, "reference", f"the original correlation must be a number in (-1, 1), "
                                            f"not 0; got {r0!r}.")
    n0 = spec.reference.get("n")
    if isinstance(n0, bool) or not isinstance(n0, (int, np.integer)) or n0 < 5:
        raise spec_error(spec, "reference", f"the original n must be an integer >= 5, got {n0!r}.")
    direction = spec.prediction.direction
    if (r0 < 0) != (direction == "negative"):
        raise spec_error(spec, "prediction.direction",
                         f"{direction!r} contradicts the sign of the original correlation {r0}.")


register_test("correlation", _run_correlation, decide_correlation, roles=("x", "y"),
              params=_CORRELATION_PARAMS,
              description="rank/linear correlation across heads, permutation p within strata, "
                          "cluster-bootstrap interval (lie_stats.stats.correlation)")
register_test("partial_correlation", _run_partial_correlation, decide_correlation,
              roles=("x", "y", "covar"), params=_CORRELATION_PARAMS,
              description="partial correlation of x and y given covar "
                          "(lie_stats.stats.partial_correlation)")
register_test("replication", _run_replication, decide_replication, roles=("x", "y"),
              params={"method": "spearman", **RESAMPLING}, directions=("positive", "negative"),
              reference=("r|rho", "n"), validate=_validate_replication,
              description="replication of a correlation against the original's r and n, on the "
                          "within-layer correlation (lie_stats.stats.replicate_correlation)")
