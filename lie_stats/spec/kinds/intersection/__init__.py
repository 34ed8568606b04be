"""Intersection-union equivalence: ``iut_equivalence`` ("< bound in every unit").

A claim of no change "every metric, every layer" holds only if it holds in each layer of
each (metric, family) cell. The selection names each cell's variables with derived roles
``<part>__<cell>``: ``base__<cell>`` and ``tuned__<cell>`` (the same models before and after;
each model a replicate run), and optionally ``floor_start__<cell>`` and ``floor_end__<cell>``
(the noise floor: e.g. the pretraining runs at two late checkpoints, whose change is what
ordinary training does to a layer). Units are (cell, layer); the statistic is
:func:`lie_stats.stats.intersection.iut_equivalence`. The noise floor is pooled per unit
(``pool="layer"``: a unit's runs and its layer's noise samples; valid when layers differ in
noise) or over the layers of a cell (``pool="cell"``: more degrees of freedom, valid only
when every layer of a cell has the same noise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .... import schema
from ....errors import SpecError, StatsInputError
from .... import columns as C
from ....stats import intersection as iut
from ...parts import spec_error
from ...registry import register_test
from ...rules import Decision, finite
from ...tables import TestInput

__all__ = ["iut_role", "IUT_PARTS", "POOLS", "decide_intersection"]

#: The parts of a derived role: before / after (required per cell), the noise floor's two
#: checkpoints (optional, together).
IUT_PARTS = ("base", "tuned", "floor_start", "floor_end")
_SEP = "__"
#: How the noise floor is pooled: per unit (a cell's layer) or over a cell's layers.
POOLS = ("layer", "cell")


def iut_role(part: str, cell: str) -> str:
    """The derived role of one part of one cell.

    >>> iut_role("base", "killing_cv_Q")
    'base__killing_cv_Q'
    """
    return f"{part}{_SEP}{cell}"


def _split(role: str) -> tuple[str, str] | None:
    part, sep, cell = role.partition(_SEP)
    return (part, cell) if sep and part in IUT_PARTS and cell else None


def _is_iut_role(role: str) -> bool:
    """base__<cell>, tuned__<cell>, floor_start__<cell>, floor_end__<cell>"""
    return _split(role) is not None


def _cells(roles: Any) -> dict[str, dict[str, str]]:
    cells: dict[str, dict[str, str]] = {}
    for role in roles:
        split = _split(role)
        if split is not None:
            cells.setdefault(split[1], {})[split[0]] = role
    return cells


def _log_change(data: TestInput, start: str, end: str) -> Any:
    """Table (model, layer, change = log(end / start)) of two roles of one cell."""
    table = data.table(start, end)
    if schema.LAYER not in table.columns:
        raise SpecError(f"iut_equivalence: selection[{start!r}] has no {schema.LAYER!r} dimension; "
                        f"units are layers (select a per-layer summary).")
    for role in (start, end):
        bad = int((table[role] <= 0).sum())
        if bad:
            raise StatsInputError(f"iut_equivalence: selection[{role!r}] holds {bad} non-positive "
                                  f"values; relative change is tested on log values.")
    table = table.assign(change=np.log(table[end].to_numpy(float)) - np.log(table[start].to_numpy(float)))
    if schema.MODEL not in table.columns:
        table = table.assign(**{schema.MODEL: "model"})
    return table


def _pool_labels(cell: str, layers: np.ndarray, pool: str) -> list[str]:
    """The noise-pooling group of each row: its cell, or its cell and layer."""
    if pool == "cell":
        return [cell] * len(layers)
    return [f"{cell}|{int(layer)}" for layer in layers]


def _run_iut(data: TestInput) -> Any:
    bound = data.prediction.bound if data.prediction.bound is not None else data.params["bound"]
    changes, cells, noise, noise_cells = [], [], [], []
    models: list[str] | None = None
    for cell, parts in sorted(_cells(data.arrays).items()):
        table = _log_change(data, parts["base"], parts["tuned"])
        wide = table.pivot_table(index=schema.LAYER, columns=schema.MODEL, values="change")
        these = [str(m) for m in wide.columns]
        if models is None:
            models = these
        elif these != models:
            raise SpecError(f"iut_equivalence: cell {cell!r} has the runs {these}, another cell "
                            f"{models}; every cell needs the same runs (models=(...)).")
        changes.append(wide.to_numpy(float))
        cells.extend(_pool_labels(cell, wide.index.to_numpy(), data.params["pool"]))
        if "floor_start" in parts:
            floor = _log_change(data, parts["floor_start"], parts["floor_end"])
            noise.extend(floor["change"].to_numpy(float))
            noise_cells.extend(_pool_labels(cell, floor[schema.LAYER].to_numpy(), data.params["pool"]))
    return iut.iut_equivalence(np.vstack(changes), np.asarray(cells, dtype=object),
                             np.asarray(noise, dtype=float), np.asarray(noise_cells, dtype=object),
                             bound=bound, alpha=data.params["alpha"])


def decide_intersection(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when every unit's own TOST rejects at alpha (IUT p = the largest unit p <
    alpha); refuted when some unit lies beyond ±bound (the smallest beyond-the-bound p,
    Bonferroni over the units, < alpha); inconclusive otherwise, saying whether the noise
    floor leaves the bound resolvable at all.

    >>> from lie_stats.spec.parts import Prediction
    >>> ctx = Decision(Prediction("equivalent", bound=0.001), 0.05, {}, {})
    >>> decide_intersection({"n": 48, "p_value": 0.01, "p_beyond": 1.0, "n_within": 48}, ctx)[0]
    'supported'
    >>> decide_intersection({"n": 48, "p_value": 0.9, "p_beyond": 0.001, "n_beyond": 3,
    ...                      "n_within": 0, "effect": 0.12}, ctx)[0]
    'refuted'
    """
    bound = ctx.prediction.bound if ctx.prediction.bound is not None else ctx.params.get("bound")
    p, a = row.get(C.P_VALUE), ctx.alpha
    if not finite(p):
        return "inconclusive", "the test gave no p-value on these data"
    n = int(row.get(C.N, 0))
    within = int(row.get(iut.N_WITHIN, 0))
    if p < a:
        return "supported", (f"every one of the {n} units is within ±{bound} (intersection-union "
                             f"test: the largest unit TOST p < alpha {a})")
    pb = row.get(iut.P_BEYOND)
    if finite(pb) and pb < a:
        return "refuted", (f"{int(row.get(iut.N_BEYOND, 0))} of {n} units change beyond ±{bound} "
                           f"(Bonferroni over units, p_beyond < alpha {a}); largest change "
                           f"{float(row.get(C.EFFECT, float('nan'))):+.2%}; {within} of {n} shown within")
    floor = row.get(iut.NOISE_FLOOR)
    why = (f"{within} of {n} units shown within ±{bound} and none significantly beyond it")
    if finite(row.get(iut.RESOLVABLE)) and not row.get(iut.RESOLVABLE):
        why += (f"; the noise floor (SD {float(floor):.2%} of one run's change) is too wide for "
                f"±{bound} to be shown in every unit")
    return "inconclusive", why


