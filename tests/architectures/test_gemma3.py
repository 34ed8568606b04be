"""Gemma3 (text) adapter: attention reproduced (q/k norms with gain 1 + w, query_pre_attn_scalar), GQA."""

from __future__ import annotations

import pytest

from ._reproduce import (
    assert_attention_reproduced, assert_fold_reproduced, assert_gqa_repeat_interleave, case_id,
)

CASES = [("gemma3_text", {})]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_attention_reproduced_from_canonical_weights(case, tiny_checkpoint):
    """METRICS.md §1: canonical weights reproduce the model's attention to 1e-5 (float32)."""
    arch, kw = case
    assert_attention_reproduced(tiny_checkpoint(arch, **kw), arch)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fold_ln_reproduces_attention_from_normalized_residual(case, tiny_checkpoint):
    """fold_ln=True (METRICS.md §1): n W' + b' with n the normalized residual gives the same attention."""
    arch, kw = case
    assert_fold_reproduced(tiny_checkpoint(arch, **kw), arch)


def test_gqa_expansion_is_repeat_interleave(tiny_checkpoint):
    """K/V head j serves query heads j*rep..(j+1)*rep-1; tiling instead of interleaving fails."""
    assert_gqa_repeat_interleave(tiny_checkpoint("gemma3_text"))
