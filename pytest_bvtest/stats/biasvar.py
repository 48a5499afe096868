"""Bias-variance evaluation against the virtual target system (docs/mathematics.md §2 and §3).

Sources (as cited in docs/mathematics.md): Zhang et al., SIGIR 2013 (Tables 1-2: the decomposition and the gap
decomposition); Zhang et al., CIKM 2014 (topic grouping, target-ratio normalisation, tradeoff
degree); Zhang et al., IPM 2022 (Eq. 7, 11, 15-16; Sec. 3.3 topic grouping, Sec. 4.1.1 target).

Every function takes a score array ``x[..., i, j]``: system ``i`` on the second-to-last axis,
topic ``j`` on the last axis, and any leading axes (bootstrap resamples, ...) broadcast through.
Variances are population variances. Undefined results raise :class:`StatisticError` or, for the
tradeoff correlations, are ``None``; no function returns NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from pytest_bvtest.checks import checked_scores, whole_number
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import DifficultyGrouping, Grouping, RandomGrouping, SampledGrouping

NORMALIZATIONS = ("none", "max-min", "target-ratio", "group-target-ratio")
"""Accepted values of ``bias_variance_analysis(normalize=...)``; ``group-target-ratio`` is CIKM 2014 Eq. 6
on group means (:func:`group_target_ratio`), the others are per topic (docs/mathematics.md §3c)."""

# Random grouping builds its co-occurrence matrix a block of topics at a time; a block counts at most
# this many (repetition, topic, partner) memberships, about 100 MB of indices and weights.
_COOCCURRENCE_BLOCK_VALUES = 4_000_000
# Sampled grouping (IPM 2022) gathers every group's topics; a block of repetitions holds at most this
# many random keys and gathered scores, about 64 MB.
_SAMPLED_GROUPING_BLOCK_VALUES = 8_000_000


@dataclass(frozen=True)
class BiasVariance:
    """Per-system bias-variance terms; each field has the shape ``scores.shape[:-1]``."""

    mean: np.ndarray
    bias2: np.ndarray
    var: np.ndarray
    error: np.ndarray


@dataclass(frozen=True)
class GapDecomposition:
    """Bias-variance of the per-topic gap ``rho = x_T - x_i``; each field has one value per system."""

    bias: np.ndarray
    var: np.ndarray
    mse: np.ndarray
    var_target: np.ndarray
    var_system: np.ndarray
    cov: np.ndarray


@dataclass(frozen=True)
class Normalized:
    """Per-topic normalised scores and how many topics were constant (every system equal)."""

    scores: np.ndarray
    constant_topics: int | np.ndarray


@dataclass(frozen=True)
class Tradeoff:
    """Correlation across systems between Bias2 and Var; ``None`` where undefined."""

    pearson: float | None
    spearman: float | None


@dataclass(frozen=True)
class BiasVarianceAnalysis:
    """Everything :func:`bias_variance_analysis` reports for one systems x topics matrix.

    ``target_scores`` is the virtual target per topic after normalisation; ``constant_topics`` counts
    the topics the normalisation set to 1 for every system (0 without normalisation; with
    ``group-target-ratio``, the topics of groups set to 1, :func:`group_ratio_constant_topics`).
    """

    c: float
    target_scores: np.ndarray
    constant_topics: int
    bias_variance: BiasVariance
    gap: GapDecomposition
    tradeoff: Tradeoff


def virtual_target(scores: ArrayLike) -> np.ndarray:
    """The virtual target system: the best score any system reached on each topic.

    docs/mathematics.md §2 (IPM 2022 Sec. 4.1.1): ``x_T[j] = max_i x[i, j]`` over all systems given, the
    candidate included.

    Parameters
    ----------
    scores:
        ``(..., m systems, n topics)``.

    Returns
    -------
    numpy.ndarray
        ``x_T`` with shape ``(..., n)``.
    """
    return checked_scores(scores, min_ndim=2).max(axis=-2)


def per_topic_target(scores: ArrayLike, target_system: int | None = None) -> np.ndarray:
    """The per-topic target ``x_T``: the virtual target, or the scores of one named system.

    docs/mathematics.md §2 (the max over systems) by default; with ``target_system`` the row of that
    system: SIGIR 2013 Sec. 2.5 lets the target be a practical system (e.g. the best known run)
    instead of the per-topic best (docs/mathematics.md §2, our reading).

    Parameters
    ----------
    scores:
        ``(..., m systems, n topics)``.
    target_system:
        Row index of the system whose scores are the target, or ``None`` for the virtual target.

    Returns
    -------
    numpy.ndarray
        ``x_T`` with shape ``(..., n)``.
    """
    x = checked_scores(scores, min_ndim=2)
    if target_system is None:
        return x.max(axis=-2)
    system = whole_number(target_system, "target system row", minimum=0)
    if system >= x.shape[-2]:
        raise StatisticError(f"target system row {system} is out of range for {x.shape[-2]} systems")
    return x[..., system, :].copy()


def target_constant(target_scores: ArrayLike, target: Literal["mean"] | float = "mean") -> float | np.ndarray:
    """The constant target value ``c`` the bias is measured against.

    docs/mathematics.md §3, PIN default ``c = mean(x_T)`` (IPM 2022 Sec. 3.3); a number instead gives
    ``c`` directly (1 = the metric maximum; SIGIR 2013's "practical" MAP_T).

    Parameters
    ----------
    target_scores:
        ``x_T`` with shape ``(..., n)``.
    target:
        ``"mean"`` or a finite number.

    Returns
    -------
    float or numpy.ndarray
        ``c``; an array over the leading axes when ``target="mean"`` and ``x_T`` has them.
    """
    if isinstance(target, str):
        if target != "mean":
            raise StatisticError(
                f'unknown target {target!r}; use "mean" (mean of the virtual target) or a number such as 1'
            )
        return checked_scores(target_scores).mean(axis=-1)
    if (
        isinstance(target, bool)
        or not isinstance(target, (int, float, np.integer, np.floating))
        or not math.isfinite(target)
    ):
        raise StatisticError(f'target must be "mean" or a finite number, got {target!r}')
    return float(target)


def bias_variance(scores: ArrayLike, c: ArrayLike) -> BiasVariance:
    """Bias-variance decomposition of each system's expected squared error against ``c``.

    SIGIR 2013 (Table 1) / IPM 2022 Eq. 7, docs/mathematics.md §3::

        Bias2 = (mean(x_i) - c)^2
        Var   = mean((x_i - mean(x_i))^2)          (population)
        Error = mean((x_i - c)^2) = Bias2 + Var

    Parameters
    ----------
    scores:
        ``(..., m, n)``; with topic grouping, the group means.
    c:
        Target constant, a scalar or an array broadcastable to ``scores.shape[:-1]``.

    Returns
    -------
    BiasVariance
        ``mean``, ``bias2``, ``var``, ``error``, each of shape ``scores.shape[:-1]``.
    """
    x = checked_scores(scores)
    c = checked_scores(c, min_ndim=0)
    mean = x.mean(axis=-1)
    return BiasVariance(
        mean=mean,
        bias2=(mean - c) ** 2,
        var=x.var(axis=-1),
        error=((x - c[..., np.newaxis]) ** 2).mean(axis=-1),
    )


def gap_decomposition(scores: ArrayLike, target: ArrayLike) -> GapDecomposition:
    """Bias-variance of the per-topic gap to the target, with the variance split into its sources.

    SIGIR 2013 Sec. 2.2 (Table 2) and IPM 2022 Eq. 15-16, docs/mathematics.md §3a::

        rho_i[j] = x_T[j] - x_i[j]
        Bias(rho) = mean(rho_i);  Var(rho) = population variance of rho_i
        mse = mean(rho_i^2) = Bias(rho)^2 + Var(rho)
        Var(rho) = Var(x_T) + Var(x_i) - 2 Cov(x_T, x_i)    (population covariance)

    Parameters
    ----------
    scores:
        ``(..., m, n)``.
    target:
        ``x_T`` with shape ``(..., n)``, as :func:`virtual_target` returns it.

    Returns
    -------
    GapDecomposition
        ``bias``, ``var``, ``mse``, ``var_target``, ``var_system``, ``cov``, one value per system.
    """
    x = checked_scores(scores, min_ndim=2)
    target_per_system = np.broadcast_to(np.expand_dims(checked_scores(target), -2), x.shape)
    gap = target_per_system - x
    target_deviation = target_per_system - target_per_system.mean(axis=-1, keepdims=True)
    system_deviation = x - x.mean(axis=-1, keepdims=True)
    return GapDecomposition(
        bias=gap.mean(axis=-1),
        var=gap.var(axis=-1),
        mse=(gap**2).mean(axis=-1),
        var_target=(target_deviation**2).mean(axis=-1),
        var_system=(system_deviation**2).mean(axis=-1),
        cov=(target_deviation * system_deviation).mean(axis=-1),
    )


def _constant_topic_count(constant: np.ndarray) -> int | np.ndarray:
    count = np.count_nonzero(constant, axis=-1)
    return int(count) if count.ndim == 0 else count


def normalize_max_min(scores: ArrayLike) -> Normalized:
    """Max-min normalisation per topic.

    IPM 2022 Eq. 11, docs/mathematics.md §3c: ``x'[i, j] = (x[i, j] - min_i x[i, j]) / (max_i x[i, j] -
    min_i x[i, j])``, so the target becomes 1 on every topic. PIN: a topic where every system has the
    same score gets ``x' = 1`` for every system, and such topics are counted.

    Parameters
    ----------
    scores:
        ``(..., m, n)``.

    Returns
    -------
    Normalized
        ``scores`` of the input's shape and ``constant_topics`` (an int, or per leading index).
    """
    x = checked_scores(scores, min_ndim=2)
    low = x.min(axis=-2, keepdims=True)
    span = x.max(axis=-2, keepdims=True) - low
    constant = span == 0
    normalized = np.divide(x - low, span, out=np.ones_like(x), where=~constant)
    return Normalized(normalized, _constant_topic_count(constant[..., 0, :]))


def normalize_target_ratio(scores: ArrayLike, target_system: int | None = None) -> Normalized:
    """Target-ratio normalisation per topic: each score as a fraction of the virtual target.

    Zhang et al., CIKM 2014 (target-ratio normalisation); docs/mathematics.md §3c:
    ``x'[i, j] = x[i, j] / x_T[j]``. PIN: a topic where every system
    has the same score (in particular ``x_T = 0``) gets ``x' = 1`` for every system; ``constant_topics``
    counts the topics where every system has the same score, as for :func:`normalize_max_min`.
    Our reading: a ratio to the best score only ranks systems when scores are non-negative, so a
    negative score raises :class:`StatisticError`. With ``target_system`` (SIGIR 2013 Sec. 2.5) the
    ratio is to that system's score (other systems may exceed 1); a topic where it scores 0 while the
    systems differ has no ratio and raises.

    Parameters
    ----------
    scores:
        ``(..., m, n)``, non-negative.
    target_system:
        Row of the system the ratio is taken to, ``None`` for the virtual target.

    Returns
    -------
    Normalized
        ``scores`` of the input's shape and ``constant_topics``.
    """
    x = checked_scores(scores, min_ndim=2, non_negative_for="target-ratio normalisation")
    target = np.expand_dims(per_topic_target(x, target_system), -2)
    constant = x.max(axis=-2, keepdims=True) == x.min(axis=-2, keepdims=True)
    undefined = (target == 0) & ~constant
    if undefined.any():
        position = int(np.flatnonzero(undefined.reshape(-1, undefined.shape[-1]).any(axis=0))[0])
        raise StatisticError(
            f"target-ratio normalisation: the target system scores 0 on topic position {position} "
            "where other systems score more; the ratio is undefined there"
        )
    normalized = np.divide(x, target, out=np.ones_like(x), where=~constant)
    return Normalized(normalized, _constant_topic_count(constant[..., 0, :]))


def group_target_ratio(grouped: ArrayLike, grouped_target: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """CIKM 2014 Eq. 6 on groups: each system's group mean over the target's group mean.

    Our reading (docs/mathematics.md §3c): ``x'[i, g] = mean_{j in g} x[i, j] / mean_{j in g}
    x_T[j]``, the target becoming 1 on every group; §3c's PIN keeps per-topic ratios first as
    the default, this is the explicit ``normalize: group-target-ratio``. A group whose target mean is
    0 while every system's mean is equal gets 1 (the per-topic PIN, read per group); 0 while the
    systems differ raises. Without grouping (groups of one topic) it equals :func:`normalize_target_ratio`.

    Parameters
    ----------
    grouped:
        ``(..., m, g)`` non-negative group means.
    grouped_target:
        ``(..., g)`` the target's group means.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The ratios ``(..., m, g)`` and the target's own ``(..., g)`` (1, or 1 on constant groups).
    """
    x = checked_scores(grouped, min_ndim=2, non_negative_for="target-ratio normalisation")
    target = np.expand_dims(checked_scores(grouped_target), -2)
    constant = x.max(axis=-2, keepdims=True) == x.min(axis=-2, keepdims=True)
    if ((target == 0) & ~constant).any():
        raise StatisticError(
            "group target-ratio: the target's mean is 0 on a group where other systems score more; "
            "the ratio is undefined there"
        )
    ratio = np.divide(x, target, out=np.ones_like(x), where=target != 0)
    return ratio, np.ones(target.shape[:-2] + target.shape[-1:])


def group_ratio_constant_topics(scores: ArrayLike, grouping: Grouping | None, difficulty: ArrayLike) -> int:
    """How many topics the group target-ratio neutralises: those in a group made only of topics on which
    every system scores the same, so every system's ratio there is 1 (set to 1 when the target's mean is 0).

    docs/mathematics.md §3c: the per-topic PIN ("a topic where every system has the same score gets 1;
    report how many") read per group. Without grouping it is the per-topic count of
    :func:`normalize_target_ratio`; a constant topic that shares a group with other topics is not
    neutralised. Random and sampled groupings count, per repetition, the distinct topics of such
    groups, averaged over the repetitions and rounded to a whole topic. ``difficulty`` is what
    difficulty groups are sorted by (:func:`topic_difficulty`).
    """
    x = checked_scores(scores, min_ndim=2)
    constant = x.max(axis=-2) == x.min(axis=-2)
    if grouping is None or not constant.any():
        return int(np.count_nonzero(constant))
    n = x.shape[-1]
    if isinstance(grouping, SampledGrouping):
        # groups may share topics: one indicator row per constant topic finds the distinct ones covered
        which = np.flatnonzero(constant)
        rows = np.vstack([constant, np.arange(n) == which[:, None]]).astype(float)
        blocks = _sampled_group_mean_blocks(rows, grouping.size, grouping.groups, grouping.repeats, grouping.seed)
        covered = 0.0
        for means in blocks:  # (r, 1 + z, groups)
            neutral = means[..., 0, :] == 1.0
            covered += float(((means[..., 1:, :] > 0) & neutral[..., None, :]).any(axis=-1).sum())
        return round(covered / grouping.repeats)
    row = constant[None, :].astype(float)
    if isinstance(grouping, DifficultyGrouping):
        sizes = _partition_sizes(n, grouping.size)
        order = np.argsort(np.asarray(difficulty), kind="stable")
        means = np.add.reduceat(row[:, order], np.concatenate(([0], np.cumsum(sizes)[:-1])), axis=-1) / sizes
        return int(sizes[means[0] == 1.0].sum())
    if isinstance(grouping, RandomGrouping):
        size, repeats, seed = _checked_grouping(grouping.size, grouping.repeats, grouping.seed)
        sizes = _partition_sizes(n, size)
        total = sum(
            float(((block[..., 0, :] == 1.0) @ sizes).sum())
            for block in _random_partition_mean_blocks(row, size, repeats, seed)
        )
        return round(total / repeats)
    raise StatisticError(f"unknown grouping {grouping!r}")


def _partition_sizes(n: int, size: int) -> np.ndarray:
    """Sizes of ``ceil(n / size)`` consecutive groups covering ``n`` topics, differing by at most one."""
    groups = -(-n // size)
    sizes = np.full(groups, n // groups)
    sizes[: n % groups] += 1
    return sizes


@dataclass(frozen=True)
class _RandomGroupingForms:
    """The linear and quadratic forms of topic-centred rows that every grouped term is made of.

    For rows ``d`` (each row minus its topic mean) and repetition ``r`` with groups ``g`` of sizes
    ``s_g`` (``G`` groups), the group means are ``y_g = sum_{j in g} d_j / s_g``. Then
    ``linear[..., r] = mean_g y_g = sum_j W[r, j] d_j`` with ``W[r, j] = 1 / (G s_{g_r(j)})``, and
    ``mean over r of mean_g y_g y'_g = d C d'`` with the co-occurrence matrix
    ``C[j, k] = 1/(R G) sum_r [j and k share a group in r] / s_g^2``; ``product = d @ C``.
    """

    linear: np.ndarray  # (..., k, R)
    product: np.ndarray  # (..., k, n)


def _random_grouping_forms(centred: np.ndarray, size: int, repeats: int, seed: int) -> _RandomGroupingForms:
    """:class:`_RandomGroupingForms` of ``centred`` under ``repeats`` seeded random partitions.

    The partitions are those of docs/mathematics.md §3b (``permuted`` rows of ``default_rng(seed)`` cut into
    ``ceil(n / size)`` near-equal groups). ``C`` is built a block of topics at a time by counting
    co-memberships (``bincount``), so the cost is one ``(k x n) @ (n x n)`` product in BLAS instead of
    ``repeats`` gathers of the whole matrix.
    """
    n = centred.shape[-1]
    permutations = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (repeats, 1)), axis=1)
    sizes = _partition_sizes(n, size)
    groups = sizes.size
    positions = np.empty_like(permutations)
    np.put_along_axis(positions, permutations, np.arange(n)[np.newaxis, :], axis=1)
    group_of_topic = np.repeat(np.arange(groups), sizes)[positions]  # (R, n)
    linear = centred @ (1.0 / (groups * sizes[group_of_topic])).T
    # members[r * G + g] lists the topics of group g in repetition r, padded with n where the group is
    # short; padding lands in an extra column n of each co-occurrence row, which is dropped.
    largest = int(sizes.max())
    slots = np.concatenate(([0], np.cumsum(sizes)[:-1]))[:, np.newaxis] + np.arange(largest)
    slots = np.where(np.arange(largest) < sizes[:, np.newaxis], slots, n)
    members = np.concatenate([permutations, np.full((repeats, 1), n)], axis=1)[:, slots].reshape(
        repeats * groups, largest
    )
    share = 1.0 / (repeats * groups * sizes.astype(np.float64) ** 2)
    own_group = group_of_topic + (np.arange(repeats) * groups)[:, np.newaxis]  # (R, n), rows of members
    product = np.empty(centred.shape)
    block = max(1, _COOCCURRENCE_BLOCK_VALUES // (repeats * largest))
    for first in range(0, n, block):
        last = min(n, first + block)
        groups_of_block = own_group[:, first:last]  # (R, b)
        cells = np.take(members, groups_of_block, axis=0)  # (R, b, largest)
        cells += (np.arange(last - first) * (n + 1))[np.newaxis, :, np.newaxis]
        weights = np.repeat(share[group_of_topic[:, first:last]], largest)
        counted = np.bincount(cells.ravel(), weights=weights, minlength=(last - first) * (n + 1))
        cooccurrence = counted.reshape(last - first, n + 1)[:, :n]
        product[..., first:last] = centred @ cooccurrence.T  # C is symmetric
    return _RandomGroupingForms(linear, product)


def _checked_grouping(size: int, repeats: int, seed: int) -> tuple[int, int, int]:
    return (
        whole_number(size, "group size"),
        whole_number(repeats, "number of random groupings"),
        whole_number(seed, "seed", minimum=0),
    )


def _grouped_bias_variance(means: np.ndarray, linear: np.ndarray, quadratic: np.ndarray, c: np.ndarray) -> BiasVariance:
    """:func:`bias_variance` of the group means averaged over repetitions, from the rows' forms."""
    c = c[..., np.newaxis] if c.ndim else c
    shifted = means[..., np.newaxis] - c  # (..., m, 1): topic mean minus c, per system
    average = linear.mean(axis=-1)
    return BiasVariance(
        mean=means + average,
        bias2=((shifted + linear) ** 2).mean(axis=-1),
        var=quadratic - (linear**2).mean(axis=-1),
        error=quadratic + 2.0 * shifted[..., 0] * average + shifted[..., 0] ** 2,
    )


def _sampled_group_mean_blocks(x: np.ndarray, size: int, groups: int, repeats: int, seed: int) -> Iterator[np.ndarray]:
    """Group means of ``x`` over ``groups`` sampled groups per repetition, in blocks ``(..., r, m, groups)``.

    Each group is ``size`` topics drawn without replacement (the first ``size`` of a random
    ordering of all topics); the draws depend only on ``(n, size, groups, repeats, seed)``.
    """
    n = x.shape[-1]
    if size > n:
        raise StatisticError(f"sampled groups of {size} topics need at least {size} topics, got {n}")
    rng = np.random.default_rng(seed)
    # per repetition: groups x n random keys and groups x size gathered scores of every row
    block = max(1, _SAMPLED_GROUPING_BLOCK_VALUES // (groups * (x.size // n * size + n)))
    for first in range(0, repeats, block):
        count = min(block, repeats - first)
        chosen = np.argsort(rng.random((count, groups, n)), axis=-1)[..., :size]  # (r, groups, size)
        means = x[..., chosen].mean(axis=-1)  # (..., m, r, groups)
        yield np.moveaxis(means, -2, -3)  # (..., r, m, groups)


def _random_partition_mean_blocks(x: np.ndarray, size: int, repeats: int, seed: int) -> Iterator[np.ndarray]:
    """Group means of ``x`` under the random partitions of :func:`_random_grouping_forms`, formed
    explicitly (for a statistic that is not a quadratic form, the group target-ratio), in blocks
    ``(..., r, m, groups)``."""
    n = x.shape[-1]
    permutations = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (repeats, 1)), axis=1)
    sizes = _partition_sizes(n, size)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    block = max(1, _SAMPLED_GROUPING_BLOCK_VALUES // max(1, x.size))
    for first in range(0, repeats, block):
        gathered = x[..., permutations[first : first + block]]  # (..., m, r, n)
        means = np.add.reduceat(gathered, starts, axis=-1) / sizes
        yield np.moveaxis(means, -2, -3)


_Terms = TypeVar("_Terms", BiasVariance, GapDecomposition)


def _mean_over_groupings(
    blocks: Iterator[np.ndarray], repeats: int, statistic: Callable[[np.ndarray], _Terms]
) -> _Terms:
    """Average of ``statistic`` over ``repeats`` groupings given as blocks of group means ``(..., r, m, g)``."""
    results = (statistic(grouped) for grouped in blocks)
    first = next(results)
    totals = {field.name: getattr(first, field.name).sum(axis=-2) for field in fields(first)}
    for result in results:
        for name in totals:
            totals[name] += getattr(result, name).sum(axis=-2)
    return type(first)(**{name: total / repeats for name, total in totals.items()})


def _random_group_terms(
    normalized: np.ndarray, target_scores: np.ndarray, c: np.ndarray, grouping: RandomGrouping
) -> tuple[BiasVariance, GapDecomposition]:
    """Bias-variance and the gap decomposition over random groups, the target grouped like the systems."""
    size, repeats, seed = _checked_grouping(grouping.size, grouping.repeats, grouping.seed)
    # The target rides along as an extra last row so it is grouped exactly like the systems.
    rows = np.concatenate([normalized, np.expand_dims(target_scores, -2)], axis=-2)
    means = rows.mean(axis=-1)
    centred = rows - means[..., np.newaxis]
    forms = _random_grouping_forms(centred, size, repeats, seed)
    systems, target = centred[..., :-1, :], centred[..., -1:, :]
    system_product, target_product = forms.product[..., :-1, :], forms.product[..., -1:, :]
    quadratic_system = (system_product * systems).sum(axis=-1)
    quadratic_cross = (system_product * target).sum(axis=-1)
    quadratic_target = (target_product * target).sum(axis=-1)
    system_linear, target_linear = forms.linear[..., :-1, :], forms.linear[..., -1:, :]
    gap_linear = target_linear - system_linear
    gap_shift = means[..., -1:] - means[..., :-1]
    gap_average = gap_linear.mean(axis=-1)
    quadratic_gap = quadratic_target - 2.0 * quadratic_cross + quadratic_system
    bias_var = _grouped_bias_variance(means[..., :-1], system_linear, quadratic_system, c)
    gap = GapDecomposition(
        bias=gap_shift + gap_average,
        var=quadratic_gap - (gap_linear**2).mean(axis=-1),
        mse=quadratic_gap + 2.0 * gap_shift * gap_average + gap_shift**2,
        var_target=np.broadcast_to(quadratic_target - (target_linear**2).mean(axis=-1), gap_shift.shape).copy(),
        var_system=quadratic_system - (system_linear**2).mean(axis=-1),
        cov=quadratic_cross - (target_linear * system_linear).mean(axis=-1),
    )
    return bias_var, gap


def tradeoff(bias2: ArrayLike, var: ArrayLike) -> Tradeoff:
    """Tradeoff degree: correlation across systems between Bias2 and Var.

    CIKM 2014 Table 2; IPM 2022 Table 9, docs/mathematics.md §3d. Strongly negative means a clear
    effectiveness-stability tradeoff. Each correlation is ``None`` with fewer than 3 systems or when
    either term has zero spread across systems (§3d: report null, never crash).

    Parameters
    ----------
    bias2, var:
        One value per system, shape ``(m,)``.

    Returns
    -------
    Tradeoff
        Pearson and Spearman (average ranks for ties) correlation coefficients.
    """
    bias2 = checked_scores(bias2)
    var = checked_scores(var)
    if bias2.ndim != 1 or bias2.shape != var.shape:
        raise StatisticError(
            f"tradeoff needs one Bias2 and one Var per system, got shapes {bias2.shape} and {var.shape}"
        )
    if bias2.size < 3 or np.ptp(bias2) == 0 or np.ptp(var) == 0:
        return Tradeoff(None, None)
    return Tradeoff(_pearson(bias2, var), _pearson(average_ranks(bias2), average_ranks(var)))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of a vector, ties sharing their average rank (``scipy.stats.rankdata``'s default).

    Written out because importing scipy.stats costs about a second of every gate's start.
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, values.size])
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(starts + (counts + 1) / 2, counts)
    return ranks