def _validate(spec: Any, params: Mapping[str, Any]) -> None:
    """Every cell has base and tuned, and the noise floor's two checkpoints together."""
    cells = _cells(spec.selection)
    if not cells:
        raise spec_error(spec, "selection", "iut_equivalence needs at least one cell: roles "
                         "base__<cell> and tuned__<cell>.")
    for cell, parts in cells.items():
        for need in ("base", "tuned"):
            if need not in parts:
                raise spec_error(spec, f"selection[{iut_role(need, cell)!r}]",
                                 f"cell {cell!r} has {sorted(parts)} but lacks {need!r}.")
        if ("floor_start" in parts) != ("floor_end" in parts):
            have = "floor_start" if "floor_start" in parts else "floor_end"
            raise spec_error(spec, f"selection[{parts[have]!r}]",
                             f"cell {cell!r}: floor_start and floor_end come together.")
    if spec.prediction.bound is None and params.get("bound") is None:
        raise spec_error(spec, "prediction.bound", "iut_equivalence needs a relative bound.")


register_test("iut_equivalence", _run_iut, decide_intersection, roles=(),
              role_pattern=_is_iut_role, params={"bound": None, "pool": "layer"}, enums={"pool": POOLS},
              directions=("equivalent",),
              validate=_validate,
              description="intersection-union equivalence: each (cell, layer) unit's mean log "
                          "change over the runs (models) tested within ±log(1 + bound) with a "
                          "noise floor (between-run deviations and the optional floor_start "
                          "-> floor_end changes) pooled per params pool (layer: per unit; cell: "
                          "over a cell's layers); lie_stats.stats.intersection.iut_equivalence")
