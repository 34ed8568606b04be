"""What `lie-stats extract` checks before it reads a checkpoint, and what it never overwrites.

Real files and real CLI calls on tiny GPT-2 checkpoints: the output path (an existing text
file or a checkpoint's own ``config.json`` is never replaced without ``--force``; a missing
output folder is an error, not created), options refused before any weight is read (a
checkpoint whose weights are garbage proves that none was), model names (``--name``,
duplicates refused before any work) and the shard store's life (removed after a successful
merge, kept after a failure).
"""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import torch

from lie_stats import cli, schema
from lie_stats.cube import is_cube_file, open_cube
from lie_stats.extraction.pipeline import shard_dir

from .._checkpoints import make_checkpoint, make_run

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> pathlib.Path:
    return make_checkpoint("gpt2", tmp_path_factory.mktemp("opt") / "model", seed=4, head=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("optrun") / "run"
    make_run(root, "gpt2", [0, 10], head=False, n_layers=1)
    return root


@pytest.fixture
def garbage_weights(ckpt, tmp_path) -> pathlib.Path:
    """A checkpoint whose config is good and whose weights are not safetensors at all: any
    check that reads a weight fails with "not a readable safetensors file" instead of the
    option's own error."""
    folder = tmp_path / "garbage"
    folder.mkdir()
    shutil.copy(ckpt / "config.json", folder / "config.json")
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)
    return folder


def _extract(capsys, *args) -> tuple[int, str]:
    code = cli.main(["extract", *map(str, args)])
    return code, capsys.readouterr().err


# ---------------------------------------------------------------------------- output path
def test_a_text_file_at_the_output_is_not_overwritten_without_force(ckpt, tmp_path, capsys):
    notes = tmp_path / "notes.nc"
    notes.write_text("three weeks of notes\n")
    code, err = _extract(capsys, ckpt, "-o", notes, *FAST)
    assert code == cli.EXIT_USAGE, err
    assert f"{notes} exists and is not a lie_stats cube" in err and "--force" in err, err
    assert notes.read_text() == "three weeks of notes\n"
    assert not shard_dir(notes).exists()
    code, err = _extract(capsys, ckpt, "-o", notes, *FAST, "--force")
    assert code == cli.EXIT_OK, err
    assert is_cube_file(notes)


def test_the_checkpoints_own_config_is_not_overwritten(ckpt, tmp_path, capsys):
    folder = shutil.copytree(ckpt, tmp_path / "m")
    before = (folder / "config.json").read_bytes()
    code, err = _extract(capsys, folder, "-o", folder / "config.json", *FAST)
    assert code == cli.EXIT_USAGE and "not a lie_stats cube" in err, err
    assert (folder / "config.json").read_bytes() == before


def test_an_earlier_cube_is_replaced_only_with_force(ckpt, tmp_path, capsys):
    out = tmp_path / "c.nc"
    assert _extract(capsys, ckpt, "-o", out, *FAST)[0] == cli.EXIT_OK
    before = out.read_bytes()
    code, err = _extract(capsys, ckpt, "-o", out, "--families", "O", "--null-draws", "64", "--quiet")
    assert code == cli.EXIT_USAGE, err
    assert f"{out}: a cube is already there" in err and "--force" in err and "--resume" in err, err
    assert out.read_bytes() == before and not shard_dir(out).exists()
    code, err = _extract(capsys, ckpt, "-o", out, "--families", "O", "--null-draws", "64", "--quiet",
                         "--force")
    assert code == cli.EXIT_OK, err
    assert open_cube(out)[schema.FAMILY].values.tolist() == ["O"]


