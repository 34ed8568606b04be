"""Magnitude beside direction: a result's estimate against the size its claim states.

A :class:`~lie_stats.spec.parts.Prediction` may carry a
:class:`~lie_stats.spec.parts.Magnitude` (the essay's figure as a band, with its
justification). After the test kind has decided the direction, :func:`assess_magnitude`
compares the estimate's interval with the band, :func:`combine` turns the two into the
verdict (:func:`decide`: the kind's rule and these two, the one way every evaluation decides a
row), and :func:`finding` writes the one sentence a reader checks against the numbers.

The rule (the same for every kind):

* ``"outside"``: the estimate's interval lies entirely outside the band. Every value of the
  band is then excluded at the interval's confidence level, so "outside" is a level-alpha
  rejection of the stated size (the intersection of the two one-sided tests at the band's
  edges);
* ``"within"``: the interval lies inside the band: every size the data leave open is one
  the claim states, so the size is shown (at the interval's confidence level);
* ``"compatible"``: the interval overlaps the band without lying inside it: the data are
  compatible with the stated size but do not show it (the size is undetermined);
* ``"not_tested"``: no band is declared, the dataset is one the declaration excludes
  (``not_on``, e.g. a random twin as the init), or the estimate or its interval is missing
  or not finite; ``reason`` says which.

The verdict of a claim with a declared figure (:func:`combine`):

* ``"outside"`` refutes the claim as stated, whatever the direction's p: ``refuted``, and
  the reason and the finding say that the figure is excluded and what the direction gave;
* a supported direction with the magnitude ``"within"`` is ``supported``;
* a supported direction with the magnitude ``"compatible"`` stays ``supported`` with the
  qualifier "magnitude undetermined" (:data:`UNDETERMINED`; the result's ``qualifier``):
  the direction is shown, the stated size is not;
* otherwise (``"within"`` or ``"compatible"`` with a refuted or inconclusive direction, or
  ``"not_tested"``) the direction's verdict stands.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .. import columns as C
from ..errors import LieStatsError
from .parts import Magnitude

__all__ = ["assess_magnitude", "combine", "decide", "finding", "band_text", "figure", "MAGNITUDE_STATUSES",
           "NOT_DECLARED", "UNDETERMINED", "qualifier"]

#: Values of ``magnitude["status"]``.
MAGNITUDE_STATUSES = ("within", "compatible", "outside", "not_tested")
#: The qualifier of a supported direction whose interval only overlaps the stated band.
UNDETERMINED = "magnitude undetermined"
#: The reason of a result whose prediction declares no magnitude.
NOT_DECLARED = "the declaration states no magnitude (no figure to compare the estimate with)"


def figure(value: Any, digits: int = 3) -> str:
    """A number for a sentence: ``digits`` significant figures, thousands separated,
    scientific below 0.001 or from 10^6 on; "-" when missing or not finite.

    >>> figure(1418.8), figure(0.2), figure(1.81e14), figure(-0.0110689), figure(None)
    ('1,420', '0.200', '1.81e+14', '-0.0111', '-')
    """
    if value is None or isinstance(value, bool):
        return "-"
    v = float(value)
    if not math.isfinite(v):
        return "inf" if v == math.inf else "-inf" if v == -math.inf else "-"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-3:
        return f"{v:.{digits - 1}e}"
    exponent = math.floor(math.log10(a))
    rounded = round(v, digits - 1 - exponent)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:  # 999.6 -> 1,000
        exponent += 1
    decimals = max(0, digits - 1 - exponent)
    return f"{rounded:,.{decimals}f}"


def band_text(mag: Magnitude) -> str:
    """The band in words: ``"x/÷3"`` for a band symmetric on the log scale, ``"±0.05"``
    for a symmetric absolute band, ``"at least 3"``, or ``"[2, 4.5]"``.

    >>> band_text(Magnitude(500.0, 500.0 / 3, 1500.0, justification="j"))
    'x/÷3 [167, 1,500]'
    >>> band_text(Magnitude(0.2, 0.15, 0.25, scale="absolute", justification="j"))
    '±0.0500 [0.150, 0.250]'
    >>> band_text(Magnitude(5.0, 3.0, math.inf, justification="j"))
    'at least 3.00'
    """
    lo, hi, ref = float(mag.low), float(mag.high), float(mag.reference)
    if hi == math.inf:
        return f"at least {figure(lo)}"
    interval = f"[{figure(lo)}, {figure(hi)}]"
    if mag.scale in ("ratio", "log") and lo > 0 and math.isclose(lo * hi, ref * ref, rel_tol=1e-9) and hi > ref:
        return f"x/÷{figure(hi / ref, 3).rstrip('0').rstrip('.')} {interval}"
    if mag.scale == "absolute" and math.isclose(hi - ref, ref - lo, rel_tol=1e-9, abs_tol=1e-12):
        return f"±{figure(hi - ref)} {interval}"
    return interval


def _unit(mag: Magnitude) -> str:
    return "x" if mag.scale in ("ratio", "log") else ""


def assess_magnitude(mag: Magnitude | None, row: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The ``magnitude`` field of a result: the estimate's interval against the band.

    Parameters
    ----------
    mag : Magnitude or None
        The prediction's magnitude (None: nothing declared).
    row : mapping
        The kind's result row (``effect``, ``ci_low``, ``ci_high`` and its extra columns).
    dataset : str
        The dataset's name (checked against ``mag.not_on``).

    Returns
    -------
    dict
        ``{"status", "estimate", "reference", "band", "reason"}``: status one of
        :data:`MAGNITUDE_STATUSES` (rule in the module docstring); ``estimate`` and
        ``band`` on the band's scale (a ``"log"`` estimate exponentiated), ``band`` as
        ``[low, high]``. When a magnitude is declared, also ``interval`` (the estimate's,
        on the band's scale, or None), ``scale``, ``unit`` ("x" for ratios),
        ``band_text`` (:func:`band_text`) and ``justification``.

    Examples
    --------
    >>> m = Magnitude(500.0, 500.0 / 3, 1500.0, justification="about 500x")
    >>> assess_magnitude(m, {"effect": 2000.0, "ci_low": 1600.0, "ci_high": 2400.0}, "d")["status"]
    'outside'
    >>> assess_magnitude(m, {"effect": 1419.0, "ci_low": 767.0, "ci_high": 2416.0}, "d")["status"]
    'compatible'
    >>> assess_magnitude(m, {"effect": 600.0, "ci_low": 400.0, "ci_high": 900.0}, "d")["status"]
    'within'
    >>> assess_magnitude(None, {"effect": 1.0}, "d")["status"]
    'not_tested'
    """
    if mag is None:
        return {"status": "not_tested", "estimate": None, "reference": None, "band": None,
                "reason": NOT_DECLARED}
    out: dict[str, Any] = {"status": "not_tested", "estimate": None, "reference": float(mag.reference),
                           "band": [float(mag.low), float(mag.high)], "reason": "",
                           "interval": None, "scale": mag.scale, "unit": _unit(mag),
                           "band_text": band_text(mag), "justification": mag.justification}
    if dataset in mag.not_on:
        out["reason"] = f"the declaration excludes {dataset}: {mag.not_on[dataset]}"
        return out

    def value(col: str) -> float | None:
        v = row.get(col)
        if v is None or isinstance(v, bool):
            return None
        v = float(v)
        if not math.isfinite(v):
            return None
        return math.exp(v) if mag.scale == "log" else v

    est = value(mag.estimate)
    out["estimate"] = est
    if est is None:
        out["reason"] = f"the result has no finite estimate {mag.estimate!r} on these data"
        return out
    cols = mag.interval_columns
    if cols is None:
        out["reason"] = (f"the test gives the estimate {mag.estimate!r} no interval (Magnitude.interval "
                         f"names its columns where it has one)")
        return out
    lo, hi = value(cols[0]), value(cols[1])
    if lo is None or hi is None:
        out["reason"] = f"the estimate has no finite interval ({cols[0]}, {cols[1]}) on these data"
        return out
    lo, hi = min(lo, hi), max(lo, hi)
    out["interval"] = [lo, hi]
    unit = _unit(mag)
    interval = f"[{figure(lo)}, {figure(hi)}]"
    if hi < mag.low or lo > mag.high:
        side = "below" if hi < mag.low else "above"
        out["status"] = "outside"
        out["reason"] = (f"the interval {interval} lies entirely {side} the band {band_text(mag)} "
                         f"around {figure(mag.reference)}{unit}")
    elif mag.low <= lo and hi <= mag.high:
        out["status"] = "within"
        out["reason"] = (f"the interval {interval} lies inside the band {band_text(mag)} around "
                         f"{figure(mag.reference)}{unit}")
    else:
        out["status"] = "compatible"
        out["reason"] = (f"the interval {interval} overlaps the band {band_text(mag)} around "
                         f"{figure(mag.reference)}{unit} without lying inside it: the stated size "
                         f"is compatible with the data, not shown")
    return out


