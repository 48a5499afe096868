"""The power of a gate: how often it fails a change that really is worse (docs/mathematics.md §9).

A calibrated limit fixes how often a gate fails a change of equal quality (§7); its **power** is how often
it fails one that is worse, and its **minimum detectable effect** (MDE) the smallest worsening it fails at
least 80% of the time (Webber, Moffat & Zobel, "Statistical power in retrieval experimentation", CIKM 2008;
Sakai, "Topic set size design", Information Retrieval Journal 19(3), 2016). A gate whose MDE is large is a
green that could not have been red.

**A regression of size delta** (docs/mathematics.md §9 PIN, our reading): a swap draw of §7 (the candidate's and
the reference's scores exchanged on each topic with probability 1/2: a change of equal quality), then the
swapped candidate's score lowered by ``delta``, clipped at the measure's minimum (a score already at or
below it stays), on every topic (:data:`UNIFORM`) or on a random 10% of the topics, at least one
(:data:`FEW`: harm on a few queries, what risk and variance gates exist for). Without a reference there is
nothing to swap with, and the draw harms the observed candidate.

**Power at delta** is the share of the ``draws`` seeded draws the gate fails, **each judged as the check would
judge that candidate** (MATH.md §9, revised 2026-11-28): its bounds where they are (:class:`Crossing`), its
calibrated limit recalibrated on the draw's own null of no change, family-wise with the other gates of its
family on that draw (:class:`PowerGroup`: the null read on swaps of the gate's own null, :class:`SwapPool`).
Holding the observed pair's limit instead stated drops the check caught 28-33% of the time. The **MDE** is the
smallest delta with power at least :data:`TARGET_POWER`: coarse evaluations on a few draws and swaps, then every
draw, on the same draws (power then moves with delta alone).

Draws: with ``keys = numpy.random.default_rng([seed, 20]).random((draws, 2, n))`` (:data:`DRAWS_STREAM`), draw
``b`` swaps topic ``j`` when ``keys[b, 0, j] < 0.5`` and, under :data:`FEW`, harms the ``k`` topics with the
smallest ``keys[b, 1]`` (:func:`harmed_topics`), so a naive loop reproduces every draw, and its null.

Evaluation: a draw puts every topic in one of four states (swapped or not, harmed or not), and a draw's null six
(:meth:`PowerProblem._null_states`). Every statistic's sufficient matrix
(:attr:`~pytest_bvtest.stats.registry.Statistic.sufficient_matrix`) reads each topic's column alone (the virtual
target, the min of normalisation, ZRisk's topic totals, which harming the candidate moves), so a draw's sufficient
matrix is the column-wise pick among the states' matrices. A statistic with a sum form
(:class:`~pytest_bvtest.stats.sums.LinearSums`) is evaluated from the states' per-topic terms, one matrix product
per state change and block of draws, a draw's null one per quantity and chunk of swaps; the rest on stacks of
picked matrices. With :data:`GAUSSIAN_TOPICS` topics or more, a sum-form statistic's sums are summed over so many
independent topics that they are Gaussian (their mean and covariance are exact: the states' terms weighted by
their probabilities, with the covariance of a harm set of fixed size); the draws' sums and their nulls are then
drawn from Gaussians (``tests/test_stats_power.py`` checks both ways agree within Monte-Carlo error), at a cost
that does not grow with the draws times the topics.

The mean has a closed form (§9 "Check", revised): a draw's per-topic differences ``t`` have an exact mean and
variance (:func:`mean_power`), and the check fails it when ``mean(t)`` is below its recalibrated limit, about
``-z_(1-a) rms(t) / sqrt(n)`` (rms, not sd: the swap null is centred on no change); without clipping its MDE is
:func:`closed_form_mde`. **Topics needed** to reach a stated delta (:meth:`PowerProblem.topics_needed`) come from
that closed form for the mean and from topics resampled with replacement to size ``n`` for the other statistics
(their sums' moments per resampled topic, for a sum form); an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.special import ndtr, ndtri

from pytest_bvtest.checks import checked_seed, open_interval, whole_number
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.stats.calibration import family_counts, smallest_tail_counts
from pytest_bvtest.stats.inference import paired_problem
from pytest_bvtest.stats.registry import Statistic, reads_others_through_extremes
from pytest_bvtest.stats.runs import RunShift
from pytest_bvtest.stats.sums import LinearSums
from pytest_bvtest.stats.swaps import topic_assignments

#: A drop on every topic.
UNIFORM = "uniform"
#: A drop on a random 10% of the topics, at least one: harm on a few queries.
FEW = "few"
#: The regression models, in the order reports show them.
MODELS = (UNIFORM, FEW)
#: The share of topics the :data:`FEW` model harms.
FEW_SHARE = 0.10
#: The power an MDE is the smallest drop to reach (docs/mathematics.md §9).
TARGET_POWER = 0.8
#: From this many topics a sum-form statistic's draws are drawn from the Gaussian of their sums.
GAUSSIAN_TOPICS = 1000

#: The random streams of power, ``default_rng([seed, STREAM])``: apart from the null's swaps (``default_rng(seed)``)
#: and its run-to-run noise (``[seed, 1]``), so that the draws that measure power are not those that set the limit.
DRAWS_STREAM = 20
GAUSSIAN_STREAM = 21
RESAMPLED_STREAM = 22
#: The Gaussian nulls of harmed draws (:meth:`PowerProblem.gaussian_draw_nulls`), and the order an enumerated null's
#: swaps are dealt into a pool's chunks in (:func:`swap_pool`).
GAUSSIAN_NULL_STREAM = 23
POOL_STREAM = 24
#: Each draw's own shift of the engine, when a system is given as several runs.
ENGINE_STREAM = 25

#: Swaps of the null's own that recalibrate a calibrated limit on each harmed draw (docs/mathematics.md §9): a chunk
#: of its first swaps, the chunks dealt to the draws in turn.
RECALIBRATION_SWAPS = 500
#: ... the swaps the null keeps for that: this many chunks (the null's own 10,000 by default).
RECALIBRATION_CHUNKS = 20
#: A coarse evaluation, which finds where the MDE lies before every draw is read: its first draws, on fewer swaps.
COARSE_DRAWS = 200
COARSE_SWAPS = 100
#: Swaps per harmed draw of a statistic evaluated on stacks of matrices (no sum form): each costs a stack.
STACKED_RECALIBRATION_SWAPS = 200

#: The two scales a limit may be on.
OWN = "own"
DIFFERENCE = "difference"

# A value this close to a limit counts as on it, as the gates do (floating-point noise).
_TOLERANCE = 1e-12
# From this many topics a harmed draw's null reads its few harmed topics' swaps alone (below, one product is faster).
_GATHERED_TOPICS = 400
# The relative step of the central differences that read a Gaussian null's spread through a statistic's finish.
_GRADIENT_STEP = 1e-6
# Cells (draws x topics x rows) evaluated at once: bounds memory.
_BLOCK_CELLS = 1 << 20
# The bisection stops when the bracket is this small relative to its top: about 3 significant digits.
_RELATIVE_PRECISION = 3e-3
# ... and with recalibrated limits at 3% (each drop evaluated costs a null per draw; the MDE's Monte-Carlo error is
# about half that, and reported), after coarse evaluations at 5%.
_RECALIBRATED_PRECISION = 3e-2
_COARSE_PRECISION = 5e-2
# A bracket this narrow (relative to its top) is narrowed by interpolation; a wider one by steps along the slope.
_INTERPOLATED_BRACKET = 0.3
# Evaluations a bracket's search makes at most, at each fidelity.
_MOST_STEPS = 30
# Draws of the Gaussian null that places a calibrated limit at other topic counts (topics needed).
_NULL_DRAWS = 20_000
# Topics needed are searched up to this many times the topics at hand (and at most this many topics).
_MOST_TOPICS_FACTOR = 100
_MOST_TOPICS = 1_000_000
# Resampled draws of a statistic without a sum form cost draws x topics: their search stops at this many cells.
_RESAMPLED_CELLS = 1 << 27


def harmed_topics(topics: int, model: str) -> int:
    """How many topics a draw of ``model`` harms: all of them, or 10% rounded, at least one."""
    if model == UNIFORM:
        return topics
    if model == FEW:
        return max(1, int(math.floor(FEW_SHARE * topics + 0.5)))
    raise StatisticError(f"unknown regression model {model!r}; models: {', '.join(MODELS)}")


@dataclass(frozen=True)
class Crossing:
    """One limit a draw must be past for the gate to fail it (a gate with several fails only past all).

    ``scale`` is :data:`OWN` (the candidate's value) or :data:`DIFFERENCE` (candidate minus reference);
    ``upper`` a cap (the value must stay at or below ``limit``). How the limit moves with the number of topics
    (:func:`topics_needed`): a bound stays (``kind="bound"``); a bound of a noise-aware gate is widened by the
    reach of its bootstrap interval towards the safe side, ``reach``, which shrinks as ``1/sqrt(n)``
    (``kind="noise"``: ``limit`` is the bound minus or plus ``reach``); a calibrated limit is the null's quantile
    at the false-alarm ``level`` it holds (``kind="calibrated"``), recalibrated on every harmed draw
    (:class:`PowerGroup`). ``relative`` is the share of a ``max_increase``/``max_decrease: N%`` bound: its limit
    on the difference is that share of the reference's value on each draw (``limit`` is the observed pair's).
    """

    scale: str
    limit: float
    upper: bool
    kind: str = "bound"
    reach: float = 0.0
    level: float | None = None
    relative: float | None = None

    def __post_init__(self) -> None:
        if self.scale not in (OWN, DIFFERENCE):
            raise StatisticError(f"a limit's scale is {OWN!r} or {DIFFERENCE!r}, got {self.scale!r}")
        if self.kind not in ("bound", "noise", "calibrated"):
            raise StatisticError(f"a limit's kind is 'bound', 'noise' or 'calibrated', got {self.kind!r}")

    def crossed(
        self,
        own: np.ndarray,
        difference: np.ndarray | None,
        reference: np.ndarray | None = None,
        limit: np.ndarray | float | None = None,
    ) -> np.ndarray:
        """Which draws are past the limit; a NaN value or limit is past it (a gate never passes on NaN).

        ``reference`` holds each draw's reference value (a relative bound reads it); ``limit`` replaces the
        observed pair's limit with each draw's own (a recalibrated limit).
        """
        values = own if self.scale == OWN else difference
        if values is None:
            raise StatisticError("a limit on candidate minus reference needs a reference")
        if limit is None:
            limit = self.limit
            if self.relative is not None and reference is not None:
                # a noise-aware gate's bound moved by its interval's reach towards the safe side, as `limit` is
                side = 1.0 if self.upper else -1.0
                limit = side * (self.relative * np.abs(reference) + self.reach)
        limit = np.asarray(limit, dtype=np.float64)
        finite = np.isfinite(limit)
        slack = np.where(finite, _TOLERANCE * np.maximum(1.0, np.abs(np.where(finite, limit, 0.0))), 0.0)
        with np.errstate(invalid="ignore"):
            past = values > limit + slack if self.upper else values < limit - slack
        return past | np.isnan(values) | np.isnan(limit)


def failed(
    own: np.ndarray,
    difference: np.ndarray | None,
    crossings: Sequence[Crossing],
    reference: np.ndarray | None = None,
    recalibrated: np.ndarray | None = None,
) -> np.ndarray:
    """Which draws the gate fails: those past every one of its limits (a calibrated one at ``recalibrated``, each
    draw's own limit, when given)."""
    failing = np.ones(own.shape, dtype=bool)
    for crossing in crossings:
        own_limit = recalibrated if crossing.kind == "calibrated" else None
        failing &= crossing.crossed(own, difference, reference, own_limit)
    return failing


@dataclass(frozen=True)
class Detectable:
    """The smallest drop of one model that the gate fails with :data:`TARGET_POWER`, or why there is none.

    ``drop`` is the MDE (``None`` when even ``largest``, the drop that takes every harmed score to the
    measure's minimum, is caught less often); ``power`` the share of draws failed at ``drop`` (at ``largest``
    when ``drop`` is ``None``); ``moves`` False when the statistic never gets worse under the model (Var under
    a drop on every topic: the spread stays, and clipping only narrows it); ``error`` the Monte-Carlo standard
    error of ``drop`` (the draws' binomial error read through the slope of the power at it; ``None`` when there is
    no drop, or no slope to read).
    """

    model: str
    drop: float | None
    power: float
    largest: float
    moves: bool = True
    error: float | None = None


@dataclass(frozen=True)
class GatePower:
    """A gate's power under both models: each model's :class:`Detectable`, and how the draws were made.

    ``harmed`` is how many topics a :data:`FEW` draw harms, of ``topics``; ``method`` is ``"simulation"``
    (every draw's topics) or ``"gaussian"`` (sums drawn from their exact Gaussian, :data:`GAUSSIAN_TOPICS`);
    ``swaps`` how many swaps recalibrate a calibrated limit on each harmed draw (``None``: the gate has no
    calibrated limit), ``family`` how many gates' nulls set its level on each draw (1: its own).
    """

    level: float
    draws: int
    seed: int
    topics: int
    harmed: int
    method: str
    detectable: tuple[Detectable, ...]
    swaps: int | None = None
    family: int = 1

    def of(self, model: str) -> Detectable:
        for each in self.detectable:
            if each.model == model:
                return each
        raise StatisticError(f"no power for the regression model {model!r}")


@dataclass(frozen=True)
class SwapPool:
    """The swaps of a gate's null of no change that recalibrate its limit on each harmed draw (docs/mathematics.md
    §9, "Power at delta"): ``swapped[c]`` ``(per_draw, n)`` booleans, chunk ``c`` of them, which draw ``b`` reads
    when ``b mod chunks == c``; ``order[c]`` the places of those swaps in the null's swap order, where the other gates
    of its family hold their values (:class:`FixedNull`)."""

    swapped: np.ndarray
    order: np.ndarray

    @property
    def chunks(self) -> int:
        return int(self.swapped.shape[0])

    @property
    def per_draw(self) -> int:
        return int(self.swapped.shape[1])


def swap_pool(
    universe: int,
    count: int,
    seed: int,
    exact: bool,
    columns: Sequence[int] | np.ndarray | None = None,
    per_draw: int = RECALIBRATION_SWAPS,
    chunks: int = RECALIBRATION_CHUNKS,
) -> SwapPool:
    """The pool of a null of ``count`` swaps of ``universe`` topics drawn with ``seed`` (every ``2**universe`` when
    ``exact``; :func:`~pytest_bvtest.stats.swaps.topic_assignments`, the same rows as the null's), read on
    ``columns`` (a segment's topics): its first ``chunks`` chunks of ``per_draw`` swaps. An enumerated null's swaps
    are in binary order, so they are dealt in a seeded random order (``default_rng([seed, POOL_STREAM])``); one that
    has no more than ``per_draw`` swaps is one chunk, read whole by every draw (exact)."""
    total = 2**universe if exact else whole_number(count, "swaps")
    per_draw = min(whole_number(per_draw, "swaps per draw"), total)
    chunks = max(1, min(whole_number(chunks, "chunks"), total // per_draw))
    kept = chunks * per_draw
    order = np.arange(kept)
    if exact and total > per_draw:
        order = np.random.default_rng([checked_seed(seed), POOL_STREAM]).permutation(total)[:kept]
    rows = np.empty((total if exact else kept, universe if columns is None else len(columns)), dtype=bool)
    first = 0
    block = max(1, _BLOCK_CELLS // universe)
    for swapped in topic_assignments(universe, total if exact else kept, seed, exact=exact, block=block):
        picked = swapped if columns is None else swapped[:, columns]
        rows[first : first + len(swapped)] = picked > 0.5
        first += len(swapped)
    return SwapPool(rows[order].reshape(chunks, per_draw, -1), order.reshape(chunks, per_draw))


@dataclass(frozen=True)
class DrawNulls:
    """Every harmed draw's values (its own, candidate minus reference and the reference's own; ``(B,)`` each) and
    its own null of no change on the gate's scale: ``null``, ``(B, swaps)`` values, or, from Gaussian sums, a normal
    null given by its ``centre`` and ``spread`` (``(B,)`` each; ``null`` is then ``None``)."""

    own: np.ndarray
    difference: np.ndarray | None
    reference: np.ndarray | None
    null: np.ndarray | None
    centre: np.ndarray | None = None
    spread: np.ndarray | None = None


@dataclass(frozen=True)
class EngineNoise:
    """The engine's shift of a whole run, when the candidate or the reference is given as several runs
    (docs/mathematics.md §7, "Run-to-run noise"; §9): ``shift`` its distribution
    (:func:`~pytest_bvtest.stats.runs.run_shift`), ``by_swap`` the shift the gate's null drew for each of its swaps
    (:func:`~pytest_bvtest.stats.calibration.engine_shifts`)."""

    shift: RunShift
    by_swap: np.ndarray = field(repr=False, compare=False)


Values = tuple[np.ndarray, "np.ndarray | None", "np.ndarray | None"]
"""A block of draws' values: the candidate's own, candidate minus reference and the reference's own (``None``
without a reference)."""


class PowerProblem:
    """One gate's draws of a regression (module docstring): their values at any drop, their power, the MDE.

    Parameters
    ----------
    scores:
        ``(m, n)`` score matrix, every system of the evaluation.
    statistic:
        A name in :data:`~pytest_bvtest.stats.registry.STATISTICS`.
    candidate, reference:
        Rows of the candidate and of the system it is swapped with (``None``: no swap).
    settings:
        How the statistic is computed.
    minimum:
        The measure's minimum: no harmed score goes below it (0 for every supported measure).
    draws, seed:
        ``R`` seeded draws (module docstring).
    """

    def __init__(
        self,
        scores: np.ndarray,
        statistic: str,
        candidate: int,
        reference: int | None,
        settings: AnalysisSettings = AnalysisSettings(),
        *,
        minimum: float = 0.0,
        draws: int = 1000,
        seed: int = 0,
        engine: EngineNoise | None = None,
    ) -> None:
        chosen, x, (_, positions) = paired_problem(scores, statistic, candidate, reference, settings, "power")
        if reference is not None and reference == candidate:
            raise StatisticError("power needs a reference other than the candidate")
        self.statistic: Statistic = chosen
        self.settings = settings
        self.draws = whole_number(draws, "power draws")
        self.seed = checked_seed(seed)
        self.minimum = float(minimum)
        self.topics = x.shape[1]
        rows = [candidate] if reference is None else [candidate, reference]
        if reads_others_through_extremes(chosen, settings) and x.shape[0] > len(rows) + 2:
            # a drop and a swap change only these rows, and the statistic reads the others through their per-topic
            # max and min: every state is built from those four rows (each state copied all 201 rows of a
            # 200-baseline spec, 0.37 s of its check), with the same sufficient matrices bit for bit
            others = np.delete(x, rows, axis=0)
            x = np.vstack([x[rows], others.max(axis=0), others.min(axis=0)])
            candidate, reference = 0, (None if reference is None else 1)
            rows = list(range(len(rows)))
        self._scores = x
        self._candidate = candidate
        self._reference = reference
        self._positions = list(positions)
        self._reference_position = None if reference is None else self._positions[1]
        self._kept = list(dict.fromkeys(rows))
        #: The drop that takes every harmed score to the minimum: no larger drop changes anything.
        self.largest = float(max(0.0, x[rows].max() - self.minimum))
        self._unharmed = self._state_matrices(0.0)
        self._zero: dict[str, Values] = {}
        #: The engine's shift of a whole run (``None`` without several runs, or when its runs share none).
        self.engine = engine if engine is not None and engine.shift.scale > 0 else None
        #: Each draw's own shift, a fresh run of the harmed engine: ``scale * t`` from ``[seed, ENGINE_STREAM]``.
        self._engine_draws = (
            None
            if self.engine is None
            else self.engine.shift.scale
            * np.random.default_rng([self.seed, ENGINE_STREAM]).standard_t(self.engine.shift.degrees, size=self.draws)
        )
        # the pools' swaps times the unharmed topics' change (:meth:`_unharmed_products`), with the pool they are of
        self._pool_products: dict[int, tuple[SwapPool, np.ndarray]] = {}
        form = chosen.sums if isinstance(chosen.sums, LinearSums) else None
        if (
            form is not None
            and form.terms(self._unharmed[0], self._positions, self._reference_position, settings, None) is None
        ):
            form = None  # grouping: no sum form under these settings
        #: The sum form a draw's sums are computed with, or ``None`` (stacks of matrices).
        self._form = form
        #: ``"gaussian"`` when the draws' sums are drawn from their Gaussian, else ``"simulation"``.
        self.method = (
            "gaussian" if form is not None and self.topics >= GAUSSIAN_TOPICS and self.swapped else "simulation"
        )
        #: Draws x topics x rows (x random groupings) of one evaluation on stacks of matrices, 0 for a sum form:
        #: what power costs.
        repeats = getattr(settings.grouping, "repeats", 1)  # random and sampled groupings repeat inside each draw
        self.stacked_cells = 0 if form is not None else self.draws * self.topics * self._unharmed.shape[1] * repeats

    # --- the draws -----------------------------------------------------------------------------------------

    @property
    def swapped(self) -> bool:
        """True when the draws swap the candidate with a reference (else they harm the observed candidate)."""
        return self._reference is not None

    def _harmed_matrix(self, scores: np.ndarray, delta: float) -> np.ndarray:
        """``scores`` with the candidate's row lowered by ``delta``, clipped at the minimum (a score below stays)."""
        harmed = scores.copy()
        row = scores[self._candidate]
        harmed[self._candidate] = np.where(row > self.minimum, np.maximum(row - delta, self.minimum), row)
        return harmed

    def _sufficient(self, scores: np.ndarray) -> np.ndarray:
        reduced = self.statistic.sufficient_matrix
        matrix = None if reduced is None else reduced(scores, self._kept, self.settings)
        return np.ascontiguousarray(scores if matrix is None else matrix, dtype=np.float64)

    def _state_matrices(self, delta: float, shift: float = 0.0) -> np.ndarray:
        """The sufficient matrices of the four states, ``(4, k, n)``: as observed, swapped, harmed, both; with the
        candidate's row of each moved against the reference's by ``shift`` on every topic when given, half up and
        half of the reference's down (each stopping at the minimum), as the null with runs does.

        Without a reference nothing is swapped: the swapped states are the observed ones.
        """
        observed = self._scores
        swapped = observed.copy()
        if self._reference is not None:
            swapped[[self._candidate, self._reference]] = observed[[self._reference, self._candidate]]
        states = [observed, swapped, self._harmed_matrix(observed, delta), self._harmed_matrix(swapped, delta)]
        if shift:
            states = [state.copy() for state in states]
            for state in states:
                state[self._candidate] = np.maximum(state[self._candidate] + shift / 2, self.minimum)
                if self._reference is not None:
                    state[self._reference] = np.maximum(state[self._reference] - shift / 2, self.minimum)
        return np.stack([self._sufficient(state) for state in states])

    def _split(self, computed: np.ndarray) -> Values:
        own = computed[..., 0]
        if self._reference is None:
            return own, None, None
        return own, own - computed[..., 1], computed[..., 1]

    def values(self, delta: float, model: str) -> Values:
        """Every draw's value at a drop of ``delta`` under ``model``: own, candidate minus reference and the
        reference's (with the engine's shift of a fresh run, :meth:`_with_engine`)."""
        if delta == 0.0 and model in self._zero:
            return self._zero[model]
        result = self._split(self._with_engine(delta, model)[0])
        if delta == 0.0:
            self._zero[model] = result
        return result

    def _drawn(self, delta: float, model: str, shift: float = 0.0) -> np.ndarray:
        """Every draw's statistic ``(B, positions)`` at a drop of ``delta`` under ``model``, the candidate moved by
        ``shift`` on every topic: from the four states' sums (drawn from their Gaussian from
        :data:`GAUSSIAN_TOPICS` topics), or stacks of picked matrices."""
        harmed = harmed_topics(self.topics, model)
        states = self._unharmed if delta == 0.0 and shift == 0.0 else self._state_matrices(delta, shift)
        if self.method == "gaussian":
            assert self._form is not None
            terms = _state_terms(self._form, states, self._positions, self._reference_position, self.settings)
            assert terms is not None
            per_topic, centre = terms
            mean, covariance = _sum_moments(per_topic, harmed)
            rng = np.random.default_rng([self.seed, GAUSSIAN_STREAM])
            sums = mean + rng.standard_normal((self.draws, mean.size)) @ _root(covariance).T
            return self._form.finish(sums, centre, self.topics, self.settings)
        swapped, hurt = _draw_states(self.topics, self.draws, self.seed, harmed)
        return self._evaluated(states, swapped if self.swapped else np.zeros_like(swapped), hurt)

    def _with_engine(self, delta: float, model: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Every draw's statistic, and its slope in a shift of the candidate on every topic (``None`` without the
        engine's noise).

        With several runs a harmed candidate is a fresh run of the engine, shifted as a whole by its own draw
        (``EngineNoise``): its value moves by that shift times the statistic's slope, the secant over one shift's
        scale either side (docs/mathematics.md §9, "Several runs"; linear in the shift, our reading).
        """
        computed = self._drawn(delta, model)
        if self.engine is None or self._engine_draws is None:
            return computed, None
        scale = self.engine.shift.scale
        slope = (self._drawn(delta, model, scale) - self._drawn(delta, model, -scale)) / (2 * scale)
        slope = np.where(np.isfinite(slope), slope, 0.0)
        return computed + self._engine_draws[:, np.newaxis] * slope, slope

    def _evaluated(self, states: np.ndarray, swapped: np.ndarray, harmed: np.ndarray) -> np.ndarray:
        """The statistic of draws given by which topics they swap and harm (booleans), in blocks: from the four
        states' per-topic terms for a sum form (:func:`_state_sums`), else on stacks of picked matrices."""
        form = self._form
        terms = (
            None
            if form is None
            else _state_terms(form, states, self._positions, self._reference_position, self.settings)
        )
        rows = 1 if terms is not None else states.shape[1]
        block = max(1, _BLOCK_CELLS // (swapped.shape[1] * rows))
        computed = np.empty((len(swapped), len(self._positions)))
        for first in range(0, len(swapped), block):
            s, h = swapped[first : first + block], harmed[first : first + block]
            if form is None or terms is None:
                computed[first : first + len(s)] = self._stacked(states, s, h)
                continue
            values = form.finish(_state_sums(terms[0], s, h), terms[1], s.shape[1], self.settings)
            undecided = np.isnan(values).any(axis=1)
            if undecided.any():  # the sums cannot give these to 1e-12 (TRisk without spread): exactly
                values[undecided] = self._stacked(states, s[undecided], h[undecided])
            computed[first : first + len(s)] = values
        return computed

    def _stacked(
        self, states: np.ndarray, swapped: np.ndarray, harmed: np.ndarray, drawn: np.ndarray | None = None
    ) -> np.ndarray:
        """The statistic of each draw's sufficient matrix, picked column by column among the four states (of the
        topics ``drawn``, when topics are resampled)."""
        state = swapped.astype(np.intp) + 2 * harmed.astype(np.intp)
        by_topic = np.moveaxis(states, 2, 1)  # (4, n, k)
        columns = np.arange(self.topics) if drawn is None else drawn
        stack = np.ascontiguousarray(np.moveaxis(by_topic[state, columns], 2, 1))
        computed = self.statistic.compute(stack, self._reference_position, self.settings)
        return computed[:, self._positions]

    # --- each harmed draw's own null (docs/mathematics.md §9, "Power at delta") ------------------------------

    def _null_states(self, delta: float) -> np.ndarray:
        """The sufficient matrices of the six states a topic takes in a harmed draw's null, ``(6, k, n)``.

        The first four are :meth:`_state_matrices`'; the null of a draw exchanges its candidate (harm and all)
        with its reference on the topics a swap picks, which on a harmed topic gives two more: 4, the reference's
        score as the candidate's beside the harmed candidate's as the reference's; 5, the candidate's beside the
        harmed reference's (the draw harmed the reference's score, swapped onto the candidate's row).
        """
        observed = self._scores
        pair = [self._candidate, self._reference]
        swapped = observed.copy()
        swapped[pair] = observed[pair[::-1]]
        harmed, harmed_swapped = self._harmed_matrix(observed, delta), self._harmed_matrix(swapped, delta)
        exchanged = [matrix.copy() for matrix in (harmed, harmed_swapped)]
        for matrix, original in zip(exchanged, (harmed, harmed_swapped)):
            matrix[pair] = original[pair[::-1]]
        return np.stack([self._sufficient(state) for state in (observed, swapped, harmed, harmed_swapped, *exchanged)])

    def draw_nulls(
        self,
        delta: float,
        model: str,
        pool: SwapPool,
        scale: str,
        swaps: int | None = None,
        draws: int | None = None,
    ) -> DrawNulls:
        """Every draw's values at a drop of ``delta`` under ``model``, and its own null of no change on ``scale``
        (the first ``draws`` draws, all by default).

        The null of draw ``b`` is the swap null of §7 of the draw's candidate and reference, read on the swaps of
        chunk ``b mod chunks`` of ``pool`` (``swaps`` of them, all by default). Swap ``t`` puts topic ``j`` in the
        state its candidate row shows: the candidate's original scores when ``t_j = 0``, the reference's when 1,
        either harmed when the draw harmed the system that shows there (states of :meth:`_null_states`): so the
        draw's own value is the null's at ``t = `` the draw's swap, and a null is a sum over topics of that state's
        terms. A sum form reads each chunk as one matrix product with the draws' per-topic changes (only the
        harmed topics' when few are); the rest are stacks of picked matrices.
        """
        if not self.swapped:
            raise StatisticError("a harmed draw's null swaps the candidate with a reference, and there is none")
        harmed = harmed_topics(self.topics, model)
        count = self.draws if draws is None else min(draws, self.draws)
        swapped, hurt = (drawn[:count] for drawn in _draw_states(self.topics, self.draws, self.seed, harmed))
        states = self._null_states(delta)
        picks = _null_picks(swapped, hurt)
        # a null of the candidate's own value reads its row alone (TRisk's reference row is 0 on every swap)
        rows = self._positions[:1] if scale == OWN else self._positions
        terms = (
            None
            if self._form is None
            else _state_terms(self._form, states, rows, self._reference_position, self.settings)
        )
        per_draw = pool.per_draw if swaps is None else min(swaps, pool.per_draw)
        own, slope = (None if each is None else each[:count] for each in self._with_engine(delta, model))
        assert own is not None
        null = np.empty((count, per_draw))
        for chunk in range(pool.chunks):
            draws = np.arange(chunk, count, pool.chunks)
            if not draws.size:
                continue
            chunk_swaps = pool.swapped[chunk, :per_draw]
            if terms is None:
                values = _on_scale(self._picked_values(states, picks[:, draws], chunk_swaps), scale)
            else:
                values = _on_scale(
                    self._summed_nulls(terms, pool, chunk, per_draw, swapped[draws], hurt[draws], harmed), scale
                )
                undecided = np.isnan(values)
                if undecided.any():  # the sums cannot give these to 1e-12 (TRisk without spread): exactly
                    swap_rows, draw_columns = np.nonzero(undecided)
                    for column in np.unique(draw_columns):
                        chosen = swap_rows[draw_columns == column]
                        exact = self._picked_values(states, picks[:, draws[column : column + 1]], chunk_swaps[chosen])
                        values[chosen, column] = _on_scale(exact, scale)[:, 0]
            null[draws] = values.T
            if slope is not None and self.engine is not None:
                # the engine's shift the null drew for each of these swaps, through each draw's slope
                shifts = self.engine.by_swap[pool.order[chunk, :per_draw]]
                null[draws] += shifts[np.newaxis, :] * _on_scale(slope[draws], scale)[:, np.newaxis]
        return DrawNulls(*self._split(own), null)  # type: ignore[arg-type]

    def _summed_nulls(
        self,
        terms: tuple[np.ndarray, np.ndarray],
        pool: SwapPool,
        chunk: int,
        per_draw: int,
        swapped: np.ndarray,
        hurt: np.ndarray,
        harmed: int,
    ) -> np.ndarray:
        """The values ``(swaps, draws, positions)`` of the nulls of ``draws`` on a chunk's swaps, from the six states'
        per-topic terms: each draw's sums at no swap, plus the chunk's swaps times each topic's change when swapped
        (the observed pair's on an unharmed topic, :meth:`_unharmed_products` when few are harmed, and the harmed
        state's on a harmed one)."""
        per_topic, centre = terms
        f0, f1, f2, f3, f4, f5 = per_topic
        s, h = swapped.astype(np.float64), hurt.astype(np.float64)
        # at no swap (the candidate's original scores on every topic): state 0, or 2 / 5 where harmed
        base = f0.sum(axis=1) + h @ (f2 - f0).T + (h * s) @ (f5 - f2).T
        unharmed_change = f1 - f0
        # a harmed topic changes by f4 - f2 (the draw harmed the candidate) or f3 - f5 (the reference), when swapped
        moved = (f4 - f2).T, (f3 - f5).T
        chunk_swaps = pool.swapped[chunk, :per_draw]
        draws, width = len(hurt), base.shape[1]
        # the sums quantity by quantity, each (swaps, draws) contiguous: a finish reads its columns at memory speed
        sums = np.empty((width, per_draw, draws))
        if 4 * harmed <= self.topics and self.topics > _GATHERED_TOPICS:
            topics = np.nonzero(hurt)[1].reshape(draws, harmed)  # each draw's harmed topics
            which = np.take_along_axis(swapped, topics, axis=1)[..., np.newaxis]
            changes = np.where(which, moved[1][topics], moved[0][topics]) - unharmed_change.T[topics]  # (d, k, q)
            np.einsum("sdk,dkq->qsd", chunk_swaps[:, topics].astype(np.float64), changes, out=sums)
            sums += self._unharmed_products(pool, unharmed_change)[chunk, :per_draw].T[:, :, np.newaxis]
        else:
            changes = np.where(
                hurt[..., np.newaxis], np.where(swapped[..., np.newaxis], *moved[::-1]), unharmed_change.T
            )
            swaps_as_floats = chunk_swaps.astype(np.float64)
            for quantity in range(width):
                np.matmul(swaps_as_floats, changes[:, :, quantity].T, out=sums[quantity])
        sums += base.T[:, np.newaxis, :]
        finished = self._form.finish(sums.reshape(width, -1).T, centre, self.topics, self.settings)  # type: ignore[union-attr]
        return finished.reshape(per_draw, draws, -1)

    def _picked_values(self, states: np.ndarray, picks: np.ndarray, chunk_swaps: np.ndarray) -> np.ndarray:
        """The statistic ``(swaps, draws, positions)`` of each draw's null on ``chunk_swaps``, on stacks of sufficient
        matrices picked topic by topic among the six states (``picks``: the state at no swap and when swapped, ``(2,
        draws, n)``)."""
        draws, swaps = picks.shape[1], len(chunk_swaps)
        by_topic = np.moveaxis(states, 2, 1)  # (6, n, k)
        columns = np.arange(self.topics)
        computed = np.empty((swaps, draws, len(self._positions)))
        block = max(1, _BLOCK_CELLS // (self.topics * states.shape[1] * swaps))
        for first in range(0, draws, block):
            chosen = np.where(
                chunk_swaps[np.newaxis],
                picks[1, first : first + block, np.newaxis],
                picks[0, first : first + block, np.newaxis],
            )
            stack = np.ascontiguousarray(np.moveaxis(by_topic[chosen, columns], -1, -2))  # (d, swaps, k, n)
            flat = stack.reshape(-1, *stack.shape[2:])
            result = self.statistic.compute(flat, self._reference_position, self.settings)[:, self._positions]
            computed[:, first : first + block] = np.moveaxis(result.reshape(len(chosen), swaps, -1), 0, 1)
        return computed

    def gaussian_draw_nulls(
        self,
        delta: float,
        model: str,
        scale: str,
        swaps: int,
        chunks: int,
        draws: int | None = None,
        topics: int | None = None,
    ) -> DrawNulls:
        """:meth:`draw_nulls` from Gaussian sums (a sum form: from :data:`GAUSSIAN_TOPICS` topics, and for the topics
        needed). Each draw's sums at its own swap and at no swap (the centre of its null, as a swap's terms average
        the two states of each topic) are drawn jointly from their exact Gaussian over the draws' states (the first
        ``draws`` of :data:`GAUSSIAN_STREAM`); its null around that centre is the statistic of the Gaussian of a
        swap's change of the sums, with the covariance averaged over the draws' states: normal to first order (the
        delta method: the statistic at the centre, spread by its gradient there, central differences). With the
        engine's noise, whose shifts are Student's t, the null is drawn instead: ``swaps`` of ``chunks`` seeded
        pools of standard normals, ``default_rng([seed, GAUSSIAN_NULL_STREAM])``, each swap with the shift the gate's
        null drew. With ``topics``, on that many topics resampled with replacement, each swapped with probability
        1/2 and harmed with the model's share (independently).
        """
        assert self._form is not None
        size = self.topics if topics is None else topics
        harmed = harmed_topics(size, model)
        states = self._null_states(delta)
        made = _state_terms(self._form, states, self._positions, self._reference_position, self.settings)
        assert made is not None
        (f0, f1, f2, f3, f4, f5), centre = made
        # per state of a topic (swap s, harm h as in :func:`_sum_moments`): the draw's own terms and its null's centre
        middle_unharmed = (f0 + f1) / 2
        joint = np.stack(
            [
                np.vstack([f0, middle_unharmed]),
                np.vstack([f1, middle_unharmed]),
                np.vstack([f2, (f2 + f4) / 2]),
                np.vstack([f3, (f5 + f3) / 2]),
            ]
        )
        share = harmed / size
        if topics is None:
            mean, covariance = _sum_moments(joint, harmed)
            rng = np.random.default_rng([self.seed, GAUSSIAN_STREAM])
        else:
            mean, covariance = _resampled_moments(joint, share, topics)
            rng = np.random.default_rng([self.seed, RESAMPLED_STREAM, topics])
        count = self.draws if draws is None else min(draws, self.draws)
        drawn = mean + rng.standard_normal((self.draws, mean.size))[:count] @ _root(covariance).T
        width = f0.shape[0]
        own_sums, middles = drawn[:, :width], drawn[:, width:]
        # a swap moves the sums by (t - 1/2) times each topic's change: covariance 1/4 sum_j E[G_j G_j']
        spread = (
            (size / self.topics)
            * ((1 - share) * (f1 - f0) @ (f1 - f0).T + share / 2 * ((f4 - f2) @ (f4 - f2).T + (f3 - f5) @ (f3 - f5).T))
            / 4
        )
        own = self._form.finish(own_sums, centre, size, self.settings)
        if self.engine is None or topics is not None:
            # the null is the statistic of Gaussian sums this many topics make: normal, to first order
            finish = lambda sums: _on_scale(self._form.finish(sums, centre, size, self.settings), scale)  # noqa: E731
            middle = finish(middles)
            gradient = np.stack(
                [
                    (finish(middles + step) - finish(middles - step)) / (2 * step[column])
                    for column, step in enumerate(
                        np.diag(_GRADIENT_STEP * np.maximum(1.0, np.abs(middles).max(axis=0)))
                    )
                ],
                axis=1,
            )
            deviation = np.sqrt(np.maximum(np.einsum("bi,ij,bj->b", gradient, spread, gradient), 0.0))
            return DrawNulls(*self._split(own), None, middle, deviation)  # type: ignore[arg-type]
        normals = np.random.default_rng([self.seed, GAUSSIAN_NULL_STREAM]).standard_normal((chunks, swaps, width))
        moves = normals @ _root(spread).T  # (chunks, swaps, q)
        chunk_of = np.arange(count) % chunks
        sums = middles[:, np.newaxis, :] + moves[chunk_of]
        finished = self._form.finish(sums.reshape(-1, width), centre, size, self.settings)
        null = _on_scale(finished.reshape(count, swaps, -1), scale)
        slope = self._with_engine(delta, model)[1]
        if slope is not None and self.engine is not None and self._engine_draws is not None:
            # as :meth:`draw_nulls`: each draw a fresh run's shift, its null the shifts its null drew
            own = own + self._engine_draws[:count, np.newaxis] * slope[:count]
            drawn_shifts = self.engine.by_swap
            shifts = drawn_shifts[np.arange(chunks * swaps) % drawn_shifts.size].reshape(chunks, swaps)[chunk_of]
            null = null + shifts * _on_scale(slope[:count], scale)[:, np.newaxis]
        return DrawNulls(*self._split(own), null)  # type: ignore[arg-type]

    def _unharmed_products(self, pool: SwapPool, change: np.ndarray) -> np.ndarray:
        """The pool's swaps times an unharmed topic's change when swapped, ``(chunks, swaps, q)``: the same at every
        drop (the unharmed states do not move), so computed once per pool."""
        key = id(pool)
        if key not in self._pool_products:
            flat = pool.swapped.reshape(-1, self.topics).astype(np.float64) @ change.T
            self._pool_products[key] = (pool, flat.reshape(pool.chunks, pool.per_draw, -1))
        return self._pool_products[key][1]

    # --- power and the MDE ---------------------------------------------------------------------------------

    def power(self, delta: float, model: str, crossings: Sequence[Crossing]) -> float:
        """The share of draws the gate fails at a drop of ``delta`` under ``model``, every limit held at the observed
        pair's (a bound's; for a calibrated limit, :class:`PowerGroup` recalibrates it on each draw)."""
        own, difference, reference = self.values(delta, model)
        return float(failed(own, difference, crossings, reference).mean())

    def detectable(self, model: str, crossings: Sequence[Crossing], level: float = TARGET_POWER) -> Detectable:
        """The MDE under ``model``: the smallest drop the gate fails with power ``level`` (bisection)."""
        open_interval(level, "a power", 0, 1)
        if not crossings:
            raise StatisticError("power needs at least one limit")
        if any(math.isnan(crossing.limit) for crossing in crossings):
            return Detectable(model, None, float("nan"), self.largest, True)
        at_zero = self.power(0.0, model, crossings)
        if at_zero >= level:
            return Detectable(model, 0.0, at_zero, self.largest)
        largest = self.largest
        at_largest = self.power(largest, model, crossings) if largest > 0 else at_zero
        if at_largest < level:
            return Detectable(model, None, at_largest, largest, self._moves(model, crossings))
        low, high, at_high = 0.0, largest, at_largest
        while high - low > _RELATIVE_PRECISION * high:
            # halve the bracket's top while it still catches (the MDE is often far below the largest drop)
            middle = high / 2 if low == 0.0 and high > 1e-3 * largest else (low + high) / 2
            at_middle = self.power(middle, model, crossings)
            if at_middle >= level:
                high, at_high = middle, at_middle
            else:
                low = middle
        return Detectable(model, high, at_high, largest)

    def _moves(self, model: str, crossings: Sequence[Crossing]) -> bool:
        """Whether the statistic gets worse, on any draw, at any of a few drops up to the largest."""
        scale, upper = crossings[0].scale, crossings[0].upper
        base = self.values(0.0, model)[0 if scale == OWN else 1]
        assert base is not None
        for fraction in (0.125, 0.25, 0.5, 1.0):
            moved = self.values(fraction * self.largest, model)[0 if scale == OWN else 1]
            assert moved is not None
            change = moved - base if upper else base - moved
            if np.any(change > _TOLERANCE * np.maximum(1.0, np.abs(base))):
                return True
        return False

    # --- topics needed -------------------------------------------------------------------------------------

    def topics_needed(
        self, drop: float, model: str, crossings: Sequence[Crossing], level: float = TARGET_POWER
    ) -> int | None:
        """About how many topics like these the gate needs to catch a drop of ``drop`` with power ``level``.

        The mean: the closed form (:func:`mean_topics_needed`). Others: topics resampled with replacement to
        size ``n`` (:meth:`resampled_power`), the smallest ``n`` found by doubling then bisection to about 5%.
        ``None`` when more topics do not get there (a bound the drop does not cross, a statistic the model
        does not move) within :data:`_MOST_TOPICS_FACTOR` times the topics at hand.
        """
        open_interval(level, "a power", 0, 1)
        if drop <= 0 or any(math.isnan(crossing.limit) for crossing in crossings):
            return None
        if self._mean_difference(crossings):
            candidate, reference = self._scores[self._kept]
            return mean_topics_needed(candidate, reference, drop, crossings, model, level, self.minimum)
        most = min(_MOST_TOPICS, _MOST_TOPICS_FACTOR * self.topics)

        def reaches(topics: int) -> bool:
            return self.resampled_power(drop, model, crossings, topics) >= level

        low, high = 1, max(2, self.topics)
        while not reaches(high):
            low, high = high, 2 * high
            if high > most or (self._form is None and self.draws * high * self._unharmed.shape[1] > _RESAMPLED_CELLS):
                return None
        return _smallest_reaching(reaches, low, high, within=0.05)

    def _mean_difference(self, crossings: Sequence[Crossing]) -> bool:
        """The mean's closed form applies: a mean-like statistic of unweighted topics, lower limits on the
        difference."""
        chosen = self.statistic
        return (
            chosen.mean_like
            and not chosen.uses_topic_weights
            and self.swapped
            and all(crossing.scale == DIFFERENCE and not crossing.upper for crossing in crossings)
        )

    def resampled_power(self, drop: float, model: str, crossings: Sequence[Crossing], topics: int) -> float:
        """The power at ``drop`` on ``topics`` topics resampled with replacement from these (docs/mathematics.md §9).

        Each draw resamples ``topics`` topics, swaps each with probability 1/2 and harms them as ``model`` does;
        each limit is placed again at that size (:class:`Crossing`: a noise-aware one with its reach scaled by
        ``sqrt(n / topics)``; a calibrated one recalibrated on each draw, at the per-gate level it holds, from the
        draw's Gaussian null, :meth:`gaussian_draw_nulls`). A sum form's sums are drawn from their Gaussian, whose
        moments per resampled topic are exact; the rest is simulated, a calibrated limit placed at the quantile of
        its level among draws without harm (the observed pair's, on that many topics: an estimate that leans
        optimistic, as a harm widens the null).
        """
        whole_number(topics, "topics")
        calibrated = next((crossing for crossing in crossings if crossing.kind == "calibrated"), None)
        if calibrated is not None and self._form is not None and self.swapped:
            others = [self._placed(crossing, topics, None) for crossing in crossings if crossing is not calibrated]
            drawn = self.gaussian_draw_nulls(
                drop, model, calibrated.scale, RECALIBRATION_SWAPS, RECALIBRATION_CHUNKS, topics=topics
            )
            limit = _limits_at_level(drawn, calibrated.level, self.statistic.higher_is_better)
            return float(
                failed(drawn.own, drawn.difference, [*others, calibrated], drawn.reference, recalibrated=limit).mean()
            )
        null = self._resampled(0.0, 0, topics, _NULL_DRAWS if self._form is not None else self.draws)
        placed = [self._placed(crossing, topics, null) for crossing in crossings]
        own, difference, reference = self._resampled(drop, harmed_topics(topics, model), topics, self.draws)
        return float(failed(own, difference, placed, reference).mean())

    def _placed(self, crossing: Crossing, topics: int, null: Values | None) -> Crossing:
        """``crossing`` on ``topics`` topics (see :class:`Crossing`; a calibrated one needs the ``null`` of draws
        without harm)."""
        if crossing.kind == "bound":
            return crossing
        if crossing.kind == "noise":
            side = 1.0 if crossing.upper else -1.0
            bound = crossing.limit - side * crossing.reach
            return Crossing(
                crossing.scale,
                bound + side * crossing.reach * math.sqrt(self.topics / topics),
                crossing.upper,
                relative=crossing.relative,
            )
        assert null is not None
        values = null[0] if crossing.scale == OWN else null[1]
        assert values is not None and crossing.level is not None
        ordered = np.sort(values[~np.isnan(values)])
        count = int(np.floor(crossing.level * ordered.size + 1e-9))
        limit = ordered[ordered.size - 1 - count] if crossing.upper else ordered[count]
        return Crossing(crossing.scale, float(limit), crossing.upper)

    def _resampled(self, drop: float, harmed: int, topics: int, draws: int) -> Values:
        """Draws of ``topics`` resampled topics, each swapped with probability 1/2 and ``harmed`` of them harmed."""
        states = self._unharmed if drop == 0.0 else self._state_matrices(drop)
        rng = np.random.default_rng([self.seed, RESAMPLED_STREAM, topics])
        made = (
            None
            if self._form is None
            else _state_terms(self._form, states, self._positions, self._reference_position, self.settings)
        )
        if self._form is not None and made is not None:
            per_topic, centre = made
            # one resampled topic: any of these, swapped with probability 1/2, harmed with probability `share`
            mean, covariance = _resampled_moments(per_topic, harmed / topics, topics, 0.5 if self.swapped else 0.0)
            sums = mean + rng.standard_normal((draws, mean.size)) @ _root(covariance).T
            return self._split(self._form.finish(sums, centre, topics, self.settings))
        computed = np.empty((draws, len(self._positions)))
        block = max(1, _BLOCK_CELLS // (topics * states.shape[1]))
        for first in range(0, draws, block):
            count = min(block, draws - first)
            drawn = rng.integers(0, self.topics, size=(count, topics))
            swapped = (rng.random((count, topics)) < 0.5) & self.swapped
            hurt = np.zeros((count, topics), dtype=bool)
            if harmed:
                np.put_along_axis(hurt, np.argsort(rng.random((count, topics)), axis=1)[:, :harmed], True, axis=1)
            computed[first : first + count] = self._stacked(states, swapped, hurt, drawn)
        return self._split(computed)


def _limits_at_level(drawn: DrawNulls, level: float | None, higher_is_better: bool) -> np.ndarray:
    """Each draw's limit at a per-gate false-alarm ``level``: the ``j``-th of its ``N`` null values from the bad side
    that a new value passes with probability ``(j + 1) / (N + 1) = level`` (rounded; at least the extreme, also when
    the level is unknown); of a normal null, its ``level`` quantile on the bad side."""
    level = 0.0 if level is None or math.isnan(level) else level
    null = drawn.null
    if null is None:
        assert drawn.centre is not None and drawn.spread is not None
        side = float(ndtri(level)) if level > 0 else -math.inf
        return drawn.centre + (side if higher_is_better else -side) * drawn.spread
    count = max(0, int(round(level * (null.shape[1] + 1))) - 1)
    oriented = null if higher_is_better else -null
    limit = np.partition(oriented, count, axis=1)[:, count]
    return limit if higher_is_better else -limit


def _on_scale(computed: np.ndarray, scale: str) -> np.ndarray:
    """A statistic's values ``(..., positions)`` on a null's scale: the candidate's own, or minus the reference's."""
    return computed[..., 0] if scale == OWN else computed[..., 0] - computed[..., 1]


def _null_picks(swapped: np.ndarray, hurt: np.ndarray) -> np.ndarray:
    """The state of :meth:`PowerProblem._null_states` each topic of each draw takes in the draw's null, ``(2, B, n)``:
    at no swap (0, or 2 / 5 where the draw harmed the candidate / the reference) and swapped (1, or 4 / 3)."""
    at_no_swap = np.where(hurt, np.where(swapped, 5, 2), 0)
    when_swapped = np.where(hurt, np.where(swapped, 3, 4), 1)
    return np.stack([at_no_swap, when_swapped]).astype(np.intp)


@dataclass(frozen=True)
class GroupGate:
    """A gate whose power a :class:`PowerGroup` measures: its draws, and its limits for the observed pair (a
    calibrated one is recalibrated on every draw)."""

    problem: PowerProblem
    crossings: tuple[Crossing, ...]

    @property
    def calibrated(self) -> Crossing | None:
        return next((crossing for crossing in self.crossings if crossing.kind == "calibrated"), None)


@dataclass(frozen=True)
class FixedNull:
    """A gate of the family that the harm does not reach (on another measure, or another segment): its null of the
    observed pair in swap order and the statistic's direction. On every draw it is what it was: a draw swaps topics
    of every measure, and in the orientation the pool's swaps are read in (:meth:`PowerProblem.draw_nulls`) a
    topic's swap shows the same system whatever the draw swapped."""

    by_swap: np.ndarray
    higher_is_better: bool


class PowerGroup:
    """The power of gates that must be measured together (docs/mathematics.md §9, "Power at delta").

    ``bvtest check`` calibrates a gate's limit on the candidate it is given, and a family of calibrated gates
    together (§7): a harmed draw is judged with its own limits, each gate's its null's value at the count the
    family's nulls on that draw allow (:func:`~pytest_bvtest.stats.calibration.family_counts`). So the gates of one
    family on one score matrix (the harm reaches each of them) are measured together, on the same draws and the
    same swaps of their nulls, ``pool`` (:func:`swap_pool`), beside the ``fixed`` nulls of the family's other gates;
    ``false_alarm`` is the family's rate (a gate alone: its own). A gate without a calibrated limit is a group of
    one, its limits those of the observed pair (a relative bound read on each draw's reference). From
    :data:`GAUSSIAN_TOPICS` topics a draw's null is Gaussian (:meth:`PowerProblem.gaussian_draw_nulls`) and each
    gate keeps the per-gate level it holds on the observed pair (``Crossing.level``).

    Every drop evaluated is kept, so the search for one gate's MDE reads the others' evaluations; a coarse
    evaluation reads the first :data:`COARSE_DRAWS` draws on :data:`COARSE_SWAPS` swaps each, to find where to look.
    """

    def __init__(
        self,
        gates: Sequence[GroupGate],
        fixed: Sequence[FixedNull] = (),
        pool: SwapPool | None = None,
        false_alarm: float | None = None,
    ) -> None:
        if not gates:
            raise StatisticError("a power group needs at least one gate")
        first = gates[0].problem
        if any(
            (gate.problem.topics, gate.problem.draws, gate.problem.seed) != (first.topics, first.draws, first.seed)
            for gate in gates
        ):
            raise StatisticError("the gates of a power group share their topics and draws")
        self.gates = tuple(gates)
        self.fixed = tuple(fixed)
        self._calibrated = [index for index, gate in enumerate(gates) if gate.calibrated is not None]
        self.gaussian = first.method == "gaussian"
        if self._calibrated and not self.gaussian and (pool is None or false_alarm is None):
            raise StatisticError("a calibrated limit is recalibrated on the swaps of its null: give their pool")
        self.pool = pool
        self.false_alarm = false_alarm
        stacked = any(gates[index].problem.stacked_cells for index in self._calibrated)
        #: Swaps each draw's limit is recalibrated on (``None`` without a calibrated limit).
        self.swaps: int | None = None
        if self._calibrated:
            per_draw = RECALIBRATION_SWAPS if pool is None else pool.per_draw
            self.swaps = min(per_draw, STACKED_RECALIBRATION_SWAPS) if stacked else per_draw
        self._evaluated: dict[tuple[str, float, bool], list[np.ndarray]] = {}
        self._fixed_counts: dict[int, np.ndarray] = {}

    # --- which draws each gate fails ----------------------------------------------------------------------

    def failures(self, delta: float, model: str, coarse: bool = False) -> list[np.ndarray]:
        """Which draws each gate fails at a drop of ``delta`` under ``model`` (every draw; the first
        :data:`COARSE_DRAWS` on :data:`COARSE_SWAPS` swaps each when ``coarse``), kept for the search."""
        key = (model, float(delta), coarse)
        if key in self._evaluated:
            return self._evaluated[key]
        draws = min(COARSE_DRAWS, self.gates[0].problem.draws) if coarse else None
        swaps = None if self.swaps is None else (min(COARSE_SWAPS, self.swaps) if coarse else self.swaps)
        found: list[np.ndarray] = []
        nulls: dict[int, DrawNulls] = {}
        for index, gate in enumerate(self.gates):
            crossing = gate.calibrated
            if crossing is None:
                own, difference, reference = (
                    None if values is None else values[:draws] for values in gate.problem.values(delta, model)
                )
                assert own is not None
                found.append(failed(own, difference, gate.crossings, reference))
                continue
            assert swaps is not None
            if self.gaussian:
                nulls[index] = gate.problem.gaussian_draw_nulls(
                    delta, model, crossing.scale, swaps, RECALIBRATION_CHUNKS, draws
                )
            else:
                assert self.pool is not None
                nulls[index] = gate.problem.draw_nulls(delta, model, self.pool, crossing.scale, swaps, draws)
            found.append(np.zeros(0, dtype=bool))
        limits = self._gaussian_limits(nulls) if self.gaussian else self._family_limits(nulls, swaps)
        for index, drawn in nulls.items():
            gate = self.gates[index]
            found[index] = failed(
                drawn.own, drawn.difference, gate.crossings, drawn.reference, recalibrated=limits[index]
            )
        self._evaluated[key] = found
        return found

    def _family_limits(self, nulls: Mapping[int, DrawNulls], swaps: int | None) -> dict[int, np.ndarray]:
        """Each calibrated gate's limit on each draw: its null's value at the count its family allows on that draw,
        the family's harmed nulls beside the fixed ones read on the same swaps. A draw whose nulls hold a NaN gets a
        NaN limit (the check fails a gate whose null has one)."""
        assert self.pool is not None and self.false_alarm is not None and swaps is not None
        draws = next(iter(nulls.values())).null.shape[0]
        chunk_of = np.arange(draws) % self.pool.chunks
        values = np.stack([drawn.null for drawn in nulls.values()])
        directions = [self.gates[index].problem.statistic.higher_is_better for index in nulls]
        valid = ~np.isnan(values).any(axis=(0, 2))
        others = None if not self.fixed else self._fixed_smallest(swaps)[chunk_of[valid]]
        limits = np.full((len(nulls), draws), np.nan)
        if valid.any():
            # a few of the null's swaps stand for its 10,000: at the cap, each limit one value nearer the extreme
            # (family_counts' `nearer`)
            limits[:, valid] = family_counts(values[:, valid], directions, self.false_alarm, others, nearer=1)[1]
        return {index: limits[position] for position, index in enumerate(nulls)}

    def _fixed_smallest(self, swaps: int) -> np.ndarray:
        """The smallest tail count of the fixed nulls on each swap of each chunk, ``(chunks, swaps)``: the same at
        every drop, so computed once per number of swaps."""
        if swaps not in self._fixed_counts:
            assert self.pool is not None and self.false_alarm is not None
            order = self.pool.order[:, :swaps]
            values = np.stack([fixed.by_swap[order] for fixed in self.fixed])
            directions = [fixed.higher_is_better for fixed in self.fixed]
            self._fixed_counts[swaps] = smallest_tail_counts(values, directions, self.false_alarm)
        return self._fixed_counts[swaps]

    def _gaussian_limits(self, nulls: Mapping[int, DrawNulls]) -> dict[int, np.ndarray]:
        """Each calibrated gate's limit on each Gaussian null: its value at the per-gate level the gate holds on the
        observed pair (its family's, when it has one)."""
        limits = {}
        for index, drawn in nulls.items():
            gate = self.gates[index]
            assert gate.calibrated is not None
            limits[index] = _limits_at_level(drawn, gate.calibrated.level, gate.problem.statistic.higher_is_better)
        return limits

    def power(self, index: int, delta: float, model: str, coarse: bool = False) -> float:
        """The share of draws gate ``index`` fails at a drop of ``delta`` under ``model``."""
        return float(self.failures(delta, model, coarse)[index].mean())

    # --- the MDE ------------------------------------------------------------------------------------------

    def detectable(self, index: int, model: str, level: float = TARGET_POWER) -> Detectable:
        """Gate ``index``'s MDE under ``model``: the smallest drop whose draws it fails with power ``level``.

        A gate without a calibrated limit has its limits where they are: :meth:`PowerProblem.detectable`. Otherwise
        coarse evaluations bracket the MDE to :data:`_COARSE_PRECISION`, starting from the MDE with the observed
        pair's limit held (a harm widens the null, so the recalibrated MDE is mostly larger); then evaluations of
        every draw narrow it to :data:`_RECALIBRATED_PRECISION`, stepping along the power's probit slope until they
        bracket it and interpolating the probit inside. The MDE is where the probit, read as a line between the last
        drops either side, reaches ``level``; ``error`` is read from the slope there.
        """
        open_interval(level, "a power", 0, 1)
        gate = self.gates[index]
        problem = gate.problem
        if any(math.isnan(crossing.limit) for crossing in gate.crossings):
            return Detectable(model, None, float("nan"), problem.largest, True)
        if index not in self._calibrated:
            return problem.detectable(model, gate.crossings, level)
        largest = problem.largest
        if self.power(index, 0.0, model, coarse=True) >= level and self.power(index, 0.0, model) >= level:
            return Detectable(model, 0.0, self.power(index, 0.0, model), largest)
        # every draw is read at the largest drop only when the coarse evaluation does not clearly reach the level there
        coarse_draws = min(COARSE_DRAWS, problem.draws)
        clearly = level + 3 * math.sqrt(level * (1 - level) / coarse_draws)
        if largest == 0 or self.power(index, largest, model, coarse=True) < clearly:
            at_largest = self.power(index, largest, model)
            if at_largest < level:
                return Detectable(model, None, at_largest, largest, problem._moves(model, gate.crossings))
        held = problem.detectable(model, gate.crossings, level).drop if problem._form is not None else None
        start = held if held is not None and 0 < held < largest else largest / 2
        low, high = self._narrowed(index, model, level, start, True, _COARSE_PRECISION)
        slope = self._slope(index, model, high)
        estimate = self._interpolated(index, model, level, low, high, coarse=True)
        low, high = self._narrowed(index, model, level, estimate, False, _RECALIBRATED_PRECISION, slope)
        drop = self._interpolated(index, model, level, low, high, coarse=False, margin=0.0)
        # the bracket's ends are evaluated; between them the power's probit is read as a line, so at the drop it reads
        # `level` exactly (unless the bracket's top is the drop: then what was measured there)
        power = self.power(index, high, model) if drop >= high else level
        return Detectable(model, drop, power, largest, error=self._error(index, model, drop, level))

    def _narrowed(
        self,
        index: int,
        model: str,
        level: float,
        start: float,
        coarse: bool,
        precision: float,
        slope: float | None = None,
    ) -> tuple[float, float]:
        """The bracket ``(low, high)`` of the MDE among evaluations of this fidelity, narrowed to ``precision``:
        from ``start``, steps along the probit ``slope`` (or by a quarter, without one) until the evaluations
        bracket it, then probit interpolation inside (a drop that takes every harmed score to the minimum reaches
        ``level``, :meth:`detectable` made sure)."""
        largest = self.gates[index].problem.largest
        point = start
        for _ in range(_MOST_STEPS):
            self.failures(point, model, coarse)
            low, high = self._bracket(index, model, level, coarse)
            if high is not None and high - low <= precision * high:
                return low, high
            if high is not None and low > 0 and high - low <= _INTERPOLATED_BRACKET * high:
                point = self._interpolated(index, model, level, low, high, coarse)
                continue
            at = self.power(index, point, model, coarse)
            if slope is None:
                point = point * 1.25 if at < level else point / 1.25
            else:
                step = (float(ndtri(level)) - float(ndtri(np.clip(at, 0.005, 0.995)))) / slope
                point = point + float(np.clip(step, -0.15 * point, 0.15 * point))
                # a little past the crossing, so that the next evaluation lands on its other side
                point *= (1 + precision / 3) if at < level else (1 - precision / 3)
            point = min(largest, max(point, low * (1 + precision / 2)))
            if high is not None:
                point = min(point, high * (1 - precision / 2))
        low, high = self._bracket(index, model, level, coarse)
        return low, high if high is not None else largest

    def _bracket(self, index: int, model: str, level: float, coarse: bool) -> tuple[float, float | None]:
        """Among evaluations of this fidelity: the smallest drop that reaches ``level`` (``None``: none does, yet),
        and the largest below it that does not (0 when none)."""
        powers = [
            (delta, float(found[index].mean()))
            for (evaluated, delta, fidelity), found in self._evaluated.items()
            if evaluated == model and fidelity == coarse
        ]
        reaching = [delta for delta, power in powers if power >= level]
        high = min(reaching) if reaching else None
        low = max((delta for delta, power in powers if (high is None or delta < high) and power < level), default=0.0)
        return low, high

    def _interpolated(
        self, index: int, model: str, level: float, low: float, high: float, coarse: bool, margin: float = 0.1
    ) -> float:
        """The drop where the power's probit, interpolated between ``low`` and ``high``, reaches ``level``; kept
        ``margin`` of the bracket from either end (a tenth while searching: the bracket then shrinks however the power
        bends)."""
        draws = min(COARSE_DRAWS, self.gates[index].problem.draws) if coarse else self.gates[index].problem.draws
        low_z, high_z = (
            float(ndtri(np.clip(self.power(index, drop, model, coarse), 0.5 / draws, 1 - 0.5 / draws)))
            for drop in (low, high)
        )
        share = (float(ndtri(level)) - low_z) / (high_z - low_z) if high_z > low_z else 0.5
        return low + (high - low) * min(1 - margin, max(margin, share))

    def _slope(self, index: int, model: str, drop: float) -> float | None:
        """The slope of the power's probit in the drop near ``drop``: least squares over every evaluation within a
        third of it whose power is not 0 or 1 (``None`` with fewer than two such drops, or a slope not above 0)."""
        points = [
            (delta, float(found[index].mean()))
            for (evaluated, delta, _), found in self._evaluated.items()
            if evaluated == model and abs(delta - drop) <= drop / 3 and 0 < found[index].mean() < 1
        ]
        if len({delta for delta, _ in points}) < 2:
            return None
        slope = float(np.polyfit([delta for delta, _ in points], ndtri([power for _, power in points]), 1)[0])
        return slope if slope > 0 else None

    def _error(self, index: int, model: str, drop: float, level: float) -> float | None:
        """The Monte-Carlo standard error of an MDE: the binomial error of the power ``level`` over the draws, divided
        by the power's slope at ``drop`` (:meth:`_slope`: ``d power / d drop = phi(z) d probit / d drop``)."""
        slope = self._slope(index, model, drop)
        if slope is None:
            return None
        draws = self.gates[index].problem.draws
        level_z = float(ndtri(level))
        density = math.exp(-level_z * level_z / 2) / math.sqrt(2 * math.pi)
        return math.sqrt(level * (1 - level) / draws) / (density * slope)

    def gate_power(self, index: int, level: float = TARGET_POWER) -> GatePower:
        """Gate ``index``'s MDE under each of :data:`MODELS`."""
        problem = self.gates[index].problem
        return GatePower(
            level,
            problem.draws,
            problem.seed,
            problem.topics,
            harmed_topics(problem.topics, FEW),
            problem.method,
            tuple(self.detectable(index, model, level) for model in MODELS),
            self.swaps if index in self._calibrated else None,
            len(self._calibrated) + len(self.fixed) if index in self._calibrated else 1,
        )


@lru_cache(maxsize=4)
def _draw_states(topics: int, draws: int, seed: int, harmed: int) -> tuple[np.ndarray, np.ndarray]:
    """Which topics each draw swaps and harms, ``(draws, topics)`` booleans (module docstring), read-only; shared
    by every gate with the same topics, draws, seed and harm (the gates of one evaluation)."""
    rng = np.random.default_rng([seed, DRAWS_STREAM])
    swapped = np.empty((draws, topics), dtype=bool)
    hurt = np.full((draws, topics), harmed >= topics)
    block = max(1, _BLOCK_CELLS // (2 * topics))
    for first in range(0, draws, block):
        keys = rng.random((min(block, draws - first), 2, topics))
        swapped[first : first + len(keys)] = keys[:, 0] < 0.5
        if harmed < topics:
            chosen = np.argsort(keys[:, 1], axis=1, kind="stable")[:, :harmed]
            np.put_along_axis(hurt[first : first + len(keys)], chosen, True, axis=1)
    swapped.flags.writeable = False
    hurt.flags.writeable = False
    return swapped, hurt


def _state_terms(
    form: LinearSums,
    states: np.ndarray,
    positions: Sequence[int],
    reference: int | None,
    settings: AnalysisSettings,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The per-topic terms of the four states, ``(4, q, n)``, about the observed matrix's centre; ``None`` where
    the form does not apply (grouping)."""
    made = form.terms(states[0], positions, reference, settings, None)
    if made is None:
        return None
    first, centre = made
    per_state = [first]
    for state in states[1:]:
        other = form.terms(state, positions, reference, settings, centre)
        if other is None:
            return None
        per_state.append(other[0])
    return np.stack(per_state), centre


def _state_sums(per_topic: np.ndarray, swapped: np.ndarray, harmed: np.ndarray) -> np.ndarray:
    """Each draw's sums ``sum_j f[state_j, :, j]``: the observed terms' sums plus the swaps, the harms and both
    times each state's change (``f1 - f0``, ``f2 - f0``, ``f3 - f2 - f1 + f0``); a harm on every topic folds
    the last two into the first, one product."""
    f0, f1, f2, f3 = per_topic
    s = swapped.astype(np.float64)
    if harmed.all():
        return f2.sum(axis=1) + s @ (f3 - f2).T
    h = harmed.astype(np.float64)
    return f0.sum(axis=1) + s @ (f1 - f0).T + h @ (f2 - f0).T + (s * h) @ (f3 - f2 - f1 + f0).T


def _sum_moments(per_topic: np.ndarray, harmed: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact mean and covariance of a draw's sums ``sum_j f[state_j, :, j]`` (module docstring).

    Topic ``j`` is swapped with probability 1/2, independently; a set of ``harmed`` of the ``n`` topics is
    harmed, so a topic is harmed with probability ``p = harmed / n`` and two with ``harmed (harmed - 1) /
    (n (n - 1))``. With ``b_j(s) = f[s + 2] - f[s]`` the harm's change, the terms of different topics covary
    only through the harm set: ``c b_i b_j'`` with ``b`` averaged over ``s`` and ``c`` the harms' covariance.
    """
    f0, f1, f2, f3 = per_topic
    topics = f0.shape[1]
    p = harmed / topics
    weights = ((1 - p) / 2, (1 - p) / 2, p / 2, p / 2)
    mean_per_topic = sum(weight * f for weight, f in zip(weights, per_topic))  # (q, n)
    second = sum(weight * (f @ f.T) for weight, f in zip(weights, per_topic))
    covariance = second - mean_per_topic @ mean_per_topic.T
    if 0 < harmed < topics:
        b = ((f2 - f0) + (f3 - f1)) / 2  # (q, n): the harm's change, averaged over the swap
        together = harmed * (harmed - 1) / (topics * (topics - 1)) - p * p
        total = b.sum(axis=1)
        covariance = covariance + together * (np.outer(total, total) - b @ b.T)
    return mean_per_topic.sum(axis=1), covariance


def _resampled_moments(
    per_topic: np.ndarray, share: float, topics: int, swap: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """The mean and covariance of the sums ``sum_j f[state_j, :, j]`` over ``topics`` topics resampled with replacement
    from the observed ones, each swapped with probability ``swap`` and harmed with probability ``share``,
    independently (the per-resampled-topic moments times ``topics``)."""
    weights = ((1 - share) * (1 - swap), (1 - share) * swap, share * (1 - swap), share * swap)
    observed = per_topic.shape[2]
    mean = sum(weight * f.mean(axis=1) for weight, f in zip(weights, per_topic))
    second = sum(weight * (f @ f.T) / observed for weight, f in zip(weights, per_topic))
    return topics * mean, topics * (second - np.outer(mean, mean))


def _root(covariance: np.ndarray) -> np.ndarray:
    """A matrix ``A`` with ``A A' = covariance`` (symmetric square root; rounding below 0 clipped)."""
    values, vectors = np.linalg.eigh((covariance + covariance.T) / 2)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


# --- the mean's closed form -----------------------------------------------------------------------------------


def _mean_moments(
    candidate: np.ndarray, reference: np.ndarray, delta: float, model: str, minimum: float, topics: int | None
) -> tuple[float, float, float]:
    """A draw's difference of means: its mean, its standard deviation, and the root mean square of the draw's
    per-topic differences (what the draw's own sign-flip null spreads by), expected over the draws.

    Topic ``j`` contributes ``t_j = d_j - h_j g_j(0)`` unswapped and ``-d_j - h_j g_j(1)`` swapped, with ``d =
    candidate - reference`` and ``g_j(s)`` the drop it takes (clipped at ``minimum``); the harm ``h_j`` is 1
    (``uniform``) or falls on a fixed-size random set (``few``). With ``topics`` given, topics are resampled with
    replacement to that size instead (each independently harmed with probability 10% under ``few``): the per-topic
    moments are then those of a topic drawn from the observed ones.
    """
    d = candidate - reference
    n = d.size
    g0 = np.where(candidate > minimum, np.minimum(candidate - minimum, delta), 0.0)
    g1 = np.where(reference > minimum, np.minimum(reference - minimum, delta), 0.0)
    size = n if topics is None else topics
    p = harmed_topics(size, model) / size
    # t(s=0) = d - h g0, t(s=1) = -d - h g1, s ~ Bernoulli(1/2), h ~ Bernoulli(p) (marginally)
    first = -p * (g0 + g1) / 2
    second = ((d * d - 2 * p * d * g0 + p * g0 * g0) + (d * d + 2 * p * d * g1 + p * g1 * g1)) / 2
    if topics is None:
        variance = float((second - first**2).sum())
        harmed = harmed_topics(n, model)
        if 0 < harmed < n:
            together = harmed * (harmed - 1) / (n * (n - 1)) - p * p
            spread = (g0 + g1) / 2
            variance += together * float(spread.sum() ** 2 - (spread**2).sum())
        return float(first.sum()) / n, math.sqrt(max(variance, 0.0)) / n, math.sqrt(float(second.mean()))
    mean = float(first.mean())
    return mean, math.sqrt(max(float(second.mean()) - mean**2, 0.0) / topics), math.sqrt(float(second.mean()))


def mean_limit(crossings: Sequence[Crossing], rms: float, topics: int, observed: int | None = None) -> float:
    """The lowest of a mean gate's lower limits on the difference of means, for a draw whose per-topic differences
    have root mean square ``rms`` on ``topics`` topics (docs/mathematics.md §9 "Check").

    A calibrated limit is recalibrated on the draw: the sign-flip null of its differences has spread ``rms /
    sqrt(n)`` (rms, not sd: the swap null is centred on no change), so its limit at the level ``a`` it holds is
    ``-z_(1-a) rms / sqrt(n)``. A bound stays where it is; a noise-aware one moves by its reach scaled by ``sqrt(n0
    / n)`` when the topics differ from the ``observed`` ``n0``. The gate fails only past every limit.
    """
    limits = []
    for crossing in crossings:
        if crossing.kind == "calibrated":
            level = crossing.level if crossing.level is not None and crossing.level > 0 else None
            limits.append(-math.inf if level is None else -float(ndtri(1 - level)) * rms / math.sqrt(topics))
        elif crossing.kind == "noise" and observed is not None:
            limits.append(crossing.limit + crossing.reach * (1 - math.sqrt(observed / topics)))
        else:
            limits.append(crossing.limit)
    return min(limits)


def mean_power(
    candidate: np.ndarray,
    reference: np.ndarray,
    delta: float,
    crossings: Sequence[Crossing],
    model: str = UNIFORM,
    minimum: float = 0.0,
    *,
    topics: int | None = None,
) -> float:
    """The power of a mean gate's lower limits on the difference of means at a drop of ``delta`` (docs/mathematics.md
    §9 "Check"): normal approximation with the exact mean and variance of a draw's difference of means
    (:func:`_mean_moments`), against each draw's limits (:func:`mean_limit`: a calibrated one recalibrated on the
    draw's own differences). With ``topics``, on topics resampled to that size.
    """
    mean, sd, rms = _mean_moments(candidate, reference, delta, model, minimum, topics)
    size = candidate.size if topics is None else topics
    limit = mean_limit(crossings, rms, size, candidate.size)
    if sd == 0:
        return float(mean < limit - _TOLERANCE * max(1.0, abs(limit)))
    return float(ndtr((limit - mean) / sd))


def mean_detectable(
    candidate: np.ndarray,
    reference: np.ndarray,
    crossings: Sequence[Crossing],
    model: str = UNIFORM,
    level: float = TARGET_POWER,
    minimum: float = 0.0,
) -> float | None:
    """The mean gate's MDE by the closed form of :func:`mean_power` (bisection on it); ``None`` when no drop reaches
    ``level``. Without a topic within the MDE of ``minimum``, for a calibrated limit alone, this is
    :func:`closed_form_mde` (docs/mathematics.md §9 "Check")."""
    largest = float(max(candidate.max(), reference.max()) - minimum)
    if mean_power(candidate, reference, largest, crossings, model, minimum) < level:
        return None
    low, high = 0.0, largest
    while high - low > 1e-6 * max(high, 1e-12):
        middle = (low + high) / 2
        if mean_power(candidate, reference, middle, crossings, model, minimum) >= level:
            high = middle
        else:
            low = middle
    return high


def closed_form_mde(differences: np.ndarray, false_alarm: float, level: float = TARGET_POWER) -> float:
    """docs/mathematics.md §9's check, a drop on every topic and nothing clipped, for a mean gate whose limit is
    calibrated at level ``a``: a draw's differences are ``+-d_j - delta``, their mean ``~ N(-delta, m2 / n)`` with
    ``m2 = mean(d**2)``, and its limit recalibrated on them ``-z_(1-a) sqrt((m2 + delta**2) / n)`` (their root mean
    square); the MDE solves ``delta - z_(1-a) sqrt((m2 + delta**2) / n) = z_level sqrt(m2 / n)``, so with
    ``s = sqrt(m2 / n)`` and ``u = z_(1-a) / sqrt(n)``:

        delta = (z_level s + u sqrt(z_level**2 s**2 + (1 - u**2) m2)) / (1 - u**2)

    With the limit held at the observed pair's it would be ``(z_(1-a) + z_level) sqrt(m2 / n)``.
    """
    d = np.asarray(differences, dtype=np.float64)
    m2 = float(np.mean(d * d))
    n = d.size
    s, u, z = math.sqrt(m2 / n), float(ndtri(1 - false_alarm)) / math.sqrt(n), float(ndtri(level))
    return (z * s + u * math.sqrt(z * z * s * s + (1 - u * u) * m2)) / (1 - u * u)


def mean_topics_needed(
    candidate: np.ndarray,
    reference: np.ndarray,
    drop: float,
    crossings: Sequence[Crossing],
    model: str = UNIFORM,
    level: float = TARGET_POWER,
    minimum: float = 0.0,
) -> int | None:
    """The topics a mean gate needs to catch ``drop`` with power ``level``: the closed form of :func:`mean_power` on
    topics resampled to size ``n`` (docs/mathematics.md §9 "Topics needed"), each limit placed again at ``n``
    (:func:`mean_limit`); the smallest such ``n`` by bisection. ``None`` when no number of topics gets there (a bound
    at or past the drop).
    """

    def reaches(topics: int) -> bool:
        return mean_power(candidate, reference, drop, crossings, model, minimum, topics=topics) >= level

    most = min(_MOST_TOPICS, _MOST_TOPICS_FACTOR * candidate.size)
    if not reaches(most):
        return None
    return _smallest_reaching(reaches, 1, most)


def _smallest_reaching(reaches: Callable[[int], bool], low: int, high: int, within: float = 0.0) -> int:
    """The smallest number of topics in ``(low, high]`` that ``reaches`` the power asked for, by bisection, given
    that ``high`` reaches it and ``low`` does not (power grows with the topics): exact, or within a share ``within``
    of the answer."""
    while high - low > max(1, within * high):
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high
