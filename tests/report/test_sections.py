"""Report sections (lie_stats.report.sections): a section passed to write_reports follows the
results in report.md and report.html, is called only when a result matches and figures and
datasets are given, and may decline; a module's REPORT_SECTIONS is checked; importing a module
registers nothing; and the section that hypotheses/A10_report.py declares (compression
agreement, read together) from real agreement results."""

from __future__ import annotations

import pytest

from lie_stats import report
from lie_stats.errors import SpecError
from lie_stats.spec import compression_agreement, evaluate_cube
from lie_stats import columns as C
from tests._spec_cubes import COMPRESSIONS, enrichment_target


@pytest.fixture
def section():
    """A section writer for the test (``section.calls`` records its calls); it draws one figure."""
    calls = []

    def writer(results, reports_dir, datasets_dir):
        calls.append(([(r.id, r.dataset) for r in results], reports_dir, datasets_dir))
        (reports_dir / "figures").mkdir(parents=True, exist_ok=True)
        (reports_dir / "figures" / "C__together.png").write_bytes(b"\x89PNG drawn by the section")
        return "## C, read together\n\n| claim | n |\n|---|---|\n| C | 2 |\n\n![C](figures/C__together.png)\n"

    return report.ReportSection("C", writer), calls


def test_a_section_follows_the_results_in_md_and_html(results, planted_root, section, tmp_path):
    root = planted_root
    sec, calls = section
    out = report.write_reports(results, tmp_path, datasets_dir=root, sections=[sec])
    assert len(calls) == 1
    ids, reports_dir, datasets_dir = calls[0]
    assert ids == sorted(ids) and ("C1", "synth") in ids and ("B5", "absent") in ids  # every result
    # the writer draws into the staging folder that becomes tmp_path (report.writing)
    assert reports_dir.parent == tmp_path.parent and reports_dir.name.startswith(f".{tmp_path.name}.new-")
    assert datasets_dir == root and not reports_dir.exists()
    md, page = out["markdown"].read_text(), out["html"].read_text()
    # after the claims' sections, before the data and the changelog
    assert "| C | 2 |\n\n![C](figures/C__together.png)\n" in md
    assert md.index("## C2 on synth") < md.index("## C, read together") < md.index("## Data")
    assert "<h2>C, read together</h2>" in page and "<td>C</td><td>2</td>" in page
    assert '<img src="figures/C__together.png" alt="C">' in page
    # its figure is this run's: listed, and not removed as a stale per-result figure
    assert out["C"] == tmp_path / "figures" / "C__together.png" and out["C"].is_file()


def test_sections_need_a_matching_result_figures_and_datasets(results, planted_root, section, tmp_path):
    root = planted_root
    sec, calls = section
    others = [r for r in results if not r.id.startswith("C")]
    md = report.write_reports(others, tmp_path / "a", datasets_dir=root, sections=[sec])["markdown"].read_text()
    assert "read together" not in md and calls == []  # no result matches: not called
    report.write_reports(results, tmp_path / "b", figures=False, datasets_dir=root, sections=[sec])
    report.write_reports(results, tmp_path / "c", sections=[sec])
    assert calls == []
    md = report.write_reports(results, tmp_path / "d", datasets_dir=root)["markdown"].read_text()
    assert "read together" not in md and calls == []  # not passed: not written (no global registry)


def test_sections_by_predicate_may_decline_and_a_modules_sections_are_checked(results, planted_root, tmp_path):
    seen = []
    first = report.ReportSection(lambda r: r.verdict == "skipped",
                                 lambda rs, d, ds: seen.append("first") or "## First\n", name="skips")
    declines = report.ReportSection(lambda r: r.verdict == "skipped",
                                    lambda rs, d, ds: seen.append("second"), name="declines")  # returns None
    assert first.name == "skips"
    md = report.write_reports(results, tmp_path, datasets_dir=planted_root,
                              sections=[first, declines])["markdown"].read_text()
    assert seen == ["first", "second"] and "## First" in md
    with pytest.raises(TypeError, match="expected an id prefix"):
        report.ReportSection(3, lambda *a: None)
    with pytest.raises(TypeError, match="is not callable"):
        report.ReportSection("X", "not a writer")
    assert report.sections_of((first,), "m.py") == (first,) and report.sections_of(None, "m.py") == ()
    for bad, got in ((first, "ReportSection"), ([first, "A10"], "str"), ({"A10": first}, "dict")):
        with pytest.raises(SpecError, match=f"m.py: REPORT_SECTIONS: expected a list or tuple of "
                                            f"lie_stats.report.ReportSection, got {got}"):
            report.sections_of(bad, "m.py")


