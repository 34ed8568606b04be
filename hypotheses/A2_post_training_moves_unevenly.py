"""A2: post-training moves parameters unevenly; query projections rank 8th of 11 categories.

Test design (CLAIMS.md A2, METRICS.md §6.4): the parameter-delta map of the matched pair,
base = the fine-tune's step 0 (the parent's last checkpoint), tuned = its last checkpoint:
the relative Frobenius change of each parameter category (GPT-NeoX has eleven, as the essay's
count: embedding, attention Q, K, V, O, MLP in, MLP out, the pre-attention, pre-MLP and final
norms, unembedding; biases with their layer's category; the fused QKV tensor split by the
adapter). Per-layer categories are compared over the 12 layers by one-sided t tests
(lie_stats.stats.ranks); per-model categories (embedding, final norm, unembedding) enter with
their one value. A bootstrap over layers is reported beside the tests, and does not decide
(with 12 layers a percentile interval of a rank covers too little).

* ``A2``: the rank of ``attn_q`` (1 = changed most), declared "above 6" (Q in the lower half
  of the eleven, as the essay's 8th). Supported when at least 6 categories are shown to have
  changed more than Q (one-sided tests over layers, Holm at 2.5 % each way: the rank is shown
  above 6); refuted when enough are shown to have changed less that the rank is shown at or
  below 6; inconclusive otherwise. The essay's 8 is reported beside it.
* ``A2-order``: "embeddings change the most, then MLP, then output projections": the
  embedding ranks first, MLP in and out next (in either order), attention O fourth. Every
  adjacent pair of the order is tested over layers at 5 %: supported when every pair is shown
  in its order (an intersection-union test), refuted when some pair is shown reversed
  (Bonferroni over the pairs), inconclusive otherwise; the bootstrap share of resamples in
  which the whole order holds is reported, not used.

Each fine-tuned seed is one choice of the specification curve. ``A2-converged`` and
``A2-order-converged`` test the same on the pair re-made from converged bases
(datasets/pico_converged). No Pythia variant: Pythia has
no post-trained twin (datasets/pythia/README.md).
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import CONVERGED_DECLARED, CONVERGED_TUNED, GEOMETRY, PAIR_DIFFERS, proxy

CLAIM = ("Post-training moves parameters unevenly: embeddings most, then MLP, then output "
         "projections; query projections rank 8th of 11 categories")
FT = (("p96_s0_ft",), ("p96_s1_ft",))
NOTES = ("Stand-in pair: the bundled 96-head runs fine-tuned on the World English Bible at 1/10 of "
         "the pretraining learning rate (not RLHF). Pre-registration note: while lie_stats.delta "
         "was being written, its smoke check printed the point delta map of p96_s0_ft "
         "(step 0 -> 128) before this declaration was committed; the design (ranks, bands, "
         "bootstrap, 95 % share) had been chosen before and was not changed after.")


def _delta(models: tuple[str, ...]) -> dict[str, Select]:
    return {"totals": Select("param_delta", step="last", models=models),
            "layers": Select("param_delta_layer", step="last", models=models),
            "norms": Select("param_base_norm_layer", step="last", models=models)}


def _a2_on_pair(suffix: str, dataset: str, ft: tuple[tuple[str, ...], ...],
                notes: str) -> tuple[HypothesisSpec, HypothesisSpec]:
    """A2 (the rank of attn_q) and A2-order on one post-training pair, one fine-tune a choice."""
    rank = HypothesisSpec(
        id=f"A2{suffix}", claim=CLAIM, source=GEOMETRY, datasets=(dataset,),
        fidelity=proxy(*PAIR_DIFFERS[dataset]),
        selection=_delta(ft[0]), test="delta_rank", params={"target": "attn_q"},
        prediction=Prediction("above", value=6.0), reference={"rank": 8, "of": 11},
        gate="pinned", choices={"models": ft}, notes=notes,
    )
    order = HypothesisSpec(
        id=f"A2-order{suffix}", claim=CLAIM, source=GEOMETRY, datasets=(dataset,),
        fidelity=proxy(*PAIR_DIFFERS[dataset]),
        selection=_delta(ft[0]), test="delta_order",
        params={"order": [["embedding"], ["mlp_in", "mlp_out"], ["attn_o"]]},
        prediction=Prediction("above", value=0.95),
        reference={"order": ["embedding", "mlp", "attn_o"]},
        gate="pinned", choices={"models": ft}, notes=notes,
    )
    return rank, order


A2, A2_order = _a2_on_pair("", "pico_pythia_pair", FT, NOTES)

A2_converged, A2_order_converged = _a2_on_pair(
    "-converged", "pico_converged", tuple((m,) for m in CONVERGED_TUNED),
    "The pair re-made from converged bases (datasets/pico_converged): the 6 x 8 bases trained to "
    "the end of their schedule (2,560 steps, final lr 2e-4), fine-tuned on the World English Bible "
    "for 256 steps at a peak of 1e-4; per-layer categories compared over the 6 layers; the "
    "fine-tune of seed 0 is the primary analysis, the three seeds the specification curve. "
    + CONVERGED_DECLARED)
