"""The adapter registry: dispatch, the unknown-architecture error, every adapter tested."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from lie_stats.extraction.architectures import FAMILIES, SUPPORTED_ARCHITECTURES, adapter_for, registered
from lie_stats.errors import ArchitectureError, CheckpointError

from .._checkpoints import TINY_ARCHITECTURES


def test_dispatch_by_architectures_when_model_type_missing():
    cfg = {"architectures": ["GPT2LMHeadModel"], "n_embd": 8, "n_head": 2, "n_layer": 1}
    a = adapter_for(cfg, ["transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight"],
                    source="c")
    assert a.shape.architecture == "gpt2" and a.prefix == "transformer."


def test_unknown_architecture_lists_supported_and_suggests():
    with pytest.raises(ArchitectureError) as e:
        adapter_for({"model_type": "gpt_neo"}, [], source="/ckpt/config.json")
    msg = str(e.value)
    assert "/ckpt/config.json" in msg and "'gpt_neo'" in msg
    for arch in SUPPORTED_ARCHITECTURES:
        assert arch in msg
    assert "Did you mean 'gpt_neox'?" in msg
    with pytest.raises(ArchitectureError, match="architectures"):
        adapter_for({"architectures": ["T5Model"]}, [], source="c.json")
    assert issubclass(ArchitectureError, CheckpointError)


def test_supported_architectures_all_have_tiny_builders():
    assert set(SUPPORTED_ARCHITECTURES) == set(TINY_ARCHITECTURES)


def test_every_registered_model_type_has_an_attention_reproduction_case():
    """Adding an adapter without its test in tests/architectures/ fails here."""
    package = importlib.import_module(__package__)
    covered = set()
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("test_"):
            module = importlib.import_module(f"{__package__}.{info.name}")
            covered |= {arch for arch, _ in getattr(module, "CASES", ())}
    assert covered, "no CASES found in tests/architectures/test_*.py"
    missing = set(SUPPORTED_ARCHITECTURES) - covered
    assert not missing, f"model types without an attention-reproduction case: {sorted(missing)}"


def test_every_family_module_registers_and_in_the_fixed_order():
    """The package imports each family module; each registers its adapters, and only those."""
    assert FAMILIES[:5] == ("gpt_neox", "gpt2", "llama", "bert", "gemma3")
    modules = {cls.__module__ for t, cls in registered().items() if t in SUPPORTED_ARCHITECTURES}
    assert modules == {f"lie_stats.extraction.architectures.{f}" for f in FAMILIES}
    assert SUPPORTED_ARCHITECTURES[:3] == ("gpt_neox", "gpt2", "llama")
