"""The project's data vocabulary: every dimension and variable name of a cube.

No other module spells these names as string literals; they import them from here. The
names of results (columns, p-values, verdicts, gates) live in :mod:`lie_stats.columns`.
This module imports nothing of lie_stats but :mod:`errors`.

The variable table below is the contract between the metric engine (``metrics.py``),
the cube (``cube.py``) and the hypothesis modules: a variable's ``dims`` are the
dimensions it has *within one checkpoint*; in a cube every variable is prefixed by
``(model, step)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import MetricError, did_you_mean

__all__ = [
    "METRICS_VERSION",
    "MODEL", "STEP", "FAMILY", "PROJECTION", "LAYER", "HEAD", "HEAD_J", "MATRIX",
    "CATEGORY", "PARAM_CATEGORIES",
    "CUBE_DIMS", "MODEL_COORDS", "FAMILIES", "MATRICES", "GRAM_FAMILIES", "CIRCUIT_FAMILIES",
    "PROJECTION_NONE", "PROJECTION_ADAPTIVE", "parse_projection", "format_projection",
    "VariableInfo", "VARIABLES", "variable_info",
    "LABEL_CODES", "LABEL_VARIABLES", "ATTR_PROVENANCE", "ATTR_METRICS_VERSION", "ATTR_LIB_VERSION",
    "ATTR_CREATED", "ATTR_CONVENTIONS", "ATTR_FAILED",
]

#: Version of METRICS.md's definitions the code implements (bumped on any change there).
#: 1: §1-§8; 2: adds §9 (``written_norm``, ``head_label_written``), no earlier definition changed.
METRICS_VERSION = 2

# ---------------------------------------------------------------------------- dimensions
MODEL = "model"
STEP = "step"
FAMILY = "family"
PROJECTION = "projection"
LAYER = "layer"
HEAD = "head"
HEAD_J = "head_j"
#: One of the four canonical matrices Q, K, V, O (METRICS.md §5.2).
MATRIX = "matrix"

#: Parameter category of the parameter-delta map (METRICS.md §6.4); see PARAM_CATEGORIES.
CATEGORY = "category"

CUBE_DIMS = (MODEL, STEP, FAMILY, PROJECTION, MATRIX, LAYER, HEAD, HEAD_J, CATEGORY)

#: Coordinates along ``model`` (DESIGN.md, cube).
MODEL_COORDS = (
    "n_layers", "n_heads", "n_kv_heads", "d_head", "d_model",
    "architecture", "rotary_fraction", "attention_extras", "init_step",
)

#: Operator families of METRICS.md §2, in canonical order.
FAMILIES = ("Q", "K", "V", "O", "QK", "OV")
GRAM_FAMILIES = ("Q", "K", "V", "O")
CIRCUIT_FAMILIES = ("QK", "OV")
MATRICES = ("Q", "K", "V", "O")

# ---------------------------------------------------------------------------- projections
PROJECTION_NONE = "none"
PROJECTION_ADAPTIVE = "adaptive"
_FIXED = "fixed:"


def parse_projection(text: str) -> tuple[str, int | None]:
    """Parse a projection label of METRICS.md §2 (compression).

    Returns ``(kind, k)`` with kind ``"none"``, ``"adaptive"`` or ``"fixed"``; ``k`` is the
    size for ``fixed:K`` and None otherwise.

    Examples
    --------
    >>> parse_projection("fixed:64")
    ('fixed', 64)
    >>> parse_projection("none")
    ('none', None)
    """
    if text in (PROJECTION_NONE, PROJECTION_ADAPTIVE):
        return text, None
    if text.startswith(_FIXED):
        try:
            k = int(text[len(_FIXED):])
        except ValueError:
            k = 0
        if k > 0:
            return "fixed", k
    raise ValueError(
        f"Unknown projection {text!r}: expected 'none', 'adaptive' or 'fixed:K' with K a "
        f"positive integer (METRICS.md §2)."
    )


def format_projection(kind: str, k: int | None = None) -> str:
    """Inverse of :func:`parse_projection`.

    >>> format_projection("fixed", 32)
    'fixed:32'
    """
    if kind == "fixed":
        return f"{_FIXED}{int(k)}"
    parse_projection(kind)
    return kind


# ---------------------------------------------------------------------------- variables
@dataclass(frozen=True)
class VariableInfo:
    """Metadata of one cube variable; becomes the NetCDF variable's attributes."""

    name: str
    dims: tuple[str, ...]
    units: str
    long_name: str
    definition: str  # METRICS.md section, e.g. "METRICS.md §3.2"
    kind: str = "weight"  # "weight" (from weights), "trajectory", "activation", "delta" (§6.4)


