"""Meta-analysis kind: ``meta_replication`` (:mod:`lie_stats.stats.meta`).

A published correlation replicated across the independent runs of a cube: one correlation
of ``x`` and ``y`` per run (model), partial on the covariates when the selection has any
(roles ``covar`` and ``covar_<name>``, e.g. one per weight matrix), pooled
by a random-effects model (DerSimonian-Laird or REML tau^2), judged by the pooled
interval and the small-telescopes test against the original's r33.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .... import schema
from ....errors import SpecError
from .... import columns as C
from ....columns import K_RUNS
from ....stats.meta import ESTIMATORS, meta_replication
from ...registry import register_test
from ...rules import Decision, finite
from ...tables import TestInput
from ..correlation import _validate_replication

__all__ = ["decide_meta_replication"]


def _is_covariate_role(role: str) -> bool:
    """covar_<name>: further covariates of the partial correlation"""
    return role.startswith("covar_") and len(role) > len("covar_")


def _run_meta_replication(data: TestInput) -> Any:
    p, ref = data.params, data.reference
    covariates = [r for r in data.arrays if r == "covar" or _is_covariate_role(r)]
    roles = ["x", "y", *covariates]
    table = data.table(*roles)
    if schema.MODEL not in table.columns:
        raise SpecError("meta_replication pools one correlation per run: the selection must keep "
                        "the model dimension (select no models, or several).")
    r0 = ref["r"] if "r" in ref else ref["rho"]
    return meta_replication(
        table["x"].to_numpy(float), table["y"].to_numpy(float), table[schema.MODEL].to_numpy(),
        covar=table[covariates].to_numpy(float) if covariates else None,
        original_r=float(r0), original_n=int(ref["n"]), method=p["method"],
        estimator=p["estimator"], ci=p["ci"], alpha=p["alpha"])


def decide_meta_replication(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Refuted when the small-telescopes test finds the pooled effect smaller than r33, the
    effect the original had 33 % power to detect (p_small_telescopes < alpha, which includes
    a pooled effect of the opposite sign); supported otherwise when the pooled estimate has
    the predicted sign and its two-sided p < alpha (its 1 - alpha interval excludes 0 on
    the predicted side); inconclusive otherwise.

    The precedence is that of ``replication``: an effect the original could not have seen
    does not replicate it, however surely it is not 0.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("negative"), 0.05, {"rho": -0.274, "n": 96}, {})
    >>> decide_meta_replication({"p_value": 0.001, "effect": -0.3, "p_small_telescopes": 0.7}, ctx)[0]
    'supported'
    >>> decide_meta_replication({"p_value": 0.001, "effect": -0.05, "p_small_telescopes": 0.01}, ctx)[0]
    'refuted'
    >>> decide_meta_replication({"p_value": 0.3, "effect": -0.1, "p_small_telescopes": 0.2}, ctx)[0]
    'inconclusive'
    """
    p, effect, pst = row.get(C.P_VALUE), row.get(C.EFFECT), row.get(C.P_SMALL_TELESCOPES)
    if not finite(p, effect, pst):
        return "inconclusive", "the pooled tests gave no p-values on these data"
    a = ctx.alpha
    runs = f"{row.get(K_RUNS, float('nan')):.0f} runs"
    if pst < a:
        return "refuted", (f"small telescopes: the pooled effect over {runs} is smaller than r33, the "
                           f"one the original had 33 % power to detect (p {pst:.3g} < alpha {a})")
    predicted = -1.0 if ctx.prediction.direction == "negative" else 1.0
    if p < a and effect * predicted > 0:
        return "supported", (f"the pooled effect over {runs} is {ctx.prediction.direction} (p {p:.3g} "
                             f"< alpha {a}: its interval excludes 0) and not smaller than r33")
    return "inconclusive", (f"the pooled effect over {runs} is not shown {ctx.prediction.direction} "
                            f"(p {p:.3g}) nor smaller than r33 (p {pst:.3g})")


register_test("meta_replication", _run_meta_replication, decide_meta_replication, roles=("x", "y"),
              optional_roles=("covar",), role_pattern=_is_covariate_role,
              params={"method": "spearman", "estimator": "DL", "ci": 0.95},
              enums={"method": ("spearman", "pearson"), "estimator": ESTIMATORS},
              directions=("positive", "negative"), reference=("r|rho", "n"),
              validate=_validate_replication,
              description="replication of a correlation across runs: one correlation of x and y per "
                          "run (model) of the selection, Fisher z with variance 1 / (n - 3) "
                          "(partial on the m covariate roles covar, covar_<name>: 1 / (n - 3 - m)), pooled by a random-effects model "
                          "(params estimator DL or REML; I^2, Q, the t_{k-2} prediction interval "
                          "reported), small-telescopes test of the pooled z against the original's "
                          "r33 (lie_stats.stats.meta_replication)")
