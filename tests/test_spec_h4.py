"""Test kinds of claims A10 / B4 on synthetic cubes with planted effects: tost_paired
(equivalence between compressions), verdict_agreement (compression_agreement), share_above
and head_mean (attention sinks). Planted effect -> supported, null / opposite -> not."""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats import cube
from lie_stats.errors import SpecError
from lie_stats.spec import (
    AGREE_VERDICT,
    N_OPPOSITE,
    HypothesisSpec,
    Prediction,
    Select,
    compression_agreement,
    evaluate_cube,
)
from lie_stats.stats import columns as C

FAMILIES = ("Q",)
PROJECTIONS = ("none", "adaptive", "fixed:8")
STEPS = (0, 10, 100, 1000)
L, H = 6, 6
FAST = {"n_perm": 499, "n_boot": 400}


def _shape():
    return dict(n_layers=L, n_heads=H, n_kv_heads=H, d_head=4, d_model=4 * H, architecture="gpt_neox",
                rotary_fraction=0.25, attention_extras="rotary", init_step=0)


def _cube(seed: int = 0):
    """Models m0, m1 (6 layers x 6 heads, 4 checkpoints), projections none / adaptive / fixed:8.

    - ``abelian_fraction``: equal under none and adaptive up to 0.003 noise; 0.3 higher under
      fixed:8 (a compression artifact);
    - ``abelian_fraction_tau``: 0 exact, 1 under fixed:8 at every step (METRICS §4.2's pattern);
    - ``commutator_var``: grows 5x over training under none and adaptive, flat under fixed:8;
    - ``killing_cv``: noise, no growth anywhere (every compression inconclusive);
    - ``commutator_z_mean``: m1 has no value under fixed:8 (units missing from one compression);
    - m0 heads are sinks (sink_argmax_fraction ~ 0.9, sink_value_ratio ~ 0.2); m1 heads are
      not (0.1, ratio ~ 2).
    """
    rng = np.random.default_rng(seed)
    shards = []
    base_af = rng.uniform(0.05, 0.3, size=(2, L))
    for mi, model in enumerate(("m0", "m1")):
        for step in STEPS:
            t = step / STEPS[-1]
            layer = (len(FAMILIES), len(PROJECTIONS), L)
            af = np.empty(layer)
            af[0, 0] = base_af[mi] + 0.1 * t
            af[0, 1] = af[0, 0] + 0.003 * rng.normal(size=L)
            af[0, 2] = af[0, 0] + 0.3 + 0.003 * rng.normal(size=L)
            tau = np.zeros(layer)
            tau[0, 2] = 1.0
            cv = np.empty(layer)
            growth = 1.0 + 4.0 * t
            cv[0, 0] = growth * np.exp(0.05 * rng.normal(size=L))
            cv[0, 1] = growth * np.exp(0.05 * rng.normal(size=L))
            cv[0, 2] = np.exp(0.05 * rng.normal(size=L))
            kcv = np.exp(0.3 * rng.normal(size=layer))
            zm = -1.0 - 2.0 * t + 0.05 * rng.normal(size=layer)
            if model == "m1":
                zm[0, 2] = np.nan
            sink = np.clip((0.9 if model == "m0" else 0.1) + 0.05 * rng.normal(size=(L, H)), 0, 1)
            ratio = (0.2 if model == "m0" else 2.0) * np.exp(0.2 * rng.normal(size=(L, H)))
            arrays = {"abelian_fraction": af, "abelian_fraction_tau": tau, "commutator_var": cv,
                      "killing_cv": kcv, "commutator_z_mean": zm, "sink_argmax_fraction": sink,
                      "sink_value_ratio": ratio}
            shards.append(cube.checkpoint_shard(arrays, model=model, step=step, shape=_shape(),
                                                families=FAMILIES, projections=PROJECTIONS,
                                                provenance={"model": model, "step": step}))
    return cube.merge_shards(shards)


@pytest.fixture(scope="module")
def synth():
    return _cube()


def _spec(**kw):
    base = dict(id="X", claim="c", source="s", datasets=("synth",), gate="report", params={})
    base.update(kw)
    return HypothesisSpec(**base)


