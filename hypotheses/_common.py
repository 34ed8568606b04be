"""Shared declarations of the claims registry (no claim lives here).

Fixed before any bundled cube of the trained suite existed (2026-11-30, first session):
the datasets, the operator family of each primary analysis, the analysis choices swept for
the specification curve, alpha 0.05, seed 0, 9,999 permutations, 2,000 bootstrap draws.
"""

from lie_stats.spec import Fidelity

GEOMETRY = "The Geometry of Attention (Drift #160, 10 April 2026; docs/CLAIMS.md)"
ANCHORS = "On the Geometry of Anchors (Drift #180, 14 April 2026; docs/CLAIMS.md)"

#: The pretraining runs of the bundled suite, one verdict each in the specification curve.
PICO_RUNS = ("p96_s0", "p96_s1", "w16", "w32", "w64", "h2", "h8", "h16")
#: The two 96-head runs (12 layers x 8 heads: the n = 96 of the anchors essay).
P96 = ("p96_s0", "p96_s1")
#: Families of the bundled extraction (the essay's Q and O, and both circuits).
FAMILIES = ("Q", "O", "QK", "OV")
#: Compressions of the bundled extraction (METRICS.md §2): exact, the essay's adaptive
#: (k = d_head) and fixed 64-dimensional projections.
PROJECTIONS = ("none", "adaptive", "fixed:64")

#: The first checkpoint of the panel is a seeded random N(0, 0.02) twin, not the model's own
#: initialization: a ratio over it measures the distance from that twin, not the growth
#: during training, so no magnitude claim is tested there (changed 2026-12-02).
RANDOM_TWIN = ("the first checkpoint is a seeded random N(0, 0.02) twin of the model, not its real "
               "initialization: a ratio over it is no magnitude of training")

#: The three runs of pico_sudoku (12 layers x 8 heads each, seeds 0, 1, 2): pre-LN encoders
#: (RoBERTa-PreLayerNorm) trained here on sudoku puzzles, the task of the anchors essay's own
#: model, with a [BOS] at position 0 of every input and of the probe (datasets/pico_sudoku/README.md).
SUDOKU = ("sudoku_s0", "sudoku_s1", "sudoku_s2")
#: Said by every spec declared on pico_sudoku.
SUDOKU_DECLARED = (
    "Declared 2026-12-04 on pico_sudoku's pre-LN suite before any cube of it existed (the runs "
    "were training; only their held-out accuracy curves had been seen, no sink_score, label or "
    "weight metric), mirroring the pico_pythia declaration of this claim; the first run (seed 0) "
    "is the primary analysis, the three seeds the specification curve. Not the first use of this "
    "declaration: the same spec was evaluated once on the card's first build, three post-LN BERT "
    "runs that stayed at chance (loss ln 9), whose verdicts the card lists; that build was not "
    "landed, and the spec is unchanged but for the data it runs on. The essay's model was 12 x 8 "
    "heads trained on sudoku; this one shares the shape and the task, not the architecture "
    "(the essay's is not stated), the recipe or the length of training (3,000 steps on CPU).")

#: The three runs of pico_bos (GPT-NeoX, 12 layers x 8 heads each, seeds 0, 1, 2), trained on a
#: GPU on the pico_pythia text with <bos> at position 0 of every window and of the probe
#: (datasets/pico_bos/README.md).
BOS_RUNS = ("bos_l12h8d16_s0_cuda", "bos_l12h8d16_s1_cuda", "bos_l12h8d16_s2_cuda")
#: Said by every spec declared on pico_bos.
BOS_DECLARED = (
    "Declared 2026-12-04 on pico_bos before any of its runs was trained (no GPU had been lent to "
    "a session; seen beforehand: the CPU emergence study of the same configuration, max "
    "sink_score 0.19 and 0.38 in two seeds and 0 anchors), with the same test as the "
    "pico_sudoku declaration of this claim; the first run (seed 0) is the primary analysis, the "
    "three seeds the specification curve.")

#: The three runs of pico_bos_cpu: the same configuration as pico_bos, seeds 2, 3, 4, trained on
#: the CPU here to a declared 10,000 steps (datasets/pico_bos_cpu/README.md).
BOS_CPU_RUNS = ("bos_l12h8d16_s2", "bos_l12h8d16_s3", "bos_l12h8d16_s4")
#: Said by every spec declared on pico_bos_cpu.
BOS_CPU_DECLARED = (
    "Declared 2026-12-04 on pico_bos_cpu while its runs trained, before any of its checkpoints "
    "was extracted and before its cube existed (seen beforehand: the emergence study's curves of "
    "seeds 0 and 1, max sink_score 0.19 and 0.38 and 0 anchors, and the first 128 steps of these "
    "three runs, max sink_score 0.04-0.05), with the same test as the pico_bos declaration of "
    "this claim; the first run (seed 2) is the primary analysis, the three seeds the "
    "specification curve.")

#: The pair re-made from converged bases (datasets/pico_converged): three GPT-NeoX 6 x 8 bases
#: trained to the end of their schedule (2,560 steps, final lr 2e-4), their fine-tunes on the
#: World English Bible (256 steps, peak lr 1e-4) and, as the pair's noise floor, their
#: continuations on the pretraining text with the same steps and rates.
CONVERGED_BASES = ("c48_s0", "c48_s1", "c48_s2")
CONVERGED_TUNED = ("c48_s0_ft", "c48_s1_ft", "c48_s2_ft")
CONVERGED_FLOOR = ("c48_s0_cont", "c48_s1_cont", "c48_s2_cont")
#: Said by every spec declared on pico_converged.
CONVERGED_DECLARED = (
    "Declared 2026-12-04 on pico_converged before its cube existed (the runs were training; only "
    "their training and held-out loss logs had been seen, no metric of them), with the test of "
    "this claim's pico_pythia_pair declaration; the runs are seed-matched (base, fine-tune and "
    "continuation of one seed pair up).")


