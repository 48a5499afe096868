"""How plausible a verdict is under incomplete judgments (docs/mathematics.md §10, "How plausible a verdict is").

The two corners of a gate bound what the missing judgments could do, not what they plausibly do. Following
Carterette, Allan & Sitaraman (SIGIR 2006, *Minimal test collections for retrieval evaluation*), each unjudged grade
is a random variable, a verdict has a probability, and the documents worth judging are those that move it most:

- :func:`grade_prior`: the prior of an unjudged document's grade on a topic (MATH.md §8 PIN): the grades of the judged
  documents at the ranks the gate reads, shrunk towards every topic's, each positive grade discounted by the pool-bias
  factor lambda;
- :func:`draw_grades`: seeded draws of every unjudged document's grade from its prior, one grade per document;
- :func:`judgments_to_settle`: how many documents, the most uncertain effect first, are expected to settle a gate.

Pure numpy; the gates are evaluated under each draw by :mod:`pytest_bvtest.judging.plausible`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from pytest_bvtest.checks import checked_seed, open_interval, whole_number
from pytest_bvtest.errors import StatisticError

#: The pseudo-documents of the all-topics distribution a topic's judged grades are shrunk towards (MATH.md §8 PIN).
SHRINKAGE = 10.0
#: The stream of the grades' draws: ``numpy.random.default_rng([seed, GRADES_STREAM])``.
GRADES_STREAM = 28


def grade_prior(counts: np.ndarray, discount: float, shrinkage: float = SHRINKAGE) -> np.ndarray:
    """The prior of an unjudged document's grade on each topic.

    MATH.md §8, "Prior of an unjudged document" (PIN, our reading in docs/mathematics.md §10): with ``n_t(g)`` the
    judged documents of grade ``g`` at the ranks the gate reads on topic ``t`` and ``N_t`` their number, the topic's
    distribution shrunk towards every topic's with ``m`` pseudo-documents is

    ``p_t(g) = (n_t(g) + m * p(g)) / (N_t + m)``, with ``p(g) = sum_t n_t(g) / sum_t N_t``,

    and an unjudged document gets each positive grade ``g`` with probability ``lambda * p_t(g)`` (lambda < 1: the
    pool-bias discount, unjudged documents being relevant less often than judged ones) and grade 0 otherwise.

    Parameters
    ----------
    counts:
        ``(topics, grades)``: ``counts[t, g]`` judged documents of grade ``g`` (0 to the top grade; a judged grade
        below 0 counts as 0) on topic ``t``.
    discount:
        lambda, in ``[0, 1]``.
    shrinkage:
        ``m``, the pseudo-documents of the all-topics distribution (>= 0).

    Returns
    -------
    numpy.ndarray
        ``(topics, grades)`` probabilities, each row summing to 1.
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[1] < 2 or (counts < 0).any() or not np.isfinite(counts).all():
        raise StatisticError("a grade prior needs (topics, grades) counts, at least two grades, none negative")
    if not 0.0 <= discount <= 1.0:
        raise StatisticError(f"the pool-bias discount must lie in [0, 1], got {discount!r}")
    if shrinkage < 0:
        raise StatisticError(f"the shrinkage must be at least 0, got {shrinkage!r}")
    total = counts.sum()
    overall = counts.sum(axis=0) / total if total > 0 else np.eye(counts.shape[1])[0]
    per_topic = counts.sum(axis=1, keepdims=True)
    weight = per_topic + shrinkage
    # a topic with neither judged documents nor shrinkage takes the all-topics distribution
    shrunk = np.where(weight > 0, (counts + shrinkage * overall) / np.where(weight > 0, weight, 1.0), overall)
    prior = shrunk * discount
    prior[:, 0] = 1.0 - prior[:, 1:].sum(axis=1)
    return prior


def draw_grades(priors: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """``draws`` seeded gradings of documents whose grades follow ``priors``, independently.

    Grading ``s`` gives document ``k`` the smallest grade ``g`` with ``u[s, k] < sum_{h <= g} priors[k, h]``,
    ``u = numpy.random.default_rng([seed, GRADES_STREAM]).random((draws, documents))``: a naive loop reproduces it.

    Parameters
    ----------
    priors:
        ``(documents, grades)``: each document's grade probabilities (rows summing to 1).
    draws:
        How many gradings.
    seed:
        Their seed.

    Returns
    -------
    numpy.ndarray
        ``(draws, documents)`` grades, int8.
    """
    draws = whole_number(draws, "draws")
    seed = checked_seed(seed)
    priors = np.asarray(priors, dtype=float)
    if priors.ndim != 2 or priors.shape[1] > 127:
        raise StatisticError("grade probabilities must be (documents, grades), at most 127 grades")
    cumulative = np.cumsum(priors, axis=1)
    uniform = np.random.default_rng([seed, GRADES_STREAM]).random((draws, priors.shape[0]))
    grades = (uniform[:, :, np.newaxis] >= cumulative[np.newaxis, :, :-1]).sum(axis=2)
    return grades.astype(np.int8)


def judgments_to_settle(
    grades: np.ndarray, margins: np.ndarray, effects: np.ndarray, order: np.ndarray, confidence: float
) -> int | None:
    """How many documents, judged in ``order``, are expected to settle a gate: the fewest ``k`` after which the gate
    is settled in at least half of the draws.

    A linear model of the gate's margin ``m`` (how far it is past its limit; > 0 fails) in the documents' grades:
    ``m = mean(m) + sum_k b_k (x_k - mean(x_k)) + r``, ``b_k`` a document's effect per grade (its judging leverage,
    docs/mathematics.md §10) and ``r`` what the grades leave unexplained (the limit's own movement), whose variance
    is what of ``var(m)`` the documents' parts do not account for. Judging the first ``k`` documents leaves the
    margin's mean ``mean(m) + sum_{j <= k} b_j (x_j - mean(x_j))`` (the judged grades as draw ``s`` has them) and
    its spread ``sqrt(sum_{j > k} b_j**2 var(x_j) + var(r))``; the gate is settled when that mean lies at least
    ``z_confidence`` spreads from 0 (Carterette, Allan & Sitaraman, SIGIR 2006: judge until the sign of the
    difference is known with the confidence asked). ``None`` when judging every listed document does not settle it in
    half of the draws.

    Parameters
    ----------
    grades:
        ``(draws, documents)``: each draw's grades.
    margins:
        ``(draws,)``: the gate's margin under each draw.
    effects:
        ``(documents,)``: each document's effect on the margin per grade.
    order:
        The documents' positions, in the order they would be judged.
    confidence:
        The share of the draws a verdict must hold in (``1 - eps``).
    """
    open_interval(confidence, "a confidence", 0.5, 1.0)
    margins = np.asarray(margins, dtype=float)
    grades = np.asarray(grades, dtype=float)[:, order]
    terms = (grades - grades.mean(axis=0)) * np.asarray(effects, dtype=float)[order]  # each document's part
    parts = terms.var(axis=0)
    unexplained = max(0.0, float(margins.var()) - float(parts.sum()))
    remaining = np.concatenate([np.cumsum(parts[::-1])[::-1], [0.0]]) + unexplained  # before judging k documents
    z = float(ndtri(confidence))
    known = np.full(len(margins), float(margins.mean()))
    for judged in range(len(order) + 1):
        if np.mean(np.abs(known) >= z * np.sqrt(remaining[judged])) >= 0.5:
            return judged
        if judged < len(order):
            known = known + terms[:, judged]
    return None
