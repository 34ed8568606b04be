"""Tests of the pico_shapes build (datasets/pico_shapes/build.py) in its smoke mode.

pico_shapes reuses pico_pythia's corpus, tokenizer, data order, optimizer, schedule,
checkpoints and resumable state; its models are Llama-style with an explicit head_dim so that
d_model is not n_heads x d_head. The smoke mode trains two tiny such models on the committed
sample text.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ._builds import load_build, safetensors_bytes

ROOT = Path(__file__).resolve().parents[1]
DS = ROOT / "datasets" / "pico_shapes"


shapes = load_build("pico_shapes_build", DS / "build.py")
pp = shapes.pp


@pytest.fixture(scope="module")
def smoke_a(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shapes") / "a"
    res = subprocess.run([sys.executable, str(DS / "build.py"), "--smoke", "--out", str(out), "--threads", "1"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return out


def test_design_varies_width_count_and_d_model_independently():
    cells = {(s.d_head, s.n_heads, s.d_model) for s in shapes.SPECS}
    assert len(cells) == len(shapes.CELLS) == 7 and len(shapes.SPECS) == 14
    assert {s.seed for s in shapes.SPECS} == {0, 1}
    assert all(h >= 4 for _, h, _ in cells)  # several head pairs per layer (A8 excludes one-pair models)
    assert sum(dh * h != d for dh, h, d in cells) >= 4  # d_model is not tied to n_heads x d_head
    d = shapes.design_matrix()
    c = np.array(d["correlation"])
    off = np.abs(c - np.diag(np.diag(c)))
    assert off.max() < 0.6 and d["condition_number_standardized"] < 2.5
    # each factor takes more than one value
    assert len({dh for dh, _, _ in cells}) == 4 and len({h for _, h, _ in cells}) == 2
    assert len({m for _, _, m in cells}) == 3


def test_llama_config_carries_head_dim_and_the_adapter_reads_it():
    from lie_stats.extraction.architectures.registry import config_shape

    spec = shapes.ShapeSpec("t", n_layers=2, n_heads=8, d_head=64, d_model=64, seed=0)
    cfg = shapes.make_config(spec, shapes.RUN, 4096).to_dict()
    shape = config_shape(cfg, source="t")
    assert (shape.n_layers, shape.n_heads, shape.d_head, shape.d_model) == (2, 8, 64, 64)
    assert cfg["intermediate_size"] == 3 * 64 and not cfg["tie_word_embeddings"]


def test_small_init_on_llama_names():
    import torch

    spec = shapes.ShapeSpec("t", n_layers=4, n_heads=4, d_head=32, d_model=64, seed=3)
    model, info = shapes.new_llama(spec, shapes.RUN, 2048)
    assert info["std_small"] == pytest.approx(math.sqrt(2 / (5 * 64)))
    assert info["std_out"] == pytest.approx(2 / (4 * math.sqrt(64)))
    p = dict(model.named_parameters())
    for name in ("model.layers.1.self_attn.q_proj.weight", "model.embed_tokens.weight", "lm_head.weight",
                 "model.layers.2.mlp.up_proj.weight"):
        assert float(p[name].detach().std()) == pytest.approx(info["std_small"], rel=0.05), name
    for name in ("model.layers.0.self_attn.o_proj.weight", "model.layers.3.mlp.down_proj.weight"):
        assert float(p[name].detach().std()) == pytest.approx(info["std_out"], rel=0.05), name
    assert torch.all(p["model.layers.0.input_layernorm.weight"] == 1)
    assert p["model.layers.0.self_attn.q_proj.weight"].shape == (4 * 32, 64)


def test_smoke_build_learns_and_keeps_the_shapes(smoke_a):
    run = shapes.SMOKE_RUN
    for spec in shapes.SMOKE_SPECS:
        mdir = smoke_a / spec.name
        steps = sorted(int(p.name.split("_")[1]) for p in mdir.glob("step_*"))
        assert steps == pp.checkpoint_steps(run.pretrain_steps, run.n_between, run.max_pow2, run.ckpt_base)
        cfg = json.loads((mdir / f"step_{run.pretrain_steps}" / "config.json").read_text())
        assert cfg["architectures"] == ["LlamaForCausalLM"]
        assert (cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["head_dim"], cfg["hidden_size"]) == (
            spec.n_layers, spec.n_heads, spec.d_head, spec.d_model)
        done = json.loads((mdir / "DONE.json").read_text())
        assert done["d_model"] == spec.d_model and done["d_head"] == spec.d_head
        assert done["final_val_loss"] < done["init_val_loss"]
    summary = json.loads((smoke_a / "curves" / "summary.json").read_text())
    assert [s["model"] for s in summary] == [s.name for s in shapes.SMOKE_SPECS]


def test_interrupted_then_resumed_build_is_bit_identical(smoke_a, tmp_path):
    out = tmp_path / "b"
    # 12 steps per model in smoke mode: stop in the middle of the second model
    assert shapes.main(["--smoke", "--out", str(out), "--stop-after", "17"]) == 3
    second = shapes.SMOKE_SPECS[1].name
    assert (out / second / "state.pt").exists() and not (out / second / "DONE.json").exists()
    assert shapes.main(["--smoke", "--out", str(out)]) == 0
    ref, got = safetensors_bytes(smoke_a), safetensors_bytes(out)
    assert ref.keys() == got.keys() and len(got) == 2 * 5
    assert [k for k in ref if ref[k] != got[k]] == []


def test_the_cube_gives_the_predictors_their_own_values(smoke_a, tmp_path):
    """Extracted, a model whose d_model is not n_heads x d_head keeps all three in the cube,
    and the model_comparison table reads them (and their ratio) from the model coordinates."""
    import lie_stats as ls
    from lie_stats.extraction.pipeline import ExtractOptions
    from lie_stats.spec import Prediction
    from lie_stats.spec.tables import MODEL_PREDICTORS, TestInput, model_table

    out = tmp_path / "s.nc"
    srcs = [str(smoke_a / s.name) for s in shapes.SMOKE_SPECS]
    opts = ExtractOptions(families=("Q",), projections=("none",), null_draws=64, device="cpu")
    cube = ls.extract(srcs, out, options=opts, progress=False)
    af = cube["abelian_fraction"].sel(family="Q", projection="none").isel(step=-1)
    table = model_table(TestInput(arrays={"response": af}, params={}, prediction=Prediction("preferred"), reference={}))
    assert {"log2_d_head", "log2_n_heads", "log2_d_model", "d_head_over_d_model"} <= set(MODEL_PREDICTORS)
    for s in shapes.SMOKE_SPECS:
        row = table.loc[s.name]
        assert (row["d_head"], row["n_heads"], row["d_model"]) == (s.d_head, s.n_heads, s.d_model)
        assert row["d_head_over_d_model"] == pytest.approx(s.d_head / s.d_model)
        assert row["log2_d_model"] == pytest.approx(math.log2(s.d_model))
