"""The engine of a hypothesis run (lie_stats.engine) and the shells over it.

``lie-stats run`` (through the pytest plugin), ``lie-stats export`` and ``lie_stats.run``
go through one engine, so the same result carries the same verdict, diagnosis and
multiplicity whichever shell wrote it; results are immutable values; a run's results are a
table with one tidy row per result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import netCDF4
import pytest

import lie_stats as ls
from lie_stats.spec import Result
from tests._spec_cubes import make_datasets

# two results in one family (B5), so the family's adjusted p differs from the raw one
MODULE = '''
from lie_stats.spec import HypothesisSpec, Prediction, Select

REP = HypothesisSpec(
    id="B5", claim="contribution predicts change", source="essay", datasets=("synth",),
    test="correlation", selection={"x": Select("head_contribution", step="first"),
                                   "y": Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=Prediction("negative"),
    reference={"rho": -0.274, "n": 96}, gate="report")
NULL = HypothesisSpec(
    id="B5-null", claim="ov_norm predicts change", source="essay", datasets=("synth", "absent"),
    test="correlation", selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=Prediction("negative"),
    reference={"rho": -0.274, "n": 96}, gate="report")
'''


def cli(*args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "lie_stats", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder: datasets, one hypothesis module, and its diagnosis cache."""
    root = tmp_path_factory.mktemp("project")
    make_datasets(root / "datasets")
    (root / "hyp").mkdir()
    (root / "hyp" / "engine_claims.py").write_text(textwrap.dedent(MODULE))
    proc = cli("diagnose", "hyp", "--datasets", "datasets", "--n-sims", "20", cwd=root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (root / "hyp" / "diagnosis.json").is_file()
    return root


def test_an_export_row_and_a_results_json_row_agree_on_verdict_diagnosis_and_multiplicity(project):
    ran = cli("run", "hyp", "--datasets", "datasets", "--reports", "reports", "--update-verdicts",
              cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    rows = {(r["id"], r["dataset"]): r for r in json.loads((project / "reports" / "results.json").read_text())}
    exported = cli("export", "hyp", "--datasets", "datasets", "-o", "exp", cwd=project)
    assert exported.returncode == 0, exported.stdout[-3000:] + exported.stderr[-3000:]
    index = json.loads((project / "exp" / "index.json").read_text())["exports"]
    files = [e for e in index if e["file"]]
    assert sorted((e["id"], e["dataset"]) for e in files) == [("B5", "synth"), ("B5-null", "synth")]
    for entry in files:
        row = rows[(entry["id"], entry["dataset"])]
        with netCDF4.Dataset(project / "exp" / entry["file"]) as nc:
            attrs = {k: nc.getncattr(k) for k in nc.ncattrs()}
        assert attrs["verdict"] == row["verdict"] == entry["verdict"]
        diagnosis = json.loads(attrs["diagnosis"])
        assert diagnosis == row["diagnosis"]
        assert diagnosis["n_sims"] == 20 and diagnosis["fpr"] is not None  # a real diagnosis, from the cache
        assert json.loads(attrs["multiplicity"]) == row["multiplicity"]
        assert attrs["p_holm"] == pytest.approx(row["p_holm"], rel=1e-9)
    holm = [rows[("B5", "synth")]["p_holm"], rows[("B5-null", "synth")]["p_holm"]]
    raw = [rows[("B5", "synth")]["p_value"], rows[("B5-null", "synth")]["p_value"]]
    assert holm != raw  # the family of two adjusts


def test_run_returns_a_table_with_one_tidy_row_per_result(project):
    table = ls.run([project / "hyp"], datasets_dir=project / "datasets")
    assert isinstance(table, ls.ResultsTable)
    assert [r.key for r in table] == ["B5::synth", "B5-null::absent", "B5-null::synth"]
    frame = table.to_dataframe()
    assert len(frame) == len(table) == 3
    assert list(frame.columns[:3]) == ["id", "dataset", "verdict"]
    assert {"p_holm", "decided_by", "fpr", "diagnosis", "multiplicity"} <= set(frame.columns)
    by_key = frame.set_index(["id", "dataset"])
    assert by_key.loc[("B5-null", "absent"), "verdict"] == "skipped"
    assert by_key.loc[("B5", "synth"), "fpr"] == table["B5::synth"].diagnosis["fpr"]
    from lie_stats.report import stable_numbers

    assert json.loads(table.to_json()) == stable_numbers(table.records())  # as results.json holds them
    with pytest.raises(KeyError, match="B5::synth"):
        table["B5::synht"]


def test_the_table_shell_and_the_pytest_shell_give_the_same_rows(project, tmp_path):
    ran = cli("run", "hyp", "--datasets", "datasets", "--reports", str(tmp_path / "r"), cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    via_pytest = {(r["id"], r["dataset"]): r for r in json.loads((tmp_path / "r" / "results.json").read_text())}
    table = ls.run([project / "hyp"], datasets_dir=project / "datasets")
    from lie_stats.report import stable_numbers

    for rec in stable_numbers(table.records()):
        other = via_pytest[(rec["id"], rec["dataset"])]
        for name in ("verdict", "reason", "p_value", "effect", "multiplicity", "diagnosis", "magnitude",
                     "finding", "outcome", "spec_curve"):
            assert rec[name] == other[name], name


def test_a_result_is_immutable_and_each_stage_makes_a_new_one():
    r = Result(id="X1", claim="c", source="s", dataset="d", verdict="refuted", reason="r",
               gate="pinned", test="correlation", spec_hash="ab" * 32, reference={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.verdict = "supported"
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.diagnosis = {}
    from lie_stats import gates

    gated = gates.check(r, {"verdict": "refuted", "spec_hash": "ab" * 32}).annotate(r)
    assert (gated.outcome, gated.pinned_verdict) == ("passed", "refuted")
    assert (r.outcome, r.pinned_verdict) == ("", None)


def test_the_public_api_lists_only_its_names():
    names = dir(ls)
    assert {"run", "ResultsTable", "Magnitude", "extract", "evaluate"} <= set(names)
    assert not {"annotations", "importlib", "Any"} & set(names)
    assert ls.Magnitude is ls.spec.Magnitude


def test_a_run_opens_each_cube_once_in_its_own_cache_and_its_export_reads_the_same_cube(project, monkeypatch):
    from lie_stats import datasets

    opened = []
    real = datasets._open_cubes
    monkeypatch.setattr(datasets, "_open_cubes", lambda paths, **kw: opened.append(tuple(paths)) or real(paths, **kw))
    table = ls.run([project / "hyp"], datasets_dir=project / "datasets")
    assert len(opened) == 1 and len(table.cubes) == 1  # two specs on "synth": one open, kept
    card = datasets.find_dataset("synth", project / "datasets")
    assert datasets.card_cubes(card, table.cubes) is table.cubes.cube(card)  # what the export reads
    assert len(opened) == 1
    again = ls.run([project / "hyp"], datasets_dir=project / "datasets")
    assert len(opened) == 2 and again.cubes is not table.cubes  # no state shared between runs


def test_the_cube_cache_reopens_a_rebuilt_file_and_holds_at_most_its_size(tmp_path):
    import numpy as np
    import xarray as xr

    from lie_stats import datasets

    root = tmp_path / "datasets"
    make_datasets(root)
    card = datasets.find_dataset("synth", root)
    cache = datasets.CubeCache(size=1)
    first = cache.cube(card)
    assert cache.cube(card) is first
    path = card.cubes[0]
    ds = xr.load_dataset(path)
    ds.to_netcdf(tmp_path / "copy.nc")
    later = path.stat().st_mtime_ns + 10**9
    os.replace(tmp_path / "copy.nc", path)  # rebuilt
    os.utime(path, ns=(later, later))  # a later mtime even on a coarse clock
    rebuilt = cache.cube(card)
    assert rebuilt is not first and len(cache) == 1  # the old entry dropped: size 1
    np.testing.assert_array_equal(rebuilt[list(rebuilt.data_vars)[0]].values,
                                  first[list(first.data_vars)[0]].values)
    with pytest.raises(ValueError, match="CubeCache size"):
        datasets.CubeCache(size=0)


def test_a_run_of_part_of_a_module_takes_its_report_sections_as_the_pytest_shell_does(project, tmp_path):
    import shutil

    hyp = tmp_path / "hyp_sections"
    hyp.mkdir()
    shutil.copy(project / "hyp" / "engine_claims.py", hyp / "engine_sections.py")
    with open(hyp / "engine_sections.py", "a") as f:
        f.write(textwrap.dedent('''
            from lie_stats.report import ReportSection

            REPORT_SECTIONS = (ReportSection("E1", lambda results, *a: "## E1\\n"),)
        '''))
    whole = ls.run([hyp], datasets_dir=project / "datasets")
    part = ls.run([f"{hyp / 'engine_sections.py'}::B5"], datasets_dir=project / "datasets")
    assert [r.id for r in part] == ["B5"] and len(whole) == 3
    assert [s.name for s in part.sections] == [s.name for s in whole.sections] == ["E1"]
