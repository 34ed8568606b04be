"""Derived pair forms of the metrics, in numpy: the functional Killing form of METRICS.md §8.

The cube variable ``killing_functional`` is computed from two other cube variables, the
Killing form ``killing`` and the activation metric ``value_norm``. Its definition lives here,
once, in plain numpy and without torch, so that the numeric layer (:mod:`lie_stats.stats`,
which must not import torch) computes exactly the numbers the extraction stores:
:mod:`lie_stats.extraction.activations` re-exports it, :func:`lie_stats.extraction.pipeline.extract_checkpoint`
stores it, and :func:`lie_stats.stats.pairwise.functional_boundary_shift` recomputes
it under permutations and resamples of the value norms.

This module imports only numpy and :mod:`lie_stats.errors`.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike

from .errors import MetricError

__all__ = ["functional_killing"]


def functional_killing(killing: ArrayLike, value_norm: ArrayLike, *,
                       skipna: bool = False) -> np.ndarray:
    """The functional Killing form of METRICS.md §8: ``Kf[i,j] = K[i,j] w_i w_j``.

    ``w_h = value_norm[h] / mean(value_norm of h's layer)``, the value norm of head ``h``
    over the mean of its layer's heads.

    Parameters
    ----------
    killing
        ``[..., head, head_j]``, e.g. the cube's ``(family, projection, layer, head,
        head_j)``. Cast to float64.
    value_norm
        ``[..., head]`` with leading axes that broadcast against ``killing``'s, e.g.
        ``(layer, head)``, or ``(draw, layer, head)`` for permuted norms. Cast to float64.
    skipna
        Take the layer mean over the heads that are not NaN (heads padded with NaN in a
        cube of models of different widths); by default a NaN norm makes its layer NaN.

    Returns
    -------
    numpy.ndarray
        float64, of the broadcast shape of ``killing`` and ``value_norm[..., :, None]``
        (``killing``'s shape when ``value_norm`` has no extra leading axes): the dims of
        ``killing_functional``.

    Raises
    ------
    MetricError
        ``killing`` does not end in two axes of one size, or ``value_norm`` does not end in
        an axis of that size.

    Examples
    --------
    >>> K = np.ones((1, 1, 2, 3, 3))                     # family, projection, layer, head, head_j
    >>> vn = np.array([[1., 1., 1.], [1., 2., 3.]])      # layer, head
    >>> functional_killing(K, vn)[0, 0, 1, :, 2]
    array([0.75, 1.5 , 2.25])
    >>> functional_killing(np.ones((2, 2)), [1.0, np.nan], skipna=True)
    array([[ 1., nan],
           [nan, nan]])
    >>> functional_killing(np.ones((2, 2)), [1.0, np.nan])
    array([[nan, nan],
           [nan, nan]])
    """
    K = np.asarray(killing, dtype=np.float64)
    v = np.asarray(value_norm, dtype=np.float64)
    if K.ndim < 2 or K.shape[-1] != K.shape[-2] or v.ndim < 1 or v.shape[-1] != K.shape[-1]:
        raise MetricError(
            f"functional_killing: killing {K.shape} must end in (head, head_j) and value_norm "
            f"{v.shape} in (head,) of the same size."
        )
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nanmean of an all-NaN layer: NaN
        w = v / (np.nanmean if skipna else np.mean)(v, axis=-1, keepdims=True)
    return K * w[..., :, None] * w[..., None, :]
