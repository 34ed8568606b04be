"""Parameter-delta map (METRICS.md §6.4): lie_stats.extraction.delta on real tiny checkpoints.

Each known perturbation is applied to the *stored* tensors with an independent slicing of
the architecture's layout (written here, not taken from the adapters), so a wrong QKV split,
a dropped or double-counted tensor, or a wrong category would change the numbers tested.
"""

from __future__ import annotations

import json
import math
import pathlib
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from lie_stats import schema
from lie_stats.cube import merge_shards, open_cube, validate_cube, write_cube
from lie_stats.extraction.delta import delta_cube, delta_map
from lie_stats.errors import CheckpointError

from ._checkpoints import delta_run, edit_checkpoint, make_checkpoint
from ._cubes import random_shard

ST = "model.safetensors"


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a64, b64 = a.double(), b.double()
    return float(torch.linalg.norm(b64 - a64) / torch.linalg.norm(a64))


@pytest.fixture(scope="module")
def neox(tmp_path_factory) -> pathlib.Path:
    return make_checkpoint("gpt_neox", tmp_path_factory.mktemp("neox") / "base", seed=3, n_layers=2)


def test_gpt_neox_fused_key_rows_of_one_head_change_only_attn_k(neox, tmp_path):
    """K rows of heads 0 and 3 of layer 0 scaled by 3: only attn_k moves, by the exact amount.

    Under a block layout [q|k|v, head, d_head] (the GPT-2 one) these rows would be Q (head 0's
    K rows 8-15) and V (head 3's K rows 80-87): a wrong split moves attn_q and attn_v."""
    name = "gpt_neox.layers.0.attention.query_key_value.weight"
    base = load_file(neox / ST)
    h, d = 4, 32
    dh = d // h

    def edit(t):
        w = t[name].reshape(h, 3, dh, d).clone()  # GPT-NeoX: output rows [head, q|k|v, d_head]
        w[0, 1] *= 3.0
        w[3, 1] *= 3.0
        t[name] = w.reshape(3 * d, d)

    tuned = edit_checkpoint(neox, tmp_path / "tuned", edit)
    m = delta_map(neox, tmp_path / "tuned")
    rel = dict(zip(m.categories, m.relative))
    # expected from the stored tensors, K rows of both layers stacked (biases unchanged)
    k_rows = lambda t, l: t[f"gpt_neox.layers.{l}.attention.query_key_value.weight"].reshape(h, 3, dh, d)[:, 1]  # noqa: E731
    k_bias = lambda t, l: t[f"gpt_neox.layers.{l}.attention.query_key_value.bias"].reshape(h, 3, dh)[:, 1]  # noqa: E731
    num = torch.linalg.norm(k_rows(tuned, 0).double() - k_rows(base, 0).double())
    den = math.sqrt(sum(float((k_rows(base, l).double() ** 2).sum() + (k_bias(base, l).double() ** 2).sum())
                        for l in (0, 1)))
    assert rel["attn_k"] == pytest.approx(float(num) / den, rel=1e-12)
    assert rel["attn_k"] > 0.1
    assert m.rank_order()[0] == "attn_k"
    # a split that mixed rows would move Q or V too
    assert rel["attn_q"] == 0.0 and rel["attn_v"] == 0.0 and rel["attn_o"] == 0.0
    assert all(v == 0.0 for c, v in rel.items() if c != "attn_k")
    j = m.categories.index("attn_k")
    assert m.relative_layer[j, 1] == 0.0 and m.relative_layer[j, 0] > rel["attn_k"]
    assert m.rank("attn_k") == 1


def test_mlp_out_of_one_layer_exact_relative_change(neox, tmp_path):
    name = "gpt_neox.layers.1.mlp.dense_4h_to_h.weight"
    base = load_file(neox / ST)

    def edit(t):
        t[name] = t[name] * 1.5

    edit_checkpoint(neox, tmp_path / "tuned", edit)
    m = delta_map(neox, tmp_path / "tuned")
    j = m.categories.index("mlp_out")
    w1 = base[name].double()
    b1 = base["gpt_neox.layers.1.mlp.dense_4h_to_h.bias"].double()
    assert m.relative_layer[j, 1] == pytest.approx(0.5 * float(torch.linalg.norm(w1)) / math.sqrt(
        float((w1 ** 2).sum() + (b1 ** 2).sum())), rel=1e-6)
    assert m.relative_layer[j, 0] == 0.0
    assert m.rank_order()[0] == "mlp_out"
    frame = m.to_frame()
    assert frame[schema.CATEGORY].iloc[0] == "mlp_out" and frame["rank"].tolist() == list(range(1, 12))


