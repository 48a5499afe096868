"""Every statistic a gate can bound, by name: its direction, how to compute it, and its topic terms.

The gate layer never calls a family module directly; it looks a statistic up in
:data:`STATISTICS` and calls :meth:`Statistic.compute` on the systems x topics matrix with one
:class:`AnalysisSettings`. The bias-variance family (``bias2`` ... ``gap_mse``) applies the settings'
normalisation and grouping through :mod:`pytest_bvtest.stats.biasvar`; ``mean``, the risk family,
``mve`` and ``gawm`` see the raw scores (MATH.md sections 3-6). Directions follow MATH.md section 7.

Each statistic also says how to shrink the matrix for the paired bootstrap
(:func:`pytest_bvtest.stats.inference.paired_bootstrap`): a statistic that depends on the other
systems only through per-topic aggregates (the target ``max``, the ``min`` of max-min
normalisation, the topic totals of ZRisk) is computed exactly on a few rows, the systems of
interest plus those aggregates, because resampling topics resamples the aggregates with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np
from scipy.special import ndtr

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.biasvar import (
    BiasVariance,
    DifficultyGrouping,
    GapDecomposition,
    Grouping,
    apply_normalization,
    bias_variance,
    checked_scores,
    gap_decomposition,
    grouped_bias_variance,
    target_constant,
    topic_difficulty,
    variance_samples,
    virtual_target,
    with_sample_variance,
)
from pytest_bvtest.stats.gawm import gawm
from pytest_bvtest.stats.meanvar import mve_inter_topic
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


@dataclass(frozen=True)
class AnalysisSettings:
    """How one evaluation computes its statistics (the spec's ``analysis`` section).

    Attributes
    ----------
    target:
        The bias target constant ``c``: ``"mean"`` (MATH.md section 3 PIN, the mean of the virtual
        target) or a number (1 = the metric maximum).
    normalize:
        ``"none"``, ``"max-min"`` or ``"target-ratio"`` (MATH.md section 3c), bias-variance family only.
    grouping:
        ``None`` (topics are the samples), :class:`~pytest_bvtest.stats.biasvar.DifficultyGrouping` or
        :class:`~pytest_bvtest.stats.biasvar.RandomGrouping` (MATH.md section 3b), bias-variance
        family only.
    risk_alpha:
        Extra weight of a loss in URisk, TRisk, ZRisk and GeoRisk (MATH.md section 4). MATH.md
        fixes no default; 5 is one of the values the TREC Web track 2013-14 reported (0, 1, 5, 10):
        a loss counts six times a gain of the same size.
    mve_alpha:
        Risk preference of the mean-variance value ``mu - alpha * sigma2`` (MATH.md section 5).
        MATH.md fixes no default; 2 is the value of its golden example and of the spec's default.
    topic_weights:
        Topic importance for ``mve``, aligned with the matrix's topics (normalised to sum 1 by
        :mod:`~pytest_bvtest.stats.meanvar`); ``None`` is uniform. Left out of ``==`` (an array).
    gawm_q:
        Conformity exponent ``q`` of GAWM (MATH.md section 6).
    zrisk_against:
        ``"systems"`` (every other system, SIGIR 2016) or ``"target"`` (the virtual target alone,
        IPM 2022 Table 8) as the baselines of ZRisk and GeoRisk.
    variance:
        ``"population"`` (MATH.md's default) or ``"sample"`` (n - 1, IPM 2022 Table 8) for Var,
        Bias²+Var and the gap terms.
    """

    target: Literal["mean"] | float = "mean"
    normalize: str = "none"
    grouping: Grouping | None = None
    risk_alpha: float = 5.0
    mve_alpha: float = 2.0
    topic_weights: np.ndarray | None = field(default=None, compare=False)
    gawm_q: float = 1.0
    zrisk_against: str = "systems"
    variance: str = "population"


Compute = Callable[[np.ndarray, int | None, AnalysisSettings], np.ndarray]
TopicTerms = Callable[[np.ndarray, int | None, AnalysisSettings], np.ndarray | None]
SufficientMatrix = Callable[[np.ndarray, Sequence[int], AnalysisSettings], np.ndarray]
TopicChange = Callable[[np.ndarray, int, int, AnalysisSettings], np.ndarray]


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
class Statistic:
    """One gateable statistic.

    Attributes
    ----------
    name, label:
        Spec name (``bias2_plus_var``) and table label (``Bias²+Var``).
    higher_is_better:
        The good direction (MATH.md section 7).
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
        every system (GAWM).
    topic_terms:
        ``topic_terms(scores, reference, settings)``: per-topic terms ``(m, n)`` of every system
        that sum over topics to ``compute``'s values; ``None`` when the statistic does not split
        into topic terms, or the function returns ``None`` under settings where it does not.
    uses_topic_weights:
        True when ``settings.topic_weights`` enters the value (they are resampled with the topics).
    wording:
        The plain-language explanation the reports print for a gate on the statistic.
    topic_change:
        ``topic_change(scores, candidate, reference, settings)``: per-topic shares of
        ``value[candidate] - value[reference]`` for a statistic that has no additive topic terms
        (GeoRisk); ``None`` when :attr:`topic_terms` decides.
    mean_like:
        True when the value is the average of the per-topic scores, so that a topic's share of the
        change is its raw score difference over ``n``: the reports then show the raw difference only.
    """

    name: str
    label: str
    higher_is_better: bool
    needs_reference: bool
    compute: Compute
    sufficient_matrix: SufficientMatrix | None
    topic_terms: TopicTerms | None
    uses_topic_weights: bool = False
    wording: Wording | None = None
    topic_change: TopicChange | None = None
    mean_like: bool = False

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
        raise StatisticError("URisk, TRisk, RI, <Init and R-Loss compare each system with a reference system; name the reference")
    return x[..., [reference], :]


# --- sufficient matrices -------------------------------------------------------------------------


def _rows_alone(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray:
    """The systems' own rows suffice: the statistic never looks at another system."""
    return scores[list(rows)]


def _rows_and_extremes(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray:
    """Rows plus the per-topic max (the virtual target) and, when normalising, the per-topic min.

    The target, ``c``, both normalisations (including their constant-topic rule) and difficulty
    grouping read the other systems only through these two aggregates.
    """
    if isinstance(settings.grouping, DifficultyGrouping) and settings.grouping.difficulty == "mean":
        # difficulty by the mean over systems reads every system: keep them all, the asked rows first
        return scores[list(rows) + [i for i in range(len(scores)) if i not in rows]]
    extremes = [scores.max(axis=0)] if settings.normalize == "none" else [scores.max(axis=0), scores.min(axis=0)]
    return np.vstack([scores[list(rows)], *extremes])


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


def _normalized_with_target(x: np.ndarray, settings: AnalysisSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalised scores, their virtual target and ``c``, as ``bias_variance_analysis`` derives them.

    The building blocks broadcast over leading axes, so a stack of resampled matrices is
    evaluated at once; ``c`` gains a trailing axis to broadcast over systems.
    """
    normalized = apply_normalization(x, settings.normalize).scores
    target_scores = virtual_target(normalized)
    c = np.expand_dims(target_constant(target_scores, settings.target), -1)
    return normalized, target_scores, c


def _grouped(x: np.ndarray, settings: AnalysisSettings) -> tuple[BiasVariance, GapDecomposition]:
    """Grouped Bias2/Var and gap terms of a matrix or a stack of resampled matrices."""
    normalized, target_scores, c = _normalized_with_target(x, settings)
    return grouped_bias_variance(normalized, target_scores, topic_difficulty(x, settings.grouping), c, settings.grouping)


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


def _zrisk_sufficient(scores: np.ndarray, rows: Sequence[int], settings: AnalysisSettings) -> np.ndarray:
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
    return np.asarray(mve_inter_topic(_score_matrix(scores), settings.mve_alpha, settings.topic_weights).value)


def _mve_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """``O_t = w_t (x_t - alpha (x_t - mu)^2)``: the value ``mu - alpha sigma2`` summed topic by topic."""
    return mve_inter_topic(_score_matrix(scores), settings.mve_alpha, settings.topic_weights).topic_value


def _gawm(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    return gawm(_score_matrix(scores), q=settings.gawm_q).system_performance


def _gawm_terms(scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """``W_t[j] P[i, j] / sum W_t`` at the fixed point: E_s as a sum over topics."""
    x = _score_matrix(scores)
    topic_weights = gawm(x, q=settings.gawm_q).topic_weights
    return x * (topic_weights / topic_weights.sum(axis=-1, keepdims=True))[..., np.newaxis, :]


def _statistics(*statistics: Statistic) -> Mapping[str, Statistic]:
    return MappingProxyType({statistic.name: statistic for statistic in statistics})


_BIAS_VARIANCE_DOCS = "concepts.md#bias-and-variance"
_GAP_DOCS = "concepts.md#the-gap-decomposition-where-the-variance-comes-from"
_RISK_DOCS = "concepts.md#risk-harm-compared-with-a-baseline"

STATISTICS: Mapping[str, Statistic] = _statistics(
    Statistic(
        "mean", "Mean", True, False, _mean, _rows_alone, _mean_terms, mean_like=True,
        wording=Wording("the average quality over all queries", "Average quality over the queries is lower",
                        "concepts.md#which-gate-for-which-worry"),
    ),
    Statistic(
        "bias2", "Bias²", False, False, _family_statistic(False, "bias2"), _rows_and_extremes,
        _bias_variance_terms("bias2"),
        wording=Wording("average quality close to the best achievable (the virtual target)",
                        "Average quality sits further below the best achievable", _BIAS_VARIANCE_DOCS),
    ),
    Statistic(
        "var", "Var", False, False, _family_statistic(False, "var"), _rows_and_extremes, _bias_variance_terms("var"),
        wording=Wording("consistent quality from query to query", "Quality varies more from query to query",
                        _BIAS_VARIANCE_DOCS),
    ),
    Statistic(
        "bias2_plus_var", "Bias²+Var", False, False,
        _family_statistic(False, "error"), _rows_and_extremes, _bias_variance_terms("error"),
        wording=Wording("quality that is both close to the best achievable and consistent from query to query",
                        "Quality varies more from query to query or sits further below the best achievable",
                        _BIAS_VARIANCE_DOCS),
    ),
    Statistic(
        "gap_bias", "Bias(ρ)", False, False, _family_statistic(True, "bias"), _rows_and_extremes, _gap_terms("bias"),
        wording=Wording("a small gap to the best system on each query", "The gap to the best system per query is wider",
                        _GAP_DOCS),
    ),
    Statistic(
        "gap_var", "Var(ρ)", False, False, _family_statistic(True, "var"), _rows_and_extremes, _gap_terms("var"),
        wording=Wording("an even gap to the best system across queries (no queries that others solve and we fail)",
                        "The gap to the best system varies more from query to query", _GAP_DOCS),
    ),
    Statistic(
        "gap_mse", "Bias(ρ)²+Var(ρ)", False, False, _family_statistic(True, "mse"), _rows_and_extremes, _gap_terms("mse"),
        wording=Wording("a small and even gap to the best system on every query",
                        "The gap to the best system is wider or less even across queries", _GAP_DOCS),
    ),
    Statistic(
        "urisk", "URisk", True, True, _urisk, _rows_alone, _urisk_terms,
        wording=Wording("no net loss on single queries against the reference, losses counting extra",
                        "The risk-weighted change against the reference (losses count extra) is lower", _RISK_DOCS),
    ),
    Statistic(
        "trisk", "TRisk", True, True, _trisk, _rows_alone, _trisk_terms,
        wording=Wording("no significant loss on single queries against the reference",
                        "Losses on single queries against the reference are more significant", _RISK_DOCS),
    ),
    Statistic(
        "robustness_index", "RI", True, True, _against_reference(robustness_index), _rows_alone, _robustness_terms,
        wording=Wording("more queries won than lost against the reference",
                        "The share of queries won minus the share lost against the reference is lower", _RISK_DOCS),
    ),
    Statistic(
        "hurt_topics", "<Init", False, True, _against_reference(hurt_topics), _rows_alone, _hurt_terms,
        wording=Wording("few queries worse than in the reference", "More queries are worse than in the reference",
                        _RISK_DOCS),
    ),
    Statistic(
        "r_loss", "R-Loss", False, True, _against_reference(robustness_loss), _rows_alone, _loss_terms,
        wording=Wording("little quality lost on the queries that got worse than in the reference",
                        "More quality is lost on the queries that got worse than in the reference", _RISK_DOCS),
    ),
    Statistic(
        "zrisk", "ZRisk", True, False, _zrisk, _zrisk_sufficient, _zrisk_terms,
        wording=Wording("no query much worse than the other systems lead one to expect",
                        "More queries fall short of what the other systems lead one to expect", _RISK_DOCS),
    ),
    Statistic(
        "georisk", "GeoRisk", True, False, _georisk, _zrisk_sufficient, None, topic_change=_georisk_change,
        wording=Wording("quality that is both high and free of surprising shortfalls against the other systems",
                        "Quality adjusted for shortfalls against the other systems is lower", _RISK_DOCS),
    ),
    Statistic(
        "mve", "MVE", True, False, _mve, _rows_alone, _mve_terms, uses_topic_weights=True,
        wording=Wording("quality net of its spread across queries (mean minus alpha times the variance)",
                        "Quality net of its spread across queries is lower", "concepts.md#mean-variance-and-query-variations"),
    ),
    Statistic(
        "gawm", "GAWM E_s", True, False, _gawm, None, _gawm_terms,
        wording=Wording("quality on the queries that tell systems apart",
                        "Quality on the queries that tell systems apart is lower",
                        "concepts.md#gawm-a-mean-that-ignores-topics-that-discern-nothing"),
    ),
)
"""Every statistic a gate can bound, in table order."""
