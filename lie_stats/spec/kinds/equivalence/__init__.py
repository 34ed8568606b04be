"""Equivalence kinds (TOST): ``correlation_equivalence``, ``tost_relative``, ``tost_paired``.

Two one-sided tests that an effect lies within ``[-bound, bound]`` (Schuirmann 1987;
:mod:`lie_stats.stats.equivalence`): a correlation, the mean log ratio of paired values
(a relative bound), or the mean difference of paired values (an absolute bound, e.g. one
metric under two compressions). The bound is the prediction's, or the parameter ``bound``.

Heads are nested in layers and share their layer's effects, so per-head units are not
independent: the paired TOSTs then run on layer means (one unit per model and layer), and
the correlation TOST tests the within-layer correlation with a standard error from the
within-layer permutation null. A per-head correlation without layer strata has no calibrated
standard error here: the kind says so (inconclusive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .... import schema
from ....errors import SpecError
from .... import columns as C
from ....columns import N_CLUSTERS, PER_HEAD_WITHOUT_STRATA
from ....stats.correlation import within_correlation
from ....stats.equivalence import rank_z_factor, tost_correlation, tost_paired, tost_relative
from ...registry import RESAMPLING, UNITS, register_test
from ...rules import Decision, decide_equivalence, finite
from ...tables import TestInput, columns_of

__all__ = ["decide_tost", "correlation_tost", "per_head_unstratified", "PER_HEAD_REASON"]


def _bound(data: TestInput) -> float:
    return data.prediction.bound if data.prediction.bound is not None else data.params["bound"]


def _head_clusters(table: pd.DataFrame) -> np.ndarray | None:
    """(model, layer) codes of a per-head table's rows; None when the units are not heads."""
    if schema.HEAD not in table.columns or schema.LAYER not in table.columns:
        return None
    cols = [c for c in (schema.MODEL, schema.LAYER) if c in table.columns]
    return pd.factorize(pd.MultiIndex.from_frame(table[cols]))[0]


def per_head_unstratified(data: TestInput, table: pd.DataFrame) -> bool:
    """Whether the units are heads but the strata (``params['strata']``: ``none`` or
    ``model``) do not keep each head in its layer: no correlation test here is calibrated
    there (heads share their layer's effects)."""
    return _head_clusters(table) is not None and data.params.get("strata", "layer") != "layer"


#: The reason a rule gives when :func:`per_head_unstratified`.
PER_HEAD_REASON = ("per-head units without layer strata: heads share their layer's effects, so "
                   "no calibrated test exists here (set strata='layer')")


def correlation_tost(data: TestInput, x: np.ndarray, y: np.ndarray, table: pd.DataFrame,
                     strata: Any, bound: float) -> pd.DataFrame:
    """TOST of the within-strata correlation of ``x`` and ``y`` within ``±bound``.

    The estimate is :func:`lie_stats.stats.correlation.within_correlation`'s; the standard
    error of its Fisher z is the within-strata permutation null's, times
    :func:`lie_stats.stats.equivalence.rank_z_factor` at the bound. Per-head units without
    strata give NaN p-values and ``per_head_without_strata`` = 1.
    """
    p = data.params
    if per_head_unstratified(data, table):
        row = tost_correlation(0.0, max(int(x.size), 5), bound=bound, alpha=p["alpha"],
                               method=p["method"], se=float("nan"))
        return row.assign(**{C.EFFECT: np.nan, PER_HEAD_WITHOUT_STRATA: 1.0})
    w = within_correlation(x, y, strata=strata, method=p["method"], n_perm=p["n_perm"],
                           seed=p["seed"], where="correlation_equivalence")
    se = w.se_z * rank_z_factor(bound, p["method"])
    r = float(np.clip(w.r, -1 + 1e-12, 1 - 1e-12)) if np.isfinite(w.r) else 0.0
    row = tost_correlation(r, w.n, bound=bound, alpha=p["alpha"], method=p["method"], se=se)
    return row.assign(**{C.N_STRATA: w.plan.n_strata, C.N_PERM: w.plan.size})


