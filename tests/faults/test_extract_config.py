"""A config.json and its weights checked against each other, as real checkpoint files.

Each case edits a copy of a tiny seeded checkpoint: a config that claims fewer or more
layers than the weights hold, a rotary fraction that is not a number in [0, 1], a run whose
depth changes between checkpoints, a quantized (int8 + ``.SCB`` scales) checkpoint. Each
must give a named error that names the file, the field and what was expected, never a
silently shortened cube, a bare ValueError, or "generator raised StopIteration".
"""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from lie_stats import cli, schema
from lie_stats.cube import open_cube
from lie_stats.errors import ArchitectureError, CheckpointError
from lie_stats.extraction.sources import open_source

from .._checkpoints import make_checkpoint

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]
ST = "model.safetensors"


@pytest.fixture(scope="module")
def neox(tmp_path_factory) -> pathlib.Path:
    return make_checkpoint("gpt_neox", tmp_path_factory.mktemp("neox") / "ckpt", seed=5, n_layers=2)


def _edit_config(folder: pathlib.Path, **fields) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(fields)
    (folder / "config.json").write_text(json.dumps(cfg))


def _adapter_error(folder: pathlib.Path) -> Exception:
    (ck,) = open_source(str(folder))
    with pytest.raises(CheckpointError) as e:
        ck.adapter()
    return e.value


@pytest.mark.parametrize("claimed", [1, 3])
def test_a_config_depth_other_than_the_weights_is_named(neox, tmp_path, capsys, claimed):
    folder = shutil.copytree(neox, tmp_path / "ckpt")
    _edit_config(folder, num_hidden_layers=claimed)
    err = _adapter_error(folder)
    assert type(err) is ArchitectureError
    msg = str(err)
    assert str(folder / "config.json") in msg and str(folder / ST) in msg, msg
    assert f"'num_hidden_layers' is {claimed}" in msg and "layers 0..1 (2)" in msg, msg
    out = tmp_path / "x.nc"
    assert cli.main(["extract", str(folder), "-o", str(out), *FAST]) == cli.EXIT_USAGE
    assert "'num_hidden_layers' is" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("value, shown", [("abc", "'abc' (str)"), (4.0, "4.0 (float)"), (-0.5, "-0.5 (float)"),
                                          (True, "True (bool)")])
def test_a_rotary_fraction_must_be_a_number_from_0_to_1(neox, tmp_path, capsys, value, shown):
    folder = shutil.copytree(neox, tmp_path / "ckpt")
    _edit_config(folder, rotary_pct=value)
    err = _adapter_error(folder)
    assert type(err) is ArchitectureError
    msg = str(err)
    assert str(folder / "config.json") in msg and "'rotary_pct' must be a number from 0 to 1" in msg, msg
    assert shown in msg, msg
    assert cli.main(["extract", str(folder), "-o", str(tmp_path / "x.nc"), *FAST]) == cli.EXIT_USAGE
    err_text = capsys.readouterr().err
    assert "rotary_pct" in err_text and "Traceback" not in err_text


def test_a_valid_rotary_fraction_is_stored_as_given(neox, tmp_path):
    folder = shutil.copytree(neox, tmp_path / "ckpt")
    _edit_config(folder, rotary_pct=0.5)
    (ck,) = open_source(str(folder))
    assert ck.adapter().shape.rotary_fraction == 0.5


def test_depth_changing_within_a_run_fails_that_checkpoint_by_name(tmp_path, capsys):
    run = tmp_path / "run"
    make_checkpoint("gpt2", run / "step_0", seed=1, head=False, n_layers=1)
    make_checkpoint("gpt2", run / "step_10", seed=2, head=False, n_layers=2)
    make_checkpoint("gpt2", run / "step_20", seed=3, head=False, n_layers=1)
    out = tmp_path / "d.nc"
    code = cli.main(["extract", str(run), "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == cli.EXIT_PARTIAL, err
    assert "StopIteration" not in err and "Traceback" not in err
    assert f"FAILED {run / 'step_10'}: CheckpointError" in err, err
    assert "n_layers=2, but the run's first checkpoint" in err and "n_layers=1" in err, err
    assert open_cube(out)[schema.STEP].values.tolist() == [0, 20]


# ---------------------------------------------------------------------------- quantized
def _quantize_int8(folder: pathlib.Path, *, with_config: bool) -> None:
    """bitsandbytes-style LLM.int8 storage: int8 row codes and a float ``.SCB`` scale per row."""
    state = load_file(folder / ST)
    out = {}
    for name, t in state.items():
        if name.endswith(".weight") and t.ndim == 2 and "attention" in name:
            scb = t.abs().amax(dim=1).clamp_min(1e-8)
            out[name] = torch.round(t / scb[:, None] * 127).to(torch.int8)
            out[name[: -len("weight")] + "SCB"] = scb.float()
        else:
            out[name] = t
    save_file(out, folder / ST, metadata={"format": "pt"})
    if with_config:
        _edit_config(folder, quantization_config={"quant_method": "bitsandbytes", "load_in_8bit": True})


def test_a_quantized_config_is_refused_naming_the_quantization(neox, tmp_path, capsys):
    folder = shutil.copytree(neox, tmp_path / "q8")
    _quantize_int8(folder, with_config=True)
    err = _adapter_error(folder)
    assert type(err) is ArchitectureError
    msg = str(err)
    assert str(folder / "config.json") in msg and "quantized" in msg, msg
    assert "'bitsandbytes'" in msg and "load_in_8bit" in msg, msg
    out = tmp_path / "x.nc"
    assert cli.main(["extract", str(folder), "-o", str(out), *FAST]) == cli.EXIT_USAGE
    assert "bitsandbytes" in capsys.readouterr().err and not out.exists()


def test_int8_weights_without_a_quantization_config_are_refused_naming_the_file(neox, tmp_path):
    folder = shutil.copytree(neox, tmp_path / "q8")
    _quantize_int8(folder, with_config=False)
    err = _adapter_error(folder)
    assert type(err) is CheckpointError
    msg = str(err)
    assert str(folder / ST) in msg and "stored as int8" in msg and ".SCB" in msg, msg
    assert "quantized" in msg
