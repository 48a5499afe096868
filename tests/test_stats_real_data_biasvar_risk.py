"""Bias-variance and risk statistics on real TREC per-topic matrices (read in place, skipped when absent).

Sources: ../shared/data/newbestsub_named_matrices (systems x topics, named runs) and
../shared/data/trec_topic_system_matrices (topics x systems, anonymised); see their PROVENANCE.md.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from conftest import random_group_bias_variance, shared_files, shared_path
from oracles import difficulty_groups, group_means
from scipy.optimize import linear_sum_assignment

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import DifficultyGrouping, RandomGrouping
from pytest_bvtest.stats.biasvar import (
    NORMALIZATIONS,
    bias_variance,
    bias_variance_analysis,
    gap_decomposition,
    normalize_max_min,
    normalize_target_ratio,
    target_constant,
    tradeoff,
    virtual_target,
)
from pytest_bvtest.stats.risk import trisk, urisk, zrisk_georisk

NAMED = "newbestsub_named_matrices"
ANONYMOUS = "trec_topic_system_matrices"
EXACT = 1e-12
# The two repositories round some per-topic scores differently, by at most 1e-4 (PROVENANCE.md).
ROUNDING = 1e-4


def csv_files(folder: str) -> list[str]:
    # An absent folder still yields one id, so the test runs and shared_path skips it cleanly.
    return shared_files(folder, "**/*.csv") or ["absent.csv"]


def csv_rows(path: Path) -> list[list[str]]:
    # MQ07-Top26.csv uses bare CR line endings.
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return [row for row in csv.reader(io.StringIO(text)) if row]


def read_named(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Wide CSV: header = label then topic ids; each row = run tag then one score per topic."""
    header, *body = csv_rows(path)
    return [row[0] for row in body], header[1:], np.array([[float(cell) for cell in row[1:]] for row in body])


def read_anonymous(path: Path) -> tuple[list[str] | None, np.ndarray]:
    """Topic x system CSV, optionally led by a ``topic`` column; returned as systems x topics."""
    header, *body = csv_rows(path)
    first = 1 if header[0] == "topic" else 0
    topics = [row[0] for row in body] if first else None
    return topics, np.array([[float(cell) for cell in row[first:]] for row in body]).T


def read_matrix(folder: str, name: str) -> np.ndarray:
    path = shared_path(folder, name)
    return read_named(path)[2] if folder == NAMED else read_anonymous(path)[1]


def assert_finite(*arrays: object) -> None:
    for array in arrays:
        assert np.isfinite(np.asarray(array, dtype=float)).all()


def check_bias_variance_family(scores: np.ndarray) -> None:
    target = virtual_target(scores)
    np.testing.assert_array_equal(target, scores.max(axis=0))
    c = target_constant(target)
    result = bias_variance(scores, c)
    assert_finite(result.mean, result.bias2, result.var, result.error)
    np.testing.assert_allclose(result.error, result.bias2 + result.var, rtol=0, atol=EXACT)
    np.testing.assert_allclose(result.var, scores.var(axis=1), rtol=0, atol=EXACT)

    gap = gap_decomposition(scores, target)
    assert_finite(gap.bias, gap.var, gap.mse, gap.cov)
    np.testing.assert_allclose(gap.mse, gap.bias**2 + gap.var, rtol=0, atol=EXACT)
    np.testing.assert_allclose(gap.var, gap.var_target + gap.var_system - 2 * gap.cov, rtol=0, atol=EXACT)
    assert (gap.bias >= 0).all()

    max_min = normalize_max_min(scores)
    np.testing.assert_array_equal(virtual_target(max_min.scores), 1.0)
    assert max_min.constant_topics == int((np.ptp(scores, axis=0) == 0).sum())

    groups = difficulty_groups(target, 5)
    assert sorted(np.concatenate(groups).tolist()) == list(range(scores.shape[1]))
    grouped_target = group_means(target, groups)
    assert (np.diff(grouped_target) >= 0).all()  # hardest group first
    grouped = random_group_bias_variance(scores, c, 5, 20, 0)
    np.testing.assert_allclose(grouped.error, grouped.bias2 + grouped.var, rtol=0, atol=EXACT)

    trade = tradeoff(result.bias2, result.var)
    assert trade.pearson is not None and -1 <= trade.pearson <= 1
    assert trade.spearman is not None and -1 <= trade.spearman <= 1


def check_analysis_pipeline(scores: np.ndarray, normalizations: tuple[str, ...]) -> None:
    for normalize in normalizations:
        for grouping in (None, DifficultyGrouping(5), RandomGrouping(5, repeats=10, seed=0)):
            analysis = bias_variance_analysis(scores, normalize=normalize, grouping=grouping)
            bias_var, gap = analysis.bias_variance, analysis.gap
            assert_finite(
                analysis.c, analysis.target_scores, bias_var.bias2, bias_var.var, bias_var.error, gap.var, gap.cov
            )
            np.testing.assert_allclose(bias_var.error, bias_var.bias2 + bias_var.var, rtol=0, atol=EXACT)
            np.testing.assert_allclose(gap.var, gap.var_target + gap.var_system - 2 * gap.cov, rtol=0, atol=EXACT)
            if normalize != "none":
                assert analysis.c == 1.0


