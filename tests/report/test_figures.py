"""Figures (lie_stats.report.figures): one PNG per result with a deterministic name, stale
figures removed, and the original figures' interval of a replication plot."""

from __future__ import annotations

import math

import pytest

from lie_stats.report.figures import original_interval


def test_figures_are_pngs_with_deterministic_names(written):
    out, files = written
    assert files["B5::synth"] == out / "figures" / "B5__synth.png"
    for key in ("B5::synth", "C1::synth", "C2::synth", "A4::synth"):
        assert files[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "B5::absent" not in files
    # exactly this run's figures: a stale one from an earlier run is gone
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "A4__synth.png", "B5__synth.png", "C1__synth.png", "C2__synth.png"]


def test_original_interval_of_the_replication_plot():
    from scipy.stats import norm

    rec = {"reference": {"rho": -0.274, "n": 96}, "params": {"method": "spearman", "ci": 0.95}}
    got = original_interval(rec, ("rho", -0.274))
    # Fisher z with the Spearman standard error sqrt(1.06 / (n - 3)) (Fieller et al. 1957)
    half = norm.ppf(0.975) * math.sqrt(1.06 / 93)
    assert got["ci_low"] == pytest.approx(math.tanh(math.atanh(-0.274) - half), abs=1e-12)
    assert got["ci_high"] == pytest.approx(math.tanh(math.atanh(-0.274) + half), abs=1e-12)
    assert original_interval({"reference": {"ratio": 5.0}}, ("ratio", 5.0)) == {}


def test_forest_of_96_choices_is_summarised_and_sized_by_rows(tmp_path):
    """B3's 96 analysis choices: the 12 lowest and highest estimates and one summary row, in a
    figure tall enough for 7-point labels not to overlap; choices without an estimate are
    counted, not drawn as empty rows."""
    from lie_stats.report.figures import FOREST_TAIL, ROW_INCHES, draw_figure, forest_rows

    curve = [{"choice": {"layer": i}, "verdict": "inconclusive", "effect": (None if i % 8 == 0 else i / 10),
              "ci_low": 0.0, "ci_high": 10.0} for i in range(96)]
    rec = {"id": "B3", "dataset": "toy", "verdict": "inconclusive", "effect": 0.65, "ci_low": 0.44,
           "ci_high": 1.4, "reference": {"ratio": 76.5}, "spec_curve": curve}
    rows = forest_rows(rec)
    labels = [label for label, _ in rows]
    assert labels[:2] == ["main", "original ratio"] and len(rows) == 2 + 2 * FOREST_TAIL + 1
    assert labels[2] == "layer=1" and labels[-1] == "layer=95"  # sorted by effect: lowest first
    assert labels[2 + FOREST_TAIL] == "... 60 more choices, effects 1.4 to 8.2; 12 without an estimate"  # 84 finite: 1.4 and 8.2 the 13th from each end
    png = tmp_path / "b3.png"
    assert draw_figure({"id": "B3"}, rec, png)
    from PIL import Image

    with Image.open(png) as im:
        assert im.size[1] >= 100 * ROW_INCHES * len(rows)  # >= 0.16 in per row at 100 dpi
        assert im.size[1] < 100 * ROW_INCHES * 96  # not one row per choice


def test_the_cross_claim_figure_draws_rows_with_a_magnitude_reference(tmp_path):
    from lie_stats import report
    from lie_stats.report.figures import _magnitude_rows, draw_magnitude_figure
    from tests.report._rows import ADDED, row

    rows = [row("A3", **ADDED),
            row("B5", effect=-0.01, ci_low=-0.24, ci_high=0.22,
                magnitude={"status": "outside", "estimate": -0.01, "reference": -0.274, "band": [-0.5, -0.1]}),
            row("A7")]  # no magnitude: not drawn
    got = _magnitude_rows(rows)
    assert [(r["label"], r["log"], r["ci"]) for r in got] == [
        ("A3 on toy", True, [770.0, 2400.0]), ("B5 on toy", False, [-0.24, 0.22])]
    assert not draw_magnitude_figure([row("A7")], tmp_path / "none.png") and not (tmp_path / "none.png").exists()
    out = report.write_reports(rows, tmp_path / "r")
    assert out["magnitudes"] == tmp_path / "r" / "figures" / report.MAGNITUDE_FIGURE
    assert out["magnitudes"].read_bytes()[:4] == b"\x89PNG"
    assert "![essay figure against our estimate](figures/claims__magnitudes.png)" in out["markdown"].read_text()
    assert "magnitudes" not in report.write_reports([row("A7")], tmp_path / "r2")
