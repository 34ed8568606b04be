"""Every name of a result: the columns statistics return, the p-values, the verdicts and gates.

This is the one home of the result vocabulary. Every statistical function returns a one-row
(``compare_models``, ``mixed_model``: one row per model / coefficient) DataFrame whose first
columns are :data:`STAT_COLUMNS` followed by the family-specific columns named here, in this
order; the kinds of :mod:`lie_stats.spec.kinds` add the extra columns named here too. Code that
writes or reads a result imports the names from here (``from lie_stats import columns as
C``); no other module defines a column name or a ``*_COLUMNS`` tuple
(``tests/spec/test_vocabulary.py`` reads every module to check it). The strings themselves are
what ``reports/results.json``, the exports and the cubes hold, so they never change.

One-sided p-values
------------------
A test with a direction reports one p per side. The pairs go by the name of what their null
hypothesis is about, so they differ between families; they are result columns, and renaming
them would change every committed result, so they stay as they are and this table is their
one reading (also :data:`ONE_SIDED_PAIRS`):

==========================================  ==============================  ==========================================
pair (toward, against)                      what each null is about         who reports it
==========================================  ==============================  ==========================================
``p_greater`` / ``p_less`` (+ ``p_min``)    the statistic larger / smaller  sign-flip and slope permutation tests
                                            than its null; ``p_min`` the    (``enrichment``, ``trend_over_runs``,
                                            smallest p the design can give  ``boundary_ratio``, ``head_mean``,
                                                                            ``share_above``), read by the
                                                                            directional rules
``p_lower`` / ``p_upper``                   the effect above -bound /       the two one-sided tests of a TOST
                                            below +bound                    (``tost_relative``, ``tost_paired``,
                                                                            ``tost_correlation``, ``iut_equivalence``)
``p_below`` / ``p_above``                   the ratio above the band's      ``ratio_of_changes`` against a
                                            lower / below its upper         reference band
                                            reference
``p_value`` / ``p_opposite``                the declared ``alternative`` /  ``head_enrichment_excess``,
                                            the other side                  ``boundary_enrichment``,
                                                                            ``functional_boundary_shift``
``p_early`` / ``p_early_against``,          the early / late depth slope    ``depth_crossover``
``p_late`` / ``p_late_against``             with / against its declared
                                            sign
``p_order`` / ``p_reversed``                the declared order holds / its  ``delta_order``
                                            most reversed pair
``p_predicted_adds`` / ``p_rival_adds``     the predicted model explains    ``model_comparison`` (encompassing F
                                            more than each rival / some     tests)
                                            rival explains more
==========================================  ==============================  ==========================================

``p_value`` is always the p the kind's rule decides on (two-sided, or in the declared
direction where the table says so); ``p_original_direction`` and ``p_small_telescopes``
(replication), ``p_equivalence`` (a directional correlation's TOST), ``p_beyond``
(intersection-union), ``p_q`` (Cochran's Q), ``p_difference`` and ``p_parametric`` are single
p's of their own nulls, named in their sections below. A report adds ``p_holm`` and ``p_bh``:
each result's ``p_value`` adjusted across the whole report (Holm, Benjamini-Hochberg).
"""

from __future__ import annotations

from typing import NamedTuple

# ---------------------------------------------------------------------------- results
#: Columns every statistical function returns (one row per test); all numeric.
STAT_COLUMNS = ("n", "statistic", "p_value", "effect", "ci_low", "ci_high")
#: The common columns, unpacked (``n``, ``statistic``, ``p_value``, ``effect``, ``ci_low``, ``ci_high``).
N, STATISTIC, P_VALUE, EFFECT, CI_LOW, CI_HIGH = STAT_COLUMNS

#: Fields of each object in reports/results.json (DESIGN.md, results).
RESULT_FIELDS = (
    "id", "claim", "dataset", "verdict", "gate", "test", STATISTIC, P_VALUE,
    EFFECT, CI_LOW, CI_HIGH, N, "spec_hash", "reference",
)

#: The verdicts, in the order a report lists them.
SUPPORTED, REFUTED, INCONCLUSIVE, SKIPPED = VERDICTS = ("supported", "refuted", "inconclusive", "skipped")
#: The gates: what CI does with a verdict (DESIGN.md, "Gates").
GATE_REPLICATION, GATE_PINNED, GATE_REPORT = GATES = ("replication", "pinned", "report")
#: A result's p-values adjusted across the whole report (Holm and Benjamini-Hochberg).
P_HOLM = "p_holm"
P_BH = "p_bh"

