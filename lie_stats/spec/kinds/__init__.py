"""The test kinds of lie_stats, one family a module; importing this package registers them.

| module | kinds |
|---|---|
| :mod:`.correlation` | ``correlation``, ``partial_correlation``, ``replication`` |
| :mod:`.equivalence` | ``correlation_equivalence``, ``tost_relative``, ``tost_paired`` |
| :mod:`.groups` | ``group_difference`` |
| :mod:`.trend` | ``trend``, ``enrichment``, ``boundary_ratio``, ``depth_crossover`` |
| :mod:`.models` | ``model_comparison``, ``mixed_model`` |
| :mod:`.clustered` | ``share_above``, ``head_mean`` |
| :mod:`.ranks` | ``delta_rank``, ``delta_order``, ``ratio_of_changes`` |
| :mod:`.pairwise` | ``head_enrichment_excess``, ``enrichment_profile``, ``functional_boundary_shift`` |
| :mod:`.classification` | ``class_interaction``, ``threshold_agreement``, ``stabilization_time``, ``class_auc`` |
| :mod:`.agreement` | ``verdict_agreement`` (built with :func:`compression_agreement`) |
| :mod:`.intersection` | ``iut_equivalence`` |
| :mod:`.meta` | ``meta_replication`` |

A module here holds, for each of its kinds, the binding (selected data -> the statistic of
:mod:`lie_stats.stats`), the decision rule when no shared rule of
:mod:`lie_stats.spec.rules` fits, the checks only that kind knows, and one
:func:`~lie_stats.spec.registry.register_test` call. Every module of this package is imported
(in name order; the order does not matter), so a new kind is one new module here plus its
statistic in :mod:`lie_stats.stats`; ``lie-stats kinds`` lists it.
"""

import importlib
import pkgutil

from .agreement import compression_agreement, compression_tag

#: The family modules of this package, in the order they were imported.
FAMILY_MODULES = tuple(
    importlib.import_module(f"{__name__}.{info.name}").__name__
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if not info.name.startswith("_")
)

__all__ = ["compression_agreement", "compression_tag", "FAMILY_MODULES"]