# ------------------------------------------------------------------------------ fidelity
# How each test relates to its essay's design (HypothesisSpec.fidelity; not hashed, decides
# no verdict). Declared 2026-12-05 from the essays' own words (docs/CLAIMS.md): the Geometry
# essay's pretraining claims are on six checkpoints of Pythia-410m, its scaling claims on six
# Pythia models (d_head 64 to 256) with the fixed-threshold Abelian fraction, its post-training
# claims on one matched pair before and after RLHF / instruction tuning; the Anchors essay's
# claims on its own 12 x 8-head model trained on sudoku (architecture and recipe not stated),
# its sink figure (98 % of heads) on LLaMA.

#: As stated: the essay's population, intervention, measure, unit and sample size.
AS_STATED = Fidelity("as_stated")

#: The post-training intervention of every bundled pair.
BIBLE = "intervention: fine-tune on the World English Bible, not RLHF / instruction tuning"
#: The Geometry essay's pretraining population, against each bundled one.
GEOMETRY_POPULATION = {
    "pico_pythia": "population: tiny GPT-NeoX runs trained here on Austen + Shakespeare, not Pythia-410m",
    "panel": "population: five pretrained models (MiniLM, mpnet, SmolLM2, Gemma-3), not Pythia-410m",
    "pythia": "population: the six Pythia models (70m-2.8b) pooled, not Pythia-410m alone",
}
#: On the panel the first checkpoint is a random twin (RANDOM_TWIN): growth from it is not training.
PANEL_TWIN = "measure: change from a seeded random twin, not from the run's own first checkpoint"
#: The two bundled post-training pairs: population and sample size.
PAIR_DIFFERS = {
    "pico_pythia_pair": (BIBLE, "population: two tiny GPT-NeoX runs (12 x 8 heads) pretrained here 512 "
                                "steps, not the essay's model",
                         "sample size: 2 matched pairs, not the essay's one"),
    "pico_converged": (BIBLE, "population: three tiny GPT-NeoX bases (6 x 8 heads) trained here 2,560 "
                              "steps, not the essay's model",
                       "sample size: 3 matched pairs, not the essay's one"),
}
#: The null-calibrated Abelian fraction (METRICS.md §4.2) where the essay read a fixed threshold.
CALIBRATED_AF = "measure: null-calibrated Abelian fraction, not the essay's fixed-threshold one"
#: The scaling claims' population (A8, A9): six Pythia models, d_head 64 vs 128/256.
SCALING_POPULATION = {
    "pico_pythia": "population: tiny GPT-NeoX sweep trained here (d_head 16-64), not six Pythia models "
                   "(d_head 64-256)",
    "pico_shapes": "population: Llama-style 4-layer head-shape sweep trained here, not six Pythia "
                   "models (d_head 64-256)",
    "panel": "population: five pretrained models (MiniLM, mpnet, SmolLM2, Gemma-3), not six Pythia models",
}
#: The Anchors essay's population (its own 12 x 8-head sudoku model), against each bundled one.
ANCHORS_POPULATION = {
    "pico_pythia": "population: tiny GPT-NeoX runs trained here on Austen + Shakespeare, not the essay's "
                   "sudoku model",
    "pico_pythia_ft": "population: Bible fine-tunes of two tiny GPT-NeoX runs trained here, not the "
                      "essay's sudoku model",
    "pico_sudoku": "population: pre-LN encoders trained here 3,000 steps on sudoku, not the essay's own "
                   "sudoku model (its architecture and recipe are not stated)",
    "pico_bos": "population: tiny GPT-NeoX runs trained here on Austen + Shakespeare with <bos> first, "
                "not the essay's sudoku model",
    "pico_bos_cpu": "population: tiny GPT-NeoX runs trained here on Austen + Shakespeare with <bos> "
                    "first, not the essay's sudoku model",
    "panel": "population: five pretrained models (MiniLM, mpnet, SmolLM2, Gemma-3), not the essay's "
             "sudoku model",
    "pythia": "population: Pythia 70m-2.8b, not the essay's sudoku model",
    "pico_shapes": "population: Llama-style 4-layer head-shape sweep trained here, not the essay's sudoku model",
    "smollm2_ft": "population: SmolLM2-135M (dequantized 4-bit), not the essay's sudoku model",
    "smollm2_ft_cont": "population: SmolLM2-135M (dequantized 4-bit), not the essay's sudoku model",
}
#: The sink figure is LLaMA's (B4).
LLAMA_POPULATION = {
    "panel": "population: five pretrained models (MiniLM, mpnet, SmolLM2, Gemma-3), not LLaMA",
    "pico_sudoku": "population: pre-LN encoders trained here on sudoku, not LLaMA",
    "pico_bos": "population: tiny GPT-NeoX runs trained here with <bos> first, not LLaMA",
    "pico_bos_cpu": "population: tiny GPT-NeoX runs trained here with <bos> first, not LLaMA",
}


def proxy(*differs: str) -> Fidelity:
    """A proxy of the essay's design that differs in ``differs`` (each "<aspect>: <what>")."""
    return Fidelity("proxy", differs=differs)


def anchors_proxy(dataset: str, *more: str) -> Fidelity:
    """A test of an Anchors claim on ``dataset``: its population, and ``more``."""
    return proxy(ANCHORS_POPULATION[dataset], *more)


def llama_proxy(dataset: str, *more: str) -> Fidelity:
    """A test of the sink claim (its figure is LLaMA's) on ``dataset``: its population, and ``more``."""
    return proxy(LLAMA_POPULATION[dataset], *more)
