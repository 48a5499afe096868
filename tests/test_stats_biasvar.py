"""Bias-variance family (MATH.md sections 2-3d): golden values, identities, invariances, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from conftest import random_group_bias_variance
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from oracles import difficulty_groups, group_means

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import DifficultyGrouping, RandomGrouping, SampledGrouping
from pytest_bvtest.stats import biasvar
from pytest_bvtest.stats.biasvar import (
    NORMALIZATIONS,
    BiasVariance,
    GapDecomposition,
    bias_variance,
    bias_variance_analysis,
    gap_decomposition,
    normalize_max_min,
    normalize_target_ratio,
    target_constant,
    tradeoff,
    virtual_target,
)

GOLDEN = 1e-6
EXACT = 1e-12

# SIGIR 2013 Table 1: per-query targets T and systems A, B, C over two queries.
SIGIR_T = [0.7, 0.2]
SIGIR_A = [0.3, 0.1]
SIGIR_B = [0.6, 0.08]
SIGIR_C = [0.65, 0.03]
SIGIR_MATRIX = np.array([SIGIR_A, SIGIR_B, SIGIR_C, SIGIR_T])

# IPM 2022 Table 2.
IPM_SYSTEMS = np.array([[0.8, 0.9, 0.4], [0.5, 0.6, 0.7], [0.3, 0.6, 0.3]])

unit_scores = st.floats(0.0, 1.0, allow_nan=False, width=64)
matrices = st.tuples(st.integers(1, 6), st.integers(1, 12)).flatmap(
    lambda shape: arrays(np.float64, shape, elements=unit_scores)
)
property_settings = settings(max_examples=60, deadline=None)


def assert_no_nan(*values: object) -> None:
    for value in values:
        if hasattr(value, "__dataclass_fields__"):
            assert_no_nan(*(getattr(value, name) for name in value.__dataclass_fields__))
        elif value is not None:
            assert np.isfinite(np.asarray(value, dtype=float)).all(), value


# --- golden values ---------------------------------------------------------------------------------


def test_sigir2013_table1_virtual_target_and_constant() -> None:
    target = virtual_target(SIGIR_MATRIX)
    np.testing.assert_allclose(target, SIGIR_T, atol=GOLDEN)
    assert target_constant(target) == pytest.approx(0.45, abs=GOLDEN)


def test_sigir2013_table1_bias_variance() -> None:
    result = bias_variance(SIGIR_MATRIX, target_constant(virtual_target(SIGIR_MATRIX)))
    np.testing.assert_allclose(result.mean[:2], [0.2, 0.34], atol=GOLDEN)
    # The table's "Bias" column is |mean - c|.
    np.testing.assert_allclose(np.sqrt(result.bias2), [0.25, 0.11, 0.11, 0.0], atol=GOLDEN)
    np.testing.assert_allclose(result.var, [0.01, 0.0676, 0.0961, 0.0625], atol=GOLDEN)
    np.testing.assert_allclose(result.error, [0.0725, 0.0797, 0.1082, 0.0625], atol=GOLDEN)


def test_sigir2013_table2_gap_decomposition() -> None:
    gap = gap_decomposition(SIGIR_MATRIX, virtual_target(SIGIR_MATRIX))
    np.testing.assert_allclose(gap.bias, [0.25, 0.11, 0.11, 0.0], atol=GOLDEN)
    np.testing.assert_allclose(gap.var, [0.0225, 0.0001, 0.0036, 0.0], atol=GOLDEN)
    np.testing.assert_allclose(gap.mse, [0.085, 0.0122, 0.0157, 0.0], atol=GOLDEN)
    np.testing.assert_allclose(gap.var_target, 0.0625, atol=GOLDEN)
    np.testing.assert_allclose(gap.var_system, [0.01, 0.0676, 0.0961, 0.0625], atol=GOLDEN)
    # Cov(T, A) = ((0.7-0.45)(0.3-0.2) + (0.2-0.45)(0.1-0.2)) / 2
    assert gap.cov[0] == pytest.approx(0.025, abs=GOLDEN)


def test_ipm2022_table2_bias_with_c_one_and_mean_target() -> None:
    target = virtual_target(IPM_SYSTEMS)
    np.testing.assert_allclose(target, [0.8, 0.9, 0.7], atol=GOLDEN)
    assert target_constant(target) == pytest.approx(0.8, abs=GOLDEN)
    np.testing.assert_allclose(
        bias_variance(IPM_SYSTEMS, target_constant(target, 1)).bias2, [0.09, 0.16, 0.36], atol=GOLDEN
    )
    np.testing.assert_allclose(
        bias_variance(IPM_SYSTEMS, target_constant(target)).bias2, [0.01, 0.04, 0.16], atol=GOLDEN
    )


def test_difficulty_grouping_worked_example() -> None:
    # x_T = [0.4, 0.8, 0.4, 1.0]: hardest first with the tie kept in topic order -> {0, 2}, {1, 3}.
    scores = np.array([[0.2, 0.8, 0.4, 0.6], [0.4, 0.2, 0.0, 1.0]])
    groups = difficulty_groups(virtual_target(scores), 2)
    assert [group.tolist() for group in groups] == [[0, 2], [1, 3]]
    np.testing.assert_allclose(group_means(scores, groups), [[0.3, 0.7], [0.2, 0.6]], atol=EXACT)

    analysis = bias_variance_analysis(scores, grouping=DifficultyGrouping(2))
    assert analysis.c == pytest.approx(0.65, abs=EXACT)
    np.testing.assert_allclose(analysis.bias_variance.bias2, [0.0225, 0.0625], atol=EXACT)
    np.testing.assert_allclose(analysis.bias_variance.var, [0.04, 0.04], atol=EXACT)
    np.testing.assert_allclose(analysis.gap.bias, [0.15, 0.25], atol=EXACT)
    np.testing.assert_allclose(analysis.gap.var, [0.0025, 0.0025], atol=EXACT)


def test_normalisations_worked_example() -> None:
    scores = np.array([[0.2, 0.5, 0.0], [0.4, 0.5, 0.0], [0.1, 0.5, 0.0]])
    max_min = normalize_max_min(scores)
    np.testing.assert_allclose(max_min.scores, [[1 / 3, 1, 1], [1, 1, 1], [0, 1, 1]], atol=EXACT)
    assert max_min.constant_topics == 2
    ratio = normalize_target_ratio(scores)
    np.testing.assert_allclose(ratio.scores, [[0.5, 1, 1], [1, 1, 1], [0.25, 1, 1]], atol=EXACT)
    assert ratio.constant_topics == 2


# --- identities and invariances ---------------------------------------------------------------------


@property_settings
@given(matrices, st.floats(-1.0, 2.0))
def test_error_is_bias2_plus_var(scores: np.ndarray, c: float) -> None:
    for constant in (c, target_constant(virtual_target(scores))):
        result = bias_variance(scores, constant)
        np.testing.assert_allclose(result.error, result.bias2 + result.var, rtol=0, atol=EXACT)
        np.testing.assert_allclose(result.error, ((scores - constant) ** 2).mean(axis=1), rtol=0, atol=EXACT)


@property_settings
@given(matrices)
def test_gap_identities(scores: np.ndarray) -> None:
    gap = gap_decomposition(scores, virtual_target(scores))
    np.testing.assert_allclose(gap.mse, gap.bias**2 + gap.var, rtol=0, atol=EXACT)
    np.testing.assert_allclose(gap.var, gap.var_target + gap.var_system - 2 * gap.cov, rtol=0, atol=EXACT)
    reference_cov = [np.cov(virtual_target(scores), row, bias=True)[0, 1] for row in scores]
    np.testing.assert_allclose(gap.cov, reference_cov, rtol=0, atol=EXACT)
    assert (gap.bias >= 0).all()


@property_settings
@given(matrices, st.randoms(use_true_random=False))
def test_topic_permutation_invariance(scores: np.ndarray, random) -> None:
    topics = list(range(scores.shape[1]))
    random.shuffle(topics)
    shuffled = scores[:, topics]
    c = target_constant(virtual_target(scores))
    assert target_constant(virtual_target(shuffled)) == pytest.approx(c, abs=EXACT)
    for name in ("mean", "bias2", "var", "error"):
        np.testing.assert_allclose(
            getattr(bias_variance(shuffled, c), name), getattr(bias_variance(scores, c), name), atol=EXACT
        )
    for name in ("bias", "var", "mse", "var_target", "var_system", "cov"):
        np.testing.assert_allclose(
            getattr(gap_decomposition(shuffled, virtual_target(shuffled)), name),
            getattr(gap_decomposition(scores, virtual_target(scores)), name),
            atol=EXACT,
        )
    for normalize in (normalize_max_min, normalize_target_ratio):
        np.testing.assert_array_equal(normalize(shuffled).scores, normalize(scores).scores[:, topics])
        assert normalize(shuffled).constant_topics == normalize(scores).constant_topics


@property_settings
@given(matrices, st.randoms(use_true_random=False))
def test_system_permutation_equivariance(scores: np.ndarray, random) -> None:
    systems = list(range(scores.shape[0]))
    random.shuffle(systems)
    shuffled = scores[systems]
    np.testing.assert_array_equal(virtual_target(shuffled), virtual_target(scores))
    for normalize in NORMALIZATIONS:
        for grouping in (None, DifficultyGrouping(3), RandomGrouping(3, repeats=5, seed=1)):
            permuted = bias_variance_analysis(shuffled, normalize=normalize, grouping=grouping)
            original = bias_variance_analysis(scores, normalize=normalize, grouping=grouping)
            assert permuted.c == original.c
            for name in ("mean", "bias2", "var", "error"):
                expected = getattr(original.bias_variance, name)[systems]
                np.testing.assert_allclose(getattr(permuted.bias_variance, name), expected, atol=EXACT)
            for name in ("bias", "var", "mse", "var_target", "var_system", "cov"):
                np.testing.assert_allclose(
                    getattr(permuted.gap, name), getattr(original.gap, name)[systems], atol=EXACT
                )
            assert permuted.tradeoff.spearman == original.tradeoff.spearman


@property_settings
@given(
    st.integers(1, 30).flatmap(lambda n: arrays(np.float64, n, elements=unit_scores, unique=True)),
    st.integers(1, 8),
    st.randoms(use_true_random=False),
)
def test_difficulty_groups_follow_the_topics_when_permuted(target: np.ndarray, size: int, random) -> None:
    topics = list(range(target.size))
    random.shuffle(topics)
    shuffled_groups = difficulty_groups(target[topics], size)
    original_groups = difficulty_groups(target, size)
    assert [np.array(topics)[group].tolist() for group in shuffled_groups] == [
        group.tolist() for group in original_groups
    ]


@property_settings
@given(
    st.integers(1, 40).flatmap(lambda n: arrays(np.float64, n, elements=st.sampled_from([0.0, 0.25, 0.5]))),
    st.integers(1, 12),
)
def test_difficulty_groups_partition(target: np.ndarray, size: int) -> None:
    groups = difficulty_groups(target, size)
    sizes = [len(group) for group in groups]
    assert len(groups) == math.ceil(target.size / size)
    assert max(sizes) <= size and max(sizes) - min(sizes) <= 1
    assert sizes == [len(part) for part in np.array_split(np.arange(target.size), len(groups))]
    order = np.concatenate(groups)
    assert sorted(order.tolist()) == list(range(target.size))
    # Hardest first, ties in topic order: exactly a stable sort by (x_T, topic).
    assert order.tolist() == sorted(range(target.size), key=lambda topic: (target[topic], topic))


@property_settings
@given(matrices)
def test_max_min_normalised_target_is_one(scores: np.ndarray) -> None:
    normalized = normalize_max_min(scores)
    np.testing.assert_array_equal(virtual_target(normalized.scores), 1.0)
    assert ((normalized.scores >= 0) & (normalized.scores <= 1)).all()
    assert normalized.constant_topics == int((scores.max(axis=0) == scores.min(axis=0)).sum())
    analysis = bias_variance_analysis(scores, normalize="max-min")
    assert analysis.c == 1.0
    np.testing.assert_allclose(analysis.gap.var_target, 0.0, atol=EXACT)


@property_settings
@given(matrices)
def test_target_ratio_matches_definition(scores: np.ndarray) -> None:
    normalized = normalize_target_ratio(scores)
    target = scores.max(axis=0)
    constant = scores.max(axis=0) == scores.min(axis=0)
    expected = np.where(constant, 1.0, scores / np.where(target == 0, 1.0, target))
    np.testing.assert_allclose(normalized.scores, expected, atol=EXACT)
    np.testing.assert_array_equal(virtual_target(normalized.scores), 1.0)


@property_settings
@given(matrices)
def test_grouping_with_size_one_is_no_grouping(scores: np.ndarray) -> None:
    plain = bias_variance_analysis(scores)
    for grouping in (DifficultyGrouping(1), RandomGrouping(1, repeats=7, seed=3)):
        grouped = bias_variance_analysis(scores, grouping=grouping)
        for name in ("mean", "bias2", "var", "error"):
            np.testing.assert_allclose(
                getattr(grouped.bias_variance, name), getattr(plain.bias_variance, name), atol=EXACT
            )
        for name in ("bias", "var", "mse", "var_target", "var_system", "cov"):
            np.testing.assert_allclose(getattr(grouped.gap, name), getattr(plain.gap, name), atol=EXACT)


def _random_grouping_by_loop(scores: np.ndarray, c: float, size: int, repeats: int, seed: int) -> np.ndarray:
    """Reference: one repetition at a time, with numpy.array_split, same random stream."""
    n = scores.shape[1]
    permutations = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (repeats, 1)), axis=1)
    bias2 = []
    for permutation in permutations:
        means = np.stack(
            [scores[:, part].mean(axis=1) for part in np.array_split(permutation, math.ceil(n / size))], axis=1
        )
        bias2.append((means.mean(axis=1) - c) ** 2 + means.var(axis=1))
    return np.mean(bias2, axis=0)


def _random_grouping_terms_by_loop(
    scores: np.ndarray, target: np.ndarray, c: float, size: int, repeats: int, seed: int
) -> tuple[BiasVariance, GapDecomposition]:
    """Reference: every repetition's groups formed (numpy.array_split), both decompositions of their means averaged."""
    n = scores.shape[1]
    permutations = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (repeats, 1)), axis=1)
    bias_vars, gaps = [], []
    for permutation in permutations:
        parts = np.array_split(permutation, math.ceil(n / size))
        means = np.stack([scores[:, part].mean(axis=1) for part in parts], axis=1)
        target_means = np.array([target[part].mean() for part in parts])
        bias_vars.append(bias_variance(means, c))
        gaps.append(gap_decomposition(means, target_means))
    average = lambda results, name: np.mean([getattr(result, name) for result in results], axis=0)  # noqa: E731
    return (
        BiasVariance(**{name: average(bias_vars, name) for name in ("mean", "bias2", "var", "error")}),
        GapDecomposition(
            **{name: average(gaps, name) for name in ("bias", "var", "mse", "var_target", "var_system", "cov")}
        ),
    )


