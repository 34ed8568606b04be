"""`--resume` after a checkpoint's files changed: the stale shard is not reused.

Shards are named by a hash of the checkpoint's files and its run's first checkpoint's
(``change_from_init`` depends on both). Real files: a run is interrupted (a shard store is
left, as after Ctrl-C), a checkpoint is rewritten with other weights, and ``--resume`` must
give the cube an uninterrupted run over the new files gives, with provenance hashes that
match the files on disk. A store from the earlier key scheme is refused.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
import xarray as xr

from lie_stats import cli, schema
from lie_stats._io import file_sha256
from lie_stats.cube import open_cube, provenance_of
from lie_stats.extraction.pipeline import ExtractOptions, extract, plan_tasks, shard_dir

from .._checkpoints import make_checkpoint, make_run

OPTIONS = ExtractOptions(families=("Q", "OV"))


@pytest.fixture
def run(tmp_path) -> pathlib.Path:
    root = tmp_path / "run"
    make_run(root, "gpt2", [0, 10, 20], head=False, n_layers=1)
    return root


def _interrupted(run: pathlib.Path, out: pathlib.Path) -> None:
    """A store of finished shards and no cube, as an interrupted run leaves it."""
    extract([str(run)], out, options=OPTIONS, progress=False, keep_shards=True)
    out.unlink()


def _comparable(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in (schema.ATTR_CREATED, schema.ATTR_PROVENANCE)}
    return ds


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "timing"} for r in records]


@pytest.mark.parametrize("changed", ["step_10", "step_0"])
def test_resume_after_a_checkpoint_changed_redoes_it(run, tmp_path, changed):
    """step_10 rewritten: its shard is redone. step_0 (the init) rewritten: every shard of the
    run is redone, since change_from_init is measured from it."""
    out = tmp_path / "r.nc"
    _interrupted(run, out)
    old_keys = {t.label: t.key for t in plan_tasks([str(run)])}
    shutil.rmtree(run / changed)
    make_checkpoint("gpt2", run / changed, seed=99, head=False, n_layers=1)
    new_keys = {t.label: t.key for t in plan_tasks([str(run)])}
    redone = {label for label in new_keys if new_keys[label] != old_keys[label]}
    assert redone == ({"run@10"} if changed == "step_10" else {"run@0", "run@10", "run@20"})

    resumed, failed = extract([str(run)], out, options=OPTIONS, resume=True, progress=False)
    assert failed == []
    fresh_out = tmp_path / "fresh.nc"
    fresh, _ = extract([str(run)], fresh_out, options=OPTIONS, progress=False)
    xr.testing.assert_identical(_comparable(open_cube(out)), _comparable(open_cube(fresh_out)))
    assert _strip(provenance_of(resumed)) == _strip(provenance_of(fresh))
    for record in provenance_of(resumed):  # the provenance hashes are the files on disk
        folder = pathlib.Path(record["path"])
        for name, sha in record["files"].items():
            assert file_sha256(folder / name) == sha, (folder / name)


def test_the_key_is_not_in_the_cube(run, tmp_path):
    """Shard keys name shard files only: a cube's variables and provenance do not hold them."""
    out = tmp_path / "k.nc"
    cube, _ = extract([str(run)], out, options=OPTIONS, progress=False)
    keys = [t.key for t in plan_tasks([str(run)])]
    text = out.read_bytes()
    assert not any(k.encode() in text for k in keys)
    assert not any(k in json.dumps(provenance_of(cube)) for k in keys)


def test_a_store_of_the_earlier_key_scheme_is_refused(run, tmp_path, capsys):
    out = tmp_path / "old.nc"
    _interrupted(run, out)
    (shard_dir(out) / "shard_keys.json").unlink()  # what an earlier lie_stats left
    code = cli.main(["extract", str(run), "-o", str(out), "--families", "Q,OV", "--quiet", "--resume"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert "do not include the hashes of the checkpoints' files" in err, err
    assert "Remove the folder and rerun without --resume" in err and str(shard_dir(out)) in err
    assert not out.exists()


def test_an_unchanged_run_resumes_without_redoing_a_shard(run, tmp_path):
    out = tmp_path / "u.nc"
    _interrupted(run, out)
    store = shard_dir(out)
    mtimes = {p: p.stat().st_mtime_ns for p in store.glob("*.nc")}
    assert len(mtimes) == 3
    extract([str(run)], out, options=OPTIONS, resume=True, progress=False, keep_shards=True)
    assert {p: p.stat().st_mtime_ns for p in store.glob("*.nc")} == mtimes
    np.testing.assert_array_equal(open_cube(out)["ov_norm"].values.shape, (1, 3, 1, 4))
