"""Shared declarations of the claims registry (no claim lives here).

Fixed before any bundled cube of the trained suite existed (2026-11-30, first session):
the datasets, the operator family of each primary analysis, the analysis choices swept for
the specification curve, alpha 0.05, seed 0, 9,999 permutations, 2,000 bootstrap draws.
"""

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