def test_two_modules_may_not_declare_one_section_name(tmp_path):
    from lie_stats.engine import Engine

    engine = Engine(tmp_path)
    sec = report.ReportSection("C", lambda *a: None)
    engine.collected(tmp_path / "a.py", sections=(sec,))
    engine.collected(tmp_path / "a.py", sections=(sec,))  # the same module again: one section
    with pytest.raises(SpecError, match="the report section 'C' is declared by .*a.py too"):
        engine.collected(tmp_path / "b.py", sections=[report.ReportSection("C", lambda *a: "## C\n")])
    assert engine.modules[(tmp_path / "b.py").resolve()] is False  # not collected whole
    assert engine.finish([]).sections == (sec,)


A10_AGREEMENT = {
    "id": "A10-verdicts-A3", "claim": "same verdicts under every compression", "source": "s",
    "dataset": "toy", "verdict": "refuted", "reason": "fixed:64 changes the conclusion", "gate": "report",
    "test": "verdict_agreement", "spec_hash": "0" * 64, "reference": {},
    "params": {"compressions": ["none", "adaptive", "fixed:64"], "target_id": "A3"},
    "extra": {"verdict_none": 1.0, "effect_none": 5.0, "verdict_adaptive": 1.0, "effect_adaptive": 4.5,
              "verdict_fixed_64": -1.0, "effect_fixed_64": 0.2},
}


