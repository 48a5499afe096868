"""The statistic catalogue: one declarative entry per statistic a gate can bound, in :data:`STATISTICS`.

An entry says everything about its statistic (direction, how to compute it for every system at once,
its sufficient rows, its per-topic contributions, its table column, its plain-language sentence);
every list the code and the reports use (:data:`SYSTEM_STATISTICS`, :data:`PROMISED_KEYS`,
:data:`TABLE_COLUMNS`, :data:`PLOT_SERIES`, :func:`docs_table`) is derived from it, so adding a
statistic is one entry (docs/architecture.md). The gate layer never calls a family module directly:
an evaluation computes values through :func:`statistic_values`, a gate or the bootstrap through
:meth:`Statistic.compute` on the systems x topics matrix with one :class:`AnalysisSettings`. The
bias-variance family (``bias2`` ... ``gap_mse``) applies the settings'
normalisation and grouping through :mod:`pytest_bvtest.stats.biasvar`; ``mean``, the risk family,
``mve`` and ``gawm`` see the raw scores (docs/mathematics.md §3-6). Directions follow docs/mathematics.md §7.

Each statistic also says how to shrink the matrix for the paired bootstrap
(:func:`pytest_bvtest.stats.inference.paired_bootstrap`): a statistic that depends on the other
systems only through per-topic aggregates (the target ``max``, the ``min`` of max-min
normalisation, the topic totals of ZRisk) is computed exactly on a few rows, the systems of
interest plus those aggregates, because resampling topics resamples the aggregates with them; and,
through its sum form (:mod:`pytest_bvtest.stats.sums`), how a block of swaps or resamples is evaluated
as one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy.special import ndtr

from pytest_bvtest.checks import checked_scores
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import AnalysisSettings, DifficultyGrouping
from pytest_bvtest.stats import sums as topic_sums
from pytest_bvtest.stats.biasvar import (
    BiasVariance,
    GapDecomposition,
    apply_normalization,
    bias_variance,
    bias_variance_analysis,
    gap_decomposition,
    grouped_bias_variance,
    per_topic_target,
    target_constant,
    topic_difficulty,
    variance_samples,
    with_sample_variance,
)
from pytest_bvtest.stats.gawm import gawm, gawm_resampled
from pytest_bvtest.stats.meanvar import mve_inter_topic, normalised_weights, weighted_mean
from pytest_bvtest.stats.risk import (
    ZRiskGeoRisk,
    hurt_topics,
    risk_weighted_deltas,
    robustness_index,
    robustness_loss,
    trisk,
    urisk,
    zrisk_georisk,
    zrisk_georisk_against_target,
)
from pytest_bvtest.stats.simulation import SimulationResult
from pytest_bvtest.stats.sums import SumForm

Compute = Callable[[np.ndarray, int | None, AnalysisSettings], np.ndarray]
TopicTerms = Callable[[np.ndarray, int | None, AnalysisSettings], np.ndarray | None]
SufficientMatrix = Callable[[np.ndarray, Sequence[int], AnalysisSettings], np.ndarray | None]
TopicChange = Callable[[np.ndarray, int, int, AnalysisSettings], np.ndarray | None]


@dataclass(frozen=True)
class Wording:
    """How a report explains a gate on the statistic to someone who never read the paper.

    Attributes
    ----------
    protects:
        What a gate on the statistic protects, a noun phrase (``"consistent quality from query to
        query"``).
    worse:
        What a failure means, a sentence stem completed by ``than in REFERENCE`` or ``than allowed``
        (``"Quality varies more from query to query"``).
    docs:
        The section of the documentation that explains the statistic, relative to ``docs/``.
    """

    protects: str
    worse: str
    docs: str


@dataclass(frozen=True)
class Shared:
    """A computation that several statistics, or a statistic and the reports, read from: done once per matrix.

    Attributes
    ----------
    name:
        Its key in the ``shared`` memo of :func:`statistic_values` (``"bias_variance"``).
    compute:
        ``compute(scores, reference, settings)`` on one ``(m, n)`` matrix.
    """

    name: str
    compute: Callable[[np.ndarray, int | None, AnalysisSettings], Any]

    def of(self, scores: np.ndarray, reference: int | None, settings: AnalysisSettings, memo: dict[str, Any]) -> Any:
        """The computation's result on ``scores``, from ``memo`` when it is there (then stored in it)."""
        if self.name not in memo:
            memo[self.name] = self.compute(scores, reference, settings)
        return memo[self.name]


@dataclass(frozen=True, kw_only=True)
class Statistic:
    """One gateable statistic: everything the code and the reports need to know about it, in one place.

    Attributes
    ----------
    name, label:
        Spec name (``bias2_plus_var``) and table label (``Bias²+Var``).
    higher_is_better:
        The good direction (docs/mathematics.md §7).
    needs_reference:
        True when the value of every system is measured against a reference system's row
        (URisk, TRisk, RI, <Init, R-Loss); ``compute`` then needs the reference index.
    compute:
        ``compute(scores, reference, settings)``: the value of every system, shape
        ``scores.shape[:-1]`` for ``scores`` shaped ``(..., m systems, n topics)``; leading axes
        (bootstrap resamples) are evaluated independently.
    sufficient_matrix:
        ``sufficient_matrix(scores, rows, settings)``: a ``(k, n)`` matrix whose first rows are
        ``scores[rows]`` (distinct indices) and on which ``compute`` gives exactly the same values
        for those rows, also after any resampling of topics; ``None`` when the statistic needs
        every system (GAWM), and the function returns ``None`` under settings where it does (a named
        target system).
    topic_terms:
        ``topic_terms(scores, reference, settings)``: per-topic terms ``(m, n)`` of every system
        that sum over topics to ``compute``'s values; ``None`` when the statistic does not split
        into topic terms, or the function returns ``None`` under settings where it does not.
    topic_change:
        ``topic_change(scores, candidate, reference, settings)``: per-topic shares of
        ``value[candidate] - value[reference]`` for a statistic that has no additive topic terms
        (GeoRisk); ``None`` when :attr:`topic_terms` decides.
    wording:
        The plain-language explanation the reports print for a gate on the statistic.
    summary:
        What it is, one line of the statistics table in ``docs/spec.md`` (:func:`docs_table`).
    uses_topic_weights:
        True when ``settings.topic_weights`` enters the value (they are resampled with the topics).
    against_other_systems:
        True when the value already compares the system with every other system (ZRisk, GeoRisk):
        with ``needs_reference``, the calibration's null is then of the candidate's own value.
    reads_target_constant:
        True when the value is measured against the target constant ``c``, so that the
        ``target_constant`` guard concerns gates on it.
    mean_like:
        True when the value is the average of the per-topic scores, so that a topic's share of the
        change is its raw score difference over ``n``: the reports then show the raw difference only.
    per_system:
        True when every evaluation reports the statistic for every system (``systems[*].NAME`` of the
        JSON report); the gap terms are reported under ``gap`` instead.
    promised:
        True when the JSON report promises the key (``schema.json`` requires it) and the history
        records it.
    column:
        The header of its column in the terminal's and Markdown's per-system table; ``None``: no column.
    plot_marker, plot_color:
        The matplotlib marker and the colour of its series in the bias-variance plots (PNG and HTML);
        ``None``: not plotted.
    shared, from_shared:
        When an evaluation computes the value: read it with ``from_shared`` from the :class:`Shared`
        computation (the bias-variance analysis, GAWM's fixed point, TRisk's test), which it computes
        once for every statistic that reads it. ``None``: the evaluation calls :attr:`compute`.
    p_value:
        Reads the p-value of every system's value from the :attr:`shared` result (TRisk's t-test),
        reported as ``NAME_p``; ``None`` when the statistic has none.
    sums:
        How the swap null and the bootstrap evaluate thousands of draws at once: the statistic as a
        function of sums over topics, one matrix product per block of draws
        (:mod:`pytest_bvtest.stats.sums`). ``None``: they evaluate stacks of swapped or resampled matrices.
    from_simulation:
        For a statistic of the per-topic simulation (docs/mathematics.md §3e): the ``(m, n)`` matrix a gate on it
        reads instead of the scores, from the measure's
        :class:`~pytest_bvtest.stats.simulation.SimulationResult` (each system's per-topic term, whose
        mean over topics is the value, IPM 2022 Eq. 13-14). ``None``: the statistic reads the scores.
    from_variations:
        For a statistic with a form over query variations (MVE, Zuccon et al. CIKM 2016 Sec. 4.1-4.2,
        docs/mathematics.md §5): every system's value from the measure's result over its variations, which an
        evaluation with query variations reports and gates, the noise-aware gate resampling topics with all
        their variations. ``None``: the per-topic matrix decides, with or without variations.
    from_topic_counts:
        For a statistic without a sufficient matrix (GAWM): ``from_topic_counts(scores, counts, settings)``,
        the value of every system for each row of ``counts`` (how often each topic is drawn), so that the
        paired bootstrap evaluates a block of resamples on the original matrix at once. ``None``: the
        bootstrap resamples the (sufficient) matrix itself.
    converged:
        For a statistic found by iterating to a fixed point (GAWM, docs/mathematics.md §6): whether the
        :attr:`shared` result converged. A value that did not is no number to judge: a gate on it fails, as
        on NaN (docs/mathematics.md §7). ``None``: the value is computed in closed form.
    """

    name: str
    label: str
    higher_is_better: bool
    needs_reference: bool = False
    compute: Compute
    sufficient_matrix: SufficientMatrix | None
    topic_terms: TopicTerms | None
    topic_change: TopicChange | None = None
    wording: Wording
    summary: str
    uses_topic_weights: bool = False
    against_other_systems: bool = False
    reads_target_constant: bool = False
    mean_like: bool = False
    per_system: bool = True
    promised: bool = False
    column: str | None = None
    plot_marker: str | None = None
    plot_color: str | None = None
    shared: Shared | None = None
    from_shared: Callable[[Any], np.ndarray] | None = None
    p_value: Callable[[Any], np.ndarray] | None = None
    from_simulation: Callable[[SimulationResult], np.ndarray] | None = None
    from_variations: Callable[[Any], np.ndarray] | None = None
    from_topic_counts: Callable[[np.ndarray, np.ndarray, AnalysisSettings], np.ndarray] | None = None
    converged: Callable[[Any], bool] | None = None
    sums: SumForm | None = None

    def values(
        self, scores: np.ndarray, reference: int | None, settings: AnalysisSettings, memo: dict[str, Any]
    ) -> np.ndarray:
        """The value of every system of one ``(m, n)`` matrix, through :attr:`shared` when it has one."""
        if self.shared is not None and self.from_shared is not None:
            return np.asarray(self.from_shared(self.shared.of(scores, reference, settings, memo)), dtype=float)
        return np.asarray(self.compute(scores, reference, settings), dtype=float)

    def topic_contributions(
        self, scores: np.ndarray, candidate: int, reference: int | None, settings: AnalysisSettings
    ) -> np.ndarray | None:
        """How much each topic moves the candidate's value away from the reference's.

        Parameters
        ----------
        scores:
            ``(m, n)`` score matrix.
        candidate, reference:
            Row indices; ``reference`` may be ``None`` (then the terms of the candidate's own value)
            and must be given when :attr:`needs_reference`.
        settings:
            The evaluation's settings.

        Returns
        -------
        numpy.ndarray or None
            ``(n,)`` terms summing to ``value[candidate] - value[reference]`` (or to
            ``value[candidate]``); ``None`` when the statistic has no per-topic split.
        """
        if self.topic_change is not None and reference is not None:
            return self.topic_change(scores, candidate, reference, settings)
        if self.topic_terms is None:
            return None
        terms = self.topic_terms(scores, reference, settings)
        if terms is None:
            return None
        return terms[candidate] - terms[reference] if reference is not None else terms[candidate].copy()


def _score_matrix(scores: np.ndarray) -> np.ndarray:
    return checked_scores(scores, min_ndim=2)


def _reference_row(x: np.ndarray, reference: int | None) -> np.ndarray:
    if reference is None:
        raise StatisticError(
            "URisk, TRisk, RI, <Init and R-Loss compare each system with a reference system; name the reference"
        )
    return x[..., [reference], :]


# --- sufficient matrices -------------------------------------------------------------------------


def _rows_alone(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray:
    """The systems' own rows suffice: the statistic never looks at another system."""
    return scores[list(rows)]


def _rows_and_extremes(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray | None:
    """Rows plus the per-topic max (the virtual target) and, when normalising, the per-topic min.

    The target, ``c``, both normalisations (including their constant-topic rule) and difficulty
    grouping read the other systems only through these two aggregates. A named target system is read
    by its row index: ``None``, the whole matrix is needed.
    """
    if settings.target_row is not None:
        return None
    if isinstance(settings.grouping, DifficultyGrouping) and settings.grouping.difficulty == "mean":
        # difficulty by the mean over systems reads every system: keep them all, the asked rows first
        return scores[list(rows) + [i for i in range(len(scores)) if i not in rows]]
    extremes = [scores.max(axis=0)] if settings.normalize == "none" else [scores.max(axis=0), scores.min(axis=0)]
    return np.vstack([scores[list(rows)], *extremes])


def reads_others_through_extremes(statistic: Statistic, settings: AnalysisSettings) -> bool:
    """Whether ``statistic`` reads the systems other than the ones asked about only through their per-topic max and
    min, or not at all (its sufficient matrix is :func:`_rows_alone` or :func:`_rows_and_extremes`' rows and
    extremes): then those rows with the others' max and min give the same sufficient matrix, bit for bit (a max or
    a min is exact in any order), however many systems there are."""
    reduce = statistic.sufficient_matrix
    if reduce is _rows_alone:
        return True
    if reduce is _zrisk_sufficient and settings.zrisk_against != "target":
        return False  # the other systems' totals: a sum depends on its order
    if reduce not in (_rows_and_extremes, _zrisk_sufficient):
        return False
    every_row = isinstance(settings.grouping, DifficultyGrouping) and settings.grouping.difficulty == "mean"
    return settings.target_row is None and not every_row


def _rows_and_remaining_total(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray:
    """Rows plus one row holding every other system's per-topic total.

    ZRisk and GeoRisk read the other systems only through the topic totals ``T_j`` and the grand
    total ``N``, which this row preserves. The clip undoes rounding below 0 when the kept rows are
    all there is.
    """
    kept = scores[list(rows)]
    remaining = np.maximum(scores.sum(axis=0) - kept.sum(axis=0), 0.0)
    return np.vstack([kept, remaining])


# --- computations --------------------------------------------------------------------------------


def _mean(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return _score_matrix(scores).mean(axis=-1)


def _mean_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    x = _score_matrix(scores)
    return x / x.shape[-1]


def _weighted_mean(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return weighted_mean(_score_matrix(scores), settings.topic_weights)


def _weighted_mean_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    x = _score_matrix(scores)
    return x * normalised_weights(settings.topic_weights, x.shape[-1], "topic weights")


def _normalized_with_target(x: np.ndarray, settings: AnalysisSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalised scores, their virtual target and ``c``, as ``bias_variance_analysis`` derives them.

    The building blocks broadcast over leading axes, so a stack of resampled matrices is
    evaluated at once; ``c`` gains a trailing axis to broadcast over systems.
    """
    normalized = apply_normalization(x, _topic_normalization(settings), settings.target_row).scores
    target_scores = per_topic_target(normalized, settings.target_row)
    group_ratio = settings.normalize == "group-target-ratio" and settings.grouping is not None
    # the group ratio makes the target 1 on every group: the default c, its mean, is 1
    c = target_constant(np.ones(target_scores.shape) if group_ratio else target_scores, settings.target)
    return normalized, target_scores, np.expand_dims(c, -1)


def _topic_normalization(settings: AnalysisSettings) -> str:
    """The normalisation as the per-topic path applies it: without grouping, the group ratio (CIKM 2014
    Eq. 6) is the per-topic ratio (groups of one topic), which has per-topic terms."""
    if settings.normalize == "group-target-ratio" and settings.grouping is None:
        return "target-ratio"
    return settings.normalize


def _grouped(x: np.ndarray, settings: AnalysisSettings) -> tuple[BiasVariance, GapDecomposition]:
    """Grouped Bias2/Var and gap terms of a matrix or a stack of resampled matrices."""
    normalized, target_scores, c = _normalized_with_target(x, settings)
    return grouped_bias_variance(
        normalized,
        target_scores,
        topic_difficulty(x, settings.grouping, settings.target_row),
        c,
        settings.grouping,
        settings.normalize == "group-target-ratio",
    )


def _family_statistic(gap: bool, term: str) -> Compute:
    """A field of :class:`~pytest_bvtest.stats.biasvar.BiasVariance` (``bias2``, ``var``, ``error``) or,
    with ``gap``, of :class:`~pytest_bvtest.stats.biasvar.GapDecomposition` (``bias``, ``var``, ``mse``),
    under the settings' normalisation, grouping and variance convention."""

    def compute(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
        x = _score_matrix(scores)
        if settings.grouping is not None:
            terms = _grouped(x, settings)[gap]
        else:
            normalized, target_scores, c = _normalized_with_target(x, settings)
            terms = gap_decomposition(normalized, target_scores) if gap else bias_variance(normalized, c)
        if settings.variance == "sample":
            both = (None, terms) if gap else (terms, None)
            terms = with_sample_variance(*both, variance_samples(x.shape[-1], settings.grouping))[gap]
        return getattr(terms, term)

    return compute


def _bias_variance_terms(term: str) -> TopicTerms:
    """Per-topic terms of Bias2, Var or Error against ``c``, on the normalised scores.

    With ``d_j = x_j - c`` and ``mean(d) = mean(x) - c``: Bias2 = mean_j(mean(d) d_j),
    Var = mean_j((x_j - mean(x))^2), Error = mean_j(d_j^2); each term is divided by ``n`` so the
    terms sum to the value. With topic grouping a topic only acts through its group: ``None``.
    """

    def terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray | None:
        if settings.grouping is not None:
            return None
        normalized, _, c = _normalized_with_target(_score_matrix(scores), settings)
        n = normalized.shape[-1]
        means = normalized.mean(axis=-1, keepdims=True)
        # sample variance: Var scaled by n / (n - 1), and Error = Bias2 + Var gains the difference
        extra = 1.0 / (n - 1) if settings.variance == "sample" and n > 1 else 0.0
        if term == "bias2":
            return (means - c) * (normalized - c) / n
        if term == "var":
            return (normalized - means) ** 2 / n * (1.0 + extra)
        return (normalized - c) ** 2 / n + extra * (normalized - means) ** 2 / n

    return terms


def _bias_variance_change(term: str) -> TopicChange:
    """Each topic's share of the change of Bias2, Var or Error from the reference to the candidate, ``0`` on a topic
    whose score did not change (the terms' differences, :func:`_bias_variance_terms`, blame every topic when the
    mean moves, the unchanged ones too).

    With ``d_j = x_j - y_j`` (candidate minus reference, normalised scores) and each system's deviations from its
    mean ``a_j = x_j - mean(x)``, ``b_j = y_j - mean(y)``: ``Var(x) - Var(y) = mean_j((a_j - b_j)(a_j + b_j)) =
    mean_j(d_j (a_j + b_j))``, since ``a_j - b_j = d_j - mean(d)`` and the ``a_j + b_j`` sum to 0;
    ``Bias2(x) - Bias2(y) = mean_j(d_j (mean(x) + mean(y) - 2c))``; ``Error(x) - Error(y) = mean_j(d_j (x_j + y_j -
    2c))``. The sample variance scales Var's share, and adds it to Error's, by ``n / (n - 1)``. With topic grouping a
    topic only acts through its group: ``None``.
    """

    def change(scores: np.ndarray, candidate: int, reference: int, settings: AnalysisSettings) -> np.ndarray | None:
        if settings.grouping is not None:
            return None
        normalized, _, c = _normalized_with_target(_score_matrix(scores), settings)
        x, y, target = normalized[candidate], normalized[reference], float(np.squeeze(c))
        n = x.shape[-1]
        d = x - y
        extra = 1.0 / (n - 1) if settings.variance == "sample" and n > 1 else 0.0
        var = d * ((x - x.mean()) + (y - y.mean())) / n
        if term == "bias2":
            return d * (x.mean() + y.mean() - 2.0 * target) / n
        if term == "var":
            return var * (1.0 + extra)
        return d * (x + y - 2.0 * target) / n + extra * var

    return change


def _gap_terms(term: str) -> TopicTerms:
    """Per-topic terms of the gap ``rho = x_T - x``: ``rho_j``, ``(rho_j - mean(rho))^2``, ``rho_j^2``, over ``n``."""

    def terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray | None:
        if settings.grouping is not None:
            return None
        normalized, target_scores, _ = _normalized_with_target(_score_matrix(scores), settings)
        gap = target_scores[..., np.newaxis, :] - normalized
        n = gap.shape[-1]
        extra = 1.0 / (n - 1) if settings.variance == "sample" and n > 1 else 0.0
        spread = (gap - gap.mean(axis=-1, keepdims=True)) ** 2 / n
        if term == "bias":
            return gap / n
        if term == "var":
            return spread * (1.0 + extra)
        return gap**2 / n + extra * spread

    return terms


def _urisk(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    x = _score_matrix(scores)
    return np.asarray(urisk(x, _reference_row(x, reference), settings.risk_alpha))


def _urisk_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """The risk-weighted per-topic deltas over ``n``: their sum is URisk."""
    x = _score_matrix(scores)
    return risk_weighted_deltas(x, _reference_row(x, reference), settings.risk_alpha) / x.shape[-1]


def _trisk(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    x = _score_matrix(scores)
    return np.asarray(trisk(x, _reference_row(x, reference), settings.risk_alpha).t)


def _trisk_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """URisk's deltas scaled by TRisk / sum(delta), i.e. divided by ``n`` times the standard error.

    The scale is TRisk's own, so its PIN carries over: a zero sum means URisk and TRisk are 0, and so
    are the terms; with no spread TRisk is +/-inf and so is every topic's (equal, non-zero) term.
    """
    x = _score_matrix(scores)
    deltas = risk_weighted_deltas(x, _reference_row(x, reference), settings.risk_alpha)
    total = deltas.sum(axis=-1, keepdims=True)
    t = _trisk(x, reference, settings)[..., np.newaxis]
    scale = np.divide(t, total, out=np.zeros_like(total), where=total != 0)
    return np.multiply(deltas, scale, out=np.zeros_like(deltas), where=deltas != 0)


def _against_reference(function: Callable[[np.ndarray, np.ndarray], np.ndarray | float]) -> Compute:
    """A per-topic comparison with the reference's row (RI, <Init, R-Loss)."""

    def compute(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
        x = _score_matrix(scores)
        return np.asarray(function(x, _reference_row(x, reference)))

    return compute


def _robustness_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """``sign(x_j - b_j) / n``: RI topic by topic."""
    x = _score_matrix(scores)
    return np.sign(x - _reference_row(x, reference)) / x.shape[-1]


def _hurt_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """1 on each topic the system loses against the reference: <Init topic by topic."""
    x = _score_matrix(scores)
    return (x < _reference_row(x, reference)).astype(np.float64)


def _loss_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """``max(0, b_j - x_j) / n``: R-Loss topic by topic."""
    x = _score_matrix(scores)
    return np.maximum(_reference_row(x, reference) - x, 0.0) / x.shape[-1]


def _zrisk_family(scores: np.ndarray, settings: AnalysisSettings) -> ZRiskGeoRisk:
    """ZRisk/GeoRisk against every other system, or against the virtual target alone (``zrisk_against``)."""
    if settings.zrisk_against == "target":
        return zrisk_georisk_against_target(_score_matrix(scores), settings.risk_alpha)
    return zrisk_georisk(_score_matrix(scores), settings.risk_alpha)


def _zrisk(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return _zrisk_family(scores, settings).zrisk


def _zrisk_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """The per-topic z-scores, shortfalls weighted ``1 + alpha``: their sum is ZRisk."""
    return zrisk_georisk(_score_matrix(scores), settings.risk_alpha).topic_z


def _georisk(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return _zrisk_family(scores, settings).georisk


def _zrisk_sufficient(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray | None:
    """Against the target the other systems act only through the per-topic max; otherwise through the totals."""
    if settings.zrisk_against == "target":
        return _rows_and_extremes(scores, rows, settings)
    return _rows_and_remaining_total(scores, rows, settings)


def _georisk_change(scores: np.ndarray, candidate: int, reference: int, settings: AnalysisSettings) -> np.ndarray:
    """Each topic's share of ``GeoRisk[candidate] - GeoRisk[reference]``; the shares sum to the change.

    GeoRisk is the product ``f(S) g(Z)`` of ``f(S) = sqrt(S / c)`` (the system's total score) and
    ``g(Z) = sqrt(Phi(Z / c))`` (its ZRisk). The change splits exactly into the part of each factor
    by the Shapley value of the two: ``(f_1 - f_0)(g_0 + g_1) / 2`` and ``(g_1 - g_0)(f_0 + f_1) / 2``;
    each part is shared among topics in proportion to the topic's part of the change of ``S``
    (``x_cj - x_rj``) and of ``Z`` (the difference of the weighted z-scores).
    """
    x = _score_matrix(scores)
    risk = zrisk_georisk(x, settings.risk_alpha)
    n = x.shape[-1]
    f = np.sqrt(x.sum(axis=-1) / n)
    g = np.sqrt(ndtr(risk.zrisk / n))
    score_change = x[candidate] - x[reference]
    z_change = risk.topic_z[candidate] - risk.topic_z[reference]
    f_part = (f[candidate] - f[reference]) * (g[candidate] + g[reference]) / 2
    g_part = (g[candidate] - g[reference]) * (f[candidate] + f[reference]) / 2
    return _shared(f_part, score_change) + _shared(g_part, z_change)


def _shared(total: float, parts: np.ndarray) -> np.ndarray:
    """``total`` split over topics in proportion to ``parts`` (zeros when the parts sum to 0)."""
    whole = parts.sum()
    return parts * (total / whole) if whole != 0 else np.zeros_like(parts)


def _mve(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return np.asarray(
        mve_inter_topic(
            _score_matrix(scores), settings.mve.alpha, settings.topic_weights, variance=settings.variance
        ).value
    )


def _mve_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """``O_t = w_t (x_t - alpha (x_t - mu)^2)``: the value ``mu - alpha sigma2`` summed topic by topic."""
    return mve_inter_topic(
        _score_matrix(scores), settings.mve.alpha, settings.topic_weights, variance=settings.variance
    ).topic_value


def _gawm(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return gawm(_score_matrix(scores), q=settings.gawm_q).system_performance


def _gawm_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """``W_t[j] P[i, j] / sum W_t`` at the fixed point: E_s as a sum over topics."""
    x = _score_matrix(scores)
    topic_weights = gawm(x, q=settings.gawm_q).topic_weights
    return x * (topic_weights / topic_weights.sum(axis=-1, keepdims=True))[..., np.newaxis, :]


def _statistics(*statistics: Statistic) -> Mapping[str, Statistic]:
    return MappingProxyType({statistic.name: statistic for statistic in statistics})


BIAS_VARIANCE = Shared(
    "bias_variance",
    lambda scores, reference, settings: bias_variance_analysis(
        scores,
        target=settings.target,
        normalize=settings.normalize,
        grouping=settings.grouping,
        variance=settings.variance,
        target_system=settings.target_row,
    ),
)
"""The bias-variance analysis (docs/mathematics.md §2-3d): grouping is its costly part, so it runs once."""

GAWM_FIXED_POINT = Shared("gawm", lambda scores, reference, settings: gawm(_score_matrix(scores), q=settings.gawm_q))
"""GAWM's fixed point (docs/mathematics.md §6): E_s, and the topic weights the reports show."""

TRISK_TEST = Shared(
    "trisk",
    lambda scores, reference, settings: trisk(
        _score_matrix(scores), _reference_row(_score_matrix(scores), reference), settings.risk_alpha
    ),
)
"""TRisk's t-test against the reference: the value and its p-value."""

_BIAS_VARIANCE_DOCS = "concepts.md#bias-and-variance"
_SIMULATION_DOCS = "mathematics.md#3e-per-topic-bias-variance-over-simulated-collections"
_GAP_DOCS = "concepts.md#the-gap-decomposition-where-the-variance-comes-from"
_RISK_DOCS = "concepts.md#risk-harm-compared-with-a-baseline"

STATISTICS: Mapping[str, Statistic] = _statistics(
    Statistic(
        name="mean",
        label="Mean",
        higher_is_better=True,
        compute=_mean,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.MEAN,
        topic_terms=_mean_terms,
        mean_like=True,
        promised=True,
        column="mean",
        summary="Mean over topics (missing topics count 0).",
        wording=Wording(
            "the average quality over all queries",
            "Average quality over the queries is lower",
            "concepts.md#which-gate-for-which-worry",
        ),
    ),
    Statistic(
        name="weighted_mean",
        label="Weighted mean",
        higher_is_better=True,
        compute=_weighted_mean,
        sufficient_matrix=_rows_alone,
        topic_terms=_weighted_mean_terms,
        uses_topic_weights=True,
        per_system=False,
        summary="Mean over topics weighted by their traffic (the topic file's weight column, scaled to sum 1; "
        "within a segment, its topics' weights). Needs topic weights.",
        wording=Wording(
            "the average quality weighted by how often each query is asked",
            "Traffic-weighted average quality is lower",
            "spec.md#topics",
        ),
    ),
    Statistic(
        name="bias2",
        label="Bias²",
        higher_is_better=False,
        compute=_family_statistic(False, "bias2"),
        sufficient_matrix=_rows_and_extremes,
        sums=topic_sums.bias_variance_sums("bias2"),
        topic_terms=_bias_variance_terms("bias2"),
        topic_change=_bias_variance_change("bias2"),
        shared=BIAS_VARIANCE,
        from_shared=lambda analysis: analysis.bias_variance.bias2,
        promised=True,
        column="Bias²",
        plot_marker="o",
        reads_target_constant=True,
        plot_color="#1f77b4",
        summary="`(mean - c)²`: how far the mean is from the target.",
        wording=Wording(
            "average quality close to the best achievable (the virtual target)",
            "Average quality sits further below the best achievable",
            _BIAS_VARIANCE_DOCS,
        ),
    ),
    Statistic(
        name="var",
        label="Var",
        higher_is_better=False,
        compute=_family_statistic(False, "var"),
        sufficient_matrix=_rows_and_extremes,
        sums=topic_sums.bias_variance_sums("var"),
        topic_terms=_bias_variance_terms("var"),
        topic_change=_bias_variance_change("var"),
        shared=BIAS_VARIANCE,
        from_shared=lambda analysis: analysis.bias_variance.var,
        promised=True,
        column="Var",
        plot_marker="s",
        plot_color="#ff7f0e",
        summary="Population variance over topics (or topic groups).",
        wording=Wording(
            "consistent quality from query to query", "Quality varies more from query to query", _BIAS_VARIANCE_DOCS
        ),
    ),
    Statistic(
        name="bias2_plus_var",
        label="Bias²+Var",
        higher_is_better=False,
        compute=_family_statistic(False, "error"),
        sufficient_matrix=_rows_and_extremes,
        sums=topic_sums.bias_variance_sums("error"),
        topic_terms=_bias_variance_terms("error"),
        topic_change=_bias_variance_change("error"),
        shared=BIAS_VARIANCE,
        from_shared=lambda analysis: analysis.bias_variance.error,
        promised=True,
        column="Bias²+Var",
        plot_marker="^",
        reads_target_constant=True,
        plot_color="#2ca02c",
        summary="`mean((x - c)²) = Bias² + Var`.",
        wording=Wording(
            # a sum: a pass does not mean both hold (a much worse but steadier system passes), so say so
            "closeness to the best achievable and consistency from query to query taken together, so a gain in "
            "one can hide a loss in the other",
            "Quality varies more from query to query or sits further below the best achievable",
            _BIAS_VARIANCE_DOCS,
        ),
    ),
    Statistic(
        name="gap_bias",
        label="Bias(ρ)",
        higher_is_better=False,
        compute=_family_statistic(True, "bias"),
        sufficient_matrix=_rows_and_extremes,
        sums=topic_sums.gap_sums("bias"),
        topic_terms=_gap_terms("bias"),
        shared=BIAS_VARIANCE,
        from_shared=lambda analysis: analysis.gap.bias,
        per_system=False,
        summary="Mean gap to the virtual target per topic, `ρ = x_T - x`.",
        wording=Wording(
            "a small gap to the best system on each query", "The gap to the best system per query is wider", _GAP_DOCS
        ),
    ),
    Statistic(
        name="gap_var",
        label="Var(ρ)",
        higher_is_better=False,
        compute=_family_statistic(True, "var"),
        sufficient_matrix=_rows_and_extremes,
        sums=topic_sums.gap_sums("var"),
        topic_terms=_gap_terms("var"),
        shared=BIAS_VARIANCE,
        from_shared=lambda analysis: analysis.gap.var,
        per_system=False,
        summary="Variance of that gap.",
        wording=Wording(
            "an even gap to the best system across queries, which queries that others solve and we fail make uneven",
            "The gap to the best system varies more from query to query",
            _GAP_DOCS,
        ),
    ),
    Statistic(
        name="gap_mse",
        label="Bias(ρ)²+Var(ρ)",
        higher_is_better=False,
        compute=_family_statistic(True, "mse"),
        sufficient_matrix=_rows_and_extremes,
        sums=topic_sums.gap_sums("mse"),
        topic_terms=_gap_terms("mse"),
        shared=BIAS_VARIANCE,
        from_shared=lambda analysis: analysis.gap.mse,
        per_system=False,
        summary="`mean(ρ²)`.",
        wording=Wording(
            "a small and even gap to the best system taken together, so a gain in one can hide a loss in the other",
            "The gap to the best system is wider or less even across queries",
            _GAP_DOCS,
        ),
    ),
    Statistic(
        name="urisk",
        label="URisk",
        higher_is_better=True,
        needs_reference=True,
        compute=_urisk,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.URISK,
        topic_terms=_urisk_terms,
        promised=True,
        column="URisk",
        summary="Mean difference to the reference, losses weighted `1 + alpha`. Needs a reference.",
        wording=Wording(
            "a risk-weighted change against the reference (losses counting extra) within the limit",
            "The risk-weighted change against the reference (losses count extra) is lower",
            _RISK_DOCS,
        ),
    ),
    Statistic(
        name="trisk",
        label="TRisk",
        higher_is_better=True,
        needs_reference=True,
        compute=_trisk,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.TRISK,
        topic_terms=_trisk_terms,
        shared=TRISK_TEST,
        from_shared=lambda test: test.t,
        p_value=lambda test: test.p,
        promised=True,
        summary="URisk divided by its standard error; below -2 = significant harm. Needs a reference.",
        wording=Wording(
            # TRisk below -2 reads as a significant loss (at alpha 0): a pass past -2 must not say "no significant loss"
            "losses on single queries against the reference no more significant than allowed",
            "Losses on single queries against the reference are more significant",
            _RISK_DOCS,
        ),
    ),
    Statistic(
        name="robustness_index",
        label="RI",
        higher_is_better=True,
        needs_reference=True,
        compute=_against_reference(robustness_index),
        sufficient_matrix=_rows_alone,
        sums=topic_sums.ROBUSTNESS_INDEX,
        topic_terms=_robustness_terms,
        summary="Sakai's robustness index: (topics won - topics lost) / topics, against the reference. "
        "Needs a reference.",
        wording=Wording(
            # a pass below 0 has more queries lost than won: the sentence states the share, not a win
            "the share of queries won minus the share lost against the reference within the limit",
            "The share of queries won minus the share lost against the reference is lower",
            _RISK_DOCS,
        ),
    ),
    Statistic(
        name="hurt_topics",
        label="<Init",
        higher_is_better=False,
        needs_reference=True,
        compute=_against_reference(hurt_topics),
        sufficient_matrix=_rows_alone,
        sums=topic_sums.HURT_TOPICS,
        topic_terms=_hurt_terms,
        summary="How many topics score below the reference (SIGIR 2013's <Init). Needs a reference.",
        wording=Wording(
            "few queries worse than in the reference", "More queries are worse than in the reference", _RISK_DOCS
        ),
    ),
    Statistic(
        name="r_loss",
        label="R-Loss",
        higher_is_better=False,
        needs_reference=True,
        compute=_against_reference(robustness_loss),
        sufficient_matrix=_rows_alone,
        sums=topic_sums.ROBUSTNESS_LOSS,
        topic_terms=_loss_terms,
        summary="Effectiveness lost on the hurt topics, averaged over all topics: `mean(max(0, ref - x))`. "
        "Needs a reference.",
        wording=Wording(
            "little quality lost on the queries that got worse than in the reference",
            "More quality is lost on the queries that got worse than in the reference",
            _RISK_DOCS,
        ),
    ),
    Statistic(
        name="zrisk",
        label="ZRisk",
        higher_is_better=True,
        compute=_zrisk,
        sufficient_matrix=_zrisk_sufficient,
        sums=topic_sums.ZRISK,
        against_other_systems=True,
        topic_terms=_zrisk_terms,
        promised=True,
        summary="Risk against all other systems at once (needs non-negative scores).",
        wording=Wording(
            "shortfalls against what the other systems lead one to expect within the limit",
            "More queries fall short of what the other systems lead one to expect",
            _RISK_DOCS,
        ),
    ),
    Statistic(
        name="georisk",
        label="GeoRisk",
        higher_is_better=True,
        compute=_georisk,
        sufficient_matrix=_zrisk_sufficient,
        sums=topic_sums.GEORISK,
        against_other_systems=True,
        topic_terms=None,
        topic_change=_georisk_change,
        promised=True,
        column="GeoRisk",
        summary="Combines the mean and ZRisk (needs non-negative scores).",
        wording=Wording(
            "high quality and few surprising shortfalls against the other systems combined, so one can make up for the "
            "other",
            "Quality adjusted for shortfalls against the other systems is lower",
            _RISK_DOCS,
        ),
    ),
    Statistic(
        name="mve",
        label="MVE",
        higher_is_better=True,
        compute=_mve,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.MVE,
        topic_terms=_mve_terms,
        uses_topic_weights=True,
        promised=True,
        column="MVE",
        from_variations=lambda result: result.value,
        summary="Mean-variance value `mu - alpha * sigma²`.",
        wording=Wording(
            "quality net of its spread across queries (mean minus alpha times the variance)",
            "Quality net of its spread across queries is lower",
            "concepts.md#mean-variance-and-query-variations",
        ),
    ),
    Statistic(
        name="gawm",
        label="GAWM E_s",
        higher_is_better=True,
        compute=_gawm,
        sufficient_matrix=None,
        topic_terms=_gawm_terms,
        shared=GAWM_FIXED_POINT,
        from_shared=lambda result: result.system_performance,
        from_topic_counts=lambda scores, counts, settings: gawm_resampled(scores, counts, q=settings.gawm_q),
        converged=lambda result: bool(result.converged),
        promised=True,
        summary="Mean weighted by how well each topic separates systems.",
        wording=Wording(
            "quality on the queries that tell systems apart",
            "Quality on the queries that tell systems apart is lower",
            "concepts.md#gawm-a-mean-that-ignores-topics-that-discern-nothing",
        ),
    ),
    Statistic(
        name="sim_bias2",
        label="sim Bias²",
        higher_is_better=False,
        compute=_mean,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.MEAN,
        topic_terms=_mean_terms,
        mean_like=True,
        per_system=False,
        from_simulation=lambda result: result.topic_bias2,
        summary="Per-topic Bias² over simulated collections, averaged over topics (IPM 2022 Eq. 12-13). Needs "
        "`analysis.simulation`.",
        wording=Wording(
            "per-query quality close to the best any system reaches on the simulated collections",
            "Per-query quality on the simulated collections sits further below the best",
            _SIMULATION_DOCS,
        ),
    ),
    Statistic(
        name="sim_var",
        label="sim Var",
        higher_is_better=False,
        compute=_mean,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.MEAN,
        topic_terms=_mean_terms,
        mean_like=True,
        per_system=False,
        from_simulation=lambda result: result.topic_var,
        summary="Per-topic variance over simulated collections, averaged over topics (IPM 2022 Eq. 12, 14). Needs "
        "`analysis.simulation`.",
        wording=Wording(
            "quality on each query that is stable when the collection changes",
            "Quality on each query changes more with the collection",
            _SIMULATION_DOCS,
        ),
    ),
    Statistic(
        name="sim_bias2_plus_var",
        label="sim Bias²+Var",
        higher_is_better=False,
        compute=_mean,
        sufficient_matrix=_rows_alone,
        sums=topic_sums.MEAN,
        topic_terms=_mean_terms,
        mean_like=True,
        per_system=False,
        from_simulation=lambda result: result.topic_bias2 + result.topic_var,
        summary="Sum of the two: the per-topic squared error over simulated collections. Needs `analysis.simulation`.",
        wording=Wording(
            "per-query closeness to the best and stability when the collection changes taken together, so a gain in "
            "one can hide a loss in the other",
            "Per-query quality on the simulated collections is further below the best or less stable",
            _SIMULATION_DOCS,
        ),
    ),
)
"""The catalogue: every statistic a gate can bound, in table order. Every list below derives from it."""

SYSTEM_STATISTICS: tuple[str, ...] = tuple(name for name, statistic in STATISTICS.items() if statistic.per_system)
"""Statistics reported for every system (``systems[*]`` of the JSON report), in table order."""


def p_value_key(name: str) -> str:
    """The report key of a statistic's p-value (``trisk_p``)."""
    return f"{name}_p"


SYSTEM_KEYS: tuple[str, ...] = tuple(
    key
    for name in SYSTEM_STATISTICS
    for key in (name, *((p_value_key(name),) if STATISTICS[name].p_value is not None else ()))
)
"""Every per-system key of an evaluation (``systems[*]`` of the JSON report): each statistic of
:data:`SYSTEM_STATISTICS`, followed by its p-value where it has one (``trisk_p``)."""


PROMISED_KEYS: tuple[str, ...] = tuple(
    key
    for statistic in STATISTICS.values()
    if statistic.promised
    for key in (statistic.name, *((p_value_key(statistic.name),) if statistic.p_value is not None else ()))
)
"""The per-system keys the JSON report promises (``schema.json``) and the history records, in table order."""

TABLE_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (name, statistic.column) for name, statistic in STATISTICS.items() if statistic.column is not None
)
"""``(statistic, header)`` of the per-system table's statistic columns, in table order."""

PLOT_SERIES: tuple[tuple[str, str, str], ...] = tuple(
    (name, statistic.label, statistic.plot_marker)
    for name, statistic in STATISTICS.items()
    if statistic.plot_marker is not None
)
"""``(statistic, label, marker)`` of the bias-variance plot's series."""

GAP_TERMS: tuple[str, ...] = tuple(term.name for term in fields(GapDecomposition))
"""The terms of the gap decomposition every system reports under ``gap`` (docs/mathematics.md §3a)."""

GAP_LABELS: dict[str, str] = {
    "bias": "Bias(rho)",
    "var": "Var(rho)",
    "mse": "E[rho²]",
    "var_target": "Var(x_T)",
    "var_system": "Var(x)",
    "cov": "Cov(x_T, x)",
}
"""The header of each gap term in the reports' gap table: rho = x_T - x, Var(rho) = Var(x_T) + Var(x) - 2 Cov."""
assert tuple(GAP_LABELS) == GAP_TERMS, "every gap term has one label, in GapDecomposition's order"


def statistic_values(
    names: Iterable[str],
    scores: np.ndarray,
    reference: int | None,
    settings: AnalysisSettings,
    memo: dict[str, Any] | None = None,
) -> dict[str, np.ndarray | None]:
    """The value of every system for each statistic in ``names``, and ``NAME_p`` for those with a p-value.

    ``None`` where a statistic needs a reference and ``reference`` is ``None``, or is undefined for
    these scores (:class:`~pytest_bvtest.errors.StatisticError`). ``memo`` keeps the :class:`Shared`
    computations, so each runs once (the caller may read them, e.g. ``memo["bias_variance"]``).
    """
    memo = {} if memo is None else memo
    values: dict[str, np.ndarray | None] = {}
    for name in dict.fromkeys(names):
        statistic = STATISTICS[name]
        value = p_value = None
        if not statistic.needs_reference or reference is not None:
            try:
                value = statistic.values(scores, reference, settings, memo)
                if statistic.p_value is not None and statistic.shared is not None:
                    p_value = np.asarray(statistic.p_value(memo[statistic.shared.name]), dtype=float)
            except StatisticError:
                value = p_value = None
        values[name] = value
        if statistic.p_value is not None:
            values[p_value_key(name)] = p_value
    return values


def docs_table() -> str:
    """The statistics table of ``docs/spec.md`` (a test keeps the page equal to it)."""
    rows = ["| `statistic` | label | better | what it is |", "|---|---|---|---|"]
    for name, statistic in STATISTICS.items():
        better = "higher" if statistic.higher_is_better else "lower"
        rows.append(f"| `{name}` | {statistic.label} | {better} | {statistic.summary} |")
    return "\n".join(rows) + "\n"