@pytest.mark.parametrize(
    ("systems", "topics", "size", "repeats", "seed", "levels"),
    [
        (5, 23, 5, 40, 9, None),
        (7, 50, 5, 100, 0, 4),
        (3, 10, 10, 5, 2, None),
        (6, 31, 1, 8, 3, 2),
        (9, 200, 7, 60, 11, None),
    ],
)
def test_random_grouping_from_cooccurrence_equals_forming_every_group(
    systems, topics, size, repeats, seed, levels, monkeypatch
) -> None:
    """The co-occurrence forms give every field of both decompositions as the loop over repetitions does,
    with unequal group sizes, graded (tied) scores, and blocks of a few topics."""
    rng = np.random.default_rng(systems * topics)
    scores = (
        rng.random((systems, topics)) if levels is None else rng.integers(0, levels + 1, (systems, topics)) / levels
    )
    target = virtual_target(scores)
    c = float(target_constant(target))
    expected_bias_var, expected_gap = _random_grouping_terms_by_loop(scores, target, c, size, repeats, seed)
    for block in (biasvar._COOCCURRENCE_BLOCK_VALUES, repeats * 3):
        monkeypatch.setattr(biasvar, "_COOCCURRENCE_BLOCK_VALUES", block)
        direct = random_group_bias_variance(scores, c, size, repeats, seed)
        analysis = bias_variance_analysis(scores, grouping=RandomGrouping(size, repeats=repeats, seed=seed))
        for name in ("mean", "bias2", "var", "error"):
            np.testing.assert_allclose(getattr(direct, name), getattr(expected_bias_var, name), rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(
                getattr(analysis.bias_variance, name), getattr(expected_bias_var, name), rtol=1e-12, atol=1e-15
            )
        for name in ("bias", "var", "mse", "var_target", "var_system", "cov"):
            np.testing.assert_allclose(getattr(analysis.gap, name), getattr(expected_gap, name), rtol=1e-12, atol=1e-15)


def test_random_grouping_is_reproducible_per_seed() -> None:
    scores = np.random.default_rng(5).random((4, 30))
    first = random_group_bias_variance(scores, 0.7, 5, 20, 0)
    again = random_group_bias_variance(scores, 0.7, 5, 20, 0)
    other = random_group_bias_variance(scores, 0.7, 5, 20, 1)
    np.testing.assert_array_equal(first.var, again.var)
    assert not np.allclose(first.var, other.var)
    # Grouping averages out topic noise: the group-level variance is far below the topic-level one.
    assert (first.var < bias_variance(scores, 0.7).var).all()


def test_building_blocks_broadcast_over_a_resample_axis() -> None:
    stack = np.random.default_rng(2).random((3, 4, 9))
    targets = virtual_target(stack)
    constants = target_constant(targets)
    assert constants.shape == (3,)
    stacked_bias_var = bias_variance(stack, constants[:, np.newaxis])
    stacked_gap = gap_decomposition(stack, targets)
    stacked_random = random_group_bias_variance(stack, constants[:, np.newaxis], 2, 6, 4)
    for index, matrix in enumerate(stack):
        c = target_constant(virtual_target(matrix))
        np.testing.assert_allclose(stacked_bias_var.error[index], bias_variance(matrix, c).error, atol=EXACT)
        np.testing.assert_allclose(
            stacked_gap.cov[index], gap_decomposition(matrix, virtual_target(matrix)).cov, atol=EXACT
        )
        np.testing.assert_allclose(
            stacked_random.var[index], random_group_bias_variance(matrix, c, 2, 6, 4).var, atol=EXACT
        )
        np.testing.assert_allclose(normalize_max_min(stack).scores[index], normalize_max_min(matrix).scores, atol=EXACT)


# --- tradeoff --------------------------------------------------------------------------------------


def test_tradeoff_agrees_with_scipy() -> None:
    rng = np.random.default_rng(7)
    bias2, var = rng.random(12), rng.random(12)
    var[3] = var[5]  # a tie, so Spearman must use average ranks
    result = tradeoff(bias2, var)
    assert result.pearson == pytest.approx(scipy.stats.pearsonr(bias2, var).statistic, abs=EXACT)
    assert result.spearman == pytest.approx(scipy.stats.spearmanr(bias2, var).statistic, abs=EXACT)
    assert tradeoff(np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.2, 0.1])) == biasvar.Tradeoff(-1.0, -1.0)


