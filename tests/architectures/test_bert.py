"""Encoder adapters (BERT, RoBERTa, XLM-R, RoBERTa-PreLayerNorm, MPNet): attention reproduced, the real MiniLM, LayerNorm names."""

from __future__ import annotations

import torch

from lie_stats.extraction.architectures import adapter_for
from lie_stats.extraction.sources import open_source

from ._reproduce import TOL, recompute, reproduction_tests

CASES = [(arch, {}) for arch in ("bert", "roberta", "xlm-roberta", "roberta-prelayernorm", "mpnet")] + [("bert", {"head": False})]


test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual = (
    reproduction_tests(CASES))


def test_real_minilm_attention_reproduced(minilm_path):
    """The trained all-MiniLM-L6-v2 (DATA.md): real text, raw and folded weights, to 1e-5."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    texts = ["The quick brown fox jumps over the lazy dog near the river bank.",
             "Attention heads share structure."]
    enc = [tok.encode(t).ids for t in texts]
    length = max(map(len, enc))
    ids = torch.zeros(len(enc), length, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, :len(e)] = torch.tensor(e)
        mask[i, :len(e)] = 1
    assert mask[1].sum() < length  # the batch exercises padding
    err, probs = recompute(minilm_path, ids=ids, mask=mask)
    assert err < TOL, f"MiniLM: max |dp| = {err:.3g}"
    assert len(probs) == 6 and probs[0].shape[1] == 12
    err_fold, _ = recompute(minilm_path, ids=ids, mask=mask, fold_ln=True)
    assert err_fold < TOL, f"MiniLM fold_ln: max |dp| = {err_fold:.3g}"
    ckpt, = open_source(str(minilm_path))
    s = ckpt.adapter().shape
    assert (s.architecture, s.n_layers, s.n_heads, s.d_head, s.d_model) == ("bert", 6, 12, 32, 384)


# ------------------------------------------------------------------ layout details
def test_legacy_layernorm_gamma_beta_names():
    cfg = {"model_type": "bert", "hidden_size": 4, "num_attention_heads": 2, "num_hidden_layers": 1}
    p = "bert.encoder.layer.0.attention."
    t = {p + m + ".weight": torch.eye(4) for m in ("self.query", "self.key", "self.value", "output.dense")}
    t["bert.embeddings.LayerNorm.gamma"] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    t["bert.embeddings.LayerNorm.beta"] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    lw = adapter_for(cfg, list(t), source="c").layer_weights(0, t.__getitem__, fold_ln=True)
    assert torch.equal(lw.W_Q.permute(1, 0, 2).reshape(4, 4), torch.diag(torch.tensor([1.0, 2, 3, 4])))
    assert torch.equal(lw.b_Q.reshape(-1), torch.tensor([1.0, 0, 0, 0]))
