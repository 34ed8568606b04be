"""Simulated labelled-head and pairwise cubes for the calibration of the classification,
group, pairwise and agreement kinds (adds to :mod:`tests.calibration._design`).

Heads are nested in layers of unequal size (padding heads are NaN, as in a cube of models
with different head counts), metrics carry layer effects, and label prevalence varies by
layer, so a test that ignored the layers would find label effects that are layer effects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from lie_stats import schema

ANCHOR, MIXED, WORKER = (schema.LABEL_CODES[k] for k in ("anchor", "mixed", "worker"))


def layer_sizes(rng: np.random.Generator, n_layers: int, low: int = 4, high: int = 12) -> np.ndarray:
    """Heads per layer, drawn uniformly in [low, high] (unequal layer sizes)."""
    return rng.integers(low, high + 1, size=n_layers)


def present(sizes: Sequence[int]) -> np.ndarray:
    """[layer, head] mask of the heads each layer has (the rest is padding)."""
    sizes = np.asarray(sizes)
    return np.arange(sizes.max())[None, :] < sizes[:, None]


def layered_labels(rng: np.random.Generator, sizes: Sequence[int]) -> np.ndarray:
    """[layer, head] label codes: anchors with a prevalence that varies by layer (0.15-0.5),
    the rest workers and mixed heads; NaN where a layer has no such head."""
    mask = present(sizes)
    p_anchor = rng.uniform(0.15, 0.5, size=(mask.shape[0], 1))
    u = rng.random(mask.shape)
    codes = np.where(u < p_anchor, ANCHOR, np.where(u < p_anchor + 0.25, MIXED, WORKER)).astype(float)
    return np.where(mask, codes, np.nan)


def layered_metric(rng: np.random.Generator, sizes: Sequence[int], *, layer_sd: float = 1.5,
                   decimals: int | None = None) -> np.ndarray:
    """[layer, head] metric: a layer effect of SD ``layer_sd`` plus unit head noise, rounded
    to ``decimals`` (ties) when given; NaN padding."""
    mask = present(sizes)
    x = layer_sd * rng.normal(size=(mask.shape[0], 1)) + rng.normal(size=mask.shape)
    if decimals is not None:
        x = np.round(x, decimals)
    return np.where(mask, x, np.nan)


def steps_cube(variables: Mapping[str, np.ndarray], steps: Sequence[int]) -> xr.Dataset:
    """A one-model cube of per-head variables ``[step, layer, head]`` at ``steps``."""
    first = next(iter(variables.values()))
    _, n_layers, n_heads = first.shape
    dims = (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    coords = {schema.MODEL: ["sim"], schema.STEP: list(steps), schema.LAYER: np.arange(n_layers),
              schema.HEAD: np.arange(n_heads)}
    return xr.Dataset({k: (dims, np.asarray(v, dtype=np.float64)[None]) for k, v in variables.items()},
                      coords)


def last_step_cube(variables: Mapping[str, np.ndarray]) -> xr.Dataset:
    """A one-model cube holding each ``[layer, head]`` variable at its last of two steps."""
    return steps_cube({k: np.stack([np.full_like(v, np.nan), v]) for k, v in variables.items()},
                      (0, 100))


# ----------------------------------------------------------------------------- verdicts


def kind_verdict(kind: str, row, prediction, params: Mapping | None = None,
                 alpha: float = 0.05) -> str:
    """The registered kind's verdict on a stats result row (its decision rule, as
    :func:`lie_stats.spec.evaluate_cube` applies it)."""
    from lie_stats.spec.registry import get_kind
    from lie_stats.spec.rules import Decision

    rec = row.iloc[0].to_dict() if hasattr(row, "iloc") else dict(row)
    k = get_kind(kind)
    return k.decide(rec, Decision(prediction, alpha, {}, {**k.params, **dict(params or {})}))[0]


def flat(a: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """The present heads of a [layer, head] array, layer by layer."""
    return np.asarray(a)[present(sizes)]


def strata_of(sizes: Sequence[int]) -> np.ndarray:
    """Layer code of each present head."""
    return np.repeat(np.arange(len(sizes)), sizes)


# ----------------------------------------------------------------------------- head trajectories


def reverting_heads(rng: np.random.Generator, *, n_layers: int = 24, n_heads: int = 8,
                    n_steps: int = 10, phi: float = 0.8, sd: float = 0.3,
                    drift: float = 0.0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-layer head trajectories ``V [step, head]`` and layer trajectories ``W [step]`` of a
    head pair summary: a common growing layer path, each head's log departure from it a
    stationary AR(1) (coefficient ``phi``, SD ``sd``: mean-reverting, so the variance of a
    head's total change is below the sum of its increments' variances; with phi 0.8 and 10
    steps their ratio is (1 - phi**9) / (9 (1 - phi)) = 0.48, the bundled runs' 0.43-0.50), and head 0 of every
    layer drifting ``drift`` (log units over the run) away from its layer: the persistent
    head effect B2's claim is about (0 under the null)."""
    hv, lv = [], []
    for _ in range(n_layers):
        u = np.empty((n_steps, n_heads))
        u[0] = sd * rng.normal(size=n_heads)
        for t in range(1, n_steps):
            u[t] = phi * u[t - 1] + np.sqrt(1 - phi ** 2) * sd * rng.normal(size=n_heads)
        u[:, 0] += drift * np.arange(n_steps) / (n_steps - 1)
        path = np.cumsum(rng.normal(0.2, 0.1, size=n_steps))
        hv.append(np.exp(path[:, None] + u))
        lv.append(np.exp(path + 0.05 * rng.normal(size=n_steps)))
    return hv, lv


