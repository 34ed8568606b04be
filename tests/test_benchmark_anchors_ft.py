"""The fine-tune trainer (benchmarks/anchors_ft.py) rehearsed on a tiny Llama, one stop and resume
included.

The prepared build folder (``prepare``: base weights, token streams, probe) is made here from a
2-layer Llama with random weights and random tokens (no download, no GGUF). A run stopped by
SIGTERM after a measurement and rerun must continue from its saved state and give the same
curves, number for number, as a run that was never stopped; the batches start with the model's
``bos`` and are the pico build's data order.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOS = 1


def _load():
    name = "benchmarks_anchors_ft"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "anchors_ft.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


A = _load()
TINY = A.Config(arm="shakespeare", seed=1, steps=6, batch_size=2, seq_len=16, lr=1e-3, log_until=2, every=3,
                val_windows=4, attn_implementation="eager")
METRIC_COLUMNS = [c for c in A.CSV_COLUMNS if c not in ("cpu_s", "s_per_step")]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A folder as ``anchors_ft.py prepare`` leaves it, for a tiny random Llama."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from lie_stats.extraction.probe import ProbeSet, save_probe

    b = tmp_path_factory.mktemp("build")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                      bos_token_id=BOS, eos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(b / "base", safe_serialization=True)
    (b / "base" / "dequantize.json").write_text(json.dumps({"source": "random tiny Llama (test)"}))
    rng = np.random.default_rng(0)
    np.savez(b / "tokens_shakespeare.npz", train=rng.integers(3, 64, 600).astype(np.uint16),
             val=rng.integers(3, 64, 200).astype(np.uint16))
    (b / "prepare.json").write_text(json.dumps({"shakespeare": {"train_tokens": 600, "val_tokens": 200}}))
    tokens = rng.integers(3, 64, (4, 16))
    tokens[:, 0] = BOS
    save_probe(ProbeSet.from_tokens(tokens, tokenizer="random", text_source="random", first_token="bos"),
               b / "probe.npz")
    return b


def _rows(out: Path, name: str) -> list[dict]:
    with open(out / f"{name}.csv", newline="") as f:
        return [{c: r[c] for c in METRIC_COLUMNS} for r in csv.DictReader(f)]


def test_batches_start_with_bos_and_follow_the_pico_data_order():
    stream = np.arange(3, 403, dtype=np.uint16)
    pico = A.T.load_pico_build()
    run = dataclasses.replace(pico.RunConfig(), batch_size=3, seq_len=7, data_seed=5)
    for step in range(5):
        x = A.batch_at(stream, step, dataclasses.replace(TINY, batch_size=3, seq_len=8, seed=5), BOS, {})
        assert x.shape == (3, 8) and (x[:, 0] == BOS).all()
        assert np.array_equal(x[:, 1:].numpy(), pico.batch_at(stream, step, run, {}).numpy())
    val = A.val_windows(stream, dataclasses.replace(TINY, seq_len=8, val_windows=5), BOS)
    assert val.shape == (5, 8) and (val[:, 0] == BOS).all() and val.dtype == np.int64
    assert A.measure_steps(300) == [0, 1, 2, 4, 8, 16, 32, 64, 100, 150, 200, 250, 300]


def test_a_stopped_run_resumes_to_the_same_curves(tmp_path, build):
    name = A.run_name(TINY)
    handler = signal.getsignal(signal.SIGTERM)
    whole = A.train(TINY, build=build, out=tmp_path / "a", state_root=tmp_path / "sa",
                    checkpoints=tmp_path / "ca", log=lambda m: None)
    assert whole["step"] == 6 and [r["step"] for r in whole["rows"]] == [0, 1, 2, 3, 6]
    assert sorted(p.name for p in (tmp_path / "ca" / name).iterdir()) == [f"step_{s}" for s in (0, 1, 2, 3, 6)]

    def stop_after_step_2(message: str) -> None:  # SIGTERM's handler, as the signal would call it
        if "step 2:" in message:
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

    logs: list[str] = []
    stopped = A.train(TINY, build=build, out=tmp_path / "b", state_root=tmp_path / "sb",
                      checkpoints=tmp_path / "cb", log=lambda m: (logs.append(m), stop_after_step_2(m)))
    assert stopped["step"] == 2 and any("stopped at step 2 (SIGTERM)" in m for m in logs), logs
    assert signal.getsignal(signal.SIGTERM) is handler  # the caller's handler is back
    logs.clear()
    resumed = A.train(TINY, build=build, out=tmp_path / "b", state_root=tmp_path / "sb",
                      checkpoints=tmp_path / "cb", log=logs.append)
    assert any("resumed at step 2" in m for m in logs), logs
    assert resumed["meta"]["sessions"] == 2
    assert _rows(tmp_path / "b", name) == _rows(tmp_path / "a", name)
    a = json.loads((tmp_path / "a" / f"{name}.json").read_text())
    b = json.loads((tmp_path / "b" / f"{name}.json").read_text())
    assert a["measurements"] == b["measurements"] and len(b["measurements"]) == 5
    assert np.asarray(b["measurements"][-1]["sink_score"]).shape == (2, 2)
    with pytest.raises(SystemExit, match="lr"):
        A.train(dataclasses.replace(TINY, lr=1e-4), build=build, out=tmp_path / "b", state_root=tmp_path / "sb",
                checkpoints=tmp_path / "cb", log=logs.append)