@pytest.mark.filterwarnings("error")
def test_tradeoff_is_none_when_undefined() -> None:
    assert tradeoff(np.array([0.1, 0.2]), np.array([0.3, 0.1])) == biasvar.Tradeoff(None, None)
    assert tradeoff(np.array([0.1, 0.2, 0.3]), np.array([0.2, 0.2, 0.2])) == biasvar.Tradeoff(None, None)
    assert tradeoff(np.array([0.5, 0.5, 0.5]), np.array([0.1, 0.2, 0.3])) == biasvar.Tradeoff(None, None)


# --- edge cases ------------------------------------------------------------------------------------

EDGE_MATRICES = {
    "one topic": np.array([[0.3], [0.5], [0.1]]),
    "one system": np.array([[0.3, 0.5, 0.0, 0.9]]),
    "two systems": np.array([[0.3, 0.5, 0.0, 0.9], [0.2, 0.6, 0.0, 0.8]]),
    "all zero": np.zeros((3, 5)),
    "zero system and zero topic": np.array([[0.0, 0.0, 0.0, 0.0], [0.4, 0.0, 0.2, 0.6], [0.1, 0.0, 0.3, 0.6]]),
    "identical systems": np.tile([0.1, 0.7, 0.3, 0.3, 0.0], (4, 1)),
}


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", EDGE_MATRICES)
@pytest.mark.parametrize("normalize", NORMALIZATIONS)
@pytest.mark.parametrize(
    "grouping",
    [None, DifficultyGrouping(2), RandomGrouping(2, repeats=4, seed=0)],
    ids=["none", "difficulty", "random"],
)
def test_edge_matrices_give_finite_results(name: str, normalize: str, grouping: object) -> None:
    scores = EDGE_MATRICES[name]
    analysis = bias_variance_analysis(scores, normalize=normalize, grouping=grouping)
    assert_no_nan(analysis.c, analysis.target_scores, analysis.bias_variance, analysis.gap, analysis.tradeoff)
    np.testing.assert_allclose(
        analysis.bias_variance.error, analysis.bias_variance.bias2 + analysis.bias_variance.var, atol=EXACT
    )
    if not (normalize == "group-target-ratio" and isinstance(grouping, RandomGrouping)):
        # the group ratio's Bias(rho) varies between random partitions: mse averages Bias(rho)^2, not its square
        np.testing.assert_allclose(analysis.gap.mse, analysis.gap.bias**2 + analysis.gap.var, atol=EXACT)
    if scores.shape[0] < 3 or np.ptp(scores, axis=0).max() == 0:
        assert analysis.tradeoff == biasvar.Tradeoff(None, None)


