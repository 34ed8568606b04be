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
