"""What a verdict may say given its diagnosis: a rule that is not calibrated on data like the
result's does not get to say "supported".

The diagnosis (:mod:`lie_stats.diagnosis`) simulates each result's rule under its design's
null and under the alternative nulls of :mod:`lie_stats.diagnosis.robust` (heavier tails,
stronger dependence, an effect shared by whole layers). When the rule says "supported" in
more than :data:`ROBUST_FACTOR` times alpha of the simulations under any of them (or under
the design's own null), a
"supported" verdict could be that departure rather than the claim, so the result says
"inconclusive" and why. The limit was fixed before any alternative-null figure of the
bundled results was computed (DESIGN.md, "Nulls other than the test's own").

Only "supported" is limited: a refuted or inconclusive verdict claims no effect that a
misspecified null could have produced. A result without a diagnosis, or whose alternatives
do not apply, keeps its verdict (the report says it was not diagnosed there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ROBUST_FACTOR", "uncalibrated", "limit_to_calibrated"]

#: A rule whose share "supported" under an alternative null exceeds this many times alpha is
#: not calibrated on the result's data.
ROBUST_FACTOR = 2.0


def uncalibrated(diagnosis: Mapping[str, Any] | None, alpha: float) -> tuple[str, Mapping[str, Any]] | None:
    """The null (name, record) with the largest FPR above ``ROBUST_FACTOR * alpha``: the
    design's own (``own_null``) or an alternative; None when every one stays at or under it.

    >>> diag = {"robust": {"heavy_tails": {"fpr": 0.03, "n_sims": 100},
    ...                    "shared_effect": {"fpr": 0.31, "n_sims": 100}}}
    >>> uncalibrated(diag, 0.05)[0], uncalibrated(diag, 0.2)
    ('shared_effect', None)
    """
    worst = None
    nulls = dict((diagnosis or {}).get("robust") or {})
    if (diagnosis or {}).get("fpr") is not None:  # the design's own null first
        nulls = {"own_null": {"fpr": diagnosis["fpr"], "n_sims": diagnosis.get("n_sims"),
                              "what": "the design's own null"}, **nulls}
    for name, record in nulls.items():
        fpr = record.get("fpr") if isinstance(record, Mapping) else None
        if fpr is not None and fpr > ROBUST_FACTOR * alpha and (worst is None or fpr > worst[1]["fpr"]):
            worst = (name, record)
    return worst


def limit_to_calibrated(result: Any) -> Any:
    """``result`` unchanged, or, for a "supported" verdict whose rule is not calibrated on its
    data (:func:`uncalibrated` at the spec's alpha), a new result saying "inconclusive" with
    the alternative null, its FPR and the verdict the rule gave in the reason and finding."""
    if result.verdict != "supported":
        return result
    alpha = float((result.params or {}).get("alpha", 0.05))
    worst = uncalibrated(result.diagnosis, alpha)
    if worst is None:
        return result
    name, record = worst
    label = "its own null" if name == "own_null" else f"the alternative null {name.replace('_', ' ')}"
    why = (f"not calibrated on data like these: under {label} "
           f"({record.get('what', '')}) the rule says supported in {record['fpr']:.0%} of "
           f"{record.get('n_sims')} simulations, more than {ROBUST_FACTOR:g} x alpha ({alpha:g})")
    head = result.finding.rsplit("; verdict ", 1)[0] if result.finding else ""
    finding = f"{head}; {why}; verdict inconclusive (the rule gave supported)" if head else \
        f"{why}; verdict inconclusive (the rule gave supported)"
    return result.evolve(verdict="inconclusive", reason=f"{why}; the rule gave supported: {result.reason}",
                         finding=finding)
