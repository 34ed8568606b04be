"""The global attributes of a cube, type-checked: a NetCDF attribute can hold an array, a
number or a list where text belongs (a file edited by hand, or written by other software), and
each one is then named with the type expected instead of failing later in a traceback.

:func:`check_global_attrs` checks every attribute of :data:`GLOBAL_ATTRS` present;
:func:`json_list_attr` parses the two that hold JSON (``provenance`` and
``failed_checkpoints``) through the bounded reader of :mod:`lie_stats._io`. Used by
:mod:`lie_stats.cube` (validation, ``provenance_of``, ``describe_cube``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from . import schema
from ._io import expect_type, loads_json
from .errors import CubeError

__all__ = ["GLOBAL_ATTRS", "check_global_attrs", "json_list_attr"]

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
