"""The extension contract: a new architecture is one adapter class, registered with the public registry.

A toy architecture defined here (``model_type`` "toy_attn", separate ``wq/wk/wv/wo``
``nn.Linear`` weights, one MLP, a final norm) is found by :func:`adapter_for`, read into
canonical weights, and its every tensor classified by :func:`parameter_parts` from the
patterns the class declares; registering a model type another adapter holds is refused.
"""

from __future__ import annotations

import pytest
import torch

from lie_stats.extraction.architectures import (
    SUPPORTED_ARCHITECTURES, Adapter, GPT2Adapter, LayerWeights, ModelShape, adapter_for,
    parameter_parts, register, registered, supported_architectures, unregister,
)
from lie_stats.extraction.architectures.base import LAYER_GROUP, heads_from_linear_in, heads_from_linear_out
from lie_stats.errors import ArchitectureError


class ToyAdapter(Adapter):
    """``blocks.{l}.attn.{wq,wk,wv,wo}`` (``nn.Linear``), ``blocks.{l}.ln``, ``blocks.{l}.ff``."""

    architecture = "toy_attn"
    model_types = ("toy_attn",)
    class_names = ("ToyAttnModel",)
    probe = "blocks.{l}.attn.wq.weight"
    param_patterns = (
        (r"(^|\.)tok_emb\.", "embedding"),
        (r"blocks" + LAYER_GROUP + r"ln\.", "norm_attn"),
        (r"blocks" + LAYER_GROUP + r"ff\.up\.", "mlp_in"),
        (r"blocks" + LAYER_GROUP + r"ff\.down\.", "mlp_out"),
        (r"(^|\.)ln_out\.", "norm_final"),
    )

    def _read_shape(self) -> ModelShape:
        d, h = self._int("width"), self._int("heads")
        return ModelShape(self.architecture, self._int("depth"), h, h, self._heads(d, h), d, 0.0, ())

    def _roles(self, layer: int) -> dict[str, tuple[str, bool]]:
        p = f"blocks.{layer}.attn."
        return {x + "_w": (p + f"w{x}.weight", True) for x in "qkvo"}

    def _norm_names(self, layer: int) -> tuple[str, str | None]:
        return f"blocks.{layer}.ln.weight", None

    def _raw(self, layer: int, get, names: dict[str, str]) -> LayerWeights:
        s = self.shape
        h, dh, d = s.n_heads, s.d_head, s.d_model
        ws = [heads_from_linear_in(self._read(get, names[x + "_w"], (d, d)), h, dh) for x in "qkv"]
        wo = heads_from_linear_out(self._read(get, names["o_w"], (d, d)), h, dh)
        return LayerWeights(layer, *ws, wo)


CONFIG = {"model_type": "toy_attn", "width": 4, "heads": 2, "depth": 2}


def _toy_tensors() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    t = {"tok_emb.weight": torch.randn(10, 4, generator=gen), "ln_out.weight": torch.ones(4),
         "rotary_emb.inv_freq": torch.ones(2), "extra.scale": torch.ones(1)}
    for layer in range(2):
        for x in "qkvo":
            t[f"model.blocks.{layer}.attn.w{x}.weight"] = torch.randn(4, 4, generator=gen)
        t[f"model.blocks.{layer}.ln.weight"] = torch.ones(4)
        t[f"model.blocks.{layer}.ff.up.weight"] = torch.randn(8, 4, generator=gen)
        t[f"model.blocks.{layer}.ff.down.weight"] = torch.randn(4, 8, generator=gen)
    return t


@pytest.fixture
def toy():
    """ToyAdapter registered for one test, and unregistered after it whatever happens."""
    assert register(ToyAdapter) is ToyAdapter  # usable as a class decorator
    try:
        yield ToyAdapter
    finally:
        unregister(ToyAdapter)


