"""Design of ``iut_equivalence`` (no change in any unit).

- ``iut_equivalence``: every unit's between-run deviations and noise-floor samples kept as
  they are (so each unit's noise floor, its SE and df, are the real ones), its mean log
  change redrawn as ``mu + se T`` with ``T ~ t(df)`` (the exact law of the unit's own t
  statistic under the kind's noise model); null: the least favourable configuration of the
  intersection-union null given that noise, the noisiest unit at ``±log(1 + bound)`` and
  every other unit at 0 (where it passes its own TOST most often: the supremum of the
  "supported" rate over "some unit at or beyond the bound"); planted: every unit at 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....errors import StatsInputError
from ...simulate import (Arrays, Design, NotPlantable, bound_of, lead_first, put_values,
                         zero_or_null_center)

# ----------------------------------------------------------------------------- iut_equivalence

_IUT_PARTS = ("base", "tuned", "floor_start", "floor_end")


def _iut_cells(arrays: Arrays) -> dict[str, dict[str, str]]:
    cells: dict[str, dict[str, str]] = {}
    for role in arrays:
        part, sep, cell = role.partition("__")
        if sep and part in _IUT_PARTS and cell:
            cells.setdefault(cell, {})[part] = role
    if not cells:
        raise NotPlantable("the selection has no base__<cell> / tuned__<cell> roles")
    return cells


def _log_pair(arrays: Arrays, start: str, end: str) -> tuple[Any, Any, np.ndarray]:
    """``start``, ``end`` aligned as (model, layer), and ``log(end / start)`` [model, layer]."""
    import xarray as xr

    s, e = xr.align(arrays[start], arrays[end], join="inner")
    extra = [d for d in s.dims if d not in ("model", "layer")]
    if "layer" not in s.dims or extra:
        raise NotPlantable(f"selection[{start!r}] must be (model, layer) (got {s.dims})")
    s, sv = lead_first(s, ("model", "layer"))
    e, ev = lead_first(e, ("model", "layer"))
    sv, ev = sv.reshape(-1, s.sizes["layer"]), ev.reshape(-1, s.sizes["layer"])
    with np.errstate(divide="ignore", invalid="ignore"):
        return s, e, np.where((sv > 0) & (ev > 0), np.log(ev / sv), np.nan)


def _pool_label(cell: str, layer: Any, pool: str) -> str:
    return f"{cell}|{layer}" if pool == "layer" else cell


def redraw_unit_means(arrays: Arrays, spec: Any, mu: Any, rng: np.random.Generator) -> Arrays:
    """The iut_equivalence selection with each unit's true log change set by ``mu``.

    Each unit's (cell, layer) replicate log changes ``d_r`` become ``m + (d_r - mean d)``:
    their deviations from their mean, and every noise-floor sample, stay as they are, so the
    unit's noise SD, SE and df (pooled as the spec's ``pool`` says) are the real ones; its
    new mean is ``m = mu_u + se_u T``, ``T ~ t(df_u)``, the exact law of the unit's mean
    under the kind's noise model (so its own TOST is exactly at its level when ``mu_u`` is
    at the bound). ``mu(units)`` receives the unit table (``cell``, ``layer``, ``se``,
    ``df``, ``mean``) and returns the true log changes. Units with a non-finite change stay
    as they are (the kind drops them).
    """
    import pandas as pd

    from ....stats.intersection import unit_equivalence

    params = spec.resolved_params()
    pool = params.get("pool", "layer")
    cells = _iut_cells(arrays)
    pairs, rows, labels, noise, noise_labels = {}, [], [], [], []
    for cell, parts in sorted(cells.items()):
        if "base" not in parts or "tuned" not in parts:
            raise NotPlantable(f"cell {cell!r} lacks base or tuned")
        pairs[cell] = _log_pair(arrays, parts["base"], parts["tuned"])
        for j, layer in enumerate(pairs[cell][0]["layer"].values):
            rows.append((cell, j, layer))
            labels.append(_pool_label(cell, layer, pool))
        if "floor_start" in parts and "floor_end" in parts:
            start, _, z = _log_pair(arrays, parts["floor_start"], parts["floor_end"])
            for j, layer in enumerate(start["layer"].values):
                noise.extend(z[:, j].tolist())
                noise_labels.extend([_pool_label(cell, layer, pool)] * z.shape[0])
    changes = np.vstack([pairs[c][2].T for c in sorted(pairs)])  # [units, runs], rows as `rows`
    try:
        units = unit_equivalence(changes, np.asarray(labels, dtype=object), np.asarray(noise, dtype=float),
                                 np.asarray(noise_labels, dtype=object), bound=bound_of(spec),
                                 alpha=float(params["alpha"]))
    except StatsInputError as e:
        raise NotPlantable(f"no noise floor to simulate from: {e}") from None
    table = pd.DataFrame([rows[u] for u in units["unit"]], columns=["cell", "j", "layer"])
    for column in ("se", "df", "mean"):
        table[column] = units[column].to_numpy()
    new_mean = np.asarray(mu(table), dtype=float) + table["se"].to_numpy() * rng.standard_t(
        table["df"].to_numpy())
    moved = {cell: d.copy() for cell, (_, _, d) in pairs.items()}
    for cell, j, m, old in zip(table["cell"], table["j"], new_mean, table["mean"]):
        moved[cell][:, j] += m - old
    out = dict(arrays)
    for cell, (base, tuned, d) in pairs.items():
        bv = lead_first(base, ("model", "layer"))[1].reshape(d.shape)
        tv = lead_first(tuned, ("model", "layer"))[1].reshape(d.shape)
        role = cells[cell]["tuned"]
        new = np.where(np.isfinite(moved[cell]), bv * np.exp(moved[cell]), tv)
        out[role] = put_values(arrays[role], tuned, new)
    return out


def _null_iut(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    b = math.log1p(bound_of(spec)) * rng.choice((-1.0, 1.0))

    def noisiest_at_bound(units: Any) -> np.ndarray:
        mu = np.zeros(len(units))
        mu[int(np.argmax(units["se"].to_numpy()))] = b
        return mu

    return redraw_unit_means(arrays, spec, noisiest_at_bound, rng)


def _plant_iut(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    bound_of(spec)
    return redraw_unit_means(arrays, spec, lambda units: np.zeros(len(units)), rng), 0.0



DESIGNS = {
    "iut_equivalence": Design(
        null=_null_iut, plant=_plant_iut, null_value=zero_or_null_center, sign=False,
        what="each unit's between-run deviations and noise-floor samples kept, its mean log change "
             "redrawn as mu + se T (T ~ t(df), the real noise floor); null: the least favourable "
             "configuration, the noisiest unit at +/-log(1 + bound) and every other unit at 0; "
             "planted: every unit at 0"),
}