def decide_tost(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the TOST p (the larger one-sided p) < alpha; refuted when the interval
    lies entirely outside [-bound, bound]; inconclusive otherwise, and when the test is
    undefined: every difference identical (standard error 0), or a per-head correlation
    without layer strata.

    Per-head paired units are averaged within layers first (the layer is the unit, df =
    layers - 1); a correlation is the within-layer one, with the within-layer permutation
    null's standard error.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("equivalent", bound=0.1), 0.05, {}, {})
    >>> decide_tost({"p_value": 0.01, "ci_low": -0.05, "ci_high": 0.05}, ctx)[0]
    'supported'
    >>> decide_tost({"p_value": float("nan"), "ci_low": 0.2, "ci_high": 0.2, "n": 12}, ctx)[1]
    'every one of the 12 differences is 0.2 (standard error 0): the t test is undefined'
    """
    if row.get(PER_HEAD_WITHOUT_STRATA) == 1.0:
        return "inconclusive", PER_HEAD_REASON
    lo, hi = row.get(C.CI_LOW), row.get(C.CI_HIGH)
    if not finite(row.get(C.P_VALUE)) and finite(lo, hi) and lo == hi:
        return "inconclusive", (f"every one of the {int(row.get(C.N, 0))} differences is {lo:.4g} "
                                f"(standard error 0): the t test is undefined")
    return decide_equivalence(row, ctx)


def _run_correlation_equivalence(data: TestInput) -> Any:
    table, (x, y), strata = columns_of(data, "x", "y")
    return correlation_tost(data, x, y, table, strata, _bound(data))


def _with_clusters(row: pd.DataFrame, clusters: np.ndarray | None) -> pd.DataFrame:
    return row.assign(**{N_CLUSTERS: np.nan if clusters is None else int(clusters.max()) + 1})


def _run_tost_relative(data: TestInput) -> Any:
    table = data.table("base", "tuned", drop_model=True)
    clusters = _head_clusters(table)
    row = tost_relative(table["base"].to_numpy(float), table["tuned"].to_numpy(float),
                        bound=_bound(data), alpha=data.params["alpha"], clusters=clusters)
    return _with_clusters(row, clusters)


def _run_tost_paired(data: TestInput) -> Any:
    table = data.table("a", "b")
    if data.params["unit"] == "run":
        return _tost_paired_by_run(data, table)
    clusters = _head_clusters(table)
    row = tost_paired(table["a"].to_numpy(float), table["b"].to_numpy(float),
                      bound=_bound(data), alpha=data.params["alpha"], clusters=clusters)
    return _with_clusters(row, clusters)


def _tost_paired_by_run(data: TestInput, table: pd.DataFrame) -> pd.DataFrame:
    """``tost_paired`` with the run (the cube's model) as the unit: the complete pairs'
    values averaged within (model, layer), then the differences averaged within each model
    (one unit per run, df = runs - 1)."""
    keep = table[["a", "b"]].notna().all(axis=1)
    table = table[keep]
    if schema.MODEL not in table.columns:
        raise SpecError("tost_paired: unit 'run' needs a selection with the model dimension.")
    cols = [c for c in (schema.MODEL, schema.LAYER) if c in table.columns]
    layers = table.groupby(cols, sort=True)[["a", "b"]].mean().reset_index()
    runs = pd.factorize(layers[schema.MODEL])[0]
    row = tost_paired(layers["a"].to_numpy(float), layers["b"].to_numpy(float),
                      bound=_bound(data), alpha=data.params["alpha"], clusters=runs)
    return row.assign(**{N_CLUSTERS: int(runs.max()) + 1 if runs.size else 0})


register_test("correlation_equivalence", _run_correlation_equivalence, decide_tost,
              roles=("x", "y"), params={"method": "spearman", "bound": None, **RESAMPLING},
              directions=("equivalent",),
              description="TOST that the within-layer correlation lies within ±bound, Fisher z "
                          "with the within-layer permutation null's standard error "
                          "(lie_stats.stats.tost_correlation)")
register_test("tost_relative", _run_tost_relative, decide_tost, roles=("base", "tuned"),
              params={"bound": 1e-3}, directions=("equivalent",),
              description="paired TOST on log values, relative bound; per-head pairs averaged "
                          "within layers (lie_stats.stats.tost_relative)")
register_test("tost_paired", _run_tost_paired, decide_tost, roles=("a", "b"),
              params={"bound": None, "unit": "layer"}, enums={"unit": UNITS},
              hashed_when_declared=("unit",), directions=("equivalent",),
              description="paired TOST that mean(b - a) lies within ±bound (absolute; units "
                          "aligned by model and layer, e.g. one metric under two compressions; "
                          "per-head pairs averaged within layers); unit 'layer': the (model, "
                          "layer) pairs are the units (df = pairs - 1); unit 'run': the layer "
                          "differences averaged within each model, one unit per run (df = runs - "
                          "1) (lie_stats.stats.tost_paired)")
