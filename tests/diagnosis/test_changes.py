"""Designs of the change kinds (lie_stats/spec/kinds/ranks/design.py and
lie_stats/spec/kinds/intersection/design.py): ``ratio_of_changes``, ``iut_equivalence``,
``delta_rank``, ``delta_order``.

Each kind is diagnosed on synthetic arrays shaped like pico_pythia_pair's (two runs of twelve
layers; eleven parameter categories, three of them per model) that hold a real effect far
inside what the prediction claims, so that a null which left it in place would give
"supported" nearly every time. The null's "supported" rate must lie in the binomial 99 %
band of the rule's level, the planted effect must be found; and each transform is checked
on its own. Seeds fixed, resampling reduced.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

from lie_stats import diagnosis as D
from lie_stats.spec.kinds.intersection.design import redraw_unit_means
from lie_stats.spec.kinds.ranks.design import DeltaMap, exchange_at_ratio, realise_order
from lie_stats.spec import HypothesisSpec, Prediction, Select
from lie_stats.stats.ranks import delta_order, delta_rank, pooled_relative

LAYERS = np.arange(12)


def band(n: int, p: float) -> tuple[float, float]:
    """The binomial 99 % band of a share of ``n`` draws at rate ``p``."""
    lo, hi = sps.binom.interval(0.99, n, p)
    return lo / n, hi / n


# ----------------------------------------------------------------------------- ratio_of_changes


def ratio_arrays(ratio: float, seed: int, n_units: int = 1) -> dict[str, xr.DataArray]:
    """Two runs x 12 layers (x units): summaries at the first and last checkpoint of each
    phase, |log(last / first)| of pretraining ``ratio`` times that of post-training on
    average, a layer effect shared by both changes (log SD 0.3, correlation 0.9) and unit noise (log SD
    0.2)."""
    rng = np.random.default_rng(seed)
    shape = (2, 12, n_units)
    u = rng.normal(size=(2, 12, 1))
    v = 0.9 * u + math.sqrt(1 - 0.81) * rng.normal(size=(2, 12, 1))
    pre = 0.2 * np.exp(0.3 * u + 0.2 * rng.normal(size=shape))
    post = 0.2 / ratio * np.exp(0.3 * v + 0.2 * rng.normal(size=shape))
    out = {}
    for side, change, models in (("pre", pre, ["p0", "p1"]), ("post", post, ["p0_ft", "p1_ft"])):
        first = rng.lognormal(0.0, 0.3, size=shape)
        sign = rng.choice((-1.0, 1.0), size=shape)
        dims, coords = ("model", "layer", "unit"), {"model": models, "layer": LAYERS,
                                                    "unit": np.arange(n_units)}
        for when, values in (("first", first), ("last", first * np.exp(sign * change))):
            da = xr.DataArray(values, dims=dims, coords=coords)
            out[f"{side}_{when}"] = da.isel(unit=0, drop=True) if n_units == 1 else da
    return out


def ratio_spec(prediction: Prediction, ci: float) -> HypothesisSpec:
    models = {"pre": ("p0", "p1"), "post": ("p0_ft", "p1_ft")}
    sel = {f"{side}_{when}": Select("killing_cv", step=when, family="Q", projection="none",
                                    models=models[side])
           for side in ("pre", "post") for when in ("first", "last")}
    return HypothesisSpec(id="X-ratio", claim="c", source="s", datasets=("synth",), selection=sel,
                          test="ratio_of_changes", params={"ci": ci}, prediction=prediction,
                          reference={"ratio": 500.0}, gate="report")


def changes(arrays, side: str) -> np.ndarray:
    return np.abs(np.log(arrays[f"{side}_last"] / arrays[f"{side}_first"])).values


def test_exchange_at_ratio_puts_the_ratio_there_and_trades_whole_clusters():
    arrays = ratio_arrays(30.0, seed=1, n_units=3)
    pre, post = changes(arrays, "pre"), changes(arrays, "post")
    out = exchange_at_ratio(arrays, 50.0, np.random.default_rng(2))
    new_pre, new_post = changes(out, "pre"), changes(out, "post")
    scaled = post * pre.sum() / post.sum()  # 50 x post scaled to 1/50 of the pretraining total
    kept = np.isclose(new_pre, pre, rtol=1e-9)
    traded = np.isclose(new_pre, scaled, rtol=1e-9)
    assert (kept | traded).all()
    # a cluster (run, layer) trades all its units or none, and both happen
    assert (kept.all(axis=2) | traded.all(axis=2)).all()
    assert 0 < traded.all(axis=2).sum() < 24
    np.testing.assert_allclose(new_post, np.where(traded, pre, scaled) / 50.0, rtol=1e-9)
    # the firsts are kept, every last moves in the direction it moved in the data
    for role in ("pre_first", "post_first"):
        xr.testing.assert_identical(out[role], arrays[role])
    for side in ("pre", "post"):
        before = np.sign(arrays[f"{side}_last"] - arrays[f"{side}_first"])
        np.testing.assert_array_equal(np.sign(out[f"{side}_last"] - out[f"{side}_first"]), before)


@pytest.mark.parametrize("prediction, ci, level", [
    (Prediction("equivalent", value=500.0, bound=1.0), 0.90, 0.05),  # A7: TOST at 5 %, edges 50 / 5000
    (Prediction("above", value=1.0), 0.95, 0.025),  # A7-direction: one-sided 2.5 % at 1
])
def test_ratio_null_holds_the_level_and_the_reference_ratio_is_found(prediction, ci, level):
    # the data's ratio is 500, a decade inside both edges: left in place it is "supported".
    # Fieller's t on sign-flipped cluster terms is conservative when the terms differ much in
    # size (on these data about 0.05 at the band's edge, 0.015 for "above 1"; other draws of
    # the data 0.025-0.05): the band's lower end is 1 / 100 resp. 0
    spec = ratio_spec(prediction, ci)
    settings = D.Settings(n_sims=100, seed=3)
    diag = D.diagnose_arrays(spec, ratio_arrays(500.0, seed=5), settings)
    lo, hi = band(settings.n_sims, level)
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9, diag
    assert diag["coverage"] >= 0.75, diag  # Fieller's 90 % / 95 % interval about the planted 500
    assert diag["type_s"] == 0.0, diag


# ----------------------------------------------------------------------------- iut_equivalence

B = math.log1p(1e-3)
CELLS = ("killing_cv_Q", "killing_cv_O")


def iut_arrays(seed: int, sd: np.ndarray, change: float = 0.0) -> dict[str, xr.DataArray]:
    """``CELLS`` x 12 layers: two tuned runs (base -> tuned log change ``change`` plus noise
    ``sd[cell, layer]``) and two parents over a late interval (noise of the same SD)."""
    rng = np.random.default_rng(seed)
    out = {}
    for c, cell in enumerate(CELLS):
        for (start, end), models in ((("base", "tuned"), ["t0", "t1"]),
                                     (("floor_start", "floor_end"), ["p0", "p1"])):
            first = rng.uniform(1.0, 2.0, size=(2, 12))
            shift = change if start == "base" else 0.0
            last = first * np.exp(shift + sd[c] * rng.normal(size=(2, 12)))
            coords = {"model": models, "layer": LAYERS}
            out[f"{start}__{cell}"] = xr.DataArray(first, dims=("model", "layer"), coords=coords)
            out[f"{end}__{cell}"] = xr.DataArray(last, dims=("model", "layer"), coords=coords)
    return out


def iut_spec() -> HypothesisSpec:
    sel = {}
    for cell in CELLS:
        metric, family = cell.rsplit("_", 1)
        for part, step, models in (("base", "first", ("t0", "t1")), ("tuned", "last", ("t0", "t1")),
                                   ("floor_start", 475, ("p0", "p1")), ("floor_end", 512, ("p0", "p1"))):
            sel[f"{part}__{cell}"] = Select(metric, step=step, family=family, projection="none",
                                            models=models)
    return HypothesisSpec(id="X-iut", claim="c", source="s", datasets=("synth",), selection=sel,
                          test="iut_equivalence", params={"pool": "layer"},
                          prediction=Prediction("equivalent", bound=1e-3), gate="report")


def log_changes(arrays, start: str, end: str) -> np.ndarray:
    return np.stack([np.log(arrays[f"{end}__{c}"] / arrays[f"{start}__{c}"]).values for c in CELLS])


def test_redraw_keeps_the_noise_and_puts_the_noisiest_unit_at_the_bound():
    sd = np.full((2, 12), B / 1000)
    sd[1, 7] = B / 300  # the noisiest unit
    arrays, spec = iut_arrays(5, sd), iut_spec()
    d = log_changes(arrays, "base", "tuned")  # [cell, run, layer]
    signs = []
    for i in range(6):
        null = D.DESIGNS["iut_equivalence"].null(arrays, spec, np.random.default_rng(i))
        new = log_changes(null, "base", "tuned")
        # between-run deviations, the noise floor and the base are the data's
        np.testing.assert_allclose(new - new.mean(axis=1, keepdims=True),
                                   d - d.mean(axis=1, keepdims=True), atol=1e-12)
        np.testing.assert_allclose(log_changes(null, "floor_start", "floor_end"),
                                   log_changes(arrays, "floor_start", "floor_end"))
        for cell in CELLS:
            xr.testing.assert_identical(null[f"base__{cell}"], arrays[f"base__{cell}"])
        means = new.mean(axis=1)
        assert abs(abs(means[1, 7]) - B) < B / 20  # se about B / 400
        signs.append(np.sign(means[1, 7]))
        means[1, 7] = 0.0
        assert np.abs(means).max() < B / 50
    assert set(signs) == {-1.0, 1.0}
    planted, effect = D.DESIGNS["iut_equivalence"].plant(arrays, spec, np.random.default_rng(9))
    assert effect == 0.0 and np.abs(log_changes(planted, "base", "tuned").mean(axis=1)).max() < B / 20


def test_redraw_draws_each_unit_mean_from_its_t_law():
    # the unit's mean minus its target over its SE is t with the unit's df (3: 1 between-run + 2 floor)
    arrays, spec = iut_arrays(6, np.full((2, 12), B)), iut_spec()
    out = redraw_unit_means(arrays, spec, lambda units: np.full(len(units), 0.5 * B),
                            np.random.default_rng(7))
    from lie_stats.stats.intersection import unit_equivalence

    d = log_changes(out, "base", "tuned").transpose(0, 2, 1).reshape(24, 2)
    z = log_changes(out, "floor_start", "floor_end").transpose(0, 2, 1).reshape(24, 2)
    units = unit_equivalence(d, np.arange(24), z.reshape(-1), np.repeat(np.arange(24), 2), bound=1e-3)
    t = (units["mean"] - 0.5 * B) / units["se"]
    assert (units["df"] == 3).all()
    beyond = int((np.abs(t) > sps.t.ppf(0.9, 3)).sum())  # 20 % two-sided: about 5 of 24
    lo, hi = sps.binom.interval(0.99, 24, 0.2)
    assert lo <= beyond <= hi, t.round(2).tolist()
    assert np.abs(t).max() > 1.0  # the means were redrawn, not put at the target


def test_iut_null_holds_alpha_and_every_unit_unchanged_is_found():
    # every unit's change is 0 with noise B / 20: left in place, it is "supported" every time.
    # The rate is alpha times the chance that the 23 other units all pass
    spec, settings = iut_spec(), D.Settings(n_sims=60, seed=8)
    diag = D.diagnose_arrays(spec, iut_arrays(10, np.full((2, 12), B / 20)), settings)
    lo, hi = band(settings.n_sims, 0.05)
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9, diag
    assert diag["type_s"] is None


# ----------------------------------------------------------------------------- delta maps

CATEGORIES = ["embedding", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_in", "mlp_out",
              "norm_attn", "norm_mlp", "norm_final", "unembedding"]
PER_MODEL = ("embedding", "norm_final", "unembedding")


def delta_arrays(levels: dict[str, float], seed: int, sd: float = 0.1) -> dict[str, xr.DataArray]:
    """One model's delta map: each per-layer category ``levels[c] * exp(sd (u_l + e_cl))``
    in layer l (a layer effect u shared by every category), norms within 10 % of a
    category's own level, as in the real maps; the per-model ones
    at their level. A NaN category (no data) is kept, as the cubes do."""
    rng = np.random.default_rng(seed)
    cats = [*CATEGORIES, "absent"]
    u = rng.normal(size=12)
    r = np.full((len(cats), 12), np.nan)
    w = np.full((len(cats), 12), np.nan)
    tot = np.full(len(cats), np.nan)
    for k, c in enumerate(CATEGORIES):
        if c in PER_MODEL:
            tot[k] = levels[c]
        else:
            r[k] = levels[c] * np.exp(sd * (u + rng.normal(size=12)))
            w[k] = rng.uniform(2.0, 16.0) * rng.uniform(0.9, 1.1, size=12)
            tot[k] = pooled_relative(r[k], w[k])
    coords = {"model": ["m_ft"], "category": cats}
    return {"totals": xr.DataArray(tot[None], dims=("model", "category"), coords=coords),
            "layers": xr.DataArray(r[None], dims=("model", "category", "layer"),
                                   coords={**coords, "layer": LAYERS}),
            "norms": xr.DataArray(w[None], dims=("model", "category", "layer"),
                                  coords={**coords, "layer": LAYERS})}


def geometric(order: list[str], top: float = 0.15, step: float = 1.4) -> dict[str, float]:
    return {c: top / step ** i for i, c in enumerate(order)}


#: attn_q ranks 10th of 11: far above the prediction's 6, "supported" if left in place
RANK10 = geometric(["mlp_out", "attn_o", "unembedding", "mlp_in", "attn_k", "attn_v", "embedding",
                    "norm_final", "norm_mlp", "attn_q", "norm_attn"])


#: A2-order's declared order
ORDER = [["embedding"], ["mlp_in", "mlp_out"], ["attn_o"]]


def delta_spec(test: str) -> HypothesisSpec:
    sel = {"totals": Select("param_delta", step="last", models=("m_ft",)),
           "layers": Select("param_delta_layer", step="last", models=("m_ft",)),
           "norms": Select("param_base_norm_layer", step="last", models=("m_ft",))}
    if test == "delta_rank":
        return HypothesisSpec(id="X-rank", claim="c", source="s", datasets=("synth",), selection=sel,
                              test="delta_rank", params={"target": "attn_q"},
                              prediction=Prediction("above", value=6.0),
                              reference={"rank": 8, "of": 11}, gate="report")
    return HypothesisSpec(id="X-order", claim="c", source="s", datasets=("synth",), selection=sel,
                          test="delta_order", params={"order": ORDER},
                          prediction=Prediction("above", value=0.95),
                          reference={"order": ["embedding", "mlp", "attn_o"]}, gate="report")


def run_delta(arrays, test: str, **kw) -> dict:
    """The kind's statistic on ``arrays`` read as the kind reads them (raises unless the
    per-layer values pool to the totals)."""
    from lie_stats.spec.tables import TestInput, delta_inputs

    data = TestInput(arrays=arrays, params={}, prediction=Prediction("above", value=1.0), reference={})
    tot, lv, nv, cats = delta_inputs(data, test)
    fn = delta_rank if test == "delta_rank" else delta_order
    return fn(tot, lv, nv, categories=cats, n_boot=1, **kw).iloc[0].to_dict()


def shares(m: DeltaMap, name: str) -> np.ndarray:
    k = m.index(name)
    return m.shares(k) if m.layered[k] else np.full(12, m.tot[k] ** 2)


def test_rank_null_ties_the_target_with_the_category_at_the_threshold():
    arrays = delta_arrays(RANK10, seed=11)
    before = DeltaMap(arrays)
    # the 6th largest of the others is attn_v: attn_q moves up to it, the two swap per layer
    q, v = shares(before, "attn_q"), shares(before, "attn_v")
    q = q * before.tot[before.index("attn_v")] ** 2 / before.tot[before.index("attn_q")] ** 2
    null = D.DESIGNS["delta_rank"].null(arrays, delta_spec("delta_rank"), np.random.default_rng(12))
    after = DeltaMap(null)
    nq, nv = shares(after, "attn_q"), shares(after, "attn_v")
    swapped = np.isclose(nq, v, rtol=1e-9) & np.isclose(nv, q, rtol=1e-9)
    kept = np.isclose(nq, q, rtol=1e-9) & np.isclose(nv, v, rtol=1e-9)
    assert (swapped | kept).all() and swapped.any() and kept.any()
    for c in CATEGORIES:
        if c not in ("attn_q", "attn_v"):
            np.testing.assert_array_equal(shares(after, c), shares(before, c))
    xr.testing.assert_identical(null["norms"], arrays["norms"])
    run_delta(null, "delta_rank", target="attn_q")  # the totals pool: a valid delta map


def test_rank_plant_gives_the_target_the_reference_rank_with_its_own_pattern():
    arrays = delta_arrays(RANK10, seed=13)
    planted, rank = D.DESIGNS["delta_rank"].plant(arrays, delta_spec("delta_rank"), np.random.default_rng(0))
    assert rank == 8.0
    assert run_delta(planted, "delta_rank", target="attn_q")["effect"] == 8
    before, after = DeltaMap(arrays), DeltaMap(planted)
    k = before.index("attn_q")
    ratio = after.r[k] / before.r[k]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)  # scaled: its per-layer spread kept


def test_rank_null_holds_its_level_and_the_reference_rank_is_found():
    settings = D.Settings(n_sims=100, seed=14, n_boot=49)
    diag = D.diagnose_arrays(delta_spec("delta_rank"), delta_arrays(RANK10, seed=15), settings)
    lo, hi = band(settings.n_sims, 0.025)  # Holm at (1 - ci) / 2 per direction
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9 and diag["refuted_planted"] == 0.0, diag


#: the declared order (embedding, then MLP in / out, then attention O) holds clearly
ORDERED = geometric(["embedding", "mlp_out", "mlp_in", "attn_o", "unembedding", "attn_q", "attn_k",
                     "attn_v", "norm_final", "norm_mlp", "norm_attn"], step=1.6)


def test_realise_order_puts_the_groups_on_top_at_even_levels():
    arrays = delta_arrays(RANK10, seed=16)  # embedding 7th: the order does not hold
    m = DeltaMap(arrays)
    r0 = m.r.copy()
    groups = [[m.index("embedding")], [m.index("mlp_in"), m.index("mlp_out")], [m.index("attn_o")]]
    chain = realise_order(m, groups)
    names = [[m.categories[k] for k in g] for g in chain]
    assert names[:3] == [["embedding"], ["mlp_out", "mlp_in"], ["attn_o"]]
    levels = np.log(m.tot[[k for g in chain for k in g]])
    np.testing.assert_allclose(np.diff(levels), np.diff(levels)[0], rtol=1e-9)  # log-even, falling
    assert np.diff(levels)[0] < 0
    ratio = m.r[m.layered] / r0[m.layered]
    np.testing.assert_allclose(ratio, ratio[:, :1].repeat(12, axis=1), rtol=1e-12)
    assert run_delta(m.to_arrays(), "delta_order", groups=ORDER)["order_holds"] == 1


def test_order_null_ties_one_adjacent_pair_of_the_order():
    spec, arrays = delta_spec("delta_order"), delta_arrays(ORDERED, seed=17)
    ordered = DeltaMap(arrays)
    realise_order(ordered, [[ordered.index("embedding")],
                            [ordered.index("mlp_in"), ordered.index("mlp_out")], [ordered.index("attn_o")]])
    links = {("embedding", "mlp_out"), ("mlp_in", "attn_o"), ("attn_o", "unembedding")}
    seen = set()
    for i in range(12):
        null = DeltaMap(D.DESIGNS["delta_order"].null(arrays, spec, np.random.default_rng(i)))
        changed = [c for c in CATEGORIES if not np.allclose(shares(null, c), shares(ordered, c), rtol=1e-9)]
        assert len(changed) in (1, 2), changed
        upper, lower = next(p for p in links if set(changed) <= set(p) and p[1] in changed)
        seen.add((upper, lower))
        # tied: the pair's difference per layer is the data's (the lower scaled to the upper's
        # total) with its sign flipped at random
        scale = ordered.tot[ordered.index(upper)] ** 2 / ordered.tot[ordered.index(lower)] ** 2
        was = shares(ordered, upper) - scale * shares(ordered, lower)
        now = shares(null, upper) - shares(null, lower)
        np.testing.assert_allclose(np.abs(now), np.abs(was), rtol=1e-9, atol=1e-15)
    assert seen == links


def test_order_null_holds_its_level_and_the_order_is_found():
    settings = D.Settings(n_sims=100, seed=18, n_boot=49)
    diag = D.diagnose_arrays(delta_spec("delta_order"), delta_arrays(ORDERED, seed=19), settings)
    lo, hi = band(settings.n_sims, 0.05)  # intersection-union at 1 - value = 5 %
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9, diag