def combine(verdict: str, reason: str, magnitude: Mapping[str, Any]) -> tuple[str, str]:
    """The verdict of direction and magnitude together (rule in the module docstring).

    >>> combine("supported", "the interval lies entirely above 1.0", {"status": "outside", "reason": "r"})
    ('refuted', 'direction replicated; magnitude outside: r (direction: the interval lies entirely above 1.0)')
    >>> combine("inconclusive", "p 0.2", {"status": "outside", "reason": "r"})
    ('refuted', 'the claim as stated is refuted: magnitude outside: r (direction not established: p 0.2)')
    >>> combine("supported", "x", {"status": "within", "reason": "r"})
    ('supported', 'x; magnitude within: r')
    >>> combine("supported", "x", {"status": "compatible", "reason": "r"})
    ('supported', 'x; magnitude undetermined (compatible): r')
    """
    status = magnitude.get("status")
    if status == "outside" and verdict == C.SUPPORTED:
        return C.REFUTED, f"direction replicated; magnitude outside: {magnitude['reason']} (direction: {reason})"
    if status == "outside" and verdict in (C.REFUTED, C.INCONCLUSIVE):
        words = "direction refuted" if verdict == C.REFUTED else "direction not established"
        return C.REFUTED, (f"the claim as stated is refuted: magnitude outside: {magnitude['reason']} "
                           f"({words}: {reason})")
    if status == "compatible" and verdict == C.SUPPORTED:
        return verdict, f"{reason}; {UNDETERMINED} (compatible): {magnitude['reason']}"
    if status in ("within", "compatible") and verdict in (C.SUPPORTED, C.REFUTED, C.INCONCLUSIVE):
        return verdict, f"{reason}; magnitude {status}: {magnitude['reason']}"
    return verdict, reason