def test_the_cube_check_reads_the_header_only(tmp_path):
    """A cube's header declaring an 18.6 GiB variable: recognised as a cube (and so replaced
    by a new extraction) without a byte of its data being allocated."""
    import resource

    import netCDF4

    path = tmp_path / "big.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.setncatts({"metrics_version": 1, "lie_stats_version": "0", "provenance": "[]"})
        nc.createDimension("a", 50000)
        nc.createDimension("b", 50000)
        nc.createVariable("x", "f8", ("a", "b"), zlib=True)
    assert path.stat().st_size < 100_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert is_cube_file(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB
    text = tmp_path / "t.nc"
    text.write_text("netcdf? no")
    assert not is_cube_file(text) and not is_cube_file(tmp_path / "absent.nc")


def test_a_missing_output_folder_is_an_error_naming_it(ckpt, tmp_path, capsys):
    out = tmp_path / "no_such_dir" / "t.nc"
    code, err = _extract(capsys, ckpt, "-o", out, *FAST)
    assert code == cli.EXIT_USAGE
    assert f"the output folder {out.parent} does not exist" in err, err
    assert not out.parent.exists()


def test_an_output_that_is_a_folder_is_refused(ckpt, tmp_path, capsys):
    code, err = _extract(capsys, ckpt, "-o", tmp_path, *FAST)
    assert code == cli.EXIT_USAGE and f"{tmp_path}: is a folder" in err, err


# ---------------------------------------------------------------------------- options first
@pytest.mark.parametrize("families, hint", [("q,k", "Did you mean 'Q'?"), ("Q,ov", "Did you mean 'OV'?")])
def test_families_get_a_case_insensitive_suggestion(garbage_weights, tmp_path, capsys, families, hint):
    code, err = _extract(capsys, garbage_weights, "-o", tmp_path / "x.nc", "--families", families)
    assert code == cli.EXIT_USAGE and hint in err and "upper case" in err, err


def test_a_projection_wider_than_d_model_is_refused_from_the_config_alone(garbage_weights, tmp_path, capsys):
    code, err = _extract(capsys, garbage_weights, "-o", tmp_path / "x.nc", *FAST, "--projection", "fixed:1000")
    assert code == cli.EXIT_USAGE, err
    assert "K=1000 exceeds d_model=32" in err and str(garbage_weights / "config.json") in err, err
    assert "safetensors" not in err  # no weight was read
    assert not shard_dir(tmp_path / "x.nc").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused_before_reading(garbage_weights, tmp_path, capsys):
    code, err = _extract(capsys, garbage_weights, "-o", tmp_path / "x.nc", *FAST, "--device", "cuda")
    assert code == cli.EXIT_USAGE and err.startswith("lie-stats extract: error: Device 'cuda' asked for"), err
    assert "torch sees no CUDA device" in err and "safetensors" not in err
    assert not shard_dir(tmp_path / "x.nc").exists()  # refused before any work


def test_null_draws_and_a_missing_probe_are_refused_before_reading(garbage_weights, tmp_path, capsys):
    code, err = _extract(capsys, garbage_weights, "-o", tmp_path / "x.nc", "--families", "Q", "--null-draws", "10")
    assert code == cli.EXIT_USAGE and "at least 64" in err, err
    probe = tmp_path / "nope.npz"
    code, err = _extract(capsys, garbage_weights, "-o", tmp_path / "x.nc", *FAST, "--probe", probe)
    assert code == cli.EXIT_USAGE and err.startswith(f"lie-stats extract: error: {probe}: probe file not found"), err
    assert "safetensors" not in err
    assert not shard_dir(tmp_path / "x.nc").exists()  # refused before any work


def test_the_garbage_checkpoint_does_fail_when_its_weights_are_read(garbage_weights, tmp_path, capsys):
    """The control of the tests above: with good options, the weights are read and refused."""
    code, err = _extract(capsys, garbage_weights, "-o", tmp_path / "x.nc", *FAST)
    assert code == cli.EXIT_USAGE and "not a readable safetensors file" in err, err


# ---------------------------------------------------------------------------- model names
def test_two_sources_of_one_name_are_refused_before_any_work(ckpt, tmp_path, capsys):
    a = shutil.copytree(ckpt, tmp_path / "a" / "tiny")
    b = tmp_path / "b" / "tiny"
    b.mkdir(parents=True)
    shutil.copy(ckpt / "config.json", b / "config.json")
    (b / "model.safetensors").write_bytes(b"\xff" * 64)  # reading it would fail otherwise
    out = tmp_path / "x.nc"
    code, err = _extract(capsys, a, b, "-o", out, *FAST)
    assert code == cli.EXIT_USAGE, err
    assert f"sources {a} and {b} both give a model named 'tiny'" in err and "--name" in err, err
    assert not out.exists() and not shard_dir(out).exists()


def test_name_names_each_source(ckpt, run, tmp_path, capsys):
    out = tmp_path / "n.nc"
    code, err = _extract(capsys, ckpt, run, "-o", out, *FAST, "--name", "minilm", "--name", "tiny_run")
    assert code == cli.EXIT_OK, err
    ds = open_cube(out)
    assert ds[schema.MODEL].values.tolist() == ["minilm", "tiny_run"]
    code, err = _extract(capsys, ckpt, run, "-o", out, *FAST, "--name", "only_one")
    assert code == cli.EXIT_USAGE and "--name given 1 time(s) for 2 source(s)" in err, err
    code, err = _extract(capsys, ckpt, "-o", out, *FAST, "--name", "evil\x1b[2J")
    assert code == cli.EXIT_USAGE and "printable" in err, err


# ---------------------------------------------------------------------------- the shard store
def test_the_store_is_removed_after_success_and_the_same_command_runs_again(run, tmp_path, capsys):
    out = tmp_path / "s.nc"
    for again in ([], ["--resume"]):  # the same run again: --resume (its cube is not lost)
        code, err = _extract(capsys, run, "-o", out, *FAST, *again)
        assert code == cli.EXIT_OK, err
        assert not shard_dir(out).exists()
    code, err = _extract(capsys, run, "-o", out, *FAST, "--keep-shards", "--resume")
    assert code == cli.EXIT_OK and len(list(shard_dir(out).glob("*.nc"))) == 2


def test_the_store_is_kept_after_a_failure_and_resume_redoes_only_the_failed(run, tmp_path, capsys):
    root = shutil.copytree(run, tmp_path / "run")
    good = (root / "step_10" / "model.safetensors").read_bytes()
    (root / "step_10" / "model.safetensors").write_bytes(good[: len(good) // 2])
    out = tmp_path / "p.nc"
    code, err = _extract(capsys, root, "-o", out, *FAST)
    assert code == cli.EXIT_PARTIAL, err
    assert f"the shard store {shard_dir(out)} is kept" in err and "--resume" in err, err
    assert len(list(shard_dir(out).glob("*.nc"))) == 1  # step_0's shard
    (root / "step_10" / "model.safetensors").write_bytes(good)  # repaired
    code, err = _extract(capsys, root, "-o", out, *FAST, "--resume")
    assert code == cli.EXIT_OK, err
    assert open_cube(out)[schema.STEP].values.tolist() == [0, 10]
    assert json.loads(open_cube(out).attrs[schema.ATTR_FAILED]) == []
    assert not shard_dir(out).exists()