def test_constant_matrices_normalise_to_one_and_are_counted() -> None:
    for name in ("one system", "all zero", "identical systems"):
        scores = EDGE_MATRICES[name]
        for normalize in ("max-min", "target-ratio"):
            analysis = bias_variance_analysis(scores, normalize=normalize)
            assert analysis.constant_topics == scores.shape[1]
            np.testing.assert_array_equal(analysis.bias_variance.bias2, 0.0)
            np.testing.assert_array_equal(analysis.bias_variance.var, 0.0)
    assert (
        bias_variance_analysis(EDGE_MATRICES["zero system and zero topic"], normalize="target-ratio").constant_topics
        == 1
    )


def test_system_equal_to_target_has_zero_gap() -> None:
    scores = np.array([[0.3, 0.9, 0.2], [0.6, 0.1, 0.0], [0.6, 0.9, 0.2]])
    gap = gap_decomposition(scores, virtual_target(scores))
    assert gap.bias[2] == 0 and gap.var[2] == 0 and gap.mse[2] == 0
    assert gap.cov[2] == pytest.approx(gap.var_target[2], abs=EXACT)


def test_one_topic_has_zero_variance() -> None:
    result = bias_variance(EDGE_MATRICES["one topic"], 0.5)
    np.testing.assert_array_equal(result.var, 0.0)
    np.testing.assert_allclose(result.bias2, [0.04, 0.0, 0.16], atol=EXACT)