_PAIR = (FAMILY, PROJECTION, LAYER, HEAD, HEAD_J)
_LAYER = (FAMILY, PROJECTION, LAYER)
_FHEAD = (FAMILY, PROJECTION, LAYER, HEAD)
_HEAD = (LAYER, HEAD)

_VARS = [
    # §3 pairwise
    VariableInfo("commutator_raw", _PAIR, "1", "Frobenius norm of the commutator [A_i, A_j]", "METRICS.md §3.1"),
    VariableInfo("commutator", _PAIR, "1", "normalized commutator c[i,j]", "METRICS.md §3.2"),
    VariableInfo("commutator_null_mean", _PAIR, "1", "mean of c[i,j] under the random-orientation null", "METRICS.md §3.3"),
    VariableInfo("commutator_null_std", _PAIR, "1", "standard deviation of c[i,j] under the random-orientation null", "METRICS.md §3.3"),
    VariableInfo("commutator_z", _PAIR, "1", "null-calibrated commutator", "METRICS.md §3.3"),
    VariableInfo("killing", _PAIR, "1", "Killing form of gl(k) on head pairs", "METRICS.md §3.4"),
    VariableInfo("killing_norm", _PAIR, "1", "normalized Killing form Khat", "METRICS.md §3.4"),
    # §4 layer summaries
    VariableInfo("commutator_var", _LAYER, "1", "population variance of c over pairs i<j", "METRICS.md §4.1"),
    VariableInfo("commutator_raw_var", _LAYER, "1", "population variance of C over pairs i<j", "METRICS.md §4.1"),
    VariableInfo("abelian_fraction", _LAYER, "1", "fraction of pairs below the alpha quantile of their null", "METRICS.md §4.2"),
    VariableInfo("abelian_fraction_tau", _LAYER, "1", "fraction of pairs with c < tau", "METRICS.md §4.2"),
    VariableInfo("killing_eig_spread", _LAYER, "1", "(max - min eigenvalue) / mean |eigenvalue| of Khat", "METRICS.md §4.3"),
    VariableInfo("killing_cv", _LAYER, "1", "std / mean |.| of Khat over pairs i<j", "METRICS.md §4.4"),
    VariableInfo("head_heterogeneity", _LAYER, "1", "coefficient of variation over heads of commutator_mean", "METRICS.md §4.5"),
    VariableInfo("commutator_z_mean", _LAYER, "1", "mean of commutator_z over pairs", "METRICS.md §4.6"),
    # §5 per head
    VariableInfo("commutator_mean", _FHEAD, "1", "mean of c[h,j] over j != h", "METRICS.md §5.1"),
    VariableInfo("commutator_z_mean_head", _FHEAD, "1", "mean of commutator_z[h,j] over j != h", "METRICS.md §5.1"),
    VariableInfo("killing_self", _FHEAD, "1", "K[h,h]", "METRICS.md §5.1"),
    VariableInfo("weight_norm", (MATRIX, LAYER, HEAD), "1", "Frobenius norm of W_X[h]", "METRICS.md §5.2"),
    VariableInfo("ov_norm", _HEAD, "1", "Frobenius norm of W_V[h] W_O[h]", "METRICS.md §5.3"),
    VariableInfo("head_contribution", _HEAD, "1", "ov_norm over the sum of ov_norm in the layer", "METRICS.md §5.4"),
    VariableInfo("change_from_init", _HEAD, "1", "relative Frobenius change of the head's weights since the first checkpoint", "METRICS.md §5.5", "trajectory"),
    # §7-§8 activations
    VariableInfo("sink_score", _HEAD, "1", "mean attention weight on position 0", "METRICS.md §7.1", "activation"),
    VariableInfo("sink_argmax_fraction", _HEAD, "1", "fraction of queries whose largest attention weight is on position 0", "METRICS.md §7.2", "activation"),
    VariableInfo("value_norm", _HEAD, "1", "mean norm of the head's write x W_V W_O", "METRICS.md §7.3", "activation"),
    VariableInfo("sink_value_ratio", _HEAD, "1", "norm of v_0 over the mean norm of v_t, t >= 1", "METRICS.md §7.4", "activation"),
    VariableInfo("grad_alignment", _HEAD, "1", "cosine between the layer-summary gradient and the LM-loss gradient", "METRICS.md §7.5", "activation"),
    VariableInfo("head_label", _HEAD, "1", "anchor / worker / mixed label (flag values)", "METRICS.md §8", "activation"),
    VariableInfo("killing_functional", _PAIR, "1", "Killing form weighted by normalized value norms", "METRICS.md §8", "activation"),
    # §9 what a head writes after attention, and the label on it
    VariableInfo("written_norm", _HEAD, "1", "mean norm of the head's attention output sum_s a[t,s] x_s W_V W_O", "METRICS.md §9.1", "activation"),
    VariableInfo("head_label_written", _HEAD, "1", "anchor / worker / mixed label on written_norm (flag values)", "METRICS.md §9.2", "activation"),
    # §6.4 parameter-delta map (against the run's first checkpoint; built by lie_stats.extraction.delta,
    # not by the per-head metric engine: kind "delta")
    VariableInfo("param_delta", (CATEGORY,), "1", "relative Frobenius change of a parameter category since the first checkpoint", "METRICS.md §6.4", "delta"),
    VariableInfo("param_delta_layer", (CATEGORY, LAYER), "1", "relative Frobenius change of a parameter category in one layer since the first checkpoint", "METRICS.md §6.4", "delta"),
    VariableInfo("param_base_norm_layer", (CATEGORY, LAYER), "1", "Frobenius norm of a parameter category in one layer at the first checkpoint", "METRICS.md §6.4", "delta"),
]

