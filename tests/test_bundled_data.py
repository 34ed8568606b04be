"""The committed cubes open, validate, and hold what their cards and build scripts say.

CI does not rebuild the data; it checks that what ships is what the cards
describe (models, steps, shapes, families, compressions) and that every card is readable.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from lie_stats import schema
from lie_stats.cube import open_cube, provenance_of
from lie_stats.datasets import list_datasets

ROOT = pathlib.Path(__file__).resolve().parents[1] / "datasets"
PICO_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 293, 329, 366, 402, 439, 475, 512]
FT_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 73, 82, 91, 101, 110, 119, 128]
FOUR = ["Q", "O", "QK", "OV"]

# file -> (models with (n_layers, n_heads, d_head, d_model)), steps, projections)
EXPECTED = {
    "pico_pythia/pico_pythia.nc": (
        {"p96_s0": (12, 8, 16, 128), "p96_s1": (12, 8, 16, 128)}, PICO_STEPS,
        ["none", "adaptive", "fixed:64"]),
    "pico_pythia/pico_sweep.nc": (
        {"w16": (4, 4, 16, 64), "w32": (4, 4, 32, 128), "w64": (4, 4, 64, 256),
         "h2": (4, 2, 16, 32), "h8": (4, 8, 16, 128), "h16": (4, 16, 16, 256)}, PICO_STEPS,
        ["none", "adaptive"]),
    "pico_pythia_ft/pico_pythia_ft.nc": (
        {"p96_s0_ft": (12, 8, 16, 128), "p96_s1_ft": (12, 8, 16, 128)}, FT_STEPS,
        ["none", "adaptive", "fixed:64"]),
    "panel/panel.nc": (
        {"minilm_l6": (6, 12, 32, 384), "minilm_l3": (3, 12, 32, 384), "mpnet": (12, 12, 64, 768),
         "smollm2_135m": (30, 9, 64, 576), "gemma3_270m": (18, 4, 256, 640),
         "minilm_l6_q4_1": (6, 12, 32, 384), "minilm_l6_q4_k": (6, 12, 32, 384)}, [0, 1],
        ["none", "adaptive", "fixed:64"]),
}


def test_every_card_reads_and_names_its_cubes():
    cards = {c.name: c for c in list_datasets(ROOT)}
    assert {"panel", "pico_pythia", "pico_pythia_ft", "pythia", "pythia_410m_all"} <= set(cards)
    for name in ("panel", "pico_pythia", "pico_pythia_ft"):
        assert cards[name].state == "present", (name, cards[name].missing)
        assert cards[name].readme.is_file()
        assert "lie-stats extract" in cards[name].build
    for name in ("pythia", "pythia_410m_all"):
        assert cards[name].state == "needs data"
        assert "hf:EleutherAI/pythia-410m" in cards[name].build


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_committed_cube_matches_its_card(rel):
    models, steps, projections = EXPECTED[rel]
    ds = open_cube(ROOT / rel)
    assert ds[schema.MODEL].values.tolist() == list(models)
    assert ds[schema.STEP].values.tolist() == steps
    assert ds[schema.FAMILY].values.tolist() == FOUR
    assert ds[schema.PROJECTION].values.tolist() == projections
    for m, (L, H, dh, dm) in models.items():
        got = [int(ds[c].sel(model=m)) for c in ("n_layers", "n_heads", "d_head", "d_model")]
        assert got == [L, H, dh, dm], m
        # every checkpoint of every model has its per-head numbers, and nothing beyond its shape
        per_head = ds["ov_norm"].sel(model=m)
        assert np.isfinite(per_head.isel(layer=slice(0, L), head=slice(0, H))).all()
        assert np.isnan(per_head.isel(layer=slice(L, None))).all()
    prov = provenance_of(ds)
    assert len(prov) == len(models) * len(steps)
    assert {p["options"]["null_draws"] for p in prov} == {64}
    assert ds.attrs["store_dtype"] == "float32"


def test_the_96_head_runs_carry_activation_metrics_of_the_committed_probe():
    from lie_stats.extraction.probe import load_probe

    ds = open_cube(ROOT / "pico_pythia/pico_pythia.nc")
    probe = load_probe(ROOT / "pico_pythia/probe.npz")
    for name in ("sink_score", "sink_argmax_fraction", "value_norm", "sink_value_ratio",
                 "grad_alignment", "head_label", "killing_functional"):
        assert np.isfinite(ds[name].values).all(), name
    assert {p["options"]["probe"] for p in provenance_of(ds)} == {probe.sha256}


ACTIVATION_VARS = ("sink_score", "sink_argmax_fraction", "value_norm", "sink_value_ratio",
                   "grad_alignment", "head_label", "killing_functional")
#: models whose checkpoints are encoders saved without an LM head (BertModel, MPNetModel, both
#: steps): grad_alignment needs the LM loss (METRICS.md §7.5) and is NaN there by definition
#: (lie_stats.extraction.activations: "has no language-model head"); every other value is finite.
NO_LM_HEAD = {"minilm_l6", "minilm_l3", "mpnet", "minilm_l6_q4_1", "minilm_l6_q4_k"}


def _per_model_probes(card_dir: pathlib.Path, models) -> dict[str, str]:
    from lie_stats.extraction.probe import load_probe

    return {m: load_probe(card_dir / "probes" / f"{m}.npz").sha256 for m in models}


@pytest.mark.parametrize("rel", ["panel/panel.nc", "pico_pythia_ft/pico_pythia_ft.nc",
                                 "pico_pythia/pico_sweep.nc"])
def test_panel_and_post_training_cubes_carry_activation_metrics_at_every_checkpoint(rel):
    """The activation metrics (METRICS.md §7-§8) at every checkpoint of every model,
    each model probed with its own tokenizer's probe (panel) or the suite's probe (ft, sweep)."""
    from lie_stats.extraction.probe import load_probe

    models, steps, _ = EXPECTED[rel]
    ds = open_cube(ROOT / rel)
    for m, (L, H, _, _) in models.items():
        for name in ACTIVATION_VARS:
            var = ds[name].sel(model=m)
            inside = var.isel(layer=slice(0, L), head=slice(0, H))
            if "head_j" in var.dims:
                inside = inside.isel(head_j=slice(0, H))
            if name == "grad_alignment" and (m in NO_LM_HEAD or H == 2):
                # H == 2 (sweep run h2): one pair per layer, killing_cv is identically 0 and
                # its gradient exactly zero, so the cosine is undefined (NaN by definition)
                assert np.isnan(inside).all(), (m, name)
                continue
            assert np.isfinite(inside).all(), (m, name)
            assert np.isnan(var.isel(layer=slice(L, None))).all(), (m, name)  # padding stays NaN
        sink = ds["sink_score"].sel(model=m).isel(layer=slice(0, L), head=slice(0, H))
        assert ((sink >= 0) & (sink <= 1)).all(), m
    prov = provenance_of(ds)
    assert len(prov) == len(models) * len(steps)
    if rel.startswith("panel"):
        want = _per_model_probes(ROOT / "panel", models)
        assert all(p["options"]["probe"] == want for p in prov)
        assert all(p["activations"]["probe"]["sha256"] == want[p["model"]] for p in prov)
        grad_note = {p["model"]: p["activations"]["grad_alignment_note"] for p in prov}
        assert all("no language-model head" in grad_note[m] for m in NO_LM_HEAD)
    else:
        sha = load_probe(ROOT / "pico_pythia/probe.npz").sha256
        assert {p["options"]["probe"] for p in prov} == {sha}


SUDOKU_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 761, 1010, 1258, 1507, 1756, 2005, 2254, 2502,
                2751, 3000]


def test_pico_sudoku_cube_holds_the_three_trained_runs_with_their_probe_metrics():
    """The card's three pre-LN runs at its 21 checkpoints, every family the card extracts, exact
    operators, and the activation metrics of the committed probe at every checkpoint."""
    from lie_stats.extraction.probe import load_probe

    ds = open_cube(ROOT / "pico_sudoku/pico_sudoku.nc")
    models = ["sudoku_s0", "sudoku_s1", "sudoku_s2"]
    assert ds[schema.MODEL].values.tolist() == models
    assert ds[schema.STEP].values.tolist() == SUDOKU_STEPS
    assert ds[schema.FAMILY].values.tolist() == ["Q", "K", "V", "O", "QK", "OV"]
    assert ds[schema.PROJECTION].values.tolist() == ["none"]
    for m in models:
        assert [int(ds[c].sel(model=m)) for c in ("n_layers", "n_heads", "d_head", "d_model")] == [12, 8, 16, 128]
        for name in ACTIVATION_VARS:
            assert np.isfinite(ds[name].sel(model=m)).all(), (m, name)
    prov = provenance_of(ds)
    assert len(prov) == 3 * len(SUDOKU_STEPS)
    assert {p["options"]["probe"] for p in prov} == {load_probe(ROOT / "pico_sudoku/probe.npz").sha256}
    assert {p["architecture"] for p in prov} == {"roberta-prelayernorm"}
    assert ds.attrs["store_dtype"] == "float32"
    # the card's training summary: every run trained its 3,000 steps and learned the task
    for s in json.loads((ROOT / "pico_sudoku/curves/summary.json").read_text()):
        assert s["steps"] == 3000 and s["norm"] == "pre"
        assert s["final_val_cell_acc"] > 0.5 > s["init_val_cell_acc"]


BOS_CPU_RUNS = ["bos_l12h8d16_s2", "bos_l12h8d16_s3", "bos_l12h8d16_s4"]
CURVES = ROOT.parent / "benchmarks" / "emergence"


def test_pico_bos_cpu_cube_holds_the_three_runs_at_the_grid_and_agrees_with_their_curves():
    """The card's three runs at the emergence study's 49-step grid (the runs' off-grid stop
    checkpoints left out), exact operators, the probe's activation metrics; and at every one of
    those steps the extracted sink_score, value_norm and head labels are those the trainer
    measured in memory (benchmarks/emergence/<run>.json, rounded to 6 decimals): one probe, one
    metric code, the same weights."""
    ds = open_cube(ROOT / "pico_bos_cpu/pico_bos_cpu.nc")
    curves = {m: json.loads((CURVES / f"{m}.json").read_text()) for m in BOS_CPU_RUNS}
    grid = curves[BOS_CPU_RUNS[0]]["meta"]["grid"]
    assert len(grid) == 49 and grid[-1] == 10000
    assert ds[schema.MODEL].values.tolist() == BOS_CPU_RUNS
    assert ds[schema.STEP].values.tolist() == grid
    assert ds[schema.FAMILY].values.tolist() == ["Q", "K", "V", "O", "QK", "OV"]
    assert ds[schema.PROJECTION].values.tolist() == ["none"]
    prov = provenance_of(ds)
    assert len(prov) == 3 * len(grid)
    assert {p["architecture"] for p in prov} == {"gpt_neox"}
    assert {p["options"]["probe"] for p in prov} == {c["meta"]["probe"]["sha256"] for c in curves.values()}
    assert ds.attrs["store_dtype"] == "float32"
    for m in BOS_CPU_RUNS:
        assert [int(ds[c].sel(model=m)) for c in ("n_layers", "n_heads", "d_head", "d_model")] == [12, 8, 16, 128]
        for name in ACTIVATION_VARS:
            assert np.isfinite(ds[name].sel(model=m)).all(), (m, name)
        measured = {r["step"]: r for r in curves[m]["measurements"]}
        assert curves[m]["config"]["steps"] == 10000 and max(measured) == 10000
        attrs = ds["head_label"].attrs
        assert dict(zip(attrs["flag_meanings"].split(), attrs["flag_values"])) == curves[m]["label_codes"]
        for step in grid:
            at = ds.sel(model=m, step=step)
            for name in ("sink_score", "value_norm"):  # 6 decimals, and float32 in the cube
                np.testing.assert_allclose(at[name].values, measured[step][name], rtol=1e-6,
                                           atol=2e-6, err_msg=f"{m} step {step} {name}")
            assert at["head_label"].values.tolist() == measured[step]["head_label"], (m, step)


def test_panel_carries_the_written_label_and_its_card_counts_both_labels():
    """METRICS.md §9 on the panel: ``written_norm`` finite inside every model's shape (padding
    NaN), ``head_label_written`` is §8's rule on it, and the card's per-model table of both
    labels' counts is the cube's."""
    import re

    from lie_stats.extraction.activations import head_labels

    models, steps, _ = EXPECTED["panel/panel.nc"]
    ds = open_cube(ROOT / "panel/panel.nc")
    card = (ROOT / "panel/README.md").read_text(encoding="utf-8")
    row = re.compile(r"^\| `(\w+)` \| (\d) \| (\d+) / (\d+) / (\d+) \| (\d+) / (\d+) / (\d+) \| (\d+) \|$", re.M)
    table = {(m, int(s)): tuple(int(x) for x in rest) for m, s, *rest in row.findall(card)}
    assert sorted(table) == sorted((m, s) for m in models for s in steps)
    code = schema.LABEL_CODES

    def counts(lab):
        return tuple(int((lab == code[k]).sum()) for k in ("anchor", "worker", "mixed"))

    for m, (L, H, _, _) in models.items():
        assert np.isnan(ds["written_norm"].sel(model=m).isel(layer=slice(L, None))).all(), m
        for s in steps:
            at = ds.sel(model=m, step=s).isel(layer=slice(0, L), head=slice(0, H))
            w = at["written_norm"].values
            assert np.isfinite(w).all() and (w > 0).all(), (m, s)
            lab, lab_w = at["head_label"].values, at["head_label_written"].values
            np.testing.assert_array_equal(lab_w, head_labels(at["sink_score"].values, w), err_msg=f"{m}@{s}")
            both = int(((lab == code["anchor"]) & (lab_w == code["anchor"])).sum())
            assert table[(m, s)] == counts(lab) + counts(lab_w) + (both,), (m, s)
    attrs = ds["head_label_written"].attrs
    assert dict(zip(attrs["flag_meanings"].split(), attrs["flag_values"])) == code
