"""The TREC Web track's graded measures, computed exactly as its ``gdeval.pl`` does (docs/mathematics.md §1).

pytrec_eval has no ERR and its nDCG uses linear gain, so the project computes ERR@k and the
exponential-gain nDCG@k (ir_measures' ``nDCG(dcg='exp-log2')@k``) itself. The conventions follow
gdeval.pl line by line:

- a ranking is ordered by score descending, ties by docno descending (string order); the rank
  column of a run file plays no part;
- a retrieved document that is not judged, or judged with a grade <= 0 (spam -2 included), has
  gain 0;
- the ideal ranking of a topic is its positive grades sorted descending, cut at k;
- a ranking shorter than k is not padded with anything that counts (gains stop where it stops);
- ERR's stopping probability is R(g) = (2^g - 1) / 2^4: 4 is gdeval's top grade, and a grade above
  it is an input error for ERR (docs/mathematics.md §1 PIN). Exponential-gain nDCG accepts grades up to
  :data:`~pytest_bvtest.scoring.measures.NDCG_TOP_GRADE` (its gain 2^g - 1 overflows near 1024; gdeval.pl
  itself refuses grades above 4 for both measures).

The measures themselves are pure functions on a grade matrix (topics on rows, ranks on columns),
so every topic and every cutoff of a run is computed in one vectorised pass.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

import numpy as np

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.io.qrels import Qrels, check_top_grade

GDEVAL_TOP_GRADE = 4
"""gdeval.pl's ``$MAX_JUDGMENT``: the grade whose stopping probability is (2^4 - 1) / 2^4."""


def ranked_docnos(scores: Mapping[str, float], depth: int | None = None) -> list[str]:
    """The documents of one ranking in evaluation order, the first ``depth`` of them.

    Parameters
    ----------
    scores:
        ``docno -> retrieval score`` for one topic.
    depth:
        How many documents to keep from the top; ``None`` keeps them all.

    Returns
    -------
    list[str]
        Docnos by score descending, ties broken by docno descending (string order): the order of
        trec_eval and gdeval.pl (docs/mathematics.md §1, "Ranking order").
    """
    pairs = zip(scores.values(), scores.keys())
    if depth is None or depth >= len(scores):
        return [docno for _, docno in sorted(pairs, reverse=True)]
    return [docno for _, docno in heapq.nlargest(depth, pairs)]


def ranked_grade_matrix(
    judgments: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Mapping[str, float]],
    topics: Sequence[str],
    depth: int | None = None,
    *,
    unjudged: float = 0.0,
) -> np.ndarray:
    """Grades of each topic's ranked documents, one row per topic.

    Parameters
    ----------
    judgments:
        ``qid -> docno -> grade`` (the qrels).
    rankings:
        ``qid -> docno -> score`` (the run); every topic in ``topics`` must be present.
    topics:
        The rows, in order.
    depth:
        Ranks to keep (the largest cutoff needed); ``None`` keeps every retrieved document.
    unjudged:
        What an unjudged document's cell holds: 0 (gain 0, as gdeval.pl scores it), or NaN to mark it
        (:func:`with_unjudged_graded`).

    Returns
    -------
    numpy.ndarray
        ``grades[j, r]`` = the grade of the document at rank ``r + 1`` of topic ``topics[j]``,
        ``unjudged`` for an unjudged document and 0 for ranks past the end of a shorter ranking; float64.
    """
    rows = []
    for qid in topics:
        topic_grades = judgments.get(qid, {})
        rows.append([topic_grades.get(docno, unjudged) for docno in ranked_docnos(rankings[qid], depth)])
    return _zero_padded(rows, depth)


def with_unjudged_graded(marked: np.ndarray, grade: float, depth: int) -> np.ndarray:
    """The grade matrix of docs/mathematics.md §8's optimistic corner: the unjudged documents (NaN in ``marked``,
    :func:`ranked_grade_matrix` with ``unjudged=nan``) of the first ``depth`` ranks graded ``grade``, those below
    them 0."""
    graded = np.nan_to_num(marked, nan=0.0)
    top = graded[:, :depth]
    top[np.isnan(marked[:, :depth])] = grade
    return graded


def ideal_grade_matrix(
    judgments: Mapping[str, Mapping[str, int]], topics: Sequence[str], depth: int | None = None
) -> np.ndarray:
    """Each topic's positive grades sorted descending (gdeval.pl's ideal ranking), one row per topic.

    Parameters
    ----------
    judgments:
        ``qid -> docno -> grade`` (the qrels).
    topics:
        The rows, in order.
    depth:
        Ranks to keep; ``None`` keeps every positive grade.

    Returns
    -------
    numpy.ndarray
        ``ideal[j, r]`` = the (r + 1)-th largest positive grade of topic ``topics[j]``, 0 past the
        topic's last positive grade; float64.
    """
    rows = []
    for qid in topics:
        positive = sorted((grade for grade in judgments.get(qid, {}).values() if grade > 0), reverse=True)
        rows.append(positive if depth is None else positive[:depth])
    return _zero_padded(rows, depth)