def test_a_new_adapter_registered_is_found_and_its_tensors_classified(toy):
    t = _toy_tensors()
    a = adapter_for(CONFIG, list(t), source="toy/config.json")
    assert type(a) is ToyAdapter and a.prefix == "model."
    assert registered()["toy_attn"] is ToyAdapter and "toy_attn" in supported_architectures()
    # dispatch by class name too, when the config has no model_type
    no_type = {k: v for k, v in CONFIG.items() if k != "model_type"} | {"architectures": ["ToyAttnModel"]}
    assert type(adapter_for(no_type, list(t), source="c")) is ToyAdapter
    # canonical weights through the shared reshape: head 1 of W_Q is rows 2, 3 of wq, transposed
    lw = a.layer_weights(1, t.__getitem__)
    assert torch.equal(lw.W_Q[1], t["model.blocks.1.attn.wq.weight"][2:4].t())
    assert a.layer_tensor_names(0, fold_ln=True)[-1] == "model.blocks.0.ln.weight"

    parts = parameter_parts(a, list(t), t.__getitem__)
    got = {name: (category, layer) for category, layer, name, _ in parts}
    assert got == {
        **{f"model.blocks.{l}.attn.w{x}.weight": (f"attn_{x}", l) for l in (0, 1) for x in "qkvo"},
        **{f"model.blocks.{l}.ln.weight": ("norm_attn", l) for l in (0, 1)},
        **{f"model.blocks.{l}.ff.up.weight": ("mlp_in", l) for l in (0, 1)},
        **{f"model.blocks.{l}.ff.down.weight": ("mlp_out", l) for l in (0, 1)},
        "tok_emb.weight": ("embedding", None), "ln_out.weight": ("norm_final", None),
        "extra.scale": ("other", None),  # no pattern claims it; the buffer inv_freq is skipped
    }
    q0 = next(v for c, l, n, v in parts if (c, l) == ("attn_q", 0))
    assert torch.equal(q0, heads_from_linear_in(t["model.blocks.0.attn.wq.weight"], 2, 2))


def test_unregistered_adapter_is_gone_and_builtins_untouched(toy):
    unregister(ToyAdapter)
    try:
        with pytest.raises(ArchitectureError, match="'toy_attn' is not supported"):
            adapter_for(CONFIG, list(_toy_tensors()), source="c")
        assert supported_architectures() == SUPPORTED_ARCHITECTURES
    finally:
        register(ToyAdapter)  # the fixture unregisters it again


def test_registering_a_taken_model_type_is_refused():
    class AnotherGPT2(GPT2Adapter):
        model_types = ("gpt2",)
        class_names = ()

    with pytest.raises(ArchitectureError) as e:
        register(AnotherGPT2)
    msg = str(e.value)
    assert "model_type 'gpt2' is already registered to lie_stats.extraction.architectures.gpt2.GPT2Adapter" in msg
    assert "AnotherGPT2" in msg
    assert registered()["gpt2"] is GPT2Adapter  # the registry is unchanged

    class SameClassName(ToyAdapter):
        architecture = "toy_two"
        model_types = ("toy_two",)
        class_names = ("GPT2LMHeadModel",)

    with pytest.raises(ArchitectureError, match="class name 'GPT2LMHeadModel' is already registered"):
        register(SameClassName)
    assert "toy_two" not in supported_architectures()  # nothing half-registered


def test_incomplete_declarations_are_refused_at_registration():
    class Inherits(ToyAdapter):  # no model_types of its own
        pass

    with pytest.raises(ArchitectureError, match="declares no model_types of its own"):
        register(Inherits)

    class Typo(ToyAdapter):
        architecture = "toy_typo"
        model_types = ("toy_typo",)
        param_patterns = ((r"(^|\.)tok_emb\.", "embeding"),)

    with pytest.raises(ArchitectureError, match="unknown category 'embeding'.*Did you mean 'embedding'"):
        register(Typo)

    class NoProbe(ToyAdapter):
        architecture = "toy_probe"
        model_types = ("toy_probe",)
        probe = "blocks.0.attn.wq.weight"

    with pytest.raises(ArchitectureError, match="must name a layer-0 attention tensor with '\\{l\\}'"):
        register(NoProbe)

    with pytest.raises(ArchitectureError, match="not a subclass"):
        register(dict)
    assert not {"toy_typo", "toy_probe"} & set(supported_architectures())
