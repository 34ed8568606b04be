"""Designs of the boundary-layer and head-enrichment kinds (the designs in lie_stats/spec/kinds/trend/design.py and pairwise/design.py, their building blocks in lie_stats/spec/simulate/layers.py).

Each kind is diagnosed on synthetic selections shaped like the bundled ones (12 layers of
8 heads padded to 16, pairs stored for i < j only, layer-level structure) that hold a
strong real effect: a null that did not break it would be "supported" nearly every time,
outside the binomial 99 % band of the rule's one-sided level. The planted reference effect
must then be detected above a stated floor, and each null / plant transform keeps and
changes what it says.
"""

from __future__ import annotations

import math

from dataclasses import replace

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

from lie_stats import diagnosis as D
from lie_stats import schema
from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select
from lie_stats.stats.pairwise import boundary_enrichment, pair_summary, row_summary, symmetric_pairs

SETTINGS = D.Settings(n_sims=100, seed=0, n_perm=99, n_boot=49)
N_LAYERS, N_HEADS, PAD = 12, 8, 16


def band(n: int, rate: float) -> tuple[float, float]:
    lo, hi = sps.binom.interval(0.99, n, rate)
    return lo / n, hi / n


def _da(values: np.ndarray, dims: tuple[str, ...], **coords) -> xr.DataArray:
    base = {schema.LAYER: np.arange(values.shape[dims.index(schema.LAYER)])}
    for d in (schema.HEAD, schema.HEAD_J):
        if d in dims:
            base[d] = np.arange(values.shape[dims.index(d)])
    return xr.DataArray(values, dims=dims, coords={**base, **coords})


