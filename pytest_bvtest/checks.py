"""Argument checks shared by the statistics: one helper, and so one message, per kind of mistake.

Every check raises :class:`~pytest_bvtest.errors.StatisticError` naming the argument and the value it
got, and returns the value in the type the statistics compute with.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from pytest_bvtest.errors import StatisticError


def checked_scores(values: ArrayLike, *, min_ndim: int = 1, non_negative_for: str | None = None) -> np.ndarray:
    """``values`` as a float64 array after the checks every statistic needs.

    Parameters
    ----------
    values:
        Scores, topics on the last axis.
    min_ndim:
        Fewest axes required (2 for a systems x topics matrix).
    non_negative_for:
        Name of a statistic that is only defined for non-negative scores; when given, a negative
        value raises.

    Returns
    -------
    numpy.ndarray
        The scores as float64.

    Raises
    ------
    StatisticError
        Too few axes, an empty axis, a NaN or infinite value, or a forbidden negative value.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim < min_ndim:
        shape = "a systems x topics matrix" if min_ndim == 2 else "per-topic scores"
        raise StatisticError(f"expected {shape}, got an array of shape {array.shape}")
    if 0 in array.shape:
        raise StatisticError(f"no scores to evaluate (array of shape {array.shape}: no systems or no topics)")
    if not np.isfinite(array).all():
        raise StatisticError("scores contain NaN or infinite values; every system needs a finite score on every topic")
    if non_negative_for is not None and (array < 0).any():
        raise StatisticError(
            f"negative scores (minimum {array.min():g}): {non_negative_for} is only defined for non-negative "
            "effectiveness scores; use a measure such as AP or nDCG, not a log or standardised score"
        )
    return array


def whole_number(value: object, name: str, minimum: int = 1) -> int:
    """``value`` as an ``int`` if it is a whole number (not a bool) >= ``minimum``.

    The message says "a positive whole number" for ``minimum=1`` and "a whole number >= minimum"
    otherwise; seeds use ``minimum=0`` (``numpy.random.default_rng`` accepts any of them).
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive whole number" if minimum == 1 else f"a whole number >= {minimum}"
        raise StatisticError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def checked_seed(seed: object) -> int:
    """``seed`` if it is a whole number >= 0 (``numpy.random.default_rng`` accepts it)."""
    return whole_number(seed, "seed", minimum=0)


def _real(value: object) -> float | None:
    """``value`` as a ``float`` if it is a real number other than a bool, else ``None``."""
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None


def finite_number(value: object, name: str, minimum: float | None = None) -> float:
    """``value`` as a ``float`` if it is a finite real number (not a bool), and >= ``minimum`` when given."""
    number = _real(value)
    if number is None or not math.isfinite(number) or (minimum is not None and number < minimum):
        bound = "" if minimum is None else f" >= {minimum:g}"
        raise StatisticError(f"{name} must be a finite number{bound}, got {value!r}")
    return number


def positive_number(value: object, name: str) -> float:
    """``value`` as a ``float`` if it is a finite real number > 0 (a tolerance)."""
    number = _real(value)
    if number is None or not math.isfinite(number) or number <= 0:
        raise StatisticError(f"{name} must be a positive number, got {value!r}")
    return number


def open_interval(value: object, name: str, low: float, high: float) -> float:
    """``value`` as a ``float`` if ``low < value < high`` (a confidence, a false-alarm rate)."""
    number = _real(value)
    if number is None or not low < number < high:
        raise StatisticError(f"{name} must lie strictly between {low:g} and {high:g}, got {value!r}")
    return number