def qualifier(verdict: str, magnitude: Mapping[str, Any] | None) -> str:
    """The qualifier a verdict carries: :data:`UNDETERMINED` for a supported direction whose
    interval only overlaps the stated band, else ``""``.

    >>> qualifier("supported", {"status": "compatible"}), qualifier("supported", {"status": "within"})
    ('magnitude undetermined', '')
    """
    return UNDETERMINED if verdict == C.SUPPORTED and (magnitude or {}).get("status") == "compatible" else ""


def decide(kind: Any, row: Mapping[str, Any], ctx: Any, dataset: str) -> tuple[str, str, str, dict[str, Any]]:
    """A kind's result row decided as an evaluation decides it: the kind's rule gives the
    direction, then the declared magnitude (``ctx.prediction.magnitude``) on ``dataset``
    (:func:`assess_magnitude`, :func:`combine`).

    Returns
    -------
    (verdict, reason, direction, magnitude)
        ``direction`` is the kind's own verdict; ``magnitude`` the result's magnitude field.

    Raises
    ------
    LieStatsError
        The kind's rule returned something other than supported, refuted or inconclusive.
    """
    direction, reason = kind.decide(row, ctx)
    if direction not in C.VERDICTS[:3]:
        raise LieStatsError(f"Test {kind.name!r}: decision rule returned {direction!r}; expected one of "
                            f"{C.VERDICTS[:3]}.")
    magnitude = assess_magnitude(ctx.prediction.magnitude, row, dataset)
    verdict, reason = combine(direction, reason, magnitude)
    return verdict, reason, direction, magnitude