# resampling bookkeeping
N_PERM = "n_perm"  # resamples in the permutation null (all non-identity ones when exact)
EXACT = "exact"  # 1 when the null was enumerated exactly, 0 when Monte Carlo
N_STRATA = "n_strata"  # strata (layers, or runs) the resampling respected; 1 for free permutation
NULL_CENTER = "null_center"  # permutation expectation of the statistic (two-sided p centres on it)
N_COVARIATES = "n_covariates"

# groups
HEDGES_G = "hedges_g"
RAW_DIFFERENCE = "raw_difference"
RANK_BISERIAL = "rank_biserial"
N_GROUP0 = "n_group0"
N_GROUP1 = "n_group1"

# equivalence
BOUND = "bound"
DF = "df"  # degrees of freedom of a t (TOST, mixed model; Fieller's t: clusters minus strata)
T_LOWER = "t_lower"
T_UPPER = "t_upper"
P_LOWER = "p_lower"
P_UPPER = "p_upper"

# replication
P_ORIGINAL_DIRECTION = "p_original_direction"
Z_DIFFERENCE = "z_difference"
P_DIFFERENCE = "p_difference"
R33 = "r33"
P_SMALL_TELESCOPES = "p_small_telescopes"
BF_REPLICATION = "bf_replication"
ORIGINAL_R = "original_r"
ORIGINAL_N = "original_n"

# trend
MEAN_FIRST = "mean_first"
MEAN_LAST = "mean_last"
PAIRED = "paired"
FRACTION_OF_TRAINING = "fraction_of_training"
N_CROSSINGS = "n_crossings"
BOOT_FRACTION_NO_CROSSING = "boot_fraction_no_crossing"
FIRST_SLOPE = "first_slope"
LAST_SLOPE = "last_slope"
N_STEPS = "n_steps"
N_LAYERS = "n_layers"
MEAN_BOUNDARY = "mean_boundary"
MEAN_INTERIOR = "mean_interior"

# models
AIC = "aic"
BIC = "bic"
DELTA_AIC = "delta_aic"
ADJ_R2 = "adj_r2"
N_PARAMS = "n_params"
NESTED_IN = "nested_in"  # 1 when the smallest model is nested in this one (F test defined)
STD_ERR = "std_err"
N_GROUPS = "n_groups"
CONVERGED = "converged"
BOUNDARY = "boundary"  # 1 when the group (layer) variance is estimated at its bound, 0
GROUP_VARIANCE = "group_variance"  # random-intercept variance (REML)
RESIDUAL_VARIANCE = "residual_variance"

CORRELATION_COLUMNS = (*STAT_COLUMNS, N_STRATA, N_PERM, EXACT, NULL_CENTER)
PARTIAL_CORRELATION_COLUMNS = (*STAT_COLUMNS, N_COVARIATES, N_STRATA, N_PERM, EXACT, NULL_CENTER)
GROUP_DIFFERENCE_COLUMNS = (
    *STAT_COLUMNS, RANK_BISERIAL, HEDGES_G, RAW_DIFFERENCE, N_GROUP0, N_GROUP1, N_STRATA, N_PERM, EXACT, NULL_CENTER,
)
TOST_RELATIVE_COLUMNS = (*STAT_COLUMNS, BOUND, DF, T_LOWER, T_UPPER, P_LOWER, P_UPPER)
TOST_CORRELATION_COLUMNS = (*STAT_COLUMNS, BOUND, T_LOWER, T_UPPER, P_LOWER, P_UPPER)
REPLICATION_COLUMNS = (
    *STAT_COLUMNS, P_ORIGINAL_DIRECTION, Z_DIFFERENCE, P_DIFFERENCE, R33, P_SMALL_TELESCOPES,
    BF_REPLICATION, ORIGINAL_R, ORIGINAL_N, N_STRATA, N_PERM, EXACT,
)
TREND_COLUMNS = (*STAT_COLUMNS, N_PERM, EXACT)
ENRICHMENT_COLUMNS = (*STAT_COLUMNS, MEAN_FIRST, MEAN_LAST, PAIRED, N_STRATA, N_PERM, EXACT)
CROSSOVER_COLUMNS = (
    *STAT_COLUMNS, FRACTION_OF_TRAINING, N_CROSSINGS, BOOT_FRACTION_NO_CROSSING, FIRST_SLOPE,
    LAST_SLOPE, N_STEPS, N_LAYERS,
)
BOUNDARY_RATIO_COLUMNS = (*STAT_COLUMNS, MEAN_BOUNDARY, MEAN_INTERIOR, N_LAYERS, N_PERM, EXACT, NULL_CENTER)
COMPARE_MODELS_COLUMNS = (*STAT_COLUMNS, AIC, BIC, DELTA_AIC, ADJ_R2, N_PARAMS, NESTED_IN)
MIXED_MODEL_COLUMNS = (*STAT_COLUMNS, STD_ERR, DF, N_GROUPS, CONVERGED, BOUNDARY, GROUP_VARIANCE,
                       RESIDUAL_VARIANCE)


