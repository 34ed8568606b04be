"""Decision rules shared by several test kinds, and what a rule sees (:class:`Decision`).

A rule is ``decide(row, Decision) -> (verdict, reason)``: ``row`` is the kind's result row
(``p_value``, ``effect``, ``ci_low``, ``ci_high`` and the kind's extra columns), the verdict
one of ``supported`` / ``refuted`` / ``inconclusive``, the reason one clause a reader checks
against the numbers. A non-significant result alone never refutes. Rules only one kind uses
live with that kind in :mod:`lie_stats.spec.kinds`. The first paragraph of a rule's
docstring is the sentence ``lie-stats kinds`` prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import columns as C
from ..columns import P_EQUIVALENCE, P_GREATER, P_LESS, P_MIN
from .parts import Prediction

__all__ = ["Decision", "finite", "decide_directional", "decide_sign", "decide_equivalence", "decide_interval",
           "decide_one_sided"]


@dataclass(frozen=True)
class Decision:
    """What a decision rule sees besides the result row: the prediction, the spec's alpha,
    its reference figures and its resolved parameters."""

    prediction: Prediction
    alpha: float
    reference: Mapping[str, Any]
    params: Mapping[str, Any]


def finite(*values: Any) -> bool:
    """Whether every value is a finite number (None is not).

    >>> finite(1.0, 2), finite(1.0, None), finite(float("nan"))
    (True, False, False)
    """
    return all(v is not None and math.isfinite(float(v)) for v in values)


def decide_directional(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when p < alpha with the predicted sign of effect - value (either sign for
    "nonzero"); refuted when p < alpha with the opposite sign, or when the prediction
    declares a bound and the TOST p_equivalence < alpha; inconclusive otherwise.

    >>> ctx = Decision(Prediction("negative"), 0.05, {}, {})
    >>> decide_directional({"p_value": 0.01, "effect": -0.3}, ctx)[0]
    'supported'
    >>> decide_directional({"p_value": 0.01, "effect": 0.3}, ctx)[0]
    'refuted'
    >>> decide_directional({"p_value": 0.2, "effect": -0.3}, ctx)[0]
    'inconclusive'
    """
    return decide_sign(row, ctx, reference=float(ctx.prediction.value))


def decide_sign(row: Mapping[str, float], ctx: Decision, *, reference: float,
                what: str = "") -> tuple[str, str]:
    """:func:`decide_directional` with the sign taken from ``effect - reference``; ``what``
    names that difference in the reason (e.g. ``"effect - null_center"``).

    >>> ctx = Decision(Prediction("positive"), 0.05, {}, {})
    >>> decide_sign({"p_value": 0.01, "effect": 0.3}, ctx, reference=0.45, what="effect - null_center")
    ('refuted', 'p < alpha (0.05) with the sign of effect - null_center opposite to the prediction (positive)')
    """
    p, effect = row.get(C.P_VALUE), row.get(C.EFFECT)
    if not finite(p, effect):
        return C.INCONCLUSIVE, "the test gave no p-value or effect on these data"
    d, a = ctx.prediction.direction, ctx.alpha
    delta = float(effect) - float(reference)
    of = f" of {what}" if what else ""
    if p < a:
        if d == "nonzero" or (d == "positive" and delta > 0) or (d == "negative" and delta < 0):
            return C.SUPPORTED, f"p < alpha ({a}) with the predicted sign{of} ({d})"
        return C.REFUTED, f"p < alpha ({a}) with the sign{of} opposite to the prediction ({d})"
    p_eq = row.get(P_EQUIVALENCE)
    if ctx.prediction.bound is not None and finite(p_eq) and p_eq < a:
        return C.REFUTED, (f"not significant, and the TOST shows the effect within the declared "
                           f"bound of ±{ctx.prediction.bound} (p_equivalence < alpha {a})")
    return C.INCONCLUSIVE, f"p >= alpha ({a}): no evidence either way"


