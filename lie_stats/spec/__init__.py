"""Declarative hypotheses: declaration, validation, selection, test kinds, verdicts.

A hypothesis module declares :class:`HypothesisSpec` objects (claim, data, selection, test,
prediction, gate); :func:`evaluate` (or :func:`evaluate_cube` on a cube in hand) selects
the data, runs the named test kind and decides a verdict: ``supported``, ``refuted``,
``inconclusive``, or ``skipped`` (data absent).

The package, along the flow of one evaluation:

| module | holds |
|---|---|
| :mod:`.parts` | :class:`Select`, :class:`Prediction`, :class:`Magnitude`, :class:`Fidelity`, the words a declaration uses, the error format |
| :mod:`.declaration` | :class:`HypothesisSpec`, :class:`OutOfScope`, the pre-registration hash, the choice grid |
| :mod:`.validation` | the checks every kind shares (each kind adds its own hook) |
| :mod:`.registry` | :class:`TestKind`, :func:`register_test`, :func:`test_kinds` |
| :mod:`.selection` | :func:`select`: one Select applied to a cube |
| :mod:`.tables` | :class:`TestInput` and the shaping of selected data for the statistics |
| :mod:`.rules` | the decision rules several kinds share, :class:`Decision` |
| :mod:`.kinds` | the test kinds, one family a module |
| :mod:`.magnitude` | the estimate against the claim's stated size; the ``finding`` sentence |
| :mod:`.results` | :class:`Result`, a row of ``results.json``; multiplicity families |
| :mod:`.evaluation` | :func:`evaluate_cube`, :func:`evaluate`, the specification curve |

Every kind's decision rule, roles and parameters: ``lie-stats kinds``
(:func:`test_kinds`).
"""

from . import kinds  # noqa: F401  (registers the test kinds)
from .declaration import HypothesisSpec, OutOfScope
from .evaluation import evaluate, evaluate_cube
from .kinds.agreement import compression_agreement, compression_tag
from .parts import DIRECTIONS, STEP_WORDS, Fidelity, Magnitude, Prediction, Select
from .registry import TestKind, register_test, test_kinds, unregister_test
from .results import NO_DATASET, Result
from .rules import Decision, decide_directional, decide_equivalence, decide_interval
from .selection import SelectionError, Skip, select
from .tables import TestInput
from .validation import check_datasets

__all__ = [
    "Select",
    "Prediction",
    "Magnitude",
    "Fidelity",
    "HypothesisSpec",
    "OutOfScope",
    "NO_DATASET",
    "Result",
    "TestKind",
    "TestInput",
    "Decision",
    "register_test",
    "unregister_test",
    "test_kinds",
    "select",
    "Skip",
    "SelectionError",
    "evaluate",
    "evaluate_cube",
    "check_datasets",
    "compression_agreement",
    "compression_tag",
    "decide_directional",
    "decide_equivalence",
    "decide_interval",
    "STEP_WORDS",
    "DIRECTIONS",
]