def test_gpt2_fused_c_attn_value_columns_change_only_attn_v(tmp_path):
    base_dir = make_checkpoint("gpt2", tmp_path / "base", seed=1, n_layers=2)
    name = "transformer.h.1.attn.c_attn.weight"
    d = 32

    def edit(t):
        w = t[name].clone()
        w[:, 2 * d:] += 0.25 * w[:, 2 * d:]  # Conv1D [d, 3d]: columns Q | K | V
        t[name] = w

    edit_checkpoint(base_dir, tmp_path / "tuned", edit)
    m = delta_map(base_dir, tmp_path / "tuned")
    rel = dict(zip(m.categories, m.relative))
    assert m.rank_order()[0] == "attn_v"
    assert rel["attn_q"] == 0.0 and rel["attn_k"] == 0.0
    assert m.relative_layer[m.categories.index("attn_v"), 0] == 0.0
    assert 0.0 < rel["attn_v"] < 0.25


def test_llama_gqa_keys_counted_once(tmp_path):
    base_dir = make_checkpoint("llama", tmp_path / "base", seed=2, n_layers=2, n_heads=4, n_kv_heads=2)
    base = load_file(base_dir / ST)
    name = "model.layers.0.self_attn.k_proj.weight"

    def edit(t):
        t[name] = 2.0 * t[name]

    edit_checkpoint(base_dir, tmp_path / "tuned", edit)
    m = delta_map(base_dir, tmp_path / "tuned")
    j = m.categories.index("attn_k")
    # stored K of layer 0, not the 2x repeated per-query-head copy
    assert m.base_norm_layer[j, 0] == pytest.approx(float(torch.linalg.norm(base[name].double())), rel=1e-12)
    assert m.relative_layer[j, 0] == pytest.approx(1.0, rel=1e-12)
    assert m.rank_order()[0] == "attn_k"
    assert "unembedding" in m.categories and "norm_mlp" in m.categories


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2", "llama", "qwen3", "gemma3_text", "bert", "mpnet"])
def test_every_parameter_counted_once(arch, tmp_path):
    """sum over categories of ||W_c||^2 equals the sum over stored tensors: nothing dropped or
    double counted (fused tensors split, GQA not repeated, norms and heads included)."""
    base_dir = make_checkpoint(arch, tmp_path / "m", seed=0, n_layers=2)
    tensors = load_file(base_dir / ST)
    total = sum(float((t.double() ** 2).sum()) for t in tensors.values())
    m = delta_map(base_dir, base_dir)
    assert float((m.base_norm ** 2).sum()) == pytest.approx(total, rel=1e-9)
    assert (m.relative == 0).all()
    per_layer = {"attn_q", "attn_k", "attn_v", "attn_o", "mlp_in", "mlp_out", "norm_attn"}
    assert per_layer <= set(m.categories)
    assert "embedding" in m.categories
    if arch in ("bert", "mpnet"):  # the MLM head's transform is the only unclaimed part
        assert "norm_embedding" in m.categories and "other" in m.categories
    else:
        assert "other" not in m.categories


def test_mismatched_tensor_sets_name_the_tensor_and_both_files(neox, tmp_path):
    def edit(t):
        del t["gpt_neox.final_layer_norm.bias"]

    edit_checkpoint(neox, tmp_path / "tuned", edit)
    with pytest.raises(CheckpointError) as e:
        delta_map(neox, tmp_path / "tuned")
    msg = str(e.value)
    assert "gpt_neox.final_layer_norm.bias" in msg
    assert str(neox) in msg and str(tmp_path / "tuned") in msg


def test_mismatched_shapes_name_the_tensor_and_both_files(tmp_path):
    a = make_checkpoint("gpt_neox", tmp_path / "a", seed=0, n_layers=1, vocab_size=96)
    b = make_checkpoint("gpt_neox", tmp_path / "b", seed=0, n_layers=1, vocab_size=100)
    with pytest.raises(CheckpointError) as e:
        delta_map(a, b)
    msg = str(e.value)
    assert "embed" in msg and "(96, 32)" in msg and "(100, 32)" in msg
    assert str(a / ST) in msg and str(b / ST) in msg


