"""Activation metrics (METRICS.md §7) and anchor / worker labels (§8): lie_stats.extraction.activations.

What would fail if the code were wrong:

* a hand-built model whose head 1 attends only to position 0 and reads nothing there gets
  ``sink_score = sink_argmax_fraction = 1``, ``sink_value_ratio = 0`` and the ``anchor`` label,
  while the other (random) heads do not;
* the per-head writes rebuilt from the hooks' captures and the adapter's canonical weights sum
  (plus biases) to the attention block's own output, for every architecture family;
* ``grad_alignment`` equals the cosine of central finite-difference gradients, the objective's
  taken through :func:`lie_stats.extraction.metrics.compute_layer` (an independent implementation) and
  the loss's through the model's logits and a float64 cross-entropy written in the test;
* results do not depend on the batch size;
* the differentiable ``killing_cv`` equals ``compute_layer``'s for every family.
"""

from __future__ import annotations

import pathlib
import types

import numpy as np
import pytest
import torch

from lie_stats.extraction.activations import (
    activation_metrics, capture, functional_killing, head_labels, head_writes, killing_cv_torch,
    layer_objective, load_eager_model, sink_table,
)
from lie_stats.extraction.architectures import LayerWeights, adapter_for
from lie_stats.errors import MetricError
from lie_stats.extraction.metrics import compute_layer
from lie_stats.extraction.probe import ProbeSet, build_probe
from lie_stats.schema import FAMILIES, LABEL_CODES

from ._checkpoints import make_model

DATA = pathlib.Path(__file__).parent / "data" / "pico_corpus_sample.txt"
ANCHOR, WORKER, MIXED = (float(LABEL_CODES[k]) for k in ("anchor", "worker", "mixed"))


def _probe(n_seq=5, seq_len=9, vocab=96, first=0, seed=0, first_token="bos") -> ProbeSet:
    rng = np.random.default_rng(seed)
    t = rng.integers(1, vocab, (n_seq, seq_len))
    t[:, 0] = first
    return ProbeSet.from_tokens(t, tokenizer="random ids", text_source="rng", first_token=first_token)


# ------------------------------------------------------------------------- killing_cv in torch
@pytest.mark.parametrize("family", FAMILIES)
def test_killing_cv_torch_equals_compute_layer(family):
    g = torch.Generator().manual_seed(7)
    H, d, r = 5, 12, 3
    w = types.SimpleNamespace(layer=0, **{f"W_{m}": torch.randn(H, d, r, generator=g, dtype=torch.float64)
                                          for m in "QKV"}, W_O=torch.randn(H, r, d, generator=g, dtype=torch.float64))
    ref = compute_layer(w, families=(family,))["killing_cv"][0, 0]
    ours = float(layer_objective(w, family=family))
    assert ours == pytest.approx(ref, rel=1e-10)
    # and the dense definition (METRICS.md §2-§4.4) written out with d_model x d_model operators
    A = {"Q": (w.W_Q, w.W_Q), "K": (w.W_K, w.W_K), "V": (w.W_V, w.W_V), "O": (w.W_O.mT, w.W_O.mT),
         "QK": (w.W_Q, w.W_K), "OV": (w.W_V, w.W_O.mT)}[family]
    ops = [(A[0][h] @ A[1][h].T).numpy() for h in range(H)]
    K = np.array([[2 * d * np.trace(a @ b) - 2 * np.trace(a) * np.trace(b) for b in ops] for a in ops])
    khat = (K / np.sqrt(np.abs(np.outer(np.diag(K), np.diag(K)))))[np.triu_indices(H, 1)]
    assert ours == pytest.approx(khat.std() / np.abs(khat).mean(), rel=1e-10)
    assert ref > 0.05  # random heads: a non-trivial value, so agreement means something


def test_killing_cv_torch_gradient_and_errors():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(3, 6, 2, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: killing_cv_torch(x, x), (W,))
    with pytest.raises(MetricError, match="at least 2 heads"):
        killing_cv_torch(W[:1], W[:1])
    with pytest.raises(MetricError, match="Did you mean 'killing_cv'"):
        layer_objective(types.SimpleNamespace(W_Q=W), objective="killing_c")


