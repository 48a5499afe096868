"""Predicted grades, trusted as far as they agree with people (docs/mathematics.md §10, "Predicted grades").

A team's own assessor (an LLM, a classifier) grades unjudged documents. Its grades are not facts: on a sample of
judged documents it is compared with the people's grades (:func:`confusion_matrix`, :func:`cohen_kappa`), and a
predicted grade enters the plausible gradings as the distribution of true grades given that prediction, the prior
of an unjudged grade refined by Bayes' rule with the predictor's smoothed confusion (:func:`prediction_likelihoods`,
:func:`refine_prior`), tempered by how surely it agrees with people beyond chance (:func:`trust`): a predictor that
agrees no better than chance changes nothing, a perfect one settles each predicted grade.

Also here: the seeded sample of judged documents, stratified by grade (:func:`stratified_sample`), and the shipped
baseline predictor's k nearest judged neighbours (:func:`tfidf_vectors`, :func:`neighbour_grades`).

Pure numpy (and scipy.sparse for the term vectors).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtri

if TYPE_CHECKING:
    from scipy import sparse

from pytest_bvtest.checks import checked_seed
from pytest_bvtest.errors import StatisticError

#: Pseudo-documents per human grade that the predictor's confusion rows are shrunk with towards the predictions' own
#: distribution (:func:`prediction_likelihoods`): a grade the sample holds few documents of says little.
LIKELIHOOD_SHRINKAGE = 1.0
#: The one-sided confidence at which a predictor must agree with people better than chance to be used
#: (:func:`agrees_beyond_chance`).
AGREEMENT_CONFIDENCE = 0.95
#: The stream of the judged sample's draw (:func:`stratified_sample`).
SAMPLE_STREAM = 33


def confusion_matrix(human: Sequence[int], predicted: Sequence[int], grades: int) -> np.ndarray:
    """``C[i, j]``: the documents people graded ``i`` that the predictor graded ``j`` (grades 0 to ``grades - 1``; a
    human grade below 0, as spam's -2, counts as 0)."""
    human_grades = np.maximum(np.asarray(human, dtype=np.int64), 0)
    predicted_grades = np.asarray(predicted, dtype=np.int64)
    if human_grades.shape != predicted_grades.shape or human_grades.ndim != 1:
        raise StatisticError("human and predicted grades must be two sequences of one length")
    if ((human_grades >= grades) | (predicted_grades < 0) | (predicted_grades >= grades)).any():
        raise StatisticError(f"grades must lie in 0 to {grades - 1}")
    counts = np.zeros((grades, grades))
    np.add.at(counts, (human_grades, predicted_grades), 1.0)
    return counts


def cohen_kappa(confusion: np.ndarray) -> tuple[float, float, float]:
    """Observed agreement, Cohen's kappa and kappa's large-sample standard error (Cohen, *A coefficient of agreement
    for nominal scales*, Educ. Psychol. Meas. 1960, Eq. 1 and 9):

    ``p_o = sum_i C[i, i] / n``, ``p_e = sum_i (C[i, .] / n) (C[., i] / n)``, ``kappa = (p_o - p_e) / (1 - p_e)``,
    ``se = sqrt(p_o (1 - p_o) / (n (1 - p_e)^2))``.

    Kappa is 0 when both raters always give one grade (``p_e = 1``: agreement is certain, nothing to measure)."""
    counts = np.asarray(confusion, dtype=float)
    total = counts.sum()
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1] or total <= 0:
        raise StatisticError("a confusion matrix must be square and count at least one document")
    observed = float(np.trace(counts) / total)
    expected = float((counts.sum(axis=1) / total) @ (counts.sum(axis=0) / total))
    if expected >= 1.0:
        return observed, 0.0, 0.0
    kappa = (observed - expected) / (1.0 - expected)
    error = float(np.sqrt(observed * (1.0 - observed) / (total * (1.0 - expected) ** 2)))
    return observed, float(kappa), error


