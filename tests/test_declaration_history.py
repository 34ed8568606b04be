"""``declaration_changed`` and the report's "earlier verdict known" against a real git history.

A temporary git repository (real ``git`` processes) holds one hypothesis module and its
registry; each step is committed, and evaluated by a real ``lie-stats run`` process. What the
run says is compared with what the history says, read back with ``git show``:

- the declaration pinned is the one committed with the pin, and the declaration now the one
  at HEAD; ``declaration_changed`` must be true exactly when the two differ. The rule of the
  hash (:meth:`lie_stats.spec.HypothesisSpec.declaration`): the claim, data, selection, test,
  parameters, prediction, reference and gate are the declaration; a comment, the module's
  docstring, ``notes`` and ``source`` are not, so a commit that changes only them changes the
  file (git shows a diff) and leaves ``declaration_changed`` false;
- after re-pinning a changed declaration, ``declaration_changed`` stays true against the pin it
  replaced, and "earlier verdict known" is "yes" exactly when the registry committed before the
  commit that changed the declaration held a verdict of the old declaration.

Limit: a pin written and replaced between two commits is in the registry's ``previous`` but in
no commit; the history cannot tell it, and the report (which reads the registry) says "yes".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from lie_stats._io import canonical_hash
from lie_stats.report.view import change_views
from lie_stats.spec import HypothesisSpec
from tests._spec_cubes import make_datasets

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

KEY = "S1::synth"
MODULE = '''"""{doc}"""
from lie_stats.spec import HypothesisSpec, Prediction, Select

# {comment}
S1 = HypothesisSpec(
    id="S1", claim="value norm tracks change", source="essay", datasets=("synth",), test="correlation",
    selection={{"x": Select("value_norm"), "y": Select("change_from_init")}},
    params={{"n_perm": 99, "n_boot": {n_boot}}}, prediction=Prediction("positive"), gate="pinned",
    notes={notes!r})
'''


class Repo:
    def __init__(self, root):
        self.root = root
        self.git("init", "-q")
        self.git("config", "user.name", "test")
        self.git("config", "user.email", "test@example.invalid")
        (root / ".gitignore").write_text("datasets/\nrep/\n__pycache__/\n")

    def git(self, *args) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"git {args}: {done.stderr}"
        return done.stdout

    def write(self, *, n_boot=20, comment="the first version", doc="Claims.", notes="first") -> None:
        (self.root / "hyp").mkdir(exist_ok=True)
        (self.root / "hyp" / "claims.py").write_text(MODULE.format(n_boot=n_boot, comment=comment, doc=doc,
                                                                   notes=notes))

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def run(self, *args):
        env = dict(os.environ, OMP_NUM_THREADS="1")
        done = subprocess.run([sys.executable, "-m", "lie_stats", "run", "hyp", "--datasets", "datasets",
                               "--reports", "rep", *args], cwd=self.root, env=env, capture_output=True,
                              text=True, timeout=600)
        rows = {f"{r['id']}::{r['dataset']}": r for r in json.loads((self.root / "rep" / "results.json").read_text())}
        return done, rows

    # ------------------------------------------------------------------ what the history says
    def declaration_at(self, rev: str) -> dict:
        """S1's declaration as the module committed at ``rev`` builds it."""
        namespace: dict = {}
        exec(compile(self.git("show", f"{rev}:hyp/claims.py"), "claims.py", "exec"), namespace)
        specs = [v for v in namespace.values() if isinstance(v, HypothesisSpec)]
        assert len(specs) == 1
        return specs[0].declaration()

    def pins_at(self, rev: str) -> dict:
        try:
            return json.loads(self.git("show", f"{rev}:hyp/verdicts.json"))
        except AssertionError:  # no registry committed yet
            return {}

    def pin_commit(self) -> str:
        """The last commit that wrote the registry."""
        return self.git("log", "-1", "--format=%H", "--", "hyp/verdicts.json").strip()

    def changed_since_pinned(self) -> bool:
        """Whether the declaration at HEAD differs from the one the pin it replaced (or the
        pin, when it replaced none) was computed on: the declaration committed with that pin."""
        pin = self.pins_at(self.pin_commit())[KEY]
        commits = self.git("log", "--format=%H", "--", "hyp/verdicts.json").split()
        for rev in commits:  # newest first: the commit that wrote the replaced pin's hash
            entry = self.pins_at(rev).get(KEY, {})
            wanted = (pin.get("previous") or pin)["spec_hash"]
            if entry.get("spec_hash") == wanted:
                assert canonical_hash(self.declaration_at(rev)) == wanted  # the pin is of that commit's text
                return self.declaration_at(rev) != self.declaration_at("HEAD")
        raise AssertionError("no commit holds the pin")

    def earlier_verdict_known(self) -> bool:
        """Whether, before the commit that last changed the declaration, the committed registry
        held a verdict of the declaration it replaced."""
        commits = self.git("log", "--format=%H", "--", "hyp/claims.py").split()
        for rev, parent in zip(commits, commits[1:]):
            old = self.declaration_at(parent)
            if old != self.declaration_at(rev):
                entry = self.pins_at(f"{rev}~1").get(KEY, {})
                return entry.get("spec_hash") == canonical_hash(old) and "verdict" in entry
        return False