# ------------------------------------------------------------------------- hand-built sink head
def _set_sink_head(model, arch: str, h: int, *, a: int = 0, b: int = 1, c: int = 2,
                   scale: float = 100.0, v_gain: float = 1e-3) -> None:
    """Head ``h`` of layer 0: constant query, key = coordinate ``a`` of x, value reads only
    coordinate ``c``. Token 0's embedding is ``M e_a - M e_b``, so after the (gain 1, bias 0)
    norm ``x_0 = sqrt(d/2) (e_a - e_b)`` is large on ``a`` and exactly 0 on ``c``; other tokens
    are 0 on ``a`` and ``b``. So every query puts all its weight on position 0, and ``v_0 = 0``."""
    with torch.no_grad():
        if arch == "gpt2":
            tr = model.transformer
            emb, norm = tr.wte.weight, tr.h[0].ln_1
            tr.wpe.weight.zero_()
            qkv_w, qkv_b = tr.h[0].attn.c_attn.weight, tr.h[0].attn.c_attn.bias  # Conv1D [d, 3d]
            d = emb.shape[1]
            dh = d // model.config.n_head
            cols = [slice(i * d + h * dh, i * d + (h + 1) * dh) for i in range(3)]
            for s in cols:
                qkv_w[:, s] = 0.0
                qkv_b[s] = 0.0
            qkv_b[cols[0].start] = scale
            qkv_w[a, cols[1].start] = 1.0
            qkv_w[c, cols[2].start] = v_gain
        else:  # bert
            emb_mod = model.bert.embeddings
            emb, norm = emb_mod.word_embeddings.weight, emb_mod.LayerNorm
            emb_mod.position_embeddings.weight.zero_()
            emb_mod.token_type_embeddings.weight.zero_()
            att = model.bert.encoder.layer[0].attention.self
            d = emb.shape[1]
            dh = d // model.config.num_attention_heads
            rows = slice(h * dh, (h + 1) * dh)
            for lin in (att.query, att.key, att.value):
                lin.weight[rows] = 0.0
                lin.bias[rows] = 0.0
            att.query.bias[h * dh] = scale
            att.key.weight[h * dh, a] = 1.0
            att.value.weight[h * dh, c] = v_gain
        norm.weight.fill_(1.0)
        norm.bias.zero_()
        emb[:, a] = 0.0
        emb[:, b] = 0.0
        emb[0] = 0.0
        emb[0, a], emb[0, b] = 10.0, -10.0


@pytest.mark.parametrize("arch", ["gpt2", "bert"])
def test_hand_built_sink_head_is_an_anchor(arch):
    model = make_model(arch, seed=3, n_layers=1, d_model=32, n_heads=4)
    _set_sink_head(model, arch, h=1)
    model.set_attn_implementation("eager")
    probe = _probe(n_seq=6, seq_len=10, first_token="bos" if arch == "gpt2" else "cls")
    out = activation_metrics(model, probe, batch_size=4, grad=False)
    assert out["sink_score"][0, 1] == pytest.approx(1.0, abs=1e-6)
    assert out["sink_argmax_fraction"][0, 1] == 1.0
    assert out["sink_value_ratio"][0, 1] == 0.0
    assert out["head_label"][0, 1] == ANCHOR
    assert out["value_norm"][0, 1] > 0  # it reads coordinate c at positions t >= 1
    others = [0, 2, 3]
    assert (out["sink_score"][0, others] < 0.9).all()  # random heads are not sinks
    assert (out["sink_value_ratio"][0, others] > 0).all()
    assert (out["head_label"][0, others] != ANCHOR).all()
    assert out.attrs["first_token"] == probe.first_token and out.attrs["probe"]["sha256"] == probe.sha256
    assert np.isnan(out["grad_alignment"]).all() and "grad=False" in out.attrs["grad_alignment_note"]


# ------------------------------------------------------------------------- hooks reproduce the block
_O_SUFFIXES = ("o_proj.weight", "attention.dense.weight", "attn.c_proj.weight", "output.dense.weight", "attn.o.weight")


