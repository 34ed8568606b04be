"""Pairwise kinds (lie_stats.spec.kinds.pairwise): head_enrichment_excess,
enrichment_profile and functional_boundary_shift on synthetic cubes with planted effects and
nulls, their declaration checks, and the pair summaries checked against the bundled cube's
own ``killing_cv`` and ``killing_functional``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lie_stats import cube, schema
from lie_stats.errors import SpecError
from lie_stats.forms import functional_killing
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
from lie_stats.stats import pairwise as kp
from tests._cubes import model_shape
from tests._spec_cubes import FAST_MORE_BOOT as FAST

L, H = 8, 8
STEPS = (0, 1, 2, 4, 8, 16, 32, 64)
FAMILIES = ("Q", "K")
PROJECTIONS = ("none",)
ROOT = Path(__file__).resolve().parents[3]
#: The synthetic runs: one head of every layer keeps growing its Killing-row dispersion, the
#: boundary layers' dispersion grows 4x, boundary anchors (large Killing rows, tiny value
#: norms at the end), and a null.
HEAD_GROWTH, BOUNDARY_GROWTH, BOUNDARY_ANCHORS, NULL = "head_growth", "boundary_growth", "boundary_anchors", "null"


def _sym(x: np.ndarray) -> np.ndarray:
    return (x + np.swapaxes(x, -1, -2)) / 2


def _model(kind: str, seed: int) -> list:
    """Shards of one synthetic run. ``kind``: :data:`HEAD_GROWTH` (head 0 of every layer
    keeps growing its Killing-row dispersion), :data:`BOUNDARY_GROWTH` (boundary layers'
    dispersion grows 4x), :data:`BOUNDARY_ANCHORS` (large Killing rows, tiny value norms at
    the end), :data:`NULL`."""
    rng = np.random.default_rng(seed)
    z_row = rng.normal(size=(L, H))
    z_fixed = _sym(rng.normal(size=(L, H, H)))
    shards = []
    for i, step in enumerate(STEPS):
        t = i / (len(STEPS) - 1)
        # smooth trajectories: a fixed pattern plus small independent changes per checkpoint
        khat = 0.5 + 0.1 * z_fixed + 0.01 * _sym(rng.normal(size=(L, H, H)))
        if kind == HEAD_GROWTH:  # head 0's row loses its common level: its CV keeps growing
            row = 0.5 * np.exp(-2.0 * t) + 0.1 * z_row
            khat[:, 0, :], khat[:, :, 0] = row, row
        if kind == BOUNDARY_GROWTH:
            grow = 1.0 + 3.0 * t
            khat[[0, -1]] = 0.5 + 0.1 * grow * _sym(rng.normal(size=(2, H, H)))
        killing = 10.0 * (1.0 + 0.2 * _sym(rng.normal(size=(L, H, H))))
        value_norm = rng.uniform(0.8, 1.2, size=(L, H))
        if kind == BOUNDARY_ANCHORS and i == len(STEPS) - 1:
            for layer in (0, L - 1):
                for a in range(3):
                    row = 10.0 * (1.0 + 3.0 * rng.normal(size=H))
                    killing[layer, a, :], killing[layer, :, a] = row, row
            value_norm[[0, L - 1], :3] = 0.05
        for m in (khat, killing):
            for layer in range(L):
                np.fill_diagonal(m[layer], 1.0)
        arrays = {
            "killing_norm": np.broadcast_to(khat, (len(FAMILIES), len(PROJECTIONS), L, H, H)).copy(),
            "killing": np.broadcast_to(killing, (len(FAMILIES), len(PROJECTIONS), L, H, H)).copy(),
            "value_norm": value_norm,
        }
        shards.append(cube.checkpoint_shard(
            arrays, model=kind, step=step, shape=model_shape(L, H), families=FAMILIES,
            projections=PROJECTIONS, provenance={"model": kind, "step": step, "seed": seed}))
    return shards


@pytest.fixture(scope="module")
def synth():
    shards = []
    for k, kind in enumerate((HEAD_GROWTH, BOUNDARY_GROWTH, BOUNDARY_ANCHORS, NULL)):
        shards += _model(kind, seed=10 + k)
    return cube.merge_shards(shards)


def _excess(model: str, **kw) -> HypothesisSpec:
    base = dict(id="B2", claim="head enrichment exceeds layer enrichment", source="anchors",
                datasets=("synth",), test="head_enrichment_excess",
                selection={"values": Select("killing_norm", step="all", family="Q",
                                            projection="none", models=(model,))},
                params=dict(FAST), prediction=Prediction("above", value=1.0), gate="report")
    base.update(kw)
    return HypothesisSpec(**base)


def _profile(model: str, **kw) -> HypothesisSpec:
    sel = dict(family="Q", projection="none", models=(model,))
    base = dict(id="B3", claim="boundary layers enrich most", source="anchors",
                datasets=("synth",), test="enrichment_profile",
                selection={"first": Select("killing_norm", step="first", **sel),
                           "last": Select("killing_norm", step="last", **sel)},
                params={"n_boot": 400}, prediction=Prediction("above", value=1.0), gate="report")
    base.update(kw)
    return HypothesisSpec(**base)


def _shift(model: str, **kw) -> HypothesisSpec:
    sel = dict(family="Q", projection="none", models=(model,))
    base = dict(id="B8", claim="functional weighting lowers boundary enrichment",
                source="anchors", datasets=("synth",), test="functional_boundary_shift",
                selection={"first": Select("killing", step="first", **sel),
                           "last": Select("killing", step="last", **sel),
                           "w_first": Select("value_norm", step="first", models=(model,)),
                           "w_last": Select("value_norm", step="last", models=(model,))},
                params=dict(FAST), prediction=Prediction("below", value=1.0), gate="report")
    base.update(kw)
    return HypothesisSpec(**base)


# ------------------------------------------------------------------------ planted vs null


def test_head_enrichment_excess_planted_supported_null_inconclusive(synth):
    res = evaluate_cube(_excess(HEAD_GROWTH), synth, dataset="synth")
    assert res.verdict == "supported", res.reason
    # 8 layers: all 2**8 sign vectors enumerated, smallest p 1/256
    assert res.p_value < 0.05 and res.extra["exact"] == 1 and res.extra["n_perm"] == 255
    assert res.ci_low > 1.0 and res.n == L
    assert res.extra["max_head_enrichment"] > res.extra["layer_enrichment_at_max"]
    null = evaluate_cube(_excess(NULL), synth, dataset="synth")
    # the null's per-checkpoint changes are independent noise around a fixed pattern: no
    # head's dispersion grows. The old per-transition shuffle ignored that such departures
    # revert and "refuted" here (p_opposite < 0.05); time reversal finds nothing either way
    assert null.verdict == "inconclusive", null.reason
    assert null.p_value > 0.05 and null.extra["p_opposite"] > 0.05


def test_enrichment_profile_planted_supported_null_inconclusive(synth):
    res = evaluate_cube(_profile(BOUNDARY_GROWTH), synth, dataset="synth")
    assert res.verdict == "supported", res.reason
    assert res.ci_low > 1.0 and res.p_value == pytest.approx(1 / 28)
    assert res.extra["boundary_top2"] == 1 and res.extra["enrichment_first_layer"] > 2.0
    null = evaluate_cube(_profile(NULL), synth, dataset="synth")
    # no layer's dispersion grows: the interval of the boundary enrichment contains 1
    assert null.verdict == "inconclusive", null.reason
    assert null.ci_low < 1.0 < null.ci_high


@pytest.mark.parametrize("low, high, status", [(3.0, 15.0, "compatible"), (76.5 / 3, 76.5 * 3, "outside")])
def test_the_first_layers_enrichment_has_an_interval_the_magnitude_reads(synth, low, high, status):
    from lie_stats.spec import Magnitude

    mag = Magnitude((low * high) ** 0.5, low, high, estimate="enrichment_first_layer",
                    interval=("enrichment_first_layer_ci_low", "enrichment_first_layer_ci_high"),
                    justification="planted: the first layer's Killing-form CV grows about 7x")
    res = evaluate_cube(_profile(BOUNDARY_GROWTH, prediction=Prediction("above", value=1.0, magnitude=mag)),
                        synth, dataset="synth")
    e0, lo, hi = (res.extra[k] for k in ("enrichment_first_layer", "enrichment_first_layer_ci_low",
                                         "enrichment_first_layer_ci_high"))
    # the planted growth (CV about 0.1 / 0.5 at the first checkpoint, 0.4 / mean |N(0.5, 0.4)| at
    # the last, with the fixed pattern and noise: about 7x), with its own interval
    assert 5.0 < e0 < 9.0 and lo < e0 < hi
    assert res.extra["enrichment_last_layer_ci_low"] < res.extra["enrichment_last_layer"] \
        < res.extra["enrichment_last_layer_ci_high"]
    assert res.magnitude["status"] == status, res.magnitude
    assert res.verdict == ("supported" if status == "compatible" else "refuted")
    plain = evaluate_cube(_profile(BOUNDARY_GROWTH), synth, dataset="synth")
    assert (plain.effect, plain.ci_low, plain.ci_high) == (res.effect, res.ci_low, res.ci_high)


def test_functional_boundary_shift_planted_supported_null_inconclusive(synth):
    res = evaluate_cube(_shift(BOUNDARY_ANCHORS, params={**FAST, "layer_summary": "mean_abs"}), synth, dataset="synth")
    assert res.verdict == "supported", res.reason
    assert res.effect < 1.0 and res.ci_high < 1.0 and res.p_value < 0.01
    assert res.extra["ratio_functional"] < res.extra["ratio_total"]
    cv = evaluate_cube(_shift(BOUNDARY_ANCHORS), synth, dataset="synth")  # the default summary, killing_cv's
    assert cv.p_value < 0.05 and cv.effect < 1.0
    # the p decides: the within-layer head bootstrap often leaves out the three planted
    # anchors, so the interval reaches above 1 although the permutation p is small
    assert cv.verdict == "supported" and cv.ci_high > 1.0, cv.reason
    for summary in ("cv", "mean_abs"):
        null = evaluate_cube(_shift(NULL, params={**FAST, "layer_summary": summary}), synth, dataset="synth")
        # no anchors planted: neither one-sided p is small, and the interval contains 1
        assert null.verdict == "inconclusive", (summary, null.reason)
        assert null.p_value > 0.05 and null.extra["p_opposite"] > 0.05, summary
        assert null.ci_low < 1.0 < null.ci_high, summary


def test_spec_curve_over_families_and_summaries(synth):
    res = evaluate_cube(_profile(BOUNDARY_GROWTH, choices={"family": FAMILIES, "layer_summary": ("cv", "mean_abs")}),
                        synth, dataset="synth")
    assert len(res.spec_curve) == 4
    verdicts = {(c["choice"]["family"], c["choice"]["layer_summary"]): c["verdict"] for c in res.spec_curve}
    # the dispersion of the boundary layers grows, their mean |Khat| hardly moves
    assert verdicts[("Q", "cv")] == verdicts[("K", "cv")] == "supported"
    assert verdicts[("Q", "mean_abs")] == "inconclusive"  # its exact p is far above alpha


# ------------------------------------------------------------------------ data and declarations


def test_a_cube_without_value_norm_is_a_selection_error(synth):
    from lie_stats.spec import SelectionError

    with pytest.raises(SelectionError, match="no variable 'value_norm'"):
        evaluate_cube(_shift(BOUNDARY_ANCHORS), synth.drop_vars("value_norm"), dataset="synth")


def test_declaration_errors(synth):
    with pytest.raises(SpecError, match="step='all'"):
        evaluate_cube(_excess(HEAD_GROWTH, selection={"values": Select("killing_norm", step="last", family="Q",
                                                            projection="none", models=(HEAD_GROWTH,))}),
                      synth, dataset="synth")
    with pytest.raises(SpecError, match="layer_summary"):
        evaluate_cube(_profile(BOUNDARY_GROWTH, params={"layer_summary": "cv2"}), synth, dataset="synth")
    with pytest.raises(SpecError, match="one model"):
        evaluate_cube(_profile(BOUNDARY_GROWTH, selection={
            "first": Select("killing_norm", step="first", family="Q", projection="none"),
            "last": Select("killing_norm", step="last", family="Q", projection="none")}),
            synth, dataset="synth")
    with pytest.raises(SpecError, match="direction"):
        _excess(HEAD_GROWTH, prediction=Prediction("below", value=1.0))


def test_same_first_and_last_checkpoint_is_inconclusive(synth):
    one = synth.sel({schema.STEP: [64]})
    res = evaluate_cube(_profile(BOUNDARY_GROWTH), one, dataset="synth")
    assert res.verdict == "inconclusive" and "same" in res.reason


# ------------------------------------------------------------------------ bundled cube


def _bundled():
    path = ROOT / "datasets" / "pico_pythia" / "pico_pythia.nc"
    if not path.exists():
        pytest.skip("the bundled pico_pythia cube is not built")
    return cube.open_cube(path)


def test_pair_summary_reproduces_bundled_killing_cv_and_functional_form():
    c = _bundled()
    sub = c.sel({schema.MODEL: "p96_s0", schema.FAMILY: "Q", schema.PROJECTION: "none"}).isel(
        {schema.STEP: -1})
    khat = sub["killing_norm"].transpose(schema.LAYER, schema.HEAD, schema.HEAD_J).values
    khat = khat[:12, :8, :8].astype(np.float64)
    cv = sub["killing_cv"].values[:12].astype(np.float64)
    # float32 storage: relative 1e-4
    np.testing.assert_allclose(kp.pair_summary(khat), cv, rtol=1e-4)
    K = sub["killing"].transpose(schema.LAYER, schema.HEAD, schema.HEAD_J).values[:12, :8, :8]
    w = sub["value_norm"].transpose(schema.LAYER, schema.HEAD).values[:12, :8]
    kf = sub["killing_functional"].transpose(schema.LAYER, schema.HEAD, schema.HEAD_J).values[:12, :8, :8]
    np.testing.assert_allclose(functional_killing(K.astype(np.float64), w.astype(np.float64)), kf, rtol=1e-4)


def test_layer_summary_is_checked_at_declaration():
    """A typo in params or in a swept choice fails when the spec is declared, not at evaluation."""
    with pytest.raises(SpecError, match=r"params\['layer_summary'\].*Did you mean 'cv'"):
        _profile(BOUNDARY_GROWTH, params={"layer_summary": "cv2"})
    with pytest.raises(SpecError, match="choices"):
        _profile(BOUNDARY_GROWTH, choices={"layer_summary": ("cv", "mean_ab")})


def _with_labels(synth, anchors_per_boundary_layer: int):
    """The synthetic cube with head_label: the first heads of the boundary layers anchors,
    the rest workers (every model, every step)."""
    codes = np.full((synth.sizes[schema.LAYER], synth.sizes[schema.HEAD]), float(schema.LABEL_CODES["worker"]))
    codes[[0, -1], :anchors_per_boundary_layer] = schema.LABEL_CODES["anchor"]
    dims = (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    shape = tuple(synth.sizes[d] for d in dims)
    return synth.assign(head_label=(dims, np.broadcast_to(codes, shape).copy()))


def test_functional_shift_premise_anchors_and_total_enrichment(synth):
    premise = {**FAST, "min_anchors": 3, "require_total_enrichment": True}
    labels = Select("head_label", step="last", models=(BOUNDARY_ANCHORS,))
    spec = _shift(BOUNDARY_ANCHORS, params=premise)
    spec = HypothesisSpec(**{**spec.__dict__, "selection": {**spec.selection, "labels": labels}})
    # one anchor per boundary layer: 2 < 3, the test is undefined, the counts in the reason
    few = evaluate_cube(spec, _with_labels(synth, 1), dataset="synth")
    assert few.verdict == "inconclusive" and "anchor" in few.reason and "has 2" in few.reason, few.reason
    # three per boundary layer (6): the premise on anchors holds; the total form's boundary
    # ratio decides whether there is an enrichment to lower
    cube6 = _with_labels(synth, 3)
    res = evaluate_cube(spec, cube6, dataset="synth")
    assert res.extra["n_anchors"] == 6 and res.extra["ratio_total"] > 1.0
    assert res.verdict == "supported", res.reason
    # time run backwards (first and last swapped): the boundary layers lose dispersion, the
    # total form's boundary ratio is below 1, the premise fails whatever the p
    sel = dict(family="Q", projection="none", models=(BOUNDARY_ANCHORS,))
    backwards = HypothesisSpec(**{**spec.__dict__, "selection": {
        "first": Select("killing", step="last", **sel), "last": Select("killing", step="first", **sel),
        "w_first": Select("value_norm", step="last", models=(BOUNDARY_ANCHORS,)),
        "w_last": Select("value_norm", step="first", models=(BOUNDARY_ANCHORS,)), "labels": labels}})
    back = evaluate_cube(backwards, cube6, dataset="synth")
    assert back.extra["ratio_total"] < 1.0
    assert back.verdict == "inconclusive" and "premise fails" in back.reason and "anchors: 6" in back.reason, back.reason
    # min_anchors without a labels selection is a declaration error
    with pytest.raises(SpecError, match="labels"):
        evaluate_cube(_shift(BOUNDARY_ANCHORS, params=premise), synth, dataset="synth")
