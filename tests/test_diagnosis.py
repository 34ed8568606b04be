"""lie-stats diagnose: the null and planted simulations of a spec's own data, and the cache.

The synthetic ``synth`` dataset (tests/_spec_cubes.py) holds a strong within-layer negative
correlation (rho about -0.6) between initial head contribution and change, with layer
offsets. A diagnosis must break that association under the null (FPR in the binomial band
of a one-sided alpha / 2) and detect a large planted rho.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from lie_stats import diagnosis as D
from lie_stats.collect import collect
from lie_stats.errors import LieStatsError
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._spec_cubes import make_datasets, planted_fields, synth_cube

#: Simulations of the calibration test and the reduced resampling they use.
SETTINGS = D.Settings(n_sims=60, seed=0, n_perm=99, n_boot=49)


def binomial_band(n: int, p: float, level: float = 0.99) -> tuple[float, float]:
    """Two-sided ``level`` band of a binomial share (scipy.stats.binom.interval)."""
    lo, hi = sps.binom.interval(level, n, p)
    return lo / n, hi / n


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("diag") / "datasets")


def correlation_spec(rho: float = -0.6) -> HypothesisSpec:
    return HypothesisSpec(**planted_fields(reference={"rho": rho}))


def test_permute_heads_keeps_each_layer_and_moves_heads():
    import xarray as xr

    values = np.arange(2 * 3 * 5, dtype=float).reshape(2, 3, 5)
    values[:, 2, 4] = np.nan  # a padded head (no data at any step) stays where it is
    da = xr.DataArray(values, dims=("step", "layer", "head"))
    out = D.permute_heads(da, np.random.default_rng(1))
    for layer in range(3):
        assert sorted(np.nan_to_num(out.values[:, layer].ravel(), nan=-1)) == sorted(
            np.nan_to_num(values[:, layer].ravel(), nan=-1))
    assert np.isnan(out.values[:, 2, 4]).all()
    # one permutation per layer, the same at every step: step 1 - step 0 is 15 everywhere
    np.testing.assert_allclose(out.values[1, :2] - out.values[0, :2], 15.0)
    assert not np.array_equal(out.values, values)


def test_planted_correlation_has_the_reference_rho_within_layers():
    import xarray as xr

    rng = np.random.default_rng(3)
    x = xr.DataArray(rng.normal(size=(40, 50)) + np.arange(40)[:, None], dims=("layer", "head"))
    y = xr.DataArray(rng.normal(size=(40, 50)) * 2 + 5, dims=("layer", "head"))
    out = D.plant_correlation({"x": x, "y": y}, -0.4, "spearman", rng)
    rhos = [sps.spearmanr(out["x"].values[i], out["y"].values[i])[0] for i in range(40)]
    assert abs(np.mean(rhos) - (-0.4)) < 0.03  # SE of the mean about 0.13 / sqrt(40) = 0.02
    # each layer keeps its mean and spread of y
    np.testing.assert_allclose(out["y"].mean("head"), y.mean("head"), atol=1e-9)
    np.testing.assert_allclose(out["y"].std("head"), y.std("head"), rtol=1e-9)


def test_correlation_diagnosis_holds_alpha_and_detects_a_large_planted_rho():
    spec = correlation_spec(-0.6)
    cube = synth_cube()
    from lie_stats.spec import select

    arrays = {role: select(sel, cube) for role, sel in spec.selection.items()}
    diag = D.diagnose_arrays(spec, arrays, SETTINGS)
    # the real data have rho about -0.6: without a null that breaks it FPR would be near 1.
    # Two-sided test, predicted sign: a null "supported" rate of alpha / 2 = 0.025.
    lo, hi = binomial_band(SETTINGS.n_sims, 0.025)
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9, diag  # rho -0.6 on 96 heads: z about 6
    assert diag["type_s"] <= 0.05, diag
    assert diag["coverage"] >= 0.7, diag  # the pooled interval, about the within-layer rho
    assert diag["n_sims"] == SETTINGS.n_sims and diag["seed"] == 0 and diag["reason"] == ""
    assert set(D.DIAGNOSIS_FIELDS) <= set(diag)


def test_a_kind_without_a_simulator_says_so():
    from lie_stats.spec import register_test, unregister_test
    from lie_stats.spec.rules import decide_one_sided

    register_test("diag_no_design", lambda data: None, decide_one_sided, roles=("values",))
    try:
        spec = HypothesisSpec(id="T1", claim="c", source="s", datasets=("synth",),
                              selection={"values": Select("abelian_fraction", step="all", family="Q",
                                                          projection="none")},
                              test="diag_no_design", prediction=Prediction("positive"), gate="report")
        diag = D.diagnose_arrays(spec, {}, D.Settings(n_sims=3))
    finally:
        unregister_test("diag_no_design")
    assert diag["reason"] == "no simulator for kind diag_no_design"
    assert diag["fpr"] is None and diag["power"] is None and diag["n_sims"] == 3


def test_a_reference_without_an_effect_size_gives_fpr_only(root):
    spec = HypothesisSpec(**planted_fields(reference={"direction": "negative"}))
    diag = D.diagnose_spec(spec, "synth", root, D.Settings(n_sims=4, n_perm=19, n_boot=19))
    assert diag["fpr"] is not None and diag["power"] is None and diag["coverage"] is None
    assert "gives no correlation" in diag["reason"]


def _module(folder, rho: float) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "diag_demo.py").write_text(
        "from lie_stats.spec import HypothesisSpec, Prediction, Select\n"
        "B5 = HypothesisSpec(id='B5', claim='c', source='s', datasets=('synth',),\n"
        "    selection={'x': Select('head_contribution', step='first'),\n"
        "               'y': Select('change_from_init')},\n"
        "    test='correlation', params={'n_perm': 99, 'n_boot': 50},\n"
        f"    prediction=Prediction('negative'), reference={{'rho': {rho}}}, gate='report')\n",
        encoding="utf-8")


def test_the_cache_is_reused_and_invalidated_by_the_spec_hash(root, tmp_path, monkeypatch):
    hyp = tmp_path / "hypotheses"
    _module(hyp, -0.5)
    settings = D.Settings(n_sims=3, n_perm=19, n_boot=19)
    decls = collect([hyp], datasets_dir=root, dirs=None).declarations
    first = D.diagnose_declarations(decls, datasets_dir=root, settings=settings)
    assert [d.cached for d in first] == [False]
    cache = hyp / D.DIAGNOSIS_FILE
    text = cache.read_text()
    entry = json.loads(text)["entries"]["B5::synth"]
    assert entry["spec_hash"] == decls[0].obj.spec_hash() and entry["settings"] == settings.record()

    def no_recompute(*a, **k):
        raise AssertionError("the cache should have been used")

    with monkeypatch.context() as m:
        m.setattr(D, "diagnose_spec", no_recompute)
        again = D.diagnose_declarations(decls, datasets_dir=root, settings=settings)
    assert [d.cached for d in again] == [True] and again[0].diagnosis == first[0].diagnosis
    assert cache.read_text() == text  # nothing rewritten
    # what `lie-stats run` attaches: the cached figures for this hash, none for another
    test = decls[0].obj.test
    got = D.cached_diagnosis("B5", "synth", decls[0].obj.spec_hash(), cache, root, test=test)
    assert got == first[0].diagnosis
    other = D.cached_diagnosis("B5", "synth", "0" * 64, cache, root, test=test)
    assert other["reason"] == D.NOT_DIAGNOSED and other["fpr"] is None
    # changed code (the kind's rule or statistic): the cached figures are not shown
    assert entry["code"] == D.code_fingerprint(test)
    with monkeypatch.context() as m:
        m.setattr(D, "code_fingerprint", lambda t, **k: "changed")
        stale = D.cached_diagnosis("B5", "synth", decls[0].obj.spec_hash(), cache, root, test=test)
        assert stale["reason"] == D.NOT_DIAGNOSED
        assert [d.cached for d in D.diagnose_declarations(decls, datasets_dir=root, settings=settings)] == [False]
    first = D.diagnose_declarations(decls, datasets_dir=root, settings=settings)  # back to this code
    # other settings recompute
    more = D.diagnose_declarations(decls, datasets_dir=root, settings=D.Settings(n_sims=4, n_perm=19, n_boot=19))
    assert [d.cached for d in more] == [False] and more[0].diagnosis["n_sims"] == 4
    # a changed declaration (its reference) changes the hash: recomputed
    _module(hyp, -0.3)
    import sys
    sys.modules.pop("diag_demo", None)
    decls2 = collect([hyp], datasets_dir=root, dirs=None).declarations
    assert decls2[0].obj.spec_hash() != decls[0].obj.spec_hash()
    redone = D.diagnose_declarations(decls2, datasets_dir=root, settings=settings)
    assert [d.cached for d in redone] == [False]
    assert json.loads(cache.read_text())["entries"]["B5::synth"]["spec_hash"] == decls2[0].obj.spec_hash()


@pytest.mark.parametrize("text, expected", [
    ("{not json", "not valid JSON"),
    ('{"format": 1, "entries": []}', "expected an object"),
    ('{"format": 1, "entries": {"B5::synth": {"spec_hash": "x"}}}', "entry 'B5::synth' is malformed"),
])
def test_a_malformed_cache_names_its_file(tmp_path, text, expected):
    path = tmp_path / D.DIAGNOSIS_FILE
    path.write_text(text)
    with pytest.raises(LieStatsError, match=expected) as err:
        D.read_cache(path)
    assert str(path) in str(err.value)


def test_paired_equivalence_holds_alpha_at_the_bound_and_detects_equality():
    import xarray as xr

    rng = np.random.default_rng(7)
    # 3 models x 12 layers: a per-layer metric under two compressions, differences with a
    # model-shared offset and layer noise (sd 0.01) against a bound of 0.02
    a = xr.DataArray(rng.uniform(0.2, 0.6, size=(3, 12)), dims=("model", "layer"),
                     coords={"model": ["m0", "m1", "m2"], "layer": np.arange(12)})
    b = a + 0.3 + 0.01 * rng.normal(size=(3, 12))
    spec = HypothesisSpec(id="E1", claim="c", source="s", datasets=("synth",),
                          selection={"a": Select("abelian_fraction", step="last", family="Q", projection="none"),
                                     "b": Select("abelian_fraction", step="last", family="Q", projection="fixed:2")},
                          test="tost_paired", prediction=Prediction("equivalent", bound=0.02),
                          gate="report")
    settings = D.Settings(n_sims=80, seed=1)
    diag = D.diagnose_arrays(spec, {"a": a, "b": b}, settings)
    # TOST at the boundary: "supported" at most alpha (about alpha with n = 36); the real
    # difference (0.3) would be refuted every time if the null did not re-centre it
    lo, hi = binomial_band(settings.n_sims, 0.05)
    assert diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9, diag  # se about 0.01 / 6: the bound is 12 se away from 0
    assert diag["coverage"] >= 0.8, diag  # the 90 % interval about 0
    assert diag["type_s"] is None and "equivalence" in diag["reason"]


def test_the_diagnose_verb_prints_a_table_and_writes_the_cache(root, tmp_path, capsys):
    from lie_stats.cli import main

    hyp = tmp_path / "hyp_cli"
    _module(hyp, -0.5)
    import sys
    sys.modules.pop("diag_demo", None)
    assert main(["diagnose", str(hyp), "--datasets", str(root), "--n-sims", "2"]) == 0
    out = capsys.readouterr().out
    assert "B5::synth" in out and "1 diagnosed, 0 from the cache" in out
    cached = D.read_cache(hyp / D.DIAGNOSIS_FILE)
    assert "B5::synth" in cached
    # the per-kind summary counts the one result under its kind, with its own FPR
    fpr = cached["B5::synth"]["diagnosis"]["fpr"]
    assert f"| correlation | 1 | 1 | {fpr:.3f} |" in out


@pytest.mark.slow  # a whole `lie-stats run` with its report and figures: about 15 s
def test_run_puts_the_cached_diagnosis_into_every_row(root, tmp_path):
    from lie_stats.pytest_plugin import run

    hyp = tmp_path / "hyp_run"
    _module(hyp, -0.5)
    (hyp / "diag_scope.py").write_text(
        "from lie_stats.spec import OutOfScope\n"
        "G9 = OutOfScope(id='G9', claim='c', source='s', reason='r')\n", encoding="utf-8")
    import sys
    sys.modules.pop("diag_demo", None)
    decls = collect([hyp / "diag_demo.py"], datasets_dir=root, dirs=None).declarations
    done = D.diagnose_declarations(decls, datasets_dir=root, settings=D.Settings(n_sims=2, n_perm=19, n_boot=19))
    reports = tmp_path / "reports"
    run([str(hyp)], datasets_dir=root, reports_dir=reports, pytest_args=["-q", "-p", "no:cacheprovider"])
    rows = {r["id"]: r for r in json.loads((reports / "results.json").read_text())}
    assert rows["B5"]["diagnosis"] == done[0].diagnosis
    assert rows["G9"]["diagnosis"]["reason"].startswith("out of scope") and rows["G9"]["diagnosis"]["fpr"] is None


def test_the_report_writes_each_result_s_diagnosis_into_results_json(tmp_path):
    from lie_stats.report import write_reports
    from lie_stats.spec import Result

    r = Result(id="X1", claim="c", source="s", dataset="toy", verdict="skipped", reason="no cube",
               gate="report", test="correlation", spec_hash="0" * 64, reference={},
               diagnosis=D.empty_diagnosis(D.NOT_DIAGNOSED))
    out = write_reports([r], tmp_path / "reports", figures=False)
    row = json.loads(out["json"].read_text())[0]
    assert row["diagnosis"] == {**dict.fromkeys(("fpr", "power", "coverage", "type_s", "fpr_robust",
                                                 "n_sims", "seed")),
                                "reason": D.NOT_DIAGNOSED}


def test_a_kind_brings_its_own_design_through_the_registry():
    from lie_stats.spec import register_test, unregister_test
    from lie_stats.spec.registry import get_kind
    from lie_stats.spec.rules import decide_directional

    own = D.Design(null=lambda arrays, spec, rng: arrays, plant=None, null_value=lambda r, s: 0.0,
                   what="identity")
    register_test("diag_demo_kind", lambda data: None, decide_directional, roles=("x",), design=own)
    register_test("diag_no_design", lambda data: None, decide_directional, roles=("x",))
    try:
        assert D.design_for(get_kind("diag_demo_kind")) is own
        assert D.design_for(get_kind("diag_no_design")) is None
    finally:
        unregister_test("diag_demo_kind")
        unregister_test("diag_no_design")
    assert D.design_for(get_kind("correlation")) is D.DESIGNS["correlation"]


def test_relative_equivalence_holds_alpha_at_the_bound_and_detects_no_change():
    import xarray as xr

    rng = np.random.default_rng(11)
    base_values = rng.uniform(1.0, 2.0, size=(1, 12, 8))
    coords = {"layer": np.arange(12), "head": np.arange(8)}
    base = xr.DataArray(base_values, dims=("model", "layer", "head"), coords={"model": ["b"], **coords})
    # tuned: 5 % larger, log-noise sd 0.002 against a relative bound of 1 %
    tuned = xr.DataArray(base_values * 1.05 * np.exp(0.002 * rng.normal(size=base_values.shape)),
                         dims=("model", "layer", "head"), coords={"model": ["t"], **coords})
    spec = HypothesisSpec(id="E2", claim="c", source="s", datasets=("synth",),
                          selection={"base": Select("ov_norm", step="last", models=("b",)),
                                     "tuned": Select("ov_norm", step="last", models=("t",))},
                          test="tost_relative", prediction=Prediction("equivalent", bound=0.01),
                          gate="report")
    settings = D.Settings(n_sims=40, seed=2)
    diag = D.diagnose_arrays(spec, {"base": base, "tuned": tuned}, settings)
    lo, hi = binomial_band(settings.n_sims, 0.05)
    assert diag["fpr"] <= hi, diag  # at the bound; the real 5 % change would never be "supported"
    assert diag["power"] >= 0.9, diag  # se of the mean log ratio about 0.002 / sqrt(96)
    assert diag["type_s"] is None


def test_a_plant_refused_in_any_simulation_gives_no_power(monkeypatch):
    """Power from the simulations before a refusal would be that of a selected subset of
    nulls: a plant refused once leaves power, coverage and type S null, with the reason."""
    spec = correlation_spec(-0.6)
    cube = synth_cube()
    from lie_stats.spec import select

    arrays = {role: select(sel, cube) for role, sel in spec.selection.items()}
    real = D.design_for(spec.kind)
    calls = []

    def plant(arrays, spec, rng):
        calls.append(1)
        if len(calls) == 3:
            raise D.NotPlantable("this null draw cannot carry the effect")
        return real.plant(arrays, spec, rng)

    monkeypatch.setitem(D.DESIGNS, "correlation", D.Design(
        null=real.null, plant=plant, null_value=real.null_value, what="refuses once"))
    diag = D.diagnose_arrays(spec, arrays, D.Settings(n_sims=5, n_perm=19, n_boot=19))
    assert diag["fpr"] is not None
    assert diag["power"] is None and diag["coverage"] is None and diag["type_s"] is None, diag
    assert diag["reason"] == ("no planted effect (refused in simulation 3 of 5): this null draw "
                              "cannot carry the effect")


def test_a_kind_that_runs_other_kinds_is_fingerprinted_with_all_of_them(monkeypatch):
    """A cached verdict_agreement diagnosis must go stale when its target's design or rule
    changes: its fingerprint covers every kind, statistic and design module."""
    import importlib
    import inspect

    before = D.code_fingerprint("verdict_agreement")
    correlation = D.code_fingerprint("correlation")
    enrichment = importlib.import_module("lie_stats.spec.kinds.trend.design")
    source = inspect.getsource(enrichment)
    monkeypatch.setattr(inspect, "getsource", lambda m, _real=inspect.getsource: (
        source + "\nCHANGED = 1" if m is enrichment else _real(m)))
    assert D.code_fingerprint("verdict_agreement") != before
    assert D.code_fingerprint("correlation") == correlation  # a kind that runs only its own


def test_the_fingerprint_names_the_modules_of_the_kinds_folder():
    """A kind's fingerprint covers its folder (binding, design) and the design building
    blocks, not another family's folder; a kind that runs other kinds covers every folder's
    binding and design (the subfolders walked, not just the top-level modules)."""
    from lie_stats.spec.kinds import DESIGN_HOMES
    from lie_stats.spec.kinds import FAMILY_MODULES

    names = D.fingerprint_modules("boundary_ratio")
    assert {"lie_stats.spec.kinds.trend", "lie_stats.spec.kinds.trend.design",
            "lie_stats.spec.simulate", "lie_stats.spec.simulate.layers",
            "lie_stats.spec.verdict"} <= names  # where binding and rule run, for every kind
    assert not any(n.startswith("lie_stats.spec.kinds.pairwise") for n in names)
    # a design built only from building blocks: its folder's design module still decides
    # which role is permuted
    assert "lie_stats.spec.kinds.groups.design" in D.fingerprint_modules("group_difference")
    every = D.fingerprint_modules("verdict_agreement")
    assert set(DESIGN_HOMES.values()) | set(FAMILY_MODULES) <= every
    assert len(set(DESIGN_HOMES.values())) == len(FAMILY_MODULES)  # every family has its design


def test_jobs_give_the_same_figures_and_order_as_one_process(root, tmp_path):
    """Results diagnosed in worker processes: the same figures (every simulation draws from
    its own seed), in the declarations' order, written to the same cache."""
    import sys

    hyp = tmp_path / "hyp_jobs"
    hyp.mkdir()
    for i, rho in enumerate((-0.5, -0.3, -0.1)):
        (hyp / f"diag_jobs{i}.py").write_text(
            "from lie_stats.spec import HypothesisSpec, Prediction, Select\n"
            f"J{i} = HypothesisSpec(id='J{i}', claim='c', source='s', datasets=('synth',),\n"
            "    selection={'x': Select('head_contribution', step='first'),\n"
            "               'y': Select('change_from_init')},\n"
            "    test='correlation', params={'n_perm': 99, 'n_boot': 50},\n"
            f"    prediction=Prediction('negative'), reference={{'rho': {rho}}}, gate='report')\n",
            encoding="utf-8")
        sys.modules.pop(f"diag_jobs{i}", None)
    decls = collect([hyp], datasets_dir=root, dirs=None).declarations
    settings = D.Settings(n_sims=4, n_perm=19, n_boot=19)
    serial = D.diagnose_declarations(decls, datasets_dir=root, settings=settings)
    (hyp / D.DIAGNOSIS_FILE).unlink()
    parallel = D.diagnose_declarations(decls, datasets_dir=root, settings=settings, jobs=2)
    assert [d.key for d in parallel] == [d.key for d in serial] == ["J0::synth", "J1::synth", "J2::synth"]
    assert [d.diagnosis for d in parallel] == [d.diagnosis for d in serial]
    assert sorted(D.read_cache(hyp / D.DIAGNOSIS_FILE)) == ["J0::synth", "J1::synth", "J2::synth"]
    with pytest.raises(LieStatsError, match="jobs must be a positive integer"):
        D.diagnose_declarations(decls, datasets_dir=root, settings=settings, jobs=0)