def increment_ratio(hv: Sequence[np.ndarray]) -> float:
    """var(total log change) / sum of var(log increments) over heads, pooled over layers:
    1 for independent increments, below 1 for mean-reverting trajectories."""
    tot = np.concatenate([np.log(v[-1] / v[0]) - np.log(v[-1] / v[0]).mean() for v in hv])
    inc = [np.diff(np.log(v), axis=0) for v in hv]
    inc_var = np.sum([np.var(np.concatenate([d[t] - d[t].mean() for d in inc]))
                      for t in range(inc[0].shape[0])])
    return float(np.var(tot) / inc_var)


# ----------------------------------------------------------------------------- pair forms


def _sym(x: np.ndarray) -> np.ndarray:
    return (x + np.swapaxes(x, -1, -2)) / 2


def killing_pair(rng: np.random.Generator, *, n_layers: int = 12, n_heads: int = 8,
                 anchors: int = 0, anchor_scale: float = 4.0, anchor_weight: float = 0.1
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Killing forms ``K [layer, head, head_j]`` at the first and last checkpoint and value
    norms ``w [layer, head]`` there. Layers' forms grow by a layer factor; value norms are
    lognormal and unrelated to the forms (the null of ``functional_boundary_shift``) unless
    ``anchors`` > 0: then in the first and last layer that many heads get Killing rows
    ``anchor_scale`` times more dispersed and value norms ``anchor_weight`` times the others'
    at the last checkpoint (anchor geometry that the value-norm weighting discounts)."""
    k0 = 10.0 * (1.0 + 0.2 * _sym(rng.normal(size=(n_layers, n_heads, n_heads))))
    grow = rng.uniform(2.0, 4.0, size=(n_layers, 1, 1))
    k1 = grow * 10.0 * (1.0 + 0.3 * _sym(rng.normal(size=(n_layers, n_heads, n_heads))))
    w0 = np.exp(0.2 * rng.normal(size=(n_layers, n_heads)))
    w1 = np.exp(0.2 * rng.normal(size=(n_layers, n_heads)))
    for layer in (0, n_layers - 1):
        for a in range(anchors):
            row = grow[layer, 0, 0] * 10.0 * (1.0 + 0.3 * anchor_scale * rng.normal(size=n_heads))
            k1[layer, a, :], k1[layer, :, a] = row, row
            w1[layer, a] *= anchor_weight
    return k0, k1, w0, w1


def layer_enrichment_pair(rng: np.random.Generator, *, n_layers: int = 12, n_heads: int = 8,
                          boundary: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Pair forms at two checkpoints whose layers' dispersion grows by exchangeable layer
    factors (lognormal, SD 0.3), the first and last layer's times ``boundary``."""
    first = 0.5 + 0.1 * _sym(rng.normal(size=(n_layers, n_heads, n_heads)))
    g = np.exp(0.3 * rng.normal(size=n_layers))
    g[[0, -1]] *= boundary
    last = 0.5 + 0.1 * g[:, None, None] * _sym(rng.normal(size=(n_layers, n_heads, n_heads)))
    return first, last