def _tost(metric, a, b, step="last", bound=0.025):
    return _spec(id=f"eq-{metric}", test="tost_paired",
                 selection={"a": Select(metric, step=step, family="Q", projection=a),
                            "b": Select(metric, step=step, family="Q", projection=b)},
                 prediction=Prediction("equivalent", bound=bound))


# ----------------------------------------------------------------------------- tost_paired


def test_tost_paired_equivalent_compressions_supported(synth):
    res = evaluate_cube(_tost("abelian_fraction", "none", "adaptive"), synth)
    assert res.verdict == "supported" and res.n == 2 * L
    assert abs(res.effect) < 0.01 and -0.025 < res.ci_low < res.ci_high < 0.025


def test_tost_paired_compression_artifact_refuted(synth):
    res = evaluate_cube(_tost("abelian_fraction", "none", "fixed:8"), synth)
    assert res.verdict == "refuted" and res.effect == pytest.approx(0.3, abs=0.01)


def test_tost_paired_tau_moves_with_compression_at_init(synth):
    res = evaluate_cube(_tost("abelian_fraction_tau", "none", "fixed:8", step="first"), synth)
    assert res.verdict == "refuted" and res.effect == 1.0 and res.ci_low == res.ci_high == 1.0


def test_tost_paired_wide_bound_and_missing_units(synth):
    # a bound wider than the artifact accepts it: the bound is what decides
    assert evaluate_cube(_tost("abelian_fraction", "none", "fixed:8", bound=0.5), synth).verdict == "supported"
    # m1 has no fixed:8 value: only m0's layers pair up
    assert evaluate_cube(_tost("commutator_z_mean", "none", "fixed:8", bound=0.5), synth).n == L


# ----------------------------------------------------------------------------- verdict_agreement


def _enrichment_target(metric="commutator_var"):
    return _spec(id=f"T-{metric}", test="enrichment", params=dict(FAST),
                 selection={"first": Select(metric, step="first", family="Q", projection="none"),
                            "last": Select(metric, step="last", family="Q", projection="none")},
                 prediction=Prediction("above", value=1.0), choices={"projection": PROJECTIONS})


def test_agreement_supported_when_compressions_agree(synth):
    spec = compression_agreement(_enrichment_target(), id="A", claim="same", source="s",
                                 compressions=("none", "adaptive"))
    res = evaluate_cube(spec, synth)
    assert res.verdict == "supported", res.reason
    assert res.extra[f"{AGREE_VERDICT}_none"] == res.extra[f"{AGREE_VERDICT}_adaptive"] == 1.0
    assert res.effect == 0.0 and res.extra[f"{C.EFFECT}_none"] == pytest.approx(5.0, rel=0.1)


def test_agreement_refuted_when_a_compression_changes_the_verdict(synth):
    target = _enrichment_target()
    res = evaluate_cube(compression_agreement(target, id="A", claim="same", source="s",
                                              compressions=("none", "adaptive", "fixed:8")), synth)
    assert res.verdict == "refuted" and "fixed:8" in res.reason
    assert res.extra[f"{AGREE_VERDICT}_fixed_8"] != 1.0 and res.effect >= 1.0
    # the per-compression verdicts are the target's own verdicts on the same data
    own = evaluate_cube(target, synth)
    curve = {c["choice"]["projection"]: c["verdict"] for c in own.spec_curve}
    codes = {"supported": 1.0, "inconclusive": 0.0, "refuted": -1.0}
    for comp, tag in (("none", "none"), ("adaptive", "adaptive"), ("fixed:8", "fixed_8")):
        assert res.extra[f"{AGREE_VERDICT}_{tag}"] == codes[curve[comp]]
    # a tolerance that only forbids opposite decisions accepts decisive vs inconclusive
    loose = compression_agreement(target, id="A", claim="same", source="s", tolerance=1.5,
                                  compressions=("none", "adaptive", "fixed:8"))
    expected = "refuted" if res.extra[N_OPPOSITE] > 0 else "supported"
    assert evaluate_cube(loose, synth).verdict == expected


def test_agreement_all_inconclusive_is_inconclusive(synth):
    res = evaluate_cube(compression_agreement(_enrichment_target("killing_cv"), id="A", claim="same",
                                              source="s", compressions=PROJECTIONS), synth)
    assert res.verdict == "inconclusive" and "every compression is inconclusive" in res.reason


