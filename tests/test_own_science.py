"""A researcher's own hypotheses, in their own folder, outside the checkout.

From a temporary folder (no ``datasets/``, no ``hypotheses/``, no ini file): plain
``pytest myhyp/`` and ``lie-stats run myhyp/`` collect the same own module and give the same
verdicts, on a bundled dataset (found from any folder) and on an own cube named by its path;
the Python API finds the bundled datasets too; a path that does not exist is a named error.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests._own_project import own_project, run
from tests._spec_cubes import synth_cube

MODULE = '''
import lie_stats as ls

K1 = ls.HypothesisSpec(
    id="K1", claim="initial contribution predicts change", source="my notes",
    datasets=("pico_bos_cpu", "runs/mine.nc"), test="correlation",
    selection={"x": ls.Select("head_contribution", step="first"), "y": ls.Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=ls.Prediction("negative"), gate="report")
'''


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    root = own_project(tmp_path_factory.mktemp("own_project"), "K1_mine", MODULE)
    (root / "myhyp" / "helpers.py").write_text("def HypothesisSpec():\n    return None\n")  # not a module of specs
    return root


def rows(path):
    return {(r["id"], r["dataset"]): r for r in json.loads(path.read_text())}


def test_plain_pytest_and_lie_stats_run_collect_an_own_folder_alike(own):
    py = run("-m", "pytest", "myhyp/", "-p", "no:cacheprovider", "-q", "--lie-reports", "by_pytest", cwd=own)
    assert py.returncode == 0, py.stdout[-3000:] + py.stderr[-3000:]
    assert "2 passed" in py.stdout
    assert "myhyp/K1_mine.py" in run("-m", "pytest", "myhyp/", "-p", "no:cacheprovider", "--collect-only", "-q",
                                     cwd=own).stdout  # named where it lives, not relative to the checkout
    cli = run("-m", "lie_stats", "run", "myhyp/", "--reports", "by_cli", cwd=own)
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    assert not [line for line in cli.stdout.splitlines() if "K1" in line and "../" in line]
    a, b = rows(own / "by_pytest" / "results.json"), rows(own / "by_cli" / "results.json")
    assert sorted(a) == sorted(b) == [("K1", "pico_bos_cpu"), ("K1", "runs/mine.nc")]
    for key in a:
        assert a[key]["verdict"] == b[key]["verdict"] != "skipped"
        assert a[key]["p_value"] == b[key]["p_value"] and a[key]["effect"] == b[key]["effect"]
    mine = synth_cube()
    assert a[("K1", "runs/mine.nc")]["n"] == mine.sizes["model"] * mine.sizes["layer"] * mine.sizes["head"]


def test_the_api_finds_the_bundled_datasets_from_any_folder(own):
    got = run("-c", "import lie_stats as ls; print(dict(ls.load_dataset('pico_bos_cpu').sizes)['model'])", cwd=own)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.strip() == "3"


def test_an_own_cube_path_that_does_not_exist_is_a_named_error(own, tmp_path):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "K2.py").write_text(textwrap.dedent(MODULE).replace('"runs/mine.nc"', '"runs/typo.nc"')
                                          .replace('id="K1"', 'id="K2"'))
    got = run("-m", "pytest", "h/", "-p", "no:cacheprovider", "-q", cwd=tmp_path)
    assert got.returncode == 1
    assert "field 'datasets': Dataset 'runs/typo.nc': the cube file" in got.stdout
    assert "does not exist" in got.stdout