def _zero_padded(rows: list[list[int]], depth: int | None) -> np.ndarray:
    width = max((len(row) for row in rows), default=0)
    if depth is not None:
        width = min(width, depth)
    matrix = np.zeros((len(rows), width))
    for j, row in enumerate(rows):
        matrix[j, : len(row)] = row
    return matrix


def exponential_gain(grades: np.ndarray) -> np.ndarray:
    """gdeval's gain 2^g - 1, with every grade <= 0 (unjudged, non-relevant, spam) giving 0."""
    return np.exp2(np.clip(grades, 0, None)) - 1


def expected_reciprocal_rank(grades: np.ndarray) -> np.ndarray:
    """ERR of each ranking (row) of a grade matrix, cut at the matrix's width.

    Chapelle, Metzler, Zhang and Grinspan, "Expected Reciprocal Rank for Graded Relevance",
    CIKM 2009, Section 4 (the cascade-model definition of ERR), as gdeval.pl 1.2/1.3 computes it;
    docs/mathematics.md §1 and its PIN on grades above 4.

    Parameters
    ----------
    grades:
        ``grades[..., r]`` = grade at rank ``r + 1``; grades <= 0 count as gain 0. Grades must not
        exceed :data:`GDEVAL_TOP_GRADE` (see :func:`check_err_grades`).

    Returns
    -------
    numpy.ndarray
        ERR@k with k = ``grades.shape[-1]``::

            ERR@k = sum_{r=1..k} (1/r) R(g_r) prod_{s<r} (1 - R(g_s)),   R(g) = (2^g - 1) / 2^4
    """
    stop = exponential_gain(grades) / 2.0**GDEVAL_TOP_GRADE
    reached = np.cumprod(1.0 - stop, axis=-1)
    # The user reaches rank r when no earlier rank satisfied them: shift the running product by one.
    reached_before = np.concatenate([np.ones_like(reached[..., :1]), reached[..., :-1]], axis=-1)
    ranks = np.arange(1, grades.shape[-1] + 1)
    return np.sum(stop * reached_before / ranks, axis=-1)


def exponential_dcg(grades: np.ndarray) -> np.ndarray:
    """DCG with exponential gain of each ranking (row) of a grade matrix, cut at its width.

    Järvelin and Kekäläinen, "Cumulated Gain-Based Evaluation of IR Techniques", TOIS 2002
    (discounted cumulated gain), with the gain 2^g - 1 and discount log2(r + 1) of Burges et al.,
    ICML 2005, as gdeval.pl computes it (docs/mathematics.md §1).

    Parameters
    ----------
    grades:
        ``grades[..., r]`` = grade at rank ``r + 1``; grades <= 0 count as gain 0.

    Returns
    -------
    numpy.ndarray
        ``DCG@k = sum_{r=1..k} (2^g_r - 1) / log2(r + 1)`` with k = ``grades.shape[-1]``.
    """
    discounts = np.log2(np.arange(2, grades.shape[-1] + 2))
    return np.sum(exponential_gain(grades) / discounts, axis=-1)


def exponential_ndcg(grades: np.ndarray, ideal_grades: np.ndarray) -> np.ndarray:
    """gdeval's nDCG@k (ir_measures ``nDCG(dcg='exp-log2')@k``) of each ranking (row).

    Järvelin and Kekäläinen, TOIS 2002 (normalised DCG), exponential gain as in
    :func:`exponential_dcg`; docs/mathematics.md §1.

    Parameters
    ----------
    grades:
        Grades of the ranked documents, cut at k (see :func:`ranked_grade_matrix`).
    ideal_grades:
        The topics' positive grades sorted descending, cut at k (see :func:`ideal_grade_matrix`).

    Returns
    -------
    numpy.ndarray
        ``nDCG@k = DCG@k(ranking) / DCG@k(ideal ranking)``.

    Raises
    ------
    StatisticError
        When a topic has no positive grade: its nDCG is undefined (such a topic is outside the
        topic universe of docs/mathematics.md §1 and is never evaluated).
    """
    ideal = exponential_dcg(ideal_grades)
    if np.any(ideal <= 0):
        raise StatisticError("nDCG is undefined for a topic without any positive grade in the qrels")
    return exponential_dcg(grades) / ideal


def check_err_grades(qrels: Qrels) -> None:
    """Raise :class:`InputError` naming the first judgment (file and line) above gdeval's top grade 4
    (docs/mathematics.md §1 PIN).

    ERR's stopping probability (2^g - 1) / 2^4 exceeds 1 above grade 4, so such qrels cannot be
    scored by ERR. Like gdeval.pl, the whole qrels is checked, not only the topics a run retrieved,
    so every run of one evaluation gets the same verdict.
    """
    check_top_grade(
        qrels,
        GDEVAL_TOP_GRADE,
        "the top grade ERR allows (gdeval.pl's scale)",
        hint="map the grades onto 0..4, or use a measure without a top grade such as nDCG or nDCG(dcg='exp-log2')",
    )
