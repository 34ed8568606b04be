"""Simulated head tables for the correlation, replication and equivalence calibrations.

A verdict is the kind's binding run on the selected table and its decision rule applied to
the row (:func:`lie_stats.spec.evaluation.run_once`). :func:`verdict_of_table` does exactly
that on a tidy table built here (the table ``TestInput.table`` would return for a per-head
selection: one column per role, then ``model``, ``layer``, ``head``), which skips xarray
selection and makes a few hundred simulations affordable;
``test_*::test_the_table_path_is_evaluate_cube`` checks it gives :func:`evaluate_cube`'s
verdicts on cubes.

Layouts: ``sizes`` is the number of heads of each layer (unequal layers, few layers);
layer effects have SD ``layer_sd`` (``1.0``: an intra-class correlation of 0.5 with unit
head noise) and are correlated ``layer_rho`` across the two variables (0.9: co-varying
layer means; 0: independent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lie_stats.spec import HypothesisSpec, Prediction, Select
from lie_stats.spec.tables import TestInput
from lie_stats.spec.verdict import decide_input
from lie_stats.stats.replication import r33

#: 12 layers of 8 heads (the bundled 96-head runs), 5 layers of 8, and 8 unequal layers.
GRID = (8,) * 12
FEW = (8,) * 5
UNEQUAL = (4, 12, 8, 6, 10, 16, 5, 9)


def spearman_to_pearson(rho_s: float) -> float:
    """Pearson correlation of a bivariate normal whose grade (Spearman) correlation is
    ``rho_s``: :math:`r = 2 \\sin(\\pi \\rho_s / 6)` (Pearson 1907; Kruskal 1958).

    >>> round(spearman_to_pearson(0.3), 4)
    0.3129
    """
    return float(2.0 * np.sin(np.pi * rho_s / 6.0))


def layer_codes(sizes: Sequence[int]) -> np.ndarray:
    """The layer of each head, layers of ``sizes`` heads."""
    return np.repeat(np.arange(len(sizes)), sizes)


def layered_values(rng: np.random.Generator, sizes: Sequence[int], *, layer_sd: float = 1.0,
                   layer_rho: float = 0.9, within_rho: float = 0.0,
                   n_vars: int = 2) -> list[np.ndarray]:
    """``n_vars`` per-head variables: layer effects of SD ``layer_sd`` correlated
    ``layer_rho`` between consecutive variables' layers, unit head noise, and head noise of
    the first two correlated ``within_rho`` (the within-layer association)."""
    layer = layer_codes(sizes)
    k, n = len(sizes), layer.size
    u = [rng.normal(size=k)]
    for _ in range(n_vars - 1):
        u.append(layer_rho * u[-1] + np.sqrt(1 - layer_rho ** 2) * rng.normal(size=k))
    e = [rng.normal(size=n) for _ in range(n_vars)]
    e[1] = within_rho * e[0] + np.sqrt(1 - within_rho ** 2) * e[1]
    return [layer_sd * ui[layer] + ei for ui, ei in zip(u, e)]


def head_table(columns: dict[str, np.ndarray], sizes: Sequence[int], *,
               per_head: bool = True) -> pd.DataFrame:
    """The tidy table of a one-model per-head selection (``per_head=False``: per-layer
    units, rows are layers and there is no ``head`` column)."""
    layer = layer_codes(sizes)
    frame = pd.DataFrame(dict(columns))
    frame["model"] = "sim"
    frame["layer"] = layer
    if per_head:
        frame["head"] = np.concatenate([np.arange(s) for s in sizes])
    return frame


def verdict_of_table(spec: HypothesisSpec, table: pd.DataFrame,
                     key: tuple[str, ...] | None = None) -> tuple[str, dict[str, float]]:
    """The verdict (and result row) of ``spec``'s kind on ``table``, decided as
    :func:`lie_stats.spec.evaluation.run_once` and the diagnosis decide it
    (:func:`lie_stats.spec.verdict.decide_input`).

    ``key`` is the table's key in ``TestInput.table`` (the roles, plus ``"<drop_model>"``
    for base/tuned kinds); default the spec's roles in declaration order.
    """
    params = spec.resolved_params()
    data = TestInput(arrays={}, params=params, prediction=spec.prediction,
                     reference=dict(spec.reference))
    data._tables[key or tuple(spec.selection)] = table
    decided = decide_input(spec, data)
    return decided.verdict, decided.row


def count(verdicts: Sequence[str]) -> dict[str, int]:
    """Verdict counts, every verdict word present."""
    out = {"supported": 0, "refuted": 0, "inconclusive": 0}
    for v in verdicts:
        out[v] += 1
    return out


# ------------------------------------------------------------------ the calibration cases
ALPHA = 0.05


def corr_spec(test: str, direction: str, *, method: str = "spearman", n_perm: int = 199,
              strata: str = "layer", reference: dict | None = None,
              bound: float | None = None, roles: Sequence[str] = ("x", "y")) -> HypothesisSpec:
    """A spec of a correlation-family kind on per-head roles (selections are placeholders:
    :func:`verdict_of_table` hands the kind its table directly)."""
    metrics = ("head_contribution", "change_from_init", "value_norm")
    selection = {r: Select(m, step="last") for r, m in zip(roles, metrics)}
    return HypothesisSpec(
        id=f"X-{test}", claim="c", source="s", datasets=("sim",), test=test,
        selection=selection, prediction=Prediction(direction, bound=bound),
        params={"method": method, "n_perm": n_perm, "n_boot": 0, "alpha": ALPHA,
                "resample_by": strata, "seed": 0},
        reference=reference or {}, gate="report")


def tost_spec(test: str, bound: float) -> HypothesisSpec:
    """A ``tost_paired`` (roles a, b) or ``tost_relative`` (base, tuned) spec."""
    roles = ("a", "b") if test == "tost_paired" else ("base", "tuned")
    return HypothesisSpec(
        id=f"X-{test}", claim="c", source="s", datasets=("sim",), test=test,
        selection={r: Select("head_contribution", step="last") for r in roles},
        prediction=Prediction("equivalent", bound=bound), params={"alpha": ALPHA},
        gate="report")


def paired_differences(rng: np.random.Generator, sizes: Sequence[int], mean: float, *,
                       layer_sd: float = 1.0, head_sd: float = 1.0,
                       scale: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Per-head pairs (a, b) whose difference b - a is ``mean`` + a layer effect (SD
    ``layer_sd * scale``) + head noise (SD ``head_sd * scale``): an intra-class correlation
    of ``layer_sd^2 / (layer_sd^2 + head_sd^2)``; every layer's expected difference is
    ``mean``. ``a`` carries its own layer effect (values of one metric vary by layer)."""
    layer = layer_codes(sizes)
    a = rng.normal(size=len(sizes))[layer] + rng.normal(size=layer.size)
    d = mean + scale * (layer_sd * rng.normal(size=len(sizes))[layer]
                        + head_sd * rng.normal(size=layer.size))
    return a, a + d