def test_fixed_target_constant() -> None:
    analysis = bias_variance_analysis(SIGIR_MATRIX, target=0.5)
    assert analysis.c == 0.5
    np.testing.assert_allclose(analysis.bias_variance.bias2, (SIGIR_MATRIX.mean(axis=1) - 0.5) ** 2, atol=EXACT)


# --- refusals --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: virtual_target(np.array([[0.1, np.nan]])), "NaN"),
        (lambda: virtual_target(np.zeros((0, 3))), "no scores"),
        (lambda: virtual_target(np.array([0.1, 0.2])), "systems x topics"),
        (lambda: normalize_target_ratio(np.array([[-1.0, 0.2], [0.0, 0.1]])), "negative scores"),
        (lambda: target_constant(np.array([0.1]), "median"), "unknown target"),
        (lambda: target_constant(np.array([0.1]), math.inf), "finite number"),
        (lambda: random_group_bias_variance(np.ones((2, 3)), 1.0, 2, 0, 0), "random groupings"),
        (lambda: random_group_bias_variance(np.ones((2, 3)), 1.0, 2, 3, -1), "seed"),
        (lambda: RandomGrouping(5, repeats=10, seed=True), "seed"),
        (lambda: bias_variance_analysis(np.ones((2, 3)), normalize="z-score"), "unknown normalisation"),
        (lambda: bias_variance_analysis(np.ones((2, 2, 3))), "one systems x topics matrix"),
        (lambda: tradeoff(np.ones(3), np.ones(4)), "one Bias2 and one Var per system"),
    ],
)
def test_bad_input_raises_statistic_error(call, message: str) -> None:
    with pytest.raises(StatisticError, match=message):
        call()


