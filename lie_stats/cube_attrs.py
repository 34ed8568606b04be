"""The global attributes of a cube, type-checked: a NetCDF attribute can hold an array, a
number or a list where text belongs (a file edited by hand, or written by other software), and
each one is then named with the type expected instead of failing later in a traceback.

:func:`check_global_attrs` checks every attribute of :data:`GLOBAL_ATTRS` present;
:func:`json_list_attr` parses the two that hold JSON (``provenance`` and
``failed_checkpoints``) through the bounded reader of :mod:`lie_stats._io`;
:func:`describe_provenance` writes the provenance records out for ``lie-stats info``. Used by
:mod:`lie_stats.cube` (validation, ``provenance_of``, ``describe_cube``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import schema
from ._io import expect_type, loads_json
from .errors import CubeError

__all__ = ["GLOBAL_ATTRS", "check_global_attrs", "json_list_attr", "describe_provenance"]

#: Global attributes of a cube: name -> (types, what is expected). Each one present is
#: type-checked by :func:`check_global_attrs`.
GLOBAL_ATTRS: dict[str, tuple[tuple[type, ...], str]] = {
    schema.ATTR_CONVENTIONS: ((str,), "text such as 'CF-1.10'"),
    schema.ATTR_METRICS_VERSION: ((int, np.integer), "an integer (the METRICS.md version)"),
    schema.ATTR_LIB_VERSION: ((str,), "text (the lie_stats version that wrote the cube)"),
    schema.ATTR_CREATED: ((str,), "text (an ISO 8601 time)"),
    schema.ATTR_PROVENANCE: ((str,), "a JSON list of objects as text"),
    schema.ATTR_FAILED: ((str,), "a JSON list of objects as text"),
    "store_dtype": ((str,), "'float64' or 'float32'"),
}


def json_list_attr(attrs: Mapping[str, Any], name: str, what: str) -> list[dict]:
    """A global attribute holding a JSON list of objects (provenance, failed checkpoints).

    >>> json_list_attr({"provenance": '[{"step": 1}]'}, "provenance", "one object per checkpoint")
    [{'step': 1}]
    >>> json_list_attr({"provenance": "[1]"}, "provenance", "one object per checkpoint")
    Traceback (most recent call last):
    ...
    lie_stats.errors.CubeError: Global attribute 'provenance' is a list holding a int; expected a JSON list of objects (one object per checkpoint).
    """
    text = attrs.get(name, "[]")
    where = f"Global attribute {name!r}"
    expect_type(text, str, where=where.lower(), field=name, error=CubeError,
                expected=f"a JSON list of objects as text ({what})")
    out = loads_json(text, where=where, what=f"a JSON list of objects ({what})", error=CubeError)
    if not isinstance(out, list) or not all(isinstance(r, dict) for r in out):
        got = (f"a JSON {type(out).__name__}" if not isinstance(out, list) else
               f"a list holding a {next(type(r).__name__ for r in out if not isinstance(r, dict))}")
        raise CubeError(f"{where} is {got}; expected a JSON list of objects ({what}).")
    return out


def check_global_attrs(attrs: Mapping[str, Any], *, where: str) -> None:
    """Every attribute of :data:`GLOBAL_ATTRS` present has its type (a scalar, not an array),
    ``store_dtype`` is a dtype a cube is stored in, and the JSON ones parse.

    >>> check_global_attrs({"lie_stats_version": np.array(["0.1", "0.2"])}, where="x.nc")
    Traceback (most recent call last):
    ...
    lie_stats.errors.CubeError: x.nc (global attributes): field 'lie_stats_version' is an array of shape (2,) (array(['0.1', '0.2'], dtype='<U3')); expected text (the lie_stats version that wrote the cube).
    """
    for name, (types, expected) in GLOBAL_ATTRS.items():
        if name in attrs:
            value = attrs[name]
            if isinstance(value, np.ndarray) and value.ndim == 0:
                value = value.item()
            expect_type(value, types, where=f"{where} (global attributes)", field=name,
                        expected=expected, error=CubeError)
    dtype = attrs.get("store_dtype")
    if dtype is not None and dtype not in ("float64", "float32"):
        raise CubeError(f"{where}: global attribute 'store_dtype' is {dtype!r}; expected 'float64' "
                        f"or 'float32'.")
    for name in (schema.ATTR_PROVENANCE, schema.ATTR_FAILED):
        try:
            json_list_attr(attrs, name, "one object per checkpoint")
        except CubeError as e:
            raise CubeError(f"{where}: {e}") from e


#: Provenance fields that say how long a checkpoint took, not what it is: summed, not listed.
_TIMING = "timing."


def _flat(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{}"
    return str(value)


def _same(values: Sequence[Any]) -> bool:
    first = json.dumps(values[0], sort_keys=True, default=str)
    return all(json.dumps(v, sort_keys=True, default=str) == first for v in values[1:])


def _fields(flat: Mapping[str, Any], keys: Sequence[str]) -> str:
    parts = []
    for key in keys:
        if key in flat:
            name = f"{key[len('files.'):]} sha256" if key.startswith("files.") else key
            parts.append(f"{name} {_shown(flat[key])}")
    return "; ".join(parts)


def describe_provenance(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The provenance of a cube as lines for ``lie-stats info`` (not yet escaped for the
    terminal: the caller shows each line with :func:`lie_stats._text.terminal_line`).

    Every field of the records is shown once where it is the same: the settings shared by
    every checkpoint (extraction options, probe, torch version, threads, ...) first, then each
    model with the fields shared by its checkpoints (source, shape, initial checkpoint), then
    one line per checkpoint with what differs (step, revision, path, each file's sha256).
    Timings are summed.

    Examples
    --------
    >>> recs = [{"model": "m", "step": s, "revision": f"step_{s}", "files": {"w.safetensors": h},
    ...          "options": {"seed": 0, "families": ["Q", "OV"]}, "source": "runs/m",
    ...          "timing": {"compute_s": 1.5}} for s, h in ((0, "aa11"), (8, "bb22"))]
    >>> print("\\n".join(describe_provenance(recs)))
      provenance: 2 checkpoint record(s); extraction time 3.0 s (compute_s 3.0)
        settings of every checkpoint:
          options.families: [Q, OV]
          options.seed: 0
          source: runs/m
        model m
          step 0: revision step_0; w.safetensors sha256 aa11
          step 8: revision step_8; w.safetensors sha256 bb22
    """
    if not records:
        return ["  provenance: none recorded"]
    flats = [_flat(r) for r in records]
    keys = list(dict.fromkeys(k for f in flats for k in f if not k.startswith(_TIMING)))
    shared = [k for k in keys if all(k in f for f in flats) and _same([f[k] for f in flats])]
    timing: dict[str, float] = {}
    for f in flats:
        for k, v in f.items():
            if k.startswith(_TIMING) and isinstance(v, (int, float)) and not isinstance(v, bool):
                timing[k[len(_TIMING):]] = timing.get(k[len(_TIMING):], 0.0) + float(v)
    head = f"  provenance: {len(records)} checkpoint record(s)"
    if timing:
        head += (f"; extraction time {sum(timing.values()):.1f} s ("
                 + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()) + ")")
    lines = [head]
    common = [k for k in shared if k != "model"]
    if common:
        lines.append("    settings of every checkpoint:")
        lines.extend(f"      {k}: {_shown(flats[0][k])}" for k in sorted(common))
    models: dict[str, list[dict[str, Any]]] = {}
    for f in flats:
        models.setdefault(_shown(f.get("model", "?")), []).append(f)
    rest = [k for k in keys if k not in shared and k != "model"]
    for model, group in models.items():
        per_model = [k for k in rest if len(group) > 1 and all(k in f for f in group)
                     and _same([f[k] for f in group])]
        line = f"    model {model}"
        if per_model:
            line += ": " + _fields(group[0], per_model)
        lines.append(line)
        varying = sorted((k for k in rest if k not in per_model and k != "step"),
                         key=lambda k: (k != "revision", not k.startswith("files."), k == "path"))
        for f in group:
            own = _fields(f, varying)
            lines.append(f"      step {_shown(f.get('step', '?'))}" + (f": {own}" if own else ""))
    return lines
