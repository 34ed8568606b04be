"""Build the Pythia cards' probe set (METRICS.md §7) with Pythia's own tokenizer.

    python datasets/pythia/make_probe.py                   # writes datasets/pythia/probe.npz
    python datasets/pythia/make_probe.py --check           # rebuilds in memory, compares with the file

Every Pythia model (70m to 12b, every checkpoint) shares one tokenizer, the GPT-NeoX-20B BPE,
so one probe serves every model of the ``pythia`` and ``pythia_410m_all`` cards. The tokenizer
and the config's ``bos_token_id`` are read from ``--repo`` at ``--revision`` on the Hugging Face
hub, or, offline (``HF_HUB_OFFLINE=1``), from the local hub cache only; nothing else is fetched.

The probe is the panel's (``datasets/panel/make_probes.py``): 64 sequences x 128 tokens of
``tests/data/pico_corpus_sample.txt`` (its ``=== source ===`` lines dropped: public-domain
Austen, Shakespeare and the World English Bible), cut at word starts into non-overlapping
windows, 64 drawn with seed 0 (:func:`lie_stats.extraction.probe.build_probe`), position 0 the config's
``bos_token_id`` (``<|endoftext|>``, id 0, for Pythia).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import pathlib
import sys

from lie_stats.extraction.probe import build_probe, load_probe, save_probe

HERE = pathlib.Path(__file__).resolve().parent
REPO, REVISION = "EleutherAI/pythia-70m", "step143000"


def hub_file(repo: str, revision: str, filename: str) -> pathlib.Path:
    """``filename`` of ``repo`` at ``revision`` from the hub, or from the local cache offline."""
    from huggingface_hub import hf_hub_download

    try:
        return pathlib.Path(hf_hub_download(repo, filename, revision=revision))
    except Exception as exc:  # offline and not cached, unreachable, unknown revision
        raise SystemExit(f"hf:{repo}@{revision}: cannot read {filename} ({type(exc).__name__}: {exc}). "
                         f"This card needs the Hugging Face hub, or a local hub cache holding it.") from exc


def _panel_probes():
    """``datasets/panel/make_probes.py`` as a module: its text, sizes and seed are this probe's."""
    spec = importlib.util.spec_from_file_location("panel_make_probes", HERE.parent / "panel" / "make_probes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PANEL = _panel_probes()
SAMPLE, N_SEQ, SEQ_LEN, SEED = PANEL.SAMPLE, PANEL.N_SEQ, PANEL.SEQ_LEN, PANEL.SEED


def make_probe(repo: str, revision: str, text_path: pathlib.Path):
    """The probe set: ``text_path`` cut with ``repo``'s tokenizer, ``<bos>`` at position 0."""
    from tokenizers import Tokenizer

    tok_file = hub_file(repo, revision, "tokenizer.json")
    cfg = json.loads(hub_file(repo, revision, "config.json").read_text(encoding="utf-8"))
    if cfg.get("bos_token_id") is None:
        raise SystemExit(f"hf:{repo}@{revision}: config.json has no bos_token_id; expected Pythia's (0).")
    sha = hashlib.sha256(tok_file.read_bytes()).hexdigest()
    text, source = PANEL.probe_text(text_path)
    return build_probe(text, Tokenizer.from_file(str(tok_file)), n_seq=N_SEQ, seq_len=SEQ_LEN, seed=SEED,
                       first_token="bos", first_token_id=int(cfg["bos_token_id"]),
                       tokenizer_name=f"hf:{repo}@{revision} tokenizer.json (sha256 {sha})",
                       text_source=source)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=REPO, help=f"hub repository of the tokenizer (default {REPO})")
    ap.add_argument("--revision", default=REVISION, help=f"its revision (default {REVISION})")
    ap.add_argument("--text", type=pathlib.Path, default=SAMPLE, help="the probe text (default: the bundled sample)")
    ap.add_argument("--out", type=pathlib.Path, default=HERE / "probe.npz")
    ap.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    args = ap.parse_args(argv)
    probe = make_probe(args.repo, args.revision, args.text)
    if args.check:
        same = args.out.is_file() and load_probe(args.out) == probe
        print(f"{args.out}: {'same' if same else 'DIFFERS'} sha256 {probe.sha256}")
        return 0 if same else 1
    save_probe(probe, args.out)
    print(f"wrote {args.out}: {probe.tokens.shape}, position 0 = <bos> (id {int(probe.tokens[0, 0])}), "
          f"sha256 {probe.sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
