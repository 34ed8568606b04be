"""Nothing of the user's is lost: real files, the CLI in-process and as a real process.

- ``lie-stats extract ... -o EXISTING_CUBE`` (of any model) never replaces it without
  ``--force``; ``--resume`` replaces it only when this run extracts every checkpoint it holds;
- a second ``lie-stats export`` into the same folder keeps the first one's files (merge);
- a failed extraction (exit 2) leaves no shard store it created, unless ``--keep-shards``;
- a folder, a FIFO or a path too long where a weights file, a ``config.json`` or a source
  belongs is named as such (a FIFO is never opened), not reported as "not found".
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.extraction.pipeline import shard_dir

from tests._spec_cubes import make_datasets

from .._checkpoints import make_checkpoint
from ._run_helpers import lie, spec_text, write_module

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]


def _extract(capsys, *args) -> tuple[int, str]:
    code = cli.main(["extract", *map(str, args)])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("lost")
    return {name: make_checkpoint("gpt2", root / name, seed=seed, head=False, n_layers=1)
            for name, seed in (("alpha", 1), ("beta", 2))}


# ---------------------------------------------------------------------------- an existing cube
def test_a_cube_of_another_model_is_never_replaced_without_force(models, tmp_path, capsys):
    out = tmp_path / "c.nc"
    assert _extract(capsys, models["alpha"], "-o", out, *FAST)[0] == cli.EXIT_OK
    before = out.read_bytes()
    code, err = _extract(capsys, models["beta"], "-o", out, *FAST)
    assert code == cli.EXIT_USAGE, err
    assert f"{out}: a cube is already there (1 checkpoint(s): alpha@0)" in err and "--force" in err, err
    code, err = _extract(capsys, models["beta"], "-o", out, *FAST, "--resume")
    assert code == cli.EXIT_USAGE, err
    assert "holds checkpoint(s) this run does not extract (alpha@0)" in err and "--force" in err, err
    assert out.read_bytes() == before and not shard_dir(out).exists()
    code, err = _extract(capsys, models["beta"], "-o", out, *FAST, "--force")
    assert code == cli.EXIT_OK, err
    assert [r["model"] for r in provenance_of(open_cube(out))] == ["beta"]


def test_a_cube_whose_provenance_cannot_be_read_is_not_replaced_by_resume(models, tmp_path, capsys):
    import netCDF4

    out = tmp_path / "c.nc"
    assert _extract(capsys, models["alpha"], "-o", out, *FAST)[0] == cli.EXIT_OK
    with netCDF4.Dataset(out, "a") as nc:
        nc.setncattr("provenance", "{not json")
    before = out.read_bytes()
    code, err = _extract(capsys, models["alpha"], "-o", out, *FAST, "--resume")
    assert code == cli.EXIT_USAGE, err
    assert "its provenance cannot be read" in err and "--force" in err, err
    assert out.read_bytes() == before


def test_resume_over_the_same_checkpoints_and_more_replaces_it(models, tmp_path, capsys):
    out = tmp_path / "c.nc"
    assert _extract(capsys, models["alpha"], "-o", out, *FAST)[0] == cli.EXIT_OK
    code, err = _extract(capsys, models["alpha"], models["beta"], "-o", out, *FAST, "--resume")
    assert code == cli.EXIT_OK, err
    assert sorted(open_cube(out)[schema.MODEL].values.tolist()) == ["alpha", "beta"]


# ---------------------------------------------------------------------------- the shard store
@pytest.mark.parametrize("keep", [False, True])
def test_a_failed_extraction_leaves_no_store_it_created(models, tmp_path, capsys, keep):
    folder = shutil.copytree(models["alpha"], tmp_path / "broken")
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    out = tmp_path / "c.nc"
    code, err = _extract(capsys, folder, "-o", out, *FAST, *(["--keep-shards"] if keep else []))
    assert code == cli.EXIT_USAGE, err
    assert "No checkpoint could be extracted" in err and not out.exists()
    assert shard_dir(out).exists() == keep
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["broken"] + ([shard_dir(out).name] if keep else []))


def test_a_failed_resume_keeps_the_store_it_found(models, tmp_path, capsys):
    store = shard_dir(tmp_path / "c.nc")
    store.mkdir()
    (store / "notes.txt").write_text("the user's, or an earlier run's")
    folder = shutil.copytree(models["alpha"], tmp_path / "broken")
    (folder / "model.safetensors").write_bytes(b"\0" * 16)
    code, err = _extract(capsys, folder, "-o", tmp_path / "c.nc", *FAST, "--resume")
    assert code == cli.EXIT_USAGE, err
    assert (store / "notes.txt").read_text() == "the user's, or an earlier run's"


# ---------------------------------------------------------------------------- path kinds
def _fifo(path: pathlib.Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _folder(path: pathlib.Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
@pytest.mark.parametrize("kind, make, said", [("fifo", _fifo, "a FIFO (named pipe), not a regular file"),
                                              ("folder", _folder, "a folder, not a regular file")])
def test_a_fifo_or_folder_where_a_file_belongs_is_named(models, tmp_path, name, kind, make, said):
    """As a real process with a timeout: opening a FIFO would block for ever."""
    run = tmp_path / "run"
    shutil.copytree(models["alpha"], run / "step_0")
    make(run / "step_0" / name)
    out = tmp_path / "c.nc"
    done = lie("extract", run, "-o", out, *FAST, cwd=tmp_path, timeout=120)
    assert done.returncode == cli.EXIT_USAGE, done.stderr
    assert f"{run / 'step_0' / name}: {said}" in done.stderr, done.stderr
    assert "file not found" not in done.stderr and "missing" not in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_path_too_long_for_the_file_system_is_named(models, tmp_path, capsys):
    long = tmp_path / ("x" * 300)
    code, err = _extract(capsys, long, "-o", tmp_path / "c.nc", *FAST)
    assert code == cli.EXIT_USAGE, err
    assert f"{long}: a path too long for the file system (a name of 300 bytes" in err, err
    code, err = _extract(capsys, models["alpha"], "-o", long / "c.nc", *FAST)
    assert code == cli.EXIT_USAGE, err
    assert f"its folder {long} is a path too long for the file system" in err, err
    assert cli.main(["info", str(long)]) == cli.EXIT_USAGE
    assert "a path too long for the file system" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- export
@pytest.mark.slow
def test_a_second_export_into_the_same_folder_keeps_the_first_ones_files(tmp_path):
    datasets = make_datasets(tmp_path / "datasets")
    write_module(tmp_path / "first", "M1_claim", spec_text("M1", "M1"))
    write_module(tmp_path / "second", "S1_claim", spec_text())
    out = tmp_path / "out"
    for folder in ("first", "second"):
        done = lie("export", folder, "--datasets", datasets, "-o", out, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        if folder == "first":
            first = (out / "M1__synth.nc").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["M1__synth.nc", "S1__synth.nc", "index.json"]
    assert (out / "M1__synth.nc").read_bytes() == first
    index = json.loads((out / "index.json").read_text())["exports"]
    assert [(e["id"], e["file"]) for e in index] == [("M1", "M1__synth.nc"), ("S1", "S1__synth.nc")]