@pytest.mark.parametrize(
    "values",
    [
        [3.0, 1.0, 2.0],
        [1.0, 1.0, 1.0],
        [0.5, 0.2, 0.5, 0.1, 0.2, 0.5],
        list(np.random.default_rng(4).integers(0, 5, 200) / 4),
        list(np.random.default_rng(5).random(57)),
    ],
)
def test_average_ranks_equal_scipy_rankdata(values) -> None:
    assert np.array_equal(biasvar.average_ranks(np.array(values)), scipy.stats.rankdata(values))


def test_sampled_groups_match_a_naive_loop_over_the_same_draws():
    # IPM 2022 Sec. 3.3: 50 groups of 10 topics, each drawn without replacement from the whole set, repeated.
    from pytest_bvtest.spec.model import SampledGrouping

    x = np.random.default_rng(7).random((5, 40))
    result = bias_variance_analysis(x, grouping=SampledGrouping(size=10, groups=50, repeats=20, seed=3))
    rng = np.random.default_rng(3)
    target = x.max(axis=0)
    c = target.mean()
    bias2, var, gap_var = [], [], []
    for _ in range(20):
        chosen = np.argsort(rng.random((50, 40)), axis=-1)[:, :10]
        assert all(len(set(group)) == 10 for group in chosen)  # without replacement inside a group
        means = np.array([[row[group].mean() for group in chosen] for row in x])
        target_means = np.array([target[group].mean() for group in chosen])
        bias2.append((means.mean(axis=1) - c) ** 2)
        var.append(means.var(axis=1))
        gap_var.append((target_means - means).var(axis=1))
    np.testing.assert_allclose(result.bias_variance.bias2, np.mean(bias2, axis=0), atol=1e-14)
    np.testing.assert_allclose(result.bias_variance.var, np.mean(var, axis=0), atol=1e-14)
    np.testing.assert_allclose(result.gap.var, np.mean(gap_var, axis=0), atol=1e-14)


def test_difficulty_by_the_mean_over_systems_sorts_topics_by_that_mean():
    # CIKM 2014 Sec. 3.2.2: difficulty by the target or by the mean over systems.
    x = np.array([[0.9, 0.5, 0.2], [0.0, 0.5, 0.3], [0.0, 0.5, 0.3]])
    # target [0.9, 0.5, 0.3] -> topics 2, 1 | 0; mean [0.3, 0.5, 0.267] -> topics 2, 0 | 1
    for difficulty, groups in (("target", [[2, 1], [0]]), ("mean", [[2, 0], [1]])):
        expected = np.array([[row[g].mean() for g in groups] for row in x]).var(axis=1)
        result = bias_variance_analysis(x, grouping=DifficultyGrouping(2, difficulty))
        np.testing.assert_allclose(result.bias_variance.var, expected, atol=1e-15)
    assert not np.allclose(
        bias_variance_analysis(x, grouping=DifficultyGrouping(2)).bias_variance.var,
        bias_variance_analysis(x, grouping=DifficultyGrouping(2, "mean")).bias_variance.var,
    )
    with pytest.raises(StatisticError, match="difficulty"):
        DifficultyGrouping(2, "median")


