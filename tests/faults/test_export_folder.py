"""``lie-stats export`` into a folder that holds what it did not write, as a real process: an
unrelated index.json, an index entry outside the folder, a file of an exported name that no
index listed; and a folder of hypothesis modules not named ``hypotheses``."""

from __future__ import annotations

import json

import pytest

from tests._spec_cubes import make_datasets

from ._run_helpers import lie, spec_text, write_module

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


@pytest.fixture
def claims(tmp_path):
    write_module(tmp_path / "shared claims", "S1_claim", spec_text())
    return "shared claims"


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_export_collects_any_folder_and_writes_its_index(tmp_path, datasets, claims):
    res = lie("export", claims, "--datasets", datasets, "-o", tmp_path / "out", cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert [e["file"] for e in index["exports"]] == ["S1__synth.nc"]
    # a second export over its own index replaces it
    res = lie("export", claims, "--datasets", datasets, "-o", tmp_path / "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]


def test_an_unrelated_index_json_is_never_overwritten(tmp_path, datasets, claims):
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.json").write_text('{"pages": ["home", "about"]}\n')
    before = snapshot(out)
    res = lie("export", claims, "--datasets", datasets, "-o", out, cwd=tmp_path)
    assert res.returncode == 2, res.stdout[-3000:] + res.stderr[-3000:]
    assert "was not written by lie-stats export" in res.stderr and "Traceback" not in res.stderr
    assert snapshot(out) == before


@pytest.mark.parametrize("name", ["..", "../outside.nc", "/etc/passwd", "sub/x.nc"])
def test_an_index_entry_outside_the_folder_is_refused_before_anything_moves(tmp_path, datasets, claims, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.json").write_text(json.dumps({"lie_stats_version": "0", "created": "x", "exports": [
        {"id": "OLD", "dataset": "synth", "file": name}]}))
    (tmp_path / "outside.nc").write_text("not ours")
    before, beside = snapshot(out), (tmp_path / "outside.nc").read_bytes()
    res = lie("export", claims, "--datasets", datasets, "-o", out, cwd=tmp_path)
    assert res.returncode == 2, res.stdout[-3000:] + res.stderr[-3000:]
    assert "is not a plain file name of" in res.stderr and "Nothing was written or moved" in res.stderr
    assert snapshot(out) == before and (tmp_path / "outside.nc").read_bytes() == beside


def test_a_file_no_earlier_export_listed_is_not_replaced(tmp_path, datasets, claims):
    out = tmp_path / "out"
    out.mkdir()
    (out / "S1__synth.nc").write_text("a collaborator's own file")
    res = lie("export", claims, "--datasets", datasets, "-o", out, cwd=tmp_path)
    assert res.returncode == 2, res.stdout[-3000:] + res.stderr[-3000:]
    assert "no earlier lie-stats export listed it" in res.stderr
    assert (out / "S1__synth.nc").read_text() == "a collaborator's own file"
    assert sorted(p.name for p in out.iterdir()) == ["S1__synth.nc"]  # no index, no staging left