def test_a_simulation_is_decided_with_the_declared_magnitude_as_the_main_analysis_is():
    """Power is the share of planted simulations the main analysis would call supported: a
    supported direction whose interval lies outside the declared band counts as refuted,
    except on a dataset the band excludes (not_on)."""
    from lie_stats.spec import Magnitude, select

    small = Magnitude(reference=-0.03, low=-0.04, high=-0.02, scale="absolute",
                      justification="a band the planted rho -0.6 lies far outside",
                      not_on={"elsewhere": "not comparable there"})
    spec = HypothesisSpec(**planted_fields(reference={"rho": -0.6}, datasets=("synth", "elsewhere"),
                                           prediction=Prediction("negative", magnitude=small)))
    cube = synth_cube()
    arrays = {role: select(sel, cube) for role, sel in spec.selection.items()}
    settings = D.Settings(n_sims=10, n_perm=99, n_boot=49)
    outside = D.diagnose_arrays(spec, arrays, settings, dataset="synth")
    assert outside["power"] == 0.0 and outside["refuted_planted"] >= 0.9, outside
    excluded = D.diagnose_arrays(spec, arrays, settings, dataset="elsewhere")
    assert excluded["power"] >= 0.9, excluded  # the direction alone decides there


def test_a_statistic_imported_as_a_module_is_in_its_kinds_fingerprint(monkeypatch):
    """iut_equivalence reaches its statistic as ``stats.intersection as iut`` (a module, not a
    function): a change there must make the kind's cached diagnoses stale."""
    import importlib
    import inspect

    before = D.code_fingerprint("iut_equivalence")
    stat = importlib.import_module("lie_stats.stats.intersection")
    monkeypatch.setattr(inspect, "getsource", lambda m, _real=inspect.getsource: (
        _real(m) + "\nCHANGED = 1" if m is stat else _real(m)))
    assert D.code_fingerprint("iut_equivalence") != before


