"""The Pythia card's own build command, run offline on stand-ins, builds what its hypotheses need.

The hub is unreachable here, so the models are stand-ins: tiny seeded GPT-NeoX checkpoints
named ``EleutherAI/pythia-*``, one per model and revision of the card's command, laid out as
a Hugging Face hub cache with a word-level tokenizer (``bos_token_id`` 0, as Pythia's). The
card's ``build`` string is run as it is written (``lie-stats`` and ``python`` are this
interpreter), from a copy of the files it names. Then every hypothesis declared on the card
is evaluated on the cube it built (the other cards are copied without their cubes, so that
declarations naming them resolve): none may be skipped, and none may fail for a variable the
build did not compute (the activation metrics of the probe: ``head_label``, ``grad_alignment``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lie_stats.collect import collect
from lie_stats.datasets import find_dataset
from lie_stats.spec import HypothesisSpec, evaluate

from ._checkpoints import make_checkpoint, write_hub_cache

REPO = Path(__file__).resolve().parents[1]
CARD = "pythia"
#: What the card's command reads besides the hub: copied into the stand-in repository.
FILES = ("datasets/pythia/dataset.toml", "datasets/pythia/make_probe.py", "datasets/panel/make_probes.py",
         "tests/data/pico_corpus_sample.txt")


def _tokenizer(path: Path, text: str) -> int:
    """A word-level tokenizer of ``text`` with ``<|endoftext|>`` = 0 (Pythia's bos); its size."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = dict.fromkeys(re.findall(r"\w+|[^\w\s]", text))
    vocab = {"<|endoftext|>": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path))
    return len(vocab)


def _card_command(build: str) -> str:
    """The card's command with this interpreter for ``python`` and ``lie-stats``."""
    py = shlex.quote(sys.executable)
    return re.sub(r"(^|&& )lie-stats ", rf"\1{py} -m lie_stats ",
                  re.sub(r"(^|&& )python ", rf"\1{py} ", build))


@pytest.mark.slow
def test_the_card_command_builds_every_variable_its_hypotheses_select(tmp_path, monkeypatch):
    card = find_dataset(CARD, REPO / "datasets")
    repos = re.findall(r"hf:(\S+)", card.build)
    revisions = re.search(r"--revisions (\S+)", card.build).group(1).split(",")
    assert "--probe" in card.build, card.build  # the activation metrics are part of the build
    root = tmp_path / "repo"
    for rel in FILES + tuple(str(p.relative_to(REPO)) for p in REPO.glob("datasets/*/dataset.toml")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)  # the other cards too: their cubes stay absent
    vocab = _tokenizer(tmp_path / "tokenizer.json", (REPO / FILES[-1]).read_text(encoding="utf-8"))
    cache = tmp_path / "hub"
    for i, repo in enumerate(repos):
        folders = {}
        for j, rev in enumerate(revisions):
            folder = make_checkpoint("gpt_neox", tmp_path / "ckpt" / f"{i}_{rev}", seed=100 * i + j,
                                     n_layers=3, d_model=64, vocab_size=vocab, max_positions=160, bos_token_id=0,
                                     eos_token_id=0)
            shutil.copy2(tmp_path / "tokenizer.json", folder / "tokenizer.json")
            folders[rev] = folder
        write_hub_cache(cache, repo, folders)
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(["bash", "-c", _card_command(card.build)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = find_dataset(CARD, root / "datasets")
    assert built.state == "present", [str(c) for c in built.cubes]

    found = collect([REPO / "hypotheses"])
    assert not found.errors, found.errors
    specs = [d.obj for d in found.declarations
             if isinstance(d.obj, HypothesisSpec) and CARD in d.obj.datasets]
    assert len(specs) >= 8, [s.id for s in specs]
    for spec in specs:
        for result in evaluate(spec, root / "datasets", datasets=(CARD,)):
            assert result.verdict != "skipped", (spec.id, result.reason)
            assert "has no variable" not in result.reason, (spec.id, result.reason)
