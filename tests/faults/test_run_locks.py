"""Concurrent writers of the pins (``verdicts.json``) and of one reports folder, as real
processes: a writer that holds the lock (what a second ``lie-stats run --update-verdicts``
does while it writes) and a real ``lie-stats run``. The run must wait for the lock (seen in
``/proc/locks``, no timing involved) and then keep what the other writer wrote."""

from __future__ import annotations

import json

import pytest

from lie_stats._io import lock_path
from tests._spec_cubes import make_datasets

from ._run_helpers import spec_text, start, wait_for, waits_on_lock, write_module, hold_lock

pytestmark = pytest.mark.slow

OTHER_PIN = """
from lie_stats.gates import read_registry, write_registry
data = read_registry({path!r})
data["OTHER::synth"] = {{"verdict": "refuted", "spec_hash": "ab" * 32, "gate": "pinned"}}
write_registry({path!r}, data)
"""

OTHER_REPORT = """
import json, pathlib
folder = pathlib.Path({path!r})
folder.mkdir(exist_ok=True)
(folder / "results.json").write_text(json.dumps([{{"id": "OTHER", "figure": "figures/OTHER__synth.png"}}]))
"""


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


def test_two_writers_of_the_pins_keep_each_others_pins(tmp_path, datasets):
    folder = tmp_path / "claims"
    write_module(folder, "pinned", spec_text("P1", "P1", gate="pinned"), spec_text("P2", "P2", gate="pinned"))
    registry = folder / "verdicts.json"
    registry.write_text(json.dumps({"EARLIER::synth": {"verdict": "supported", "spec_hash": "cd" * 32,
                                                        "gate": "report"}}))
    holder = hold_lock(registry, OTHER_PIN.format(path=str(registry)))
    run = start("run", "claims", "--datasets", datasets, "--reports", tmp_path / "rep", "--update-verdicts",
                cwd=tmp_path)
    try:
        wait_for(lambda: waits_on_lock(run.pid, lock_path(registry)), run, "the run waited for the pins' lock")
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
    assert holder.wait(timeout=120) == 0
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, out[-3000:] + err[-3000:]
    pins = json.loads(registry.read_text())
    # the other writer's pin (written while the run evaluated) and the run's own; the earlier
    # pin, which no module of the folder declares, retired by the re-pinning (kept, not lost)
    assert set(pins) == {"OTHER::synth", "P1::synth", "P2::synth", "retired"}, pins
    assert set(pins["retired"]) == {"EARLIER::synth"} and pins["retired"]["EARLIER::synth"]["verdict"] == "supported"


def test_two_writers_of_one_reports_folder_write_one_after_the_other(tmp_path, datasets):
    write_module(tmp_path / "claims", "S1_claim", spec_text())
    reports = tmp_path / "rep"
    holder = hold_lock(reports, OTHER_REPORT.format(path=str(reports)))
    run = start("run", "claims", "--datasets", datasets, "--reports", reports, cwd=tmp_path)
    try:
        wait_for(lambda: waits_on_lock(run.pid, lock_path(reports)), run, "the run waited for the reports' lock")
        assert not (reports / "report.md").exists()  # nothing of the run is in place yet
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
    assert holder.wait(timeout=120) == 0
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, out[-3000:] + err[-3000:]
    records = json.loads((reports / "results.json").read_text())
    # the run's whole report replaced the other writer's: every figure it names exists
    assert [r["id"] for r in records] == ["S1"]
    assert all((reports / r["figure"]).is_file() for r in records if r["figure"])
    assert (reports / "report.md").is_file() and not list(tmp_path.glob(".rep.new-*"))
