"""trec_eval's most used measures on columns: every topic of a run in one vectorised pass (docs/mathematics.md §1).

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
  exceeds k (trec_eval has no cut-off RR; see :mod:`pytest_bvtest.scoring.measures`).
- **nDCG** and **nDCG@k** (``ndcg``, ``ndcg_cut_k``): linear gain (the grade; trec_eval's gain table
  holds only the levels 0 and up, so a negative grade gains 0), discount log2(rank + 1); the ideal
  ranking is every positive judgment of the topic sorted by grade, cut at k like the ranking; 0
  when the ideal DCG is 0. ``rel`` plays no part.

Judged-only variants (``-J``), cut-off AP and every other measure stay with pytrec_eval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from pytest_bvtest.io.runbytes import docno_keys

if TYPE_CHECKING:
    from pytest_bvtest.io.runs import RunColumns
    from pytest_bvtest.spec.measures import Measure


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
    """The documents that gain anything, of every topic ranked in trec_eval's order.

    Only a document with a positive gain counts in any measure here, so only those are kept:
    the i-th of them belongs to topic ``topics[topic[i]]``, lies at rank ``rank[i]`` (from 1) and has
    gain ``gain[i]``, in topic order and rank order within a topic. ``judged_topic`` and
    ``judged_grades`` are the qrels of the same topics (every judgment, as topic index and grade),
    for the number of relevant documents and the ideal ranking.
    """

    topics: tuple[str, ...]
    topic: np.ndarray
    rank: np.ndarray
    gain: np.ndarray
    judged_topic: np.ndarray
    judged_grades: np.ndarray


def rank_by_trec_eval_order(
    lengths: np.ndarray, scores: np.ndarray, gains: np.ndarray, docnos: Sequence[str] | np.ndarray
) -> np.ndarray | None:
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
    numpy.ndarray or None
        Indices into the rows, topics kept in their order; ``None`` when the rows are in that order.
    """
    row_topic = np.repeat(np.arange(lengths.size), lengths)
    # + 0 turns -0.0 into 0.0, which C compares equal
    similarity = scores.astype(np.float32) + np.float32(0)
    next_topic_same = row_topic[1:] == row_topic[:-1]
    # Runs written in rank order (the usual case) are recognised as sorted in one pass.
    order: np.ndarray | None = None
    if np.all(~next_topic_same | (similarity[1:] <= similarity[:-1])):
        tied_with_next = next_topic_same & (similarity[1:] == similarity[:-1])
        sorted_gains = gains
    else:
        order = np.lexsort((-similarity, row_topic))
        sorted_similarity = similarity[order]
        tied_with_next = next_topic_same & (sorted_similarity[1:] == sorted_similarity[:-1])
        sorted_gains = gains[order]
    del similarity, next_topic_same, row_topic
    # Tie groups are maximal stretches of rows tied with the next; only those whose gains differ matter.
    differs = tied_with_next & (sorted_gains[1:] != sorted_gains[:-1])
    if not differs.any():
        return order
    if order is None:
        order = np.arange(scores.size)
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
    scores = np.fromiter(
        chain.from_iterable(rankings[qid].values() for qid in topics), dtype=np.float64, count=int(lengths.sum())
    )
    docnos = list(chain.from_iterable(rankings[qid] for qid in topics))
    return _ranked_gains(judgments, topics, lengths, scores, docnos)


def ranked_gains_from_columns(
    judgments: Mapping[str, Mapping[str, int]], run: RunColumns, topics: Sequence[str]
) -> RankedGains:
    """Join a run read as columns with its qrels and sort it, for the given topics (each ranked by the run)."""
    if tuple(topics) == run.topics:
        return _ranked_gains(judgments, topics, run.lengths, run.scores, run.docnos)
    rows = run.topic_starts()
    kept = np.concatenate([np.arange(*rows[qid]) for qid in topics])
    lengths = np.array([rows[qid][1] - rows[qid][0] for qid in topics], dtype=np.int64)
    if isinstance(run.docnos, np.ndarray):
        docnos: Sequence[str] | np.ndarray = run.docnos[kept]
    else:
        docnos = list(chain.from_iterable(run.docnos[slice(*rows[qid])] for qid in topics))
    return _ranked_gains(judgments, topics, lengths, run.scores[kept], docnos)


