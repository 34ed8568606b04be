"""The committed smollm2_ft cube holds what its card says and what its trainer measured.

datasets/smollm2_ft/README.md: SmolLM2-135M fine-tuned on the CPU (benchmarks/anchors_ft.py),
three Shakespeare seeds, stopped at step 100 of the declared 300; the cube holds 5 of their checkpoints.
The trainer measured sink_score, value_norm and both anchor labels of every head in memory at
every checkpoint (datasets/smollm2_ft/curves/<run>.json, rounded to 6 decimals); the extraction
re-measured them from the saved checkpoints with the same probe. They must agree: one probe, one
metric code, the same weights.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from lie_stats import schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.datasets import list_datasets

ROOT = pathlib.Path(__file__).resolve().parents[1] / "datasets"
DS = ROOT / "smollm2_ft"
RUNS = ["ft_shakespeare_s0", "ft_shakespeare_s1", "ft_shakespeare_s2"]
#: the declared checkpoint grid of the trainer (300 steps)
GRID = [0, 1, 2, 4, 8, 16, 32, 64, 100, 150, 200, 250, 300]
#: what the runs reached when the session stopped them (step 100, resumable), and the steps of
#: it the cube holds (the card: extraction cost 50 CPU-seconds per checkpoint)
REACHED = [0, 1, 2, 4, 8, 16, 32, 64, 100]
CUBE_STEPS = [0, 2, 8, 32, 100]


def _curves() -> dict:
    return {m: json.loads((DS / "curves" / f"{m}.json").read_text()) for m in RUNS}


def test_the_card_is_present_and_its_command_extracts_what_the_cube_holds():
    card = {c.name: c for c in list_datasets(ROOT)}["smollm2_ft"]
    assert card.state == "present", card.missing
    assert "lie-stats extract" in card.build and "--probe datasets/smollm2_ft/build/probe.npz" in card.build
    assert "--families OV " in card.build and all(f"build/{m} " in card.build for m in RUNS)


def test_the_cube_holds_the_three_runs_at_the_declared_grid_with_their_probe():
    ds = open_cube(DS / "smollm2_ft.nc")
    curves = _curves()
    assert ds[schema.MODEL].values.tolist() == RUNS
    assert ds[schema.STEP].values.tolist() == CUBE_STEPS
    assert ds[schema.FAMILY].values.tolist() == ["OV"]
    assert ds[schema.PROJECTION].values.tolist() == ["none"]
    assert ds.attrs["store_dtype"] == "float32"
    prov = provenance_of(ds)
    assert len(prov) == len(RUNS) * len(CUBE_STEPS)
    assert {p["options"]["probe"] for p in prov} == {c["meta"]["probe"]["sha256"] for c in curves.values()}
    for m in RUNS:
        assert curves[m]["meta"]["grid"] == GRID and curves[m]["config"]["steps"] == 300
        assert [r["step"] for r in curves[m]["measurements"]] == REACHED
        assert [int(ds[c].sel(model=m)) for c in ("n_layers", "n_heads", "d_head", "d_model")] == [30, 9, 64, 576]
        for name in ("sink_score", "value_norm", "head_label", "grad_alignment", "change_from_init"):
            assert np.isfinite(ds[name].sel(model=m)).all(), (m, name)


def test_the_cube_agrees_with_what_the_trainer_measured_in_memory():
    ds = open_cube(DS / "smollm2_ft.nc")
    for m, cur in _curves().items():
        attrs = ds["head_label"].attrs
        assert dict(zip(attrs["flag_meanings"].split(), attrs["flag_values"])) == cur["label_codes"]
        measured = {r["step"]: r for r in cur["measurements"]}
        for step in CUBE_STEPS:
            at = ds.sel(model=m, step=step)
            pairs = [("sink_score", "head_label"), ("value_norm", None)]
            if "written_norm" in measured[step]:
                pairs.append(("written_norm", "head_label_written"))
            for name, label in pairs:  # 6 decimals in the curves, float32 in the cube
                np.testing.assert_allclose(at[name].values, measured[step][name], rtol=1e-6, atol=2e-6,
                                           err_msg=f"{m} step {step} {name}")
                if label:
                    assert at[label].values.tolist() == measured[step][label], (m, step, label)


def test_every_fine_tune_run_holds_anchors_at_its_first_and_last_step():
    """The dataset's reason to exist (the card's table): §8 anchors at the first and the last step."""
    ds = open_cube(DS / "smollm2_ft.nc")
    anchor = schema.LABEL_CODES["anchor"]
    for m in RUNS:
        for step in (CUBE_STEPS[0], CUBE_STEPS[-1]):
            assert int((ds["head_label"].sel(model=m, step=step) == anchor).sum()) >= 8, (m, step)


def test_the_continuation_cube_agrees_with_its_trainer_and_starts_where_the_fine_tune_starts():
    """smollm2_ft_cont: the continuation run (Python source) at the fine-tune cube's steps, the
    same probe; its in-memory curves agree with the cube, and its step 0 is the same model as the
    fine-tune runs' (identical weights, so identical per-head metrics)."""
    ds = open_cube(ROOT / "smollm2_ft_cont" / "smollm2_ft_cont.nc")
    ft = open_cube(DS / "smollm2_ft.nc")
    cur = json.loads((DS / "curves" / "ft_python_s0.json").read_text())
    assert ds[schema.MODEL].values.tolist() == ["ft_python_s0"]
    assert ds[schema.STEP].values.tolist() == CUBE_STEPS
    assert cur["config"]["arm"] == "python" and cur["config"]["steps"] == 300
    assert [r["step"] for r in cur["measurements"]] == REACHED
    measured = {r["step"]: r for r in cur["measurements"]}
    for step in CUBE_STEPS:
        at = ds.sel(model="ft_python_s0", step=step)
        for name, label in (("sink_score", "head_label"), ("value_norm", None), ("written_norm", "head_label_written")):
            np.testing.assert_allclose(at[name].values, measured[step][name], rtol=1e-6, atol=2e-6,
                                       err_msg=f"step {step} {name}")
            if label:
                assert at[label].values.tolist() == measured[step][label], (step, label)
    for name in ("sink_score", "value_norm", "head_label", "ov_norm"):
        np.testing.assert_array_equal(ds[name].sel(model="ft_python_s0", step=0).values,
                                      ft[name].sel(model="ft_shakespeare_s0", step=0).values, err_msg=name)
