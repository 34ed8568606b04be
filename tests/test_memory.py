"""Bring your own model: ``ls.extract`` on model objects in memory (lie_stats.extraction.memory, extract_api).

Each in-memory architecture is checked against the folder path on the same weights: the model
object extracted in memory gives the cube that the same weights saved with ``save_pretrained``
and extracted from the folder give (numbers, dims, coordinates), and the provenance differs
only where it must (source, path, files, hashes, timing). Also: a list of objects is one run,
single checkpoints get ``change_from_init`` NaN with a note, probes as token arrays, names
from the config, and the errors. All offline.
"""

from __future__ import annotations

import json
import logging
import pathlib

import numpy as np
import pytest
import torch
import xarray as xr

import lie_stats as ls
from lie_stats.errors import CheckpointError, LieStatsError
from lie_stats.extraction.memory import open_objects

from ._checkpoints import make_model

FAST = dict(families=["Q", "K"], null_draws=64, progress=False)
#: Provenance keys an in-memory checkpoint may differ in from the same weights in a folder.
WHERE_FROM = {"source", "path", "revision", "layout", "files", "class", "tensors_sha256", "config_sha256",
              "name_or_path", "timing", "init", "commit"}


def _prov(cube: xr.Dataset) -> list[dict]:
    return json.loads(cube.attrs["provenance"])


def assert_same_cube(mem: xr.Dataset, disk: xr.Dataset) -> None:
    """Identical numbers, dims and coordinates; provenance equal but where the weights came from."""
    xr.testing.assert_identical(mem.drop_attrs(), disk.drop_attrs())
    for pm, pd in zip(_prov(mem), _prov(disk), strict=True):
        differ = {k for k in set(pm) | set(pd) if pm.get(k) != pd.get(k)}
        assert differ <= WHERE_FROM, differ - WHERE_FROM
        assert pm["source"] == "in memory" and pm["files"] == {} and len(pm["tensors_sha256"]) == 64
        assert {k: v for k, v in pm["init"].items() if k not in ("path", "revision")} == {
            k: v for k, v in pd["init"].items() if k not in ("path", "revision")}


@pytest.mark.parametrize("arch,kw", [("gpt_neox", {}), ("llama", {"n_kv_heads": 2})])
def test_an_object_in_memory_gives_the_cube_of_its_saved_folder(arch, kw, tmp_path):
    model = make_model(arch, seed=3, **kw)
    mem = ls.extract(model, name="tiny", **FAST)
    assert not list(tmp_path.iterdir())  # nothing written
    model.save_pretrained(tmp_path / "tiny")
    disk = ls.extract(str(tmp_path / "tiny"), tmp_path / "tiny.nc", **FAST)
    assert_same_cube(mem, ls.open_cube(tmp_path / "tiny.nc"))
    assert_same_cube(mem, disk)
    assert mem["n_kv_heads"].values.tolist() == [kw.get("n_kv_heads", 4)]
    assert _prov(mem)[0]["class"] == type(model).__name__


def test_a_list_of_objects_is_one_run_as_its_run_folder(tmp_path):
    models = [make_model("gpt2", seed=s, head=False) for s in (0, 1, 2)]
    mem = ls.extract(models, name="run", steps=[0, 10, 20], **FAST)
    for step, m in zip((0, 10, 20), models):
        m.save_pretrained(tmp_path / "run" / f"step_{step}")
    disk = ls.extract(str(tmp_path / "run"), **FAST)
    assert_same_cube(mem, disk)
    cfi = mem["change_from_init"].sel(model="run")
    assert float(abs(cfi.sel(step=0)).max()) == 0.0 and bool((cfi.sel(step=[10, 20]) > 0).all())
    # without steps=: the positions 0, 1, 2
    assert ls.extract(models, name="run", **FAST)["step"].values.tolist() == [0, 1, 2]
    with pytest.raises(CheckpointError, match="3 distinct non-negative integers"):
        ls.extract(models, steps=[0, 0, 1], **FAST)