# ---------------------------------------------------------------------------- stats.signflip
#: Result columns: the one-sided p towards larger / smaller values of the statistic, and the
#: smallest one-sided p the design can reach (``2^-K`` for ``K`` sign-flipped units).
P_GREATER = "p_greater"
P_LESS = "p_less"
P_MIN = "p_min"

# ---------------------------------------------------------------------------- stats.clustered
#: Extra result columns of :func:`head_mean` / :func:`share_above`; ``n_clusters`` also of the
#: paired TOST kinds: the (model, layer) clusters a per-head selection was averaged into (NaN
#: when the units are not heads).
N_CLUSTERS = "n_clusters"  # clusters (layers) in the estimate
N_BOOT = "n_boot"  # bootstrap replicates drawn
NULL_VALUE = "null_value"  # the value the sign-flip test is against

HEAD_MEAN_COLUMNS = (*STAT_COLUMNS, N_CLUSTERS, N_STRATA, N_BOOT, NULL_VALUE, P_GREATER, P_LESS,
                     P_MIN, N_PERM, EXACT)

# ---------------------------------------------------------------------------- stats.classification
AUC_POOLED = "auc_pooled"  # the ordinary (pooled) AUC, Mann-Whitney U / (n1 n0)
N_POSITIVE = "n_positive"
N_NEGATIVE = "n_negative"
N_PAIRS = "n_pairs"  # positive-negative pairs inside a stratum (the AUC's denominator)
KAPPA_POOLED = "kappa_pooled"  # Cohen's kappa with pooled chance agreement
BALANCED_ACCURACY = "balanced_accuracy"  # mean over observed classes of the recall
AGREEMENT = "agreement"  # observed proportion of agreement p_o
CHANCE_AGREEMENT = "chance_agreement"  # within-strata chance agreement (the kappa's p_e)
N_CLASSES = "n_classes"
SLOPE_GROUP0 = "slope_group0"
SLOPE_GROUP1 = "slope_group1"
GROUP_EFFECT = "group_effect"  # group 1 minus group 0 at the mean x (main effect)
P_PARAMETRIC = "p_parametric"  # t-test p of the OLS fit (descriptive beside the permutation p)

AUC_COLUMNS = (*STAT_COLUMNS, AUC_POOLED, N_POSITIVE, N_NEGATIVE, N_PAIRS, N_STRATA, N_PERM,
               EXACT, NULL_CENTER)
AGREEMENT_COLUMNS = (*STAT_COLUMNS, KAPPA_POOLED, BALANCED_ACCURACY, AGREEMENT, CHANCE_AGREEMENT,
                     N_CLASSES, N_STRATA, N_PERM, EXACT, NULL_CENTER)
INTERACTION_COLUMNS = (*STAT_COLUMNS, SLOPE_GROUP0, SLOPE_GROUP1, GROUP_EFFECT, P_PARAMETRIC,
                       N_GROUP0, N_GROUP1, N_STRATA, N_PERM, EXACT)

# ---------------------------------------------------------------------------- stats.equivalence
#: Columns of :func:`tost_paired`: those of :func:`tost_relative` (n, statistic, p, effect,
#: interval, bound, df, and the two one-sided t and p).
TOST_PAIRED_COLUMNS = TOST_RELATIVE_COLUMNS

