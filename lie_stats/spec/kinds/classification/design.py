"""Designs of the classification kinds (AUC, interactions, classifier agreement, timing):
the label permuted over heads within layers; no planted effect is defined."""

from __future__ import annotations

from ...simulate import label_design

DESIGNS = {
    "class_auc": label_design("label"),
    "threshold_agreement": label_design("label"),
    "stabilization_time": label_design("group"),
    "class_interaction": label_design("group"),
}