def test_a_single_checkpoint_has_no_change_from_init_and_says_why(tmp_path, caplog):
    """Before: a lone checkpoint was its own init, change_from_init 0.0 everywhere."""
    model = make_model("gpt2", seed=1, head=False)
    cube = ls.extract(model, name="one", **FAST)
    assert cube["step"].values.tolist() == [0]
    assert np.isnan(cube["change_from_init"].values).all()
    assert "change_from_init is NaN" in _prov(cube)[0]["init"]["note"]
    # a run folder of one checkpoint at a later step: no init either
    model.save_pretrained(tmp_path / "run" / "step_500")
    lone = ls.extract(str(tmp_path / "run"), **FAST)
    assert np.isnan(lone["change_from_init"].values).all()
    # ... but the only checkpoint at step 0 is the init: change 0
    model.save_pretrained(tmp_path / "run0" / "step_0")
    first = ls.extract(str(tmp_path / "run0"), **FAST)
    assert float(np.nanmax(np.abs(first["change_from_init"].values))) == 0.0
    assert "note" not in _prov(first)[0]["init"]


def test_names_come_from_the_config_or_name_never_from_a_generic_folder(tmp_path, capsys):
    import transformers

    model = make_model("gpt2", seed=2, head=False)
    model.save_pretrained(tmp_path / "pythia-ft" / "model")
    loaded = transformers.GPT2Model.from_pretrained(tmp_path / "pythia-ft" / "model")
    assert ls.extract(loaded, **FAST).model.values.tolist() == ["pythia-ft"]  # _name_or_path
    cube = ls.extract(str(tmp_path / "pythia-ft" / "model"), families=["Q"], null_draws=64, progress=True)
    assert cube.model.values.tolist() == ["pythia-ft"]
    err = capsys.readouterr().err
    assert "pythia-ft (single checkpoint)" in err and "@None" not in err, err
    # a model loaded from a step folder: the run's name and the step
    model.save_pretrained(tmp_path / "r1" / "step_40")
    ck, = open_objects(transformers.GPT2Model.from_pretrained(tmp_path / "r1" / "step_40"))
    assert (ck.model, ck.step) == ("r1", 40)
    # a fresh model has no _name_or_path: its class; name= wins over both
    assert ls.extract(model, **FAST).model.values.tolist() == ["GPT2Model"]
    assert ls.extract(loaded, name="mine", **FAST).model.values.tolist() == ["mine"]


def test_probe_tokens_as_tensor_or_array_give_the_probe_files_numbers(tmp_path):
    from lie_stats.extraction.probe import ProbeSet, save_probe

    model = make_model("gpt_neox", seed=5)
    ids = torch.randint(0, 96, (3, 9), generator=torch.Generator().manual_seed(0))
    as_tensor = ls.extract(model, name="p", probe=ids, **FAST)
    as_array = ls.extract(model, name="p", probe=ids.numpy().astype(np.int32), **FAST)
    model.save_pretrained(tmp_path / "p")
    probe_file = save_probe(ProbeSet.from_tokens(ids.numpy(), tokenizer="t", text_source="s",
                                                 first_token="bos"), tmp_path / "probe.npz")
    disk = ls.extract(str(tmp_path / "p"), probe=str(probe_file), **FAST)
    for name in ("sink_score", "value_norm", "grad_alignment", "head_label"):
        assert np.isfinite(as_tensor[name].values).any(), name
        np.testing.assert_array_equal(as_tensor[name].values, disk[name].values)
        np.testing.assert_array_equal(as_array[name].values, disk[name].values)
    act = _prov(as_tensor)[0]["activations"]["probe"]
    assert act["first_token"] == "unknown" and act["sha256"] == _prov(disk)[0]["activations"]["probe"]["sha256"]
    with pytest.raises(Exception, match="2-d integer"):
        ls.extract(model, probe=torch.rand(2, 5), **FAST)