@pytest.mark.parametrize("arch", ["gpt2", "gpt_neox", "llama", "qwen2", "gemma3_text", "bert", "mpnet"])
def test_head_writes_sum_to_attention_output(arch, tiny_checkpoint):
    folder = tiny_checkpoint(arch, seed=5)
    model = load_eager_model(folder)
    params = dict(model.named_parameters(remove_duplicate=False))
    adapter = adapter_for(model.config.to_dict(), list(params), source=str(folder))
    L = adapter.shape.n_layers
    outs: dict[int, torch.Tensor] = {}
    hooks = []
    for layer in range(L):
        name, = [n for n in adapter.layer_tensor_names(layer) if n.endswith(_O_SUFFIXES)]
        mod = model.get_submodule(name.rsplit(".", 1)[0])
        hooks.append(mod.register_forward_hook(lambda m, i, o, layer=layer: outs.__setitem__(layer, o.detach())))
    ids = torch.from_numpy(np.array(_probe(n_seq=3, seq_len=11, vocab=model.config.vocab_size, first=2).tokens))
    xs, attn = capture(model, ids, adapter=adapter)
    for hk in hooks:
        hk.remove()
    for layer in range(L):
        w = adapter.layer_weights(layer, lambda n: params[n].detach().double())
        writes = head_writes(xs[layer].double(), attn[layer].double(), w)
        total = writes.sum(1) + (w.b_O if w.b_O is not None else 0.0)
        ref = outs[layer].double()
        err = (total - ref).abs().max().item()
        assert err < 1e-5 * max(1.0, ref.abs().max().item()), (arch, layer, err)
        # discriminates: pairing each head's value with the next head's W_O misses by far more
        rolled = LayerWeights(layer, w.W_Q, w.W_K, w.W_V, w.W_O.roll(1, 0), b_V=w.b_V, b_O=w.b_O)
        wrong = (head_writes(xs[layer].double(), attn[layer].double(), rolled).sum(1)
                 + (w.b_O if w.b_O is not None else 0.0) - ref).abs().max().item()
        assert wrong > 1e3 * max(err, 1e-9)


# ------------------------------------------------------------------------- grad alignment
def _canonical_slots(model, layer: int):
    """(param, index function) per canonical matrix, written out for GPT-2 by hand: ``c_attn`` is a
    ``Conv1D`` ``[d, 3d]`` (blocks Q | K | V), so ``W_Q[h][i, j] = c_attn.weight[i, h*dh + j]``,
    ``W_K`` and ``W_V`` are offset by ``d`` and ``2d``; ``W_O[h][j, i] = c_proj.weight[h*dh + j, i]``."""
    att = model.transformer.h[layer].attn
    d = model.config.n_embd
    dh = d // model.config.n_head
    return {
        "Q": (att.c_attn.weight, lambda h, i, j: (i, h * dh + j)),
        "K": (att.c_attn.weight, lambda h, i, j: (i, d + h * dh + j)),
        "V": (att.c_attn.weight, lambda h, i, j: (i, 2 * d + h * dh + j)),
        "O": (att.c_proj.weight, lambda h, j, i: (h * dh + j, i)),
    }


def test_grad_alignment_matches_finite_differences():
    H, d, dh = 3, 6, 2
    # GPT-2: its eager softmax runs in the model's dtype (Llama's and GPT-NeoX's run in float32,
    # which would limit central differences to ~1e-4)
    model = make_model("gpt2", seed=11, n_layers=2, d_model=d, n_heads=H, vocab_size=32, gain=1.0).double()
    model.set_attn_implementation("eager")
    probe = _probe(n_seq=3, seq_len=6, vocab=32, first=1)
    out = activation_metrics(model, probe, batch_size=2)
    assert out.attrs["loss"] == "causal_lm"
    ids = torch.from_numpy(np.array(probe.tokens))

    def lm_loss() -> float:  # mean next-token CE in float64 (transformers' labels= loss is float32)
        with torch.no_grad():
            logits = model(input_ids=ids).logits
        return float(torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                       ids[:, 1:].reshape(-1)))

    eps = 1e-6
    layer = 1
    slots = _canonical_slots(model, layer)
    shapes = {"Q": (d, dh), "K": (d, dh), "V": (d, dh), "O": (dh, d)}
    expected = np.zeros(H)
    for h in range(H):
        g_lm = {m: np.zeros(shapes[m]) for m in "QKVO"}
        for m, (param, idx) in slots.items():
            for i in range(shapes[m][0]):
                for j in range(shapes[m][1]):
                    k = idx(h, i, j)
                    old = param.data[k].item()
                    param.data[k] = old + eps
                    up = lm_loss()
                    param.data[k] = old - eps
                    down = lm_loss()
                    param.data[k] = old
                    g_lm[m][i, j] = (up - down) / (2 * eps)
        # the objective through compute_layer (numpy/torch, not killing_cv_torch)
        params = dict(model.named_parameters())
        ad = adapter_for(model.config.to_dict(), list(params), source="gpt2")
        w = ad.layer_weights(layer, lambda n: params[n].detach().clone())
        g_obj = np.zeros((d, dh))
        for i in range(d):
            for j in range(dh):
                vals = []
                for sgn in (1, -1):
                    Wq = w.W_Q.clone()
                    Wq[h, i, j] += sgn * eps
                    lw = LayerWeights(layer, Wq, w.W_K, w.W_V, w.W_O)
                    vals.append(compute_layer(lw, families=("Q",))["killing_cv"][0, 0])
                g_obj[i, j] = (vals[0] - vals[1]) / (2 * eps)
        n_lm = np.sqrt(sum((g ** 2).sum() for g in g_lm.values()))
        expected[h] = (g_obj * g_lm["Q"]).sum() / (np.linalg.norm(g_obj) * n_lm)
    assert np.abs(expected).max() > 1e-3  # not a vacuous agreement at 0
    np.testing.assert_allclose(out["grad_alignment"][layer], expected, atol=1e-6)