def trust(confusion: np.ndarray, confidence: float = AGREEMENT_CONFIDENCE) -> float:
    """How far a predictor's grades are trusted: kappa's one-sided lower confidence bound at ``confidence``, clipped
    to ``[0, 1]``, ``eta = min(1, max(0, kappa - z_confidence se))``: the learning rate of a tempered likelihood
    ``L^eta`` (generalized Bayes: Grünwald, *The safe Bayesian*, ALT 2012; Holmes & Walker, *Assigning a value to a
    power likelihood in a general Bayesian model*, Biometrika 2017).

    Our reading: the predictor's record is measured on judged documents, while its grades are used on unjudged ones,
    which other runs retrieved; its errors there need not be those of the sample (on the shared collections a
    predictor by run ranks predicts the unjudged documents a candidate ranks high relevant far more often than they
    are). A likelihood taken at full strength then over-commits; tempered by how surely the predictor agrees with
    people beyond chance, a chance-level predictor (eta 0) changes nothing, a perfect one on a large sample (eta 1)
    is Bayes' rule itself."""
    _, kappa, error = cohen_kappa(confusion)
    return float(min(1.0, max(0.0, kappa - float(ndtri(confidence)) * error)))


def agrees_beyond_chance(confusion: np.ndarray, confidence: float = AGREEMENT_CONFIDENCE) -> bool:
    """Whether kappa's one-sided lower confidence bound lies above 0 (:func:`trust` above 0): the predictor agrees
    with people better than chance at ``confidence``. One that does not is not used."""
    return trust(confusion, confidence) > 0.0


def prediction_likelihoods(confusion: np.ndarray, shrinkage: float = LIKELIHOOD_SHRINKAGE) -> np.ndarray:
    """``L[i, j] = P(predicted j | true grade i)``, each human grade's row of the confusion smoothed towards the
    predictions' overall distribution ``q``:

    ``L[i, j] = (C[i, j] + m q_j) / (sum_j C[i, j] + m)``, ``q_j = sum_i C[i, j] / n`` (``m`` pseudo-documents).

    A likelihood, not ``P(true | predicted)``: it does not depend on how often the sample holds each grade (it is
    stratified, and unjudged documents are relevant less often than judged ones); the prior brings that
    (:func:`refine_prior`). A grade the sample does not hold gets ``q``: its rows say nothing."""
    counts = np.asarray(confusion, dtype=float)
    total = counts.sum()
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1] or total <= 0 or shrinkage < 0:
        raise StatisticError("a confusion matrix must be square and count at least one document; shrinkage >= 0")
    overall = counts.sum(axis=0) / total
    rows = counts.sum(axis=1, keepdims=True)
    weight = rows + shrinkage
    return np.where(weight > 0, (counts + shrinkage * overall) / np.where(weight > 0, weight, 1.0), overall)


def refine_prior(prior: np.ndarray, likelihoods: np.ndarray) -> np.ndarray:
    """Bayes' rule: ``P(true g | prediction) = prior(g) L(g) / sum_h prior(h) L(h)``, over the last axis.

    ``prior`` is ``(..., grades)``; ``likelihoods`` broadcasts against it (each document's column of
    :func:`prediction_likelihoods` for its predicted grade; ones where nothing was predicted). A prior the likelihoods
    give no mass (every grade impossible) stays as it is."""
    prior = np.asarray(prior, dtype=float)
    joint = prior * np.asarray(likelihoods, dtype=float)
    total = joint.sum(axis=-1, keepdims=True)
    return np.where(total > 0, joint / np.where(total > 0, total, 1.0), prior)