def _pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    a = a - a.mean()
    b = b - b.mean()
    scale = math.sqrt(float(a @ a) * float(b @ b))
    # A spread of ~1e-160 underflows to zero once squared.
    return None if scale == 0 else float(np.clip(a @ b / scale, -1.0, 1.0))


def apply_normalization(x: np.ndarray, method: str, target_system: int | None = None) -> Normalized:
    """Apply the named per-topic normalisation of docs/mathematics.md §3c (``none``, ``max-min`` or
    ``target-ratio``); ``group-target-ratio`` leaves the topics raw (:func:`group_target_ratio` acts on
    the group means), but refuses negative scores as the per-topic ratio does."""
    if method == "none":
        return Normalized(x, 0)
    if method == "max-min":
        return normalize_max_min(x)
    if method == "target-ratio":
        return normalize_target_ratio(x, target_system)
    if method == "group-target-ratio":
        return Normalized(checked_scores(x, min_ndim=2, non_negative_for="target-ratio normalisation"), 0)
    raise StatisticError(f"unknown normalisation {method!r}; use one of {', '.join(NORMALIZATIONS)}")


def topic_difficulty(scores: ArrayLike, grouping: Grouping | None, target_system: int | None = None) -> np.ndarray:
    """What difficulty grouping sorts topics by (docs/mathematics.md §3b, always on the raw scores): the per-topic
    target (:func:`per_topic_target`), or with ``DifficultyGrouping(difficulty="mean")`` the mean over
    systems (CIKM 2014 Sec. 3.2.2)."""
    x = checked_scores(scores, min_ndim=2)
    if isinstance(grouping, DifficultyGrouping) and grouping.difficulty == "mean":
        return x.mean(axis=-2)
    return per_topic_target(x, target_system)


