"""Shaping selected data into what the statistics take: tables, matrices, series.

:class:`TestInput` is what a test kind's binding receives: one selected array per role
(:func:`lie_stats.spec.selection.select`), the resolved parameters, the prediction and the
reference. The functions below turn its arrays into the inputs of :mod:`lie_stats.stats`:
a tidy table of units (:meth:`TestInput.table`), stratum and cluster codes, a
``[step, unit]`` series, a ``[model, unit]`` matrix, the pairwise ``[layer, head, head_j]``
form of one model, a per-model table of shape predictors, the parameter-delta inputs of one
model, and the rows of two declared label classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import schema
from ..errors import LieStatsError, SpecError, StatsInputError
from ..stats.pairwise import symmetric_pairs
from .parts import Prediction

__all__ = [
    "TestInput",
    "columns_of",
    "step_series",
    "one_model",
    "model_matrix",
    "layer_clusters",
    "pair_matrix",
    "head_matrix",
    "present_units",
    "delta_inputs",
    "DELTA_ROLES",
    "model_table",
    "MODEL_PREDICTORS",
    "D_HEAD",
    "D_MODEL",
    "label_counts",
    "need_classes",
    "two_groups",
]


@dataclass
class TestInput:
    """The selected data of one evaluation, handed to a test function.

    Attributes
    ----------
    arrays : dict of str to xarray.DataArray
        One selected array per role (see :func:`select`).
    params : dict
        The resolved parameters.
    prediction : Prediction
    reference : dict
    dataset : str
        The dataset evaluated ("" when none is named), for a kind that decides as the whole
        evaluation does (a magnitude's ``not_on`` is keyed by dataset).
    """

    __test__ = False  # not a pytest class

    arrays: dict[str, Any]
    params: dict[str, Any]
    prediction: Prediction
    reference: dict[str, Any]
    dataset: str = ""
    _tables: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False)

    def table(self, *roles: str, drop_model: bool = False) -> Any:
        """The roles' arrays aligned unit by unit as a tidy table (NaN rows dropped).

        Columns: one per role, then the remaining dimensions (``model``, ``layer``,
        ``head``, ...). ``drop_model`` aligns selections of different models unit by unit
        (base vs tuned): each role must then hold exactly one model.
        """
        import xarray as xr

        key = (*roles, "<drop_model>") if drop_model else roles
        if key in self._tables:
            return self._tables[key]
        arrays = []
        for role in roles:
            da = self.arrays[role].reset_coords(drop=True)
            if drop_model:
                if da.sizes.get(schema.MODEL, 1) != 1:
                    raise SpecError(f"selection[{role!r}] must select exactly one model for this "
                                    f"test; it selects {da.sizes[schema.MODEL]} (set models=(...)).")
                if schema.MODEL in da.dims:
                    da = da.isel({schema.MODEL: 0}, drop=True)
            arrays.append(da.rename(role))
        aligned = xr.align(*arrays, join="inner")
        frame = xr.merge(aligned, compat="override", join="inner").to_dataframe()
        frame = frame[list(roles)].dropna().reset_index()
        self._tables[key] = frame
        return frame

    def strata(self, table: Any) -> Any:
        """Stratum codes of a table's rows per ``params['strata']`` (None for free)."""
        import pandas as pd

        how = self.params.get("strata", "layer")
        if how == "none":
            return None
        cols = [c for c in (schema.MODEL, schema.LAYER) if c in table.columns]
        if how == "model":
            cols = [c for c in cols if c == schema.MODEL]
        if not cols:
            return None
        return pd.factorize(pd.MultiIndex.from_frame(table[cols]))[0]


def columns_of(data: TestInput, *roles: str) -> tuple[Any, list[np.ndarray], Any]:
    """The roles' table, each role's column as a float array, and the table's strata."""
    table = data.table(*roles)
    return table, [table[r].to_numpy(dtype=float) for r in roles], data.strata(table)


def step_series(data: TestInput, role: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """[n_steps, n_units] matrix of a step="all" selection (units: model x layer x head...),
    its steps, and the stacked array of the units kept (steps and units without data dropped)."""
    da = data.arrays[role].reset_coords(drop=True)
    if schema.STEP not in da.dims:
        raise SpecError(f"selection[{role!r}] must keep the step dimension (step='all') for this test.")
    units = [d for d in da.dims if d != schema.STEP]
    flat = da.stack(unit=units).transpose(schema.STEP, "unit") if units else da.expand_dims(unit=[0]).transpose(schema.STEP, "unit")
    values = flat.values
    keep_units = np.isfinite(values).any(axis=0)
    keep_steps = np.isfinite(values[:, keep_units]).all(axis=1)
    values = values[np.ix_(keep_steps, keep_units)]
    return values, da[schema.STEP].values[keep_steps], flat.isel(unit=np.flatnonzero(keep_units))


def one_model(data: TestInput, role: str, test: str) -> None:
    """Raise unless selection ``role`` holds exactly one model."""
    da = data.arrays[role]
    if da.sizes.get(schema.MODEL, 1) != 1:
        raise SpecError(f"selection[{role!r}] must select one model for {test} (set models=(...)); "
                        f"it selects {da.sizes[schema.MODEL]}.")


def model_matrix(data: TestInput, role: str) -> tuple[np.ndarray, list[str], Any]:
    """[n_models, n_units] values of a one-step selection, its models, and the unit coordinates."""
    da = data.arrays[role].reset_coords(drop=True)
    if schema.STEP in da.dims:
        raise SpecError(f"selection[{role!r}] must pick one step (not step='all').")
    rest = [d for d in da.dims if d != schema.MODEL]
    da = da.transpose(schema.MODEL, *rest)
    units = da.isel({schema.MODEL: 0}, drop=True)
    layer = (units[schema.LAYER].broadcast_like(units).values.reshape(-1) if schema.LAYER in rest
             else np.zeros(int(np.prod(units.shape)), dtype=int))
    coords = [(d, [str(v) for v in da[d].values.tolist()]) for d in rest]
    return (da.values.reshape(da.sizes[schema.MODEL], -1).astype(float),
            [str(m) for m in da[schema.MODEL].values.tolist()], (coords, layer))


def layer_clusters(table: Any, test: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Clusters (model, layer) and strata (model) of a tidy table of head or layer data."""
    import pandas as pd

    if schema.LAYER not in table.columns:
        raise SpecError(f"{test}: the selection has no {schema.LAYER!r} dimension; clusters are "
                        f"layers (select a per-head or per-layer variable).")
    cols = [c for c in (schema.MODEL, schema.LAYER) if c in table.columns]
    clusters = pd.factorize(pd.MultiIndex.from_frame(table[cols]))[0]
    strata = pd.factorize(table[schema.MODEL])[0] if schema.MODEL in table.columns else None
    return clusters, strata


def pair_matrix(data: TestInput, role: str) -> tuple[np.ndarray, Any]:
    """[layer, head, head_j] of a one-model, one-checkpoint pairwise selection, and its step."""
    da = data.arrays[role]
    one_model(data, role, "this test")
    if schema.STEP in da.dims or schema.HEAD_J not in da.dims:
        raise SpecError(f"selection[{role!r}] must be a pairwise variable (head, head_j) at one "
                        f"checkpoint ('first', 'last' or a step), not step='all'.")
    sub = da.isel({schema.MODEL: 0}) if schema.MODEL in da.dims else da
    step = sub[schema.STEP].values.item() if schema.STEP in sub.coords else None
    x = sub.transpose(schema.LAYER, schema.HEAD, schema.HEAD_J).values.astype(np.float64)
    return symmetric_pairs(x), step


def head_matrix(data: TestInput, role: str) -> tuple[np.ndarray, Any]:
    """[layer, head] of a one-model, one-checkpoint per-head selection, and its step."""
    da = data.arrays[role]
    one_model(data, role, "this test")
    if schema.STEP in da.dims or schema.HEAD not in da.dims or schema.HEAD_J in da.dims:
        raise SpecError(f"selection[{role!r}] must be a per-head variable (layer, head) at one "
                        f"checkpoint.")
    sub = da.isel({schema.MODEL: 0}) if schema.MODEL in da.dims else da
    step = sub[schema.STEP].values.item() if schema.STEP in sub.coords else None
    return sub.transpose(schema.LAYER, schema.HEAD).values.astype(np.float64), step


def present_units(*pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Layers and heads with data in every given [layer, head, head_j] array (drops padding)."""
    fin = np.ones(pairs[0].shape, dtype=bool)
    for p in pairs:
        fin &= np.isfinite(p)
    layers = fin.any(axis=(1, 2))
    heads = fin[layers].any(axis=(0, 2)) if layers.any() else np.zeros(pairs[0].shape[1], bool)
    return layers, heads


#: Roles of the parameter-delta kinds: totals [category], per-layer values and norms.
DELTA_ROLES = ("totals", "layers", "norms")


def delta_inputs(data: TestInput, test: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """totals [K], per-layer values and norms [K, L] of one model, categories without data dropped."""
    for role in DELTA_ROLES:
        one_model(data, role, test)
    arrays = {}
    for role in DELTA_ROLES:
        da = data.arrays[role].reset_coords(drop=True)
        if schema.MODEL in da.dims:
            da = da.isel({schema.MODEL: 0}, drop=True)
        if schema.CATEGORY not in da.dims or (role != "totals" and schema.LAYER not in da.dims):
            raise SpecError(f"selection[{role!r}] must keep the {schema.CATEGORY!r} dimension"
                            f"{'' if role == 'totals' else ' and the layer dimension'} (select "
                            f"param_delta for totals, param_delta_layer / param_base_norm_layer "
                            f"for layers / norms, at one step).")
        if schema.STEP in da.dims:
            raise SpecError(f"selection[{role!r}] must pick one step (not step='all').")
        arrays[role] = da
    tot = arrays["totals"]
    cats = [str(c) for c in tot[schema.CATEGORY].values.tolist()]
    keep = [c for c, v in zip(cats, tot.values.tolist()) if np.isfinite(v)]
    layers = arrays["layers"].sel({schema.CATEGORY: keep}).transpose(schema.CATEGORY, schema.LAYER)
    norms = arrays["norms"].sel({schema.CATEGORY: keep}).transpose(schema.CATEGORY, schema.LAYER)
    lv, nv = layers.values.astype(float), norms.values.astype(float)
    present = np.isfinite(lv).any(axis=0)  # layers the model has (padding dropped)
    return (tot.sel({schema.CATEGORY: keep}).values.astype(float), lv[:, present], nv[:, present], keep)


#: Predictors a ``model_comparison`` may name: numeric model coordinates, their log2, and
#: the bottleneck ratio d_head / d_model.
D_HEAD, D_MODEL = "d_head", "d_model"
if not {D_HEAD, D_MODEL} <= set(schema.MODEL_COORDS):  # pragma: no cover - schema guard
    raise LieStatsError("lie_stats.schema.MODEL_COORDS lacks d_head / d_model.")
RATIO = f"{D_HEAD}_over_{D_MODEL}"
MODEL_PREDICTORS = (*schema.MODEL_COORDS, *(f"log2_{c}" for c in schema.MODEL_COORDS), RATIO)


def model_table(data: TestInput) -> Any:
    """One row per model: the response (selection ``response`` averaged over layers and
    heads) and the model-shape predictors of :data:`MODEL_PREDICTORS`."""
    import pandas as pd

    da = data.arrays["response"]
    if schema.STEP in da.dims:
        raise SpecError("selection['response'] must pick one step per model (not step='all').")
    over = [d for d in da.dims if d != schema.MODEL]
    resp = da.mean(dim=over, skipna=True) if over else da
    table = pd.DataFrame({"response": np.asarray(resp.values, dtype=float).reshape(-1)})
    for c in schema.MODEL_COORDS:
        if c in da.coords and np.asarray(da[c].values).dtype.kind in "iuf":
            col = np.asarray(da[c].values, dtype=float).reshape(-1)
            table[c] = col
            with np.errstate(divide="ignore", invalid="ignore"):
                table[f"log2_{c}"] = np.log2(col)
    if D_HEAD in table and D_MODEL in table:
        table[RATIO] = table[D_HEAD] / table[D_MODEL]
    table.index = [str(m) for m in np.asarray(da[schema.MODEL].values).reshape(-1)]
    return table


_LABEL_NAMES = {code: name for name, code in schema.LABEL_CODES.items()}


def label_counts(codes: np.ndarray) -> str:
    """The label codes present and their counts, by name (``anchor (code 0): 3, ...``)."""
    vals, counts = np.unique(codes[np.isfinite(codes)], return_counts=True)
    return ", ".join(f"{_LABEL_NAMES.get(int(v), int(v))} (code {int(v)}): {c}"
                     for v, c in zip(vals, counts)) or "none"


def need_classes(codes: np.ndarray, wanted: Sequence[Any], minimum: int, what: str) -> None:
    """StatsInputError (-> inconclusive) when a declared class has too few heads."""
    for code in wanted:
        k = int(np.count_nonzero(codes == float(code)))
        if k < minimum:
            c = int(code) if float(code).is_integer() else code
            raise StatsInputError(
                f"{what} needs at least {minimum} heads labelled "
                f"{_LABEL_NAMES.get(c, c)!r} (code {c}); the selection has {k}. "
                f"Label counts: {label_counts(codes)}.")


def two_groups(data: TestInput, table: Any, role: str) -> tuple[Any, np.ndarray, Any]:
    """Rows of the two declared groups, group-1 indicator (the second code), strata."""
    a, b = (float(c) for c in data.params["groups"])
    codes = table[role].to_numpy(dtype=float)
    need_classes(codes, (a, b), int(data.params.get("min_group", 2)),
                  f"the comparison of groups {data.params['groups']!r}")
    keep = np.isin(codes, (a, b))
    sub = table.loc[keep].reset_index(drop=True)
    strata = data.strata(sub)
    return sub, codes[keep] == b, strata
