"""Statistics as functions of sums over topics: thousands of swaps or resamples in a few matrix products.

docs/mathematics.md §7 ("Cost"). The swap null (:mod:`pytest_bvtest.stats.calibration`) and the paired
bootstrap (:mod:`pytest_bvtest.stats.inference`) evaluate one statistic on thousands of draws of the same
topics. A draw either exchanges the candidate's and the reference's scores on some topics (a swap
``s``, 0/1 per topic) or takes each topic ``c_j`` times (a bootstrap resample). Neither moves a
topic's column aggregates (the virtual target, the min of max-min normalisation, the topic totals): a
swap exchanges two entries of a column, a resample copies whole columns. So a statistic that reads a
row only through sums over topics of per-topic quantities ``f_j`` (each computed from its topic's
column: ``x``, ``x**2``, the target, a risk-weighted delta) has, on a draw,

- swap ``s``: ``sum_j f_j + s @ (f'_j - f_j)``, ``f'`` the quantities with the two rows exchanged;
- resample ``c``: ``c @ f``,

and a block of draws is one matrix product of the draws with a few columns, followed by a scalar
function of the sums (:class:`LinearSums`). Mean, Bias², Var, Bias²+Var, the gap terms, URisk, TRisk,
RI, <Init, R-Loss, MVE and the simulation's statistics are such functions; their values equal the
statistic of each swapped or resampled matrix up to rounding (``tests/test_stats_sums.py``: 1e-12
against a per-draw loop). Sums of squares are taken about a centre that a swap does not move (the mean
of the two rows), so a variance is not a small difference of large sums.

ZRisk and GeoRisk (SIGIR 2016, against every other system) are not such sums: a topic counts as a
shortfall, weighted ``1 + alpha``, when ``x_j < k T_j`` with ``k = S / N`` the draw's own system total
over the grand total. With ``z_j = x_j / sqrt(k T_j) - sqrt(k T_j)``, ZRisk is
``(A + alpha A_in) / sqrt(k) - sqrt(k) (B + alpha B_in)`` with ``A = sum x_j / sqrt(T_j)``,
``B = sum sqrt(T_j)`` and ``A_in``, ``B_in`` the same sums over the shortfalls (:class:`ZRiskSums`).
Draws are sorted by ``k`` and taken in small groups: a topic below ``k T_j`` for the group's smallest
``k`` is a shortfall in all of them, one at or above it for the largest ``k`` in none, and only the few
topics between are compared draw by draw.

The judging leverage of the documents to judge (docs/mathematics.md §10) changes one topic's column at a time,
tens of thousands of times: :meth:`SumForm.replaced_columns` moves each sum by that column's change of its
per-topic quantities alone (the column's target and normalisation with it), instead of a statistic of each changed
matrix.

A form's evaluator returns NaN where the sums cannot decide a value to 1e-12 (TRisk's spread at
rounding level, where its PIN needs the exact deltas); the caller recomputes those draws exactly.
Settings a form does not cover (topic grouping; ZRisk against the target) give no evaluator, and the
caller evaluates stacks of swapped or resampled matrices instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
from scipy.special import ndtr

from pytest_bvtest.checks import checked_scores, finite_number
from pytest_bvtest.stats.biasvar import apply_normalization, per_topic_target
from pytest_bvtest.stats.meanvar import normalised_weights

if TYPE_CHECKING:
    from pytest_bvtest.spec.model import AnalysisSettings

Evaluator = Callable[[np.ndarray], np.ndarray]
"""``evaluate(draws)``: ``(B, n)`` float draws (0/1 swaps or counts) -> ``(B, len(rows))`` values, NaN undecided."""


@dataclass(frozen=True)
class ProductEvaluator:
    """An :data:`Evaluator` that reads the draws only through their product with ``columns`` (``(n, q)``): so a
    block of swaps shared with other readers is multiplied once with all their columns
    (:func:`pytest_bvtest.stats.swaps.read_swaps`), and ``from_products`` finishes this one's part."""

    columns: np.ndarray
    from_products: Callable[[np.ndarray], np.ndarray]

    def __call__(self, draws: np.ndarray) -> np.ndarray:
        return self.from_products(draws @ self.columns)


# A sample variance of the sums below this share of the centred sum of squares is too close to 0 for
# the sums to give it to 1e-12 relative (TRisk's zero-spread PIN reads it exactly): recomputed exactly.
_UNDECIDED_SPREAD = 1e-3

