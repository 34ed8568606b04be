"""What a head writes after attention (METRICS.md §9): ``written_norm`` and ``head_label_written``.

What would fail if the code were wrong:

* on a one-layer GPT-2 whose head 1 is a hand-built sink (all attention on position 0, whose
  value is exactly zero) with large values everywhere else, ``written_norm`` equals a NumPy
  computation written here from the raw parameters (embeddings, layer norm, ``c_attn``,
  causal softmax, ``c_proj``), without the library's hooks or adapter, for every head;
* on that model ``value_norm`` ranks the sink head first in its layer and ``written_norm`` last,
  so ``head_label`` calls it *mixed* and ``head_label_written`` *anchor*;
* for every architecture family (GQA, rotary, post-LN encoders, Gemma's q/k norms),
  ``written_norm`` is the mean norm of :func:`lie_stats.extraction.activations.head_writes` without
  biases, whose sum over heads is checked against the attention block's own output in
  ``tests/test_activations.py``;
* the label on ``written_norm`` follows §8's rule exactly (same thresholds, ties, NaN).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lie_stats import schema
from lie_stats.extraction.activations import activation_metrics, capture, head_labels, head_writes, load_eager_model
from lie_stats.extraction.architectures import LayerWeights, adapter_for

from ._checkpoints import make_model
from .test_activations import _probe, _set_sink_head

ANCHOR, WORKER, MIXED = (float(schema.LABEL_CODES[k]) for k in ("anchor", "worker", "mixed"))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def _by_hand_gpt2(model, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(written_norm, value_norm, sink_score) [heads] of layer 0 of a GPT-2, from its tensors."""
    tr = model.transformer
    P = {n: p.detach().double().numpy() for n, p in tr.named_parameters()}
    d = P["wte.weight"].shape[1]
    H = model.config.n_head
    dh = d // H
    eps = model.config.layer_norm_epsilon
    n_seq, T = tokens.shape
    e = P["wte.weight"][tokens] + P["wpe.weight"][np.arange(T)][None]
    mu = e.mean(-1, keepdims=True)
    var = ((e - mu) ** 2).mean(-1, keepdims=True)
    x = (e - mu) / np.sqrt(var + eps) * P["h.0.ln_1.weight"] + P["h.0.ln_1.bias"]  # [n, T, d]
    Wc, bc = P["h.0.attn.c_attn.weight"], P["h.0.attn.c_attn.bias"]  # Conv1D: x @ W + b, [d, 3d]
    Wp = P["h.0.attn.c_proj.weight"]  # [d, d], rows are the concatenated heads
    causal = np.tril(np.ones((T, T), dtype=bool))
    written, value, sink = np.zeros(H), np.zeros(H), np.zeros(H)
    for h in range(H):
        cq, ck, cv = (slice(i * d + h * dh, i * d + (h + 1) * dh) for i in range(3))
        q = x @ Wc[:, cq] + bc[cq]
        k = x @ Wc[:, ck] + bc[ck]
        v = x @ Wc[:, cv]  # METRICS.md §7.3 / §9.1: no value bias
        W_O = Wp[h * dh:(h + 1) * dh]
        scores = np.where(causal, q @ k.transpose(0, 2, 1) / np.sqrt(dh), -np.inf)
        a = _softmax(scores)  # [n, T, T]
        out = np.zeros((n_seq, T))
        for i in range(n_seq):
            for t in range(T):
                out[i, t] = np.linalg.norm(sum(a[i, t, s] * v[i, s] for s in range(T)) @ W_O)
        written[h] = out.mean()
        value[h] = np.linalg.norm(v @ W_O, axis=-1).mean()
        sink[h] = a[:, 1:, 0].mean()
    return written, value, sink


def _drained_sink_model():
    """Head 1 of layer 0: all attention on position 0, ``v_0 = 0``, large values elsewhere."""
    model = make_model("gpt2", seed=3, n_layers=1, d_model=32, n_heads=4).double()
    _set_sink_head(model, "gpt2", h=1, v_gain=20.0)
    model.set_attn_implementation("eager")
    return model