def _ranked_gains(
    judgments: Mapping[str, Mapping[str, int]],
    topics: Sequence[str],
    lengths: np.ndarray,
    scores: np.ndarray,
    docnos: Sequence[str] | np.ndarray,
) -> RankedGains:
    """Sort topic-grouped rows into trec_eval's order and keep the documents with a positive gain."""
    stops = np.cumsum(lengths)
    gains = _gains(judgments, topics, stops, docnos)
    order = rank_by_trec_eval_order(lengths, scores, gains, docnos)
    sorted_gains = gains if order is None else gains[order]
    positive = np.flatnonzero(sorted_gains > 0)
    topic = np.searchsorted(stops, positive, side="right")
    rank = positive - (stops - lengths)[topic] + 1
    judged_counts = np.fromiter((len(judgments[qid]) for qid in topics), dtype=np.int64, count=len(topics))
    judged_grades = np.fromiter(
        chain.from_iterable(judgments[qid].values() for qid in topics), dtype=np.int64, count=int(judged_counts.sum())
    )
    judged_topic = np.repeat(np.arange(len(topics)), judged_counts)
    return RankedGains(tuple(topics), topic, rank, sorted_gains[positive], judged_topic, judged_grades)


def _gains(
    judgments: Mapping[str, Mapping[str, int]],
    topics: Sequence[str],
    stops: np.ndarray,
    docnos: Sequence[str] | np.ndarray,
) -> np.ndarray:
    """Each row's gain: its topic's grade of the document, 0 when unjudged or graded below 0.

    Most retrieved documents are judged in no topic at all, so the rows whose docno is judged
    somewhere are found first at C speed; only those are looked up in their own topic's judgments.
    """
    judged_somewhere = set().union(*(judgments[qid] for qid in topics))
    if isinstance(docnos, np.ndarray):
        candidates = _rows_maybe_judged(docnos, judged_somewhere)
        candidate_docnos = docnos[candidates].astype(str).tolist()
    else:
        candidates = np.flatnonzero(
            np.fromiter(map(judged_somewhere.__contains__, docnos), dtype=bool, count=len(docnos))
        )
        candidate_docnos = [docnos[row] for row in candidates.tolist()]
    candidate_topics = np.searchsorted(stops, candidates, side="right").tolist()
    gains = np.zeros(len(docnos), dtype=np.int64)
    gains[candidates] = [
        judgments[topics[topic]].get(docno, 0) for docno, topic in zip(candidate_docnos, candidate_topics)
    ]
    return np.maximum(gains, 0, out=gains)


def _rows_maybe_judged(docnos: np.ndarray, judged: set[str]) -> np.ndarray:
    """The rows of a :class:`numpy.bytes_` docno array whose docno may be in ``judged`` (a superset of those that are).

    A bit table indexed by the top bits of each docno's 64-bit key holds the judged docnos' keys;
    the few rows it lets through beyond the judged ones are dropped by the exact lookup after it.
    """
    width = docnos.dtype.itemsize
    # A docno longer than the run's longest, or not ASCII, cannot be among the run's docnos.
    comparable = [docno.encode("ascii") for docno in judged if docno.isascii() and len(docno) <= width]
    if not comparable:
        return np.zeros(0, dtype=np.int64)
    bits = int(np.clip(np.ceil(np.log2(16 * len(comparable))), 16, 26))
    shift = np.uint64(64 - bits)
    table = np.zeros(1 << bits, dtype=bool)
    table[docno_keys(np.array(comparable, dtype=docnos.dtype)) >> shift] = True
    return np.flatnonzero(table[docno_keys(docnos) >> shift])


