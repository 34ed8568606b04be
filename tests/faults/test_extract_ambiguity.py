"""Ambiguity is said, not silently resolved: real folders, real shard stores, the CLI in-process.

- a folder holding both ``model.safetensors`` and ``pytorch_model.bin``: refused naming both
  when they disagree on a tensor read; extracted (both files in the provenance) when they agree;
- folders named like steps but not steps (``step_-1``, ``step_abc``) beside ``step_N``: a
  notice, and the cube's provenance lists them;
- ``--resume`` with other ``--families``, ``--null-draws`` or ``--fold-ln``: the shards made
  with the old options are redone, the others kept, and a notice says which and why;
- a shard of the store that lost a variable (or is unreadable): redone, with a notice naming
  the file and the variable, instead of a hole of NaN in the cube (a shard of an earlier
  lie_stats, which did not record its variables, is compared with the other shards).
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
import torch
import xarray as xr
from safetensors.torch import load_file

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.extraction.pipeline import shard_dir

from .._checkpoints import make_checkpoint, make_run

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]


def _extract(capsys, *args) -> tuple[int, str]:
    code = cli.main(["extract", *map(str, args)])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> pathlib.Path:
    return make_checkpoint("gpt2", tmp_path_factory.mktemp("amb") / "model", seed=5, head=False, n_layers=1)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("ambrun") / "run"
    make_run(root, "gpt2", [0, 10], head=False, n_layers=1)
    return root


# ---------------------------------------------------------------------------- two weight files
@pytest.mark.parametrize("agree", [True, False])
def test_safetensors_and_bin_side_by_side(ckpt, tmp_path, capsys, agree):
    folder = shutil.copytree(ckpt, tmp_path / "both")
    state = load_file(folder / "model.safetensors")
    if not agree:
        state["h.0.attn.c_attn.weight"] = state["h.0.attn.c_attn.weight"] + 0.5
    torch.save(state, folder / "pytorch_model.bin")
    out = tmp_path / "c.nc"
    code, err = _extract(capsys, folder, "-o", out, *FAST)
    if agree:
        assert code == cli.EXIT_OK, err
        (record,) = provenance_of(open_cube(out))
        assert {"model.safetensors", "pytorch_model.bin"} <= set(record["files"])
        return
    assert code == cli.EXIT_USAGE, err
    assert (f"{folder}: holds both model.safetensors and pytorch_model.bin, and they disagree on "
            f"tensor 'h.0.attn.c_attn.weight' (values differ by up to 0.5)") in err, err
    assert "expected one set of weights" in err and not out.exists()


# ---------------------------------------------------------------------------- step-like names
def test_folders_named_like_steps_but_not_steps_are_listed(run, tmp_path, capsys):
    root = shutil.copytree(run, tmp_path / "run")
    for name in ("step_-1", "step_abc"):
        shutil.copytree(run / "step_0", root / name)
    (root / "step_5").write_text("a file, not a folder")
    out = tmp_path / "c.nc"
    code, err = _extract(capsys, root, "-o", out, *FAST)
    assert code == cli.EXIT_OK, err
    assert f"lie-stats extract: notice: {root}: left out of the run" in err, err
    for name in ("step_-1 (not a step number", "step_abc (not a step number", "step_5 (a regular file, not a folder)"):
        assert name in err, err
    ds = open_cube(out)
    assert ds[schema.STEP].values.tolist() == [0, 10]
    for record in provenance_of(ds):
        listed = record["ignored_in_run_folder"]
        assert [n.split(" ")[0] for n in listed] == ["step_-1", "step_5", "step_abc"], listed


# ---------------------------------------------------------------------------- resume, options
@pytest.mark.parametrize("change, said", [
    (["--families", "Q,K"], "families Q -> Q,K"),
    (["--families", "Q", "--null-draws", "65"], "null_draws 64 -> 65"),
    (["--families", "Q", "--fold-ln"], "fold_ln false -> true"),
])
def test_resume_with_other_options_redoes_their_shards_and_says_so(run, tmp_path, capsys, change, said):
    out = tmp_path / "c.nc"
    code, err = _extract(capsys, run, "-o", out, *FAST, "--keep-shards")
    assert code == cli.EXIT_OK, err
    store = shard_dir(out)
    (kept_shard,) = [p for p in store.glob("*.nc") if provenance_of(open_cube(p))[0]["step"] == 10]
    kept_shard.unlink()  # as if interrupted: step 10 not done yet
    base = ["--null-draws", "64", "--quiet"]
    code, err = _extract(capsys, run, "-o", out, *base, *change, "--resume")
    assert code == cli.EXIT_OK, err
    assert f"1 shard(s) of {store} cannot be kept and are extracted again (0 kept)" in err, err
    assert f"made with other options ({said})" in err, err
    records = provenance_of(open_cube(out))
    wanted = {"--null-draws": ("null_draws", 65), "--fold-ln": ("fold_ln", True)}
    for flag, (key, value) in wanted.items():
        if flag in change:
            assert all(r["options"][key] == value for r in records), records
    if "Q,K" in change:
        assert open_cube(out)[schema.FAMILY].values.tolist() == ["Q", "K"]


def test_resume_over_a_finished_cube_with_other_options_says_so(run, tmp_path, capsys):
    out = tmp_path / "c.nc"
    assert _extract(capsys, run, "-o", out, *FAST)[0] == cli.EXIT_OK
    code, err = _extract(capsys, run, "-o", out, "--families", "O", "--quiet", "--resume")
    assert code == cli.EXIT_OK, err
    assert f"notice: {out} was made with other options (families Q -> O)" in err, err
    assert open_cube(out)[schema.FAMILY].values.tolist() == ["O"]


# ---------------------------------------------------------------------------- damaged shards
def _without_variables_record(shard: pathlib.Path) -> None:
    """As a shard of an earlier lie_stats, which did not record its variables."""
    with xr.open_dataset(shard) as lazy:
        ds = lazy.load()
    (record,) = json.loads(ds.attrs[schema.ATTR_PROVENANCE])
    del record["variables"]
    ds.attrs[schema.ATTR_PROVENANCE] = json.dumps([record])
    shard.unlink()
    ds.to_netcdf(shard)


@pytest.mark.parametrize("damage", ["one_variable", "every_variable", "truncated", "legacy_one_variable"])
def test_a_damaged_shard_is_redone_and_named(run, tmp_path, capsys, damage):
    out = tmp_path / "c.nc"
    assert _extract(capsys, run, "-o", out, *FAST, "--keep-shards")[0] == cli.EXIT_OK
    reference = open_cube(out)
    (shard,) = [p for p in shard_dir(out).glob("*.nc") if provenance_of(open_cube(p))[0]["step"] == 10]
    if damage.startswith("legacy"):
        for p in shard_dir(out).glob("*.nc"):
            _without_variables_record(p)
    if damage == "truncated":
        shard.write_bytes(shard.read_bytes()[:200])
    else:
        with xr.open_dataset(shard) as lazy:
            ds = lazy.load()
        drop = list(ds.data_vars) if damage == "every_variable" else ["commutator"]
        shard.unlink()
        ds.drop_vars(drop).to_netcdf(shard)
    out.unlink()
    code, err = _extract(capsys, run, "-o", out, *FAST, "--resume")
    assert code == cli.EXIT_OK, err
    assert f"1 shard(s) of {shard_dir(out)} cannot be kept and are extracted again (1 kept)" in err, err
    assert str(shard) in err
    if damage.endswith("one_variable"):
        assert "variable(s) 'commutator' missing" in err, err
    elif damage == "truncated":
        assert "unreadable" in err, err
    redone = open_cube(out)
    assert redone[schema.STEP].values.tolist() == [0, 10]
    np.testing.assert_array_equal(redone["commutator"].values, reference["commutator"].values)
    assert np.isfinite(redone["commutator"].sel(step=10).values).any()
    assert json.loads(redone.attrs[schema.ATTR_FAILED]) == []