def test_written_norm_equals_a_numpy_computation_from_the_raw_tensors():
    model = _drained_sink_model()
    probe = _probe(n_seq=4, seq_len=8, seed=1)
    out = activation_metrics(model, probe, batch_size=3, grad=False)
    written, value, sink = _by_hand_gpt2(model, np.asarray(probe.tokens))
    np.testing.assert_allclose(out["written_norm"][0], written, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out["value_norm"][0], value, rtol=1e-9)
    np.testing.assert_allclose(out["sink_score"][0], sink, rtol=1e-9)
    # the drained sink writes nothing: all its attention is on a zero value
    assert out["sink_score"][0, 1] == pytest.approx(1.0, abs=1e-12)
    assert out["written_norm"][0, 1] < 1e-12
    # the other heads write something
    assert (out["written_norm"][0, [0, 2, 3]] > 1e-3).all()
    assert "written_norm: ||sum_s a[t, s] x_s W_V W_O||" in out.attrs["definitions"]


def test_value_norm_and_written_norm_rank_the_sink_head_differently_so_the_labels_disagree():
    model = _drained_sink_model()
    probe = _probe(n_seq=4, seq_len=8, seed=1)
    out = activation_metrics(model, probe, batch_size=4, grad=False)
    v, w = out["value_norm"][0], out["written_norm"][0]
    # head 1 reads coordinate c with gain 20: the largest value_norm of its layer ...
    assert int(np.argmax(v)) == 1
    # ... and the smallest written_norm
    assert int(np.argmin(w)) == 1
    assert out["head_label"][0, 1] == MIXED  # sink, but value_norm in the top two thirds
    assert out["head_label_written"][0, 1] == ANCHOR
    # the written label is §8's rule on written_norm, head for head
    np.testing.assert_array_equal(out["head_label_written"], head_labels(out["sink_score"], out["written_norm"]))
    np.testing.assert_array_equal(out["head_label"], head_labels(out["sink_score"], out["value_norm"]))
    assert not np.array_equal(out["head_label"], out["head_label_written"])


def test_written_label_thresholds_are_the_recorded_ones():
    model = _drained_sink_model()
    probe = _probe(n_seq=3, seq_len=8, seed=2)
    strict = activation_metrics(model, probe, grad=False, sink_threshold=1.5)
    assert (strict["head_label_written"] != ANCHOR).all()  # no head reaches a sink score of 1.5
    assert strict["head_label_written"][0, 1] == MIXED
    wide = activation_metrics(model, probe, grad=False, value_quantile=0.99)
    # with quantile 0.99 all but the largest written_norm are "low": the only worker is the
    # head that writes most (not a sink)
    top = int(np.argmax(wide["written_norm"][0]))
    assert wide["sink_score"][0, top] < 0.5
    assert np.flatnonzero(wide["head_label_written"][0] == WORKER).tolist() == [top]
    assert wide.attrs["value_quantile"] == 0.99 and strict.attrs["sink_threshold"] == 1.5


@pytest.mark.parametrize("arch", ["gpt2", "gpt_neox", "llama", "qwen2", "gemma3_text", "bert", "mpnet"])
def test_written_norm_is_the_mean_norm_of_each_heads_unbiased_write(arch, tiny_checkpoint):
    kw = {"n_kv_heads": 2} if arch in ("llama", "qwen2") else {}
    folder = tiny_checkpoint(arch, seed=7, **kw)
    model = load_eager_model(folder)
    params = dict(model.named_parameters(remove_duplicate=False))
    adapter = adapter_for(model.config.to_dict(), list(params), source=str(folder))
    probe = _probe(n_seq=3, seq_len=10, vocab=model.config.vocab_size, first=2, seed=3)
    out = activation_metrics(model, probe, batch_size=3, grad=False)  # one batch: the same float32 pass
    ids = torch.from_numpy(np.array(probe.tokens))
    xs, attn = capture(model, ids, adapter=adapter)
    for layer in range(adapter.shape.n_layers):
        w = adapter.layer_weights(layer, lambda n: params[n].detach().double())
        unbiased = LayerWeights(layer, w.W_Q, w.W_K, w.W_V, w.W_O)
        writes = head_writes(xs[layer].double(), attn[layer].double(), unbiased)  # [b, H, T, d]
        ref = torch.linalg.vector_norm(writes, dim=-1).mean((0, 2)).numpy()
        np.testing.assert_allclose(out["written_norm"][layer], ref, rtol=1e-9, err_msg=f"{arch} layer {layer}")
        # discriminates: the value norm (no attention mixing) is another number
        assert not np.allclose(out["value_norm"][layer], ref, rtol=1e-3)
