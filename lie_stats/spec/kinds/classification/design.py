"""Label comparisons (group differences, AUC, interactions, classifier agreement, timing):
the label permuted over heads within layers; no planted effect is defined."""

from __future__ import annotations

from ..simulate import Design, null_permute, prediction_value


def _label_design(role: str) -> Design:
    return Design(null=null_permute(role), plant=None, null_value=prediction_value,
                  what=f"null: {role} permuted over heads within layers; no planted effect "
                       f"(no way to plant one is defined for a label comparison)")


DESIGNS = {
    "group_difference": _label_design("group"),
    "class_auc": _label_design("label"),
    "threshold_agreement": _label_design("label"),
    "stabilization_time": _label_design("group"),
    "class_interaction": _label_design("group"),
}