def test_the_fingerprint_follows_behaviour_not_documentation(monkeypatch):
    """A docstring or comment edit keeps a kind's cached diagnoses; a changed rule does not;
    the size rule (spec.magnitude) counts only for specs that declare a size."""
    import importlib
    import inspect

    rules = importlib.import_module("lie_stats.spec.kinds.correlation")
    magnitude = importlib.import_module("lie_stats.spec.magnitude")
    before = D.code_fingerprint("correlation")
    sized = D.code_fingerprint("correlation", magnitude=True)
    assert sized != before
    real = inspect.getsource

    def edited(text):
        monkeypatch.setattr(inspect, "getsource", lambda m: text(real(m)) if m is rules else real(m))

    edited(lambda src: src.replace('"""', '"""Reworded. ', 1) + "\n# a comment\n")
    assert D.code_fingerprint("correlation") == before
    edited(lambda src: src + "\nALPHA_SHIFT = 0.01\n")
    assert D.code_fingerprint("correlation") != before
    monkeypatch.setattr(inspect, "getsource", lambda m: real(m) + "\nX = 1\n" if m is magnitude else real(m))
    assert D.code_fingerprint("correlation") == before  # no size declared: not part of its rule
    assert D.code_fingerprint("correlation", magnitude=True) != sized


