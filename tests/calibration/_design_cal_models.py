"""Simulated cubes for the model and ratio kinds' calibration (besides :mod:`._design`).

:func:`panel_template` builds, once, a cube of runs with given head widths and counts
(the model coordinates ``model_comparison`` reads); :func:`with_response` puts one
simulated response per run into it. :func:`ragged` blanks heads so that layers have unequal
sizes. :func:`ratio_cube` holds per-layer summaries of pretraining runs and their
fine-tunes at their first and last checkpoints, for ``ratio_of_changes``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from lie_stats import cube, schema

#: The compression the simulated model-comparison cubes carry (one family, one projection).
FAMILY, PROJECTION = "Q", "none"


def panel_template(runs: dict[str, tuple[int, int, int]], *, n_layers: int = 2) -> xr.Dataset:
    """A cube with one last checkpoint per run and ``abelian_fraction`` zero.

    ``runs`` maps a run name to ``(d_head, n_heads, d_model)``."""
    shards = []
    for name, (d_head, n_heads, d_model) in runs.items():
        shape = dict(n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_heads, d_head=d_head,
                     d_model=d_model, architecture="gpt_neox", rotary_fraction=0.25,
                     attention_extras="rotary", init_step=0)
        shards.append(cube.checkpoint_shard(
            {"abelian_fraction": np.zeros((1, 1, n_layers))}, model=name, step=100, shape=shape,
            families=(FAMILY,), projections=(PROJECTION,), provenance={"model": name, "step": 100}))
    return cube.merge_shards(shards)


def with_response(template: xr.Dataset, response: np.ndarray) -> xr.Dataset:
    """The template with run ``i``'s ``abelian_fraction`` set to ``response[i]`` in every layer."""
    da = template["abelian_fraction"]
    shaped = np.broadcast_to(np.asarray(response, dtype=float).reshape(
        (-1,) + (1,) * (da.ndim - 1)), da.shape)
    return template.assign(abelian_fraction=da.copy(data=np.where(np.isnan(da.values), np.nan, shaped)))


def ragged(x: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``x`` [layer, head] with heads beyond ``sizes[layer]`` set to NaN (unequal layers)."""
    out = np.array(x, dtype=float)
    for layer, size in enumerate(sizes):
        out[layer, size:] = np.nan
    return out


def ratio_cube(pre_first: np.ndarray, pre_last: np.ndarray, post_first: np.ndarray,
               post_last: np.ndarray, *, metric: str = "killing_cv") -> xr.Dataset:
    """Runs ``pre{i}`` (pretraining) and ``post{i}`` (its fine-tune), two checkpoints each,
    holding the [run, layer] arrays of a per-layer summary at their first and last steps."""
    n_runs, n_layers = pre_first.shape
    names = [f"pre{i}" for i in range(n_runs)] + [f"post{i}" for i in range(n_runs)]
    first = np.concatenate([pre_first, post_first])
    last = np.concatenate([pre_last, post_last])
    data = np.stack([first, last], axis=1)[:, :, None, None, :]  # model, step, family, projection, layer
    dims = (schema.MODEL, schema.STEP, schema.FAMILY, schema.PROJECTION, schema.LAYER)
    coords = {schema.MODEL: names, schema.STEP: [0, 100], schema.FAMILY: [FAMILY],
              schema.PROJECTION: [PROJECTION], schema.LAYER: np.arange(n_layers)}
    return xr.Dataset({metric: (dims, data)}, coords)
