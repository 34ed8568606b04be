"""The worked example of adding a test kind: its statistic and its folder, nothing else touched.

The statistic (in lie_stats it goes into the :mod:`lie_stats.stats` family module it belongs
to) is a pure function of arrays returning one tidy row. The kind is one folder (in lie_stats
a new family folder of :mod:`lie_stats.spec.kinds`, imported with the package):

- ``__init__.py``: the binding from selected data to the statistic, and one
  ``register_test`` call with its roles, parameters, enums, declaration check and decision
  rule;
- ``design.py``: how ``lie-stats diagnose`` simulates the kind's data, under the null and
  with the reference effect planted (:class:`lie_stats.spec.simulate.Design`; lie_stats
  collects a family folder's ``DESIGNS``, a kind from outside passes it as
  ``register_test(design=...)``).

A spec can then name the kind, it is validated and evaluated like any other, ``lie-stats
kinds`` describes it, and the diagnosis finds its design. The last test is the kind's
calibration check: its rule, run by the diagnosis's Monte-Carlo loop on its own design's
null draws, says "supported" at the rate the statistic's interval allows, inside a binomial
band, and nearly always with the effect planted.

Here the files are written to a temporary folder (a user's own extension takes the same
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

from lie_stats.columns import STAT_COLUMNS
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
"""The kind: binding, declaration check and registration, with its design."""
from lie_stats.spec.parts import spec_error
from lie_stats.spec.registry import register_test
from lie_stats.spec.rules import decide_interval

from example_stats import share_over

from .design import DESIGN


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
              description="share of heads above params threshold, normal interval", design=DESIGN)
'''

DESIGN_FILE = '''
"""The kind's design: each head put above or below the threshold at random, at its own
distance from it (null: above with probability 1/2; planted: with the reference share)."""
import numpy as np

from lie_stats.spec.simulate import Design, prediction_value, reference_number


def _sides(arrays, spec, share, rng):
    values = arrays["values"]
    threshold = float(spec.resolved_params()["threshold"])
    above = np.where(rng.random(values.shape) < share, 1.0, -1.0)
    return {**arrays, "values": threshold + abs(values - threshold) * above}


def _null(arrays, spec, rng):
    return _sides(arrays, spec, prediction_value({}, spec), rng)


def _plant(arrays, spec, rng):
    share = reference_number(spec, ("share",), "share of heads above the threshold")
    return _sides(arrays, spec, share, rng), share


DESIGN = Design(null=_null, plant=_plant, null_value=prediction_value,
                what="each head above or below the threshold at its own distance: null with "
                     "probability 1/2, planted with the reference share")
'''


@pytest.fixture
def new_kind(tmp_path, monkeypatch):
    (tmp_path / "example_stats.py").write_text(textwrap.dedent(STATISTIC))
    (tmp_path / "example_kind").mkdir()
    (tmp_path / "example_kind" / "__init__.py").write_text(textwrap.dedent(KIND))
    (tmp_path / "example_kind" / "design.py").write_text(textwrap.dedent(DESIGN_FILE))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("example_kind")
    yield test_kinds()["share_over"]
    unregister_test("share_over")
    for name in ("example_kind", "example_kind.design", "example_stats"):
        sys.modules.pop(name, None)


def _spec(**params):
    return HypothesisSpec(id="X-share", claim="most heads changed", source="s", datasets=("synth",),
                          selection={"values": Select("change_from_init", step="last")},
                          test="share_over", params=params, reference={"share": 0.8},
                          prediction=Prediction("above", value=0.5), gate="report")


def test_a_new_kind_as_its_statistic_and_its_folder_is_declared_evaluated_and_listed(new_kind, capsys):
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


def test_the_new_kind_is_calibrated_on_its_own_design(new_kind):
    """The diagnosis's Monte-Carlo loop runs the kind's binding and rule on its design's draws.

    Under the null each of the 96 heads is above the threshold with probability 1/2, so the
    normal interval lies above 0.5 exactly when 58 or more are (the share minus its 1.96
    standard errors exceeds 0.5): P(Binomial(96, 1/2) >= 58) = 0.02596, the rate the count of
    "supported" must match, inside the 99 % binomial band. Planted at a share of 0.8, the
    interval clears 0.5 in all but about 3 of a million data sets."""
    from scipy import stats as sps

    from lie_stats.diagnosis import Settings, design_for, diagnose_arrays
    from lie_stats.spec import select
    from tests.calibration._design import binomial_band

    assert design_for(new_kind) is new_kind.design
    spec, n_sims = _spec(threshold=0.5), 400
    arrays = {"values": select(spec.selection["values"], synth_cube())}
    out = diagnose_arrays(spec, arrays, Settings(n_sims=n_sims, seed=3, n_robust=0))
    rate = float(sps.binom(96, 0.5).sf(57))
    assert abs(rate - 0.02596) < 1e-4
    lo, hi = binomial_band(n_sims, rate)
    assert lo <= round(out["fpr"] * n_sims) <= hi, out
    assert out["power"] >= 0.99, out
    assert out["n_sims"] == n_sims
