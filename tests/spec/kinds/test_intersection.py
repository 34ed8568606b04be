"""The ``iut_equivalence`` kind (lie_stats.spec.kinds.intersection) on planted cubes.

The cube holds two "fine-tuned" runs ``r0``, ``r1`` (steps 0 and 10) and their "parents"
``p0``, ``p1`` (steps 90 and 100, the noise floor), a per-layer summary in families Q and O;
cells are (metric, family), units (cell, layer).
"""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats import cube
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
from lie_stats.spec.kinds.intersection import iut_role
from tests._cubes import model_shape

L, FAMS = 6, ("Q", "O")
B = 1e-3


def _cube(change: np.ndarray, noise: float, seed: int = 0):
    """killing_cv [family, layer] of each run: base, tuned = base * exp(change + noise)."""
    rng = np.random.default_rng(seed)
    shards = []
    shape = (len(FAMS), 1, L)
    for run, parent in (("r0", "p0"), ("r1", "p1")):
        base = rng.uniform(0.5, 2.0, size=shape)
        tuned = base * np.exp(change.reshape(shape) + noise * rng.normal(size=shape))
        late = base * np.exp(noise * rng.normal(size=shape))
        for model, step, values in ((run, 0, base), (run, 10, tuned), (parent, 90, late), (parent, 100, base)):
            shards.append(cube.checkpoint_shard(
                {"killing_cv": values}, model=model, step=step, shape=model_shape(L, 4),
                families=FAMS, projections=("none",), provenance={"model": model, "step": step}))
    return cube.merge_shards(shards)


def _selection(floor: bool = True, families=FAMS) -> dict:
    sel = {}
    for fam in families:
        cell = f"cv_{fam}"
        kw = {"family": fam, "projection": "none"}
        sel[iut_role("base", cell)] = Select("killing_cv", step="first", models=("r0", "r1"), **kw)
        sel[iut_role("tuned", cell)] = Select("killing_cv", step="last", models=("r0", "r1"), **kw)
        if floor:
            sel[iut_role("floor_start", cell)] = Select("killing_cv", step=90, models=("p0", "p1"), **kw)
            sel[iut_role("floor_end", cell)] = Select("killing_cv", step=100, models=("p0", "p1"), **kw)
    return sel


def _spec(selection=None, **params) -> HypothesisSpec:
    return HypothesisSpec(id="X-iut", claim="unchanged in every layer", source="s", datasets=("sim",),
                          selection=_selection() if selection is None else selection,
                          test="iut_equivalence", params=params,
                          prediction=Prediction("equivalent", bound=B), gate="report")


def test_tiny_changes_in_every_layer_are_supported():
    res = evaluate_cube(_spec(), _cube(np.zeros(2 * L), noise=2e-5))
    assert res.verdict == "supported", res.reason
    assert res.n == 2 * L and res.p_value < 0.05 and abs(res.effect) < B
    assert "every one of the 12 units" in res.reason


def test_one_layer_moved_refutes_and_the_mean_would_hide_it():
    change = np.zeros(2 * L)
    change[3], change[8] = 0.05, -0.05  # +5 % in one layer, -5 % in another: the mean is 0
    res = evaluate_cube(_spec(), _cube(change, noise=2e-5))
    assert res.verdict == "refuted", res.reason
    assert "2 of 12 units change beyond" in res.reason and abs(np.log1p(res.effect)) == pytest.approx(0.05, rel=0.01)


def test_a_noise_floor_wider_than_the_bound_is_inconclusive_and_says_so():
    res = evaluate_cube(_spec(), _cube(np.zeros(2 * L), noise=0.02))
    assert res.verdict == "inconclusive"
    assert "noise floor" in res.reason and "too wide" in res.reason


def test_without_floor_roles_the_runs_alone_give_the_noise():
    res = evaluate_cube(_spec(_selection(floor=False), pool="cell"), _cube(np.zeros(2 * L), noise=2e-5))
    assert res.verdict == "supported" and res.n == 2 * L


def test_declaration_checks():
    sel = _selection()
    del sel[iut_role("tuned", "cv_O")]
    with pytest.raises(SpecError, match="cell 'cv_O' .* lacks 'tuned'"):
        _spec(sel)
    sel = _selection()
    del sel[iut_role("floor_end", "cv_Q")]
    with pytest.raises(SpecError, match="floor_start and floor_end come together"):
        _spec(sel)
    with pytest.raises(SpecError, match="takes no role 'values'"):
        _spec({"values": Select("killing_cv", family="Q", projection="none")})
    with pytest.raises(SpecError, match="unknown pool"):
        _spec(pool="model")


def test_cells_must_hold_the_same_runs():
    sel = _selection(floor=False)
    sel[iut_role("base", "cv_O")] = Select("killing_cv", step="first", models=("r0",), family="O",
                                           projection="none")
    sel[iut_role("tuned", "cv_O")] = Select("killing_cv", step="last", models=("r0",), family="O",
                                            projection="none")
    with pytest.raises(SpecError, match="cell 'cv_Q' has the runs \\['r0', 'r1'\\], another cell "
                                        "\\['r0'\\]; every cell needs the same runs"):
        evaluate_cube(_spec(sel, pool="cell"), _cube(np.zeros(2 * L), noise=2e-5))


def _banded() -> HypothesisSpec:
    from lie_stats.spec import Magnitude

    bound = Magnitude(B, 0.0, B, scale="absolute", estimate="largest_abs_change",
                      interval=("largest_abs_ci_low", "largest_abs_ci_high"), justification="< 0.1 %")
    return HypothesisSpec(id="X-iut", claim="unchanged in every layer", source="s", datasets=("sim",),
                          selection=_selection(), test="iut_equivalence",
                          prediction=Prediction("equivalent", bound=B, magnitude=bound), gate="report")


def test_the_magnitude_reads_the_largest_abs_change_against_the_bound():
    tiny = evaluate_cube(_banded(), _cube(np.zeros(2 * L), noise=2e-5))
    assert tiny.verdict == "supported" and tiny.magnitude["status"] == "within", tiny.magnitude
    assert tiny.magnitude["interval"][1] < B  # shown below the bound, so also inside the band
    change = np.zeros(2 * L)
    change[3], change[8] = 0.01, -0.05  # the largest |change| is the -5 % unit
    moved = evaluate_cube(_banded(), _cube(change, noise=2e-5))
    assert moved.verdict == "refuted" and moved.magnitude["status"] == "outside", moved.magnitude
    assert moved.magnitude["estimate"] == pytest.approx(np.expm1(0.05), rel=0.01)
    assert moved.effect == pytest.approx(np.expm1(-0.05), rel=0.01)  # the signed effect of the same unit
    assert "lies entirely above the band [0, 0.00100]" in moved.magnitude["reason"]
