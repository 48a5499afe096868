"""trec_eval's most used measures on columns: every topic of a run in one vectorised pass (MATH.md section 1).

A run is held as flat arrays, one entry per retrieved document, topic after topic: the retrieval
score and the document's gain (its qrels grade, 0 when unjudged or graded below 0). They are sorted
once into trec_eval's order and every measure is a handful of numpy operations over all topics at
once, instead of pytrec_eval's conversion of the run into C structures topic by topic.

The results equal pytrec_eval's (to the last bits of floating-point summation order; the tests
check 1e-12 on every run of the shared data and on randomized tie-heavy runs) because the
conventions are trec_eval's own, read from its source:

- **Order.** Score descending, ties by docno descending (``strcmp``), where the score is compared as
  trec_eval stores it: a C ``float`` (so scores equal in single precision tie). The measures here
  depend only on the sequence of gains, so a group of tied documents is put in docno order only when
  their gains differ (a real run has few such groups).
- **Relevance.** ``rel=L`` is trec_eval's ``-l L``: a retrieved document is relevant when its grade
  is at least ``L``; the topic's number of relevant documents counts every judgment of at least
  ``L`` in the qrels, retrieved or not. Unjudged and negatively graded documents are never relevant.
- **AP** (``map``): the sum over relevant retrieved documents of (relevant so far / rank), divided
  by the number of relevant documents; 0 when there is none.
- **P@k**: relevant documents in the top k over k, also when fewer than k were retrieved.
- **R@k** (``recall_k``): relevant documents in the top k over the number of relevant documents.
- **RR**: 1 / rank of the first relevant document, 0 without one; **RR@k** is 0 when that rank
  exceeds k (trec_eval has no cut-off RR; see :mod:`pytest_bvtest.measures`).
- **nDCG** and **nDCG@k** (``ndcg``, ``ndcg_cut_k``): linear gain (the grade; trec_eval's gain table
  holds only the levels 0 and up, so a negative grade gains 0), discount log2(rank + 1); the ideal
  ranking is every positive judgment of the topic sorted by grade, cut at k like the ranking; 0
  when the ideal DCG is 0. ``rel`` plays no part.

Judged-only variants (``-J``), cut-off AP and every other measure stay with pytrec_eval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pytest_bvtest.io.runs import RunColumns
    from pytest_bvtest.measures import Measure


def computes(measure: Measure) -> bool:
    """Whether this module computes ``measure`` (otherwise pytrec_eval or gdeval does)."""
    if measure.judged_only or measure.exponential_gain:
        return False
    if measure.name in ("AP",):
        return measure.cutoff is None
    if measure.name in ("P", "R"):
        return measure.cutoff is not None
    return measure.name in ("RR", "nDCG")


@dataclass(frozen=True)
class RankedGains:
    """Every topic's gains in trec_eval's ranking order, topics one after another.

    ``gains[starts[j]:starts[j + 1]]`` are the gains of topic ``topics[j]`` at ranks 1, 2, ...;
    ``judged_topic`` and ``judged_grades`` are the qrels of the same topics (every judgment, as
    row index and grade), for the number of relevant documents and the ideal ranking.
    """

    topics: tuple[str, ...]
    starts: np.ndarray
    gains: np.ndarray
    judged_topic: np.ndarray
    judged_grades: np.ndarray

    @property
    def row_topic(self) -> np.ndarray:
        """The topic (row index into ``topics``) of every ranked document."""
        return np.repeat(np.arange(len(self.topics)), np.diff(self.starts))

    @property
    def ranks(self) -> np.ndarray:
        """The rank (from 1) of every ranked document within its topic."""
        return np.arange(1, self.gains.size + 1) - np.repeat(self.starts[:-1], np.diff(self.starts))


def rank_by_trec_eval_order(
    lengths: np.ndarray, scores: np.ndarray, gains: np.ndarray, docnos: Sequence[str]
) -> np.ndarray:
    """The order that sorts concatenated topics into score descending, docno descending, topic by topic.

    Parameters
    ----------
    lengths:
        Documents per topic; the topics' rows follow each other in ``scores``, ``gains`` and ``docnos``.
    scores:
        Retrieval scores; compared as C floats, as trec_eval stores them.
    gains:
        The documents' gains; tied documents are ordered by docno only where their gains differ
        (any order of equal gains gives the same measures).
    docnos:
        The documents' ids.

    Returns
    -------
    numpy.ndarray
        Indices into the rows, topics kept in their order.
    """
    row_topic = np.repeat(np.arange(lengths.size), lengths)
    # + 0 turns -0.0 into 0.0, which C compares equal
    similarity = scores.astype(np.float32) + np.float32(0)
    next_topic_same = row_topic[1:] == row_topic[:-1]
    # Runs written in rank order (the usual case) are recognised as sorted in one pass.
    if np.all(~next_topic_same | (similarity[1:] <= similarity[:-1])):
        order = np.arange(scores.size)
        tied_with_next = next_topic_same & (similarity[1:] == similarity[:-1])
    else:
        order = np.lexsort((-similarity, row_topic))
        sorted_similarity = similarity[order]
        tied_with_next = next_topic_same & (sorted_similarity[1:] == sorted_similarity[:-1])
    del similarity, next_topic_same
    # Tie groups are maximal stretches of rows tied with the next; only those whose gains differ matter.
    sorted_gains = gains[order]
    differs = tied_with_next & (sorted_gains[1:] != sorted_gains[:-1])
    if not differs.any():
        return order
    edges = np.diff(np.concatenate(([False], tied_with_next, [False])).astype(np.int8))
    group_start, group_stop = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) + 1
    differences_before = np.concatenate(([0], np.cumsum(differs)))
    mixed = differences_before[group_stop - 1] > differences_before[group_start]
    for start, stop in zip(group_start[mixed].tolist(), group_stop[mixed].tolist()):
        rows = order[start:stop].tolist()
        rows.sort(key=docnos.__getitem__, reverse=True)
        order[start:stop] = rows
    return order


def ranked_gains_from_rankings(
    judgments: Mapping[str, Mapping[str, int]], rankings: Mapping[str, Mapping[str, float]], topics: Sequence[str]
) -> RankedGains:
    """Join a run (``qid -> docno -> score``) with its qrels and sort it, for the given topics (each ranked)."""
    lengths = np.fromiter((len(rankings[qid]) for qid in topics), dtype=np.int64, count=len(topics))
    scores = np.fromiter(chain.from_iterable(rankings[qid].values() for qid in topics), dtype=np.float64,
                         count=int(lengths.sum()))
    docnos = list(chain.from_iterable(rankings[qid] for qid in topics))
    return _ranked_gains(judgments, topics, lengths, scores, docnos)


def ranked_gains_from_columns(judgments: Mapping[str, Mapping[str, int]], run: RunColumns, topics: Sequence[str]) -> RankedGains:
    """Join a run read as columns with its qrels and sort it, for the given topics (each ranked by the run)."""
    if tuple(topics) == run.topics:
        return _ranked_gains(judgments, topics, run.lengths, run.scores, run.docnos)
    rows = run.topic_starts()
    kept = np.concatenate([np.arange(*rows[qid]) for qid in topics])
    lengths = np.array([rows[qid][1] - rows[qid][0] for qid in topics], dtype=np.int64)
    docnos = list(chain.from_iterable(run.docnos[slice(*rows[qid])] for qid in topics))
    return _ranked_gains(judgments, topics, lengths, run.scores[kept], docnos)


def _ranked_gains(judgments: Mapping[str, Mapping[str, int]], topics: Sequence[str], lengths: np.ndarray,
                  scores: np.ndarray, docnos: Sequence[str]) -> RankedGains:
    """Sort topic-grouped rows into trec_eval's order with each document's gain beside it."""
    stops = np.cumsum(lengths).tolist()
    grades = np.fromiter(
        chain.from_iterable(
            map(judgments[qid].get, docnos[stop - length:stop], repeat(0))
            for qid, stop, length in zip(topics, stops, lengths.tolist())
        ),
        dtype=np.int64,
        count=len(docnos),
    )
    gains = np.maximum(grades, 0)
    order = rank_by_trec_eval_order(lengths, scores, gains, docnos)
    starts = np.concatenate(([0], np.cumsum(lengths)))
    judged_counts = np.fromiter((len(judgments[qid]) for qid in topics), dtype=np.int64, count=len(topics))
    judged_grades = np.fromiter(
        chain.from_iterable(judgments[qid].values() for qid in topics), dtype=np.int64, count=int(judged_counts.sum())
    )
    judged_topic = np.repeat(np.arange(len(topics)), judged_counts)
    return RankedGains(tuple(topics), starts, gains[order], judged_topic, judged_grades)


def evaluate(ranked: RankedGains, measures: Sequence[Measure]) -> dict[Measure, dict[str, float]]:
    """Per-topic values of each measure (every one must satisfy :func:`computes`), keyed by topic."""
    topic_count = len(ranked.topics)
    row_topic, ranks = ranked.row_topic, ranked.ranks
    values: dict[Measure, dict[str, float]] = {}
    for measure in measures:
        if measure.name == "nDCG":
            per_topic = _ndcg(ranked, row_topic, ranks, measure.cutoff)
        else:
            relevant = ranked.gains >= measure.rel
            relevant_count = np.bincount(ranked.judged_topic, weights=ranked.judged_grades >= measure.rel,
                                         minlength=topic_count)
            if measure.name == "AP":
                per_topic = _average_precision(relevant, row_topic, ranks, relevant_count, ranked.starts)
            elif measure.name == "RR":
                per_topic = _reciprocal_rank(relevant, row_topic, ranks, topic_count, measure.cutoff)
            else:
                retrieved = np.bincount(row_topic, weights=relevant & (ranks <= measure.cutoff), minlength=topic_count)
                if measure.name == "P":
                    per_topic = retrieved / measure.cutoff
                else:
                    per_topic = np.divide(retrieved, relevant_count, out=np.zeros(topic_count), where=relevant_count > 0)
        values[measure] = dict(zip(ranked.topics, per_topic.tolist()))
    return values


def _average_precision(relevant: np.ndarray, row_topic: np.ndarray, ranks: np.ndarray,
                       relevant_count: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """trec_eval's ``map``: sum of precision at each relevant retrieved document over the relevant count."""
    running = np.cumsum(relevant)
    before_topic = np.concatenate(([0], running))[starts[:-1]]
    relevant_so_far = running - np.repeat(before_topic, np.diff(starts))
    precision_sum = np.bincount(row_topic[relevant], weights=relevant_so_far[relevant] / ranks[relevant],
                                minlength=relevant_count.size)
    return np.divide(precision_sum, relevant_count, out=np.zeros(relevant_count.size), where=relevant_count > 0)


