"""Build one probe set per panel model (METRICS.md §7), each with the model's own tokenizer.

    python datasets/panel/make_probes.py                 # writes datasets/panel/probes/<model>.npz
    python datasets/panel/make_probes.py --check         # rebuilds in memory, compares with the files

The probe of SINKS.md: 64 sequences x 128 tokens of ``tests/data/pico_corpus_sample.txt`` (its
``=== source ===`` lines dropped), cut at word starts into non-overlapping windows, 64 drawn with
seed 0 (:func:`lie_stats.extraction.probe.build_probe`). Position 0 is the encoder's own ``cls_token``
(``special_tokens_map.json``: ``[CLS]`` for MiniLM, ``<s>`` for mpnet) and each sequence ends
with its ``sep_token`` (``[SEP]``, ``</s>``); for the decoders it is the config's
``bos_token_id``.
The tokenizer is the ``tokenizer.json`` of the model's trained checkpoint
(``datasets/panel/build/<model>/step_1``); the quantized MiniLM copies and MiniLM-L3 carry
MiniLM-L6's WordPiece, so their probes hold the same tokens as ``minilm_l6``'s. A model's random
twin (its ``step_0``) has the same model name, so it is probed with the same file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys

from tokenizers import Tokenizer

from lie_stats.extraction.probe import ProbeSet, build_probe, load_probe, save_probe

HERE = pathlib.Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "tests" / "data" / "pico_corpus_sample.txt"
N_SEQ, SEQ_LEN, SEED = 64, 128, 0

#: model -> what sits at position 0 (METRICS.md §7: [CLS] for encoders, <bos> for decoders)
FIRST_TOKEN = {
    "minilm_l6": "cls", "minilm_l3": "cls", "mpnet": "cls",
    "smollm2_135m": "bos", "gemma3_270m": "bos",
    "minilm_l6_q4_1": "cls", "minilm_l6_q4_k": "cls",
}


def probe_text(path: pathlib.Path = SAMPLE) -> tuple[str, str]:
    """The sample without its ``===`` header lines, and a description of the source."""
    raw = path.read_text(encoding="utf-8")
    text = "\n".join(line for line in raw.splitlines() if not line.startswith("==="))
    return text, (f"{path.name} ('===' lines dropped; file sha256 {hashlib.sha256(raw.encode()).hexdigest()}), "
                  f"public domain: Austen, Shakespeare, World English Bible")


def make_probe(model: str, build: pathlib.Path, text: str, source: str) -> ProbeSet:
    """The probe of one panel model, from its ``step_1`` folder's tokenizer and config."""
    folder = build / model / "step_1"
    tok_file = folder / "tokenizer.json"
    if not tok_file.is_file():
        raise SystemExit(f"{tok_file}: missing; build the panel first (python datasets/panel/build.py).")
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    first = FIRST_TOKEN[model]
    tok_sha = hashlib.sha256(tok_file.read_bytes()).hexdigest()
    tok = Tokenizer.from_file(str(tok_file))
    first_id = end_id = None
    if first == "bos":
        first_id = cfg["bos_token_id"]
    else:  # the model's own [CLS]/[SEP]: mpnet's vocabulary holds BERT's [CLS] (105), but its cls is <s> (0)
        first_id, end_id = special_ids(folder, tok)
    return build_probe(
        text, tok, n_seq=N_SEQ, seq_len=SEQ_LEN, seed=SEED, first_token=first,
        first_token_id=first_id, end_token_id=end_id,
        tokenizer_name=f"{model}/step_1/tokenizer.json (sha256 {tok_sha})", text_source=source,
    )


def special_ids(folder: pathlib.Path, tok: Tokenizer) -> tuple[int, int]:
    """Ids of the encoder's ``cls_token`` and ``sep_token`` (``special_tokens_map.json``),
    checked against what the tokenizer's own post-processor puts around a sentence."""
    spec = json.loads((folder / "special_tokens_map.json").read_text(encoding="utf-8"))
    names = [spec[k]["content"] if isinstance(spec[k], dict) else spec[k] for k in ("cls_token", "sep_token")]
    ids = [tok.token_to_id(n) for n in names]
    if None in ids:
        raise SystemExit(f"{folder}: special tokens {names} not in the vocabulary")
    probe_tok = Tokenizer.from_str(tok.to_str())
    probe_tok.no_padding()  # MiniLM's tokenizer.json pads to 128
    enc = probe_tok.encode("a", add_special_tokens=True).ids  # e.g. [CLS] a [SEP] / <s> a </s>
    if enc[0] != ids[0] or enc[-1] != ids[1]:
        raise SystemExit(f"{folder}: the tokenizer frames a sentence as {enc}, not {names} = {ids}")
    return ids[0], ids[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=pathlib.Path, default=HERE / "build", help="the panel's run folders")
    ap.add_argument("--out", type=pathlib.Path, default=HERE / "probes")
    ap.add_argument("--models", default=",".join(FIRST_TOKEN), help="comma-separated; default: all")
    ap.add_argument("--check", action="store_true", help="compare with the files in --out, write nothing")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in FIRST_TOKEN]
    if unknown:
        raise SystemExit(f"unknown panel model(s) {unknown}; known: {', '.join(FIRST_TOKEN)}")
    text, source = probe_text()
    args.out.mkdir(parents=True, exist_ok=True)
    bad = 0
    for model in models:
        probe = make_probe(model, args.build, text, source)
        path = args.out / f"{model}.npz"
        if args.check:
            same = path.is_file() and load_probe(path) == probe
            bad += not same
            print(f"{model}: {'same' if same else 'DIFFERS'} sha256 {probe.sha256}")
        else:
            save_probe(probe, path)
            print(f"wrote {path}: {probe.tokens.shape}, position 0 = {FIRST_TOKEN[model]} "
                  f"(id {int(probe.tokens[0, 0])}), sha256 {probe.sha256}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