def test_agreement_uses_the_units_every_compression_has(synth):
    target = _spec(id="T", test="trend", params={"n_perm": 499},
                   selection={"values": Select("commutator_z_mean", step="all", family="Q", projection="none")},
                   prediction=Prediction("negative"))
    res = evaluate_cube(compression_agreement(target, id="A", claim="same", source="s",
                                              compressions=PROJECTIONS), synth)
    only_m0 = evaluate_cube(_spec(id="T", test="trend", params={"n_perm": 499}, selection={
        "values": Select("commutator_z_mean", step="all", family="Q", projection="none", models=("m0",))},
        prediction=Prediction("negative")), synth)
    assert res.extra[f"{C.EFFECT}_none"] == pytest.approx(only_m0.effect)
    assert res.extra[f"{C.P_VALUE}_none"] == pytest.approx(only_m0.p_value)


def test_agreement_takes_a_target_of_any_registered_kind(synth):
    # tost_paired's roles (a, b) were unknown to compression_agreement when its role list was
    # computed at import, before the later kinds registered; roles are now read when needed
    target = _tost("abelian_fraction", "none", "none")
    agree = compression_agreement(target, id="A-tost", claim="same", source="s",
                                  compressions=("none", "adaptive"))
    assert sorted(agree.selection) == ["a__c0", "a__c1", "b__c0", "b__c1"]
    res = evaluate_cube(agree, synth)
    # b - a is 0 under either compression: both verdicts are the TOST's "supported"
    assert res.extra[f"{AGREE_VERDICT}_none"] == res.extra[f"{AGREE_VERDICT}_adaptive"] == 1.0
    assert res.verdict == "supported", res.reason


def test_agreement_declaration_tracks_the_target_and_sweeps_its_choices():
    t = _enrichment_target()
    t2 = _spec(**{**{k: getattr(t, k) for k in ("id", "test", "selection", "choices")},
                  "params": {**FAST, "n_boot": 401}, "prediction": Prediction("above", value=1.0)})
    a = compression_agreement(t, id="A", claim="c", source="s")
    b = compression_agreement(t2, id="A", claim="c", source="s")
    assert a.spec_hash() != b.spec_hash()  # the target's parameters are part of the declaration
    fam = _spec(**{**{k: getattr(t, k) for k in ("id", "test", "selection", "params", "prediction")},
                   "choices": {"family": ("Q", "K"), "projection": PROJECTIONS}})
    assert compression_agreement(fam, id="A", claim="c", source="s").choices == {"family": ("Q", "K")}


def test_compression_agreement_refuses_bad_targets():
    no_proj = _spec(id="T", test="share_above", params={"threshold": 0.5},
                    selection={"values": Select("sink_argmax_fraction", step="last")},
                    prediction=Prediction("above", value=0.5))
    with pytest.raises(SpecError, match="no variable with a projection"):
        compression_agreement(no_proj, id="A", claim="c", source="s")
    with pytest.raises(SpecError, match="distinct compressions"):
        compression_agreement(_enrichment_target(), id="A", claim="c", source="s", compressions=("none",))
    with pytest.raises(SpecError, match="fixed:K|projection"):
        compression_agreement(_enrichment_target(), id="A", claim="c", source="s",
                              compressions=("none", "fixd:64"))


# ----------------------------------------------------------------------------- sinks (B4)


def _share(model, value=0.5):
    return _spec(id="B4", test="share_above", params={"threshold": 0.5, "n_boot": 999},
                 selection={"values": Select("sink_argmax_fraction", step="last", models=(model,))},
                 prediction=Prediction("above", value=value))


def test_share_above_planted_sinks_supported_and_absent_sinks_refuted(synth):
    res = evaluate_cube(_share("m0"), synth)
    assert res.verdict == "supported" and res.effect == 1.0 and res.n == L * H
    no = evaluate_cube(_share("m1"), synth)
    assert no.verdict == "refuted" and no.effect == 0.0
    pooled = evaluate_cube(_spec(id="B4", test="share_above", params={"threshold": 0.5, "n_boot": 999},
                                 selection={"values": Select("sink_argmax_fraction", step="last")},
                                 prediction=Prediction("above", value=0.5)), synth)
    # half the heads (m0's) are sinks: the pooled share is 0.5 and the interval contains it
    assert pooled.effect == 0.5 and pooled.verdict == "inconclusive" and pooled.extra["n_strata"] == 2


