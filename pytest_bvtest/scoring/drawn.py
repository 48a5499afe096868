"""A run's measure under many gradings of its topics' unjudged documents at once (docs/mathematics.md §10, "How
plausible a verdict is").

A plausible verdict scores the candidate and its reference under a thousand gradings of every unjudged document of
their top d. Only the grades change from one grading to the next, never the ranking, so each topic is laid out once
as its *slots*: the documents of its ranking that can gain anything (the judged relevant ones, and the unjudged ones
of the top d that a grading grades), in rank order. A grading fills the slots' gains, and each measure is a handful of
segment sums over the slots of every topic and grading together, the drawn grades joining the qrels as CI would read
them had they been judged (nDCG's ideal ranking, the relevant count of AP and R@k). The values equal
:func:`~pytest_bvtest.scoring.columnar.evaluate` on the qrels completed by each grading (tests/test_drawn.py checks
them against pytrec_eval), without a copy of any topic per grading.

trec_eval's ``ndcg``/``ndcg_cut_k``, ``map``, GMAP's log, ``P_k``, ``recall_k``, ``recip_rank`` (and its cut-off)
and RBP are computed so; :func:`computes` says which.
"""

from __future__ import annotations

import numpy as np

from pytest_bvtest.scoring.columnar import RankedGains, mapped_gains
from pytest_bvtest.spec.measures import GMAP_FLOOR, Measure

#: The measure families scored here (the others are scored on copies of their topics,
#: :func:`~pytest_bvtest.scoring.columnar.graded_copies`).
FAMILIES = ("nDCG", "AP", "GMAP", "P", "R", "RR", "RBP")
# Cells of the (gradings, slots) arrays one pass holds (bounds memory: a few arrays of 8 bytes a cell).
_BLOCK_CELLS = 2_000_000


def computes(measure: Measure) -> bool:
    """Whether :func:`drawn_values` scores ``measure`` (a measure :func:`~pytest_bvtest.scoring.columnar.computes`)."""
    return measure.name in FAMILIES and not measure.judged_only and not measure.exponential_gain