# ---------------------------------------------------------------------------- stats.intersection
#: Extra columns of :func:`iut_equivalence`.
N_WITHIN = "n_within"  # units whose own TOST rejects at alpha
N_BEYOND = "n_beyond"  # units significantly beyond the bound after Bonferroni over units
P_BEYOND = "p_beyond"  # Bonferroni-adjusted smallest p of "this unit's |change| > bound"
N_REPLICATES = "n_replicates"  # runs per unit
NOISE_FLOOR = "noise_floor"  # largest per-cell noise SD of one run's change, relative
MEDIAN_ABS_CHANGE = "median_abs_change"  # median over units of |relative change|
WORST_UNIT = "worst_unit"  # index of the unit with the largest IUT p (the binding unit)
LARGEST_UNIT = "largest_unit"  # index of the unit with the largest |change| (the effect's)
RESOLVABLE = "resolvable"  # 1 when every unit's t interval is narrower than the bound band
LARGEST_ABS_CHANGE = "largest_abs_change"  # exp(max |mean log change|) - 1, the bound's scale
LARGEST_ABS_CI_LOW = "largest_abs_ci_low"  # its interval, simultaneous over the units
LARGEST_ABS_CI_HIGH = "largest_abs_ci_high"

IUT_COLUMNS = (*STAT_COLUMNS, BOUND, DF, N_WITHIN, N_BEYOND, P_BEYOND, N_REPLICATES,
               NOISE_FLOOR, MEDIAN_ABS_CHANGE, WORST_UNIT, LARGEST_UNIT, RESOLVABLE,
               LARGEST_ABS_CHANGE, LARGEST_ABS_CI_LOW, LARGEST_ABS_CI_HIGH)

# ---------------------------------------------------------------------------- stats.meta
K_RUNS = "k_runs"  # runs pooled (studies of the meta-analysis)
POOLED_Z = "pooled_z"  # random-effects pooled Fisher z
POOLED_Z_SE = "pooled_z_se"
TAU2 = "tau2"  # between-run variance on Fisher's z scale (the declared estimator's)
TAU2_DL = "tau2_dl"
TAU2_REML = "tau2_reml"
I2 = "i2"  # percent of the total variance that is between runs
Q = "q"  # Cochran's Q
P_Q = "p_q"
PI_LOW = "pi_low"  # prediction interval of a new run's effect
PI_HIGH = "pi_high"
MIN_RUN_R = "min_run_r"
MAX_RUN_R = "max_run_r"
META_REPLICATION_COLUMNS = (
    *STAT_COLUMNS, K_RUNS, POOLED_Z, POOLED_Z_SE, TAU2, TAU2_DL, TAU2_REML, I2, Q, P_Q, PI_LOW, PI_HIGH,
    MIN_RUN_R, MAX_RUN_R, P_ORIGINAL_DIRECTION, R33, P_SMALL_TELESCOPES, ORIGINAL_R,
    ORIGINAL_N, N_COVARIATES, CONVERGED,
)

# ---------------------------------------------------------------------------- stats.pairwise
MAX_RATIO = "max_ratio"  # the largest per-layer ratio max-head / layer enrichment
MAX_RATIO_UNIT = "max_ratio_unit"  # index of the layer (unit) where it occurs
MAX_HEAD_ENRICHMENT = "max_head_enrichment"  # that layer's most enriched head's enrichment
LAYER_ENRICHMENT_AT_MAX = "layer_enrichment_at_max"  # that layer's own enrichment
NULL_RATIO = "null_ratio"  # geometric-mean ratio expected under exchangeable head increments
P_OPPOSITE = "p_opposite"  # one-sided p opposite to `alternative` / the prediction (NaN if two-sided)
BOOT_FRACTION_UNDEFINED = "boot_fraction_undefined"  # share of bootstrap replicates left out
N_HEADS = "n_heads"
ENRICHMENT_FIRST_LAYER = "enrichment_first_layer"
ENRICHMENT_LAST_LAYER = "enrichment_last_layer"
BOUNDARY_TOP2 = "boundary_top2"  # 1 when the first and last layer are the two most enriched
#: Percentile intervals of the first and last layer's enrichment (the boundary ratio's replicates).
ENRICHMENT_FIRST_LAYER_CI_LOW = "enrichment_first_layer_ci_low"
ENRICHMENT_FIRST_LAYER_CI_HIGH = "enrichment_first_layer_ci_high"
ENRICHMENT_LAST_LAYER_CI_LOW = "enrichment_last_layer_ci_low"
ENRICHMENT_LAST_LAYER_CI_HIGH = "enrichment_last_layer_ci_high"
RATIO_TOTAL = "ratio_total"  # boundary ratio of the total form's enrichment
RATIO_FUNCTIONAL = "ratio_functional"  # boundary ratio of the functional form's enrichment

