"""Equivalence kinds (TOST): ``correlation_equivalence``, ``tost_relative``, ``tost_paired``.

Two one-sided tests that an effect lies within ``[-bound, bound]`` (Schuirmann 1987;
:mod:`lie_stats.stats.equivalence`): a correlation, the mean log ratio of paired values
(a relative bound), or the mean difference of paired values (an absolute bound, e.g. one
metric under two compressions). The bound is the prediction's, or the parameter ``bound``.
"""

from __future__ import annotations

from typing import Any

from ...stats import columns as C
from ...stats.correlation import correlation
from ...stats.equivalence import tost_correlation, tost_paired, tost_relative
from ..registry import RESAMPLING, register_test
from ..rules import decide_equivalence
from ..tables import TestInput, columns_of

__all__: list[str] = []


def _bound(data: TestInput) -> float:
    return data.prediction.bound if data.prediction.bound is not None else data.params["bound"]


def _run_correlation_equivalence(data: TestInput) -> Any:
    p = data.params
    table, (x, y), strata = columns_of(data, "x", "y")
    est = correlation(x, y, strata=strata, method=p["method"], n_perm=p["n_perm"],
                      n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])
    return tost_correlation(float(est[C.EFFECT].iloc[0]), int(est[C.N].iloc[0]),
                            bound=_bound(data), alpha=p["alpha"], method=p["method"])


def _run_tost_relative(data: TestInput) -> Any:
    table = data.table("base", "tuned", drop_model=True)
    return tost_relative(table["base"].to_numpy(float), table["tuned"].to_numpy(float),
                         bound=_bound(data), alpha=data.params["alpha"])


def _run_tost_paired(data: TestInput) -> Any:
    table = data.table("a", "b")
    return tost_paired(table["a"].to_numpy(float), table["b"].to_numpy(float),
                       bound=_bound(data), alpha=data.params["alpha"])


register_test("correlation_equivalence", _run_correlation_equivalence, decide_equivalence,
              roles=("x", "y"), params={"method": "spearman", "bound": None, **RESAMPLING},
              directions=("equivalent",),
              description="TOST that a correlation lies within ±bound (lie_stats.stats.tost_correlation)")
register_test("tost_relative", _run_tost_relative, decide_equivalence, roles=("base", "tuned"),
              params={"bound": 1e-3}, directions=("equivalent",),
              description="paired TOST on log values, relative bound (lie_stats.stats.tost_relative)")
register_test("tost_paired", _run_tost_paired, decide_equivalence, roles=("a", "b"),
              params={"bound": None}, directions=("equivalent",),
              description="paired TOST that mean(b - a) lies within ±bound (absolute; units "
                          "aligned by model and layer, e.g. one metric under two compressions; "
                          "lie_stats.stats.tost_paired)")
