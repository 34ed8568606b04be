"""Group kinds (lie_stats.spec.kinds.groups): group_difference on the planted ``synth``
labels (anchors change more than workers), and the sign flip of swapped group codes."""

from __future__ import annotations

import pytest

from lie_stats import schema
from lie_stats.spec import Prediction, Select
from tests._spec_cubes import FAST, evaluate_one, planted_spec


def test_group_difference_supported_and_refuted_when_the_groups_swap(planted_root):
    g = planted_spec(test="group_difference",
                     selection={"x": Select("change_from_init"), "group": Select("head_label")},
                     params={**FAST, "groups": (schema.LABEL_CODES["anchor"], schema.LABEL_CODES["worker"])},
                     prediction=Prediction("positive"))
    r = evaluate_one(g, planted_root)
    assert r.verdict == "supported" and r.effect > 0 and r.extra["n_group0"] == 48
    flipped = planted_spec(test="group_difference",
                           selection={"x": Select("change_from_init"), "group": Select("head_label")},
                           params={**FAST, "groups": (2, 1)}, prediction=Prediction("positive"))
    r2 = evaluate_one(flipped, planted_root)
    assert r2.verdict == "refuted" and r2.effect == pytest.approx(-r.effect)
