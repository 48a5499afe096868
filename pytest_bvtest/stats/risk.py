"""Risk-sensitive comparison with baselines: URisk, TRisk, ZRisk and GeoRisk (docs/mathematics.md §4).

Sources: Wang, Bennett and Collins-Thompson, SIGIR 2012 (URisk, as used by the TREC Web track
2013-14); Dincer, Macdonald and Ounis, SIGIR 2014 (TRisk); Dincer, Macdonald and Ounis, SIGIR 2016
(ZRisk and GeoRisk over several baselines); all restated in the appendix of Zhang et al., IPM 2022.

Topics are on the last axis and leading axes (systems, bootstrap resamples) broadcast through.
Larger is better for every value here. ``alpha >= 0`` is the extra weight of a loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

# scipy.special's Student t function, not scipy.stats.t (whose sf is this function): scipy.stats takes ~1 s to import.
from scipy.special import ndtr, stdtr

from pytest_bvtest.checks import checked_scores, finite_number
from pytest_bvtest.errors import StatisticError

# A delta that is constant up to rounding (e.g. run = baseline + 0.1) leaves a sample standard
# deviation of a few ulps of the largest |delta|, which would otherwise turn into |TRisk| ~ 1e15.
_ROUNDING_SPREAD = 8 * np.finfo(np.float64).eps


@dataclass(frozen=True)
class TRisk:
    """TRisk and its two-sided p-value; arrays over the leading axes, or floats."""

    t: float | np.ndarray
    p: float | np.ndarray


@dataclass(frozen=True)
class ZRiskGeoRisk:
    """ZRisk and GeoRisk of every system, shape ``scores.shape[:-1]``, and ZRisk's topic terms.

    ``topic_z`` holds the z-scores with shortfalls weighted ``1 + alpha``, shape ``scores.shape``:
    ZRisk is their sum over topics.
    """

    zrisk: np.ndarray
    georisk: np.ndarray
    topic_z: np.ndarray


def risk_weighted_deltas(run: ArrayLike, baseline: ArrayLike, alpha: float) -> np.ndarray:
    """``delta_j = r_j - b_j`` for a win or tie, ``(1 + alpha)(r_j - b_j)`` for a loss."""
    alpha = finite_number(alpha, "risk weight alpha", minimum=0)
    difference = checked_scores(run) - checked_scores(baseline)
    return np.where(difference < 0, (1.0 + alpha) * difference, difference)


def _scalar_if_0d(values: np.ndarray) -> float | np.ndarray:
    return float(values) if np.ndim(values) == 0 else values


def urisk(run: ArrayLike, baseline: ArrayLike, alpha: float) -> float | np.ndarray:
    """URisk: mean per-topic difference to the baseline, losses weighted by ``1 + alpha``.

    Wang, Bennett and Collins-Thompson, "Robust ranking models via risk-sensitive optimization",
    SIGIR 2012; the risk measure of Collins-Thompson et al., "TREC 2013 Web Track Overview" (and its
    2014 successor); docs/mathematics.md §4::

        delta_j = r_j - b_j             if r_j >= b_j
                  (1 + alpha)(r_j - b_j) otherwise
        URisk = mean_j(delta_j)

    At ``alpha = 0`` it is ``mean(r) - mean(b)``.

    Parameters
    ----------
    run:
        Per-topic scores ``(..., n)``.
    baseline:
        Per-topic scores broadcastable to ``run``.
    alpha:
        Risk aversion, ``>= 0``.

    Returns
    -------
    float or numpy.ndarray
        URisk over the leading axes (a float for 1-D inputs).
    """
    return _scalar_if_0d(risk_weighted_deltas(run, baseline, alpha).mean(axis=-1))


def trisk(run: ArrayLike, baseline: ArrayLike, alpha: float) -> TRisk:
    """TRisk: URisk studentised over topics, with a two-sided Student t p-value.

    Dinçer, Macdonald and Ounis, "Hypothesis testing for risk-sensitive evaluation of retrieval
    systems", SIGIR 2014; docs/mathematics.md §4::

        TRisk = URisk / (s / sqrt(c)),  s = sample standard deviation (ddof 1) of delta,  c = topics
        p = 2 * P(T_{c-1} > |TRisk|)

    At ``alpha = 0`` it is the paired t statistic (``scipy.stats.ttest_rel``). TRisk < -2 signals a
    significant risk of harm, > +2 a significant gain. PIN (docs/mathematics.md §4, revised): ``s = 0``
    gives ``TRisk = 0`` and ``p = 1`` when URisk is 0, and otherwise ``+inf`` or ``-inf`` with
    URisk's sign and ``p = 0``: the same loss on every topic is a certain loss. Our reading counts an
    ``s`` within rounding error of 0 (a spread below 8 ulps of the largest ``|delta|``) as 0, so a
    constant difference gives an infinite TRisk however it rounds.

    Parameters
    ----------
    run:
        Per-topic scores ``(..., n)``.
    baseline:
        Per-topic scores broadcastable to ``run``.
    alpha:
        Risk aversion, ``>= 0``.

    Returns
    -------
    TRisk
        ``t`` and ``p`` over the leading axes (floats for 1-D inputs).

    Raises
    ------
    StatisticError
        With fewer than 2 topics (the sample standard deviation is undefined).
    """
    deltas = risk_weighted_deltas(run, baseline, alpha)
    topics = deltas.shape[-1]
    if topics < 2:
        raise StatisticError(
            "TRisk needs at least 2 topics: the standard deviation of one topic's difference is undefined"
        )
    # TRisk is scale-free; dividing by the largest |delta| keeps tiny deltas from underflowing when squared.
    largest = np.abs(deltas).max(axis=-1, keepdims=True)
    scaled = np.divide(deltas, largest, out=np.zeros_like(deltas), where=largest > 0)
    spread = scaled.std(axis=-1, ddof=1)
    no_spread = spread <= _ROUNDING_SPREAD
    standard_error = np.where(no_spread, 1.0, spread) / math.sqrt(topics)
    mean = scaled.mean(axis=-1)
    certain = np.where(mean == 0, 0.0, np.copysign(np.inf, mean))
    t = np.where(no_spread, certain, mean / standard_error)
    p = 2.0 * stdtr(topics - 1, -np.abs(t))
    return TRisk(_scalar_if_0d(t), _scalar_if_0d(p))


def zrisk_georisk(scores: ArrayLike, alpha: float) -> ZRiskGeoRisk:
    """ZRisk and GeoRisk of every system against all the others as baselines.

    Dinçer, Macdonald and Ounis, "Risk-sensitive evaluation and learning to rank using multiple
    baselines", SIGIR 2016; docs/mathematics.md §4. The papers write the matrix as
    topics x systems; here it is transposed like every score matrix of this package (systems x topics), so
    ``T_j`` are column totals and ``S_i`` row totals::

        T_j = sum_i x[i, j],  S_i = sum_j x[i, j],  N = sum_ij x[i, j],  e[i, j] = T_j S_i / N
        z[i, j] = (x[i, j] - e[i, j]) / sqrt(e[i, j])
        ZRisk_i = sum_{j: z >= 0} z[i, j] + (1 + alpha) sum_{j: z < 0} z[i, j]
        GeoRisk_i = sqrt((S_i / c) * Phi(ZRisk_i / c)),  c = number of topics, Phi = normal CDF

    PIN: ``z = 0`` where ``e = 0`` and such topics still count in ``c``. Our reading for an all-zero
    matrix (``N = 0``): every ``e`` is 0, so ``z = 0``, ZRisk = 0 and GeoRisk = 0. A single system is
    its own expectation (ZRisk 0, GeoRisk ``sqrt(mean / 2)``).

    Parameters
    ----------
    scores:
        ``(..., m systems, n topics)``, non-negative.
    alpha:
        Risk aversion, ``>= 0``.

    Returns
    -------
    ZRiskGeoRisk
        ``zrisk`` and ``georisk``, shape ``scores.shape[:-1]``; ``topic_z``, shape ``scores.shape``.

    Raises
    ------
    StatisticError
        On negative scores (the expectation model needs non-negative totals).
    """
    alpha = finite_number(alpha, "risk weight alpha", minimum=0)
    x = checked_scores(scores, min_ndim=2, non_negative_for="ZRisk/GeoRisk")
    topic_totals = x.sum(axis=-2, keepdims=True)
    system_totals = x.sum(axis=-1, keepdims=True)
    grand_total = x.sum(axis=(-2, -1), keepdims=True)
    expected = np.divide(topic_totals * system_totals, grand_total, out=np.zeros_like(x), where=grand_total > 0)
    has_expectation = expected > 0
    z = np.divide(x - expected, np.sqrt(expected), out=np.zeros_like(x), where=has_expectation)
    topic_z = np.where(z < 0, (1.0 + alpha) * z, z)
    zrisk = topic_z.sum(axis=-1)
    topics = x.shape[-1]
    georisk = np.sqrt(system_totals[..., 0] / topics * ndtr(zrisk / topics))
    return ZRiskGeoRisk(zrisk, georisk, topic_z)


def robustness_index(run: ArrayLike, baseline: ArrayLike) -> float | np.ndarray:
    """Sakai's robustness index: the share of topics won minus the share lost against the baseline.

    Sakai, Manabe and Koyama, "Flexible pseudo-relevance feedback via selective sampling", ACM TALIP
    4(2), 2005 (the robustness index of the query-expansion literature; Zhang et al. SIGIR 2013
    report robustness beside <Init and R-Loss); docs/mathematics.md §4::

        RI = (wins - losses) / n,   wins = #{j: r_j > b_j},   losses = #{j: r_j < b_j}

    Ties count in ``n`` but neither as a win nor a loss. In [-1, 1]; larger is better.

    Parameters
    ----------
    run:
        Per-topic scores ``(..., n)``.
    baseline:
        Per-topic scores broadcastable to ``run``.

    Returns
    -------
    float or numpy.ndarray
        RI over the leading axes (a float for 1-D inputs).
    """
    difference = risk_weighted_deltas(run, baseline, 0.0)  # r - b, no loss weight
    return _scalar_if_0d(np.sign(difference).mean(axis=-1))


def hurt_topics(run: ArrayLike, baseline: ArrayLike) -> float | np.ndarray:
    """``<Init``: how many topics score below the baseline (Zhang et al. SIGIR 2013; docs/mathematics.md §4).

    Our reading of the SIGIR 2013 column "<Init" (topics where the run is worse than the initial,
    i.e. baseline, retrieval): ``#{j: r_j < b_j}``. Smaller is better.

    Parameters
    ----------
    run:
        Per-topic scores ``(..., n)``.
    baseline:
        Per-topic scores broadcastable to ``run``.

    Returns
    -------
    float or numpy.ndarray
        The count as a float (a statistic like the others), over the leading axes.
    """
    difference = risk_weighted_deltas(run, baseline, 0.0)  # r - b, no loss weight
    return _scalar_if_0d(np.count_nonzero(difference < 0, axis=-1).astype(np.float64))


def robustness_loss(run: ArrayLike, baseline: ArrayLike) -> float | np.ndarray:
    """R-Loss: the effectiveness lost on hurt topics, averaged over all topics.

    Collins-Thompson's robustness loss (CIKM 2009) as Zhang et al. SIGIR 2013 report it beside <Init;
    docs/mathematics.md §4. Our reading on per-topic scores (the original counts relevant
    documents lost from the top 1000, which a score matrix does not hold)::

        R-Loss = mean_j max(0, b_j - r_j)

    It is URisk's loss part: ``URisk = mean(max(0, r - b)) - (1 + alpha) R-Loss``. Smaller is better.

    Parameters
    ----------
    run:
        Per-topic scores ``(..., n)``.
    baseline:
        Per-topic scores broadcastable to ``run``.

    Returns
    -------
    float or numpy.ndarray
        R-Loss over the leading axes (a float for 1-D inputs).
    """
    difference = risk_weighted_deltas(run, baseline, 0.0)  # r - b, no loss weight
    return _scalar_if_0d(np.maximum(-difference, 0.0).mean(axis=-1))


def zrisk_georisk_against_target(scores: ArrayLike, alpha: float) -> ZRiskGeoRisk:
    """ZRisk and GeoRisk of every system against the virtual target alone.

    Zhang et al. IPM 2022 Table 8 reads ZRisk/GeoRisk (Dincer, Macdonald and Ounis, SIGIR 2016) with
    the virtual target ``x_T = max_i x[i, j]`` (docs/mathematics.md §2) as the only baseline, at alpha 0;
    docs/mathematics.md §4. Our reading: each system is evaluated on the two-column matrix
    (the system, the target) by :func:`zrisk_georisk`, so its expectations come from its own total
    and the target's.

    Parameters
    ----------
    scores:
        ``(..., m systems, n topics)``, non-negative.
    alpha:
        Risk aversion, ``>= 0``.

    Returns
    -------
    ZRiskGeoRisk
        ``zrisk`` and ``georisk``, shape ``scores.shape[:-1]``.
    """
    x = checked_scores(scores, min_ndim=2, non_negative_for="ZRisk/GeoRisk")
    target = np.broadcast_to(x.max(axis=-2, keepdims=True), x.shape)
    pairs = np.stack([x, target], axis=-2)  # (..., m, 2, n): each system beside the target
    result = zrisk_georisk(pairs, alpha)
    return ZRiskGeoRisk(result.zrisk[..., 0], result.georisk[..., 0], result.topic_z[..., 0, :])
