"""`lie-stats info CUBE` prints the provenance the README promises, escaped for the terminal.

A real cube extracted from checkpoints written here: every checkpoint's step, revision and
file hashes (checked against sha256 computed from the files themselves), the settings every
checkpoint shares (extraction options, torch version, threads), the lie_stats version and the
created time. A string in the file with an escape sequence or a newline is shown escaped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lie_stats import cli, schema
from lie_stats.cube import open_cube, provenance_of, write_cube

from ._checkpoints import make_run

FAST = ["--families", "Q,OV", "--null-draws", "64", "--quiet"]


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    root = tmp_path_factory.mktemp("prov")
    make_run(root / "run", "gpt_neox", [0, 4, 32], n_layers=2)
    out = root / "run.nc"
    assert cli.main(["extract", str(root / "run"), "-o", str(out), *FAST]) == 0
    return out


def info(path, capsys) -> str:
    capsys.readouterr()
    assert cli.main(["info", str(path)]) == 0
    return capsys.readouterr().out


def test_info_prints_each_checkpoints_files_hashes_and_the_shared_settings(cube, capsys):
    text = info(cube, capsys)
    ds = open_cube(cube)
    records = provenance_of(ds)
    assert len(records) == 3
    assert f"lie_stats {ds.attrs[schema.ATTR_LIB_VERSION]}, created {ds.attrs[schema.ATTR_CREATED]}" in text
    assert "provenance: 3 checkpoint record(s)" in text
    lines = text.splitlines()
    for rec in records:
        folder = Path(rec["path"])
        line = next(ln for ln in lines if ln.strip().startswith(f"step {rec['step']}:"))
        assert f"revision {rec['revision']}" in line
        for name in rec["files"]:  # the hashes of the files on disk, computed here
            digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
            assert digest in text, name
        assert "model.safetensors sha256 " + hashlib.sha256(
            (folder / "model.safetensors").read_bytes()).hexdigest() in line
    for setting in ("options.families: [Q, OV]", "options.null_draws: 64", "options.seed: 0",
                    f"torch_version: {records[0]['torch_version']}", "threads.torch_threads: "):
        assert setting in text, setting
    assert f"model {records[0]['model']}" in text
    assert f"      source: {records[0]['source']}" in lines  # one model: its source is every checkpoint's


def test_strings_from_the_file_are_escaped(cube, tmp_path, capsys):
    ds = open_cube(cube).load()
    records = provenance_of(ds)
    records[1]["revision"] = "step_4\x1b[31m\nstep 99: FORGED"
    ds.attrs[schema.ATTR_PROVENANCE] = json.dumps(records)
    bad = tmp_path / "bad.nc"
    ds.to_netcdf(bad)
    text = info(bad, capsys)
    assert "\x1b" not in text
    assert "revision step_4\\x1b[31m\\nstep 99: FORGED" in text
    assert not any(line.lstrip().startswith("step 99") for line in text.splitlines())