def grouped_bias_variance(
    normalized: np.ndarray,
    target_scores: np.ndarray,
    raw_target: np.ndarray,
    c: ArrayLike,
    grouping: Grouping | None,
    group_ratio: bool = False,
) -> tuple[BiasVariance, GapDecomposition]:
    """Bias2/Var and the gap decomposition over topic groups (docs/mathematics.md §3, §3a, §3b).

    Stacks of matrices (``(..., m, n)``, e.g. bootstrap resamples) are evaluated at once: difficulty
    groups follow each matrix's own raw target, and random partitions depend only on ``(n, repeats,
    seed)``, so they are shared by the stack exactly as separate calls would draw them.

    Parameters
    ----------
    normalized:
        ``(..., m, n)`` scores after normalisation (docs/mathematics.md §3c: normalise first, then group).
    target_scores:
        ``(..., n)`` virtual target of ``normalized``.
    raw_target:
        ``(..., n)`` per-topic difficulty from the raw scores (PIN 3b), :func:`topic_difficulty`.
    c:
        Target constant, broadcastable to ``normalized.shape[:-1]``.
    grouping:
        ``None`` (topics are the samples), :class:`DifficultyGrouping`, :class:`RandomGrouping` or
        :class:`SampledGrouping`.
    group_ratio:
        Divide each group mean by the target's group mean first (:func:`group_target_ratio`, CIKM 2014
        Eq. 6); ``normalized`` and ``target_scores`` are then the raw scores and target.

    Returns
    -------
    (BiasVariance, GapDecomposition)
        Over systems, shape ``normalized.shape[:-1]``.
    """
    if group_ratio:
        return _group_ratio_terms(normalized, target_scores, raw_target, c, grouping)
    if grouping is None:
        return bias_variance(normalized, c), gap_decomposition(normalized, target_scores)
    if isinstance(grouping, DifficultyGrouping):
        n = normalized.shape[-1]
        # stable: ties keep topic order (PIN 3b); each matrix of a stack is sorted by its own target
        order = np.argsort(raw_target, axis=-1, kind="stable")
        sizes = _partition_sizes(n, grouping.size)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        by_difficulty = np.take_along_axis(normalized, np.expand_dims(order, -2), axis=-1)
        target_by_difficulty = np.take_along_axis(target_scores, order, axis=-1)
        grouped = np.add.reduceat(by_difficulty, starts, axis=-1) / sizes
        grouped_target = np.add.reduceat(target_by_difficulty, starts, axis=-1) / sizes
        return bias_variance(grouped, c), gap_decomposition(grouped, grouped_target)
    if isinstance(grouping, RandomGrouping):
        return _random_group_terms(normalized, target_scores, checked_scores(c, min_ndim=0), grouping)
    if isinstance(grouping, SampledGrouping):
        # IPM 2022 Sec. 3.3; both passes draw the same groups (they depend only on n and the settings)
        per_repetition_c = np.expand_dims(c, -2) if np.ndim(c) else c
        bias_var = _mean_over_groupings(
            _sampled_group_mean_blocks(normalized, grouping.size, grouping.groups, grouping.repeats, grouping.seed),
            grouping.repeats,
            lambda grouped: bias_variance(grouped, per_repetition_c),
        )
        with_target = np.concatenate([normalized, np.expand_dims(target_scores, -2)], axis=-2)
        gap = _mean_over_groupings(
            _sampled_group_mean_blocks(with_target, grouping.size, grouping.groups, grouping.repeats, grouping.seed),
            grouping.repeats,
            lambda grouped: gap_decomposition(grouped[..., :-1, :], grouped[..., -1, :]),
        )
        return bias_var, gap
    raise StatisticError(
        f"unknown grouping {grouping!r}; use DifficultyGrouping(size), RandomGrouping(size, repeats, seed), "
        "SampledGrouping(size, groups, repeats, seed) or None"
    )