def test_sample_variance_option_divides_by_n_minus_1_topics_or_groups():
    # SIGIR 2013 Table 1's system B = [0.6, 0.08] against c = 0.45: population Var 0.0676, sample Var 0.1352.
    scores = np.array([[0.3, 0.1], [0.6, 0.08], [0.65, 0.03], [0.7, 0.2]])
    population = bias_variance_analysis(scores, target=0.45)
    sample = bias_variance_analysis(scores, target=0.45, variance="sample")
    assert population.bias_variance.var[1] == pytest.approx(0.0676, abs=1e-12)
    assert sample.bias_variance.var[1] == pytest.approx(0.1352, abs=1e-12)
    np.testing.assert_allclose(sample.bias_variance.var, scores.var(axis=1, ddof=1), atol=1e-15)
    np.testing.assert_allclose(
        sample.bias_variance.error, sample.bias_variance.bias2 + sample.bias_variance.var, atol=1e-15
    )
    np.testing.assert_allclose(sample.gap.var, (scores.max(axis=0) - scores).var(axis=1, ddof=1), atol=1e-15)
    np.testing.assert_allclose(sample.gap.cov, [np.cov(scores.max(axis=0), row)[0, 1] for row in scores], atol=1e-15)
    # with grouping the samples are the groups: 3 difficulty groups of 2 out of 6 topics
    x = np.random.default_rng(5).random((3, 6))
    grouped = bias_variance_analysis(x, grouping=DifficultyGrouping(2), variance="sample")
    order = np.argsort(x.max(axis=0), kind="stable")
    means = np.stack([x[:, order[k : k + 2]].mean(axis=1) for k in (0, 2, 4)], axis=1)
    np.testing.assert_allclose(grouped.bias_variance.var, means.var(axis=1, ddof=1), atol=1e-15)
    with pytest.raises(StatisticError, match="at least 2 samples"):
        bias_variance_analysis(x[:, :2], grouping=DifficultyGrouping(2), variance="sample")


# --- a named system as the per-topic target (SIGIR 2013 Sec. 2.5) -----------------------------------------


def test_named_target_system_reproduces_sigir_2013_tables_1_and_2_beside_a_system_that_beats_it() -> None:
    # D beats T on query 1, so the virtual target is no longer T; naming T as the target restores Tables 1-2.
    scores = np.array([SIGIR_A, SIGIR_B, SIGIR_C, SIGIR_T, [0.8, 0.0]])
    analysis = bias_variance_analysis(scores, target_system=3)
    np.testing.assert_allclose(analysis.target_scores, SIGIR_T, atol=EXACT)
    assert analysis.c == pytest.approx(0.45, abs=EXACT)
    np.testing.assert_allclose(np.sqrt(analysis.bias_variance.bias2[:3]), [0.25, 0.11, 0.11], atol=GOLDEN)
    np.testing.assert_allclose(analysis.bias_variance.var[:3], [0.01, 0.0676, 0.0961], atol=GOLDEN)
    np.testing.assert_allclose(analysis.bias_variance.error[:3], [0.0725, 0.0797, 0.1082], atol=GOLDEN)
    np.testing.assert_allclose(analysis.gap.var[:3], [0.0225, 0.0001, 0.0036], atol=GOLDEN)
    np.testing.assert_allclose(analysis.gap.mse[:3], [0.085, 0.0122, 0.0157], atol=GOLDEN)
    # D's gap is negative on query 1 (it beats the target): rho = [-0.1, 0.2]
    assert analysis.gap.bias[4] == pytest.approx(0.05, abs=EXACT)
    assert bias_variance_analysis(scores).c == pytest.approx(0.5, abs=EXACT)  # the virtual target [0.8, 0.2]