HEAD_EXCESS_COLUMNS = (
    *STAT_COLUMNS, MAX_RATIO, MAX_RATIO_UNIT, MAX_HEAD_ENRICHMENT, LAYER_ENRICHMENT_AT_MAX,
    NULL_RATIO, P_OPPOSITE, N_HEADS, N_STEPS, N_PERM, EXACT,
)
BOUNDARY_ENRICHMENT_COLUMNS = (
    *STAT_COLUMNS, ENRICHMENT_FIRST_LAYER, ENRICHMENT_LAST_LAYER, MEAN_BOUNDARY, MEAN_INTERIOR,
    BOUNDARY_TOP2, P_OPPOSITE, BOOT_FRACTION_UNDEFINED, N_LAYERS, N_HEADS, N_PERM, EXACT,
    NULL_CENTER, ENRICHMENT_FIRST_LAYER_CI_LOW, ENRICHMENT_FIRST_LAYER_CI_HIGH,
    ENRICHMENT_LAST_LAYER_CI_LOW, ENRICHMENT_LAST_LAYER_CI_HIGH,
)
FUNCTIONAL_SHIFT_COLUMNS = (
    *STAT_COLUMNS, RATIO_TOTAL, RATIO_FUNCTIONAL, P_OPPOSITE, BOOT_FRACTION_UNDEFINED, N_LAYERS,
    N_HEADS, N_PERM, EXACT, NULL_CENTER,
)

# ---------------------------------------------------------------------------- stats.ranks
N_CATEGORIES = "n_categories"  # categories ranked
N_SHOWN_LARGER = "n_shown_larger"  # categories shown to have changed more than the target (Holm)
N_SHOWN_SMALLER = "n_shown_smaller"  # categories shown to have changed less than the target (Holm)
P_ORDER = "p_order"  # intersection-union p of the declared order: the largest pairwise p
P_REVERSED = "p_reversed"  # Bonferroni p of the most reversed pair of the declared order
TARGET_VALUE = "target_value"  # the target category's relative change (full sample)
ORDER_HOLDS = "order_holds"  # 1 when the declared order holds on the full sample
BOOT_SHARE = "boot_share"  # share of bootstrap resamples in which it holds
PRE_CHANGE = "pre_change"  # mean change of the numerator (pretraining)
POST_CHANGE = "post_change"  # mean change of the denominator (post-training)
LOG10_RATIO = "log10_ratio"
P_BELOW = "p_below"  # one-sided p of H0: ratio <= the lower reference (small: the ratio is above it)
P_ABOVE = "p_above"  # one-sided p of H0: ratio >= the upper reference (small: the ratio is below it)
N_UNITS = "n_units"

DELTA_RANK_COLUMNS = (*STAT_COLUMNS, N_CATEGORIES, TARGET_VALUE, N_SHOWN_LARGER, N_SHOWN_SMALLER)
DELTA_ORDER_COLUMNS = (*STAT_COLUMNS, N_CATEGORIES, ORDER_HOLDS, BOOT_SHARE, P_ORDER, P_REVERSED)
RATIO_OF_CHANGES_COLUMNS = (*STAT_COLUMNS, PRE_CHANGE, POST_CHANGE, LOG10_RATIO, P_BELOW, P_ABOVE,
                            N_UNITS, DF, N_STRATA)

# ---------------------------------------------------------------------------- stats.trend
#: Extra columns: runs in a trend over runs; the crossover's early checkpoint, the one-sided
#: p-values of the early and late depth slopes for and against the declared signs, and the
#: share of bootstrap resamples that cross in the declared direction.
N_RUNS = "n_runs"
EARLY_STEP = "early_step"
P_EARLY = "p_early"
P_LATE = "p_late"
P_EARLY_AGAINST = "p_early_against"
P_LATE_AGAINST = "p_late_against"
BOOT_SHARE_CROSSING = "boot_share_crossing"
TREND_RUNS_COLUMNS = (*TREND_COLUMNS, N_RUNS, P_GREATER, P_LESS, P_MIN)
ENRICHMENT_TEST_COLUMNS = (*ENRICHMENT_COLUMNS, P_GREATER, P_LESS, P_MIN)
BOUNDARY_RATIO_TEST_COLUMNS = (*BOUNDARY_RATIO_COLUMNS, P_GREATER, P_LESS, P_MIN)
CROSSOVER_TEST_COLUMNS = (*CROSSOVER_COLUMNS, EARLY_STEP, P_EARLY, P_LATE, P_EARLY_AGAINST,
                          P_LATE_AGAINST, P_MIN, BOOT_SHARE_CROSSING, N_PERM)

