"""How plausible a verdict is under incomplete judgments (docs/mathematics.md §10, "How plausible a verdict is").

The two corners of a gate bound what the missing judgments could do, not what they plausibly do. Following
Carterette, Allan & Sitaraman (SIGIR 2006, *Minimal test collections for retrieval evaluation*), each unjudged grade
is a random variable, a verdict has a probability, and the documents worth judging are those that move it most:

- :func:`grade_prior`: the prior of an unjudged document's grade on a topic (MATH.md §8 PIN): the grades of the judged
  documents at the ranks the gate reads, shrunk towards every topic's (:func:`grade_shares`), each positive grade
  discounted by the pool-bias factor lambda;
- :func:`draw_discounts` and :func:`draw_grades`: seeded draws of lambda per grading and group of documents (our
  reading: lambda is uncertain, and differs between runs' unpooled documents), then of every unjudged document's
  grade, one grade per document;
- :func:`judgments_to_settle`: how many documents, the most uncertain effect first, are expected to settle a gate.

Pure numpy; the gates are evaluated under each draw by :mod:`pytest_bvtest.judging.plausible`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv, ndtri

from pytest_bvtest.checks import checked_seed, open_interval, whole_number
from pytest_bvtest.errors import StatisticError

#: The pseudo-documents of the all-topics distribution a topic's judged grades are shrunk towards (MATH.md §8 PIN).
SHRINKAGE = 10.0
#: The stream of the grades' draws: ``numpy.random.default_rng([seed, GRADES_STREAM])``.
GRADES_STREAM = 28
#: The stream of the discounts' draws (:func:`draw_discounts`).
DISCOUNT_STREAM = 29


def grade_shares(counts: np.ndarray, shrinkage: float = SHRINKAGE) -> np.ndarray:
    """Each topic's grade distribution among its judged documents, shrunk towards every topic's.

    MATH.md §8, "Prior of an unjudged document" (PIN): with ``n_t(g)`` the judged documents of grade ``g`` at the ranks
    the gate reads on topic ``t`` and ``N_t`` their number,

    ``p_t(g) = (n_t(g) + m * p(g)) / (N_t + m)``, with ``p(g) = sum_t n_t(g) / sum_t N_t``

    (``m`` pseudo-documents of the all-topics distribution).

    Parameters
    ----------
    counts:
        ``(topics, grades)``: ``counts[t, g]`` judged documents of grade ``g`` (0 to the top grade; a judged grade
        below 0 counts as 0) on topic ``t``.
    shrinkage:
        ``m`` (>= 0).

    Returns
    -------
    numpy.ndarray
        ``(topics, grades)``: ``p_t(g)``, each row summing to 1.
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[1] < 2 or (counts < 0).any() or not np.isfinite(counts).all():
        raise StatisticError("a grade prior needs (topics, grades) counts, at least two grades, none negative")
    if shrinkage < 0:
        raise StatisticError(f"the shrinkage must be at least 0, got {shrinkage!r}")
    total = counts.sum()
    overall = counts.sum(axis=0) / total if total > 0 else np.eye(counts.shape[1])[0]
    weight = counts.sum(axis=1, keepdims=True) + shrinkage
    # a topic with neither judged documents nor shrinkage takes the all-topics distribution
    return np.where(weight > 0, (counts + shrinkage * overall) / np.where(weight > 0, weight, 1.0), overall)


def grade_prior(counts: np.ndarray, discount: float, shrinkage: float = SHRINKAGE) -> np.ndarray:
    """The prior of an unjudged document's grade on each topic (MATH.md §8 PIN): each positive grade ``g`` with
    probability ``lambda * p_t(g)`` (:func:`grade_shares`; lambda < 1, the pool-bias discount: unjudged documents are
    relevant less often than judged ones), grade 0 otherwise.

    Parameters
    ----------
    counts, shrinkage:
        As :func:`grade_shares` reads them.
    discount:
        lambda, in ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        ``(topics, grades)`` probabilities, each row summing to 1.
    """
    if not 0.0 <= discount <= 1.0:
        raise StatisticError(f"the pool-bias discount must lie in [0, 1], got {discount!r}")
    prior = grade_shares(counts, shrinkage) * discount
    prior[:, 0] = 1.0 - prior[:, 1:].sum(axis=1)
    return prior