def decide_equivalence(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the TOST p (the larger one-sided p) < alpha; refuted when the interval
    lies entirely outside [-bound, bound]; inconclusive otherwise.

    >>> ctx = Decision(Prediction("equivalent", bound=0.1), 0.05, {}, {})
    >>> decide_equivalence({"p_value": 0.01, "ci_low": -0.05, "ci_high": 0.05}, ctx)[0]
    'supported'
    >>> decide_equivalence({"p_value": 0.9, "ci_low": 0.2, "ci_high": 0.4}, ctx)[0]
    'refuted'
    """
    bound = ctx.prediction.bound if ctx.prediction.bound is not None else ctx.params.get("bound")
    p = row.get(C.P_VALUE)
    if not finite(p):
        return C.INCONCLUSIVE, "the TOST gave no p-value on these data"
    if p < ctx.alpha:
        return C.SUPPORTED, f"TOST p < alpha ({ctx.alpha}): equivalent within ±{bound}"
    lo, hi = row.get(C.CI_LOW), row.get(C.CI_HIGH)
    if finite(lo, hi) and (lo > bound or hi < -bound):
        return C.REFUTED, f"the interval lies entirely outside ±{bound}"
    return C.INCONCLUSIVE, f"TOST p >= alpha ({ctx.alpha}) and the interval overlaps ±{bound}"


#: The one-sided p each prediction direction needs ("nonzero": either).
_SIDES = {"above": (P_GREATER, P_LESS), "positive": (P_GREATER, P_LESS),
          "below": (P_LESS, P_GREATER), "negative": (P_LESS, P_GREATER)}


def decide_one_sided(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the calibrated test's one-sided p towards the prediction (p_greater
    for "above" / "positive", p_less for "below" / "negative", the smaller for "nonzero")
    is below alpha / 2; refuted
    when the one-sided p the other way is; inconclusive otherwise, and when the smallest p
    the design can reach (p_min) is not below alpha / 2 (too few clusters or runs). Each
    side at alpha / 2 keeps the two-sided level alpha; the interval describes the estimate
    and does not decide.

    >>> ctx = Decision(Prediction("above", value=1.0), 0.05, {}, {})
    >>> decide_one_sided({"p_greater": 0.01, "p_less": 0.99, "p_min": 0.001}, ctx)[0]
    'supported'
    >>> decide_one_sided({"p_greater": 0.99, "p_less": 0.01, "p_min": 0.001}, ctx)[0]
    'refuted'
    >>> decide_one_sided({"p_greater": 0.03125, "p_less": 1.0, "p_min": 0.03125}, ctx)[1]
    'the smallest one-sided p this design can reach (0.03125, too few independent units) is not below alpha / 2 (0.025)'
    """
    d, half = ctx.prediction.direction, ctx.alpha / 2.0
    if d == "nonzero":  # either side supports: the side with the smaller one-sided p
        pg, pl = row.get(P_GREATER), row.get(P_LESS)
        toward, away = (P_GREATER, P_LESS) if finite(pg, pl) and pg <= pl else (P_LESS, P_GREATER)
        row = {**row, away: 1.0}
    else:
        toward, away = _SIDES.get(d, (None, None))
    if toward is None:
        raise ValueError(f"decide_one_sided: prediction direction {d!r} is not one of "
                         f"{sorted(_SIDES) + ['nonzero']}.")
    p_to, p_away, p_min = row.get(toward), row.get(away), row.get(P_MIN)
    if not finite(p_to, p_away):
        return C.INCONCLUSIVE, "the test gave no p-value on these data"
    if finite(p_min) and p_min >= half:
        return C.INCONCLUSIVE, (f"the smallest one-sided p this design can reach ({p_min:.4g}, too few "
                                f"independent units) is not below alpha / 2 ({half:.4g})")
    if p_to < half:
        return C.SUPPORTED, f"one-sided {toward} < alpha / 2 ({half:.4g}): the predicted side ({d})"
    if p_away < half:
        return C.REFUTED, f"one-sided {away} < alpha / 2 ({half:.4g}): the side opposite to the prediction ({d})"
    return C.INCONCLUSIVE, f"neither one-sided p is below alpha / 2 ({half:.4g}): no evidence either way"


def decide_interval(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the interval lies entirely on the predicted side ("above" / "below")
    of the prediction's value; refuted when it lies entirely on the other side;
    inconclusive otherwise. Calibrated only as far as the interval's coverage is: a
    percentile interval over few clusters is too narrow (kinds with an exact test decide
    with decide_one_sided).

    >>> ctx = Decision(Prediction("above", value=1.0), 0.05, {}, {})
    >>> decide_interval({"ci_low": 1.5, "ci_high": 3.0}, ctx)[0]
    'supported'
    >>> decide_interval({"ci_low": 0.5, "ci_high": 3.0}, ctx)[0]
    'inconclusive'
    """
    lo, hi = row.get(C.CI_LOW), row.get(C.CI_HIGH)
    v, d = float(ctx.prediction.value), ctx.prediction.direction
    if not finite(lo, hi):
        return C.INCONCLUSIVE, "the estimate has no finite interval on these data"
    above, below = lo > v, hi < v
    if (d == "above" and above) or (d == "below" and below):
        return C.SUPPORTED, f"the interval lies entirely {d} {v}"
    if (d == "above" and below) or (d == "below" and above):
        return C.REFUTED, f"the interval lies entirely on the other side of {v}"
    return C.INCONCLUSIVE, f"the interval contains {v}"
