"""GAWM and HITS: system effectiveness weighted by how well topics discern systems.

Lee, Kazai, Vinay, Milić-Frayling, Mendes Rodrigues & Ignjatović, "Measuring system performance and
topic discernment using generalized adaptive-weight mean", CIKM 2009 (GAWM), and Mizzaro & Robertson,
"HITS hits TREC: exploring IR evaluation results with network analysis", SIGIR 2007 (HITS),
docs/mathematics.md §6. ``P`` is a systems x topics matrix ``(..., m, n)``; leading axes (resamples)
broadcast through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_bvtest.checks import checked_scores, finite_number, positive_number, whole_number
from pytest_bvtest.errors import StatisticError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class GAWMResult:
    """GAWM fixed point. Per-system fields are ``(..., m)``, per-topic fields ``(..., n)``.

    ``iterations`` and ``converged`` are plain ``int``/``bool`` for one matrix, arrays over the
    leading axes for a stack of matrices. ``system_weights`` is Eq. 8's ``W_s`` as a float, which
    underflows to 0 for a large ``q``; ``system_log_weights`` is its logarithm, which does not, and is
    what the means use (docs/mathematics.md §6 PIN).
    """

    system_performance: FloatArray
    topic_ease: FloatArray
    system_weights: FloatArray
    system_log_weights: FloatArray
    topic_weights: FloatArray
    iterations: int | npt.NDArray[np.int64]
    converged: bool | npt.NDArray[np.bool_]


@dataclass(frozen=True)
class HITSResult:
    """HITS scores: ``system_*`` are ``(..., m)``, ``topic_*`` are ``(..., n)``, each of unit L2 norm."""

    system_authority: FloatArray
    system_hubness: FloatArray
    topic_authority: FloatArray
    topic_hubness: FloatArray


def gawm(scores: npt.ArrayLike, q: float = 1.0, tolerance: float = 1e-12, max_iterations: int = 1000) -> GAWMResult:
    """Generalized adaptive weighted mean: system performance and topic ease at their fixed point.

    Lee et al., CIKM 2009, Eq. 7 (topic discernment) and Eq. 8 (system conformity), docs/mathematics.md
    §6::

        E_s[i] = sum_j W_t[j] P[i, j] / sum_j W_t[j]
        E_t[j] = sum_i W_s[i] P[i, j] / sum_i W_s[i]
        W_t[j] = || P[:, j] - E_t[j] ||_2
        W_s[i] = (1 - d_i / sum_k d_k)^q,   d_i = || P[i, :] - E_t ||_2

    PINs followed: start from uniform weights, so the starting point is ``E_s`` = row means and
    ``E_t`` = column means; stop when ``max |change|`` of ``E_s`` and ``E_t`` is below
    ``tolerance`` (1e-12) or after ``max_iterations`` (1000); report both. When every ``W_t`` is 0
    (all systems identical) the topic weights fall back to uniform (1 each). ``W_s`` is computed in log
    space, ``q log(1 - d_i / sum_k d_k)``, and ``E_t`` weighs the systems by
    ``exp(log W_s - max log W_s)``: only normalised weights matter, so a large ``q`` (two systems at
    ``q ~ 1,100`` give ``0.5^q = 0``) never turns ``E_t`` into 0/0.

    Our reading of the iteration order: the state is ``E_t``. One iteration computes both weight
    vectors from the current ``E_t`` (Eq. 7 and 8), then both means from those weights. The weights
    reported are the ones that produced the reported means, so the first two equations hold
    exactly for the result (for ``E_t`` up to the rounding of the log-space normalisation). When every
    ``d_i`` is 0 (identical systems) ``d_i / sum_k d_k`` is taken
    as 0, i.e. uniform system weights. A topic on which every system scores the same has
    ``W_t = 0`` exactly (it discerns nothing) and ``E_t`` equal to that score. Stacked matrices are
    iterated independently: each stops at its own convergence, exactly as if evaluated alone.

    Parameters
    ----------
    scores:
        ``P`` with shape ``(..., m, n)``, ``m >= 2``.
    q:
        Conformity exponent ``q >= 0`` (0 gives uniform system weights).
    tolerance:
        Convergence threshold on the largest absolute change of ``E_s`` and ``E_t``.
    max_iterations:
        Most iterations; 0 returns the uniform-weight starting point unconverged.

    Returns
    -------
    GAWMResult
        ``system_performance`` (E_s), ``topic_ease`` (E_t), ``system_weights`` (W_s),
        ``system_log_weights`` (log W_s), ``topic_weights`` (W_t), ``iterations``, ``converged``.

    Raises
    ------
    StatisticError
        Fewer than 2 systems, non-finite scores, or invalid ``q``, ``tolerance``, ``max_iterations``.
    """
    p = checked_scores(scores, min_ndim=2)
    if p.shape[-2] < 2:
        raise StatisticError(f"GAWM needs at least 2 systems (system conformity compares systems), got {p.shape[-2]}")
    finite_number(q, "GAWM exponent q", minimum=0)
    positive_number(tolerance, "GAWM tolerance")
    max_iterations = whole_number(max_iterations, "GAWM max_iterations", minimum=0)

    constant_topic = p.max(axis=-2) == p.min(axis=-2)
    batch = p.shape[:-2]
    topic_weights = np.ones(batch + p.shape[-1:])
    system_log_weights = np.zeros(batch + p.shape[-2:-1])
    performance, ease = _gawm_means(p, system_log_weights, topic_weights, constant_topic)
    iterations = np.zeros(batch, dtype=np.int64)
    converged = np.zeros(batch, dtype=bool)
    for _ in range(max_iterations):
        active = ~converged
        if not active.any():
            break
        new_system_log_weights, new_topic_weights = _gawm_weights(p, ease, q)
        new_performance, new_ease = _gawm_means(p, new_system_log_weights, new_topic_weights, constant_topic)
        change = np.maximum(np.abs(new_performance - performance).max(axis=-1), np.abs(new_ease - ease).max(axis=-1))
        keep = active[..., None]
        performance = np.where(keep, new_performance, performance)
        ease = np.where(keep, new_ease, ease)
        system_log_weights = np.where(keep, new_system_log_weights, system_log_weights)
        topic_weights = np.where(keep, new_topic_weights, topic_weights)
        iterations += active
        converged |= active & (change < tolerance)
    return GAWMResult(
        system_performance=performance,
        topic_ease=ease,
        system_weights=np.exp(system_log_weights),
        system_log_weights=system_log_weights,
        topic_weights=topic_weights,
        iterations=int(iterations) if not batch else iterations,
        converged=bool(converged) if not batch else converged,
    )


def _gawm_weights(p: FloatArray, ease: FloatArray, q: float) -> tuple[FloatArray, FloatArray]:
    """System conformity ``log W_s`` (Eq. 8, in log space) and topic discernment ``W_t`` (Eq. 7) from ``E_t``."""
    deviation = p - ease[..., None, :]
    topic_weights = np.sqrt(np.sum(deviation**2, axis=-2))
    # docs/mathematics.md §6 PIN: no topic discerns the systems (all identical) -> uniform topic weights.
    topic_weights = np.where((topic_weights == 0).all(axis=-1, keepdims=True), 1.0, topic_weights)
    distance = np.sqrt(np.sum(deviation**2, axis=-1))
    total = distance.sum(axis=-1, keepdims=True)
    share = np.divide(distance, total, out=np.zeros_like(distance), where=total > 0)
    # q = 0 gives uniform weights even for the system holding every deviation (0 * log 0 would be NaN).
    with np.errstate(divide="ignore"):
        log_weights = np.zeros_like(share) if q == 0 else q * np.log1p(-share)
    return log_weights, topic_weights


def _gawm_means(
    p: FloatArray, system_log_weights: FloatArray, topic_weights: FloatArray, constant_topic: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """System performance ``E_s`` and topic ease ``E_t`` as weighted means of ``P``.

    The system weights arrive as logarithms and are scaled so the largest is 1: at least one
    share is below 1 (they sum to 1 over ``m >= 2`` systems), so the largest log weight is finite.
    """
    system_weights = np.exp(system_log_weights - system_log_weights.max(axis=-1, keepdims=True))
    performance = (p @ topic_weights[..., None])[..., 0] / topic_weights.sum(axis=-1, keepdims=True)
    ease = (system_weights[..., None, :] @ p)[..., 0, :] / system_weights.sum(axis=-1, keepdims=True)
    # A weighted mean of equal values can be off by an ulp; keep constant topics exact so that their
    # discernment is exactly 0 and identical systems give exactly uniform weights.
    return performance, np.where(constant_topic, p[..., 0, :], ease)


def gawm_resampled(
    scores: npt.ArrayLike, counts: npt.ArrayLike, q: float = 1.0, tolerance: float = 1e-12, max_iterations: int = 1000
) -> FloatArray:
    """GAWM's system performance ``E_s`` on topic resamples given as counts, without forming the resampled matrices.

    Lee et al., CIKM 2009, Eq. 7 and 8, docs/mathematics.md §6, on the bootstrap resamples of docs/mathematics.md §7:
    resample ``b`` takes topic ``j`` of ``scores`` ``counts[b, j]`` times. Every per-topic quantity of the
    fixed point (``E_t``, ``W_t``) is the same for each copy of a topic, so a resample is the original matrix
    with its topics weighted by their counts::

        E_s[i] = sum_j c_j W_t[j] P[i, j] / sum_j c_j W_t[j]
        d_i^2  = sum_j c_j (P[i, j] - E_t[j])^2

    and :func:`gawm` of ``scores[:, drawn]`` equals this on ``numpy.bincount(drawn)`` up to rounding: the
    same start (uniform weights), iteration, pins and per-resample stopping rule. Every resample of a
    block is one matrix product per quantity. The squared deviations are expanded around the topic
    means (``P - mean = D``, ``mean - E_t = delta``: ``sum_i (D + delta)^2 = sum_i D^2 + 2 delta sum_i D
    + m delta^2``), whose terms are small where the deviations are, so the rounding stays near that of
    the direct sums; constant topics are exactly 0, as in :func:`gawm`.

    Parameters
    ----------
    scores:
        ``P``, shape ``(m, n)``, ``m >= 2``.
    counts:
        ``(B, n)`` non-negative whole numbers, each row summing to at least 1: how often each topic is drawn.
    q, tolerance, max_iterations:
        As :func:`gawm`.

    Returns
    -------
    numpy.ndarray
        ``E_s`` of every resample, shape ``(B, m)``.
    """
    p = checked_scores(scores, min_ndim=2)
    c = np.asarray(counts, dtype=np.float64)
    if p.ndim != 2 or c.ndim != 2 or c.shape[1] != p.shape[1]:
        raise StatisticError(f"gawm_resampled needs an (m, n) matrix and (B, n) counts, got {p.shape} and {c.shape}")
    if p.shape[0] < 2:
        raise StatisticError(f"GAWM needs at least 2 systems (system conformity compares systems), got {p.shape[0]}")
    finite_number(q, "GAWM exponent q", minimum=0)
    positive_number(tolerance, "GAWM tolerance")
    max_iterations = whole_number(max_iterations, "GAWM max_iterations", minimum=0)
    systems = p.shape[0]
    drawn = c > 0
    constant_topic = p.max(axis=0) == p.min(axis=0)
    # Centre each topic on its mean (a constant topic exactly on its value, so that it contributes exactly 0).
    centre = np.where(constant_topic, p[0], p.mean(axis=0))
    centred = p - centre
    centred_squares = (centred**2).sum(axis=0)
    centred_sums = centred.sum(axis=0)
    count_squares = c @ (centred**2).T  # sum_j c_j D_ij^2, fixed over the iterations

    def means(log_weights: FloatArray, topic_weights: FloatArray) -> tuple[FloatArray, FloatArray]:
        weighted_topics = c * topic_weights
        performance = (weighted_topics @ p.T) / weighted_topics.sum(axis=1, keepdims=True)
        system_weights = np.exp(log_weights - log_weights.max(axis=1, keepdims=True))
        ease = (system_weights @ p) / system_weights.sum(axis=1, keepdims=True)
        return performance, np.where(constant_topic, p[0], ease)

    def weights(ease: FloatArray) -> tuple[FloatArray, FloatArray]:
        delta = centre - ease  # (B, n); 0 on constant topics
        topic_squares = centred_squares + 2.0 * delta * centred_sums + systems * delta**2
        topic_weights = np.where(constant_topic, 0.0, np.sqrt(np.maximum(topic_squares, 0.0)))
        # docs/mathematics.md §6 PIN: no drawn topic discerns the systems (all identical) -> uniform topic weights.
        topic_weights = np.where(((topic_weights == 0) | ~drawn).all(axis=1, keepdims=True), 1.0, topic_weights)
        distance_squares = count_squares + 2.0 * ((c * delta) @ centred.T) + (c * delta**2).sum(axis=1, keepdims=True)
        distance = np.sqrt(np.maximum(distance_squares, 0.0))
        total = distance.sum(axis=1, keepdims=True)
        share = np.divide(distance, total, out=np.zeros_like(distance), where=total > 0)
        with np.errstate(divide="ignore"):
            log_weights = np.zeros_like(share) if q == 0 else q * np.log1p(-share)
        return log_weights, topic_weights

    resamples = c.shape[0]
    performance, ease = means(np.zeros((resamples, systems)), np.ones(c.shape))
    converged = np.zeros(resamples, dtype=bool)
    for _ in range(max_iterations):
        active = ~converged
        if not active.any():
            break
        new_performance, new_ease = means(*weights(ease))
        change = np.maximum(
            np.abs(new_performance - performance).max(axis=1), np.where(drawn, np.abs(new_ease - ease), 0.0).max(axis=1)
        )
        performance = np.where(active[:, None], new_performance, performance)
        ease = np.where(active[:, None], new_ease, ease)
        converged |= active & (change < tolerance)
    return performance


def hits(scores: npt.ArrayLike) -> HITSResult:
    """HITS authority and hubness of systems and topics from the adjusted score matrices.

    Mizzaro & Robertson, SIGIR 2007 (as compared in Lee et al., CIKM 2009), docs/mathematics.md §6::

        APA = P - topic means (column means)  -> A(s) = top left, H(t) = top right singular vector
        APM = P - system means (row means)    -> H(s) = top left, A(t) = top right singular vector

    Each vector has unit L2 norm (each block normalised separately). Sign PIN: ``A(s)`` correlates
    positively with the systems' means (MAP) and ``A(t)`` with the topics' means; ``H(t)`` and ``H(s)``
    flip with their partner, so ``APA @ H(t) = sigma A(s)`` and ``APM.T @ H(s) = sigma A(t)`` with
    ``sigma >= 0``.

    Our readings of the degenerate cases: when a block's matrix is zero up to rounding (APA: every
    topic has the same score for all systems; APM: every system has the same score on all topics)
    there is no structure to rank, and both of that block's vectors are returned as zeros. When the
    authority vector is uncorrelated with the means, the sign makes its largest-magnitude entry
    positive. When the top singular value is repeated the vectors are not unique; the one LAPACK
    returns is reported.

    Parameters
    ----------
    scores:
        ``P`` with shape ``(..., m, n)``.

    Returns
    -------
    HITSResult
        ``system_authority`` A(s), ``system_hubness`` H(s), ``topic_authority`` A(t),
        ``topic_hubness`` H(t).
    """
    p = checked_scores(scores, min_ndim=2)
    system_means = p.mean(axis=-1)
    topic_means = p.mean(axis=-2)
    magnitude = np.abs(p).max(axis=(-2, -1))
    system_authority, topic_hubness = _top_singular_pair(
        p - topic_means[..., None, :], system_means, magnitude, left_signs=True
    )
    system_hubness, topic_authority = _top_singular_pair(
        p - system_means[..., None], topic_means, magnitude, left_signs=False
    )
    return HITSResult(
        system_authority=system_authority,
        system_hubness=system_hubness,
        topic_authority=topic_authority,
        topic_hubness=topic_hubness,
    )


def _top_singular_pair(
    adjusted: FloatArray, reference: FloatArray, magnitude: FloatArray, *, left_signs: bool
) -> tuple[FloatArray, FloatArray]:
    """Top left/right singular vectors of ``adjusted``, signed so the authority side (left when
    ``left_signs``) correlates positively with ``reference``; zeros when ``adjusted`` is zero up to
    the rounding of scores of size ``magnitude``."""
    u, s, vt = np.linalg.svd(adjusted, full_matrices=False)
    left, right = u[..., :, 0], vt[..., 0, :]
    authority = left if left_signs else right
    centred = reference - reference.mean(axis=-1, keepdims=True)
    direction = np.sign(np.sum(authority * centred, axis=-1))
    largest = np.take_along_axis(authority, np.abs(authority).argmax(axis=-1)[..., None], axis=-1)[..., 0]
    direction = np.where(direction == 0, np.sign(largest), direction)
    # numpy.linalg.matrix_rank's tolerance, relative to the scores the matrix was centred from:
    # below it the centred matrix is rounding noise.
    zero = s[..., 0] <= max(adjusted.shape[-2:]) * np.finfo(np.float64).eps * magnitude
    direction = np.where(zero, 0.0, direction)[..., None]
    return left * direction, right * direction
