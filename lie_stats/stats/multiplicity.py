"""Multiplicity adjustment across the registry of hypotheses (DESIGN.md, replication)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v

__all__ = ["adjust_pvalues", "ADJUST_METHODS"]

ADJUST_METHODS = ("holm", "bh")


def adjust_pvalues(p: ArrayLike, *, method: str) -> np.ndarray:
    """Holm or Benjamini-Hochberg adjusted p-values; NaN entries are skipped hypotheses.

    Parameters
    ----------
    p : array-like, shape ``[m]``
        Raw p-values in ``[0, 1]``; NaN marks a hypothesis that was not tested (skipped for
        missing data, or a descriptive estimator without a p-value).
    method : {"holm", "bh"}
        ``"holm"``: Holm (1979) step-down, family-wise error control.
        ``"bh"``: Benjamini & Hochberg (1995) step-up, false-discovery-rate control.

    Returns
    -------
    numpy.ndarray, shape ``[m]``
        Adjusted p-values, capped at 1, in the input order.

    Notes
    -----
    **Skipped hypotheses:** NaN entries stay NaN and are excluded from the family, so ``m``
    is the number of hypotheses actually tested. A skipped hypothesis is not evidence either
    way; counting it would make every other adjustment depend on which data happened to be
    present. Holm: :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1, (m - j + 1) p_{(j)})`;
    BH: :math:`\\tilde p_{(i)} = \\min_{j \\ge i} \\min(1, m p_{(j)} / j)`.

    Raises
    ------
    StatsInputError
        A value outside ``[0, 1]`` or infinite, not 1-D, unknown method (with a suggestion).

    Examples
    --------
    >>> adjust_pvalues([0.01, np.nan, 0.04, 0.03], method="holm")
    array([0.03,  nan, 0.06, 0.06])
    >>> adjust_pvalues([0.01, 0.04, 0.03], method="bh")
    array([0.03, 0.04, 0.04])
    """
    where = "adjust_pvalues"
    v.choice(method, ADJUST_METHODS, name="method", where=where)
    arr = v.vector(p, name="p", where=where)
    tested = ~np.isnan(arr)
    q = arr[tested]
    if ((q < 0) | (q > 1)).any():
        raise StatsInputError(f"{where}: p-values must lie in [0, 1]; got {q[(q < 0) | (q > 1)][:5].tolist()}.")
    out = np.full(arr.shape, np.nan)
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="stable")
    sorted_p = q[order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1) * sorted_p))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * sorted_p / rank)[::-1])[::-1]
    res = np.empty(m)
    res[order] = adj
    out[tested] = res
    return out