def _group_ratio_terms(
    x: np.ndarray, target_scores: np.ndarray, difficulty: np.ndarray, c: ArrayLike, grouping: Grouping | None
) -> tuple[BiasVariance, GapDecomposition]:
    """:func:`grouped_bias_variance` with each group's means divided by the target's (CIKM 2014 Eq. 6)."""
    with_target = np.concatenate([x, np.expand_dims(target_scores, -2)], axis=-2)

    def terms(grouped: np.ndarray, per_repetition_c: ArrayLike) -> tuple[BiasVariance, GapDecomposition]:
        ratio, ratio_target = group_target_ratio(grouped[..., :-1, :], grouped[..., -1, :])
        return bias_variance(ratio, per_repetition_c), gap_decomposition(ratio, ratio_target)

    if grouping is None:
        return terms(with_target, c)
    if isinstance(grouping, DifficultyGrouping):
        order = np.argsort(difficulty, axis=-1, kind="stable")
        sizes = _partition_sizes(x.shape[-1], grouping.size)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        by_difficulty = np.take_along_axis(with_target, np.expand_dims(order, -2), axis=-1)
        return terms(np.add.reduceat(by_difficulty, starts, axis=-1) / sizes, c)
    if isinstance(grouping, RandomGrouping):
        size, repeats, seed = _checked_grouping(grouping.size, grouping.repeats, grouping.seed)
        blocks = list(_random_partition_mean_blocks(with_target, size, repeats, seed))
    elif isinstance(grouping, SampledGrouping):
        blocks = list(
            _sampled_group_mean_blocks(with_target, grouping.size, grouping.groups, grouping.repeats, grouping.seed)
        )
        repeats = grouping.repeats
    else:
        raise StatisticError(f"unknown grouping {grouping!r}")
    per_repetition_c = np.expand_dims(c, -2) if np.ndim(c) else c
    return (
        _mean_over_groupings(iter(blocks), repeats, lambda grouped: terms(grouped, per_repetition_c)[0]),
        _mean_over_groupings(iter(blocks), repeats, lambda grouped: terms(grouped, per_repetition_c)[1]),
    )


