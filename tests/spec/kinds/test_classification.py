"""Classification kinds (lie_stats.spec.kinds.classification): class_interaction,
threshold_agreement, stabilization_time and class_auc on labelled synthetic cubes: a planted
effect is supported, a null is not, a cube without anchors is inconclusive with the label
counts as the reason; and the declarations of these kinds in hypotheses/ are valid, skip the
absent Pythia data and decide as planted on data shaped like the bundled runs.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lie_stats import cube, schema
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate, evaluate_cube
from tests._cubes import model_shape
from tests._spec_cubes import FAST, toy_spec

L, H = 12, 8
STEPS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
ANCHOR, WORKER, MIXED = (schema.LABEL_CODES[k] for k in ("anchor", "worker", "mixed"))
SHAPE = model_shape(L, H, d_head=16)


def labelled_cube(seed: int = 0, *, planted: bool = True, anchors: bool = True, model: str = "m0"):
    """12 x 8 heads; per layer 3 anchors, 3 workers, 2 mixed (or no anchors: 5 workers).

    planted: anchors start with a larger contribution (class_auc), their change falls with it
    while workers' and mixed heads' rises (class_interaction), their gradient alignment is
    negative, workers' positive and mixed heads' zero (threshold_agreement), and they reach 90 %
    of their final change early, workers and mixed heads late (stabilization_time). Not
    planted: every variable independent of the labels.
    """
    rng = np.random.default_rng(seed)
    pattern = ([ANCHOR] * 3 if anchors else [WORKER] * 3) + [WORKER] * 3 + [MIXED] * 2
    label = np.stack([rng.permutation(pattern) for _ in range(L)]).astype(float)
    layer_level = rng.normal(size=(L, 1))
    is_a, is_w = label == ANCHOR, label == WORKER
    contrib0 = np.abs(1.0 / H + 0.03 * rng.normal(size=(L, H)) + (0.04 * is_a if planted else 0.0))
    if planted:
        change = 1.0 + 0.3 * layer_level + np.where(is_a, -8.0, 8.0) * (contrib0 - 1.0 / H) \
            + 0.1 * rng.normal(size=(L, H))
        galign = np.where(is_a, -0.2, np.where(is_w, 0.2, 0.0)) + 0.03 * rng.normal(size=(L, H))
        mid = np.where(is_a, 0.6, 2.0) + 0.2 * rng.normal(size=(L, H))
    else:
        change = 1.0 + 0.3 * layer_level + 0.3 * rng.normal(size=(L, H))
        galign = 0.2 * rng.normal(size=(L, H))
        mid = 1.3 + 0.4 * rng.normal(size=(L, H))
    change = np.abs(change) + 0.1
    shards = []
    for step in STEPS:
        ls = np.log10(max(step, 1))
        frac = 0.0 if step == 0 else 1.0 / (1.0 + np.exp(-4.0 * (ls - mid)))
        frac_last = 1.0 / (1.0 + np.exp(-4.0 * (np.log10(STEPS[-1]) - mid)))
        arrays = {
            "head_contribution": contrib0 if step == 0 else contrib0 + 0.001 * rng.normal(size=(L, H)),
            "change_from_init": change * frac / frac_last,
            "grad_alignment": galign + 0.01 * rng.normal(size=(L, H)),
            "head_label": label,
        }
        shards.append(cube.checkpoint_shard(arrays, model=model, step=step, shape=SHAPE, families=("Q",),
                                            projections=("none",), provenance={"step": step}))
    return cube.merge_shards(shards)


@pytest.fixture(scope="module")
def planted():
    return labelled_cube(0)


@pytest.fixture(scope="module")
def null():
    return labelled_cube(1, planted=False)


@pytest.fixture(scope="module")
def no_anchors():
    return labelled_cube(2, anchors=False)


def spec(test, selection, prediction, **params):
    return toy_spec(datasets=("toy",), test=test, selection=selection, params={**FAST, **params},
                    prediction=prediction)


def interaction(**params):
    return spec("class_interaction",
                {"y": Select("change_from_init", step="last"),
                 "x": Select("head_contribution", step="first"),
                 "group": Select("head_label", step="last")}, Prediction("nonzero"), **params)


def threshold(**params):
    return spec("threshold_agreement",
                {"score": Select("grad_alignment", step="last"), "label": Select("head_label", step="last")},
                Prediction("positive"), **params)


def stabilization(**params):
    return spec("stabilization_time",
                {"values": Select("change_from_init", step="all"), "group": Select("head_label", step="last")},
                Prediction("positive"), **params)


def auc(direction="positive", **params):
    return spec("class_auc",
                {"x": Select("head_contribution", step="first"), "label": Select("head_label", step="last")},
                Prediction(direction, value=0.5), **params)


# ------------------------------------------------------------------ planted effects
def test_class_interaction_planted_supported_null_inconclusive(planted, null):
    res = evaluate_cube(interaction(), planted)
    assert res.verdict == "supported", res.reason
    assert res.effect > 0.5 and res.extra["slope_group0"] < 0 < res.extra["slope_group1"]
    assert res.n == 72 and res.extra["n_group0"] == 36  # mixed heads left out
    assert evaluate_cube(interaction(), null).verdict == "inconclusive"  # no slope difference: p > alpha


def test_threshold_agreement_planted_supported_null_inconclusive(planted, null):
    res = evaluate_cube(threshold(), planted)
    assert res.verdict == "supported", res.reason
    assert res.effect > 0.8
    # t = 3 / sqrt(4 * 128 * 16)
    assert res.extra["threshold_cosine"] == pytest.approx(3.0 / np.sqrt(4 * 128 * 16))
    assert res.extra["n_zone_below"] >= 30 and res.extra["n_zone_above"] >= 30
    cos = evaluate_cube(threshold(threshold=0.1, threshold_units="cosine"), planted)
    assert cos.extra["threshold_cosine"] == 0.1 and cos.verdict == "supported"
    assert evaluate_cube(threshold(), null).verdict == "inconclusive"  # alignment unrelated to labels


def test_stabilization_time_planted_supported_null_inconclusive(planted, null):
    for scale in ("log", "linear"):
        res = evaluate_cube(stabilization(scale=scale), planted)
        assert res.verdict == "supported", (scale, res.reason)
        assert res.extra["median_time_group0"] < res.extra["median_time_group1"]
    res = evaluate_cube(stabilization(), planted)
    # log10 of the step where a logistic with midpoint m (in log10 step) reaches 90 % of its
    # value at step 512: anchors (m = 0.6) near 0.9, workers (m = 2.0) near 2.4
    assert 0.6 < res.extra["median_time_group0"] < 1.3 and 2.0 < res.extra["median_time_group1"] < 2.71
    assert evaluate_cube(stabilization(), null).verdict == "inconclusive"  # one timing for all labels


def test_class_auc_planted_supported_null_not(planted, null):
    res = evaluate_cube(auc(), planted)
    assert res.verdict == "supported", res.reason
    assert res.effect > 0.8 and res.n == 96
    res_w = evaluate_cube(auc("negative", positive=WORKER), planted)  # workers: lower start
    assert res_w.verdict == "supported", res_w.reason
    res_aw = evaluate_cube(auc(negative=(WORKER,)), planted)  # anchors vs workers only
    assert res_aw.n == 72 and res_aw.verdict == "supported"
    # a null: "supported" would be a false positive. At this seed the chance AUC falls below
    # 0.5 (p = 0.026, opposite sign), so the data fix no more than "not supported"
    assert evaluate_cube(auc(), null).verdict != "supported"


def test_wrong_direction_refutes(planted):
    res = evaluate_cube(auc("negative"), planted)
    assert res.verdict == "refuted"


# ------------------------------------------------------------------ no anchors
@pytest.mark.parametrize("make", [interaction, threshold, stabilization, auc])
def test_no_anchors_inconclusive_with_label_counts(make, no_anchors):
    res = evaluate_cube(make(), no_anchors)
    assert res.verdict == "inconclusive"
    assert "'anchor' (code 1)" in res.reason and "worker (code 2): 72" in res.reason, res.reason


def test_workers_vs_mixed_defined_without_anchors(no_anchors):
    res = evaluate_cube(interaction(groups=(MIXED, WORKER)), no_anchors)
    # workers' and mixed heads' change rise with the same planted slope: no interaction, so
    # the "nonzero" prediction finds no evidence either way
    assert res.verdict == "inconclusive" and res.n == 96, res.reason
    assert res.extra["n_group0"] == 24


# ------------------------------------------------------------------ declaration errors
def test_auc_needs_null_value_half_at_declaration():
    with pytest.raises(SpecError, match=r"field 'prediction.value'.*0\.5"):
        spec("class_auc", {"x": Select("head_contribution", step="first"),
                           "label": Select("head_label", step="last")}, Prediction("positive"))


def test_threshold_units_typo_at_declaration():
    with pytest.raises(SpecError, match=r"params\['threshold_units'\].*random_sd"):
        threshold(threshold_units="random_SD")


def test_stabilization_needs_all_steps(planted):
    bad = spec("stabilization_time", {"values": Select("change_from_init", step="last"),
                                      "group": Select("head_label", step="last")}, Prediction("positive"))
    with pytest.raises(SpecError, match="step='all'"):
        evaluate_cube(bad, planted)


# ------------------------------------------------------------------ the registry's declarations
#: The declarations of these kinds in hypotheses/, and the verdict each gives (main and every
#: choice of its curve) on two planted runs named like the bundled ones: workers and mixed
#: heads share the change slope and the timing (inconclusive), not the alignment (supported).
EXPECTED = {"B7": "supported", "B7-workers-vs-mixed": "inconclusive", "B9": "supported",
            "B9-classifier": "supported", "B9-workers-vs-mixed": "supported", "B10": "supported",
            "B10-workers-vs-mixed": "inconclusive", "B11": "supported", "B11-workers": "supported"}
MODULES = ("hypotheses.B7_anchor_worker_decomposition", "hypotheses.B9_gradient_alignment",
           "hypotheses.B10_stabilization_timing", "hypotheses.B11_initial_configuration")


def _specs():
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        out += [v for v in vars(mod).values() if isinstance(v, HypothesisSpec)]
    return out


#: dataset -> (id suffix, its runs) of the suites the label-based claims are declared on
SUITES = {"pico_sudoku": ("-sudoku", ("sudoku_s0", "sudoku_s1", "sudoku_s2")),
          "pico_bos": ("-bos", ("bos_l12h8d16_s0_cuda", "bos_l12h8d16_s1_cuda", "bos_l12h8d16_s2_cuda")),
          "pico_bos_cpu": ("-bos-cpu", ("bos_l12h8d16_s2", "bos_l12h8d16_s3", "bos_l12h8d16_s4"))}


def test_registry_declarations(planted_root):
    specs = _specs()
    ids = {s.id for s in specs}
    assert {"B7", "B9", "B9-classifier", "B10", "B11"} <= ids
    for s in specs:
        assert s.gate == "pinned" and s.notes
        if s.datasets == ("pythia",):  # the card exists, its cube does not: skipped with the build
            assert s.id.endswith("-pythia")
            (r,) = evaluate(s, planted_root)
            assert r.verdict == "skipped" and r.build
        elif s.datasets == ("panel",):  # B9 on the panel's trained decoders, which have anchors
            assert s.id.startswith("B9-panel-")
            assert {sel.models for sel in s.selection.values()} in ({("smollm2_135m",)}, {("gemma3_270m",)})
        elif s.datasets[0] in SUITES:  # the anchors suites: three runs each
            suffix, runs = SUITES[s.datasets[0]]
            assert s.id.endswith(suffix)
            assert {tuple(c["models"]) for c in s.choice_grid()} == {(m,) for m in runs}
        else:
            assert s.datasets == ("pico_pythia",)
            assert {tuple(c["models"]) for c in s.choice_grid()} == {("p96_s0",), ("p96_s1",)}


def test_registry_declarations_run_on_a_cube_shaped_like_the_bundled_one():
    """Each pico_pythia declaration evaluates end to end (fewer resamples) on planted
    two-run data named like the bundled runs and gives, for the main analysis and every
    choice of its curve, the verdict the planted data determine (:data:`EXPECTED`)."""
    shards = [labelled_cube(10 + i, model=m) for i, m in enumerate(("p96_s0", "p96_s1"))]
    both = cube.merge_shards(shards)
    for s in _specs():
        if s.datasets != ("pico_pythia",):
            continue
        fast = HypothesisSpec(**{**{f: getattr(s, f) for f in ("id", "claim", "source", "datasets",
                                                                 "selection", "test", "prediction",
                                                                 "gate", "reference", "choices", "notes")},
                                 "params": {**s.params, "n_perm": 199, "n_boot": 50}})
        res = evaluate_cube(fast, both)
        assert len(res.spec_curve) == len(s.choice_grid())
        assert res.verdict == EXPECTED[s.id], (s.id, res.reason)
        assert [c["verdict"] for c in res.spec_curve] == [EXPECTED[s.id]] * len(res.spec_curve), s.id