def test_grad_alignment_nan_without_lm_head_and_mlm_with_one():
    probe = _probe(n_seq=4, seq_len=8, first_token="cls")
    base = make_model("bert", seed=1, head=False, n_layers=1)
    base.set_attn_implementation("eager")
    out = activation_metrics(base, probe)
    assert np.isnan(out["grad_alignment"]).all() and "no language-model head" in out.attrs["grad_alignment_note"]
    assert np.isfinite(out["sink_score"]).all()
    mlm = make_model("bert", seed=1, n_layers=1)
    mlm.set_attn_implementation("eager")
    with_mask = activation_metrics(mlm, probe, mask_token_id=3)
    assert with_mask.attrs["loss"] == "masked_lm" and with_mask.attrs["mask_token_id"] == 3
    assert np.isfinite(with_mask["grad_alignment"]).all()
    assert (np.abs(with_mask["grad_alignment"]) <= 1 + 1e-12).all()
    other_seed = activation_metrics(mlm, probe, mask_token_id=3, mask_seed=1)
    assert not np.allclose(other_seed["grad_alignment"], with_mask["grad_alignment"])
    no_mask = activation_metrics(mlm, probe)  # tiny config, no tokenizer: no mask token
    assert np.isnan(no_mask["grad_alignment"]).all() and "mask token" in no_mask.attrs["grad_alignment_note"]
    # the weights are left as they were
    assert all(not p.requires_grad or p.grad is None for p in mlm.parameters())


# ------------------------------------------------------------------------- batch size
@pytest.mark.parametrize("arch", ["gpt2", "bert"])
def test_results_do_not_depend_on_batch_size(arch):
    model = make_model(arch, seed=2, n_layers=2)
    model.set_attn_implementation("eager")
    probe = _probe(n_seq=7, seq_len=9, seed=4, first=2)
    runs = [activation_metrics(model, probe, batch_size=b, mask_token_id=3) for b in (1, 3, 7)]
    for name in runs[0]:
        assert np.isfinite(runs[0][name]).all(), name
        for other in runs[1:]:
            np.testing.assert_allclose(other[name], runs[0][name], rtol=1e-6, atol=1e-6, err_msg=name)