def _ratio(model, mask=True, **params):
    sel = {"values": Select("sink_value_ratio", step="last", models=(model,))}
    if mask:
        sel["mask"] = Select("sink_argmax_fraction", step="last", models=(model,))
    return _spec(id="B4-v", test="head_mean",
                 params={"transform": "log", "n_boot": 999, **({"mask_above": 0.5} if mask else {}), **params},
                 selection=sel, prediction=Prediction("below", value=1.0))


def test_cluster_mean_sink_values_small_supported_large_refuted(synth):
    res = evaluate_cube(_ratio("m0"), synth)
    assert res.verdict == "supported" and res.effect == pytest.approx(0.2, rel=0.15)
    big = evaluate_cube(_ratio("m1", mask=False), synth)
    assert big.verdict == "refuted" and big.effect == pytest.approx(2.0, rel=0.15)
    # m1 has no sink head: the masked mean is undefined, hence inconclusive, with the reason
    none = evaluate_cube(_ratio("m1"), synth)
    assert none.verdict == "inconclusive" and "mask" in none.reason


def test_cluster_mean_mask_needs_its_threshold(synth):
    spec = _spec(id="B4-v", test="head_mean", params={"transform": "log"},
                 selection={"values": Select("sink_value_ratio", step="last"),
                            "mask": Select("sink_argmax_fraction", step="last")},
                 prediction=Prediction("below", value=1.0))
    with pytest.raises(SpecError, match="mask_above"):
        evaluate_cube(spec, synth)
    with pytest.raises(SpecError, match="transform"):
        evaluate_cube(_ratio("m0", transform="logit"), synth)


# ----------------------------------------------------------------------------- A10 report view


def test_a10_table_and_figure_from_agreement_results(synth, tmp_path):
    from hypotheses import A10_report as report_a10

    spec = compression_agreement(_enrichment_target(), id="A10-verdicts-T", claim="same", source="s",
                                 compressions=PROJECTIONS)
    res = evaluate_cube(spec, synth, dataset="synth")
    rows = report_a10.agreement_rows([res, res.row()])
    assert len(rows) == 2 and rows[0]["target"] == "T-commutator_var"
    assert rows[0]["none"] == rows[0]["adaptive"] == "supported" and rows[0]["verdict"] == "refuted"
    assert rows[0]["fixed:8"] != "supported"
    assert rows[0]["none effect"] == pytest.approx(res.extra[f"{C.EFFECT}_none"])
    md = report_a10.agreement_markdown([res])
    assert "| T-commutator_var | synth | supported" in md
    png = report_a10.a10_figure([res], {"synth": synth}, tmp_path / "A10.png",
                                compressions=PROJECTIONS, models={"synth": ("m0", "m1")})
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_write_reports_adds_the_a10_section_to_md_and_html(synth, tmp_path):
    """write_reports hooks report_a10: an A10 result gives the read-together section and its
    figure in report.md and report.html; without one, neither appears."""
    from lie_stats.report import write_reports

    spec = compression_agreement(_enrichment_target(), id="A10-verdicts-T", claim="same", source="s",
                                 compressions=PROJECTIONS)
    res = evaluate_cube(spec, synth, dataset="synth")
    empty = tmp_path / "datasets"
    empty.mkdir()
    out = write_reports([res], tmp_path / "r", datasets_dir=empty)
    md, page = out["markdown"].read_text(), out["html"].read_text()
    assert "## A10: the projection-artifact control, read together" in md
    assert "| T-commutator_var | synth | supported" in md and "![A10](figures/A10.png)" in md
    assert "<h2>A10: the projection-artifact control, read together</h2>" in page
    assert '<img src="figures/A10.png" alt="A10">' in page and "<td>T-commutator_var</td>" in page
    assert (tmp_path / "r" / "figures" / "A10.png").read_bytes()[:4] == b"\x89PNG"
    other = res.row() | {"id": "B1"}
    out = write_reports([other], tmp_path / "r2", datasets_dir=empty)
    assert "A10" not in out["markdown"].read_text()


def test_transform_is_checked_at_declaration():
    with pytest.raises(SpecError, match=r"params\['transform'\]"):
        _ratio("m0", transform="logit")