def evaluate(ranked: RankedGains, measures: Sequence[Measure]) -> dict[Measure, dict[str, float]]:
    """Per-topic values of each measure (every one must satisfy :func:`computes`), keyed by topic."""
    topic_count = len(ranked.topics)
    values: dict[Measure, dict[str, float]] = {}
    for measure in measures:
        if measure.name == "nDCG":
            per_topic = _ndcg(ranked, measure.cutoff)
        else:
            relevant = ranked.gain >= measure.rel
            topic, rank = ranked.topic[relevant], ranked.rank[relevant]
            relevant_count = np.bincount(
                ranked.judged_topic, weights=ranked.judged_grades >= measure.rel, minlength=topic_count
            )
            if measure.name == "AP":
                per_topic = _average_precision(topic, rank, relevant_count)
            elif measure.name == "RR":
                per_topic = _reciprocal_rank(topic, rank, topic_count, measure.cutoff)
            else:
                retrieved = np.bincount(topic[rank <= measure.cutoff], minlength=topic_count)
                if measure.name == "P":
                    per_topic = retrieved / measure.cutoff
                else:
                    per_topic = np.divide(
                        retrieved, relevant_count, out=np.zeros(topic_count), where=relevant_count > 0
                    )
        values[measure] = dict(zip(ranked.topics, per_topic.tolist()))
    return values


def _average_precision(topic: np.ndarray, rank: np.ndarray, relevant_count: np.ndarray) -> np.ndarray:
    """trec_eval's ``map`` from the relevant retrieved documents (topic and rank, in ranking order).

    The sum of precision at each of them (relevant so far / rank), over the topic's relevant count.
    """
    relevant_so_far = np.arange(1, topic.size + 1) - np.searchsorted(topic, topic, side="left")
    precision_sum = np.bincount(topic, weights=relevant_so_far / rank, minlength=relevant_count.size)
    return np.divide(precision_sum, relevant_count, out=np.zeros(relevant_count.size), where=relevant_count > 0)


def _reciprocal_rank(topic: np.ndarray, rank: np.ndarray, topic_count: int, cutoff: int | None) -> np.ndarray:
    """1 / rank of each topic's first relevant document (0 without one, or when it lies below ``cutoff``)."""
    first = np.full(topic_count, np.inf)
    with_relevant, first_of_topic = np.unique(topic, return_index=True)
    first[with_relevant] = rank[first_of_topic]
    if cutoff is not None:
        first[first > cutoff] = np.inf
    return 1.0 / first


def _ndcg(ranked: RankedGains, cutoff: int | None) -> np.ndarray:
    """trec_eval's ``ndcg`` / ``ndcg_cut_k``: linear gain, discount log2(rank + 1), ideal cut like the ranking."""
    topic_count = len(ranked.topics)
    counted = slice(None) if cutoff is None else ranked.rank <= cutoff
    dcg = np.bincount(
        ranked.topic[counted], weights=ranked.gain[counted] / np.log2(ranked.rank[counted] + 1.0), minlength=topic_count
    )
    # The ideal ranking: each topic's positive grades, largest first.
    positive = ranked.judged_grades > 0
    ideal_topic, ideal_grades = ranked.judged_topic[positive], ranked.judged_grades[positive]
    order = np.lexsort((-ideal_grades, ideal_topic))
    ideal_topic, ideal_grades = ideal_topic[order], ideal_grades[order]
    ideal_ranks = np.arange(1, ideal_topic.size + 1) - np.searchsorted(ideal_topic, ideal_topic, side="left")
    kept = slice(None) if cutoff is None else ideal_ranks <= cutoff
    ideal = np.bincount(
        ideal_topic[kept], weights=ideal_grades[kept] / np.log2(ideal_ranks[kept] + 1.0), minlength=topic_count
    )
    return np.divide(dcg, ideal, out=np.zeros(topic_count), where=ideal > 0)