def test_the_a10_module_declares_its_section(tmp_path):
    import doctest

    from hypotheses import A10_report

    (a10,) = report.sections_of(A10_report.REPORT_SECTIONS, A10_report.__file__)
    assert a10.name == "A10"
    got = doctest.testmod(A10_report, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert got.attempted > 0 and got.failed == 0
    empty = tmp_path / "datasets"
    empty.mkdir()
    out = report.write_reports([A10_AGREEMENT], tmp_path / "r", datasets_dir=empty, sections=[a10])
    md, page = out["markdown"].read_text(), out["html"].read_text()
    assert "## A10: the projection-artifact control, read together" in md
    assert "| A3 | toy | supported (5) | supported (4.5) | refuted (0.2) | refuted |" in md
    assert md.rstrip().endswith("![A10](figures/A10.png)")
    assert "<h2>A10: the projection-artifact control, read together</h2>" in page
    assert out["A10"] == tmp_path / "r" / "figures" / "A10.png"
    assert out["A10"].read_bytes()[:4] == b"\x89PNG"
    other = dict(A10_AGREEMENT, id="B1")
    assert "A10" not in report.write_reports([other], tmp_path / "r2", datasets_dir=empty,
                                             sections=[a10])["markdown"].read_text()


def test_a10_table_and_figure_from_agreement_results(compressed, tmp_path):
    from hypotheses import A10_report as report_a10

    spec = compression_agreement(enrichment_target(), id="A10-verdicts-T", claim="same", source="s",
                                 compressions=COMPRESSIONS)
    res = evaluate_cube(spec, compressed, dataset="synth")
    rows = report_a10.agreement_rows([res, res.row()])
    assert len(rows) == 2 and rows[0]["target"] == "T-commutator_var"
    # decisive beside inconclusive is not a disagreement (verdict_agreement refutes only on
    # opposite decisions): the agreement itself is inconclusive
    assert rows[0]["none"] == rows[0]["adaptive"] == "supported" and rows[0]["verdict"] == "inconclusive"
    assert rows[0]["fixed:8"] == "inconclusive"  # commutator_var is flat under fixed:8
    assert rows[0]["none effect"] == pytest.approx(res.extra[f"{C.EFFECT}_none"])
    md = report_a10.agreement_markdown([res])
    assert "| T-commutator_var | synth | supported" in md
    png = report_a10.a10_figure([res], {"synth": compressed}, tmp_path / "A10.png",
                                compressions=COMPRESSIONS, models={"synth": ("m0", "m1")})
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_write_reports_adds_the_a10_section_to_md_and_html(compressed, tmp_path):
    """write_reports runs the A10 section: an A10 result gives the read-together section and its
    figure in report.md and report.html; without one, neither appears."""
    from hypotheses.A10_report import REPORT_SECTIONS

    from lie_stats.report import write_reports

    spec = compression_agreement(enrichment_target(), id="A10-verdicts-T", claim="same", source="s",
                                 compressions=COMPRESSIONS)
    res = evaluate_cube(spec, compressed, dataset="synth")
    empty = tmp_path / "datasets"
    empty.mkdir()
    out = write_reports([res], tmp_path / "r", datasets_dir=empty, sections=REPORT_SECTIONS)
    md, page = out["markdown"].read_text(), out["html"].read_text()
    assert "## A10: the projection-artifact control, read together" in md
    assert "| T-commutator_var | synth | supported" in md and "![A10](figures/A10.png)" in md
    assert "<h2>A10: the projection-artifact control, read together</h2>" in page
    assert '<img src="figures/A10.png" alt="A10">' in page and "<td>T-commutator_var</td>" in page
    assert (tmp_path / "r" / "figures" / "A10.png").read_bytes()[:4] == b"\x89PNG"
    row = res.row()
    other = row | {"id": "B1", "multiplicity": row["multiplicity"] | {"family": "B1"}}
    out = write_reports([other], tmp_path / "r2", datasets_dir=empty, sections=REPORT_SECTIONS)
    assert "A10" not in out["markdown"].read_text()


def test_the_a10_takeaway_is_computed_from_the_panel_and_the_a8_verdicts():
    import numpy as np

    from hypotheses import A10_report as report_a10
    from lie_stats.datasets import load_dataset

    panel = load_dataset("panel")
    z = panel["commutator_z_mean"].sel(family="Q", step=1)
    mean = {c: {m: float(z.sel(projection=c, model=m).mean(skipna=True)) for m in ("minilm_l6", "gemma3_270m")}
            for c in ("none", "adaptive", "fixed:64")}
    flip = {"id": "A10-verdicts-A8-panel", "dataset": "panel", "verdict": "refuted", "reason": "r",
            "params": {"compressions": ["none", "adaptive", "fixed:64"], "target_id": "A8-panel"},
            "extra": {"verdict_none": 0.0, "verdict_adaptive": 1.0, "verdict_fixed_64": 0.0}}
    text = report_a10.takeaway_markdown([flip], panel)
    # the numbers come from the cube: Gemma's adaptive (k 256) and fixed:64 signal, MiniLM's
    for m in ("minilm_l6", "gemma3_270m"):
        assert f"{m} (d_head" in text
        assert f"{report_a10.fmt(mean['adaptive'][m])} under adaptive vs {report_a10.fmt(mean['fixed:64'][m])}" in text
    kept = [mean[c][m] / mean["none"][m] for c in ("adaptive", "fixed:64") for m in mean[c]]
    assert all(0 < k < 1 for k in kept) and "mpnet (d_head" not in text  # k = 64 twice: no contrast
    assert "A8-panel on panel: none inconclusive, adaptive supported, fixed:64 inconclusive" in text
    same = dict(flip, extra={"verdict_none": 0.0, "verdict_adaptive": 0.0, "verdict_fixed_64": 0.0,
                             "effect_none": 0.3, "effect_adaptive": 0.6, "effect_fixed_64": 0.5})
    assert "A8's verdict is the same under every compression here" in report_a10.takeaway_markdown([same], panel)
    assert report_a10.takeaway_markdown([flip], None) == ""
    assert np.isfinite(kept).all()