# Draws per group whose ZRisk shortfalls are decided together (sorted by k): a smaller group has fewer
# undecided topics, a larger one fewer passes over the topics.
_ZRISK_GROUP = 64


class SumForm(Protocol):
    """How a statistic is evaluated on many draws at once (a field of the catalogue's entries)."""

    def prepare(
        self,
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        exchange: tuple[int, int] | None,
    ) -> Evaluator | None:
        """An evaluator of the values of ``rows`` of ``matrix`` on draws, or ``None`` where the form does not apply.

        Parameters
        ----------
        matrix:
            The statistic's sufficient matrix (``(k, n)``).
        rows:
            Rows whose values the evaluator returns, in order.
        reference:
            Row of the reference, for a statistic measured against it (URisk, TRisk, ...).
        settings:
            How the statistic is computed.
        exchange:
            ``(candidate, reference)`` rows for swaps (a draw is a 0/1 row: 1 swaps the topic);
            ``None`` for resamples (a draw is a row of topic counts).
        """
        ...

    def replaced_columns(
        self,
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        topics: np.ndarray,
        columns: np.ndarray,
    ) -> np.ndarray | None:
        """How far the values of ``rows`` move when column ``topics[k]`` of ``matrix`` alone is replaced by
        ``columns[:, k]``, for each ``k`` (``(K, len(rows))``, NaN where undecided); ``None`` where the form does
        not apply (the judging leverage of documents, docs/mathematics.md §10)."""
        ...


Centre = np.ndarray | None
"""A form's centre: ``None`` asks the terms to choose it (the unswapped matrix), an array reuses it (swapped)."""

Terms = Callable[
    [np.ndarray, Sequence[int], "int | None", "AnalysisSettings", "np.ndarray | None"],
    "tuple[np.ndarray, np.ndarray] | None",
]
"""``terms(matrix, rows, reference, settings, centre)`` -> ``(per_topic (q, n), centre)`` or ``None``."""

Finish = Callable[[np.ndarray, np.ndarray, int, "AnalysisSettings"], np.ndarray]
"""``finish(sums (B, q), centre, topics, settings)`` -> values ``(B, len(rows))``, NaN where undecided."""


@dataclass(frozen=True)
class LinearSums:
    """A statistic that is a function of sums over topics of per-topic quantities.

    ``terms`` computes the quantities of every topic from its column alone, about a ``centre`` it
    chooses when given ``None`` (swap-invariant: the same for the matrix with the two rows exchanged)
    and reuses when given one; ``finish`` turns the sums over a draw into values.
    """

    terms: Terms
    finish: Finish

    def prepare(
        self,
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        exchange: tuple[int, int] | None,
    ) -> Evaluator | None:
        """See :meth:`SumForm.prepare`."""
        made = self.terms(matrix, rows, reference, settings, None)
        if made is None:
            return None
        per_topic, centre = made
        topics = matrix.shape[-1]
        if exchange is None:
            return ProductEvaluator(
                np.ascontiguousarray(per_topic.T), lambda sums: self.finish(sums, centre, topics, settings)
            )
        exchanged = matrix.copy()
        exchanged[list(exchange)] = matrix[list(exchange[::-1])]
        swapped = self.terms(exchanged, rows, reference, settings, centre)
        if swapped is None:
            return None
        return _swap_sums(per_topic, swapped[0], lambda sums: self.finish(sums, centre, topics, settings))

    def replaced_columns(
        self,
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        topics: np.ndarray,
        columns: np.ndarray,
    ) -> np.ndarray | None:
        """See :meth:`SumForm.replaced_columns`.

        A replaced column moves each sum by its quantities' change on that topic alone. The quantities of a column
        read that column only (the target, the normalisation), and the count of topics (MVE's weights): they are
        computed on whole matrices, in layers that replace each topic at most once, about the unreplaced matrix's
        centre. A replacement equal to the column moves no sum, and no value.
        """
        made = self.terms(matrix, rows, reference, settings, None)
        if made is None:
            return None
        per_topic, centre = made
        base = per_topic.sum(axis=1)
        count = matrix.shape[-1]
        today = self.finish(base[np.newaxis], centre, count, settings)
        moves = np.empty((len(topics), len(rows)))
        for layer in _layers(topics):
            replaced = matrix.copy()
            replaced[:, topics[layer]] = columns[:, layer]
            terms = self.terms(replaced, rows, reference, settings, centre)
            if terms is None:
                return None
            change = terms[0][:, topics[layer]] - per_topic[:, topics[layer]]
            moves[layer] = self.finish(base + change.T, centre, count, settings) - today
        return moves


