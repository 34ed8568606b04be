"""Fixtures of the report tests: the results of five specs on the planted datasets (one
skipped), and the reports written from them once.

``results -> list[Result]``
    B5 (replication, on ``synth`` and the absent dataset), C1 (a correlation with a spec
    curve over families), C2 (a null, pinned gate) and A4 (a trend); ``planted_root`` is
    their datasets folder. Shared by the package's tests (results are immutable: a test
    that needs another makes it with ``Result.evolve``).
``written -> (folder, figures)``
    The reports of ``results`` and their figures, written once, over a stale figure.
"""

from __future__ import annotations

import pytest

from lie_stats import report
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate
from tests._spec_cubes import FAST


@pytest.fixture(scope="package")
def results(planted_root):
    root = planted_root
    specs = [
        HypothesisSpec(
            id="B5", claim="Initial contribution predicts change <b>", source="Anchors essay",
            datasets=("synth", "absent"), test="replication",
            selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
            params=FAST, prediction=Prediction("negative"),
            reference={"rho": -0.274, "p": 0.007, "n": 96}, gate="replication"),
        HypothesisSpec(
            id="C1", claim="Q-family self-Killing tracks contribution", source="test",
            datasets=("synth",), test="correlation",
            selection={"x": Select("head_contribution", step="first"),
                       "y": Select("killing_self", family="Q", projection="none")},
            params=FAST, prediction=Prediction("positive"), gate="report",
            choices={"family": ["Q", "K"]}),
        HypothesisSpec(
            id="C2", claim="ov_norm unrelated", source="test", datasets=("synth",), test="correlation",
            selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
            params=FAST, prediction=Prediction("negative"), gate="pinned"),
        HypothesisSpec(
            id="A4", claim="Abelian fraction rises", source="Geometry essay", datasets=("synth",),
            test="trend", selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
            params={"n_perm": 999}, prediction=Prediction("positive"), gate="report"),
    ]
    return [r for s in specs for r in evaluate(s, root)]


@pytest.fixture(scope="package")
def written(results, planted_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    stale = out / "figures" / "Z9__gone.png"
    stale.parent.mkdir()
    stale.write_bytes(b"old")
    return out, report.write_reports(results, out, datasets_dir=planted_root)
