"""Build the pico_pythia probe set (METRICS.md §7): real pretraining-distribution text.

    python datasets/pico_pythia/make_probe.py

Text: the Austen and Shakespeare sections of tests/data/pico_corpus_sample.txt (public
domain; the World English Bible sections, the post-training distribution, are left out);
tokenizer: the suite's own byte-level BPE (datasets/pico_pythia/tokenizer.json); 48 windows
of 128 tokens starting at word starts, drawn with seed 0; position 0 is the first word (the
suite's models have no <bos>). Writes datasets/pico_pythia/probe.npz (its sha256 goes into
every cube extracted with --probe).
"""

from __future__ import annotations

import hashlib
import pathlib

from tokenizers import Tokenizer

from lie_stats.extraction.probe import build_probe, save_probe

HERE = pathlib.Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "tests" / "data" / "pico_corpus_sample.txt"
PRETRAINING = ("austen/", "shakespeare/")


def pretraining_text(path: pathlib.Path = SAMPLE) -> str:
    """The sample's sections whose header names a pretraining source, headers removed."""
    keep, out = False, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("=== "):
            keep = line[4:].startswith(PRETRAINING)
            continue
        if keep:
            out.append(line)
    return "\n".join(out)


def main() -> pathlib.Path:
    text = pretraining_text()
    tok = Tokenizer.from_file(str(HERE / "tokenizer.json"))
    probe = build_probe(
        text, tok, n_seq=48, seq_len=128, seed=0, first_token="first_word",
        tokenizer_name="pico_pythia byte-level BPE 4096 (datasets/pico_pythia/tokenizer.json)",
        text_source=(f"{SAMPLE.name}, Austen + Shakespeare sections, sha256 "
                     f"{hashlib.sha256(text.encode()).hexdigest()}, public domain"),
    )
    path = save_probe(probe, HERE / "probe.npz")
    print(f"wrote {path}: {probe.tokens.shape}, sha256 {probe.sha256}")
    return path


if __name__ == "__main__":
    main()