# ---------------------------------------------------------------------------- spec.rules
#: Extra result column of a directional correlation with a declared bound: the TOST p.
P_EQUIVALENCE = "p_equivalence"

# ---------------------------------------------------------------------------- spec.kinds.agreement
#: Prefix of ``verdict_agreement``'s extra columns holding each compression's verdict code;
#: the target's effect, interval and p follow as ``effect_<tag>``, ``ci_low_<tag>``, ...
#: (``<tag>``: the compression with ':' as '_', e.g. ``fixed_64``).
AGREE_VERDICT = "verdict"
#: Extra column: pairs of compressions whose verdicts are opposite decisions.
N_OPPOSITE = "n_opposite"

# ---------------------------------------------------------------------------- spec.kinds.classification
#: Extra result columns of these kinds.
THRESHOLD_COSINE = "threshold_cosine"  # the classifier's t as a cosine
N_ZONE_BELOW, N_ZONE_BETWEEN, N_ZONE_ABOVE = "n_zone_below", "n_zone_between", "n_zone_above"
MEDIAN_TIME_GROUP0, MEDIAN_TIME_GROUP1 = "median_time_group0", "median_time_group1"
N_UNDEFINED_TIME = "n_undefined_time"  # heads without a time (final change <= 0, NaN)

# ---------------------------------------------------------------------------- spec.kinds.equivalence
#: Extra column, present (1) only when a per-head correlation was given without layer strata
#: (undecidable).
PER_HEAD_WITHOUT_STRATA = "per_head_without_strata"

# ---------------------------------------------------------------------------- spec.kinds.models
#: Extra result column of ``model_comparison``: AIC of the best other model minus the
#: predicted model's (positive when the predicted model is better); descriptive.
AIC_MARGIN = "aic_margin"
#: The largest, over the rival models, F-test p of the predicted model's predictors added
#: to the rival's (small when the predicted model explains more than every rival does).
P_PREDICTED_ADDS = "p_predicted_adds"
#: The smallest Bonferroni-adjusted F-test p of a rival's predictors added to the predicted
#: model's (small when some rival explains what the predicted model leaves).
P_RIVAL_ADDS = "p_rival_adds"
#: Number of rival models.
RIVAL = "n_rivals"
#: The predicted model's slope on its predictor and its 95 % t interval, when the model has
#: one predictor (NaN otherwise): the size of the dependence the predicted model describes.
PREDICTED_SLOPE = "predicted_slope"
PREDICTED_SLOPE_CI_LOW = "predicted_slope_ci_low"
PREDICTED_SLOPE_CI_HIGH = "predicted_slope_ci_high"

# ---------------------------------------------------------------------------- spec.kinds.pairwise
#: Result column of ``functional_boundary_shift``: heads labelled anchor in ``labels`` (NaN
#: when the spec selects no labels).
N_ANCHORS = "n_anchors"


class OneSidedPair(NamedTuple):
    """Two one-sided p-values of one test: toward the declared direction and against it."""

    toward: str
    against: str
    null: str  # what each null hypothesis is about


#: The one-sided p pairs, as the module docstring's table reads them.
ONE_SIDED_PAIRS: tuple[OneSidedPair, ...] = (
    OneSidedPair(P_GREATER, P_LESS, "the statistic larger / smaller than its null"),
    OneSidedPair(P_LOWER, P_UPPER, "the effect above -bound / below +bound (TOST)"),
    OneSidedPair(P_BELOW, P_ABOVE, "the ratio above the band's lower / below its upper reference"),
    OneSidedPair(P_VALUE, P_OPPOSITE, "the declared alternative / the other side"),
    OneSidedPair(P_EARLY, P_EARLY_AGAINST, "the early depth slope with / against its declared sign"),
    OneSidedPair(P_LATE, P_LATE_AGAINST, "the late depth slope with / against its declared sign"),
    OneSidedPair(P_ORDER, P_REVERSED, "the declared order holds / its most reversed pair"),
    OneSidedPair(P_PREDICTED_ADDS, P_RIVAL_ADDS, "the predicted model explains more / some rival does"),
)

#: Every name this module defines (the upper-case ones: columns, tuples of columns, verdicts).
__all__ = [name for name in list(globals()) if name.isupper() and not name.startswith("_")]
__all__ += ["OneSidedPair"]