VARIANCES = ("population", "sample")
"""Accepted values of ``bias_variance_analysis(variance=...)`` (docs/mathematics.md §7, variance convention)."""


def variance_samples(topics: int, grouping: Grouping | None) -> int:
    """How many samples a variance is taken over: topics, or the groups of one grouping (docs/mathematics.md §3b)."""
    if isinstance(grouping, SampledGrouping):
        return grouping.groups
    if isinstance(grouping, DifficultyGrouping | RandomGrouping):
        return int(_partition_sizes(topics, grouping.size).size)
    return topics


def with_sample_variance(
    bias_var: BiasVariance | None, gap: GapDecomposition | None, samples: int
) -> tuple[BiasVariance | None, GapDecomposition | None]:
    """The terms with every variance and covariance over ``samples`` divided by ``samples - 1``.

    IPM 2022 Table 8 and Zuccon et al.'s pilot print sample variances; docs/mathematics.md §7 allows the
    convention as an explicit option. Bias2 and Bias(rho) are unchanged and the totals stay the sums
    ``Bias2 + Var`` and ``Bias(rho)^2 + Var(rho)`` (no longer ``mean((x - c)^2)``); docs/mathematics.md
    §7.

    Raises
    ------
    StatisticError
        With fewer than 2 samples (a sample variance of one value is undefined).
    """
    if samples < 2:
        raise StatisticError(f"a sample variance needs at least 2 samples (topics or groups), got {samples}")
    factor = samples / (samples - 1)
    if bias_var is not None:
        var = bias_var.var * factor
        bias_var = BiasVariance(mean=bias_var.mean, bias2=bias_var.bias2, var=var, error=bias_var.bias2 + var)
    if gap is not None:
        var = gap.var * factor
        gap = GapDecomposition(
            bias=gap.bias,
            var=var,
            mse=gap.bias**2 + var,
            var_target=gap.var_target * factor,
            var_system=gap.var_system * factor,
            cov=gap.cov * factor,
        )
    return bias_var, gap


