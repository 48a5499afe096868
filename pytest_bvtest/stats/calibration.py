"""Calibrated gate limits: the null of "no change" built by swapping topics (docs/mathematics.md §7).

Swap the candidate's and the reference's scores on a random subset of topics, each topic
independently with probability 1/2. The two systems that result are of equal quality by
construction, and the per-topic virtual target (the max over all systems, docs/mathematics.md §2) does
not move, because a swap exchanges two entries of the same topic's column. So does every other
per-topic aggregate a statistic reads (the min of max-min normalisation, ZRisk's topic totals), and
with them ``c``. The distribution of a gated statistic over swaps is therefore what a change of
equal quality produces against this reference on these topics; a limit placed at its
``P``-quantile on the bad side raises a false alarm with probability ``P``. This is the paired
randomization test (Fisher 1935; Smucker, Allan & Carterette, CIKM 2007) with the gate's
statistic in place of the mean difference. ``docs/mathematics.md`` §7 states it.

The null is of ``S(candidate) - S(reference)``, except for statistics already measured against
the reference or the baselines (URisk, TRisk and every other ``needs_reference`` statistic, ZRisk,
GeoRisk: :func:`null_of_own_value`), whose null is of the candidate's own value. With at most
:data:`EXACT_TOPICS` topics every one of the ``2**n`` swaps is enumerated; otherwise ``swaps`` seeded
Monte-Carlo swaps are drawn, as ``rng.random((swaps, n)) < 0.5`` with
``rng = numpy.random.default_rng(seed)``. An evaluation draws them once: every gate's null and the
comparisons' randomization tests read the same swaps (:mod:`pytest_bvtest.stats.swaps`). A statistic
that is a function of sums over topics (every one but GAWM, under every setting but topic grouping and
ZRisk against the target: :mod:`pytest_bvtest.stats.sums`) is evaluated on a block of swaps with one
matrix product of the swaps with a few per-topic columns, side by side with every other reader's; the
others on stacks of swapped matrices, in blocks that bound memory, on the statistic's sufficient
matrix (:func:`pytest_bvtest.stats.inference.paired_problem`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pytest_bvtest.checks import checked_seed, open_interval, whole_number
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import DEFAULT_SWAPS, DEFAULT_SWAPS_FULL_MATRIX, AnalysisSettings
from pytest_bvtest.stats.inference import paired_problem
from pytest_bvtest.stats.registry import STATISTICS, Statistic
from pytest_bvtest.stats.runs import run_shift
from pytest_bvtest.stats.sums import ProductEvaluator
from pytest_bvtest.stats.swaps import Draws, read_swaps

#: Up to this many topics every swap is enumerated (65,536 at most): the null is exact.
EXACT_TOPICS = 16

# Cells of the swapped matrices evaluated at once (swaps x rows x topics in stacks): bounds memory, stays in cache.
_BLOCK_CELLS = 1 << 20

# A null value this close to a limit counts as on it, as the gates do (floating-point noise).
_TOLERANCE = 1e-12


def null_of_own_value(statistic: str) -> bool:
    """True when the null of ``statistic`` is of the candidate's own value, not of a difference.

    Statistics measured against the reference (``needs_reference``: URisk, TRisk, ...) or against
    every baseline (ZRisk, GeoRisk) already place an equal system near their no-change level.
    """
    definition = STATISTICS[statistic]
    return definition.needs_reference or definition.against_other_systems


@dataclass(frozen=True)
class SwapNull:
    """The null distribution of one gated statistic under topic swaps with the reference.

    Attributes
    ----------
    statistic:
        The statistic's name in :data:`~pytest_bvtest.stats.registry.STATISTICS`.
    higher_is_better:
        Its good direction: the bad side is low values when True.
    own_value:
        True when ``values`` are the candidate's own values (:func:`null_of_own_value`),
        False when they are ``S(candidate) - S(reference)``.
    values:
        One value per swap, sorted ascending (read-only).
    exact:
        True when every ``2**n`` swap was enumerated (then ``seed`` played no part).
    seed:
        Seed of the Monte-Carlo swaps.
    by_swap:
        The same values in the order of the swaps (read-only), so that nulls drawn with the same
        topics, swaps and seed line up swap by swap (:func:`family_level`); ``None`` when unknown.
    runs:
        ``(k_c, k_r)``: how many runs of the candidate and of the reference the null drew the engine's noise
        from, when either system is given as several (docs/mathematics.md §7, run-to-run noise); else ``None``.
    """

    statistic: str
    higher_is_better: bool
    own_value: bool
    values: np.ndarray = field(repr=False, compare=False)
    exact: bool
    seed: int
    by_swap: np.ndarray | None = field(default=None, repr=False, compare=False)
    runs: tuple[int, int] | None = None

    @property
    def swaps(self) -> int:
        """How many swaps the null holds: ``2**n`` when exact, else the Monte-Carlo count."""
        return int(self.values.size)

    def limit(self, false_alarm: float) -> float:
        """The limit whose false-alarm rate is at most ``false_alarm``: the quantile on the bad side.

        With the values sorted ``v_0 <= ... <= v_{N-1}`` and ``k = floor(P N)``: ``v_k`` when higher is
        better (at most ``k`` values lie below it), ``v_{N-1-k}`` otherwise. A gate fails when the
        observed value is strictly past this limit, so the rate is ``<= P``, equal up to ties.
        """
        open_interval(false_alarm, "a false-alarm rate", 0, 0.5)
        return self.limit_past(int(np.floor(false_alarm * self.swaps + 1e-9)))

    def limit_past(self, count: int) -> float:
        """The limit that at most ``count`` swaps lie strictly past: ``v_count`` or ``v_{N-1-count}``.

        ``count = 0`` is the most extreme swap: a gate can then fail only past every swap.
        """
        if not 0 <= count < self.swaps:
            raise StatisticError(f"a limit needs 0 <= count < {self.swaps} swaps past it, got {count!r}")
        return float(self.values[count] if self.higher_is_better else self.values[self.swaps - 1 - count])

    def first(self, swaps: int) -> SwapNull:
        """The null of the first ``swaps`` swaps only: a Monte-Carlo draw of fewer swaps with the same seed."""
        if self.by_swap is None or not 0 < swaps <= self.swaps:
            raise StatisticError(f"cannot keep the first {swaps} of {self.swaps} swaps of this null")
        if swaps == self.swaps:
            return self
        kept = self.by_swap[:swaps]
        ordered = np.sort(kept)
        ordered.flags.writeable = False
        return SwapNull(
            self.statistic, self.higher_is_better, self.own_value, ordered, self.exact, self.seed, kept, self.runs
        )

    def smallest_rate(self) -> float:
        """The share of swaps tied at the null's most extreme value on the bad side.

        No limit fails a share of equal changes above 0 but below this: with few topics (``2**n``
        swaps) or few topics where the two systems differ, a ``false_alarm`` below it gives a limit
        that fails nothing. 1.0 when every swap gives the same value (the systems do not differ).
        """
        extreme = float(self.values[0] if self.higher_is_better else self.values[-1])
        if np.isnan(extreme):
            return float("nan")
        slack = _TOLERANCE * max(1.0, abs(extreme)) if np.isfinite(extreme) else 0.0
        if self.higher_is_better:
            tied = np.searchsorted(self.values, extreme + slack, side="right")
        else:
            tied = self.swaps - np.searchsorted(self.values, extreme - slack, side="left")
        return float(tied / self.swaps)

    def false_alarm_rate(self, limit: float) -> float:
        """The null's tail probability past ``limit`` on the bad side: how often an equal change fails.

        NaN for a NaN limit (an undefined limit has no rate).
        """
        if np.isnan(limit):
            return float("nan")
        slack = _TOLERANCE * max(1.0, abs(limit)) if np.isfinite(limit) else 0.0
        if self.higher_is_better:
            past = np.searchsorted(self.values, limit - slack, side="left")
        else:
            past = self.swaps - np.searchsorted(self.values, limit + slack, side="right")
        return float(past / self.swaps)


def swap_null(
    scores: np.ndarray,
    statistic: str,
    candidate: int,
    reference: int,
    settings: AnalysisSettings = AnalysisSettings(),
    *,
    swaps: int | None = None,
    seed: int = 0,
    exact_topics: int = EXACT_TOPICS,
    runs: tuple[np.ndarray, np.ndarray] | None = None,
    columns: Sequence[int] | np.ndarray | None = None,
) -> SwapNull:
    """The null of "no change" of a gated statistic: its values over swaps of candidate and reference.

    docs/mathematics.md §7, "Calibrated limits": swap ``scores[candidate]`` and ``scores[reference]`` on
    each topic independently with probability 1/2; every other row, and hence the per-topic target,
    stays as it is. Each swap gives ``S(swapped candidate) - S(swapped reference)``, or the swapped
    candidate's own value when :func:`null_of_own_value`. With ``n <= exact_topics`` every one of
    the ``2**n`` swaps is enumerated (exact); otherwise swap ``b`` is row ``b`` of
    ``numpy.random.default_rng(seed).random((swaps, n)) < 0.5``, so a naive loop can reproduce
    every value.

    Speed: a statistic with a sum form (:attr:`~pytest_bvtest.stats.registry.Statistic.sums`) is
    computed from the sums over topics of a few per-topic quantities, which a block of swaps changes by
    one matrix product, shared with every other reader of the same swaps (``tests/test_stats_sums.py``: equal
    to the per-swap loop to 1e-12): 10,000 swaps of 7,000 topics cost about 0.1 s besides drawing them. The
    rest are evaluated in stacks of swapped matrices on the statistic's sufficient matrix; GAWM has none and
    iterates its fixed point on the whole matrix for every swap (default 1,000 swaps), and topic grouping
    repeats its groups inside every swap.

    Parameters
    ----------
    scores:
        ``(m, n)`` score matrix, every system of the evaluation.
    statistic:
        A name in :data:`~pytest_bvtest.stats.registry.STATISTICS`.
    candidate, reference:
        Rows of the candidate and of the reference it is swapped with (distinct).
    settings:
        How the statistic is computed.
    swaps:
        Monte-Carlo swaps ``R``; ``None`` is :data:`DEFAULT_SWAPS`, or
        :data:`DEFAULT_SWAPS_FULL_MATRIX` for a statistic without a sufficient matrix.
    seed:
        Seed of the Monte-Carlo swaps (reported; unused when exact).
    exact_topics:
        Enumerate every swap when the matrix has at most this many topics.
    runs:
        The per-topic scores of each run of the candidate ``(k_c, n)`` and of the reference ``(k_r, n)`` when
        either is given as several runs (their rows in ``scores`` are the means). docs/mathematics.md §7,
        "Run-to-run noise": each swap of the means also adds a draw of the engine's shift of a whole run to the
        swapped candidate (:func:`_null_with_runs`), and the swaps are then always Monte-Carlo draws. With one run
        each this is the null above.
    columns:
        The topics (column indices) the statistic reads, a segment of the matrix's (docs/mathematics.md §7,
        "Gates per segment"): each swap is still drawn over all ``n`` topics, as above, and the statistic reads
        its ``columns``, so nulls of different segments (and of the whole topic set) share their swaps, swap for
        swap. ``settings.topic_weights`` are the whole matrix's and are read at ``columns`` too. ``None``: all.

    Returns
    -------
    SwapNull
        The sorted null values with how they were drawn; ``limit(P)`` and ``false_alarm_rate(limit)``.

    The swaps are drawn for this null alone; :func:`pending_null` takes the same arguments and reads them with
    the other readers of an evaluation's swaps (:func:`~pytest_bvtest.stats.swaps.read_swaps`).
    """
    pending = pending_null(
        scores,
        statistic,
        candidate,
        reference,
        settings,
        swaps=swaps,
        seed=seed,
        exact_topics=exact_topics,
        runs=runs,
        columns=columns,
    )
    read_swaps([pending])
    return pending.null()


BlockValues = Callable[[int, np.ndarray, "np.ndarray | None"], np.ndarray]
"""``values(first, swapped, products)``: the null values of swaps ``first`` to ``first + len(swapped) - 1``."""


class PendingNull:
    """A swap null read from the shared swaps (a :class:`~pytest_bvtest.stats.swaps.SwapReader`); :meth:`null`
    gives the :class:`SwapNull` once every swap has been read."""

    def __init__(
        self,
        chosen: Statistic,
        own_value: bool,
        draws: Draws,
        columns: np.ndarray | None,
        values: BlockValues,
        runs: tuple[int, int] | None = None,
    ):
        self.draws = draws
        self.columns = columns
        self._chosen, self._own_value, self._values, self._runs = chosen, own_value, values, runs
        self._by_swap = np.empty(draws.count)
        self._read = 0
        self._null: SwapNull | None = None

    def read(self, first: int, swapped: np.ndarray, products: np.ndarray | None) -> None:
        """See :meth:`~pytest_bvtest.stats.swaps.SwapReader.read`."""
        assert first == self._read
        self._by_swap[first : first + len(swapped)] = self._values(first, swapped, products)
        self._read += len(swapped)

    def null(self) -> SwapNull:
        """The null, once every swap has been read (one object however often asked: gates may share it)."""
        if self._null is not None:
            return self._null
        if self._read != self.draws.count:
            raise StatisticError(f"the swap null read {self._read} of {self.draws.count} swaps")
        by_swap = self._by_swap
        null = np.sort(by_swap)
        null.flags.writeable = False
        by_swap.flags.writeable = False
        chosen, draws = self._chosen, self.draws
        self._null = SwapNull(
            chosen.name, chosen.higher_is_better, self._own_value, null, draws.exact, draws.seed, by_swap, self._runs
        )
        return self._null


def default_swaps(statistic: str, swaps: int | None = None) -> int:
    """The Monte-Carlo swaps of a null of ``statistic``: ``swaps`` when given, else :data:`DEFAULT_SWAPS`, or
    :data:`DEFAULT_SWAPS_FULL_MATRIX` for a statistic without a sufficient matrix (GAWM)."""
    if swaps is None:
        swaps = DEFAULT_SWAPS if STATISTICS[statistic].sufficient_matrix is not None else DEFAULT_SWAPS_FULL_MATRIX
    return whole_number(swaps, "swaps")


def pending_null(
    scores: np.ndarray,
    statistic: str,
    candidate: int,
    reference: int,
    settings: AnalysisSettings = AnalysisSettings(),
    *,
    swaps: int | None = None,
    seed: int = 0,
    exact_topics: int = EXACT_TOPICS,
    runs: tuple[np.ndarray, np.ndarray] | None = None,
    columns: Sequence[int] | np.ndarray | None = None,
) -> PendingNull:
    """The null of :func:`swap_null` (the same arguments), to be read with the other readers of the same swaps
    (:func:`~pytest_bvtest.stats.swaps.read_swaps`); :meth:`PendingNull.null` then gives it.

    A statistic with a product form (every one with a sum form but ZRisk and GeoRisk) reads each block of swaps
    through its product with the statistic's per-topic columns, which the pass computes for all readers at once;
    the others read the swaps themselves: a segment's columns of them, swapped matrices in stacks, or the swaps of
    a null with repeated runs.
    """
    universe = np.shape(scores)[-1]
    if columns is not None:
        columns = np.asarray(columns, dtype=np.intp)
        if columns.ndim != 1 or not len(columns) or columns.min() < 0 or columns.max() >= universe:
            raise StatisticError(f"a segment's columns must be 1 to {universe} topic indices below {universe}")
        scores = np.asarray(scores)[:, columns]
        if settings.topic_weights is not None:
            settings = replace(settings, topic_weights=np.asarray(settings.topic_weights)[columns])
        if runs is not None:
            runs = (np.asarray(runs[0])[:, columns], np.asarray(runs[1])[:, columns])
    chosen, x, (matrix, positions) = paired_problem(scores, statistic, candidate, reference, settings, "the swap null")
    if candidate == reference:
        raise StatisticError("the swap null needs a reference other than the candidate")
    swaps = default_swaps(chosen.name, swaps)
    seed = checked_seed(seed)
    own_value = null_of_own_value(chosen.name)
    if runs is not None and runs[0].shape[0] * runs[1].shape[0] > 1:
        return _null_with_runs(chosen, matrix, positions, settings, runs, swaps, seed, universe, columns)
    exact = universe <= exact_topics
    draws = Draws(universe, 2**universe if exact else swaps, seed, exact)
    pair = (positions[0], positions[1])
    evaluate = (
        None
        if chosen.sums is None
        else chosen.sums.prepare(matrix, pair[:1] if own_value else pair, pair[1], settings, pair)
    )
    # a block's swaps are drawn over every topic: a segment's null reads its columns of them
    own = (lambda swapped: swapped) if columns is None else (lambda swapped: swapped[:, columns])

    def stacked(swapped: np.ndarray) -> np.ndarray:
        block = max(1, _BLOCK_CELLS // matrix.size)
        return np.concatenate(
            [
                _swapped_values(chosen, matrix, positions, settings, swapped[first : first + block], own_value)
                for first in range(0, len(swapped), block)
            ]
        )

    def from_computed(computed: np.ndarray, swapped: np.ndarray) -> np.ndarray:
        null = computed[:, 0] if own_value else computed[:, 0] - computed[:, 1]
        undecided = np.isnan(null)
        if undecided.any():  # values the sums cannot give to 1e-12 (TRisk without spread): evaluated exactly
            null[undecided] = stacked(swapped[undecided])
        return null

    if evaluate is None:
        return PendingNull(chosen, own_value, draws, None, lambda first, swapped, products: stacked(own(swapped)))
    if isinstance(evaluate, ProductEvaluator) and columns is None:
        return PendingNull(
            chosen,
            own_value,
            draws,
            evaluate.columns,
            lambda first, swapped, products: from_computed(evaluate.from_products(products), swapped),
        )
    return PendingNull(
        chosen,
        own_value,
        draws,
        None,
        lambda first, swapped, products: from_computed(evaluate(own(swapped)), own(swapped)),
    )


#: The stream of the engine's shifts a null with repeated runs draws: ``default_rng([seed, NOISE_STREAM])``.
NOISE_STREAM = 1


def engine_shifts(runs: tuple[np.ndarray, np.ndarray], swaps: int, seed: int) -> np.ndarray:
    """The engine's shift of swap ``b`` of a null with repeated runs, for every swap: ``scale * t_b``, with ``t`` the
    first ``swaps`` draws of Student's t of :func:`~pytest_bvtest.stats.runs.run_shift`'s degrees from
    ``default_rng([seed, NOISE_STREAM])`` (the harmed draws of a gate's power read them at their swaps)."""
    shift = run_shift(*(np.asarray(each, dtype=np.float64) for each in runs))
    draws = np.random.default_rng([checked_seed(seed), NOISE_STREAM]).standard_t(shift.degrees, size=swaps)
    return shift.scale * draws


def _null_with_runs(
    chosen: Statistic,
    matrix: np.ndarray,
    positions: list[int],
    settings: AnalysisSettings,
    runs: tuple[np.ndarray, np.ndarray],
    swaps: int,
    seed: int,
    universe: int,
    columns: np.ndarray | None,
) -> PendingNull:
    """The null of :func:`swap_null` when a system is given as several runs: swap ``b`` exchanges the means on
    random topics (the Monte-Carlo swaps of the null without runs), then moves the swapped candidate against the
    swapped reference by the engine's shift of a whole run, :func:`engine_shifts`, on every topic: half of it up,
    half of the reference down (each stops at 0 where every score is at least 0: a shift on one row alone, stopping
    there, narrowed the null of a spread such as Var).

    The swap holds the engine's per-topic noise already (each swapped difference carries it), and averages a shift
    that every topic of a run shares away: the shift is what it adds. A draw of the per-topic noise too (as before
    issue 29) held that noise twice, which TRisk reads as spread: its null narrowed, and an unchanged engine failed
    it 15-17.5% of the time at a nominal 5%.
    """
    own_value = null_of_own_value(chosen.name)
    candidate_runs, reference_runs = (np.asarray(each, dtype=np.float64) for each in runs)
    topics = matrix.shape[1]
    if any(each.ndim != 2 or each.shape[1] != topics for each in (candidate_runs, reference_runs)):
        raise StatisticError(f"the runs of the candidate and of the reference must each be (runs, {topics}) scores")
    shifts = engine_shifts((candidate_runs, reference_runs), swaps, seed)
    # a score below 0 is none a measure gives (ZRisk and GeoRisk refuse it): the shifted candidate stops at 0
    floor = 0.0 if min(matrix.min(), candidate_runs.min(), reference_runs.min()) >= 0 else None
    block = max(1, _BLOCK_CELLS // max(universe, topics * matrix.shape[0]))

    def values(first: int, swapped: np.ndarray, products: np.ndarray | None) -> np.ndarray:
        if columns is not None:
            swapped = swapped[:, columns]
        computed = []
        for start in range(0, len(swapped), block):
            shift = shifts[first + start : first + start + block, np.newaxis]
            computed.append(
                _swapped_values(
                    chosen,
                    matrix,
                    positions,
                    settings,
                    swapped[start : start + block],
                    own_value,
                    np.broadcast_to(shift, (len(shift), topics)),
                    floor,
                )
            )
        return np.concatenate(computed)

    counts = (candidate_runs.shape[0], reference_runs.shape[0])
    return PendingNull(chosen, own_value, Draws(universe, swaps, seed, False), None, values, counts)


def _swapped_values(
    chosen: Statistic,
    matrix: np.ndarray,
    positions: list[int],
    settings: AnalysisSettings,
    swapped: np.ndarray,
    own_value: bool,
    noise: np.ndarray | None = None,
    floor: float | None = None,
) -> np.ndarray:
    """The null values of a block of swaps: one swapped sufficient matrix per swap, evaluated as one stack;
    ``noise`` (one row per swap: the engine's shift), when given, is split between the two swapped rows, half added
    to the candidate's and half taken from the reference's, which then stop at ``floor`` (:func:`_null_with_runs`).

    The two swapped rows are picked bit for bit (``first ^ ((first ^ second) & mask)``, ``mask`` all ones
    where a topic is swapped): the same floats as ``numpy.where``, five times faster.
    """
    matrix = np.ascontiguousarray(matrix, dtype=np.float64)  # the bit-wise pick reads float64 bits
    stack = np.empty((len(swapped), *matrix.shape))
    stack[:] = matrix
    first, second = matrix[positions[0]].view(np.uint64), matrix[positions[1]].view(np.uint64)
    differing_bits = first ^ second
    mask = swapped.astype(np.uint64)
    np.negative(mask, out=mask)
    np.bitwise_and(mask, differing_bits, out=mask)
    np.bitwise_xor(mask, first, out=stack[:, positions[0]].view(np.uint64))
    np.bitwise_xor(stack[:, positions[0]].view(np.uint64), differing_bits, out=stack[:, positions[1]].view(np.uint64))
    if noise is not None:
        stack[:, positions[0]] += noise / 2
        stack[:, positions[1]] -= noise / 2
        if floor is not None:
            for row in positions[:2]:
                np.maximum(stack[:, row], floor, out=stack[:, row])
    computed = chosen.compute(stack, positions[1], settings)
    return computed[:, positions[0]] if own_value else computed[:, positions[0]] - computed[:, positions[1]]


@dataclass(frozen=True)
class FamilyLevel:
    """One per-gate level for a family of calibrated gates, so that together they fail at most ``P``.

    Attributes
    ----------
    false_alarm:
        The family-wise rate ``P`` asked for.
    count:
        ``k``: each gate's limit lets at most ``k`` of its own ``swaps`` swaps lie strictly past it
        (:meth:`SwapNull.limit_past`).
    swaps:
        ``N``, the swaps the gates share.
    rate:
        The share of swaps that fail at least one gate at these limits: the family-wise false-alarm
        rate, ``<= false_alarm``.
    limits:
        Each gate's limit, on its null's scale, in the order the nulls were given.
    """

    false_alarm: float
    count: int
    swaps: int
    rate: float
    limits: tuple[float, ...]

    @property
    def level(self) -> float:
        """``k / N``: the false-alarm rate each gate is held to on its own (at most; less with ties)."""
        return self.count / self.swaps


def family_counts(
    by_swap: np.ndarray,
    higher_is_better: Sequence[bool],
    false_alarm: float,
    others: np.ndarray | None = None,
    nearer: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The family-wise count of :func:`family_level` for many sets of nulls at once: one per harmed draw of a
    gate's power (docs/mathematics.md §9, "Power at delta").

    Parameters
    ----------
    by_swap:
        ``(gates, B, N)``: for each of ``B`` sets, each gate's null values in swap order; no NaN (``+/-inf``
        compare as numbers).
    higher_is_better, false_alarm:
        As in :func:`family_level`.
    others:
        ``(B, N)``: the smallest tail count of the family's other gates on each swap (:func:`smallest_tail_counts`),
        whose limits are not asked for; ``None`` when ``by_swap`` holds the whole family.
    nearer:
        Where the count is the cap ``floor(P N)`` itself, read each limit this many values nearer the extreme (at
        least the extreme). A limit read at count ``k`` of ``N`` swaps lets a new value past it with probability
        ``(k + 1) / (N + 1)``: at the cap that is ``P + (1 - P) / (N + 1)``, above ``P`` by a share that a few swaps
        standing for a null of many (power's recalibrated limits, docs/mathematics.md §9) would keep, and ``k - 1``
        takes it off. Below the cap (a family whose gates fail apart) ``(k + 1) / (N + 1)`` is the family's level on
        any number of swaps.

    Returns
    -------
    counts, limits, smallest
        ``(B,)`` each set's count ``k``; ``(gates, B)`` each gate's limit (its ``k``-th value from the bad side, or
        ``k - nearer``-th at the cap); ``(B, N)`` each swap's smallest tail count over the family
        (:func:`smallest_tail_counts`).
    """
    values, allowed = _family_values(by_swap, higher_is_better, false_alarm)
    smallest, extremes = _smallest_and_extremes(values, higher_is_better, allowed)
    if others is not None:
        np.minimum(smallest, others, out=smallest)
    # at count k the family fails the swaps whose smallest count is <= k: at most `allowed` of them
    counts = np.minimum(allowed, np.partition(smallest, allowed, axis=1)[:, allowed] - 1)
    read = np.maximum(np.where(counts == allowed, counts - nearer, counts), 0)[:, np.newaxis]
    limits = np.array(
        [
            np.take_along_axis(extreme, read, axis=1)[:, 0] * (1.0 if better else -1.0)
            for extreme, better in zip(extremes, higher_is_better)
        ]
    ).reshape(values.shape[0], values.shape[1])
    return counts, limits, smallest


def smallest_tail_counts(by_swap: np.ndarray, higher_is_better: Sequence[bool], false_alarm: float) -> np.ndarray:
    """Each swap's smallest tail count over the gates, ``(B, N)`` for ``(gates, B, N)`` null values: how many swaps lie
    at or past its value on the bad side (values within ``1e-12`` relative count as equal), the least over the
    gates. Exact up to ``floor(P N) + 1`` and capped above it: a swap whose count is above ``floor(P N)`` fails no
    gate at any count a family can take. Only the ``floor(P N) + 2`` most extreme values of each gate and set decide
    it: their counts among themselves are exact up to ``floor(P N) + 1`` (a value tied with one outside them
    counts more)."""
    values, allowed = _family_values(by_swap, higher_is_better, false_alarm)
    return _smallest_and_extremes(values, higher_is_better, allowed)[0]


def _family_values(by_swap: np.ndarray, higher_is_better: Sequence[bool], false_alarm: float) -> tuple[np.ndarray, int]:
    """The checked ``(gates, B, N)`` null values and ``floor(P N)``."""
    values = np.asarray(by_swap, dtype=np.float64)
    if values.ndim != 3 or values.shape[0] < 1 or values.shape[2] < 1:
        raise StatisticError(f"a family needs (gates, sets, swaps) null values, got shape {values.shape}")
    if len(higher_is_better) != values.shape[0]:
        raise StatisticError(f"{values.shape[0]} nulls but {len(higher_is_better)} directions")
    if np.isnan(values).any():
        raise StatisticError("a family-wise limit needs null values that are numbers (a NaN null has no limit)")
    open_interval(false_alarm, "a false-alarm rate", 0, 0.5)
    return values, int(np.floor(false_alarm * values.shape[2] + 1e-9))


def _smallest_and_extremes(
    values: np.ndarray, higher_is_better: Sequence[bool], allowed: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each swap's smallest tail count over the gates, capped at ``allowed + 2`` (:func:`smallest_tail_counts`), and
    each gate's ``allowed + 2`` most extreme values per set, sorted from the bad side, oriented bad side low."""
    gates, sets, swaps = values.shape
    kept = min(swaps, allowed + 2)
    cap = allowed + 2
    smallest = np.full((sets, swaps), cap, dtype=np.int64)
    extremes: list[np.ndarray] = []
    signs = np.where(np.asarray(higher_is_better, dtype=bool), 1.0, -1.0)
    rows = np.arange(sets)[np.newaxis, :, np.newaxis]
    # many gates at once (one at a time, 5,000 calibrated gates took 2 s), as many as bound the arrays' memory
    step = max(1, _FAMILY_CELLS // (sets * max(swaps, kept * kept)))
    for start in range(0, gates, step):
        oriented = values[start : start + step] * signs[start : start + step, np.newaxis, np.newaxis]  # bad side low
        if kept < swaps:
            chosen = np.argpartition(oriented, kept - 1, axis=2)[:, :, :kept]
        else:
            chosen = np.broadcast_to(np.arange(swaps), oriented.shape)
        extreme = np.take_along_axis(oriented, chosen, axis=2)
        order = np.argsort(extreme, axis=2, kind="stable")
        chosen, extreme = np.take_along_axis(chosen, order, axis=2), np.take_along_axis(extreme, order, axis=2)
        finite = np.isfinite(extreme)
        slack = np.where(finite, _TOLERANCE * np.maximum(1.0, np.abs(np.where(finite, extreme, 0.0))), 0.0)
        counts = (extreme[:, :, np.newaxis, :] <= (extreme + slack)[:, :, :, np.newaxis]).sum(axis=3)
        np.minimum.at(smallest, (np.broadcast_to(rows, chosen.shape), chosen), np.minimum(counts, cap))
        extremes.extend(extreme)
    return smallest, extremes


#: Cells of the gates' null values (gates x sets x swaps) :func:`_smallest_and_extremes` reads at once.
_FAMILY_CELLS = 1 << 22


def family_level(by_swap: np.ndarray, higher_is_better: Sequence[bool], false_alarm: float) -> FamilyLevel:
    """The common per-gate level at which a family of calibrated gates fails an equal change at most ``P``.

    Westfall & Young (1993), *Resampling-Based Multiple Testing*, single-step min-p: on each swap of
    the null of "no change" (docs/mathematics.md §7, "Calibrated limits" and
    "Family-wise limits", our reading), every gate has a tail count ``c_gb``, how many swaps lie at or past
    its value on the bad side (``N`` times its tail p-value; values within ``1e-12`` relative count as equal);
    the family fails swap ``b`` at per-gate count ``k`` exactly when ``min_g c_gb <= k``. The largest
    ``k`` with at most ``floor(P N)`` such swaps, and no larger than the single gate's own
    ``floor(P N)``, is the family's: a family of one gate gets exactly :meth:`SwapNull.limit`'s limit.
    The gates share the swaps (the same topics, swaps and seed: row ``b`` of every null is the same
    swap), so the dependence between the statistics is kept, as the max-statistic method needs.
    Computed by :func:`family_counts`, which does the same for many sets of nulls at once.

    Parameters
    ----------
    by_swap:
        ``(gates, N)``: each gate's null values in swap order (:attr:`SwapNull.by_swap`), no NaN
        (``+/-inf`` compare as numbers).
    higher_is_better:
        Each gate's good direction (the bad side is low values when True).
    false_alarm:
        ``P``, the family-wise false-alarm rate, strictly between 0 and 0.5.

    Returns
    -------
    FamilyLevel
        ``k``, the family-wise rate it reaches and each gate's limit.
    """
    by_swap = np.asarray(by_swap, dtype=np.float64)
    if by_swap.ndim != 2 or by_swap.shape[0] < 1 or by_swap.shape[1] < 1:
        raise StatisticError(f"a family needs a (gates, swaps) matrix of null values, got shape {by_swap.shape}")
    counts, limits, smallest = family_counts(by_swap[:, np.newaxis, :], higher_is_better, false_alarm)
    count = int(counts[0])
    rate = float(np.count_nonzero(smallest[0] <= count) / by_swap.shape[1])
    return FamilyLevel(false_alarm, count, by_swap.shape[1], rate, tuple(float(limit) for limit in limits[:, 0]))
