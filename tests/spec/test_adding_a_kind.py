"""The worked example of adding a test kind: two files, nothing else touched.

File 1 is the statistic (in lie_stats it goes into the :mod:`lie_stats.stats` family module it
belongs to): a pure function of arrays returning one tidy row. File 2 is the kind (in
lie_stats a new module of :mod:`lie_stats.spec.kinds`, imported with the package): the binding
from selected data to the statistic, and one ``register_test`` call with its roles,
parameters, enums, declaration check and decision rule. A spec can then name the kind, it is
validated and evaluated like any other, and ``lie-stats kinds`` describes it.

Here the two files are written to a temporary folder (a user's own extension takes the same
path); the test imports them, uses the kind, and unregisters it.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from lie_stats import cli
from lie_stats.errors import SpecError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube, test_kinds, unregister_test
from tests._spec_cubes import synth_cube

STATISTIC = '''
"""The statistic: the share of units above a threshold, with a normal-approximation interval."""
import numpy as np
import pandas as pd

from lie_stats.schema import STAT_COLUMNS
from lie_stats.errors import StatsInputError


def share_over(values, *, threshold, ci=0.95):
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        raise StatsInputError(f"share_over: needs at least 2 values, got {x.size}.")
    share = float(np.mean(x > threshold))
    from scipy.stats import norm
    half = float(norm.ppf(0.5 + ci / 2)) * np.sqrt(max(share * (1 - share), 1e-12) / x.size)
    row = dict(zip(STAT_COLUMNS, (x.size, share, np.nan, share, share - half, share + half)))
    return pd.DataFrame([row])
'''

KIND = '''
"""The kind: binding, declaration check and registration."""
from lie_stats.spec.parts import spec_error
from lie_stats.spec.registry import register_test
from lie_stats.spec.rules import decide_interval

from example_stats import share_over


def _run_share_over(data):
    table = data.table("values")
    return share_over(table["values"].to_numpy(float), threshold=data.params["threshold"],
                      ci=data.params["ci"])


def _validate(spec, params):
    """The threshold is a number."""
    if not isinstance(params.get("threshold"), (int, float)):
        raise spec_error(spec, "params['threshold']", "expected a number.")


register_test("share_over", _run_share_over, decide_interval, roles=("values",),
              params={"threshold": None, "ci": 0.95, "side": "upper"}, enums={"side": ("upper",)},
              required_params=("threshold",), directions=("above", "below"), validate=_validate,
              description="share of heads above params threshold, normal interval")
'''


@pytest.fixture
def new_kind(tmp_path, monkeypatch):
    (tmp_path / "example_stats.py").write_text(textwrap.dedent(STATISTIC))
    (tmp_path / "example_kind.py").write_text(textwrap.dedent(KIND))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("example_kind")
    yield test_kinds()["share_over"]
    unregister_test("share_over")
    for name in ("example_kind", "example_stats"):
        sys.modules.pop(name, None)


def _spec(**params):
    return HypothesisSpec(id="X-share", claim="most heads changed", source="s", datasets=("synth",),
                          selection={"values": Select("change_from_init", step="last")},
                          test="share_over", params=params,
                          prediction=Prediction("above", value=0.5), gate="report")


def test_a_new_kind_in_two_files_is_declared_evaluated_and_listed(new_kind, capsys):
    res = evaluate_cube(_spec(threshold=0.5), synth_cube())
    # change_from_init at the last step is ~1.5 - 3 contribution + noise: nearly every head is
    # above 0.5, so the share's interval lies above 0.5
    assert res.verdict == "supported", res.reason
    assert res.n == 96 and res.effect > 0.8 and res.ci_low > 0.5
    assert evaluate_cube(_spec(threshold=5.0), synth_cube()).verdict == "refuted"
    assert cli.main(["kinds", "share_over"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("share_over\n") and "threshold=None (required)" in out
    assert "lies entirely on the predicted side" in out  # the shared rule's sentence


def test_the_new_kind_is_validated_at_declaration(new_kind):
    with pytest.raises(SpecError, match=r"params\['threshold'\]\"?: expected a number"):
        _spec(threshold="half")
    with pytest.raises(SpecError, match=r"params\['side'\]\"?: unknown side 'lower'"):
        _spec(threshold=0.5, side="lower")
    with pytest.raises(SpecError, match="requires the parameter 'threshold'"):
        _spec()


def test_unregistered_kind_is_unknown_again(new_kind):
    unregister_test("share_over")
    try:
        with pytest.raises(SpecError, match="unknown test 'share_over'"):
            _spec(threshold=0.5)
    finally:
        importlib.reload(sys.modules["example_kind"])  # the fixture unregisters it again
