"""``lie-stats datasets`` as a real process: a missing folder is an error (exit 2); each
present dataset lists what its cube holds and the hypotheses that use it; titles from the
card are printed without terminal escapes."""

from __future__ import annotations

import pytest

from tests._spec_cubes import make_datasets

from ._run_helpers import lie, spec_text, write_module

pytestmark = pytest.mark.slow


def test_a_missing_datasets_folder_exits_2(tmp_path):
    for verb in ("datasets", "run"):
        res = lie(verb, "--datasets", tmp_path / "nope", cwd=tmp_path)
        assert res.returncode == 2, (verb, res.stdout, res.stderr)
        assert "the datasets folder does not exist" in res.stderr and "Traceback" not in res.stderr


def test_a_missing_hypothesis_path_exits_2_with_a_suggestion(tmp_path):
    datasets = make_datasets(tmp_path / "datasets")
    write_module(tmp_path / "claims", "uses", spec_text("S1", "S1"))
    for verb in ("run", "export", "diagnose"):
        extra = ["-o", tmp_path / "exp"] if verb == "export" else []
        res = lie(verb, "claimz", "--datasets", datasets, *extra, cwd=tmp_path)
        assert res.returncode == 2, (verb, res.stdout, res.stderr)
        assert "claimz: no such hypothesis module or folder" in res.stderr and "'claims'" in res.stderr, verb
        assert "Traceback" not in res.stderr
    assert not (tmp_path / "reports").exists()  # nothing was written


def test_datasets_lists_cube_contents_and_the_hypotheses_that_use_them(tmp_path):
    datasets = make_datasets(tmp_path / "datasets")
    card = datasets / "absent" / "dataset.toml"
    card.write_text(card.read_text().replace('title = "synthetic absent"', 'title = "absent\\u001b]0;owned\\u0007"'))
    write_module(tmp_path / "claims", "uses", spec_text("S1", "S1", datasets='("synth", "absent")'),
                 spec_text("S2", "S2"))
    res = lie("datasets", "--datasets", datasets, "--hypotheses", tmp_path / "claims", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    synth = lines[next(i for i, ln in enumerate(lines) if ln.startswith("synth ")) + 1:][:2]
    assert synth[0].strip().startswith("synth.nc: ") and "families Q, K" in synth[0]
    assert "projections none, fixed:2" in synth[0] and "6 steps 0..3000" in synth[0]
    assert synth[1].strip() == "used by: S1, S2"
    absent = lines[next(i for i, ln in enumerate(lines) if ln.startswith("absent ")):][:3]
    assert absent[1].strip().startswith("build: ") and absent[2].strip() == "used by: S1"
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout and "\\x1b]0;owned" in res.stdout