def test_named_target_ratio_and_difficulty_follow_the_named_system() -> None:
    scores = np.array([[0.2, 0.4, 0.1, 0.3], [0.5, 0.2, 0.3, 0.6], [0.4, 0.5, 0.2, 0.3]])
    ratio = normalize_target_ratio(scores, target_system=2).scores
    naive = np.array([[scores[i, j] / scores[2, j] for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(ratio, naive, rtol=1e-15)
    grouped = bias_variance_analysis(scores, target_system=2, grouping=DifficultyGrouping(2))
    # the named system's raw scores order the topics: [2, 3] then [0, 1]
    expected_means = np.array([[scores[i, [2, 3]].mean(), scores[i, [0, 1]].mean()] for i in range(3)])
    np.testing.assert_allclose(grouped.bias_variance.var, expected_means.var(axis=1), atol=EXACT)
    with pytest.raises(StatisticError, match="scores 0 on topic position 1"):
        normalize_target_ratio(np.array([[0.2, 0.3], [0.5, 0.0]]), target_system=1)
    with pytest.raises(StatisticError, match="out of range"):
        bias_variance_analysis(scores, target_system=3)


# --- CIKM 2014 Eq. 6: target-ratio on group means ----------------------------------------------------------


def _naive_group_ratio_terms(scores: np.ndarray, groups: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Bias2 and Var of group mean / target group mean against c = 1, by loops."""
    target = scores.max(axis=0)
    bias2, var = [], []
    for row in scores:
        ratios = [sum(row[j] for j in g) / sum(target[j] for j in g) for g in groups]
        mean = sum(ratios) / len(ratios)
        bias2.append((mean - 1.0) ** 2)
        var.append(sum((r - mean) ** 2 for r in ratios) / len(ratios))
    return np.array(bias2), np.array(var)


def test_group_target_ratio_on_difficulty_groups_equals_a_naive_loop() -> None:
    scores = np.random.default_rng(5).random((4, 7))
    analysis = bias_variance_analysis(scores, normalize="group-target-ratio", grouping=DifficultyGrouping(3))
    order = np.argsort(scores.max(axis=0), kind="stable")
    groups = [list(order[:3]), list(order[3:5]), list(order[5:])]  # ceil(7/3) = 3 groups: 3, 2, 2
    bias2, var = _naive_group_ratio_terms(scores, groups)
    assert analysis.c == 1.0
    np.testing.assert_allclose(analysis.bias_variance.bias2, bias2, rtol=1e-12)
    np.testing.assert_allclose(analysis.bias_variance.var, var, rtol=1e-12)
    # it differs from the per-topic ratio grouped afterwards (MATH.md 3c's default)
    per_topic = bias_variance_analysis(scores, normalize="target-ratio", grouping=DifficultyGrouping(3))
    assert not np.allclose(per_topic.bias_variance.var, analysis.bias_variance.var)


def test_group_target_ratio_on_random_partitions_averages_a_naive_loop_over_the_same_partitions() -> None:
    scores = np.random.default_rng(6).random((3, 6))
    analysis = bias_variance_analysis(scores, normalize="group-target-ratio", grouping=RandomGrouping(2, 5, seed=4))
    permutations = np.random.default_rng(4).permuted(np.tile(np.arange(6), (5, 1)), axis=1)
    terms = [_naive_group_ratio_terms(scores, [list(p[0:2]), list(p[2:4]), list(p[4:6])]) for p in permutations]
    np.testing.assert_allclose(analysis.bias_variance.bias2, np.mean([t[0] for t in terms], axis=0), rtol=1e-12)
    np.testing.assert_allclose(analysis.bias_variance.var, np.mean([t[1] for t in terms], axis=0), rtol=1e-12)


def test_group_target_ratio_without_grouping_is_the_per_topic_ratio() -> None:
    scores = np.random.default_rng(7).random((4, 5))
    by_groups = bias_variance_analysis(scores, normalize="group-target-ratio")
    per_topic = bias_variance_analysis(scores, normalize="target-ratio")
    np.testing.assert_allclose(by_groups.bias_variance.error, per_topic.bias_variance.error, rtol=1e-12)
    np.testing.assert_allclose(by_groups.gap.mse, per_topic.gap.mse, rtol=1e-12)


def _naive_neutralised_topics(constant: np.ndarray, groupings: list[list[list[int]]]) -> int:
    """Per grouping, the distinct topics of groups made only of constant topics; averaged and rounded."""
    counts = [len({topic for group in grouping if all(constant[group]) for topic in group}) for grouping in groupings]
    return round(sum(counts) / len(counts))


def test_group_target_ratio_counts_the_topics_of_the_groups_it_sets_to_one() -> None:
    """MATH.md 3c: topics set to 1 are reported. The group ratio sets a group to 1 when every system scores the same
    on each of its topics; those topics were counted as 0 before."""
    rng = np.random.default_rng(11)
    scores = rng.random((3, 12))
    scores[:, [1, 4, 6, 9, 10]] = 0.0  # five topics every system misses: target 0, ratio set to 1
    scores[:, 7] = 0.5  # a sixth on which every system scores 0.5
    constant = scores.max(axis=0) == scores.min(axis=0)
    assert bias_variance_analysis(scores, normalize="target-ratio").constant_topics == 6
    assert bias_variance_analysis(scores, normalize="group-target-ratio").constant_topics == 6  # groups of one
    # difficulty groups of 4: the five zeros sort first, so only the first group (4 topics) is all constant
    by_difficulty = bias_variance_analysis(scores, normalize="group-target-ratio", grouping=DifficultyGrouping(4))
    order = np.argsort(scores.max(axis=0), kind="stable")
    assert by_difficulty.constant_topics == _naive_neutralised_topics(
        constant, [[list(order[0:4]), list(order[4:8]), list(order[8:12])]]
    )
    assert by_difficulty.constant_topics == 4
    random = bias_variance_analysis(scores, normalize="group-target-ratio", grouping=RandomGrouping(2, 400, seed=3))
    permutations = np.random.default_rng(3).permuted(np.tile(np.arange(12), (400, 1)), axis=1)
    partitions = [[list(p[k : k + 2]) for k in range(0, 12, 2)] for p in permutations]
    assert random.constant_topics == _naive_neutralised_topics(constant, partitions) >= 1
    sampled = bias_variance_analysis(
        scores, normalize="group-target-ratio", grouping=SampledGrouping(size=2, groups=30, repeats=200, seed=5)
    )
    chosen = np.argsort(np.random.default_rng(5).random((200, 30, 12)), axis=-1)[..., :2]
    groupings = [[list(group) for group in repetition] for repetition in chosen]
    assert sampled.constant_topics == _naive_neutralised_topics(constant, groupings) >= 1