_DIRECTION_WORDS = {
    C.SUPPORTED: "direction replicated",
    C.REFUTED: "direction refuted",
    C.INCONCLUSIVE: "direction not established",
}
_EQUIVALENCE_WORDS = {
    C.SUPPORTED: "equivalence shown",
    C.REFUTED: "equivalence refuted",
    C.INCONCLUSIVE: "equivalence not established",
}


def finding(direction_verdict: str, verdict: str, reason: str, row: Mapping[str, Any],
            prediction: Mapping[str, Any], magnitude: Mapping[str, Any] | None) -> str:
    """One sentence a reader checks against the result's numbers.

    Parameters
    ----------
    direction_verdict : str
        The kind's verdict on the direction (before the magnitude).
    verdict, reason : str
        The final verdict and its reason (for skipped results, the reason is the sentence).
    row : mapping
        ``effect``, ``ci_low``, ``ci_high``, ``p_value``, ``n`` (missing ones are left out).
    prediction : mapping
        The prediction's declaration (``direction``, ``value``).
    magnitude : mapping or None
        The result's ``magnitude`` field.

    Examples
    --------
    >>> mag = {"status": "outside", "estimate": 2000.0, "interval": [1600.0, 2400.0], "reference": 500.0,
    ...        "band": [500 / 3, 1500.0], "reason": "r", "band_text": "x/÷3 [167, 1,500]", "unit": "x"}
    >>> finding("supported", "refuted", "", {"effect": 2000.0, "ci_low": 1600.0, "ci_high": 2400.0,
    ...         "p_value": 0.0001, "n": 48}, {"direction": "above", "value": 1.0}, mag)
    'direction replicated (above 1.00: 2,000 [1,600, 2,400], p 1.0e-04, n 48); magnitude 2,000x [1,600, 2,400] vs 500x: outside the band x/÷3 [167, 1,500]; verdict refuted'
    """
    if verdict in (C.SKIPPED, "out_of_scope"):
        return f"not evaluated: {reason}"
    words = _EQUIVALENCE_WORDS if prediction.get("direction") == "equivalent" else _DIRECTION_WORDS
    head = words.get(direction_verdict, direction_verdict)
    numbers = []
    effect, lo, hi = row.get(C.EFFECT), row.get(C.CI_LOW), row.get(C.CI_HIGH)
    if _finite(effect):
        est = figure(effect)
        if _finite(lo) and _finite(hi):
            est += f" [{figure(lo)}, {figure(hi)}]"
        numbers.append(est)
    if _finite(row.get(C.P_VALUE)):
        numbers.append(f"p {figure(row['p_value'], 2)}")
    if _finite(row.get(C.N)):
        numbers.append(f"n {int(row['n']) if float(row['n']).is_integer() else figure(row['n'])}")
    target = prediction.get("direction", "")
    if target in ("above", "below", "equivalent") and "value" in prediction:
        target = f"{target} {figure(prediction['value'])}"
    elif target in ("positive", "negative") and prediction.get("value"):
        target = f"{target} of {figure(prediction['value'])}"
    text = head + (f" ({target}: {', '.join(numbers)})" if numbers else f" ({target})")
    if magnitude is None or magnitude.get("status") == "not_tested":
        why = (magnitude or {}).get("reason") or "no magnitude declared"
        text += f"; magnitude not tested: {why}"
    else:
        unit = magnitude.get("unit", "")
        est = f"{figure(magnitude.get('estimate'))}{unit}"
        if magnitude.get("interval"):
            est += f" [{figure(magnitude['interval'][0])}, {figure(magnitude['interval'][1])}]"
        status = magnitude["status"]
        where = {"within": "inside", "compatible": "compatible with"}.get(status, status)
        text += (f"; magnitude {est} vs {figure(magnitude.get('reference'))}{unit}: "
                 f"{where} the band {magnitude.get('band_text', '')}".rstrip())
    q = qualifier(verdict, magnitude)
    return f"{text}; verdict {verdict}" + (f" ({q})" if q else "")


def _finite(value: Any) -> bool:
    return value is not None and not isinstance(value, bool) and math.isfinite(float(value))