def check_risk_family(scores: np.ndarray) -> None:
    baseline = scores[0]
    urisks = urisk(scores, baseline, 1)
    assert_finite(urisks)
    np.testing.assert_allclose(urisk(scores, baseline, 0), scores.mean(axis=1) - baseline.mean(), atol=EXACT)
    assert (urisks <= urisk(scores, baseline, 0) + EXACT).all()  # losses only ever weigh more
    trisks = trisk(scores, baseline, 1)
    assert_finite(trisks.t, trisks.p)
    assert trisks.t[0] == 0.0 and trisks.p[0] == 1.0  # the baseline against itself
    assert ((trisks.p >= 0) & (trisks.p <= 1)).all()
    risks = zrisk_georisk(scores, 1)
    assert_finite(risks.zrisk, risks.georisk)
    assert (risks.georisk >= 0).all()


@pytest.mark.parametrize("name", csv_files(NAMED))
def test_named_matrices(name: str) -> None:
    scores = read_matrix(NAMED, name)
    assert scores.ndim == 2 and scores.shape[0] >= 20
    check_bias_variance_family(scores)
    if (scores < 0).any():
        # AH99-LogAP: log10(AP) floored at -4.
        with pytest.raises(StatisticError, match="negative scores"):
            zrisk_georisk(scores, 1)
        with pytest.raises(StatisticError, match="negative scores"):
            normalize_target_ratio(scores)
        check_analysis_pipeline(scores, ("none", "max-min"))
        urisk(scores, scores[0], 1)
        trisk(scores, scores[0], 1)
    else:
        check_analysis_pipeline(scores, NORMALIZATIONS)
        check_risk_family(scores)


@pytest.mark.parametrize("name", csv_files(ANONYMOUS))
def test_anonymous_matrices(name: str) -> None:
    scores = read_matrix(ANONYMOUS, name)
    assert scores.shape[0] >= 20 and scores.shape[1] >= 40
    check_bias_variance_family(scores)
    check_analysis_pipeline(scores, NORMALIZATIONS)
    check_risk_family(scores)


def test_the_negative_file_is_really_read() -> None:
    scores = read_matrix(NAMED, "AH99-LogAP.csv")
    assert scores.shape == (129, 50) and scores.min() == -4.0


def test_cr_line_endings_are_read() -> None:
    runs, topics, scores = read_named(shared_path(NAMED, "MQ07-Top26.csv"))
    assert scores.shape == (26, 1153) and len(runs) == 26 and len(topics) == 1153


@pytest.mark.parametrize(
    ("named", "anonymous"),
    [
        ("AH99.csv", "sigir2019-statistical/adhoc8_ap.csv"),
        ("WEB14GD.csv", "sigir2018-simulation/web2014_ndcg20.csv"),
        ("R04.csv", "sigir2018-simulation/robust2004_ap.csv"),
    ],
)
def test_same_runs_in_two_repositories_give_the_same_statistics(named: str, anonymous: str) -> None:
    _, named_topics, named_scores = read_named(shared_path(NAMED, named))
    anonymous_topics, anonymous_scores = read_anonymous(shared_path(ANONYMOUS, anonymous))
    if anonymous_topics is not None:
        named_scores = named_scores[:, [named_topics.index(topic) for topic in anonymous_topics]]
    assert named_scores.shape == anonymous_scores.shape

    # Match every anonymous column to a distinct named run by its score vector.
    distance = np.abs(anonymous_scores[:, np.newaxis, :] - named_scores[np.newaxis, :, :]).max(axis=-1)
    columns, rows = linear_sum_assignment(distance)
    assert distance[columns, rows].max() <= ROUNDING + EXACT
    matched_named = named_scores[rows]

    named_target = virtual_target(named_scores)
    anonymous_target = virtual_target(anonymous_scores)
    np.testing.assert_allclose(anonymous_target, named_target, rtol=0, atol=ROUNDING + EXACT)
    named_c, anonymous_c = target_constant(named_target), target_constant(anonymous_target)
    assert anonymous_c == pytest.approx(named_c, abs=ROUNDING)

    # (mean - c)^2 moves by at most 2 |mean - c| (|d mean| + |d c|) <= 2 * 1 * 2e-4.
    named_bias_var = bias_variance(matched_named, named_c)
    anonymous_bias_var = bias_variance(anonymous_scores, anonymous_c)
    np.testing.assert_allclose(anonymous_bias_var.bias2, named_bias_var.bias2, rtol=0, atol=4 * ROUNDING)
    np.testing.assert_allclose(anonymous_bias_var.var, named_bias_var.var, rtol=0, atol=4 * ROUNDING)
    np.testing.assert_allclose(
        zrisk_georisk(anonymous_scores, 1).georisk, zrisk_georisk(matched_named, 1).georisk, rtol=0, atol=10 * ROUNDING
    )
    if distance[columns, rows].max() == 0:
        np.testing.assert_array_equal(anonymous_target, named_target)
        np.testing.assert_allclose(anonymous_bias_var.bias2, named_bias_var.bias2, rtol=0, atol=EXACT)