def test_a_run_folder_is_not_one_checkpoint(neox, tmp_path):
    run = tmp_path / "run"
    for s in (0, 1):
        shutil.copytree(neox, run / f"step_{s}")
    with pytest.raises(CheckpointError, match="run folder of 2 checkpoints"):
        delta_map(run, neox)


@pytest.fixture(scope="module")
def run_cube(neox, tmp_path_factory):
    """A three-checkpoint run: step 10 scales embed_in by 1.1, step 20 also Q of layer 1 by 1.2."""
    return delta_cube(delta_run(neox, tmp_path_factory.mktemp("run") / "r"))


def test_delta_cube_trajectory(run_cube):
    ds = validate_cube(run_cube)
    assert ds[schema.STEP].values.tolist() == [0, 10, 20]
    assert ds[schema.CATEGORY].values.tolist() == list(schema.PARAM_CATEGORIES)
    pd_ = ds["param_delta"].sel(model="r")
    assert (pd_.sel(step=0).fillna(0) == 0).all()
    assert pd_.sel(step=10, category="embedding").item() == pytest.approx(0.1, rel=1e-6)
    assert pd_.sel(step=10, category="attn_q").item() == 0.0
    assert pd_.sel(step=20, category="embedding").item() == pytest.approx(0.1, rel=1e-6)
    layer = ds["param_delta_layer"].sel(model="r", step=20, category="attn_q")
    assert layer.sel(layer=0).item() == 0.0 and layer.sel(layer=1).item() > 0.1
    assert np.isnan(ds["param_delta_layer"].sel(model="r", step=20, category="embedding")).all()
    assert np.isnan(pd_.sel(step=20, category="other")).item()
    assert int(ds["init_step"].sel(model="r")) == 0
    prov = json.loads(ds.attrs[schema.ATTR_PROVENANCE])
    assert [p["step"] for p in prov] == [0, 10, 20] and all(p["base"]["step"] == 0 for p in prov)


def test_delta_cube_round_trip_and_merge_with_a_metric_cube(run_cube, tmp_path):
    path = write_cube(run_cube, tmp_path / "d.nc")
    back = open_cube(path)
    import xarray as xr

    xr.testing.assert_identical(back, run_cube)  # values, coordinates, attributes
    for name in [*run_cube.coords, *run_cube.data_vars]:  # and dtypes (assert_identical alone misses a dtype change)
        assert back[name].dtype == run_cube[name].dtype, name
    assert back[schema.CATEGORY].values.tolist() == list(schema.PARAM_CATEGORIES)
    merged = merge_shards([back, random_shard("other_model", 5, 2, 4)])
    assert merged[schema.MODEL].values.tolist() == ["r", "other_model"]
    assert np.isnan(merged["param_delta"].sel(model="other_model")).all()
    np.testing.assert_array_equal(merged["param_delta"].sel(model="r", step=[0, 10, 20]).values,
                                  run_cube["param_delta"].sel(model="r").values)


# ------------------------------------------------------------------ the committed pair cube
DATA = pathlib.Path(__file__).resolve().parents[1] / "datasets"
PAIR = DATA / "pico_pythia_pair" / "pair.nc"
PICO_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 293, 329, 366, 402, 439, 475, 512]
FT_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 73, 82, 91, 101, 110, 119, 128]


CONVERGED = DATA / "pico_converged" / "converged.nc"
CONVERGED_BASE_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 805, 1097, 1390, 1682, 1975, 2267, 2560]
CONVERGED_TUNE_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 146, 165, 183, 201, 219, 238, 256]
#: dataset -> (cube, {model: its checkpoints})
PAIR_CUBES = {
    "pico_pythia_pair": (PAIR, {"p96_s0": PICO_STEPS, "p96_s1": PICO_STEPS, "p96_s0_ft": FT_STEPS,
                                "p96_s1_ft": FT_STEPS}),
    "pico_converged": (CONVERGED, {
        **{f"c48_s{i}": CONVERGED_BASE_STEPS for i in range(3)},
        **{f"c48_s{i}_ft": CONVERGED_TUNE_STEPS for i in range(3)},
        **{f"c48_s{i}_cont": CONVERGED_TUNE_STEPS for i in range(3)}}),
}