# ------------------------------------------------------------------------- labels, functional Killing
def test_head_labels_thresholds_and_nan():
    s = np.array([[0.9, 0.9, 0.2, 0.2, 0.6, 0.4], [0.5, 0.5, 0.5, np.nan, 0.1, 0.1]])
    v = np.array([[1.0, 5.0, 2.0, 6.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    lab = head_labels(s, v)
    # layer 0: lowest third (quantile 1/3 of [1..6] = 2.67) holds heads 0 and 2
    np.testing.assert_array_equal(lab[0], [ANCHOR, MIXED, MIXED, WORKER, MIXED, WORKER])
    # layer 1: sink 0.5 counts as a sink (>=); NaN sink score gives NaN
    np.testing.assert_array_equal(lab[1, [0, 1, 2, 4, 5]], [ANCHOR, ANCHOR, MIXED, WORKER, WORKER])
    assert np.isnan(lab[1, 3])
    stricter = head_labels(s, v, sink_threshold=0.95)
    assert (stricter[0] != ANCHOR).all()
    assert np.isnan(head_labels(s, np.where(np.eye(2, 6, dtype=bool), np.nan, v))).all()
    with pytest.raises(MetricError, match="one shape"):
        head_labels(s, v[:, :3])


def test_functional_killing_explicit():
    rng = np.random.default_rng(0)
    K = rng.normal(size=(2, 1, 3, 4, 4))
    vn = rng.uniform(0.5, 2, size=(3, 4))
    out = functional_killing(K, vn)
    for f in range(2):
        for layer in range(3):
            w = vn[layer] / vn[layer].mean()
            for i in range(4):
                for j in range(4):
                    assert out[f, 0, layer, i, j] == pytest.approx(K[f, 0, layer, i, j] * w[i] * w[j])
    with pytest.raises(MetricError):
        functional_killing(K, vn[:, :3])
    # a head padded with NaN (a narrower model in a shared cube): with skipna the layer mean
    # is over the real heads, and those heads' values are the narrower model's own form
    padded = np.concatenate([vn, np.full((3, 1), np.nan)], axis=-1)
    Kp = np.pad(K, [(0, 0)] * 3 + [(0, 1), (0, 1)], constant_values=np.nan)
    got = functional_killing(Kp, padded, skipna=True)
    np.testing.assert_array_equal(got[..., :4, :4], out)
    assert np.isnan(got[..., 4, :]).all() and np.isnan(got[..., :, 4]).all()
    assert np.isnan(functional_killing(Kp, padded)).all()  # without skipna the NaN spreads


# ------------------------------------------------------------------------- the real MiniLM
def test_real_minilm_sinks_match_direct_attention(minilm_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    probe = build_probe(DATA.read_text(encoding="utf-8"), tok, n_seq=6, seq_len=48, seed=0, first_token="cls")
    out = activation_metrics(minilm_path, probe, batch_size=4)
    assert out["sink_score"].shape == (6, 12)
    assert np.isnan(out["grad_alignment"]).all() and "BertModel" in out.attrs["grad_alignment_note"]
    assert (out["value_norm"] > 0).all() and np.isfinite(out["sink_value_ratio"]).all()
    # independent: the model's attention probabilities through AutoModel, averaged here
    import transformers

    m = transformers.AutoModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    with torch.no_grad():
        att = m(input_ids=torch.from_numpy(np.array(probe.tokens)), output_attentions=True).attentions
    for layer, a in enumerate(att):
        np.testing.assert_allclose(out["sink_score"][layer], a[:, :, 1:, 0].double().mean((0, 2)).numpy(), atol=1e-6)
        frac = (a[:, :, 1:].argmax(-1) == 0).double().mean((0, 2)).numpy()
        np.testing.assert_allclose(out["sink_argmax_fraction"][layer], frac, atol=1e-12)
    table = sink_table(out)
    assert list(table.index) == list(range(6)) and table["heads_argmax_pos0"].between(0, 1).all()


@pytest.fixture
def sink_folder(tmp_path) -> pathlib.Path:
    """A tiny GPT-2 checkpoint with a word-level tokenizer saved beside it (``<bos>`` = 0)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers

    from ._checkpoints import make_checkpoint

    folder = make_checkpoint("gpt2", tmp_path / "ckpt", seed=4, n_layers=2)
    words = DATA.read_text(encoding="utf-8").split()
    vocab = {"<bos>": 0, "<unk>": 1}
    for w in words:
        if len(vocab) < 96:
            vocab.setdefault(w, len(vocab))
    tok = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def test_sinks_verb_prints_the_table(sink_folder, tmp_path, capsys):
    """``lie-stats sinks`` (the command of datasets/panel/SINKS.md): the probe it saves is the
    one its header names, and its rows are :func:`sink_table` of that probe's metrics."""
    from lie_stats.cli import main
    from lie_stats.extraction.probe import load_probe

    saved = tmp_path / "p.npz"
    assert main(["sinks", str(sink_folder), "--text", str(DATA), "--n-seq", "4", "--seq-len", "16",
                 "--save-probe", str(saved)]) == 0
    text = capsys.readouterr().out
    probe = load_probe(saved)
    assert probe.sha256 in text and "(gpt2)" in text and "position 0 = bos ('<bos>')" in text
    assert (probe.tokens[:, 0] == 0).all() and probe.tokens.shape == (4, 16)
    assert probe.text_source.startswith(DATA.name + " (sha256:")
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 2
    metrics = activation_metrics(sink_folder, probe, grad=False)
    expected = sink_table(metrics)
    for layer, row in enumerate(rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells == [str(layer), f"{expected['mean_sink_score'].iloc[layer]:.3f}",
                         f"{expected['heads_argmax_pos0'].iloc[layer]:.0%}",
                         f"{expected['mean_sink_argmax_fraction'].iloc[layer]:.3f}"]
    counts = {k: int((metrics["head_label"] == v).sum()) for k, v in LABEL_CODES.items()}
    assert f"§8 labels (sink >= 0.5, lowest third of value_norm): {counts}" in text
    # the same command again: the probe file holds this probe, so it is kept as it is
    before = saved.read_bytes()
    assert main(["sinks", str(sink_folder), "--text", str(DATA), "--n-seq", "4", "--seq-len", "16",
                 "--save-probe", str(saved)]) == 0
    assert saved.read_bytes() == before


def test_sinks_verb_bad_input_exits_2_naming_the_file(sink_folder, tmp_path, capsys):
    from lie_stats.cli import main

    def run(*args):
        code = main(["sinks", *map(str, args)])
        return code, capsys.readouterr()

    missing = tmp_path / "no_such_run"
    code, out = run(missing, "--text", DATA)
    assert code == 2 and f"{missing}: the checkpoint folder does not exist" in out.err and out.out == ""
    code, out = run(sink_folder, "--text", tmp_path / "absent.txt")
    assert code == 2 and "absent.txt: the text file does not exist" in out.err
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9 ".encode("latin-1") * 200)
    code, out = run(sink_folder, "--text", latin)
    assert code == 2 and "latin1.txt: not UTF-8" in out.err
    code, out = run(sink_folder, "--text", DATA, "--n-seq", "100000")
    assert code == 2 and DATA.name in out.err and "n_seq=100000" in out.err
    no_tok = tmp_path / "no_tok"
    no_tok.mkdir()
    (no_tok / "config.json").write_bytes((sink_folder / "config.json").read_bytes())
    code, out = run(no_tok, "--text", DATA)
    assert code == 2 and f"{no_tok / 'tokenizer.json'}: missing" in out.err
    # a file of the user's at --save-probe is not overwritten, and nothing is computed
    notes = tmp_path / "notes.npz"
    notes.write_text("my notes")
    code, out = run(sink_folder, "--text", DATA, "--n-seq", "4", "--seq-len", "16", "--save-probe", notes)
    assert code == 2 and "notes.npz: the file exists and is not this probe" in out.err and out.out == ""
    assert notes.read_text() == "my notes"


def test_sinks_verb_escapes_what_it_reads_from_files(sink_folder, capsys):
    """The model type (config.json) is shown as its escapes: it cannot restyle the terminal or
    forge a line of the table."""
    import json

    from lie_stats.cli import main

    cfg = json.loads((sink_folder / "config.json").read_text())
    cfg["model_type"] = "gpt2\x1b[31m\n| 9 | 1.000 | 100% | 1.000 |"
    (sink_folder / "config.json").write_text(json.dumps(cfg))
    from lie_stats.extraction.activations import sink_report
    from lie_stats.extraction.probe import text_probe

    probe = text_probe(sink_folder, DATA, n_seq=2, seq_len=8)
    header = sink_report(sink_folder, probe, activation_metrics(make_model("gpt2", seed=4, n_layers=2), probe,
                                                                 grad=False))[0]
    assert "\x1b[31m\n| 9 |" in header  # the library's lines hold the text as read
    assert main(["sinks", str(sink_folder), "--text", str(DATA), "--n-seq", "2", "--seq-len", "8"]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "gpt2\\x1b[31m\\n| 9 |" in text
    assert not any(line.startswith("| 9 |") for line in text.splitlines())


def test_input_errors_name_the_problem():
    model = make_model("gpt2", seed=0, n_layers=1)
    with pytest.raises(MetricError, match="vocabulary has 96"):
        activation_metrics(model, _probe(vocab=200, seed=1, first=150), grad=False)
    with pytest.raises(MetricError, match="ProbeSet"):
        activation_metrics(model, np.zeros((2, 3), int))
    with pytest.raises(MetricError, match="batch_size"):
        activation_metrics(model, _probe(), batch_size=0)
    with pytest.raises(MetricError, match="Did you mean 'QK'"):
        activation_metrics(model, _probe(), family="QKK")


@pytest.mark.gpu
def test_cuda_equals_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    probe = _probe(n_seq=5, seq_len=9, seed=2, first=3)
    cpu = activation_metrics(make_model("gpt2", seed=6, n_layers=2), probe, device="cpu")
    gpu = activation_metrics(make_model("gpt2", seed=6, n_layers=2), probe, device="cuda")
    assert {"written_norm", "head_label_written"} <= set(cpu) and set(gpu) == set(cpu)
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-4, atol=1e-5, err_msg=name)