def test_a_malformed_cache_is_a_named_error_before_or_after_parsing(tmp_path):
    """diagnosis.json is bounded before parsing and type-checked after, field by field; its
    cache code is not part of any fingerprint, so this handling leaves cached figures valid."""
    cache = tmp_path / "diagnosis.json"
    cache.write_text('{"entries": ' * 5000)
    with pytest.raises(LieStatsError, match=r"diagnosis.json: JSON nested 5000 levels deep; expected at most"):
        D.read_cache(cache)
    good = {"spec_hash": "h", "cubes": {}, "settings": {}, "code": "c",
            "diagnosis": dict.fromkeys(D.DIAGNOSIS_FIELDS)}
    cache.write_text(json.dumps({"format": D.CACHE_FORMAT, "entries": {"X::d": {**good, "settings": [1]}}}))
    with pytest.raises(LieStatsError, match=r"entry 'X::d', field 'settings': expected dict, got list"):
        D.read_cache(cache)
    bad_figure = {**good, "diagnosis": {**good["diagnosis"], "fpr": "0.05"}}
    cache.write_text(json.dumps({"format": D.CACHE_FORMAT, "entries": {"X::d": bad_figure}}))
    with pytest.raises(LieStatsError, match=r"field 'diagnosis.fpr': expected a number or null, got str"):
        D.read_cache(cache)
    cache.write_text(json.dumps({"format": D.CACHE_FORMAT, "entries": {"X::d": good}}))
    assert D.read_cache(cache) == {"X::d": good}
    cache.unlink()
    cache.mkdir()
    with pytest.raises(LieStatsError, match=r"diagnosis.json: .*folder"):
        D.read_cache(cache)
    assert "read_cache" not in D.SIMULATION
