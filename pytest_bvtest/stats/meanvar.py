"""Mean-variance evaluation (Zuccon, Palotti & Hanbury, CIKM 2016; docs/mathematics.md §5).

A system's effectiveness over topics (and over query variations of a topic) is treated like the
return of a portfolio: the value ``O = mu - alpha * sigma2`` rewards a high expected score and, for
``alpha > 0``, penalises its spread (risk averse); ``alpha < 0`` rewards spread (risk seeking) and
``alpha = 0`` reduces to the (weighted) mean. Larger is better.

Three forms, all vectorised over leading axes (systems, resamples):

- :func:`mve_inter_topic`: one score per topic; the topics play the role of the variations (Sec. 4.3).
- :func:`mve_intra_topic`: several query variations per topic, covariance between topics taken as 0
  (Sec. 4.2 with the Sec. 7 third option); per-topic values reported too.
- :func:`mve_general`: variations aligned by user, full covariance between topics (Sec. 4.1).

:func:`variation_layout` turns per-query scores plus a query → (topic, user, popularity) mapping into
the padded ``(topics, variations)`` layout these functions take.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_bvtest.checks import checked_scores, finite_number
from pytest_bvtest.errors import StatisticError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class MeanVariance:
    """Mean, variance and value ``mu - alpha * sigma2`` of a portfolio, shaped like the leading axes.

    ``topic_value`` (leading axes + topics) splits the value topic by topic: its sum over topics is
    ``value`` (the per-topic ``O_t`` of docs/mathematics.md §5).
    """

    mu: FloatArray | float
    sigma2: FloatArray | float
    value: FloatArray | float
    topic_value: FloatArray


@dataclass(frozen=True)
class IntraTopicMeanVariance:
    """Portfolio mean, variance and value, plus the per-topic terms (last axis = topics)."""

    mu: FloatArray | float
    sigma2: FloatArray | float
    value: FloatArray | float
    topic_mu: FloatArray
    topic_var: FloatArray
    topic_value: FloatArray


def mve_inter_topic(
    scores: npt.ArrayLike, alpha: float, weights: npt.ArrayLike | None = None, variance: str = "population"
) -> MeanVariance:
    """Modified inter-topic mean-variance value, one query per topic.

    Zuccon, Palotti & Hanbury, CIKM 2016, Sec. 4.3, ineq. 9, read as docs/mathematics.md §5 PIN: the
    topics play the role of variations, topic ``t`` occurring with probability ``w_t``::

        mu     = sum_t w_t x_t
        sigma2 = sum_t w_t (x_t - mu)^2
        O      = mu - alpha * sigma2

    With uniform weights this is the mean minus ``alpha`` times the population variance. Per topic,
    ``O_t = w_t (x_t - alpha (x_t - mu)^2)`` (our reading: each topic's share of the mean and of the
    variance); the ``O_t`` sum to ``O``. ``variance="sample"`` divides ``sigma2`` (and each topic's
    share of it) by ``1 - sum_t w_t^2`` (:func:`sample_variance_factor`): ``n / (n - 1)`` with uniform
    weights, as Zuccon et al.'s pilot prints it.

    Parameters
    ----------
    scores:
        ``(..., n)`` per-topic scores, topics on the last axis.
    alpha:
        Risk preference: positive averse, negative seeking, 0 the mean only.
    weights:
        ``(n,)`` non-negative topic weights, normalised here to sum 1; uniform when omitted.
    variance:
        ``"population"`` (the default) or ``"sample"``.

    Returns
    -------
    MeanVariance
        ``mu``, ``sigma2`` and ``value`` shaped like the leading axes of ``scores``.

    Raises
    ------
    StatisticError
        No topics, non-finite scores or ``alpha``, weights that are negative or sum to 0, or a sample
        variance over a single topic.
    """
    x = checked_scores(scores, min_ndim=1)
    alpha = finite_number(alpha, "alpha")
    w = normalised_weights(weights, x.shape[-1], "topic weights")
    mu = x @ w
    squared = (x - mu[..., None]) ** 2 * _variance_factor(w, variance, "topics")
    sigma2 = squared @ w
    return MeanVariance(mu=mu, sigma2=sigma2, value=mu - alpha * sigma2, topic_value=w * (x - alpha * squared))


def mve_intra_topic(
    scores: npt.ArrayLike,
    alpha: float,
    weights: npt.ArrayLike | None = None,
    popularity: npt.ArrayLike | None = None,
    present: npt.ArrayLike | None = None,
    variance: str = "population",
) -> IntraTopicMeanVariance:
    """Intra-topic mean-variance value over query variations, topics uncorrelated.

    Zuccon, Palotti & Hanbury, CIKM 2016, Sec. 4.2; the portfolio uses covariance 0 between topics,
    the paper's Sec. 7 third option (docs/mathematics.md §5). Per topic ``t`` with variation popularity
    ``p_tq`` (normalised over the topic's variations)::

        mu_t    = sum_q p_tq x_tq
        var_t   = sum_q p_tq (x_tq - mu_t)^2
        O_t     = w_t mu_t - alpha w_t^2 var_t
        mu_P    = sum_t w_t mu_t
        sigma2_P = sum_t w_t^2 var_t
        O       = mu_P - alpha sigma2_P        (= sum_t O_t)

    ``variance="sample"`` divides each ``var_t`` by ``1 - sum_q p_tq^2`` (:func:`sample_variance_factor`):
    ``V_t / (V_t - 1)`` for ``V_t`` equally popular variations, the ``n - 1`` of Zuccon et al.'s pilot.

    Parameters
    ----------
    scores:
        ``(..., n, V)``: per topic up to ``V`` variations, padded; padding values are ignored (NaN is
        fine there).
    alpha:
        Risk preference: positive averse, negative seeking, 0 the mean only.
    weights:
        ``(n,)`` non-negative topic weights, normalised to sum 1; uniform when omitted.
    popularity:
        ``(n, V)`` non-negative variation popularity, normalised per topic over its present
        variations; uniform when omitted.
    present:
        ``(n, V)`` booleans marking real variations; all present when omitted.
    variance:
        ``"population"`` (the default) or ``"sample"``.

    Returns
    -------
    IntraTopicMeanVariance
        Portfolio ``mu``, ``sigma2``, ``value`` (leading axes) and ``topic_mu``, ``topic_var``,
        ``topic_value`` (leading axes + ``n``).

    Raises
    ------
    StatisticError
        A topic without variations, non-finite present scores, invalid weights or popularity, or a
        sample variance on a topic whose popularity sits on one variation.
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim < 2 or x.shape[-2] == 0 or x.shape[-1] == 0:
        raise StatisticError(
            f"intra-topic mean-variance needs scores shaped (..., topics, variations), got shape {x.shape}"
        )
    n, v = x.shape[-2:]
    mask = np.ones((n, v), dtype=bool) if present is None else _shaped(present, (n, v), "present", dtype=bool)
    empty = np.flatnonzero(~mask.any(axis=1))
    if empty.size:
        raise StatisticError(f"topic position(s) {empty.tolist()} have no query variation")
    if not np.isfinite(x[..., mask]).all():
        raise StatisticError("scores contain NaN or infinite values for present variations")
    alpha = finite_number(alpha, "alpha")
    w = normalised_weights(weights, n, "topic weights")
    p = _variation_probabilities(popularity, mask)
    x = np.where(mask, x, 0.0)
    topic_mu = np.sum(p * x, axis=-1)
    topic_var = np.sum(p * (x - topic_mu[..., None]) ** 2, axis=-1) * _variance_factor(p, variance, "variations")
    mu = topic_mu @ w
    sigma2 = topic_var @ (w**2)
    return IntraTopicMeanVariance(
        mu=mu,
        sigma2=sigma2,
        value=mu - alpha * sigma2,
        topic_mu=topic_mu,
        topic_var=topic_var,
        topic_value=w * topic_mu - alpha * w**2 * topic_var,
    )


def mve_general(
    scores: npt.ArrayLike,
    alpha: float,
    weights: npt.ArrayLike | None = None,
    user_probability: npt.ArrayLike | None = None,
    variance: str = "population",
) -> MeanVariance:
    """General mean-variance value with query variations aligned by user.

    Zuccon, Palotti & Hanbury, CIKM 2016, Sec. 4.1 (docs/mathematics.md §5): user ``k`` issued query
    ``k`` for every topic, so a user's scores form one joint outcome ``R_k = sum_t w_t r_tk``::

        mu_P     = sum_t w_t E[R_t]
        sigma2_P = sum_t sum_u w_t w_u cov(R_t, R_u)  = Var_k(R_k)
        O        = mu_P - alpha sigma2_P

    with expectations and the (population) variance over users weighted by ``user_probability``.
    Our reading of the per-topic value: ``O_t = w_t E[R_t] - alpha w_t sum_u w_u cov(R_t, R_u)``,
    each topic's share of the mean and of the covariance double sum; the ``O_t`` sum to ``O``.
    ``variance="sample"`` divides the variance and every covariance by ``1 - sum_k p_k^2``
    (:func:`sample_variance_factor`; ``M / (M - 1)`` for equally likely users).

    Parameters
    ----------
    scores:
        ``(..., M, n)``: ``M`` users by ``n`` topics, topics on the last axis.
    alpha:
        Risk preference: positive averse, negative seeking, 0 the mean only.
    weights:
        ``(n,)`` non-negative topic weights, normalised to sum 1; uniform when omitted.
    user_probability:
        ``(M,)`` non-negative user probabilities, normalised to sum 1; uniform when omitted.
    variance:
        ``"population"`` (the default) or ``"sample"``.

    Returns
    -------
    MeanVariance
        ``mu``, ``sigma2`` and ``value`` shaped like the leading axes of ``scores``.

    Raises
    ------
    StatisticError
        No users or topics, non-finite scores, invalid weights or probabilities.
    """
    x = checked_scores(scores, min_ndim=2)
    alpha = finite_number(alpha, "alpha")
    w = normalised_weights(weights, x.shape[-1], "topic weights")
    p = normalised_weights(user_probability, x.shape[-2], "user probabilities")
    factor = _variance_factor(p, variance, "users")
    portfolio = x @ w
    mu = portfolio @ p
    deviation = portfolio - mu[..., None]
    sigma2 = (deviation**2) @ p * factor
    topic_mu = np.swapaxes(x, -1, -2) @ p
    # sum_u w_u cov(R_t, R_u) = E_k[(r_tk - E r_t)(R_k - mu)]: the topic's covariance with the portfolio
    topic_covariance = np.swapaxes(x - topic_mu[..., None, :], -1, -2) @ (p * deviation)[..., None]
    topic_value = w * topic_mu - alpha * w * topic_covariance[..., 0] * factor
    return MeanVariance(mu=mu, sigma2=sigma2, value=mu - alpha * sigma2, topic_value=topic_value)


@dataclass(frozen=True)
class VariationLayout:
    """Where each query's score goes in the padded ``(topics, variations)`` layout.

    ``query_index[t, v]`` is the position of that variation in the per-query input, ``-1`` for
    padding. When ``users`` is not None the variations are aligned by user: column ``k`` is user
    ``users[k]`` on every topic, and ``np.swapaxes(layout.arrange(s), -1, -2)`` is the
    ``(..., users, topics)`` input of :func:`mve_general`.
    """

    topics: tuple[str, ...]
    users: tuple[str, ...] | None
    query_index: npt.NDArray[np.intp]
    popularity: FloatArray | None

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """``(n, V)`` mask of real variations."""
        return self.query_index >= 0

    @property
    def aligned_by_user(self) -> bool:
        """True when every topic has exactly the same users, one query each."""
        return self.users is not None

    def user_probability(self) -> FloatArray | None:
        """Each user's probability for :func:`mve_general`, from the popularity (docs/mathematics.md §5 PIN).

        A popularity that gives a user the same share of every topic is that user's probability;
        uniform without popularity. ``None`` when the variations are not aligned by user or a user's
        share differs between topics (no single user distribution exists then).
        """
        if self.users is None:
            return None
        if self.popularity is None:
            return np.full(len(self.users), 1.0 / len(self.users))
        shares = _variation_probabilities(self.popularity, self.present)
        if not np.allclose(shares, shares[0], rtol=1e-12, atol=0.0):
            return None
        return shares[0]

    def arrange(self, query_scores: npt.ArrayLike) -> FloatArray:
        """Per-query scores ``(..., Q)`` (queries on the last axis) → ``(..., n, V)``, NaN padding."""
        s = np.asarray(query_scores, dtype=np.float64)
        queries = np.count_nonzero(self.present)
        if s.ndim < 1 or s.shape[-1] != queries:
            raise StatisticError(
                f"expected per-query scores with {queries} queries on the last axis, got shape {s.shape}"
            )
        return np.where(self.present, s[..., np.maximum(self.query_index, 0)], np.nan)


def variation_layout(
    query_topics: Sequence[str],
    query_users: Sequence[str] | None = None,
    query_popularity: Sequence[float] | None = None,
) -> VariationLayout:
    """Group queries by topic into the padded layout of :func:`mve_intra_topic`.

    Topics and users appear in order of first occurrence. Queries are aligned by user (the general
    case of Zuccon et al. Sec. 4.1) when users are given and every topic has the same set of users,
    each with exactly one query; the columns are then the users. Otherwise a topic's variations keep
    their input order and shorter topics are padded.

    Parameters
    ----------
    query_topics:
        Topic of each query, in the order of the per-query scores.
    query_users:
        User of each query, or None when unknown.
    query_popularity:
        Popularity of each query (normalised per topic later), or None for uniform.

    Returns
    -------
    VariationLayout
    """
    q = len(query_topics)
    if query_users is not None and len(query_users) != q:
        raise StatisticError(f"{len(query_users)} users given for {q} queries")
    if query_popularity is not None and len(query_popularity) != q:
        raise StatisticError(f"{len(query_popularity)} popularities given for {q} queries")
    by_topic: dict[str, list[int]] = {}
    for position, topic in enumerate(query_topics):
        by_topic.setdefault(topic, []).append(position)
    topics = tuple(by_topic)
    users = _aligned_users(by_topic, query_users)
    if users is None:
        width = max((len(positions) for positions in by_topic.values()), default=0)
        index = np.full((len(topics), width), -1, dtype=np.intp)
        for row, positions in enumerate(by_topic.values()):
            index[row, : len(positions)] = positions
    else:
        column = {user: k for k, user in enumerate(users)}
        index = np.empty((len(topics), len(users)), dtype=np.intp)
        for row, positions in enumerate(by_topic.values()):
            index[row, [column[query_users[p]] for p in positions]] = positions
    popularity = None
    if query_popularity is not None:
        values = np.asarray(query_popularity, dtype=np.float64)
        popularity = np.where(index >= 0, values[np.maximum(index, 0)], 0.0)
    return VariationLayout(topics=topics, users=users, query_index=index, popularity=popularity)


def _aligned_users(by_topic: dict[str, list[int]], query_users: Sequence[str] | None) -> tuple[str, ...] | None:
    """The common user order when every topic has the same users once each, else None."""
    if query_users is None:
        return None
    user_sets = []
    for positions in by_topic.values():
        users = [query_users[p] for p in positions]
        if len(set(users)) != len(users):
            return None
        user_sets.append(set(users))
    if any(s != user_sets[0] for s in user_sets):
        return None
    return tuple(dict.fromkeys(query_users))


def _variance_factor(probabilities: FloatArray, variance: str, what: str) -> FloatArray | float:
    """1 for the population variance, :func:`sample_variance_factor` of ``probabilities`` for the sample one."""
    if variance == "population":
        return 1.0
    if variance != "sample":
        raise StatisticError(f"unknown variance convention {variance!r}; use one of {', '.join(MVE_VARIANCES)}")
    factor = sample_variance_factor(probabilities)
    undefined = np.flatnonzero(~np.isfinite(np.atleast_1d(factor)))
    if undefined.size:
        where = "" if np.ndim(factor) == 0 else f" (topic position(s) {undefined.tolist()})"
        raise StatisticError(f"a sample variance needs at least 2 {what} with positive weight{where}")
    return factor if np.ndim(factor) else float(factor)


def _shaped(values: npt.ArrayLike, shape: tuple[int, ...], what: str, dtype: type = np.float64) -> np.ndarray:
    array = np.asarray(values, dtype=dtype)
    if array.shape != shape:
        raise StatisticError(f"{what} has shape {array.shape}, expected {shape}")
    return array


def weighted_mean(scores: npt.ArrayLike, weights: npt.ArrayLike | None) -> FloatArray:
    """The traffic-weighted mean of every system, ``sum_t w_t x_t`` with the weights scaled to sum 1.

    Zuccon, Palotti & Hanbury, CIKM 2016, the weighted expectation ``mu`` of Eq. 1 on its own; docs/mathematics.md
    §5 (the weights) and §7, "Gates per segment" (the topic file's traffic weights, within a segment the segment's
    own). ``scores`` is ``(..., m, n)``; ``weights`` ``(n,)``, ``None`` for the plain mean.
    """
    x = np.asarray(scores, dtype=np.float64)
    return x @ normalised_weights(weights, x.shape[-1], "topic weights")


def normalised_weights(weights: npt.ArrayLike | None, size: int, what: str) -> FloatArray:
    """Non-negative weights scaled to sum 1 (docs/mathematics.md §5 PIN); uniform when None."""
    if weights is None:
        return np.full(size, 1.0 / size)
    w = _shaped(weights, (size,), what)
    if not np.isfinite(w).all() or (w < 0).any():
        raise StatisticError(f"{what} must be finite and non-negative")
    largest = w.max(initial=0.0)
    if largest <= 0:
        raise StatisticError(f"{what} sum to 0; at least one must be positive")
    # scaled by the largest first: weights near the float maximum would overflow their sum
    scaled = w / largest
    return scaled / scaled.sum()


def _variation_probabilities(popularity: npt.ArrayLike | None, present: npt.NDArray[np.bool_]) -> FloatArray:
    """Per-topic popularity over the present variations, scaled to sum 1 in each topic."""
    if popularity is None:
        p = present.astype(np.float64)
    else:
        p = _shaped(popularity, present.shape, "popularity")
        p = np.where(present, p, 0.0)
        if not np.isfinite(p).all() or (p < 0).any():
            raise StatisticError("popularity must be finite and non-negative")
    largest = p.max(axis=1, initial=0.0)
    zero = np.flatnonzero(largest <= 0)
    if zero.size:
        raise StatisticError(
            f"popularity sums to 0 for topic position(s) {zero.tolist()}; give at least one variation a positive "
            "popularity"
        )
    scaled = p / largest[:, None]  # by the largest first, so huge popularities cannot overflow their sum
    return scaled / scaled.sum(axis=1)[:, None]


def mve_alpha_sweep(mu: npt.ArrayLike, sigma2: npt.ArrayLike, alphas: npt.ArrayLike) -> FloatArray:
    """The value ``O(alpha) = mu - alpha sigma2`` of every system at every alpha.

    Zuccon, Palotti & Hanbury, CIKM 2016, Figs. 2-4 (value and rank of each system as the risk
    preference varies); docs/mathematics.md §5. Every form of MVE is linear in alpha once
    ``mu`` and ``sigma2`` are known, so the sweep needs no re-evaluation.

    Parameters
    ----------
    mu, sigma2:
        ``(m,)`` portfolio mean and variance of every system (any form).
    alphas:
        ``(A,)`` risk preferences.

    Returns
    -------
    numpy.ndarray
        ``(A, m)`` values.
    """
    mean = checked_scores(mu, min_ndim=1)
    variance = checked_scores(sigma2, min_ndim=1)
    return mean[None, :] - np.asarray(alphas, dtype=np.float64)[:, None] * variance[None, :]


def crossing_alpha(mu: float, sigma2: float, other_mu: float, other_sigma2: float) -> float | None:
    """The alpha at which two systems' MVE values are equal, where their ranking flips.

    ``mu - alpha sigma2 = mu' - alpha sigma2'`` gives ``alpha = (mu - mu') / (sigma2 - sigma2')``
    (Zuccon et al. CIKM 2016, Sec. 6: risk preference changes the ranking of systems); above it the
    system with the smaller variance ranks first, below it the other. ``None`` when the variances are
    equal (the values differ by ``mu - mu'`` at every alpha: the ranking never flips).
    """
    spread = sigma2 - other_sigma2
    if spread == 0:
        return None
    return float((mu - other_mu) / spread)


def first_reordering(mu: npt.ArrayLike, sigma2: npt.ArrayLike, alpha: float) -> tuple[float, int, int] | None:
    """The alpha nearest 0 on the side of ``alpha`` at which MVE's variance term reorders two systems, and the two.

    Zuccon et al. (CIKM 2016, Sec. 6): O = mu - alpha sigma2 ranks the systems as ``mu`` does at alpha 0, and two of
    them swap places at their :func:`crossing_alpha`. Below the nearest crossing (in absolute value, of the sign of
    ``alpha``) MVE ranks the systems exactly as their mean term does. ``None`` when no two systems cross on that side
    (or ``alpha`` is 0): at any such alpha the variance term cannot move the ranking. Systems tied on ``mu`` cross at 0
    and are skipped (their order at 0 is a tie, not a ranking).
    """
    mu, sigma2 = np.asarray(mu, dtype=float), np.asarray(sigma2, dtype=float)
    if alpha == 0:
        return None
    nearest: tuple[float, int, int] | None = None
    for i in range(mu.size):
        for j in range(i + 1, mu.size):
            crossing = crossing_alpha(float(mu[i]), float(sigma2[i]), float(mu[j]), float(sigma2[j]))
            if crossing is None or crossing == 0 or np.sign(crossing) != np.sign(alpha):
                continue
            if nearest is None or abs(crossing) < abs(nearest[0]):
                nearest = (crossing, i, j)
    return nearest


def variation_mve(
    scores: npt.ArrayLike,
    alpha: float,
    weights: npt.ArrayLike | None = None,
    popularity: npt.ArrayLike | None = None,
    present: npt.ArrayLike | None = None,
    user_probability: npt.ArrayLike | None = None,
    variance: str = "population",
) -> MeanVariance | IntraTopicMeanVariance:
    """MVE over query variations in the form chosen for them (docs/mathematics.md §5).

    ``user_probability`` given: the general form (:func:`mve_general`, columns are users, the padded
    layout has none); otherwise the intra-topic form (:func:`mve_intra_topic`).

    Parameters
    ----------
    scores:
        ``(..., n, V)`` per-topic variations in the layout of :class:`VariationLayout`.
    alpha, weights, popularity, present:
        As for :func:`mve_intra_topic`.
    user_probability:
        ``(V,)`` user probabilities (:meth:`VariationLayout.user_probability`) or ``None``.
    variance:
        ``"population"`` (the default) or ``"sample"``.
    """
    if user_probability is not None:
        return mve_general(
            np.swapaxes(np.asarray(scores, dtype=np.float64), -1, -2),
            alpha,
            weights,
            user_probability,
            variance=variance,
        )
    return mve_intra_topic(scores, alpha, weights=weights, popularity=popularity, present=present, variance=variance)


MVE_VARIANCES = ("population", "sample")
"""Accepted values of the ``variance`` argument (docs/mathematics.md §5)."""


def sample_variance_factor(probabilities: npt.ArrayLike) -> FloatArray:
    """``1 / (1 - sum p^2)``: what turns a probability-weighted variance into a sample variance.

    Zuccon, Palotti & Hanbury, CIKM 2016 (the pilot study's variances divide by ``n - 1``); our reading
    for unequal weights (docs/mathematics.md §5) is the unbiased estimator with reliability
    weights, ``sum_q p_q (x_q - mu)^2 / (1 - sum_q p_q^2)``, which is ``n / (n - 1)`` times the
    population variance when the ``n`` weights are equal.

    Parameters
    ----------
    probabilities:
        ``(..., k)`` weights summing to 1 over the last axis.

    Returns
    -------
    numpy.ndarray
        The factor per leading index; ``inf`` where all weight sits on one value (undefined).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    effective = 1.0 - np.sum(p**2, axis=-1)
    # a weight of 1 on one value leaves 0 up to rounding: no second value, no sample variance
    return np.divide(1.0, effective, out=np.full_like(effective, np.inf), where=effective > 1e-12)