#: How much less often an unjudged document is relevant when the other runs rank it far below their top d (beyond
#: :data:`FAR_RANKS` times d, or not at all) than when one of them ranks it near: measured on the shared collections
#: (benchmarks/bench_judgments.py; docs/judgments.md), 11% to 14% of such documents relevant by the fuller qrels
#: against 17% to 70% of those another run ranks within the top 100.
FAR_SUPPORT = 0.4
#: A document another run ranks within this many times the depth d is near (supported), else far.
FAR_RANKS = 10


def rank_support(ranks: np.ndarray, depth: int) -> np.ndarray:
    """Each unjudged document's support from the other runs: 1 when its second-best rank among the runs whose top d
    is graded is within :data:`FAR_RANKS` times ``depth``, else :data:`FAR_SUPPORT` (our reading of MATH.md §8's
    "conditioning on rank is allowed where it measurably improves calibration": a document two runs rank high is a
    pooled document's peer; one that only a single run lifted from deep down, as a shuffled ranking does, is
    relevant far less often; the metasearch evidence of Aslam & Montague, SIGIR 2001).

    Parameters
    ----------
    ranks:
        ``(documents, runs)``: each document's rank in each run (from 1; 0 where the run does not retrieve it).
    depth:
        d.

    Returns
    -------
    numpy.ndarray
        ``(documents,)`` factors of the pool-bias discount.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.ndim != 2:
        raise StatisticError("ranks must be (documents, runs)")
    if ranks.shape[1] < 2:
        return np.ones(ranks.shape[0])
    ordered = np.sort(np.where(ranks > 0, ranks, np.iinfo(np.int64).max), axis=1)
    return np.where(ordered[:, 1] <= FAR_RANKS * depth, 1.0, FAR_SUPPORT)


def draw_discounts(groups: np.ndarray, draws: int, discount: float, spread: float, seed: int) -> np.ndarray:
    """Each grading's pool-bias discount of each document: one per grading and group of documents, drawn from a Beta
    distribution of mean ``discount`` and standard deviation ``spread`` (0: ``discount`` itself).

    Our reading of MATH.md §8's lambda (docs/mathematics.md §10): how much less often unjudged documents are relevant
    than judged ones is not known exactly, and differs between the documents only one run retrieves and those another
    retrieves (measured on the shared collections: 23% to 29% of the unjudged top-10 documents of five re-rankers of
    one pool relevant, against 66% to 70% of their judged ones). Documents that the same runs retrieve (``groups``:
    the candidate's alone, the reference's alone, both) share one discount per grading, so a grading can favour one
    run's unpooled documents over the other's, as the fuller qrels may; independent grades alone would average that
    out over a few hundred documents and decide too soon.

    Draw ``s`` gives group ``h`` the Beta draw
    ``numpy.random.default_rng([seed, DISCOUNT_STREAM]).beta(a, b, (draws, groups))[s, h]`` with ``a = discount * k``,
    ``b = (1 - discount) * k``, ``k = discount * (1 - discount) / spread**2 - 1``.

    Parameters
    ----------
    groups:
        ``(documents,)`` each document's group, 0 to ``G - 1``.
    draws, discount, spread, seed:
        How many gradings; the Beta's mean and standard deviation (``spread`` below
        ``sqrt(discount * (1 - discount))``, or 0); the seed.

    Returns
    -------
    numpy.ndarray
        ``(draws, documents)`` discounts.
    """
    groups = np.asarray(groups, dtype=np.int64)
    count = int(groups.max()) + 1 if groups.size else 0
    return draw_group_discounts(count, draws, discount, spread, seed)[:, groups]


def draw_group_discounts(count: int, draws: int, discount: float, spread: float, seed: int) -> np.ndarray:
    """:func:`draw_discounts` per group: ``(draws, count)``, the discount of group ``h`` in grading ``s``, the same
    draws (so that a block of gradings reads its rows of the groups' few columns, not a row per document)."""
    draws = whole_number(draws, "draws")
    seed = checked_seed(seed)
    if not 0.0 <= discount <= 1.0:
        raise StatisticError(f"the pool-bias discount must lie in [0, 1], got {discount!r}")
    if spread == 0 or discount in (0.0, 1.0):
        return np.full((draws, count), discount)
    concentration = discount * (1.0 - discount) / spread**2 - 1.0
    if not concentration > 0:
        raise StatisticError(
            f"the discount's spread {spread!r} must be below sqrt(discount * (1 - discount)) = "
            f"{np.sqrt(discount * (1.0 - discount)):.3g}"
        )
    return np.random.default_rng([seed, DISCOUNT_STREAM]).beta(
        discount * concentration, (1.0 - discount) * concentration, size=(draws, count)
    )


def draw_grades(
    shares: np.ndarray,
    discounts: np.ndarray,
    seed: int,
    *,
    first: int = 0,
    likelihoods: np.ndarray | None = None,
) -> np.ndarray:
    """Seeded gradings of documents: in grading ``s`` document ``k`` gets each positive grade ``g`` with probability
    ``discounts[s, k] * shares[k, g]``, grade 0 otherwise, independently.

    With ``likelihoods`` (``(documents, grades)``: ``P(its predicted grade | true grade g)``, a row of ones where
    nothing was predicted), a predicted document's probabilities are those refined by Bayes' rule
    (:func:`~pytest_bvtest.stats.predictions.refine_prior`, docs/mathematics.md §10, "Predicted grades"), drawn from
    the same uniform ``u[s, k]`` by the same rule.

    Grading ``s`` gives document ``k`` the smallest positive grade ``g`` with
    ``u[s, k] < discounts[s, k] * sum_{1 <= h <= g} shares[k, h]``, and 0 when there is none,
    ``u = numpy.random.default_rng([seed, GRADES_STREAM]).random((draws, documents))``: a naive loop reproduces it.
    With ``first``, ``discounts`` are those of gradings ``first`` on, and so are the rows returned: the same gradings
    as rows ``first`` on of one draw of them all (the stream is advanced past the rows before, one number each), so
    that gradings can be drawn a block at a time in the memory of a block.

    Parameters
    ----------
    shares:
        ``(documents, grades)``: each document's topic's grade distribution (:func:`grade_shares`).
    discounts:
        ``(draws, documents)``: each grading's pool-bias discount of each document (:func:`draw_discounts`).
    seed:
        The seed.
    first:
        The first grading's position among all of them.
    likelihoods:
        ``(documents, grades)``: the predictor's likelihood of each document's predicted grade given each true grade,
        or ``None`` when nothing was predicted.

    Returns
    -------
    numpy.ndarray
        ``(draws, documents)`` grades, int8.
    """
    seed = checked_seed(seed)
    first = whole_number(first, "first", minimum=0)
    shares = np.asarray(shares, dtype=float)
    discounts = np.asarray(discounts, dtype=float)
    if shares.ndim != 2 or shares.shape[1] > 127 or discounts.shape[-1:] != shares.shape[:1]:
        raise StatisticError(
            "grade shares must be (documents, grades), at most 127 grades, discounts (draws, documents)"
        )
    positive = np.cumsum(shares[:, 1:], axis=1)  # (documents, grades - 1)
    generator = np.random.default_rng([seed, GRADES_STREAM])
    generator.bit_generator.advance(first * discounts.shape[-1])  # one 64-bit output per uniform
    uniform = generator.random(discounts.shape)
    # a grade above 0 when u < discount * sum of the positive shares; which one by where u / discount falls
    if np.all(discounts > 0):
        scaled = np.divide(uniform, discounts)
    else:
        scaled = np.divide(uniform, discounts, out=np.full_like(uniform, np.inf), where=discounts > 0)
    grades = np.ones(scaled.shape, dtype=np.int8)  # a grade counted up one level at a time (at most 127)
    for level in range(positive.shape[1]):
        grades += scaled >= positive[:, level]
    grades[scaled >= positive[:, -1]] = 0
    if likelihoods is not None:
        likelihoods = np.asarray(likelihoods, dtype=float)
        refined = np.flatnonzero(np.ptp(likelihoods, axis=1) > 0)  # a flat row leaves the prior as it is
        if refined.size:
            grades[:, refined] = _refined_grades(
                shares[refined], discounts[:, refined], likelihoods[refined], uniform[:, refined]
            )
    return grades


def _refined_grades(
    shares: np.ndarray, discounts: np.ndarray, likelihoods: np.ndarray, uniform: np.ndarray
) -> np.ndarray:
    """:func:`draw_grades`' rule on the refined probabilities: the smallest positive grade ``g`` with ``u`` below
    the sum of the refined probabilities of grades 1 to ``g``, else 0."""
    prior = discounts[:, :, np.newaxis] * shares[np.newaxis, :, :]
    prior[:, :, 0] = 1.0 - prior[:, :, 1:].sum(axis=2)
    joint = prior * likelihoods[np.newaxis, :, :]
    refined = joint / joint.sum(axis=2, keepdims=True)
    positive = np.cumsum(refined[:, :, 1:], axis=2)
    grades = (uniform[:, :, np.newaxis] >= positive).sum(axis=2) + 1
    grades[uniform >= positive[:, :, -1]] = 0
    return grades


def judgments_to_settle(
    grades: np.ndarray, margins: np.ndarray, effects: np.ndarray, order: np.ndarray, confidence: float
) -> int | None:
    """How many documents, judged in ``order``, are expected to settle a gate: the fewest ``k`` (at least 1) after
    which the gate is settled in at least half of the draws.

    Each draw's margin (how far the gate is past its limit; > 0 fails) splits into its mean, each document's part
    ``b_k (x_k - mean(x_k))`` (``b_k`` its effect per grade: its judging leverage, docs/mathematics.md §10) and the
    rest (what the grades' linear parts leave: the limit's own movement). Judging the first ``k`` documents fixes
    their parts: the margin's mean is then the mean plus those parts as draw ``s`` has them, and its spread that of the
    other parts plus the rest over the draws (their covariance included: documents of one run share a pool-bias
    discount). The gate is settled when that mean lies at least ``z_confidence`` spreads from 0 (Carterette, Allan &
    Sitaraman, SIGIR 2006: judge until the sign of the difference is known with the confidence asked). ``None`` when
    judging every listed document does not settle it in half of the draws.

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
    # a row per document, in the order judged (the grades picked before they widen to 8 bytes): its part in each draw
    terms = np.asarray(grades).T[order].astype(float)
    terms -= terms.mean(axis=1, keepdims=True)
    terms *= np.asarray(effects, dtype=float)[order][:, np.newaxis]
    z = float(ndtri(confidence))
    known = np.full(len(margins), float(margins.mean()))
    # After judging k documents draw s's margin is known as mean + C_k(s), C_k its first k parts summed; what is left
    # unknown, the parts of the others plus the rest, is margin(s) - mean - C_k(s): no sum over the others is kept.
    # A gate to settle is not settled before any judgment; the counts k of a block of documents at once, each as the
    # one-by-one loop computes it (the same for any block sizes)
    start, block = 0, _SETTLE_BLOCK
    while start < len(order):
        stop = min(len(order), start + block)
        known_after = np.cumsum(terms[start:stop], axis=0)
        known_after += known
        spread = np.std(margins - known_after, axis=1)
        settled = 2 * np.count_nonzero(np.abs(known_after) >= z * spread[:, np.newaxis], axis=1) >= len(margins)
        if settled.any():
            return start + 1 + int(np.argmax(settled))
        known = known_after[-1]
        # most gates settle within the first documents; one that does not is read in ever larger blocks
        start, block = stop, min(2 * block, _SETTLE_BLOCK_MAX)
    return None


#: The document counts :func:`judgments_to_settle` tries at once: the first block's, doubled up to the last one's.
_SETTLE_BLOCK = 64
_SETTLE_BLOCK_MAX = 16_384


#: The risk that stopping the draws early changes a verdict (:func:`verdict_settled`).
STOPPING_RISK = 1e-3


def verdict_settled(passing: int, drawn: int, confidence: float, risk: float = STOPPING_RISK) -> bool:
    """Whether more draws can no longer change which side of the decision a verdict's probability P lies on.

    Sequential Monte-Carlo (Gandy, JASA 2009, in its simplest form): the Clopper-Pearson interval of P from
    ``passing`` of ``drawn`` gradings, at level ``1 - risk``, lies wholly at or above ``confidence`` (decided pass),
    at or below ``1 - confidence`` (decided fail), or strictly between them (undecided). At ``confidence`` 0.95 a gate
    that fails every grading is settled after 149 of them (the interval's top falls to 5%; after 100 it is still
    7.3%), so the plausible verdicts, which look after each batch of 100, stop it at 200.

    Parameters
    ----------
    passing, drawn:
        The gradings drawn so far and those in which the gate passed.
    confidence:
        ``1 - eps``, the share a verdict must hold in to be decided.
    risk:
        The chance that the interval misses P.
    """
    if drawn <= 0:
        return False
    low = 0.0 if passing == 0 else float(betaincinv(passing, drawn - passing + 1, risk / 2))
    high = 1.0 if passing == drawn else float(betaincinv(passing + 1, drawn - passing, 1 - risk / 2))
    floor = 1.0 - confidence
    return low >= confidence or high <= floor or (low > floor and high < confidence)
