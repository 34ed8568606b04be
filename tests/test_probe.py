"""Probe sets (lie_stats.extraction.probe): hashing, files, and building from real text with a real tokenizer."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from lie_stats.extraction.probe import (
    FIRST_TOKEN_KINDS, ProbeError, ProbeSet, build_probe, load_probe, probe_hash, save_probe,
)

DATA = pathlib.Path(__file__).parent / "data" / "pico_corpus_sample.txt"


def _probe(tokens=None, **kw) -> ProbeSet:
    tokens = np.arange(12).reshape(3, 4) if tokens is None else tokens
    return ProbeSet.from_tokens(tokens, tokenizer=kw.get("tokenizer", "toy"), text_source="inline",
                                first_token=kw.get("first_token", "bos"))


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(minilm_path / "tokenizer.json"))


def test_hash_changes_with_any_token_and_with_shape():
    t = np.arange(12).reshape(3, 4)
    h = probe_hash(t)
    for i in range(3):
        for j in range(4):
            u = t.copy()
            u[i, j] += 1
            assert probe_hash(u) != h
    assert probe_hash(t.reshape(4, 3)) != h
    assert probe_hash(t.astype(np.int32)) == h  # the hash is of the int64 values, not the dtype
    assert len(h) == 64 and int(h, 16) >= 0


def test_probe_refuses_wrong_hash_and_bad_tokens():
    p = _probe()
    with pytest.raises(ProbeError, match="does not match its tokens"):
        ProbeSet(p.tokens, "toy", "inline", "0" * 64, "bos")
    with pytest.raises(ProbeError, match="2-d integer"):
        ProbeSet.from_tokens(np.ones((2, 3)), tokenizer="t", text_source="s", first_token="bos")
    with pytest.raises(ProbeError, match="at least 2 tokens"):
        _probe(np.ones((2, 1), int))
    with pytest.raises(ProbeError, match="negative"):
        _probe(-np.ones((2, 3), int))
    with pytest.raises(ProbeError, match="Did you mean 'cls'"):
        _probe(first_token="cl")
    assert not p.tokens.flags.writeable  # frozen: the hash stays true


def test_save_load_round_trip(tmp_path):
    p = _probe(np.random.default_rng(0).integers(0, 1000, (5, 7)), first_token="cls")
    f = save_probe(p, tmp_path / "p.npz")
    q = load_probe(f)
    assert q == p and np.array_equal(q.tokens, p.tokens) and q.tokens.dtype == np.int64
    assert q.first_token == "cls" and q.sha256 == probe_hash(p.tokens)
    assert q != _probe(np.random.default_rng(1).integers(0, 1000, (5, 7)), first_token="cls")


def test_load_refuses_tampered_file(tmp_path):
    p = _probe()
    f = save_probe(p, tmp_path / "p.npz")
    with np.load(f, allow_pickle=False) as z:
        tokens, meta = z["tokens"].copy(), str(z["meta"])
    tokens[1, 2] += 1
    bad = tmp_path / "bad.npz"
    np.savez(bad, tokens=tokens, meta=np.array(meta))
    with pytest.raises(ProbeError, match="altered"):
        load_probe(bad)
    # metadata edited, tokens kept: the recorded hash no longer matches either
    m = json.loads(meta)
    m["sha256"] = probe_hash(tokens[:, :3])
    np.savez(bad, tokens=p.tokens, meta=np.array(json.dumps(m)))
    with pytest.raises(ProbeError, match="altered"):
        load_probe(bad)


def test_load_refuses_pickles_and_malformed_files(tmp_path):
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, tokens=np.array([object()], dtype=object), meta=np.array("{}"))
    with pytest.raises(ProbeError, match="not a readable probe"):
        load_probe(pickled)
    extra = tmp_path / "extra.npz"
    np.savez(extra, tokens=np.ones((2, 2), np.int64), meta=np.array("{}"), other=np.ones(1))
    with pytest.raises(ProbeError, match="expected arrays"):
        load_probe(extra)
    nometa = tmp_path / "nometa.npz"
    np.savez(nometa, tokens=np.ones((2, 2), np.int64), meta=np.array('{"format": "lie_stats.probe/1"}'))
    with pytest.raises(ProbeError, match="lacks fields"):
        load_probe(nometa)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip")
    with pytest.raises(ProbeError, match="not a readable probe"):
        load_probe(garbage)
    with pytest.raises(ProbeError, match="not found"):
        load_probe(tmp_path / "missing.npz")
    with pytest.raises(ProbeError, match=".npz"):
        save_probe(_probe(), tmp_path / "p.txt")


def test_build_probe_minilm_cls_sep_no_truncation(minilm_tokenizer):
    text = DATA.read_text(encoding="utf-8")
    p = build_probe(text, minilm_tokenizer, n_seq=6, seq_len=200, seed=3, first_token="cls",
                    text_source="tests/data/pico_corpus_sample.txt")
    cls, sep, pad = (minilm_tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
    assert p.tokens.shape == (6, 200)  # longer than the 128 the tokenizer.json truncates to
    assert (p.tokens[:, 0] == cls).all() and (p.tokens[:, -1] == sep).all()
    assert not (p.tokens == pad).any()
    body = p.tokens[:, 1:-1]
    assert not np.isin(body, [cls, sep]).any()
    # each window starts at a word: its first token is not a WordPiece continuation
    assert not any(minilm_tokenizer.id_to_token(int(t)).startswith("##") for t in body[:, 0])
    # the windows are real text: decoding gives words of the corpus
    words = minilm_tokenizer.decode(body[0].tolist()).split()
    assert len(words) > 50 and sum(w.lower() in text.lower() for w in words) > 0.9 * len(words)
    # deterministic in the seed, different across seeds, windows do not overlap
    assert build_probe(text, minilm_tokenizer, n_seq=6, seq_len=200, seed=3, first_token="cls") .sha256 == p.sha256
    assert build_probe(text, minilm_tokenizer, n_seq=6, seq_len=200, seed=4, first_token="cls").sha256 != p.sha256
    assert len({tuple(r) for r in body.tolist()}) == 6
    # the caller's tokenizer is not changed (padding / truncation switched off on a copy)
    assert minilm_tokenizer.truncation is not None and minilm_tokenizer.padding is not None
    assert "vocab=30522" in p.tokenizer


def test_build_probe_first_word_and_bos(minilm_tokenizer):
    text = DATA.read_text(encoding="utf-8")[:20000]
    p = build_probe(text, minilm_tokenizer, n_seq=4, seq_len=32, seed=0, first_token="first_word")
    assert p.first_token == "first_word"
    assert not any(minilm_tokenizer.id_to_token(int(t)).startswith("##") for t in p.tokens[:, 0])
    assert not np.isin(p.tokens, [101, 102]).any()
    q = build_probe(text, minilm_tokenizer, n_seq=4, seq_len=32, seed=0, first_token="bos",
                    first_token_id=101)
    assert (q.tokens[:, 0] == 101).all() and q.tokens.shape == (4, 32)
    with pytest.raises(ProbeError, match="none of the bos tokens"):
        build_probe(text, minilm_tokenizer, n_seq=4, seq_len=32, seed=0, first_token="bos")


def test_build_probe_errors(minilm_tokenizer):
    with pytest.raises(ProbeError, match="non-overlapping windows"):
        build_probe("a few words only", minilm_tokenizer, n_seq=2, seq_len=8, seed=0, first_token="cls")
    with pytest.raises(ProbeError, match="Did you mean 'first_word'"):
        build_probe("text", minilm_tokenizer, n_seq=1, seq_len=8, seed=0, first_token="first_wrd")
    with pytest.raises(ProbeError, match="tokenizers.Tokenizer"):
        build_probe("text", object(), n_seq=1, seq_len=8, seed=0)
    with pytest.raises(ProbeError, match="seq_len"):
        build_probe("text", minilm_tokenizer, n_seq=1, seq_len=1, seed=0)
    assert set(FIRST_TOKEN_KINDS) == {"cls", "bos", "first_word"}


def test_build_probe_prefers_the_tokenizers_own_special_tokens():
    """mpnet's vocabulary holds BERT's "[CLS]" (found first by name) beside its real "<s>":
    a transformers tokenizer's own cls/sep ids must win over the name lookup."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = "the cat sat on a mat and then the dog ran off".split()
    vocab = {"<s>": 0, "</s>": 2, "[CLS]": 3, "[SEP]": 4, "<unk>": 1}
    vocab |= {w: i + 5 for i, w in enumerate(dict.fromkeys(words))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    text = " ".join(words * 4)
    # the bare tokenizer: the name lookup finds "[CLS]" / "[SEP]" first
    bare = build_probe(text, tok, n_seq=2, seq_len=6, seed=0, first_token="cls")
    assert (bare.tokens[:, 0] == 3).all() and (bare.tokens[:, -1] == 4).all()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, cls_token="<s>", sep_token="</s>",
                                   bos_token="<s>", unk_token="<unk>")
    p = build_probe(text, fast, n_seq=2, seq_len=6, seed=0, first_token="cls")
    assert (p.tokens[:, 0] == 0).all() and (p.tokens[:, -1] == 2).all()
    assert not np.isin(p.tokens[:, 1:-1], [0, 2, 3, 4]).any()
    # an explicit id still wins over the tokenizer's own
    q = build_probe(text, fast, n_seq=2, seq_len=6, seed=0, first_token="cls", first_token_id=3)
    assert (q.tokens[:, 0] == 3).all()
