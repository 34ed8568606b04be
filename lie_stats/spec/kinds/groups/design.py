"""Design of ``group_difference``: the group label permuted over heads within layers; no
planted effect is defined."""

from __future__ import annotations

from ...simulate import label_design

DESIGNS = {
    "group_difference": label_design("group"),
}
