"""The adapter registry: ``model_type`` (or a class name of ``config["architectures"]``) -> adapter.

The only table from model types to adapters is built here, from the adapter classes
themselves: :func:`register` reads a class's ``model_types`` and ``class_names`` and checks its
declaration (probe, parameter patterns and their categories) once, when the class is defined.
:func:`adapter_for` picks the adapter of a checkpoint. The built-in families register on
import of :mod:`lie_stats.extraction.architectures`, which imports every family module in a fixed order
(the order in which error messages list the supported architectures).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from ...errors import ArchitectureError, did_you_mean
from .base import Adapter, ModelShape

__all__ = ["register", "unregister", "registered", "supported_architectures", "adapter_for", "config_shape"]

A = TypeVar("A", bound=type[Adapter])

_BY_MODEL_TYPE: dict[str, type[Adapter]] = {}
_BY_CLASS: dict[str, type[Adapter]] = {}


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _check_declaration(cls: type[Adapter]) -> None:
    """Raise ArchitectureError unless ``cls`` declares what an adapter must, correctly."""
    from ...schema import PARAM_CATEGORIES

    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        raise ArchitectureError(f"register: {cls!r} is not a subclass of lie_stats.extraction.architectures.Adapter")
    own = vars(cls)
    if "model_types" not in own or not cls.model_types:
        raise ArchitectureError(
            f"adapter {_where(cls)} declares no model_types of its own; set the class attribute "
            f"model_types = (...) (a subclass registers its own model types, not its parent's)"
        )
    if not all(isinstance(t, str) and t for t in cls.model_types) or isinstance(cls.model_types, str):
        raise ArchitectureError(f"adapter {_where(cls)}: model_types must be a tuple of non-empty "
                                f"strings, got {cls.model_types!r}")
    if cls.architecture not in cls.model_types:
        raise ArchitectureError(f"adapter {_where(cls)}: architecture {cls.architecture!r} must be "
                                f"one of its model_types {cls.model_types!r}")
    if "{l}" not in cls.probe:
        raise ArchitectureError(f"adapter {_where(cls)}: probe {cls.probe!r} must name a layer-0 "
                                f"attention tensor with '{{l}}' for the layer")
    for pattern, category in cls.param_patterns:
        if category not in PARAM_CATEGORIES:
            raise ArchitectureError(
                f"adapter {_where(cls)}: parameter pattern {pattern!r} names unknown category "
                f"{category!r}; known: {', '.join(PARAM_CATEGORIES)}."
                f"{did_you_mean(category, PARAM_CATEGORIES)}")
        try:
            re.compile(pattern)
        except re.error as err:
            raise ArchitectureError(f"adapter {_where(cls)}: parameter pattern {pattern!r} is "
                                    f"not a regular expression ({err})") from None


def register(cls: A) -> A:
    """Register an adapter class under each of its ``model_types`` and ``class_names``.

    Use as a class decorator in the family module. A model type (or class name) belongs to one
    adapter only.

    Parameters
    ----------
    cls : type
        A subclass of :class:`~lie_stats.extraction.architectures.base.Adapter` declaring its own
        ``model_types`` (``architecture`` among them), a ``probe`` with ``{l}``, and
        ``param_patterns`` whose categories are ``lie_stats.schema.PARAM_CATEGORIES``.

    Returns
    -------
    type
        ``cls``, unchanged.

    Raises
    ------
    ArchitectureError
        A model type or class name is already registered (the message names the adapter
        holding it), or the declaration is incomplete or names an unknown category.

    Examples
    --------
    >>> from lie_stats.extraction.architectures import LlamaAdapter
    >>> class Again(LlamaAdapter):
    ...     architecture = "llama"
    ...     model_types = ("llama",)
    >>> register(Again)
    Traceback (most recent call last):
    ...
    lie_stats.errors.ArchitectureError: cannot register ...Again: model_type 'llama' is already registered to lie_stats.extraction.architectures.llama.LlamaAdapter
    """
    _check_declaration(cls)
    for key, table, what in ([(t, _BY_MODEL_TYPE, "model_type") for t in cls.model_types]
                             + [(c, _BY_CLASS, "class name") for c in cls.class_names]):
        held = table.get(key)
        if held is not None and held is not cls:
            raise ArchitectureError(
                f"cannot register {_where(cls)}: {what} {key!r} is already registered to "
                f"{_where(held)}"
            )
    for t in cls.model_types:
        _BY_MODEL_TYPE[t] = cls
    for c in cls.class_names:
        _BY_CLASS[c] = cls
    return cls


def unregister(cls: type[Adapter]) -> None:
    """Remove an adapter class from the registry (every model type and class name it holds).

    Raises
    ------
    ArchitectureError
        ``cls`` is not registered.

    Examples
    --------
    >>> unregister(int)
    Traceback (most recent call last):
    ...
    lie_stats.errors.ArchitectureError: unregister: builtins.int is not a registered adapter
    """
    if cls not in _BY_MODEL_TYPE.values():
        raise ArchitectureError(f"unregister: {_where(cls)} is not a registered adapter")
    for table in (_BY_MODEL_TYPE, _BY_CLASS):
        for key in [k for k, v in table.items() if v is cls]:
            del table[key]


def registered() -> dict[str, type[Adapter]]:
    """A copy of the registry: ``model_type -> adapter class``, in registration order.

    Examples
    --------
    >>> registered()["qwen2"].__name__
    'Qwen2Adapter'
    """
    return dict(_BY_MODEL_TYPE)


def supported_architectures() -> tuple[str, ...]:
    """Every ``model_type`` an adapter is registered for, in registration order.

    Examples
    --------
    >>> supported_architectures()[:3]
    ('gpt_neox', 'gpt2', 'llama')
    """
    return tuple(_BY_MODEL_TYPE)


def adapter_for(config: dict, tensor_names: Sequence[str], *, source: str,
                locate: Callable[[str], str] | None = None) -> Adapter:
    """The adapter for a checkpoint, chosen by ``config["model_type"]`` (METRICS.md §1).

    Without a ``model_type``, the first class name of ``config["architectures"]`` that an
    adapter declares in its ``class_names`` chooses it.

    Parameters
    ----------
    config : dict
        Parsed ``config.json``.
    tensor_names : sequence of str
        Names of every tensor in the checkpoint (prefixes are detected).
    source : str
        The config file (or hub location), named in errors.
    locate : callable, optional
        ``name -> weight file``, for error messages.

    Raises
    ------
    ArchitectureError
        Unknown architecture (the message lists :func:`supported_architectures` and suggests
        the closest), or missing attention tensors.

    Examples
    --------
    >>> adapter_for({"model_type": "t5"}, [], source="t5/config.json")
    Traceback (most recent call last):
    ...
    lie_stats.errors.ArchitectureError: t5/config.json: architecture 'model_type': 't5' is not supported; supported: gpt_neox, gpt2, llama, mistral, qwen2, qwen3, bert, roberta, xlm-roberta, roberta-prelayernorm, mpnet, gemma3_text.
    """
    return _adapter_class(config, source)(config, tensor_names, source=source, locate=locate)


def config_shape(config: dict, *, source: str) -> ModelShape:
    """The model shape ``config`` declares, from the config alone (no tensor is read).

    Raises
    ------
    ArchitectureError
        Unknown architecture, a quantized checkpoint, or a config field of the wrong type.

    Examples
    --------
    >>> config_shape({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2},
    ...              source="c.json").d_model
    64
    """
    return _adapter_class(config, source).config_shape(config, source=source)


def _adapter_class(config: dict, source: str) -> type[Adapter]:
    if not isinstance(config, dict):
        raise ArchitectureError(f"{source}: config must be a JSON object, got {type(config).__name__}")
    model_type = config.get("model_type")
    cls = _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if cls is None and model_type is None:
        for name in config.get("architectures") or ():
            cls = _BY_CLASS.get(name)
            if cls is not None:
                break
    if cls is None:
        supported = supported_architectures()
        what = (f"'model_type': {model_type!r}" if model_type is not None
                else f"'architectures': {config.get('architectures')!r} (no model_type)")
        hint = did_you_mean(model_type, supported) if isinstance(model_type, str) else ""
        raise ArchitectureError(
            f"{source}: architecture {what} is not supported; supported: "
            f"{', '.join(supported)}.{hint}"
        )
    return cls