def test_declaration_changed_and_earlier_verdict_known_agree_with_the_git_history(tmp_path):
    make_datasets(tmp_path / "datasets")
    repo = Repo(tmp_path)
    repo.write()
    repo.commit("declare S1")
    done, _ = repo.run("--update-verdicts")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    repo.commit("pin S1")

    # a comment, the docstring and the notes: the file changed, the declaration did not
    repo.write(comment="reworded comment", doc="Claims, reworded.", notes="second")
    repo.commit("reword")
    assert repo.git("diff", "--stat", "HEAD~1", "HEAD", "--", "hyp/claims.py").strip()
    done, rows = repo.run()
    assert done.returncode == 0, done.stdout[-3000:]
    assert rows[KEY]["declaration_changed"] is False
    assert repo.changed_since_pinned() is False

    # a parameter: the declaration changed; the pinned gate fails until it is re-pinned
    repo.write(n_boot=30, comment="reworded comment", doc="Claims, reworded.", notes="second")
    repo.commit("more bootstrap resamples")
    done, rows = repo.run()
    assert done.returncode == 1 and "the declaration changed after pinning" in done.stdout, done.stdout[-3000:]
    assert rows[KEY]["declaration_changed"] is True
    assert repo.changed_since_pinned() is True

    # re-pinned and committed: still changed against the pin it replaced, and that pin's
    # verdict was committed before the declaration changed: known
    old_pin = repo.pins_at("HEAD")[KEY]
    done, _ = repo.run("--update-verdicts", "--pin-reason", "more bootstrap resamples")
    assert done.returncode == 0, done.stdout[-3000:]
    repo.commit("re-pin S1")
    done, rows = repo.run()
    assert done.returncode == 0, done.stdout[-3000:]
    row = rows[KEY]
    assert row["declaration_changed"] is True and repo.changed_since_pinned() is True
    assert row["previous_pin"]["spec_hash"] == old_pin["spec_hash"]
    assert row["previous_pin"]["verdict"] == old_pin["verdict"]
    (change,) = change_views(list(rows.values()))
    assert change["known"] == ("yes" if repo.earlier_verdict_known() else "no") == "yes"
    assert "more bootstrap resamples" in change["why"]

    # a comment again after the re-pin: the declaration equals the pinned one; against the
    # pin it replaced it still differs (what this version changed), as the history says
    repo.write(n_boot=30, comment="third wording", doc="Claims.", notes="third")
    repo.commit("reword again")
    done, rows = repo.run()
    assert done.returncode == 0 and rows[KEY]["declaration_changed"] is True
    assert repo.changed_since_pinned() is True
    assert repo.declaration_at(repo.pin_commit()) == repo.declaration_at("HEAD")  # the pin itself holds
