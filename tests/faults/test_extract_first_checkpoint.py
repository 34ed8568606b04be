"""A broken first checkpoint of a run: the others are still extracted (exit 3).

The first checkpoint is the init from which ``change_from_init`` is measured (METRICS.md
§5.5). When it cannot be read, the other checkpoints are extracted with every other metric,
``change_from_init`` NaN, the failure is listed with ``first_of_run``, and the command says
which variable is missing and why. Real files: step_0's weights truncated, or its layer-1
shard missing (the init fails mid-way through its layers).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of

from .._checkpoints import make_run, reshard

FAST = ["--families", "Q", "--null-draws", "64", "--quiet"]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("first") / "run"
    make_run(root, "gpt2", [0, 10, 20], head=False, n_layers=2)
    return root


def _truncate(folder):
    st = folder / "model.safetensors"
    data = st.read_bytes()
    st.write_bytes(data[: len(data) // 2])


def _lose_layer_1(folder):
    reshard(folder, lambda name: "layer1.safetensors" if name.startswith("h.1.") else "rest.safetensors")
    (folder / "layer1.safetensors").unlink()


@pytest.mark.parametrize("damage", [_truncate, _lose_layer_1], ids=["truncated", "layer_1_missing"])
def test_a_broken_first_checkpoint_does_not_fail_the_others(good_run, tmp_path, capsys, damage):
    run = shutil.copytree(good_run, tmp_path / "run")
    damage(run / "step_0")
    out = tmp_path / "f.nc"
    code = cli.main(["extract", str(run), "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == cli.EXIT_PARTIAL, err
    assert f"FAILED {run / 'step_0'}: CheckpointError" in err, err
    assert "is the first checkpoint of model 'run'" in err and "change_from_init" in err, err
    assert "NaN for the model's other checkpoints" in err
    ds = open_cube(out)
    assert ds[schema.STEP].values.tolist() == [10, 20]
    assert np.isnan(ds["change_from_init"].values).all()
    assert np.isfinite(ds["ov_norm"].values).all() and np.isfinite(ds["weight_norm"].values).all()
    (failed,) = json.loads(ds.attrs[schema.ATTR_FAILED])
    assert failed["step"] == 0 and failed["first_of_run"] is True
    for record in provenance_of(ds):
        assert record["init"]["step"] == 0 and str(run / "step_0") in record["init"]["error"]


def test_the_other_metrics_equal_those_of_an_intact_run(good_run, tmp_path, capsys):
    run = shutil.copytree(good_run, tmp_path / "run")
    _truncate(run / "step_0")
    broken, intact = tmp_path / "b.nc", tmp_path / "i.nc"
    assert cli.main(["extract", str(run), "-o", str(broken), *FAST]) == cli.EXIT_PARTIAL
    assert cli.main(["extract", str(good_run), "-o", str(intact), *FAST]) == cli.EXIT_OK
    capsys.readouterr()
    b, i = open_cube(broken), open_cube(intact).sel(step=[10, 20])
    for name in b.data_vars:
        if name != "change_from_init":
            np.testing.assert_array_equal(b[name].values, i[name].values, err_msg=name)
    assert np.isfinite(i["change_from_init"].values).all()