def ties(a: np.ndarray, step: float = 0.5) -> np.ndarray:
    """``a`` rounded to multiples of ``step`` (ties, as a metric reported at low precision)."""
    return np.round(a / step) * step


# ------------------------------------------------------------------ cases, one per figure
#: The B5 original: rho = -0.274 on 96 heads; its r33 (0.1565).
ORIGINAL = {"rho": -0.274, "n": 96}
R33 = r33(96)
#: Equivalence bounds of the cases: a paired difference (differences have SD 0.1 per head
#: and 0.1 per layer), a relative change, a correlation.
BOUND_D, BOUND_REL, BOUND_R = 0.1, 0.1, 0.3


@dataclass(frozen=True)
class Case:
    """One calibration figure: a spec, a table generator, which p counts, and what the
    verdict should do (``null``: the rate of ``false`` verdicts is at most ``rate``;
    ``power``: the rate of ``supported`` under the planted effect)."""

    name: str
    kind: str
    what: str
    spec: HypothesisSpec
    make: Callable[[np.random.Generator], pd.DataFrame]
    p_column: str
    false: tuple[str, ...]
    rate: float
    key: tuple[str, ...] | None = None


def _pair(sizes, **kw):
    def make(rng):
        x, y = layered_values(rng, sizes, **kw)
        return head_table({"x": x, "y": y}, sizes)
    return make


def _tied_pair(sizes, **kw):
    def make(rng):
        x, y = layered_values(rng, sizes, **kw)
        return head_table({"x": ties(x), "y": ties(y)}, sizes)
    return make


def _partial(sizes, within_rho):
    def make(rng):
        x0, y0, c = layered_values(rng, sizes, n_vars=3, within_rho=within_rho)
        return head_table({"x": x0 + 0.6 * c, "y": y0 + 0.6 * c, "covar": c}, sizes)
    return make