def drawn_values(
    ranked: RankedGains,
    measure: Measure,
    pair_topic: np.ndarray,
    pair_unjudged: np.ndarray,
    grades: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``measure`` on every topic that holds a pair, under each grading of the pairs, capped at 1.

    Pair ``k`` is an unjudged document of topic ``ranked.topics[pair_topic[k]]``; ``pair_unjudged[k]`` is its
    position among ``ranked``'s unjudged documents when the run ranks it within the depth they were searched to, else
    -1 (another run's document: judged, it would only join the qrels). In grading ``s`` it has grade ``grades[s, k]``
    (0: non-relevant); the run's other unjudged documents stay non-relevant.

    Parameters
    ----------
    ranked:
        The run's ranked gains (:class:`~pytest_bvtest.scoring.columnar.RankedGains`) with its unjudged documents.
    measure:
        A measure :func:`computes` accepts.
    pair_topic, pair_unjudged:
        ``(pairs,)`` each pair's topic index and unjudged position (or -1).
    grades:
        ``(gradings, pairs)`` integer grades.

    Returns
    -------
    tuple of numpy.ndarray
        The topics' indices (ascending, each once) and ``(gradings, topics)`` values.
    """
    if not computes(measure):
        raise ValueError(f"{measure} is not scored under drawn gradings here")
    assert ranked.unjudged_rank is not None
    grades = np.asarray(grades)
    if not len(pair_topic):  # no pair on a topic the run ranks: no topic to score
        return np.zeros(0, dtype=np.int64), np.zeros((grades.shape[0], 0))
    order = np.argsort(pair_topic, kind="stable")
    pair_topic, pair_unjudged = pair_topic[order], pair_unjudged[order]
    grades = grades[:, order]
    topics, pair_starts = np.unique(pair_topic, return_index=True)
    slots = _Slots(ranked, topics, pair_topic, pair_unjudged)
    judged = _JudgedCounts(ranked, topics)
    block = max(1, _BLOCK_CELLS // max(1, len(slots.rank), grades.shape[1]))
    values = np.empty((grades.shape[0], len(topics)))
    for first in range(0, grades.shape[0], block):
        drawn = grades[first : first + block]
        gains = slots.gains(drawn)
        if measure.name == "nDCG":
            scored = _ndcg(measure, slots, gains, judged.ideal_counts(drawn, pair_starts))
        else:
            relevant_count = judged.at_least(measure.rel) + _pair_sums(drawn >= measure.rel, pair_starts)
            scored = _binary(measure, slots, gains >= measure.rel, relevant_count)
        values[first : first + block] = np.minimum(scored, 1.0)
    return topics, values


class _Slots:
    """Each topic's slots in rank order: its judged relevant documents (their gains fixed) and its pairs that the run
    ranks within the unjudged depth (their gains drawn), as flat arrays topic after topic."""

    def __init__(self, ranked: RankedGains, topics: np.ndarray, pair_topic: np.ndarray, pair_unjudged: np.ndarray):
        assert ranked.unjudged_rank is not None
        low = np.searchsorted(ranked.topic, topics, side="left")
        high = np.searchsorted(ranked.topic, topics, side="right")
        rows = _ranges(low, high)
        held = np.flatnonzero(pair_unjudged >= 0)
        topic = np.concatenate([ranked.topic[rows], pair_topic[held]])
        rank = np.concatenate([ranked.rank[rows], ranked.unjudged_rank[pair_unjudged[held]]])
        order = np.lexsort((rank, topic))
        self.column = np.searchsorted(topics, topic[order])
        self.rank = rank[order].astype(float)
        self.base = np.concatenate([ranked.gain[rows], np.zeros(len(held), dtype=ranked.gain.dtype)])[order]
        pair = np.concatenate([np.full(len(rows), -1), held])[order]
        self.drawn_slots = np.flatnonzero(pair >= 0)
        self.drawn_pairs = pair[self.drawn_slots]
        self.topic_count = len(topics)
        # the slots of each topic that has any: where its stretch starts, and which topic it is
        self.starts = np.flatnonzero(np.r_[True, np.diff(self.column) != 0]) if len(self.column) else self.column
        self.start_topic = self.column[self.starts]

    def gains(self, grades: np.ndarray) -> np.ndarray:
        """``(gradings, slots)``: each slot's gain under each grading."""
        gains = np.repeat(self.base[np.newaxis].astype(float), len(grades), axis=0)
        gains[:, self.drawn_slots] = grades[:, self.drawn_pairs]
        return gains

    def sums(self, values: np.ndarray) -> np.ndarray:
        """``(gradings, topics)``: the sum of ``values`` (gradings, slots) over each topic's slots (0 without)."""
        return self._reduced(np.add, values, 0.0)

    def minima(self, values: np.ndarray) -> np.ndarray:
        """``(gradings, topics)``: the least of ``values`` over each topic's slots (infinity without)."""
        return self._reduced(np.minimum, values, np.inf)

    def so_far(self, counted: np.ndarray) -> np.ndarray:
        """``(gradings, slots)``: how many of each topic's slots up to and including this one are ``counted``."""
        running = np.cumsum(counted, axis=1, dtype=np.int64)
        before = running[:, self.starts] - counted[:, self.starts]
        return running - np.repeat(before, np.diff(np.r_[self.starts, len(self.column)]), axis=1)

    def _reduced(self, ufunc: np.ufunc, values: np.ndarray, empty: float) -> np.ndarray:
        reduced = np.full((len(values), self.topic_count), empty)
        if len(self.starts):
            reduced[:, self.start_topic] = ufunc.reduceat(values, self.starts, axis=1)
        return reduced


class _JudgedCounts:
    """Per topic, its judgments of each grade (every judgment of the qrels, retrieved or not)."""

    def __init__(self, ranked: RankedGains, topics: np.ndarray) -> None:
        at = np.searchsorted(topics, ranked.judged_topic)
        on = (at < len(topics)) & (topics[np.minimum(at, len(topics) - 1)] == ranked.judged_topic)
        self.column, self.grade = at[on], ranked.judged_grades[on]
        self.topic_count = len(topics)

    def at_least(self, rel: int) -> np.ndarray:
        """``(topics,)``: the judgments of grade ``rel`` or above."""
        return np.bincount(self.column[self.grade >= rel], minlength=self.topic_count).astype(float)

    def ideal_counts(self, grades: np.ndarray, pair_starts: np.ndarray) -> dict[int, np.ndarray]:
        """Per positive grade, ``(gradings, topics)`` the documents of that grade the topic's ideal ranking holds:
        the judged ones and the pairs the grading grades so."""
        levels = set(np.unique(self.grade[self.grade > 0]).tolist()) | set(range(1, int(grades.max(initial=0)) + 1))
        return {
            level: np.bincount(self.column[self.grade == level], minlength=self.topic_count)
            + _pair_sums(grades == level, pair_starts)
            for level in sorted(levels)
        }


def _ndcg(measure: Measure, slots: _Slots, gains: np.ndarray, counts: dict[int, np.ndarray]) -> np.ndarray:
    """trec_eval's ``ndcg``/``ndcg_cut_k`` (docs/mathematics.md §1): DCG over the slots, linear gain (or the measure's
    ``gains``), discount log2(rank + 1); the ideal DCG from the topic's count of each grade, largest gain first."""
    cutoff = measure.cutoff
    weight = np.where(slots.rank <= (cutoff or np.inf), 1.0 / np.log2(slots.rank + 1.0), 0.0)
    dcg = slots.sums(mapped_gains(gains, measure.gains) * weight)
    level_gains = dict(zip(counts, mapped_gains(np.array(list(counts), dtype=float), measure.gains).tolist()))
    total = sum(counts.values(), np.zeros_like(dcg))
    depth = int(total.max(initial=0)) if cutoff is None else cutoff
    # discounted[n]: the discounts of the first n ranks summed, so that the ranks a grade fills cost two lookups
    discounted = np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(2, depth + 2)))]
    ideal, filled = np.zeros_like(dcg), np.zeros_like(dcg, dtype=np.int64)
    for level in sorted(counts, key=lambda level: -level_gains[level]):
        reached = filled + counts[level]
        ideal += level_gains[level] * (discounted[np.minimum(reached, depth)] - discounted[np.minimum(filled, depth)])
        filled = reached
    return np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


