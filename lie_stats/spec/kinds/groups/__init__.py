"""Group kinds: ``group_difference``.

The difference of a head metric between two groups of heads, the mean difference centred
within strata with the rank-biserial correlation beside it, permutation p within strata and
cluster-bootstrap interval (:mod:`lie_stats.stats.groups`). With ``groups=(a, b)`` only the
heads coded ``a`` or ``b`` enter, ``b`` as group 1; a group with too few heads makes the
test undefined (the label counts are in the reason).
"""

from __future__ import annotations

from typing import Any

from ....stats.groups import group_difference
from ...registry import RESAMPLING, register_test
from ...rules import decide_directional
from ...tables import TestInput, columns_of, two_groups

__all__: list[str] = []


def _run_group_difference(data: TestInput) -> Any:
    p = data.params
    if p.get("groups") is None:
        table, (x, g), strata = columns_of(data, "x", "group")
    else:  # the declared groups only, the second as group 1; too few heads in one: label counts
        sub, g, strata = two_groups(data, data.table("x", "group"), "group")
        x = sub["x"].to_numpy(dtype=float)
    return group_difference(x, g, strata=strata, alternative=p["alternative"],
                            n_perm=p["n_perm"], n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"])


register_test("group_difference", _run_group_difference, decide_directional, roles=("x", "group"),
              params={"alternative": "two-sided", "groups": None, **RESAMPLING},
              description="difference of x between two groups (params groups=(a, b): codes of "
                          "the group variable; the effect, the difference in means centred "
                          "within strata, is positive when b is larger; rank-biserial beside "
                          "it), within-strata permutation (lie_stats.stats.group_difference)")