def test_out_writes_the_same_cube_and_nothing_without_it(tmp_path):
    model = make_model("gpt2", seed=6, head=False)
    mem = ls.extract(model, name="w", **FAST)
    written = ls.extract(model, tmp_path / "w.nc", name="w", **FAST)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.nc"]  # the shard store is gone
    xr.testing.assert_identical(mem.drop_attrs(), ls.open_cube(tmp_path / "w.nc").drop_attrs())
    xr.testing.assert_identical(mem.drop_attrs(), written.drop_attrs())
    with pytest.raises(LieStatsError, match="concern the file at out="):
        ls.extract(model, resume=True, **FAST)


def test_objects_and_folders_mix_in_one_cube(tmp_path):
    a, b = make_model("gpt2", seed=7, head=False), make_model("gpt_neox", seed=8)
    b.save_pretrained(tmp_path / "neox")
    cube = ls.extract([a, str(tmp_path / "neox")], names=["a", "neox"], **FAST)
    assert cube.model.values.tolist() == ["a", "neox"]
    assert [p["source"] for p in _prov(cube)] == ["in memory", str(tmp_path / "neox")]


def test_what_cannot_be_extracted_is_named(tmp_path):
    with pytest.raises(CheckpointError, match="cannot extract a torch.nn.modules.linear.Linear; expected"):
        ls.extract(torch.nn.Linear(2, 2), **FAST)
    with pytest.raises(CheckpointError, match="cannot extract a builtins.int"):
        ls.extract(3, **FAST)
    model = make_model("gpt2", seed=1, head=False)
    with pytest.raises(LieStatsError, match="one source"):
        ls.extract([model, str(tmp_path)], name="x", **FAST)
    half = make_model("gpt2", seed=1, head=False).to(torch.float16)
    cube = ls.extract(half, name="half", **FAST)  # float16 is read (as from a folder)
    assert _prov(cube)[0]["dtype"] == "float16"


def test_a_transformerlens_4_bridge_is_refused_with_what_to_pass_instead():
    """TransformerLens 4 has no HookedTransformer; its TransformerBridge wraps a transformers model."""
    bridge_class = type("TransformerBridge", (torch.nn.Module,), {"__module__": "transformer_lens.model_bridge.bridge"})
    with pytest.raises(CheckpointError, match="TransformerBridge .* is not read: extract the transformers model"):
        ls.extract(bridge_class(), **FAST)


def test_tensors_hash_follows_the_weights():
    model = make_model("gpt2", seed=9, head=False)
    before = open_objects(model)[0].content_id()
    assert open_objects(model)[0].content_id() == before
    with torch.no_grad():
        model.h[0].attn.c_attn.weight[0, 0] += 1.0
    assert open_objects(model)[0].content_id() != before


def test_a_hooked_transformer_is_extracted_as_it_holds_its_weights(caplog):
    tl = pytest.importorskip("transformer_lens", reason="the transformerlens extra is not installed")
    if "HookedTransformer" not in dir(tl):
        pytest.skip("TransformerLens 4 removed HookedTransformer")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cfg = tl.HookedTransformerConfig(n_layers=2, d_model=32, n_ctx=16, d_head=8, n_heads=4, d_vocab=40,
                                         act_fn="gelu", normalization_type="LN", seed=0,
                                         positional_embedding_type="rotary", rotary_dim=4, model_name="tl-tiny")
        model = tl.HookedTransformer(cfg)
    cube = ls.extract(model, **FAST)
    assert cube.model.values.tolist() == ["tl-tiny"] and cube["architecture"].values.tolist() == ["transformer_lens"]
    assert cube["attention_extras"].values.tolist() == ["rotary"]
    prov = _prov(cube)[0]
    assert prov["class"] == "HookedTransformer" and prov["transformer_lens"]["normalization_type"] == "LN"
    # ov_norm (METRICS.md §5.3) from the object's own per-head matrices
    for layer, block in enumerate(model.blocks):
        expect = torch.linalg.matrix_norm(block.attn.W_V.detach() @ block.attn.W_O.detach()).double()
        got = cube["ov_norm"].sel(model="tl-tiny", layer=layer).values.ravel()
        np.testing.assert_allclose(got, expect.numpy(), rtol=1e-6)
    with pytest.raises(CheckpointError, match="transformers models only"):
        ls.extract(model, probe=np.ones((1, 4), dtype=np.int64), **FAST)