def _binary(measure: Measure, slots: _Slots, relevant: np.ndarray, relevant_count: np.ndarray) -> np.ndarray:
    """trec_eval's binary measures from each slot's relevance (docs/mathematics.md §1)."""
    name, cutoff = measure.name, measure.cutoff
    within = slots.rank <= (cutoff or np.inf)
    if name in ("AP", "GMAP"):
        precision = np.where(relevant, slots.so_far(relevant) / slots.rank, 0.0)
        summed = slots.sums(precision)
        average = np.divide(summed, relevant_count, out=np.zeros_like(summed), where=relevant_count > 0)
        return average if name == "AP" else np.log(np.maximum(average, GMAP_FLOOR))
    if name == "P":
        return slots.sums(relevant & within) / cutoff
    if name == "R":
        retrieved = slots.sums(relevant & within)
        return np.divide(retrieved, relevant_count, out=np.zeros_like(retrieved), where=relevant_count > 0)
    if name == "RR":
        return 1.0 / slots.minima(np.where(relevant & within, slots.rank, np.inf))
    assert name == "RBP" and measure.p is not None
    return slots.sums(np.where(relevant & within, (1 - measure.p) * measure.p ** (slots.rank - 1.0), 0.0))


def _pair_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``(gradings, topics)``: ``values`` (gradings, pairs) summed over each topic's pairs (every topic holds one)."""
    return np.add.reduceat(values.astype(np.int64), starts, axis=1)


def _ranges(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The integers of every ``[low[i], high[i])``, one range after another."""
    counts = high - low
    return np.repeat(low - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
