"""Checkpoint sources (DESIGN.md, CLI ``SOURCE``): folders, run folders, shards, .bin, hub cache."""

from __future__ import annotations

import hashlib
import json
import pathlib
import pickle
import shutil

import pytest
import torch
from hypothesis import given, settings, strategies as st
from safetensors.torch import load_file, save_file

from lie_stats.errors import ArchitectureError, CheckpointError
from lie_stats.extraction.checkpoint import Checkpoint
from lie_stats.extraction.sources import open_source, parse_step

from ._checkpoints import (
    make_checkpoint, make_run, reshard, to_pytorch_bin, write_hub_cache,
)


def _sha(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _weights(ckpt: Checkpoint, **kw) -> list[dict[str, torch.Tensor]]:
    out = []
    for lw in ckpt.iter_layers(**kw):
        out.append({k: getattr(lw, k) for k in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")})
    return out


def _assert_same(a, b) -> None:
    assert len(a) == len(b)
    for la, lb in zip(a, b):
        for k in la:
            if la[k] is None:
                assert lb[k] is None, k
            else:
                assert la[k].dtype == lb[k].dtype and torch.equal(la[k], lb[k]), k


def _is_attention(name: str) -> bool:
    return ".attention." in name  # GPT-NeoX attention tensors (query_key_value, dense)


# ------------------------------------------------------------------ one folder
def test_single_folder(tiny_checkpoint):
    folder = tiny_checkpoint("gpt_neox")
    ckpts = open_source(str(folder))
    assert len(ckpts) == 1
    ck = ckpts[0]
    assert (ck.model, ck.step, ck.revision, ck.path, ck.source) == (folder.name, None, None, folder, str(folder))
    assert ck.config["model_type"] == "gpt_neox"
    names = ck.tensor_names()
    assert "gpt_neox.layers.1.attention.query_key_value.weight" in names and names == sorted(names)
    layers = list(ck.iter_layers())
    assert [lw.layer for lw in layers] == [0, 1]
    raw = load_file(folder / "model.safetensors")["gpt_neox.layers.1.attention.dense.weight"]
    assert torch.equal(layers[1].W_O.reshape(32, 32), raw.t())


def test_provenance_is_json_and_hashes_files(tiny_checkpoint):
    folder = tiny_checkpoint("llama", dtype=torch.bfloat16)
    ck, = open_source(str(folder))
    list(ck.iter_layers())
    prov = json.loads(json.dumps(ck.provenance()))
    assert prov["files"] == {"config.json": _sha(folder / "config.json"),
                             "model.safetensors": _sha(folder / "model.safetensors")}
    assert prov["dtype"] == "bfloat16" and prov["architecture"] == "llama"
    assert prov["shape"]["n_kv_heads"] == 2 and prov["shape"]["attention_extras"] == ["rotary"]
    assert prov["layout"] == "model.safetensors" and prov["step"] is None
    assert prov["source"] == str(folder) and prov["path"] == str(folder)
    assert next(ck.iter_layers()).W_Q.dtype == torch.bfloat16


def test_folder_named_by_step_takes_model_from_parent(tmp_path):
    folder = make_checkpoint("gpt2", tmp_path / "myrun" / "step_300")
    ck, = open_source(str(folder))
    assert (ck.model, ck.step, ck.revision) == ("myrun", 300, "step_300")


# ------------------------------------------------------------------ run folders
def test_parse_step():
    assert [parse_step(n) for n in ("step_7", "step70", "checkpoint-700", "global_step5")] == [7, 70, 700, 5]
    assert [parse_step(n) for n in ("main", "step", "steps10", "checkpoint_3", "step-4")] == [None] * 5


@settings(max_examples=50, deadline=None)
@given(step=st.integers(0, 10**12), fmt=st.sampled_from(["step_{}", "step{}", "checkpoint-{}", "global_step{}"]))
def test_parse_step_round_trip(step, fmt):
    assert parse_step(fmt.format(step)) == step
    assert parse_step(fmt.format(step) + "x") is None


def test_relative_source_gives_absolute_provenance_path(tiny_checkpoint, monkeypatch):
    folder = tiny_checkpoint("gpt2")
    monkeypatch.chdir(folder.parent)
    ck, = open_source(folder.name)
    assert ck.provenance()["path"] == str(folder) and ck.source == folder.name


def test_run_folder_parsed_and_sorted_numerically(tmp_path):
    run = tmp_path / "run"
    # lexical order would be checkpoint-100, step20, step_5; numeric is 5, 20, 100
    make_checkpoint("gpt2", run / "step20", seed=1)
    make_checkpoint("gpt2", run / "checkpoint-100", seed=2)
    make_checkpoint("gpt2", run / "step_5", seed=3)
    (run / "logs").mkdir()
    (run / "notes.txt").write_text("not a checkpoint")
    ckpts = open_source(str(run))
    assert [(c.model, c.step, c.revision) for c in ckpts] == [
        ("run", 5, "step_5"), ("run", 20, "step20"), ("run", 100, "checkpoint-100")]
    first = _weights(ckpts[0])
    _assert_same(first, _weights(open_source(str(run / "step_5"))[0]))
    assert not torch.equal(first[0]["W_Q"], _weights(ckpts[1])[0]["W_Q"])  # distinct seeds
    sel = open_source(str(run), revisions="checkpoint-100,step_5")
    assert [c.step for c in sel] == [5, 100]
    with pytest.raises(CheckpointError, match="Did you mean 'step20'"):
        open_source(str(run), revisions=["step2O"])


def test_run_folder_errors(tmp_path):
    run = tmp_path / "run"
    make_run(run, "gpt2", [5], naming="step_{}")
    make_checkpoint("gpt2", run / "step5")
    with pytest.raises(CheckpointError, match="both hold step 5"):
        open_source(str(run))
    shutil.rmtree(run / "step5")
    (run / "step_9").mkdir()
    with pytest.raises(CheckpointError, match=r"step_9/config\.json: missing"):
        open_source(str(run))


def test_source_errors(tmp_path):
    with pytest.raises(CheckpointError, match="Did you mean the hub repository 'hf:EleutherAI/pythia-70m'"):
        open_source("EleutherAI/pythia-70m")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="neither a checkpoint folder"):
        open_source(str(tmp_path / "empty"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    ck, = open_source(str(bad))
    with pytest.raises(CheckpointError, match=r"bad/config\.json: not valid JSON"):
        ck.config
    (bad / "config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="expected a JSON object, got list"):
        open_source(str(bad))[0].config
    (bad / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(CheckpointError, match="no weights; expected one of model.safetensors.index.json"):
        open_source(str(bad))[0].tensor_names()
    with pytest.raises(CheckpointError, match="single checkpoint folder has no revisions"):
        open_source(str(bad), revisions=["step1"])
    with pytest.raises(CheckpointError, match="expected hf:ORG/NAME"):
        open_source("hf:justaname")


def test_corrupt_safetensors_names_the_file(tiny_checkpoint, tmp_path):
    folder = shutil.copytree(tiny_checkpoint("gpt2"), tmp_path / "c")
    (folder / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(CheckpointError, match=r"c/model\.safetensors: not a readable safetensors file"):
        open_source(str(folder))[0].tensor_names()


def test_unknown_tensor_suggests(tiny_checkpoint):
    ck, = open_source(str(tiny_checkpoint("gpt2")))
    with pytest.raises(CheckpointError, match="Did you mean 'transformer.h.0.attn.c_attn.weight'"):
        ck.get_tensor("transformer.h.0.attn.c_atn.weight")


# ------------------------------------------------------------------ architecture errors via sources
def test_unknown_architecture_names_config_and_lists_supported(tiny_checkpoint, tmp_path):
    from lie_stats.extraction.architectures import SUPPORTED_ARCHITECTURES

    folder = shutil.copytree(tiny_checkpoint("gpt2"), tmp_path / "t5ish")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "t5"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ArchitectureError) as e:
        open_source(str(folder))[0].adapter()
    msg = str(e.value)
    assert str(folder / "config.json") in msg and "'t5'" in msg
    assert all(a in msg for a in SUPPORTED_ARCHITECTURES)


def test_missing_and_misshapen_attention_tensors(tiny_checkpoint, tmp_path):
    folder = shutil.copytree(tiny_checkpoint("gpt2", head=False), tmp_path / "m")
    state = load_file(folder / "model.safetensors")
    del state["h.1.attn.c_proj.weight"]
    save_file(state, folder / "model.safetensors")
    with pytest.raises(ArchitectureError, match=r"'h\.1\.attn\.c_proj\.weight' of layer 1 is missing"):
        open_source(str(folder))[0].adapter()
    state["h.1.attn.c_proj.weight"] = torch.zeros(32, 31)
    save_file(state, folder / "model.safetensors")
    ck, = open_source(str(folder))
    with pytest.raises(ArchitectureError) as e:
        list(ck.iter_layers())
    msg = str(e.value)
    assert "'h.1.attn.c_proj.weight'" in msg and "(32, 31)" in msg and "expected (32, 32)" in msg
    assert str(folder / "model.safetensors") in msg


# ------------------------------------------------------------------ laziness
def test_iter_layers_reads_one_layer_at_a_time(tiny_checkpoint):
    ck, = open_source(str(tiny_checkpoint("llama")))
    adapter = ck.adapter()
    calls: list[str] = []
    real = ck.get_tensor

    def counting(name: str) -> torch.Tensor:
        calls.append(name)
        return real(name)

    ck.get_tensor = counting
    it = ck.iter_layers()
    for layer in range(adapter.shape.n_layers):
        before = len(calls)
        lw = next(it)
        new = calls[before:]
        assert lw.layer == layer
        assert sorted(new) == sorted(adapter.layer_tensor_names(layer))  # each read once
        assert all(f"layers.{layer}.self_attn." in n for n in new)
    assert len(calls) == len(adapter.attention_tensor_names()) == 2 * 4
    before = len(calls)
    next(ck.iter_layers(fold_ln=True))
    assert calls[before:][-1] == "model.layers.0.input_layernorm.weight"


def test_only_attention_shards_are_opened(tiny_checkpoint, tmp_path):
    """A shard without attention tensors is never parsed (here: it is garbage)."""
    folder = shutil.copytree(tiny_checkpoint("gpt_neox"), tmp_path / "sh")
    ref = _weights(open_source(str(tiny_checkpoint("gpt_neox")))[0])
    reshard(folder, lambda n: "attn.safetensors" if _is_attention(n) else "rest.safetensors")
    (folder / "rest.safetensors").write_bytes(b"this would fail to parse")
    ck, = open_source(str(folder))
    _assert_same(_weights(ck), ref)
    assert ck.files_read == ["config.json", "model.safetensors.index.json", "attn.safetensors"]
    assert set(ck.provenance()["files"]) == {"config.json", "model.safetensors.index.json", "attn.safetensors"}


def test_sharded_index_by_size(tiny_checkpoint, tmp_path):
    folder = make_checkpoint("gpt_neox", tmp_path / "sized", max_shard_size="20KB")
    assert (folder / "model.safetensors.index.json").exists()
    assert len(list(folder.glob("*.safetensors"))) > 2
    _assert_same(_weights(open_source(str(folder))[0]),
                 _weights(open_source(str(tiny_checkpoint("gpt_neox")))[0]))


def test_index_errors(tiny_checkpoint, tmp_path):
    folder = shutil.copytree(tiny_checkpoint("gpt_neox"), tmp_path / "ix")
    reshard(folder, lambda n: "a.safetensors" if _is_attention(n) else "b.safetensors")
    index = folder / "model.safetensors.index.json"
    index.write_text('{"metadata": {}}')
    with pytest.raises(CheckpointError, match=r"index\.json: expected a JSON object with a 'weight_map'"):
        open_source(str(folder))[0].tensor_names()
    index.write_text(json.dumps({"weight_map": {"x": "../../etc/passwd"}}))
    with pytest.raises(CheckpointError, match="must be a plain file name"):
        open_source(str(folder))[0].tensor_names()
    index.write_text(json.dumps({"weight_map": {
        "gpt_neox.layers.0.attention.dense.weight": "missing.safetensors"}}))
    with pytest.raises(CheckpointError, match=r"ix/missing\.safetensors: file not found"):
        open_source(str(folder))[0].get_tensor("gpt_neox.layers.0.attention.dense.weight")


# ------------------------------------------------------------------ pytorch_model.bin
@pytest.mark.parametrize("shards", [1, 2])
def test_pytorch_bin_weights_only(tiny_checkpoint, tmp_path, shards):
    ref = _weights(open_source(str(tiny_checkpoint("bert")))[0])
    folder = to_pytorch_bin(shutil.copytree(tiny_checkpoint("bert"), tmp_path / "b"), shards=shards)
    assert not list(folder.glob("*.safetensors"))
    ck, = open_source(str(folder))
    _assert_same(_weights(ck), ref)
    prov = ck.provenance()
    assert prov["dtype"] == "float32"
    assert prov["layout"] == ("pytorch_model.bin" if shards == 1 else "pytorch_model.bin.index.json")


class _Payload:
    """Unpickling this runs ``exec``: a malicious checkpoint's payload."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def test_malicious_pickle_is_refused_and_payload_does_not_run(tiny_checkpoint, tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    shutil.copy(tiny_checkpoint("gpt2", head=False) / "config.json", folder / "config.json")
    marker = tmp_path / "PWNED"
    state = dict(load_file(tiny_checkpoint("gpt2", head=False) / "model.safetensors"))
    state["h.0.attn.c_attn.weight"] = _Payload(marker)
    torch.save(state, folder / "pytorch_model.bin")
    ck, = open_source(str(folder))
    with pytest.raises(CheckpointError, match=r"evil/pytorch_model\.bin: refused to load"):
        ck.tensor_names()
    assert not marker.exists()
    # The payload is real: unsafe unpickling (never done by lie_stats) would have run it.
    torch.load(folder / "pytorch_model.bin", weights_only=False)
    assert marker.read_text() == "pwned"


def test_checkpoint_pickles_for_workers(tiny_checkpoint):
    ck, = open_source(str(tiny_checkpoint("gpt2")))
    first = _weights(ck)
    clone = pickle.loads(pickle.dumps(ck))
    _assert_same(_weights(clone), first)


# ------------------------------------------------------------------ hub (offline, local cache)
@pytest.fixture
def hub_cache(tmp_path, monkeypatch, no_network):
    """A hub-format cache of ORG/tiny: step100, step200 and main; the non-attention shard is
    absent from every snapshot (fetching it would fail offline)."""
    folders = {}
    for i, rev in enumerate(["step100", "step200", "main"]):
        f = make_checkpoint("gpt_neox", tmp_path / "src" / rev, seed=10 + i)
        reshard(f, lambda n: "model-00001-of-00002.safetensors" if _is_attention(n)
                else "model-00002-of-00002.safetensors")
        folders[rev] = f
    cache = tmp_path / "hf_cache"
    write_hub_cache(cache, "ORG/tiny", folders, omit={"model-00002-of-00002.safetensors"})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache, folders


def test_hub_all_revisions_offline(hub_cache):
    cache, folders = hub_cache
    ckpts = open_source("hf:ORG/tiny", revisions="all", cache_dir=cache)
    assert [(c.model, c.step, c.revision) for c in ckpts] == [
        ("ORG/tiny", 100, "step100"), ("ORG/tiny", 200, "step200")]
    for ck in ckpts:
        _assert_same(_weights(ck), _weights(open_source(str(folders[ck.revision]))[0]))
        assert ck.fetched == ["config.json", "model.safetensors.index.json",
                              "model-00001-of-00002.safetensors"]
        prov = ck.provenance()
        attn = folders[ck.revision] / "model-00001-of-00002.safetensors"
        assert prov["files"]["model-00001-of-00002.safetensors"] == _sha(attn)
        assert prov["files"]["config.json"] == _sha(folders[ck.revision] / "config.json")
        assert prov["repo_id"] == "ORG/tiny" and prov["revision"] == ck.revision
        assert "snapshots" in prov["path"]


def test_hub_named_revisions_and_default_main(hub_cache):
    cache, _ = hub_cache
    assert [c.step for c in open_source("hf:ORG/tiny", revisions="step200,step100", cache_dir=cache)] == [100, 200]
    main, = open_source("hf:ORG/tiny", cache_dir=cache)
    assert (main.revision, main.step) == ("main", None)
    with pytest.raises(CheckpointError, match=r"hf:ORG/tiny@step300/config\.json: file not found \(HF_HUB_OFFLINE"):
        open_source("hf:ORG/tiny", revisions=["step300"], cache_dir=cache)


def test_hub_fold_ln_fetches_nothing_it_cannot_have(hub_cache):
    """fold_ln needs the norm tensors, which live in the shard missing from the cache."""
    cache, _ = hub_cache
    ck, = open_source("hf:ORG/tiny", revisions=["step100"], cache_dir=cache)
    with pytest.raises(CheckpointError, match=r"model-00002-of-00002\.safetensors: file not found"):
        next(ck.iter_layers(fold_ln=True))


def test_hub_single_file_and_no_step_branches(tmp_path, monkeypatch, no_network):
    f = make_checkpoint("gpt2", tmp_path / "src" / "main")
    cache = tmp_path / "c"
    write_hub_cache(cache, "ORG/single", {"main": f})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ck, = open_source("hf:ORG/single", revisions=["main"], cache_dir=cache)
    _assert_same(_weights(ck), _weights(open_source(str(f))[0]))
    assert ck.fetched == ["config.json", "model.safetensors"]
    with pytest.raises(CheckpointError, match="found no branches named stepN"):
        open_source("hf:ORG/single", revisions="all", cache_dir=cache)
    with pytest.raises(CheckpointError, match="holds no revisions"):
        open_source("hf:ORG/absent", revisions="all", cache_dir=cache)