#: Parameter categories of the parameter-delta map (METRICS.md §6.4), in canonical order;
#: tensor names -> category live in lie_stats.extraction.architectures (param_category). Biases belong
#: to their layer's category; "other" holds any tensor no adapter pattern claims.
PARAM_CATEGORIES = (
    "embedding", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_in", "mlp_out",
    "norm_attn", "norm_mlp", "norm_embedding", "norm_final", "unembedding", "other",
)

VARIABLES: dict[str, VariableInfo] = {}
for _v in _VARS:
    if _v.name in VARIABLES:  # pragma: no cover - guarded by a test
        raise MetricError(f"Duplicate variable {_v.name!r} in lie_stats.schema")
    VARIABLES[_v.name] = _v
del _v


def variable_info(name: str) -> VariableInfo:
    """Look up a variable, suggesting the closest name on a typo.

    >>> variable_info("commutator").definition
    'METRICS.md §3.2'
    """
    try:
        return VARIABLES[name]
    except KeyError:
        raise MetricError(
            f"No variable named {name!r}.{did_you_mean(name, VARIABLES)} "
            f"Known variables: {', '.join(sorted(VARIABLES))}."
        ) from None


#: §8 label codes (stored as integers with CF flag_values / flag_meanings).
LABEL_CODES = {"mixed": 0, "anchor": 1, "worker": 2}

#: Variables that hold LABEL_CODES: §8's label and §9.2's on written_norm.
LABEL_VARIABLES = ("head_label", "head_label_written")

# ---------------------------------------------------------------------------- global attrs
ATTR_METRICS_VERSION = "metrics_version"
ATTR_LIB_VERSION = "lie_stats_version"
ATTR_CREATED = "created"
ATTR_CONVENTIONS = "Conventions"
ATTR_PROVENANCE = "provenance"  # JSON string: list of per-checkpoint dicts
ATTR_FAILED = "failed_checkpoints"  # JSON string: list of {source, revision, error}
