"""Retired pins (lie_stats.gates, lie_stats.engine, the report): re-pinning moves the pin of a
claim now declared out of scope, or of a declaration removed, to the registry's ``retired``
section with its last verdict; a partial run retires nothing it cannot see; no gate compares
with a retired pin; the report lists them after the findings and counts only its rows.

Each step is a real ``lie-stats run`` process (a hypothesis module changes between steps, and a
process imports it once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from lie_stats import gates
from tests._spec_cubes import make_datasets

HEADER = "from lie_stats.spec import HypothesisSpec, OutOfScope, Prediction, Select\n"


def spec(name: str, ident: str, x: str = "value_norm", prediction: str = "positive") -> str:
    return textwrap.dedent(f"""
    {name} = HypothesisSpec(
        id={ident!r}, claim="{x} tracks change", source="essay", datasets=("synth",), test="correlation",
        selection={{"x": Select({x!r}), "y": Select("change_from_init")}},
        params={{"n_perm": 99, "n_boot": 20}}, prediction=Prediction({prediction!r}), gate="pinned")
    """)


def out_of_scope(name: str, ident: str) -> str:
    return (f'\n{name} = OutOfScope(id={ident!r}, claim="value norm tracks change", source="essay", '
            f'reason="no run of the kind the claim needs")\n')


def run(root, *args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "lie_stats", "run", *map(str, args), "--datasets", "datasets",
                           "--reports", "rep"], cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def project(tmp_path):
    make_datasets(tmp_path / "datasets")
    (tmp_path / "hyp").mkdir()
    (tmp_path / "hyp" / "claims_a.py").write_text(HEADER + spec("S1", "S1") + spec("S2", "S2", "ov_norm", "negative"))
    (tmp_path / "hyp" / "claims_b.py").write_text(HEADER + spec("S3", "S3"))
    done = run(tmp_path, "hyp", "--update-verdicts")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tmp_path


def registry(root):
    return json.loads((root / "hyp" / "verdicts.json").read_text())


def test_re_pinning_retires_out_of_scope_and_removed_results_and_only_what_it_saw(project):
    before = registry(project)
    assert sorted(before) == ["S1::synth", "S2::synth", "S3::synth"]
    # S1 is now declared out of scope, S2's declaration is removed
    (project / "hyp" / "claims_a.py").write_text(HEADER + out_of_scope("S1", "S1"))

    partial = run(project, "hyp/claims_b.py", "--update-verdicts")  # claims_a.py unseen: nothing to retire
    assert partial.returncode == 0, partial.stdout[-3000:]
    assert registry(project) == before and "no longer evaluated" not in partial.stdout

    plain = run(project, "hyp")  # without re-pinning: named, not retired
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert "2 pin(s) in" in plain.stdout and "--update-verdicts retires them" in plain.stdout
    assert registry(project) == before

    done = run(project, "hyp", "--update-verdicts")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "retired 2 pin(s) of results no longer evaluated in" in done.stdout
    after = registry(project)
    assert sorted(after) == ["S3::synth", gates.RETIRED] and after["S3::synth"] == before["S3::synth"]
    retired = after[gates.RETIRED]
    assert sorted(retired) == ["S1::synth", "S2::synth"]
    for key in retired:  # the last verdict, its hash and gate, kept as they were
        assert {k: retired[key][k] for k in ("verdict", "spec_hash", "gate")} == before[key]
    assert retired["S1::synth"]["retired_reason"] == "out of scope: no run of the kind the claim needs"
    assert retired["S2::synth"]["retired_reason"] == "declaration removed: no module of hyp/ declares 'S2' on 'synth'"
    assert gates.read_registry(project / "hyp" / "verdicts.json") == {"S3::synth": before["S3::synth"]}

    # the report: its rows are the results of the run (the out-of-scope claim included), the
    # first screen counts them, and the retired pins are listed after the findings, not as rows
    rows = json.loads((project / "rep" / "results.json").read_text())
    assert sorted((r["id"], r["dataset"]) for r in rows) == [("S1", "-"), ("S3", "synth")]
    md = (project / "rep" / "report.md").read_text()
    first = md.splitlines()[2]
    assert first.startswith("2 results of 2 claims.") and "out of scope 1" in first
    counts = [int(w.split()[-1]) for w in first.split("Verdicts: ")[1].split(". Gates")[0].split(", ")]
    assert sum(counts) == len(rows)
    section = md[md.index("## Retired pins"):]
    assert md.index("## Retired pins") > md.index("## Claim S3")
    assert "2 pins of hyp/verdicts.json are retired" in section
    assert f"| S2 on synth | {before['S2::synth']['verdict']} | pinned | {retired['S2::synth']['retired_on']} |" in section
    html = (project / "rep" / "report.html").read_text()
    assert "<h2>Retired pins</h2>" in html and "<td>S1 on synth</td>" in html


def test_a_retired_pin_is_no_live_pin_until_the_result_is_re_pinned(project):
    before = registry(project)
    (project / "hyp" / "claims_a.py").write_text(HEADER + spec("S1", "S1"))  # S2 removed
    assert run(project, "hyp", "--update-verdicts").returncode == 0
    assert "S2::synth" in registry(project)[gates.RETIRED]

    (project / "hyp" / "claims_a.py").write_text(HEADER + spec("S1", "S1") + spec("S2", "S2", "ov_norm", "negative"))
    failed = run(project, "hyp")  # declared again: the pinned gate has no live pin to compare with
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "pinned gate: the pin of S2::synth in" in failed.stdout and "was retired on" in failed.stdout
    assert "declaration removed" in failed.stdout

    assert run(project, "hyp", "--update-verdicts").returncode == 0
    after = registry(project)
    assert gates.RETIRED not in after  # back among the live pins, the section empty and gone
    assert {k: after["S2::synth"][k] for k in ("verdict", "spec_hash", "gate")} == before["S2::synth"]
    assert run(project, "hyp").returncode == 0