def bias_variance_analysis(
    scores: ArrayLike,
    *,
    target: Literal["mean"] | float = "mean",
    normalize: str = "none",
    grouping: Grouping | None = None,
    variance: str = "population",
    target_system: int | None = None,
) -> BiasVarianceAnalysis:
    """The full bias-variance evaluation of one systems x topics matrix (docs/mathematics.md §2-3d).

    Steps: the virtual target over all systems (section 2); per-topic normalisation (3c, IPM 2022
    Eq. 11 / CIKM 2014); ``c`` from the normalised topic-level target (3, PIN default mean); optional
    topic grouping (3b); Bias2/Var (IPM 2022 Eq. 7), the gap decomposition (3a, IPM 2022 Eq. 15-16)
    and the tradeoff degree (3d).

    PINs followed: normalise per topic first, then group; difficulty is measured on the raw ``x_T``.
    Our readings: with grouping, ``c`` stays the constant computed from the topic-level (normalised)
    ``x_T``, not from the group means, and the gap decomposition compares each system's group means
    with the target's group means (averaged over repetitions for random grouping).

    Parameters
    ----------
    scores:
        ``(m, n)`` matrix, candidate included. For stacks of resampled matrices use the building
        blocks (:func:`bias_variance`, :func:`gap_decomposition`, ...), which broadcast.
    target:
        ``"mean"`` or a number, see :func:`target_constant`.
    normalize:
        One of :data:`NORMALIZATIONS`.
    grouping:
        ``None`` (topics are the samples), :class:`DifficultyGrouping`, :class:`RandomGrouping` or
        :class:`SampledGrouping`.
    variance:
        ``"population"`` (divide by the number of samples, the default) or ``"sample"`` (by one less,
        :func:`with_sample_variance`).
    target_system:
        Row of the system whose per-topic scores are the target (SIGIR 2013 Sec. 2.5,
        :func:`per_topic_target`); ``None`` for the virtual target.

    Returns
    -------
    BiasVarianceAnalysis
    """
    x = checked_scores(scores, min_ndim=2)
    if x.ndim != 2:
        raise StatisticError(f"bias_variance_analysis needs one systems x topics matrix, got shape {x.shape}")
    normalized = apply_normalization(x, normalize, target_system)
    target_scores = per_topic_target(normalized.scores, target_system)
    group_ratio = normalize == "group-target-ratio"
    # with the group ratio the target is 1 on every group, so the default c (its mean) is 1
    c = float(target_constant(np.ones(1) if group_ratio else target_scores, target))

    bias_var, gap = grouped_bias_variance(
        normalized.scores, target_scores, topic_difficulty(x, grouping, target_system), c, grouping, group_ratio
    )
    if variance == "sample":
        bias_var, gap = with_sample_variance(bias_var, gap, variance_samples(x.shape[-1], grouping))
    elif variance != "population":
        raise StatisticError(f"unknown variance convention {variance!r}; use one of {', '.join(VARIANCES)}")
    constant_topics = (
        group_ratio_constant_topics(x, grouping, topic_difficulty(x, grouping, target_system))
        if group_ratio
        else int(normalized.constant_topics)
    )
    return BiasVarianceAnalysis(
        c=c,
        target_scores=target_scores,
        constant_topics=constant_topics,
        bias_variance=bias_var,
        gap=gap,
        tradeoff=tradeoff(bias_var.bias2, bias_var.var),
    )