def _paired(sizes, mean, roles=("a", "b"), per_head=True, log=False, **kw):
    def make(rng):
        a, b = paired_differences(rng, sizes if per_head else (1,) * len(sizes), mean, **kw)
        if log:  # positive values whose log ratio is the difference
            a, b = np.exp(a), np.exp(b)
        return head_table({roles[0]: a, roles[1]: b}, sizes if per_head else (1,) * len(sizes),
                          per_head=per_head)
    return make


def _cases() -> dict[str, Case]:
    rep = corr_spec("replication", "negative", reference=ORIGINAL)
    rep_p = corr_spec("replication", "negative", method="pearson", reference=ORIGINAL)
    rep_k = corr_spec("replication", "negative", method="kendall", reference=ORIGINAL)
    r_s33 = spearman_to_pearson(R33)
    cases = [
        Case("null, co-varying layers", "replication", "rho_w = 0, ICC 0.5, layer rho 0.9, 12x8",
             rep, _pair(GRID), "p_original_direction", ("supported",), ALPHA),
        Case("null, independent layers, ties", "replication",
             "rho_w = 0, ICC 0.5, layer rho 0, values rounded to 0.5, 12x8",
             rep, _tied_pair(GRID, layer_rho=0.0), "p_original_direction", ("supported",), ALPHA),
        Case("at r33, co-varying layers", "replication",
             "Pearson rho_w = -r33, layer rho 0.9, 12x8 (method pearson)",
             rep_p, _pair(GRID, within_rho=-R33), "p_small_telescopes", ("refuted",), ALPHA),
        Case("at r33, Spearman", "replication",
             "grade rho_w = -r33 (Pearson 2 sin(pi r33 / 6)), layer rho 0.9, 12x8",
             rep, _pair(GRID, within_rho=-r_s33), "p_small_telescopes", ("refuted",), ALPHA),
        Case("at r33, 5 layers", "replication", "Pearson rho_w = -r33, layer rho 0.9, 5x8",
             rep_p, _pair(FEW, within_rho=-R33), "p_small_telescopes", ("refuted",), ALPHA),
        Case("at r33, unequal layers", "replication",
             "Pearson rho_w = -r33, layer rho 0.9, layers of 4-16 heads",
             rep_p, _pair(UNEQUAL, within_rho=-R33), "p_small_telescopes", ("refuted",), ALPHA),
        Case("at tau33, Kendall", "replication",
             "Pearson rho_w = -r33, so tau_w = -(2/pi) arcsin r33, layer rho 0.9, 12x8",
             rep_k, _pair(GRID, within_rho=-R33), "p_small_telescopes", ("refuted",), ALPHA),
        Case("power, co-varying layers", "replication",
             "grade rho_w = -0.274 against positive pooled rho, layer rho 0.9, 12x8",
             rep, _pair(GRID, within_rho=-spearman_to_pearson(0.274)), "p_original_direction",
             ("refuted",), ALPHA),
        Case("bound, per-head ICC 0.5", "tost_paired", "mean(d) = bound, ICC 0.5, 12x8",
             tost_spec("tost_paired", BOUND_D), _paired(GRID, BOUND_D), "p_value",
             ("supported",), ALPHA),
        Case("bound, per-head 5 layers", "tost_paired", "mean(d) = bound, ICC 0.5, 5x8",
             tost_spec("tost_paired", BOUND_D), _paired(FEW, BOUND_D), "p_value",
             ("supported",), ALPHA),
        Case("bound, per-head unequal", "tost_paired", "mean(d) = bound, ICC 0.5, layers of 4-16",
             tost_spec("tost_paired", BOUND_D), _paired(UNEQUAL, BOUND_D), "p_value",
             ("supported",), ALPHA),
        Case("bound, per-head ICC 0", "tost_paired", "mean(d) = bound, no layer effect, 12x8",
             tost_spec("tost_paired", BOUND_D), _paired(GRID, BOUND_D, layer_sd=0.0), "p_value",
             ("supported",), ALPHA),
        Case("bound, per-layer units", "tost_paired", "mean(d) = bound, 12 layer units",
             tost_spec("tost_paired", BOUND_D), _paired(GRID, BOUND_D, per_head=False), "p_value",
             ("supported",), ALPHA),
        Case("power, per-head ICC 0.5", "tost_paired", "mean(d) = 0, ICC 0.5, 12x8",
             tost_spec("tost_paired", BOUND_D), _paired(GRID, 0.0), "p_value", ("refuted",), ALPHA),
        Case("bound, per-head ICC 0.5", "tost_relative", "log ratio = log(1 + bound), ICC 0.5, 12x8",
             tost_spec("tost_relative", BOUND_REL),
             _paired(GRID, np.log1p(BOUND_REL), roles=("base", "tuned"), log=True), "p_value",
             ("supported",), ALPHA, key=("base", "tuned", "<drop_model>")),
        Case("power, per-head ICC 0.5", "tost_relative", "log ratio = 0, ICC 0.5, 12x8",
             tost_spec("tost_relative", BOUND_REL),
             _paired(GRID, 0.0, roles=("base", "tuned"), log=True), "p_value", ("refuted",), ALPHA,
             key=("base", "tuned", "<drop_model>")),
        Case("bound, co-varying layers", "correlation_equivalence",
             "Pearson rho_w = bound, layer rho 0.9, 12x8 (method pearson)",
             corr_spec("correlation_equivalence", "equivalent", method="pearson", bound=BOUND_R),
             _pair(GRID, within_rho=BOUND_R), "p_value", ("supported",), ALPHA),
        Case("bound, Spearman, 5 layers", "correlation_equivalence",
             "grade rho_w = bound, layer rho 0.9, 5x8",
             corr_spec("correlation_equivalence", "equivalent", bound=BOUND_R),
             _pair(FEW, within_rho=spearman_to_pearson(BOUND_R)), "p_value", ("supported",), ALPHA),
        Case("bound, Spearman, unequal", "correlation_equivalence",
             "grade rho_w = bound, layer rho 0.9, layers of 4-16",
             corr_spec("correlation_equivalence", "equivalent", bound=BOUND_R),
             _pair(UNEQUAL, within_rho=spearman_to_pearson(BOUND_R)), "p_value", ("supported",),
             ALPHA),
        Case("power, co-varying layers", "correlation_equivalence",
             "rho_w = 0, layer rho 0.9 (pooled rho about 0.45), 12x8",
             corr_spec("correlation_equivalence", "equivalent", bound=BOUND_R), _pair(GRID),
             "p_value", ("refuted",), ALPHA),
        Case("per-head, no strata", "correlation_equivalence",
             "rho_w = bound, strata 'none': refuses to decide",
             corr_spec("correlation_equivalence", "equivalent", bound=BOUND_R, strata="none"),
             _pair(GRID, within_rho=BOUND_R), "p_value", ("supported", "refuted"), 0.0),
        Case("null, 5 layers", "correlation", "rho_w = 0, layer rho 0.9, 5x8",
             corr_spec("correlation", "positive"), _pair(FEW), "p_value",
             ("supported", "refuted"), ALPHA / 2),
        Case("null, unequal layers", "correlation", "rho_w = 0, layer rho 0.9, layers of 4-16",
             corr_spec("correlation", "positive"), _pair(UNEQUAL), "p_value",
             ("supported", "refuted"), ALPHA / 2),
        Case("power, 5 layers", "correlation", "Pearson rho_w = 0.4, layer rho 0.9, 5x8",
             corr_spec("correlation", "positive"), _pair(FEW, within_rho=0.4), "p_value",
             ("refuted",), ALPHA / 2),
        Case("null", "partial_correlation",
             "partial rho_w = 0 given a covariate shared by x and y, layer rho 0.9, 12x8",
             corr_spec("partial_correlation", "positive", roles=("x", "y", "covar")),
             _partial(GRID, 0.0), "p_value", ("supported", "refuted"), ALPHA / 2),
        Case("power", "partial_correlation", "partial rho_w = -0.3, layer rho 0.9, 12x8",
             corr_spec("partial_correlation", "negative", roles=("x", "y", "covar")),
             _partial(GRID, -0.3), "p_value", ("refuted",), ALPHA / 2),
    ]
    return {f"{c.kind}: {c.name}": c for c in cases}


#: Every calibration case, by "kind: case".
CASES = _cases()


def run_case(case: Case, n_sims: int, seed: int) -> dict[str, int]:
    """Verdict counts of ``case`` over ``n_sims`` tables, and ``p_below`` (its p < alpha)."""
    rng = np.random.default_rng(seed)
    verdicts, below = [], 0
    for _ in range(n_sims):
        verdict, row = verdict_of_table(case.spec, case.make(rng), case.key)
        verdicts.append(verdict)
        p = row.get(case.p_column, np.nan)
        below += bool(p < ALPHA)
    return {**count(verdicts), "p_below": below, "n": n_sims}