@pytest.mark.parametrize("dataset", sorted(PAIR_CUBES))
def test_committed_pair_cube_holds_what_its_card_says(dataset):
    from lie_stats.datasets import find_dataset

    path, models = PAIR_CUBES[dataset]
    card = find_dataset(dataset, DATA)
    assert card.state == "present" and card.readme.is_file()
    ds = open_cube(path)
    assert ds[schema.MODEL].values.tolist() == list(models)
    for m, steps in models.items():
        pd_ = ds["param_delta"].sel(model=m)
        have = [int(s) for s in ds[schema.STEP].values if np.isfinite(pd_.sel(step=s)).any()]
        assert have == steps, m
        assert (pd_.sel(step=0).dropna(schema.CATEGORY) == 0).all()
        cats = [str(c) for c in pd_[schema.CATEGORY].values if np.isfinite(pd_.sel(step=steps[-1], category=c))]
        assert cats == ["embedding", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_in", "mlp_out",
                        "norm_attn", "norm_mlp", "norm_final", "unembedding"], m
        # the per-layer values pool to the totals (METRICS.md §6.4)
        last = ds.sel(model=m, step=steps[-1])
        for c in ("attn_q", "mlp_out", "norm_attn"):
            r = last["param_delta_layer"].sel(category=c).values
            w = last["param_base_norm_layer"].sel(category=c).values
            assert float(np.sqrt(((r * w) ** 2).sum() / (w ** 2).sum())) == pytest.approx(
                float(last["param_delta"].sel(category=c)), rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converged_twins_start_at_their_base_and_move_apart(seed):
    """A fine-tune and its continuation begin at the base's last weights (so every layer summary
    at their step 0 is the base's at 2,560, exactly) and end somewhere else."""
    ds = open_cube(CONVERGED)
    base, ft, cont = f"c48_s{seed}", f"c48_s{seed}_ft", f"c48_s{seed}_cont"
    for v in ("killing_cv", "killing_eig_spread", "commutator_raw_var"):
        at_base = ds[v].sel(model=base, step=CONVERGED_BASE_STEPS[-1], projection="none").values
        assert np.isfinite(at_base[..., :6]).all()
        for twin in (ft, cont):
            np.testing.assert_array_equal(ds[v].sel(model=twin, step=0, projection="none").values, at_base)
        end_ft = ds[v].sel(model=ft, step=256, projection="none").values
        end_cont = ds[v].sel(model=cont, step=256, projection="none").values
        assert not np.array_equal(end_ft[..., :6], at_base[..., :6])
        assert not np.array_equal(end_ft[..., :6], end_cont[..., :6])


@pytest.mark.parametrize("model,source", [("p96_s1", "pico_pythia/pico_pythia.nc"),
                                          ("p96_s0_ft", "pico_pythia_ft/pico_pythia_ft.nc")])
def test_committed_pair_cube_copies_the_layer_summaries_unchanged(model, source):
    pair, src = open_cube(PAIR), open_cube(DATA / source)
    for v in ("killing_cv", "commutator_raw_var", "abelian_fraction"):
        a = pair[v].sel(model=model).dropna(schema.STEP, how="all")
        b = src[v].sel(model=model)
        assert a[schema.STEP].values.tolist() == b[schema.STEP].values.tolist()
        np.testing.assert_array_equal(a.values, b.values)


@pytest.mark.skipif(not (DATA / "pico_pythia/build/p96_s0_ft/step_128").is_dir(),
                    reason="the fine-tune checkpoints are local build products (not in git)")
def test_committed_pair_deltas_recompute_from_the_checkpoints():
    build = DATA / "pico_pythia" / "build" / "p96_s0_ft"
    m = delta_map(build / "step_0", build / "step_128")
    ds = open_cube(PAIR)["param_delta"].sel(model="p96_s0_ft", step=128)
    for c, v in zip(m.categories, m.relative):
        assert float(ds.sel(category=c)) == pytest.approx(float(v), rel=1e-12), c


# ------------------------------------------------------------------ lie-stats extract --delta
def _without_created(ds):
    ds = ds.copy()
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != schema.ATTR_CREATED}
    return ds