def _pad_heads(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``x`` with its head axes padded with NaN to PAD heads (as the bundled cube's sweeps)."""
    width = [(0, PAD - x.shape[a]) if a in axes else (0, 0) for a in range(x.ndim)]
    return np.pad(x, width, constant_values=np.nan)


def _stored(sym: np.ndarray) -> np.ndarray:
    """Pairs as a cube selection stores them: i < j, NaN elsewhere."""
    h = sym.shape[-1]
    return np.where(np.triu(np.ones((h, h), dtype=bool), 1), sym, np.nan)


def _sym_noise(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    z = rng.normal(size=shape)
    return (z + np.swapaxes(z, -1, -2)) / math.sqrt(2)


def _spec(id_: str, test: str, selection: dict, prediction: Prediction, reference: dict,
          params: dict | None = None) -> HypothesisSpec:
    return HypothesisSpec(id=id_, claim="c", source="s", datasets=("synth",), selection=selection,
                          test=test, params=params or {}, prediction=prediction,
                          reference=reference, gate="report")


def _rates(diag: dict) -> tuple[float, float]:
    return diag["fpr"], diag["refuted_null"]


# ----------------------------------------------------------------------------- boundary_ratio


def heterogeneity_values(rng: np.random.Generator, boundary: float = 5.0) -> xr.DataArray:
    """[model, layer, head] commutator_mean-like values: layer means 0.4-0.9, within-layer CV
    0.02-0.05 varying by layer, the first and last layer's CV ``boundary`` times larger
    (the real effect); 8 heads padded to 16, ties from rounding."""
    means = rng.uniform(0.4, 0.9, size=(N_LAYERS, 1))
    cv = rng.uniform(0.02, 0.05, size=(N_LAYERS, 1))
    cv[[0, -1]] *= boundary
    x = np.round(means * np.exp(cv * rng.normal(size=(N_LAYERS, N_HEADS))), 3)
    return _da(_pad_heads(x, (1,))[None], (schema.MODEL, schema.LAYER, schema.HEAD), model=["m"])


def b1_spec() -> HypothesisSpec:
    return _spec("T-B1", "boundary_ratio",
                 {"values": Select("commutator_mean", step="last", family="Q", projection="none")},
                 Prediction("above", value=1.0, magnitude=Magnitude(5.0, 3.0, math.inf,
                                                                     justification="j")),
                 {"ratio_low": 5.0, "ratio_high": 7.0}, {"summary": "cv"})


def test_boundary_ratio_null_holds_its_level_and_the_reference_ratio_is_detected():
    spec = b1_spec()
    values = heterogeneity_values(np.random.default_rng(1), boundary=3.0)
    diag = D.diagnose_arrays(spec, {"values": values}, SETTINGS)
    # exact test over C(12, 2) = 66 boundary choices, each side at alpha / 2: p = 1 / 66
    # is the only p below 0.025, so each verdict's null rate is 1 / 66. The real ratio (5x)
    # would be "supported" every time under a null that kept it.
    lo, hi = band(SETTINGS.n_sims, 1 / 66)
    assert lo <= diag["fpr"] <= hi, diag
    # the claim's figure (at least 3x) is false under this null (1x): an interval that
    # excludes it refutes the claim as stated, so most null draws are refuted, rightly
    assert diag["refuted_null"] > 0.5, diag
    assert diag["power"] >= 0.8, diag  # boundary CVs 5x the interior's
    assert diag["type_s"] == 0.0, diag
    # the direction alone (no figure) refutes at its level
    direction = replace(spec, prediction=Prediction("above", value=1.0))
    for rate in _rates(D.diagnose_arrays(direction, {"values": values}, SETTINGS)):
        assert lo <= rate <= hi


def test_boundary_ratio_null_moves_whole_layers_and_the_plant_gives_the_ratio():
    from lie_stats.stats.trend import boundary_ratio

    spec = b1_spec()
    values = heterogeneity_values(np.random.default_rng(2))
    null = D.DESIGNS["boundary_ratio"].null({"values": values}, spec, np.random.default_rng(3))["values"]
    v, n = values.values[0], null.values[0]
    # each layer's heads stay together (as they were), padding stays, the order changes
    assert sorted(map(tuple, np.nan_to_num(n, nan=-1))) == sorted(map(tuple, np.nan_to_num(v, nan=-1)))
    assert np.isnan(n[:, N_HEADS:]).all() and not np.array_equal(n, v, equal_nan=True)
    planted, ratio = D.DESIGNS["boundary_ratio"].plant({"values": null}, spec, np.random.default_rng(4))
    p = planted["values"].values[0]
    assert ratio == 5.0
    np.testing.assert_array_equal(p[1:-1], n[1:-1])  # the interior as in the null
    np.testing.assert_allclose(np.nanmean(p, axis=1), np.nanmean(n, axis=1))  # layer means kept
    assert (p[:, :N_HEADS] > 0).all()
    x = p[:, :N_HEADS].ravel()
    row = boundary_ratio(x, clusters=np.repeat(np.arange(N_LAYERS), N_HEADS), summary="cv", n_boot=0)
    assert row["effect"].iloc[0] == pytest.approx(5.0, rel=1e-6)


# ----------------------------------------------------------------------------- enrichment_profile


def enrichment_pairs(rng: np.random.Generator, first_mean: float = 1.0, boundary: float = 3.0
                     ) -> dict[str, xr.DataArray]:
    """killing_norm-like pairs of one model at two checkpoints: pairs about ``first_mean``
    with SD 0.01 at the first, about 1 with a layer-varying SD (0.05-0.1) at the last, the
    first and last layer's SD ``boundary`` times larger (the real effect)."""
    first = first_mean + 0.01 * _sym_noise(rng, (N_LAYERS, N_HEADS, N_HEADS))
    sd = rng.uniform(0.05, 0.1, size=(N_LAYERS, 1, 1))
    sd[[0, -1]] *= boundary
    last = 1.0 + sd * _sym_noise(rng, (N_LAYERS, N_HEADS, N_HEADS))
    dims = (schema.MODEL, schema.LAYER, schema.HEAD, schema.HEAD_J)
    return {role: _da(_pad_heads(_stored(x), (1, 2))[None], dims, model=["m"], step=step)
            for role, x, step in (("first", first, 0), ("last", last, 512))}


def b3_spec() -> HypothesisSpec:
    pairs = dict(family="Q", projection="none")
    return _spec("T-B3", "enrichment_profile",
                 {"first": Select("killing_norm", step="first", **pairs),
                  "last": Select("killing_norm", step="last", **pairs)},
                 Prediction("above", value=1.0, magnitude=Magnitude(
                     76.5, 25.5, 229.5, justification="j", estimate="enrichment_first_layer")),
                 {"enrichment_first_layer": 76.5, "enrichment_last_layer": 42.1},
                 {"layer_summary": "cv"})


def test_enrichment_profile_null_holds_its_level_and_the_reference_enrichment_is_detected():
    spec = b3_spec()
    arrays = enrichment_pairs(np.random.default_rng(5))
    diag = D.diagnose_arrays(spec, arrays, SETTINGS)
    # one-sided p < alpha over 66 choices: p <= 3 / 66 for each direction under the null;
    # the real boundary enrichment (3x) would give "supported" every time
    lo, hi = band(SETTINGS.n_sims, 3 / 66)
    for rate in _rates(diag):
        assert lo <= rate <= hi, diag
    assert diag["power"] >= 0.9, diag  # E_0 76.5 and E_11 42.1 against interior E about 10
    assert diag["type_s"] == 0.0, diag


def test_enrichment_profile_null_keeps_each_layer_s_pair_and_the_plant_gives_the_figures():
    spec = b3_spec()
    arrays = enrichment_pairs(np.random.default_rng(6))
    design = D.DESIGNS["enrichment_profile"]
    null = design.null(arrays, spec, np.random.default_rng(7))
    f0, g0 = arrays["first"].values[0], arrays["last"].values[0]
    f1, g1 = null["first"].values[0], null["last"].values[0]
    moved = [next(i for i in range(N_LAYERS) if np.array_equal(f1[j], f0[i], equal_nan=True))
             for j in range(N_LAYERS)]
    assert sorted(moved) == list(range(N_LAYERS)) and moved != list(range(N_LAYERS))
    for j, i in enumerate(moved):  # first and last of a layer move together
        np.testing.assert_array_equal(g1[j], g0[i])
    planted, ratio = design.plant(null, spec, np.random.default_rng(8))
    f2, g2 = planted["first"].values[0], planted["last"].values[0]
    np.testing.assert_array_equal(f2, f1)
    np.testing.assert_array_equal(g2[1:-1], g1[1:-1])
    assert (np.isnan(g2) == np.isnan(g1)).all()  # the stored triangle and padding
    row = boundary_enrichment(f2[:, :N_HEADS, :N_HEADS], g2[:, :N_HEADS, :N_HEADS], n_boot=0)
    assert row["enrichment_first_layer"].iloc[0] == pytest.approx(76.5, rel=1e-6)
    assert row["enrichment_last_layer"].iloc[0] == pytest.approx(42.1, rel=1e-6)
    assert row["effect"].iloc[0] == pytest.approx(ratio, rel=1e-9)


def test_enrichment_profile_refuses_a_figure_a_cv_cannot_reach():
    # pairs about 0 at the first checkpoint (a random init: CV about 1.2): E = 76.5 needs a
    # last-checkpoint CV of about 90, and a CV over 28 pairs is at most sqrt(27)
    spec = b3_spec()
    arrays = enrichment_pairs(np.random.default_rng(9), first_mean=0.0)
    with pytest.raises(D.NotPlantable, match=r"at most sqrt\(27\)"):
        D.DESIGNS["enrichment_profile"].plant(arrays, spec, np.random.default_rng(0))


# ----------------------------------------------------------------------------- functional shift


def functional_arrays(rng: np.random.Generator) -> dict[str, xr.DataArray]:
    """Killing forms with 3 anchors in the first and last layer (rows 4x more dispersed at
    the last checkpoint, value norm x0.1 there: the real effect), value norms with a
    layer-level scale, labels marking the anchors."""
    n = N_LAYERS
    k0 = 10.0 * (1.0 + 0.2 * _sym_noise(rng, (n, N_HEADS, N_HEADS)))
    grow = rng.uniform(2.0, 4.0, size=(n, 1, 1))
    k1 = grow * 10.0 * (1.0 + 0.3 * _sym_noise(rng, (n, N_HEADS, N_HEADS)))
    scale = np.exp(0.5 * rng.normal(size=(n, 1)))
    w0 = scale * np.exp(0.2 * rng.normal(size=(n, N_HEADS)))
    w1 = scale * np.exp(0.2 * rng.normal(size=(n, N_HEADS)))
    labels = np.full((n, N_HEADS), float(schema.LABEL_CODES["worker"]))
    for layer in (0, n - 1):
        for a in range(3):
            row = grow[layer, 0, 0] * 10.0 * (1.0 + 1.2 * rng.normal(size=N_HEADS))
            k1[layer, a, :], k1[layer, :, a] = row, row
            w1[layer, a] *= 0.1
            labels[layer, a] = schema.LABEL_CODES["anchor"]
    pair_dims = (schema.MODEL, schema.LAYER, schema.HEAD, schema.HEAD_J)
    head_dims = (schema.MODEL, schema.LAYER, schema.HEAD)
    out = {}
    for role, x, step in (("first", k0, 0), ("last", k1, 512)):
        out[role] = _da(_pad_heads(_stored(x), (1, 2))[None], pair_dims, model=["m"], step=step)
    for role, x, step in (("w_first", w0, 0), ("w_last", w1, 512), ("labels", labels, 512)):
        out[role] = _da(_pad_heads(x, (1,))[None], head_dims, model=["m"], step=step)
    return out


def b8_spec() -> HypothesisSpec:
    forms = dict(family="Q", projection="none")
    return _spec("T-B8", "functional_boundary_shift",
                 {"first": Select("killing", step="first", **forms),
                  "last": Select("killing", step="last", **forms),
                  "w_first": Select("value_norm", step="first"),
                  "w_last": Select("value_norm", step="last"),
                  "labels": Select("head_label", step="last")},
                 Prediction("below", value=1.0), {"direction": "functional below total"},
                 {"layer_summary": "cv", "min_anchors": 3, "require_total_enrichment": True})


def test_functional_shift_null_holds_its_level_and_no_effect_is_planted():
    spec = b8_spec()
    arrays = functional_arrays(np.random.default_rng(10))
    settings = D.Settings(n_sims=80, seed=0, n_perm=99, n_boot=49)
    diag = D.diagnose_arrays(spec, arrays, settings)
    # Monte Carlo p over 99 permutations: p < 0.05 for ranks 1-4 of 100, a rate of 0.04 each
    # way; the real anchors (value norm x0.1 on the boundary's most dispersed rows) would be
    # "supported" most of the time under a null that kept them
    lo, hi = band(settings.n_sims, 4 / 100)
    for rate in _rates(diag):
        assert lo <= rate <= hi, diag
    assert diag["power"] is None and "gives a direction only" in diag["reason"]


def test_functional_shift_null_moves_value_norms_and_labels_together_within_layers():
    spec = b8_spec()
    arrays = functional_arrays(np.random.default_rng(11))
    null = D.DESIGNS["functional_boundary_shift"].null(arrays, spec, np.random.default_rng(12))
    for role in ("first", "last"):
        assert null[role] is arrays[role]
    w0, w1, lab = (arrays[r].values[0] for r in ("w_first", "w_last", "labels"))
    n0, n1, nlab = (null[r].values[0] for r in ("w_first", "w_last", "labels"))
    for layer in range(N_LAYERS):
        before = sorted(zip(w0[layer, :N_HEADS], w1[layer, :N_HEADS], lab[layer, :N_HEADS]))
        after = sorted(zip(n0[layer, :N_HEADS], n1[layer, :N_HEADS], nlab[layer, :N_HEADS]))
        assert before == after  # each head's (w_first, w_last, label) moves as one, in its layer
    assert np.isnan(n0[:, N_HEADS:]).all() and not np.array_equal(n1, w1, equal_nan=True)


# ----------------------------------------------------------------------------- head_enrichment_excess


def excess_values(rng: np.random.Generator, *, n_models: int = 2, n_layers: int = 6,
                  n_steps: int = 10, drift: float = 1.5) -> xr.DataArray:
    """killing_norm-like pair trajectories [model, step, layer, head, head_j]: pairs about 1
    whose dispersion grows 3x over the run (the layer's path), head i's pairs scaled by
    a_i a_j with log a_i a stationary AR(1) (phi 0.8, SD 0.3: departures that revert), and
    head 0 of every layer drifting ``drift`` log units away (the real effect)."""
    phi, sd = 0.8, 0.3
    out = np.empty((n_models, n_steps, n_layers, N_HEADS, N_HEADS))
    for m, layer in np.ndindex(n_models, n_layers):
        u = np.empty((n_steps, N_HEADS))
        u[0] = sd * rng.normal(size=N_HEADS)
        for t in range(1, n_steps):
            u[t] = phi * u[t - 1] + math.sqrt(1 - phi ** 2) * sd * rng.normal(size=N_HEADS)
        u[:, 0] += drift * np.arange(n_steps) / (n_steps - 1)
        z = _sym_noise(rng, (N_HEADS, N_HEADS))
        sigma = 0.001 * 3.0 ** (np.arange(n_steps) / (n_steps - 1)) * np.exp(0.3 * rng.normal())
        a = np.exp(u)
        out[m, :, layer] = 1.0 + sigma[:, None, None] * a[:, :, None] * a[:, None, :] * z
    dims = (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD, schema.HEAD_J)
    return _da(_pad_heads(_stored(out), (3, 4)), dims, model=[f"m{i}" for i in range(n_models)],
               step=np.arange(n_steps) * 10)


def b2_spec() -> HypothesisSpec:
    return _spec("T-B2", "head_enrichment_excess",
                 {"values": Select("killing_norm", step="all", family="Q", projection="none")},
                 Prediction("above", value=1.0),
                 {"head_enrichment": 119.7, "layer_enrichment": 4.9, "ratio": 24.43},
                 {"layer_summary": "cv"})


def test_head_enrichment_excess_null_holds_its_level_and_the_reference_ratio_is_detected():
    spec = b2_spec()
    values = excess_values(np.random.default_rng(13))
    settings = D.Settings(n_sims=60, seed=0, n_perm=99, n_boot=49)  # the plant solves per layer
    diag = D.diagnose_arrays(spec, {"values": values}, settings)
    # 2 models x 6 layers = 12 units: all 2**12 sign vectors, p = k / 4096 < 0.05 for
    # k <= 204; a persistent head in every layer would be "supported" every time
    lo, hi = band(settings.n_sims, 204 / 4096)
    for rate in _rates(diag):
        assert lo <= rate <= hi, diag
    assert diag["power"] >= 0.9, diag  # a head 24x its layer in every layer
    assert diag["type_s"] == 0.0, diag


def _head_ratios(x: np.ndarray) -> np.ndarray:
    """max_h e_h / e_l of each (model, layer) of stored pair trajectories (8 heads)."""
    sym = symmetric_pairs(x[..., :N_HEADS, :N_HEADS])
    first, last = sym[:, 0], sym[:, -1]
    e_h = row_summary(last) / row_summary(first)
    return e_h.max(axis=-1) / (pair_summary(last) / pair_summary(first))


def test_head_enrichment_excess_null_reverses_whole_layers_and_the_plant_gives_the_ratio():
    spec = b2_spec()
    values = excess_values(np.random.default_rng(14))
    design = D.DESIGNS["head_enrichment_excess"]
    null = design.null({"values": values}, spec, np.random.default_rng(15))["values"]
    v, n = values.values, null.values
    reversed_ = []
    for m, layer in np.ndindex(2, 6):
        same = np.array_equal(n[m, :, layer], v[m, :, layer], equal_nan=True)
        back = np.array_equal(n[m, :, layer], v[m, ::-1, layer], equal_nan=True)
        assert same or back, (m, layer)  # the whole trajectory, forwards or backwards
        reversed_.append(back)
    assert 0 < sum(reversed_) < 12
    planted, ratio = design.plant({"values": null}, spec, np.random.default_rng(16))
    p = planted["values"].values
    # the planted head starts below its layer: its first-checkpoint row CV is contracted
    first_cv = row_summary(symmetric_pairs(p[:, 0, :, :N_HEADS, :N_HEADS]))
    null_cv = row_summary(symmetric_pairs(n[:, 0, :, :N_HEADS, :N_HEADS]))
    assert ((first_cv / null_cv).min(axis=-1) < 0.5).all()
    assert (np.isnan(p) == np.isnan(n)).all()
    np.testing.assert_allclose(_head_ratios(p), 24.43, rtol=1e-6)  # every layer at the figure
    assert ratio == pytest.approx(24.43, rel=1e-6)
    # one head per layer carries it: its 7 pairs change, no pair between two others
    rows = ~np.isclose(p, n, equal_nan=True).all(axis=1)  # [model, layer, head, head_j]
    for m, layer in np.ndindex(2, 6):
        hit = np.argwhere(rows[m, layer])
        assert len(hit) == N_HEADS - 1 and len(set(hit[0]).intersection(*map(set, hit))) == 1