def _layers(topics: np.ndarray) -> list[np.ndarray]:
    """The positions of ``topics`` split so that no layer holds a topic twice: the first of each topic, the second,
    and so on."""
    order = np.argsort(topics, kind="stable")
    ordered = topics[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    occurrence = np.arange(len(topics)) - np.repeat(starts, np.diff(np.r_[starts, len(topics)]))
    return [order[occurrence == layer] for layer in range(int(occurrence.max(initial=-1)) + 1)]


def _swap_sums(
    per_topic: np.ndarray, swapped: np.ndarray, finish: Callable[[np.ndarray], np.ndarray]
) -> ProductEvaluator:
    """The evaluator of swaps: the unswapped sums plus the swaps times each quantity's change.

    A swap moves a sum only on the topics it swaps. A quantity that no swap changes (the target's) needs no
    product, and one that changes as exactly the negative of another (the reference's ``x`` against the
    candidate's: ``fl(a - b) = -fl(b - a)``) reuses that one's.
    """
    base = per_topic.sum(axis=1)
    change = swapped - per_topic
    distinct: list[int] = []
    plan: list[tuple[int, float]] = []  # per quantity: (column of the products, sign), or (-1, 0) unchanged
    for row in change:
        if not row.any():
            plan.append((-1, 0.0))
            continue
        for column, kept in enumerate(distinct):
            if np.array_equal(row, change[kept]):
                plan.append((column, 1.0))
                break
            if np.array_equal(row, -change[kept]):
                plan.append((column, -1.0))
                break
        else:
            plan.append((len(distinct), 1.0))
            distinct.append(len(plan) - 1)

    def from_products(products: np.ndarray) -> np.ndarray:
        sums = np.empty((len(products), len(plan)))
        sums[:] = base
        for quantity, (column, sign) in enumerate(plan):
            if column >= 0:
                sums[:, quantity] += sign * products[:, column]
        return finish(sums)

    return ProductEvaluator(np.ascontiguousarray(change[distinct].T), from_products)


# --- the mean, and statistics that are means of a per-topic term ---------------------------------------


def _rows_terms(
    matrix: np.ndarray,
    rows: Sequence[int],
    reference: int | None,
    settings: AnalysisSettings,
    centre: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    return matrix[list(rows)], np.zeros(0)


def _mean_finish(sums: np.ndarray, centre: np.ndarray, topics: int, settings: AnalysisSettings) -> np.ndarray:
    return sums / topics


MEAN = LinearSums(_rows_terms, _mean_finish)
"""The mean over topics (and the simulation's per-topic terms, averaged the same way)."""


# --- the bias-variance family (docs/mathematics.md §3, §3a, §3c) ----------------------------------------


def _normalized_rows(
    matrix: np.ndarray, rows: Sequence[int], settings: AnalysisSettings
) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows and the per-topic target after the settings' per-topic normalisation; ``None`` with grouping.

    Normalisation, the target and ``c`` read each topic's column alone (§3c): a draw moves them with the
    topics. Grouping mixes topics within a group, which sums over single topics cannot express.
    """
    if settings.grouping is not None:
        return None
    # without grouping the group target-ratio is the per-topic ratio (groups of one topic)
    method = "target-ratio" if settings.normalize == "group-target-ratio" else settings.normalize
    normalized = apply_normalization(matrix, method, settings.target_row).scores
    return normalized[list(rows)], per_topic_target(normalized, settings.target_row)


def _bias_variance_terms(
    matrix: np.ndarray,
    rows: Sequence[int],
    reference: int | None,
    settings: AnalysisSettings,
    centre: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per row ``x - mu`` and ``(x - mu)**2``, then ``x_T - mu``; ``mu`` the rows' mean (a swap keeps it)."""
    normalized = _normalized_rows(matrix, rows, settings)
    if normalized is None or (settings.variance == "sample" and matrix.shape[-1] < 2):
        return None
    x, target = normalized
    centre = np.array([x.mean()]) if centre is None else centre
    centred = x - centre[0]
    return np.vstack([centred, centred**2, (target - centre[0])[np.newaxis]]), centre


def _gap_terms(
    matrix: np.ndarray,
    rows: Sequence[int],
    reference: int | None,
    settings: AnalysisSettings,
    centre: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per row the gap ``rho = x_T - x`` about its rows' mean, and its square."""
    normalized = _normalized_rows(matrix, rows, settings)
    if normalized is None or (settings.variance == "sample" and matrix.shape[-1] < 2):
        return None
    x, target = normalized
    gap = target - x
    centre = np.array([gap.mean()]) if centre is None else centre
    centred = gap - centre[0]
    return np.vstack([centred, centred**2]), centre


def _spread(
    first: np.ndarray, second: np.ndarray, weight: float | np.ndarray, settings: AnalysisSettings
) -> np.ndarray:
    """The (population or sample) variance from the sums of centred values and of their squares."""
    mean = first / weight
    variance = second / weight - mean**2
    if settings.variance == "sample":
        variance = variance * (weight / (weight - 1.0))
    return variance


def _bias_variance_finish(term: str) -> Finish:
    """Bias², Var or Bias²+Var (§3: ``(mean - c)**2``, the variance, their sum) from the sums of
    :func:`_bias_variance_terms`; ``c`` the mean of the target or the settings' number."""

    def finish(sums: np.ndarray, centre: np.ndarray, topics: int, settings: AnalysisSettings) -> np.ndarray:
        rows = (sums.shape[1] - 1) // 2
        first, second, target = sums[:, :rows], sums[:, rows : 2 * rows], sums[:, -1:]
        if isinstance(settings.target, str):
            shortfall = (first - target) / topics  # mean - c, the centre cancelling
        else:
            shortfall = centre[0] + first / topics - float(settings.target)
        bias2 = shortfall**2
        if term == "bias2":
            return bias2
        variance = _spread(first, second, topics, settings)
        return variance if term == "var" else bias2 + variance

    return finish


def _gap_finish(term: str) -> Finish:
    """Bias(rho), Var(rho) or Bias(rho)²+Var(rho) (§3a) from the sums of :func:`_gap_terms`."""

    def finish(sums: np.ndarray, centre: np.ndarray, topics: int, settings: AnalysisSettings) -> np.ndarray:
        rows = sums.shape[1] // 2
        first, second = sums[:, :rows], sums[:, rows:]
        bias = centre[0] + first / topics
        if term == "bias":
            return bias
        variance = _spread(first, second, topics, settings)
        return variance if term == "var" else bias**2 + variance

    return finish


def bias_variance_sums(term: str) -> LinearSums:
    """The sum form of ``bias2``, ``var`` or ``error`` (Bias²+Var)."""
    return LinearSums(_bias_variance_terms, _bias_variance_finish(term))


def gap_sums(term: str) -> LinearSums:
    """The sum form of the gap's ``bias``, ``var`` or ``mse``."""
    return LinearSums(_gap_terms, _gap_finish(term))


# --- risk against the reference (docs/mathematics.md §4) ------------------------------------------------


def _against_reference(
    per_topic: Callable[[np.ndarray, AnalysisSettings], np.ndarray],
) -> Terms:
    """Per-topic terms of each row against the reference's row (the reference's own are all 0)."""

    def terms(
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        centre: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        if reference is None:
            return None
        return per_topic(matrix[list(rows)] - matrix[reference], settings), np.zeros(0)

    return terms


def _risk_weighted(difference: np.ndarray, settings: AnalysisSettings) -> np.ndarray:
    alpha = finite_number(settings.risk_alpha, "risk weight alpha", minimum=0)
    return np.where(difference < 0, (1.0 + alpha) * difference, difference)


URISK = LinearSums(_against_reference(_risk_weighted), _mean_finish)
"""URisk: the mean of the risk-weighted deltas (Wang et al., SIGIR 2012)."""

ROBUSTNESS_INDEX = LinearSums(_against_reference(lambda difference, settings: np.sign(difference)), _mean_finish)
"""RI: the mean sign of the difference (Sakai et al., TALIP 2005)."""

HURT_TOPICS = LinearSums(
    _against_reference(lambda difference, settings: (difference < 0).astype(np.float64)),
    lambda sums, centre, topics, settings: sums,
)
"""<Init: the count of topics below the reference (Zhang et al., SIGIR 2013)."""

ROBUSTNESS_LOSS = LinearSums(
    _against_reference(lambda difference, settings: np.maximum(-difference, 0.0)), _mean_finish
)
"""R-Loss: the mean loss on hurt topics (Collins-Thompson, CIKM 2009)."""


def _trisk_terms(
    matrix: np.ndarray,
    rows: Sequence[int],
    reference: int | None,
    settings: AnalysisSettings,
    centre: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per row the risk-weighted deltas about a centre and their squares; ``None`` below 2 topics (an error).

    Each row's centre is the mean of its deltas with each topic swapped and not (``-alpha |d_j| / 2``),
    which a swap keeps; the reference's own deltas, and its centre, are exactly 0.
    """
    if reference is None or matrix.shape[-1] < 2:
        return None
    difference = matrix[list(rows)] - matrix[reference]
    deltas = _risk_weighted(difference, settings)
    if centre is None:
        centre = (deltas + _risk_weighted(-difference, settings)).mean(axis=1) / 2.0
    centred = deltas - centre[:, np.newaxis]
    return np.vstack([centred, centred**2]), centre


def _trisk_finish(sums: np.ndarray, centre: np.ndarray, topics: int, settings: AnalysisSettings) -> np.ndarray:
    """TRisk (Dinçer et al., SIGIR 2014): URisk over its standard error; NaN where the spread is at rounding level.

    A row whose deltas are all 0 (the reference against itself) is exactly 0, as the PIN says.
    """
    rows = sums.shape[1] // 2
    first, second = sums[:, :rows], sums[:, rows:]
    mean = centre + first / topics
    variance = (second - first**2 / topics) / (topics - 1)
    decided = variance > _UNDECIDED_SPREAD * second / (topics - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(variance / topics)
    zero = (first == 0) & (second == 0) & (centre == 0)
    return np.where(zero, 0.0, np.where(decided, t, np.nan))


TRISK = LinearSums(_trisk_terms, _trisk_finish)
"""TRisk from the sums of the deltas and of their squares."""


# --- mean-variance (docs/mathematics.md §5) --------------------------------------------------------------


def _mve_terms(
    matrix: np.ndarray,
    rows: Sequence[int],
    reference: int | None,
    settings: AnalysisSettings,
    centre: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The topic weights ``w``, ``w**2``, then per row ``w (x - mu)`` and ``w (x - mu)**2``."""
    weights = normalised_weights(settings.topic_weights, matrix.shape[-1], "topic weights")
    x = matrix[list(rows)]
    centre = np.array([x.mean()]) if centre is None else centre
    centred = x - centre[0]
    return np.vstack([weights, weights**2, weights * centred, weights * centred**2]), centre


def _mve_finish(sums: np.ndarray, centre: np.ndarray, topics: int, settings: AnalysisSettings) -> np.ndarray:
    """``mu - alpha sigma2`` with the draw's weights renormalised (Zuccon et al., CIKM 2016, Sec. 4.3);
    the sample variance divides by ``1 - sum w**2`` of those weights, NaN (an error, recomputed) where it is 0."""
    weight, square_weight = sums[:, :1], sums[:, 1:2]
    rows = (sums.shape[1] - 2) // 2
    first, second = sums[:, 2 : 2 + rows], sums[:, 2 + rows :]
    mean = first / weight
    variance = second / weight - mean**2
    if settings.variance == "sample":
        effective = 1.0 - square_weight / weight**2
        variance = variance / np.where(effective > 1e-12, effective, np.nan)
    return centre[0] + mean - settings.mve.alpha * variance


MVE = LinearSums(_mve_terms, _mve_finish)
"""MVE's inter-topic value from weighted sums."""


# --- ZRisk and GeoRisk against every other system (docs/mathematics.md §4) -----------------------------


@dataclass(frozen=True)
class ZRiskSums:
    """ZRisk (or GeoRisk) of rows of a sufficient matrix whose columns hold every system's topic totals.

    Dinçer, Macdonald & Ounis, SIGIR 2016, as :func:`pytest_bvtest.stats.risk.zrisk_georisk`, evaluated
    from the draw's totals (module docstring). ``None`` against the virtual target alone.
    """

    georisk: bool

    def prepare(
        self,
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        exchange: tuple[int, int] | None,
    ) -> Evaluator | None:
        """See :meth:`SumForm.prepare`."""
        if settings.zrisk_against != "systems":
            return None
        alpha = finite_number(settings.risk_alpha, "risk weight alpha", minimum=0)
        x = checked_scores(matrix, min_ndim=2, non_negative_for="ZRisk/GeoRisk")
        totals = x.sum(axis=0)
        grand_total = float(x.sum())
        root = np.sqrt(totals)
        inverse_root = np.divide(1.0, root, out=np.zeros_like(root), where=totals > 0)
        topics = x.shape[1]
        partner = {} if exchange is None else {exchange[0]: exchange[1], exchange[1]: exchange[0]}
        versions = [(x[row], x[partner[row]] if row in partner else None) for row in rows]

        def evaluate(draws: np.ndarray) -> np.ndarray:
            values = np.empty((len(draws), len(rows)))
            if exchange is None:
                grand = draws @ totals
                roots = draws @ root
            else:
                grand = np.full(len(draws), grand_total)
                roots = np.full(len(draws), root.sum())
            for position, (own, other) in enumerate(versions):
                system_total, spread = _drawn_sums(
                    draws,
                    np.stack([own, own * inverse_root], axis=1),
                    None if other is None else np.stack([other, other * inverse_root], axis=1),
                ).T
                k = np.divide(system_total, grand, out=np.zeros_like(system_total), where=grand > 0)
                short_spread, short_roots = _shortfall_sums(draws, k, own, other, totals, root, inverse_root)
                with np.errstate(divide="ignore", invalid="ignore"):
                    zrisk = (spread + alpha * short_spread) / np.sqrt(k) - np.sqrt(k) * (roots + alpha * short_roots)
                zrisk = np.where(k > 0, zrisk, 0.0)
                values[:, position] = np.sqrt(system_total / topics * ndtr(zrisk / topics)) if self.georisk else zrisk
            return values

        return evaluate

    def replaced_columns(
        self,
        matrix: np.ndarray,
        rows: Sequence[int],
        reference: int | None,
        settings: AnalysisSettings,
        topics: np.ndarray,
        columns: np.ndarray,
    ) -> np.ndarray | None:
        """See :meth:`SumForm.replaced_columns`: ``None``, a column moves ``k`` and so every topic's shortfall."""
        return None


def _drawn_sums(draws: np.ndarray, own: np.ndarray, other: np.ndarray | None) -> np.ndarray:
    """``sum_j w_j f_j`` of each draw (``f``: ``(n,)`` or ``(n, q)``): counts times ``own``; or ``own`` where not
    swapped and ``other`` where swapped."""
    if other is None:
        return draws @ own
    return own.sum(axis=0) + draws @ (other - own)


def _shortfall_sums(
    draws: np.ndarray,
    k: np.ndarray,
    own: np.ndarray,
    other: np.ndarray | None,
    totals: np.ndarray,
    root: np.ndarray,
    inverse_root: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per draw, ``sum x_j / sqrt(T_j)`` and ``sum sqrt(T_j)`` over the topics where ``x_j < k T_j`` (a shortfall).

    Draws are taken in groups of close ``k`` (sorted); within a group a topic below the smallest ``k``'s
    threshold is a shortfall in every draw and one at or above the largest ``k``'s in none (``fl(k T)``
    grows with ``k``), so they count through one matrix product, and only the topics between are compared
    draw by draw.
    """
    short_spread = np.empty(len(draws))
    short_roots = np.empty(len(draws))
    positive = totals > 0
    order = np.argsort(k, kind="stable")
    choices = [(own, False)] if other is None else [(own, True), (other, False)]
    for first in range(0, len(order), _ZRISK_GROUP):
        group = order[first : first + _ZRISK_GROUP]
        weights = draws[group]
        low, high = k[group[0]], k[group[-1]]
        spread = np.zeros(len(group))
        roots = np.zeros(len(group))
        for values, unswapped in choices:
            # the weight of this version: counts, the swaps (the other row's values), or 1 - swaps (own values)
            always = positive & (values < low * totals)
            undecided = np.flatnonzero(positive & (values < high * totals) & ~always)
            columns = np.stack([values * inverse_root * always, root * always], axis=1)
            products = weights @ columns
            if unswapped:
                products = columns.sum(axis=0) - products
            spread += products[:, 0]
            roots += products[:, 1]
            if undecided.size:
                chosen = weights[:, undecided]
                if unswapped:
                    chosen = 1.0 - chosen
                chosen = chosen * (values[undecided] < k[group, np.newaxis] * totals[undecided])
                spread += chosen @ (values[undecided] * inverse_root[undecided])
                roots += chosen @ root[undecided]
        short_spread[group] = spread
        short_roots[group] = roots
    return short_spread, short_roots


ZRISK = ZRiskSums(georisk=False)
GEORISK = ZRiskSums(georisk=True)
