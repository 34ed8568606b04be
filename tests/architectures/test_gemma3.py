"""Gemma3 (text) adapter: attention reproduced (q/k norms with gain 1 + w, query_pre_attn_scalar), GQA."""

from __future__ import annotations

from ._reproduce import assert_gqa_repeat_interleave, reproduction_tests

CASES = [("gemma3_text", {})]


test_attention_reproduced_from_canonical_weights, test_fold_ln_reproduces_attention_from_normalized_residual = (
    reproduction_tests(CASES))


def test_gqa_expansion_is_repeat_interleave(tiny_checkpoint):
    """K/V head j serves query heads j*rep..(j+1)*rep-1; tiling instead of interleaving fails."""
    assert_gqa_repeat_interleave(tiny_checkpoint("gemma3_text"))
