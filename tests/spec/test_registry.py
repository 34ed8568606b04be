"""The registry of test kinds (lie_stats.spec.registry): duplicates and unknown directions
are refused, and a kind registered at run time is declared and evaluated like a built-in."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lie_stats import spec as spec_mod
from lie_stats import columns as C
from lie_stats.errors import SpecError
from lie_stats.spec import Prediction, Select, evaluate_cube, register_test, test_kinds
from tests._spec_cubes import planted_spec, synth_cube


def test_register_test_refuses_duplicates_and_accepts_new_kinds():
    with pytest.raises(SpecError, match="already registered"):
        register_test("correlation", lambda d: None, lambda r, c: ("supported", ""), roles=("x",))
    with pytest.raises(SpecError, match="unknown direction 'upward'"):
        register_test("tmp_bad_direction", lambda d: None, lambda r, c: ("supported", ""),
                      roles=("x",), directions=("upward",))

    def mean_above(data):
        t = data.table("values")
        m = float(t["values"].mean())
        return pd.DataFrame([{**dict.fromkeys(C.STAT_COLUMNS, math.nan), "n": len(t), "effect": m,
                              "ci_low": m - 0.01, "ci_high": m + 0.01}])

    name = "tmp_mean_above"
    try:
        register_test(name, mean_above, spec_mod.decide_interval, roles=("values",),
                      directions=("above", "below"))
        assert name in test_kinds()
        s = planted_spec(test=name, selection={"values": Select("change_from_init")},
                         prediction=Prediction("above", value=0.5), params={})
        res = evaluate_cube(s, synth_cube())
        assert res.verdict == "supported" and res.n == 96 and res.effect > 0.5
        s2 = planted_spec(test=name, selection={"values": Select("change_from_init")},
                          prediction=Prediction("below", value=0.5), params={})
        assert evaluate_cube(s2, synth_cube()).verdict == "refuted"
    finally:
        if name in test_kinds():
            spec_mod.unregister_test(name)