def test_extract_delta_writes_the_python_calls_cube(neox, tmp_path, capsys):
    """``lie-stats extract --delta`` on a run folder and on BASE TUNED folders writes the cube
    :func:`delta_cube` returns for the same checkpoints (all but the creation time)."""
    import xarray as xr

    from lie_stats.cli import main

    run = delta_run(neox, tmp_path / "run")
    out = tmp_path / "run_delta.nc"
    assert main(["extract", "--delta", str(run), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}: parameter deltas of model run at 3 checkpoints (steps 0, 10, 20)" in said
    xr.testing.assert_identical(_without_created(open_cube(out)), _without_created(delta_cube(run)))

    pair = tmp_path / "pair.nc"
    base, tuned = run / "step_0", run / "step_20"
    assert main(["extract", "--delta", str(base), str(tuned), "-o", str(pair), "--name", "ft"]) == 0
    capsys.readouterr()
    cube = open_cube(pair)
    xr.testing.assert_identical(_without_created(cube),
                                _without_created(delta_cube([base, tuned], model="ft")))
    assert cube[schema.MODEL].values.tolist() == ["ft"]
    assert cube["param_delta"].sel(model="ft", step=20, category="embedding").item() == pytest.approx(0.1, rel=1e-6)
    # an existing cube is not replaced without --force; with it, it is
    before = pair.read_bytes()
    assert main(["extract", "--delta", str(base), str(tuned), "-o", str(pair)]) == 2
    said = capsys.readouterr().err  # extract's own refusal (lie_stats.extraction.store.check_replace), naming what it holds
    assert f"{pair}: a cube is already there (2 checkpoint(s): ft@0, ft@20); extract never replaces" in said
    assert "--resume" not in said and pair.read_bytes() == before
    assert main(["extract", "--delta", str(base), str(tuned), "-o", str(pair), "--force"]) == 0
    assert open_cube(pair)[schema.MODEL].values.tolist() == ["run"]  # the base checkpoint's model


def test_extract_delta_bad_input_exits_2_naming_the_file(neox, tmp_path, capsys):
    from lie_stats.cli import main

    def run(*args):
        code = main(["extract", "--delta", *map(str, args)])
        return code, capsys.readouterr().err

    out = tmp_path / "d.nc"
    missing = tmp_path / "no_such_checkpoint"
    code, err = run(neox, missing, "-o", out)
    assert code == 2 and str(missing) in err and not out.exists()
    a = make_checkpoint("gpt_neox", tmp_path / "a", seed=0, n_layers=1, vocab_size=96)
    b = make_checkpoint("gpt_neox", tmp_path / "b", seed=0, n_layers=1, vocab_size=100)
    code, err = run(a, b, "-o", out)
    assert code == 2 and "Mismatched shapes" in err and str(a / ST) in err and str(b / ST) in err
    assert not out.exists()
    code, err = run(neox, "-o", out)  # one checkpoint folder: nothing to compare it with
    assert code == 2 and "at least two checkpoints" in err and not out.exists()
    code, err = run(neox, a, "-o", out, "--probe", tmp_path / "p.npz", "--families", "Q")
    assert code == 2 and "--families --probe: not options of extract --delta" in err
    for flag, value in (("--null-draws", "32"), ("--seed", "1"), ("--workers", "2"), ("--resume", None),
                        ("--store-dtype", "float32"), ("--projection", "none")):  # each refused alone
        code, err = run(neox, a, "-o", out, flag, *([value] if value else []))
        assert code == 2 and f"{flag}: not options of extract --delta" in err, (flag, err)
    assert not out.exists()
    notes = tmp_path / "notes.nc"
    notes.write_text("my notes")
    code, err = run(neox, a, "-o", notes)
    assert code == 2 and "is not a lie_stats cube" in err and notes.read_text() == "my notes"


@pytest.mark.parametrize("dataset", sorted(PAIR_CUBES))
def test_committed_pair_cube_has_the_format_the_one_assembly_writes(dataset, run_cube, tmp_path):
    """The committed delta variables carry what :func:`lie_stats.cube.assemble_shard` (the
    assembly shared with extraction) gives a delta cube today: dims, attributes, coordinate
    dtypes, as written and read back."""
    committed = open_cube(PAIR_CUBES[dataset][0])
    ours = open_cube(write_cube(run_cube, tmp_path / "d.nc"))
    for name in ours.data_vars:
        assert committed[name].dims == ours[name].dims, name
        assert committed[name].attrs == ours[name].attrs, name
        assert committed[name].dtype == ours[name].dtype, name
    for name in ours.coords:
        assert committed[name].dtype.kind == ours[name].dtype.kind, name
