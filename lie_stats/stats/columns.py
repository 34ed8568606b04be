"""Result-column names of the statistics families, beyond :data:`lie_stats.schema.STAT_COLUMNS`.

Every statistical function returns a one-row (``compare_models``, ``mixed_model``: one row
per model / coefficient) DataFrame whose first columns are ``STAT_COLUMNS`` followed by the
family-specific columns named here, in this order. Code that reads a result imports the
names from here; nothing spells them as string literals.
"""

from __future__ import annotations

from lie_stats.schema import STAT_COLUMNS

__all__ = [
    "N_PERM", "EXACT", "N_STRATA", "NULL_CENTER", "N_COVARIATES",
    "HEDGES_G", "RAW_DIFFERENCE", "RANK_BISERIAL", "N_GROUP0", "N_GROUP1",
    "BOUND", "DF", "T_LOWER", "T_UPPER", "P_LOWER", "P_UPPER",
    "P_ORIGINAL_DIRECTION", "Z_DIFFERENCE", "P_DIFFERENCE", "R33", "P_SMALL_TELESCOPES",
    "BF_REPLICATION", "ORIGINAL_R", "ORIGINAL_N",
    "MEAN_FIRST", "MEAN_LAST", "PAIRED",
    "FRACTION_OF_TRAINING", "N_CROSSINGS", "BOOT_FRACTION_NO_CROSSING", "FIRST_SLOPE", "LAST_SLOPE",
    "N_STEPS", "N_LAYERS", "MEAN_BOUNDARY", "MEAN_INTERIOR",
    "AIC", "BIC", "DELTA_AIC", "ADJ_R2", "N_PARAMS", "NESTED_IN",
    "STD_ERR", "N_GROUPS", "CONVERGED", "BOUNDARY", "GROUP_VARIANCE", "RESIDUAL_VARIANCE",
    "CORRELATION_COLUMNS", "PARTIAL_CORRELATION_COLUMNS", "GROUP_DIFFERENCE_COLUMNS",
    "TOST_RELATIVE_COLUMNS", "TOST_CORRELATION_COLUMNS", "REPLICATION_COLUMNS",
    "TREND_COLUMNS", "ENRICHMENT_COLUMNS", "CROSSOVER_COLUMNS", "BOUNDARY_RATIO_COLUMNS",
    "COMPARE_MODELS_COLUMNS", "MIXED_MODEL_COLUMNS",
]

# resampling bookkeeping
N_PERM = "n_perm"  # resamples in the permutation null (all non-identity ones when exact)
EXACT = "exact"  # 1 when the null was enumerated exactly, 0 when Monte Carlo
N_STRATA = "n_strata"  # strata (layers) the permutation respected; 1 for free permutation
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
DF = "df"
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

#: The common columns, unpacked (``n``, ``statistic``, ``p_value``, ``effect``, ``ci_low``, ``ci_high``).
N, STATISTIC, P_VALUE, EFFECT, CI_LOW, CI_HIGH = STAT_COLUMNS
__all__ += ["N", "STATISTIC", "P_VALUE", "EFFECT", "CI_LOW", "CI_HIGH"]