def stratified_sample(grades: Sequence[int], size: int, seed: int) -> np.ndarray:
    """Positions of ``size`` judged documents (all of them when fewer), as evenly as they allow across their grades
    (a human grade below 0 counts as 0): a predictor's confusion then has rows for the rare top grades too. Seeded:
    ``numpy.random.default_rng([seed, SAMPLE_STREAM])`` permutes each grade's documents, taken in grade order;
    the result is sorted."""
    seed = checked_seed(seed)
    graded = np.maximum(np.asarray(grades, dtype=np.int64), 0)
    if size >= graded.size:
        return np.arange(graded.size)
    rng = np.random.default_rng([seed, SAMPLE_STREAM])
    strata = [rng.permutation(np.flatnonzero(graded == grade)) for grade in np.unique(graded)]
    quota = np.zeros(len(strata), dtype=np.int64)
    left = size
    while left > 0:  # fill the smallest strata first, then share what remains evenly
        open_strata = [k for k, stratum in enumerate(strata) if quota[k] < len(stratum)]
        share = max(1, left // len(open_strata))
        for k in open_strata:
            take = min(share, len(strata[k]) - quota[k], left)
            quota[k] += take
            left -= take
            if left == 0:
                break
    return np.sort(np.concatenate([stratum[:count] for stratum, count in zip(strata, quota)]))


_TOKEN = re.compile(r"[^\W_]+")


def tfidf_vectors(texts: Sequence[str], vocabulary: dict[str, int] | None = None) -> sparse.csr_matrix:
    """Unit-length TF-IDF vectors of ``texts`` (lower-cased word tokens; ``tf = 1 + log(count)``,
    ``idf = log((1 + N) / (1 + df)) + 1`` over ``texts``): each row one text."""
    from scipy import sparse  # imported here: only the shipped predictor's neighbours read term vectors

    tokens = [_TOKEN.findall(text.lower()) for text in texts]
    vocabulary = {} if vocabulary is None else vocabulary
    rows, columns = [], []
    for row, words in enumerate(tokens):
        for word in words:
            rows.append(row)
            columns.append(vocabulary.setdefault(word, len(vocabulary)))
    counts = sparse.csr_matrix(
        (np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(columns, dtype=np.int64))),
        shape=(len(texts), len(vocabulary)),
    )
    counts.sum_duplicates()
    counts.data = 1.0 + np.log(counts.data)
    frequency = np.bincount(counts.indices, minlength=len(vocabulary))
    idf = np.log((1.0 + len(texts)) / (1.0 + frequency)) + 1.0
    weighted = counts.multiply(idf[np.newaxis, :]).tocsr()
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    return sparse.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ weighted


def neighbour_grades(similarity: np.ndarray, grades: np.ndarray, neighbours: int) -> np.ndarray:
    """Each row's grade by its ``neighbours`` most similar judged documents (k nearest neighbours): the grade whose
    neighbours' similarities sum highest (ties to the lower grade); 0 for a row with no judged document of positive
    similarity. ``similarity`` is ``(rows, judged)`` (minus infinity where a judged document may not vote: the
    document itself), ``grades`` the judged documents' grades (below 0 counts as 0)."""
    similarity = np.asarray(similarity, dtype=float)
    graded = np.maximum(np.asarray(grades, dtype=np.int64), 0)
    if similarity.ndim != 2 or similarity.shape[1] != graded.size:
        raise StatisticError("similarity must be (rows, judged documents), one grade per judged document")
    if graded.size == 0:
        return np.zeros(similarity.shape[0], dtype=np.int64)
    count = min(neighbours, graded.size)
    nearest = np.argpartition(-similarity, count - 1, axis=1)[:, :count]
    weights = np.take_along_axis(similarity, nearest, axis=1)
    weights = np.where(np.isfinite(weights) & (weights > 0), weights, 0.0)
    votes = np.zeros((similarity.shape[0], int(graded.max()) + 1))
    np.add.at(votes, (np.repeat(np.arange(similarity.shape[0]), count), graded[nearest].ravel()), weights.ravel())
    return np.argmax(votes, axis=1)
