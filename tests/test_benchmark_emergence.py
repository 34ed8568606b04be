"""The emergence study (benchmarks/emergence.py) rehearsed at a tiny size, one resume included.

A run interrupted between two measurements (``stop_after``: no state written for the lost
steps, as after a hard kill) and rerun must continue from its last saved measurement and give
the same curves, number for number, as a run that was never interrupted. The text is the
committed sample (no download); the model has 2 layers of 2 heads.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    name = "benchmarks_emergence"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "emergence.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


E = _load()
TINY = E.Config(seed=0, steps=6, n_layers=2, n_heads=2, d_head=8, batch_size=4, seq_len=32, eval_windows=8,
                probe_seqs=4, log_until=2, every=3, text="sample")
METRIC_COLUMNS = [c for c in E.CSV_COLUMNS if c not in ("elapsed_s", "s_per_step")]


def _rows(out: Path, name: str) -> list[dict]:
    with open(out / f"{name}.csv", newline="") as f:
        return [{c: r[c] for c in METRIC_COLUMNS} for r in csv.DictReader(f)]


def test_grid_is_log_then_linear():
    assert E.measure_steps(3000) == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512] + list(range(750, 3001, 250))
    assert E.measure_steps(6, log_until=2, every=3) == [0, 1, 3, 6]


def test_interrupted_run_resumes_to_the_same_curves(tmp_path):
    name = E.run_name(TINY)
    logs: list[str] = []
    whole = E.train(TINY, out=tmp_path / "a", state_root=tmp_path / "sa", log=logs.append)
    assert whole["step"] == 6 and [r["step"] for r in whole["rows"]] == [0, 1, 3, 6]

    out_b, state_b = tmp_path / "b", tmp_path / "sb"
    with pytest.raises(E.StopRun):
        E.train(TINY, out=out_b, state_root=state_b, stop_after=4, log=logs.append)  # killed at step 4
    assert [r["step"] for r in _rows(out_b, name)] == ["0", "1", "3"]
    logs.clear()
    resumed = E.train(TINY, out=out_b, state_root=state_b, log=logs.append)
    assert any("resumed at step 3" in m for m in logs), logs
    assert resumed["meta"]["sessions"] == 2

    assert _rows(out_b, name) == _rows(tmp_path / "a", name)
    a = json.loads((tmp_path / "a" / f"{name}.json").read_text())
    b = json.loads((out_b / f"{name}.json").read_text())
    assert a["measurements"] == b["measurements"]
    last = b["measurements"][-1]
    assert last["step"] == 6 and np.asarray(last["sink_score"]).shape == (2, 2)
    assert (out_b / f"{name}.png").stat().st_size > 0
    # the weights stay in the state folder: the curves folder holds only csv, json and png
    assert sorted(p.suffix for p in out_b.iterdir()) == [".csv", ".json", ".png"]
    assert (state_b / name / "state.pt").is_file()
    # a finished run rerun is a no-op; another config on the same state is refused, by field
    again = E.train(TINY, out=out_b, state_root=state_b, log=logs.append)
    assert again["rows"] == resumed["rows"]
    with pytest.raises(SystemExit, match="peak_lr"):
        E.train(dataclasses.replace(TINY, peak_lr=1e-3), out=out_b, state_root=state_b, log=logs.append)


def test_markdown_table(tmp_path):
    (tmp_path / "r.csv").write_text(",".join(E.CSV_COLUMNS) + "\n"
                                    "250,512000,0.002,5.1,5.0,0.61,2,0.9,3,1,60,35,L11H2,8,100,0.7\n")
    table = E.markdown_table(tmp_path / "r.csv").splitlines()
    assert table[-1] == "| 250 | 512,000 | 5.000 | 0.610 | 2 | 0.900 | 3 | 1 | 60 | 35 | L11H2 (8) |"


def test_compare_plots_every_run_from_its_csv(tmp_path):
    head = ",".join(E.CSV_COLUMNS) + "\n"
    (tmp_path / "a.csv").write_text(head + "0,0,0,,8.6,0.05,0,0.2,0,0,60,36,L1H0,3,0,\n"
                                    "250,512000,0.002,5.1,5.0,0.61,2,0.9,3,1,60,35,L11H2,8,100,0.7\n")
    (tmp_path / "b.csv").write_text(head + "0,0,0,,8.5,0.04,0,0.1,0,0,60,36,L2H1,5,0,\n")
    assert E.main(["--out", str(tmp_path), "--compare", "a", "b"]) == 0
    assert (tmp_path / "seeds.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert E.plot_seeds([tmp_path / "a.csv", tmp_path / "b.csv"], tmp_path / "x.png") == {
        "a": [0.05, 0.61], "b": [0.04]}
    with pytest.raises(SystemExit, match="c.csv: no such curves file"):
        E.main(["--out", str(tmp_path), "--compare", "a", "c"])


def test_checkpoints_make_a_suite_lie_stats_extracts(tmp_path):
    """``--checkpoints``: every measured step saved as a checkpoint folder, the probe beside them,
    and ``lie-stats extract`` (the suite's card command) turns them into a cube with the sink
    metrics and labels of METRICS.md §7-8 at every step."""
    import subprocess

    import xarray as xr

    ck = tmp_path / "ck"
    st = E.train(TINY, out=tmp_path / "o", state_root=tmp_path / "s", checkpoints=ck, log=lambda m: None)
    name = E.run_name(TINY)
    steps = [r["step"] for r in st["rows"]]
    assert sorted(int(p.name.split("_")[1]) for p in (ck / name).glob("step_*")) == steps == [0, 1, 3, 6]
    assert not list((ck / name).glob(".*"))  # no temporary folder left
    cube_path = tmp_path / "bos.nc"
    proc = subprocess.run([sys.executable, "-m", "lie_stats", "extract", str(ck / name), "--families", "Q,K",
                           "--projection", "none", "--probe", str(ck / "probe.npz"), "-o", str(cube_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with xr.open_dataset(cube_path) as cube:
        assert list(cube["step"].values) == steps
        sink = cube["sink_score"].sel(model=name)
        assert sink.shape == (4, 2, 2) and bool(np.isfinite(sink).all())
        # the cube's sink_score at the last step is the one the study measured there
        np.testing.assert_allclose(sink.isel(step=-1).values, st["heads"][-1]["sink_score"], atol=2e-6)
        assert "head_label" in cube