def _reciprocal_rank(relevant: np.ndarray, row_topic: np.ndarray, ranks: np.ndarray, topic_count: int,
                     cutoff: int | None) -> np.ndarray:
    """1 / rank of each topic's first relevant document (0 without one, or when it lies below ``cutoff``)."""
    first = np.full(topic_count, np.inf)
    np.minimum.at(first, row_topic[relevant], ranks[relevant])
    if cutoff is not None:
        first[first > cutoff] = np.inf
    return 1.0 / first


def _ndcg(ranked: RankedGains, row_topic: np.ndarray, ranks: np.ndarray, cutoff: int | None) -> np.ndarray:
    """trec_eval's ``ndcg`` / ``ndcg_cut_k``: linear gain, discount log2(rank + 1), ideal cut like the ranking."""
    topic_count = len(ranked.topics)
    counted = ranked.gains > 0
    if cutoff is not None:
        counted &= ranks <= cutoff
    dcg = np.bincount(row_topic[counted], weights=ranked.gains[counted] / np.log2(ranks[counted] + 1.0),
                      minlength=topic_count)
    # The ideal ranking: each topic's positive grades, largest first.
    positive = ranked.judged_grades > 0
    ideal_topic, ideal_grades = ranked.judged_topic[positive], ranked.judged_grades[positive]
    order = np.lexsort((-ideal_grades, ideal_topic))
    ideal_topic, ideal_grades = ideal_topic[order], ideal_grades[order]
    ideal_starts = np.searchsorted(ideal_topic, np.arange(topic_count))
    ideal_ranks = np.arange(1, ideal_topic.size + 1) - ideal_starts[ideal_topic]
    kept = slice(None) if cutoff is None else ideal_ranks <= cutoff
    ideal = np.bincount(ideal_topic[kept], weights=ideal_grades[kept] / np.log2(ideal_ranks[kept] + 1.0),
                        minlength=topic_count)
    return np.divide(dcg, ideal, out=np.zeros(topic_count), where=ideal > 0)
