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

- **Judged@k** (ir_measures' ``Judged@k``): the documents of the top k that the qrels judge (any grade, 0
  and below included) over k, or over the documents retrieved when a ranking is shorter (ir_measures' code).
- **The optimistic value M+** (docs/mathematics.md §8 PIN): the measure with every unjudged document of the
  first d ranks given a grade g+, the relevant count and the ideal ranking still those of the judged qrels,
  capped at 1 (every measure here has the maximum 1); and the count of those unjudged documents.

Judged-only variants (``-J``), cut-off AP and every other measure stay with pytrec_eval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_bvtest.io.runbytes import topic_docno_keys
from pytest_bvtest.scoring.cache import encoded_array
from pytest_bvtest.spec.measures import GMAP_FLOOR, Measure, OptimisticMeasure, Residual, RunMeasure, UnjudgedCount

if TYPE_CHECKING:
    from pytest_bvtest.io.runs import RunColumns


def computes(measure: RunMeasure) -> bool:
    """Whether this module computes ``measure`` (otherwise pytrec_eval or gdeval does)."""
    if isinstance(measure, UnjudgedCount | Residual):
        return True
    if isinstance(measure, OptimisticMeasure):
        return computes(measure.measure)
    if measure.judged_only or measure.exponential_gain:
        return False
    if measure.name in ("AP", "GMAP"):
        return measure.cutoff is None
    if measure.name in ("P", "R"):
        return measure.cutoff is not None
    return measure.name in ("RR", "nDCG", "Judged", "RBP", "IPrec", "SetF", "Compat")


def unjudged_depth(measures: Sequence[RunMeasure]) -> int:
    """How many ranks of each topic must be searched for unjudged documents to compute ``measures`` (0: none)."""
    depths = [
        measure.depth if isinstance(measure, UnjudgedCount | OptimisticMeasure) else measure.cutoff
        for measure in measures
        if isinstance(measure, UnjudgedCount | OptimisticMeasure)
        or (isinstance(measure, Measure) and measure.name == "Judged")
    ]
    return max(depths, default=0)


def needs_judged_ranks(measures: Sequence[RunMeasure]) -> bool:
    """Whether ``measures`` read the rank of every judged document of the rankings (:attr:`RankedGains.judged_rank`):
    RBP's residual, and RBP's optimistic value, whose residual below the corners' depth reads it."""
    return any(
        isinstance(measure, Residual) or (isinstance(measure, OptimisticMeasure) and measure.measure.name == "RBP")
        for measure in measures
    )


@dataclass(frozen=True)
class RankedGains:
    """The documents that gain anything, of every topic ranked in trec_eval's order.

    Only a document with a positive gain counts in any measure here, so only those are kept:
    the i-th of them belongs to topic ``topics[topic[i]]``, lies at rank ``rank[i]`` (from 1) and has
    gain ``gain[i]``, in topic order and rank order within a topic. ``judged_topic`` and
    ``judged_grades`` are the qrels of the same topics (every judgment, as topic index and grade),
    for the number of relevant documents and the ideal ranking. ``lengths`` are the documents each topic
    ranks; ``unjudged_topic``, ``unjudged_rank`` and ``unjudged_docno`` the documents without a judgment in
    the first ``unjudged_depth`` ranks of each topic (topic index, rank and docno, in the same order), for
    Judged@k and the optimistic values of docs/mathematics.md §10. ``judged_rank_topic`` and ``judged_rank`` are every
    judged document of the rankings (any grade, topic index and rank, in the same order), for RBP's residual.
    """

    topics: tuple[str, ...]
    topic: np.ndarray
    rank: np.ndarray
    gain: np.ndarray
    judged_topic: np.ndarray
    judged_grades: np.ndarray
    lengths: np.ndarray | None = None
    unjudged_topic: np.ndarray | None = None
    unjudged_rank: np.ndarray | None = None
    unjudged_depth: int = 0
    unjudged_docno: tuple[str, ...] = ()
    judged_rank_topic: np.ndarray | None = None
    judged_rank: np.ndarray | None = None


def documents_payload(ranked: RankedGains) -> dict[str, Any]:
    """What a run's corners and documents to judge read of ``ranked`` (docs/mathematics.md §10), as JSON: its topics
    and their lengths, the documents with a positive gain and the unjudged documents of the first ``unjudged_depth``
    ranks. The qrels' part (``judged_topic``, ``judged_grades``) is left out: :func:`ranked_from_payloads` takes it
    from the qrels again. Cached beside the run's scores, so that the corners never read a run evaluated once."""
    assert ranked.lengths is not None and ranked.unjudged_topic is not None and ranked.unjudged_rank is not None
    judged_ranks = (
        {}
        if ranked.judged_rank_topic is None or ranked.judged_rank is None
        else {"judged_rank_topic": ranked.judged_rank_topic.tolist(), "judged_rank": ranked.judged_rank.tolist()}
    )
    return {
        **judged_ranks,
        "depth": ranked.unjudged_depth,
        "topics": list(ranked.topics),
        "lengths": ranked.lengths.tolist(),
        "topic": ranked.topic.tolist(),
        "rank": ranked.rank.tolist(),
        "gain": ranked.gain.tolist(),
        "unjudged_topic": ranked.unjudged_topic.tolist(),
        "unjudged_rank": ranked.unjudged_rank.tolist(),
        "unjudged_docno": list(ranked.unjudged_docno),
    }


def within_depth(ranked: RankedGains, depth: int) -> RankedGains:
    """``ranked`` with only the unjudged documents of each topic's first ``depth`` ranks (its measures read no deeper;
    the documents searched deeper are :func:`near_ranks_payload`'s)."""
    assert ranked.unjudged_topic is not None and ranked.unjudged_rank is not None
    if ranked.unjudged_depth <= depth:
        return ranked
    kept = np.flatnonzero(ranked.unjudged_rank <= depth)
    return replace(
        ranked,
        unjudged_topic=ranked.unjudged_topic[kept],
        unjudged_rank=ranked.unjudged_rank[kept],
        unjudged_depth=depth,
        unjudged_docno=tuple(ranked.unjudged_docno[row] for row in kept.tolist()),
    )


def near_ranks_payload(ranked: RankedGains) -> dict[str, Any]:
    """The unjudged documents of ``ranked``'s first ``unjudged_depth`` ranks with their ranks (trec_eval's order, ties
    by docno), as JSON: what the rank support of the plausible gradings reads of a run (the ranks of unjudged
    documents within ``FAR_RANKS`` times d, :func:`~pytest_bvtest.stats.plausible.rank_support`), kept beside the run's
    scores apart from :func:`documents_payload` (which every check reads) so that no run is read again for them.

    700,000 documents at 6,980 topics: their docnos as one line each of a text, their topics and ranks as the bytes
    of int32 (:func:`~pytest_bvtest.scoring.cache.encoded_array`; JSON lists of them took 0.2 s to read back)."""
    assert ranked.unjudged_topic is not None and ranked.unjudged_rank is not None
    return {
        "depth": ranked.unjudged_depth,
        "topics": list(ranked.topics),
        "unjudged_topic": encoded_array(ranked.unjudged_topic, "<i4"),
        "unjudged_rank": encoded_array(ranked.unjudged_rank, "<i4"),
        "unjudged_docno": "\n".join(ranked.unjudged_docno),
    }


#: The per-document columns of :func:`documents_payload`, and which of them are topic indices.
_PAYLOAD_COLUMNS = {"topic": True, "rank": False, "gain": False, "unjudged_topic": True, "unjudged_rank": False}


def ranked_from_payloads(
    payloads: Sequence[Mapping[str, Any]], judgments: Mapping[str, Mapping[str, int]], topics: Sequence[str]
) -> RankedGains:
    """The :class:`RankedGains` of ``topics``, each found in one of ``payloads`` (:func:`documents_payload` of the
    whole run, or of each chunk of its topics), with ``judgments``' qrels part: equal to what the whole run gives
    with the same unjudged depth, topics in the order of ``topics``. A ``KeyError`` for a topic none holds."""
    position = {qid: j for j, qid in enumerate(topics)}
    held = {qid for payload in payloads for qid in payload["topics"]}
    missing = [qid for qid in topics if qid not in held]
    if missing or not payloads:
        raise KeyError(f"no ranked documents of topic {missing[0] if missing else None!r}")
    lengths = np.zeros(len(topics), dtype=np.int64)
    parts: dict[str, list[np.ndarray]] = {key: [] for key in _PAYLOAD_COLUMNS}
    for payload in payloads:
        # the payload's topic indices as indices of ``topics``; -1 for a topic not asked for
        renumbered = np.array([position.get(qid, -1) for qid in payload["topics"]], dtype=np.int64)
        asked = renumbered >= 0
        lengths[renumbered[asked]] = np.asarray(payload["lengths"], dtype=np.int64)[asked]
        for key, is_topic in _PAYLOAD_COLUMNS.items():
            column = np.asarray(payload[key], dtype=np.int64)
            parts[key].append(renumbered[column] if is_topic else column)
    joined = {key: np.concatenate(columns) for key, columns in parts.items()}
    judged_ranks: dict[str, np.ndarray | None] = {"judged_rank_topic": None, "judged_rank": None}
    if all("judged_rank" in payload for payload in payloads):  # RBP's residual reads them (an older entry has none)
        renumbered_topic = [
            np.array([position.get(qid, -1) for qid in payload["topics"]], dtype=np.int64)[
                np.asarray(payload["judged_rank_topic"], dtype=np.int64)
            ]
            for payload in payloads
        ]
        topic_of = np.concatenate(renumbered_topic)
        rank_of = np.concatenate([np.asarray(payload["judged_rank"], dtype=np.int64) for payload in payloads])
        kept = np.lexsort((rank_of, topic_of))[np.count_nonzero(topic_of < 0) :]
        judged_ranks = {"judged_rank_topic": topic_of[kept], "judged_rank": rank_of[kept]}
    docnos = np.array([docno for payload in payloads for docno in payload["unjudged_docno"]], dtype=object)
    # topic order, then rank order within a topic; the rows of topics not asked for (-1) sort first and are dropped
    positive = np.lexsort((joined["rank"], joined["topic"]))[np.count_nonzero(joined["topic"] < 0) :]
    unjudged = np.lexsort((joined["unjudged_rank"], joined["unjudged_topic"]))
    unjudged = unjudged[np.count_nonzero(joined["unjudged_topic"] < 0) :]
    judged_counts = np.fromiter((len(judgments[qid]) for qid in topics), dtype=np.int64, count=len(topics))
    judged_grades = np.fromiter(
        chain.from_iterable(judgments[qid].values() for qid in topics), dtype=np.int64, count=int(judged_counts.sum())
    )
    return RankedGains(
        tuple(topics),
        joined["topic"][positive],
        joined["rank"][positive],
        joined["gain"][positive],
        np.repeat(np.arange(len(topics)), judged_counts),
        judged_grades,
        lengths=lengths,
        unjudged_topic=joined["unjudged_topic"][unjudged],
        unjudged_rank=joined["unjudged_rank"][unjudged],
        unjudged_depth=min(int(payload["depth"]) for payload in payloads),
        unjudged_docno=tuple(docnos[unjudged].tolist()),
        **judged_ranks,
    )


def rank_by_trec_eval_order(
    lengths: np.ndarray,
    scores: np.ndarray,
    gains: np.ndarray,
    docnos: Sequence[str] | np.ndarray,
    exact_within: int = 0,
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
    exact_within:
        Tie groups that reach the first ``exact_within`` ranks of a topic are put in docno order whatever their
        gains: which unjudged documents a top d holds, and at which rank, is what its corners, its plausible gradings
        and the documents to judge read (a tie straddling rank 10 was listed by file order).

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
    if exact_within:
        topic_starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        near_top = np.arange(scores.size)[:-1] - topic_starts[:-1] < exact_within
        differs |= tied_with_next & near_top
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
    judgments: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Mapping[str, float]],
    topics: Sequence[str],
    unjudged_depth: int = 0,
    judged_ranks: bool = False,
) -> RankedGains:
    """Join a run (``qid -> docno -> score``) with its qrels and sort it, for the given topics (each ranked);
    with ``unjudged_depth``, find the unjudged documents of each topic's first ``unjudged_depth`` ranks; with
    ``judged_ranks``, the rank of every judged document."""
    lengths = np.fromiter((len(rankings[qid]) for qid in topics), dtype=np.int64, count=len(topics))
    scores = np.fromiter(
        chain.from_iterable(rankings[qid].values() for qid in topics), dtype=np.float64, count=int(lengths.sum())
    )
    docnos = list(chain.from_iterable(rankings[qid] for qid in topics))
    return _ranked_gains(judgments, topics, lengths, scores, docnos, unjudged_depth, judged_ranks)


def ranked_gains_from_columns(
    judgments: Mapping[str, Mapping[str, int]],
    run: RunColumns,
    topics: Sequence[str],
    unjudged_depth: int = 0,
    judged_ranks: bool = False,
) -> RankedGains:
    """Join a run read as columns with its qrels and sort it, for the given topics (each ranked by the run);
    with ``unjudged_depth``, find the unjudged documents of each topic's first ``unjudged_depth`` ranks; with
    ``judged_ranks``, the rank of every judged document."""
    if tuple(topics) == run.topics:
        return _ranked_gains(judgments, topics, run.lengths, run.scores, run.docnos, unjudged_depth, judged_ranks)
    rows = run.topic_starts()
    kept = np.concatenate([np.arange(*rows[qid]) for qid in topics])
    lengths = np.array([rows[qid][1] - rows[qid][0] for qid in topics], dtype=np.int64)
    if isinstance(run.docnos, np.ndarray):
        docnos: Sequence[str] | np.ndarray = run.docnos[kept]
    else:
        docnos = list(chain.from_iterable(run.docnos[slice(*rows[qid])] for qid in topics))
    return _ranked_gains(judgments, topics, lengths, run.scores[kept], docnos, unjudged_depth, judged_ranks)


def _ranked_gains(
    judgments: Mapping[str, Mapping[str, int]],
    topics: Sequence[str],
    lengths: np.ndarray,
    scores: np.ndarray,
    docnos: Sequence[str] | np.ndarray,
    unjudged_depth: int = 0,
    judged_ranks: bool = False,
) -> RankedGains:
    """Sort topic-grouped rows into trec_eval's order and keep the documents with a positive gain (and, with
    ``unjudged_depth``, the unjudged ones of each topic's first ``unjudged_depth`` ranks; with ``judged_ranks``, the
    rank of every judged document)."""
    stops = np.cumsum(lengths)
    gains, judged = _gains(judgments, topics, stops, docnos, with_judged=unjudged_depth > 0 or judged_ranks)
    # tied documents are put in docno order where what is computed from them differs: their gain, or, when
    # unjudged documents are counted, whether they are judged
    tie_key = gains if judged is None else 2 * gains + judged
    order = rank_by_trec_eval_order(lengths, scores, tie_key, docnos, unjudged_depth)
    sorted_gains = gains if order is None else gains[order]
    positive = np.flatnonzero(sorted_gains > 0)
    starts = stops - lengths
    topic = np.searchsorted(stops, positive, side="right")
    rank = positive - starts[topic] + 1
    judged_counts = np.fromiter((len(judgments[qid]) for qid in topics), dtype=np.int64, count=len(topics))
    judged_grades = np.fromiter(
        chain.from_iterable(judgments[qid].values() for qid in topics), dtype=np.int64, count=int(judged_counts.sum())
    )
    judged_topic = np.repeat(np.arange(len(topics)), judged_counts)
    ranked = RankedGains(
        tuple(topics), topic, rank, sorted_gains[positive], judged_topic, judged_grades, lengths=np.asarray(lengths)
    )
    if judged is None:
        return ranked
    sorted_judged = judged if order is None else judged[order]
    row_topic = np.repeat(np.arange(len(topics)), lengths)
    row_rank = np.arange(sorted_judged.size) - starts[row_topic] + 1
    if judged_ranks:
        judged_rows = np.flatnonzero(sorted_judged)
        ranked = replace(ranked, judged_rank_topic=row_topic[judged_rows], judged_rank=row_rank[judged_rows])
    unjudged = np.flatnonzero(~sorted_judged & (row_rank <= unjudged_depth))
    rows = unjudged if order is None else order[unjudged]
    names = docnos[rows].astype(str).tolist() if isinstance(docnos, np.ndarray) else [docnos[row] for row in rows]
    return replace(
        ranked,
        unjudged_topic=row_topic[unjudged],
        unjudged_rank=row_rank[unjudged],
        unjudged_depth=unjudged_depth,
        unjudged_docno=tuple(names),
    )


def _gains(
    judgments: Mapping[str, Mapping[str, int]],
    topics: Sequence[str],
    stops: np.ndarray,
    docnos: Sequence[str] | np.ndarray,
    *,
    with_judged: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's gain: its topic's grade of the document, 0 when unjudged or graded below 0; and, when
    ``with_judged``, whether its topic judges the document at all (any grade)."""
    found = _judged_rows(judgments, topics, stops, docnos) if isinstance(docnos, np.ndarray) else None
    rows, grades = found if found is not None else _judged_rows_by_lookup(judgments, topics, stops, docnos)
    gains = np.zeros(len(docnos), dtype=np.int64)
    gains[rows] = np.maximum(grades, 0)
    judged = None
    if with_judged:
        judged = np.zeros(len(docnos), dtype=bool)
        judged[rows] = True
    return gains, judged


def _judged_rows(
    judgments: Mapping[str, Mapping[str, int]], topics: Sequence[str], stops: np.ndarray, docnos: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows of a :class:`numpy.bytes_` docno array that their own topic judges, and their grades (any grade),
    joined as integers (:func:`rows_of_pairs`): only the qrels of ``topics`` are visited in Python, never a row of the
    run (a per-row lookup cost 2.5 s for 7 million rows). ``None`` when two judgments share a key."""
    judged_topic, judged_docno, judged_grade = [], [], []
    for index, qid in enumerate(topics):
        for docno, grade in judgments[qid].items():
            judged_topic.append(index)
            judged_docno.append(docno)
            judged_grade.append(grade)
    found = rows_of_pairs(stops, docnos, np.array(judged_topic, dtype=np.int64), judged_docno)
    if found is None:
        return None
    rows, which = found
    return rows, np.array(judged_grade, dtype=np.int64)[which]


def rows_of_pairs(
    stops: np.ndarray, docnos: np.ndarray, pair_topic: np.ndarray, pair_docno: Sequence[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows of topic-grouped rows (topic ``j`` ends before row ``stops[j]``; ``docnos`` a :class:`numpy.bytes_`
    array) that hold one of the pairs (``pair_topic[k]``, ``pair_docno[k]``), in row order, and the pair each holds.

    Joined as integers: each (topic, docno) pair of the rows and of the list gets a 64-bit key
    (:func:`~pytest_bvtest.io.runbytes.topic_docno_keys`); a bit table of the pairs' keys lets through the few rows
    that may hold one, those are looked up among the pairs' sorted keys, and every match is verified on the topic and
    docno themselves. ``None`` when two pairs share a key (then only an exact lookup tells them apart)."""
    width = docnos.dtype.itemsize
    # a docno longer than the rows' longest, or not ASCII, is none of their docnos
    fits = np.fromiter((docno.isascii() and len(docno) <= width for docno in pair_docno), bool, len(pair_docno))
    listed = np.flatnonzero(fits)
    if listed.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    wanted_topic = pair_topic[listed]
    wanted_docno = np.array([pair_docno[k] for k in listed.tolist()], dtype=docnos.dtype)
    wanted_keys = topic_docno_keys(wanted_topic, wanted_docno)
    by_key = np.argsort(wanted_keys)
    sorted_keys = wanted_keys[by_key]
    if np.any(sorted_keys[1:] == sorted_keys[:-1]):
        return None
    lengths = np.diff(stops, prepend=0)
    row_keys = topic_docno_keys(np.repeat(np.arange(lengths.size, dtype=np.int64), lengths), docnos)
    bits = int(np.clip(np.ceil(np.log2(16 * sorted_keys.size)), 16, 26))
    shift = np.uint64(64 - bits)
    table = np.zeros(1 << bits, dtype=bool)
    table[sorted_keys >> shift] = True
    candidates = np.flatnonzero(table[row_keys >> shift])
    place = np.minimum(np.searchsorted(sorted_keys, row_keys[candidates]), sorted_keys.size - 1)
    hit = sorted_keys[place] == row_keys[candidates]
    rows, wanted = candidates[hit], by_key[place[hit]]
    exact = (np.searchsorted(stops, rows, side="right") == wanted_topic[wanted]) & (
        docnos[rows] == wanted_docno[wanted]
    )
    return rows[exact], listed[wanted[exact]]


def trec_eval_ranks(lengths: np.ndarray, scores: np.ndarray, docnos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rank (from 1) of each of ``rows`` within its topic in trec_eval's order (its score as a C float descending,
    ties by docno descending; :func:`rank_by_trec_eval_order`), topics' rows following each other (``lengths``)."""
    everywhere = int(lengths.max(initial=0))  # every tie group in docno order
    order = rank_by_trec_eval_order(lengths, scores, np.zeros(scores.size, dtype=np.int8), docnos, everywhere)
    if order is None:
        position = rows
    else:
        place = np.empty_like(order)
        place[order] = np.arange(order.size)
        position = place[rows]
    stops = np.cumsum(lengths)
    return position - (stops - lengths)[np.searchsorted(stops, rows, side="right")] + 1


def _judged_rows_by_lookup(
    judgments: Mapping[str, Mapping[str, int]],
    topics: Sequence[str],
    stops: np.ndarray,
    docnos: Sequence[str] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_judged_rows` by looking each row up in its topic's judgments (docnos as strings, or keys that
    collide): the rows whose docno is judged in no topic at all (most) are left out first."""
    judged_somewhere = set().union(*(judgments[qid] for qid in topics))
    names = docnos.astype(str).tolist() if isinstance(docnos, np.ndarray) else docnos
    candidates = np.flatnonzero(np.fromiter(map(judged_somewhere.__contains__, names), dtype=bool, count=len(names)))
    candidate_topics = np.searchsorted(stops, candidates, side="right").tolist()
    grades = [judgments[topics[topic]].get(names[row]) for row, topic in zip(candidates.tolist(), candidate_topics)]
    judged = np.fromiter((grade is not None for grade in grades), dtype=bool, count=len(grades))
    return candidates[judged], np.array([grade for grade in grades if grade is not None], dtype=np.int64)


def evaluate(ranked: RankedGains, measures: Sequence[RunMeasure]) -> dict[RunMeasure, dict[str, float]]:
    """Per-topic values of each measure (every one must satisfy :func:`computes`), keyed by topic; ``ranked`` must
    hold the unjudged documents as deep as :func:`unjudged_depth` of the measures."""
    topic_count = len(ranked.topics)
    values: dict[RunMeasure, dict[str, float]] = {}
    for measure in measures:
        if isinstance(measure, OptimisticMeasure):
            values[measure] = optimistic_values(ranked, measure)
            continue
        if isinstance(measure, UnjudgedCount):
            per_topic = _unjudged_counts(ranked, measure.depth).astype(float)
        elif isinstance(measure, Residual):
            per_topic = rbp_residual(ranked, measure.measure)
        elif measure.name == "Judged":
            shown = np.minimum(ranked.lengths, measure.cutoff)
            per_topic = (shown - _unjudged_counts(ranked, measure.cutoff)) / shown
        elif measure.name == "nDCG":
            per_topic = _ndcg(ranked, measure.cutoff, measure.gains)
        elif measure.name == "Compat":
            per_topic = _compatibility(ranked, measure.p, measure.normalize)
        else:
            relevant = ranked.gain >= measure.rel
            topic, rank = ranked.topic[relevant], ranked.rank[relevant]
            relevant_count = np.bincount(
                ranked.judged_topic, weights=ranked.judged_grades >= measure.rel, minlength=topic_count
            )
            if measure.name == "AP":
                per_topic = _average_precision(topic, rank, relevant_count)
            elif measure.name == "GMAP":
                per_topic = np.log(np.maximum(_average_precision(topic, rank, relevant_count), GMAP_FLOOR))
            elif measure.name == "RBP":
                counted = slice(None) if measure.cutoff is None else rank <= measure.cutoff
                weights = (1 - measure.p) * measure.p ** (rank[counted] - 1.0)
                per_topic = np.bincount(topic[counted], weights=weights, minlength=topic_count)
            elif measure.name == "IPrec":
                per_topic = _interpolated_precision(topic, rank, relevant_count, measure.recall)
            elif measure.name == "SetF":
                per_topic = _set_f(topic, ranked.lengths, relevant_count, measure.beta)
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


def _unjudged_counts(ranked: RankedGains, depth: int) -> np.ndarray:
    """Per topic, the unjudged documents among its first ``depth`` ranks."""
    assert ranked.unjudged_rank is not None and ranked.unjudged_depth >= depth, "unjudged documents not searched"
    return np.bincount(ranked.unjudged_topic[ranked.unjudged_rank <= depth], minlength=len(ranked.topics))


def optimistic_values(ranked: RankedGains, optimistic: OptimisticMeasure) -> dict[str, float]:
    """M+ per topic (docs/mathematics.md §8 PIN): the unjudged documents of the first ``optimistic.depth`` ranks
    gain ``optimistic.grade``; the relevant count and the ideal ranking stay the judged qrels'; capped at 1."""
    return with_unjudged_graded(ranked, optimistic, ranked.unjudged_rank <= optimistic.depth)


def with_unjudged_graded(ranked: RankedGains, optimistic: OptimisticMeasure, lifted: np.ndarray) -> dict[str, float]:
    """``optimistic.measure`` with the unjudged documents selected by ``lifted`` (a mask over ``ranked``'s
    unjudged documents) given ``optimistic.grade``, normalised by the judged qrels and capped at 1. RBP's value also
    gains its residual below the top d (:func:`_residual_below`): every unjudged document of the run counts as
    relevant in its optimistic world, so that M+ is Moffat & Zobel's RBP + residual."""
    assert ranked.unjudged_rank is not None and ranked.unjudged_depth >= optimistic.depth
    topic = np.concatenate([ranked.topic, ranked.unjudged_topic[lifted]])
    rank = np.concatenate([ranked.rank, ranked.unjudged_rank[lifted]])
    gain = np.concatenate([ranked.gain, np.full(int(lifted.sum()), optimistic.grade, dtype=ranked.gain.dtype)])
    order = np.lexsort((rank, topic))
    graded = replace(ranked, topic=topic[order], rank=rank[order], gain=gain[order])
    (per_topic,) = evaluate(graded, [optimistic.measure]).values()
    measure = optimistic.measure
    if measure.name == "RBP" and optimistic.grade >= measure.rel:
        # RBP's optimistic value is exactly RBP + residual (docs/mathematics.md §8): the unjudged documents below
        # the top d and the ranks after the ranking's end gain too
        below = _residual_below(ranked, measure, optimistic.depth)
        per_topic = {qid: value + float(extra) for (qid, value), extra in zip(per_topic.items(), below)}
    return {qid: min(value, 1.0) for qid, value in per_topic.items()}


def single_lifts(ranked: RankedGains, optimistic: OptimisticMeasure, chosen: np.ndarray | None = None) -> np.ndarray:
    """For each unjudged document of the first ``optimistic.depth`` ranks (in ``ranked``'s order of unjudged
    documents, those deeper left out; or those at the positions ``chosen``), its topic's value with that document
    alone graded ``optimistic.grade``: judging leverage's per-topic move (docs/mathematics.md §10)."""
    assert ranked.unjudged_rank is not None and ranked.unjudged_depth >= optimistic.depth
    if chosen is None:
        chosen = np.flatnonzero(ranked.unjudged_rank <= optimistic.depth)
    copies = np.arange(chosen.size)
    grades = np.full(chosen.size, optimistic.grade, dtype=ranked.gain.dtype)
    return graded_copies(ranked, optimistic, ranked.unjudged_topic[chosen], chosen, copies, grades)


def graded_copies(
    ranked: RankedGains,
    optimistic: OptimisticMeasure,
    copy_topic: np.ndarray,
    graded: np.ndarray,
    graded_copy: np.ndarray,
    graded_gain: np.ndarray,
    judged_too: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """``optimistic.measure`` on copies of topics, each with some of its unjudged documents graded: copy ``c`` is
    topic ``copy_topic[c]`` with the unjudged documents at positions ``graded[e]`` (in ``ranked``'s order of unjudged
    documents) whose ``graded_copy[e]`` is ``c`` given the gain ``graded_gain[e]`` (0: left non-relevant), capped at 1
    (docs/mathematics.md §10). The normalisation is the judged qrels' (the corners' PIN), or, with ``judged_too``
    ``(copies, grades)``, theirs with those grades added to the copies' judgments, as CI would read them had they
    been judged (the plausible gradings: nDCG's ideal and AP's relevant count grow with them). Every copy is a topic
    of its own, made of its topic's relevant documents, judgments and graded documents, so that all are scored in
    one pass: a document's judging leverage (one document graded g+ per copy) and the plausible gradings of a verdict
    (one copy per topic and grading) alike."""
    assert ranked.unjudged_rank is not None
    every = np.arange(len(ranked.topics))

    def copied(topic_of_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of each copy's topic, repeated per copy: (copy index, source row) of each row."""
        starts = np.searchsorted(topic_of_row, every, side="left")[copy_topic]
        counts = np.searchsorted(topic_of_row, every, side="right")[copy_topic] - starts
        copy = np.repeat(np.arange(copy_topic.size), counts)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return copy, np.repeat(starts, counts) + offsets

    copy, source = copied(ranked.topic)
    lifted = graded_gain > 0
    topic = np.concatenate([copy, graded_copy[lifted]])
    rank = np.concatenate([ranked.rank[source], ranked.unjudged_rank[graded[lifted]]])
    gain = np.concatenate([ranked.gain[source], graded_gain[lifted].astype(ranked.gain.dtype)])
    order = np.lexsort((rank, topic))
    judged_copy, judged_source = copied(ranked.judged_topic)
    judged_grades = ranked.judged_grades[judged_source]
    if judged_too is not None:
        judged_copy = np.concatenate([judged_copy, judged_too[0]])
        judged_grades = np.concatenate([judged_grades, judged_too[1].astype(judged_grades.dtype)])
    copies = RankedGains(
        tuple(map(str, range(copy_topic.size))), topic[order], rank[order], gain[order], judged_copy, judged_grades
    )
    (per_copy,) = evaluate(copies, [optimistic.measure]).values()
    return np.minimum(np.fromiter(per_copy.values(), dtype=float, count=copy_topic.size), 1.0)


def judged_grade_counts(ranked: RankedGains, depth: int, grades: int) -> np.ndarray:
    """Per topic, the judged documents of each grade 0 to ``grades - 1`` among the first ``depth`` ranks (a grade
    below 0, or above, counts as 0 or as the top one): what the prior of an unjudged grade reads (docs/mathematics.md
    §10)."""
    assert ranked.lengths is not None and ranked.unjudged_depth >= depth
    topic_count = len(ranked.topics)
    shown = ranked.rank <= depth
    grade = np.clip(ranked.gain[shown].astype(np.int64), 0, grades - 1)
    counts = np.bincount(ranked.topic[shown] * grades + grade, minlength=topic_count * grades).reshape(
        topic_count, grades
    )
    judged = np.minimum(ranked.lengths, depth) - _unjudged_counts(ranked, depth)
    counts[:, 0] += judged - counts.sum(axis=1)
    return counts


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


def _ndcg(
    ranked: RankedGains, cutoff: int | None, gains: tuple[tuple[int, int | float], ...] | None = None
) -> np.ndarray:
    """trec_eval's ``ndcg`` / ``ndcg_cut_k``: linear gain, discount log2(rank + 1), ideal cut like the ranking; with
    ``gains`` (``(grade, gain)`` pairs), each listed grade gains its gain in the ranking and in the ideal ranking, as
    trec_eval's ``ndcg.1=3,2=9`` and ir_measures' ``nDCG(gains={...})`` (a grade not listed gains itself)."""
    topic_count = len(ranked.topics)
    counted = slice(None) if cutoff is None else ranked.rank <= cutoff
    gain = mapped_gains(ranked.gain[counted], gains)
    dcg = np.bincount(ranked.topic[counted], weights=gain / np.log2(ranked.rank[counted] + 1.0), minlength=topic_count)
    # The ideal ranking: each topic's positive grades, largest gain first.
    positive = ranked.judged_grades > 0
    ideal_topic, ideal_grades = ranked.judged_topic[positive], mapped_gains(ranked.judged_grades[positive], gains)
    order = np.lexsort((-ideal_grades, ideal_topic))
    ideal_topic, ideal_grades = ideal_topic[order], ideal_grades[order]
    ideal_ranks = np.arange(1, ideal_topic.size + 1) - np.searchsorted(ideal_topic, ideal_topic, side="left")
    kept = slice(None) if cutoff is None else ideal_ranks <= cutoff
    ideal = np.bincount(
        ideal_topic[kept], weights=ideal_grades[kept] / np.log2(ideal_ranks[kept] + 1.0), minlength=topic_count
    )
    return np.divide(dcg, ideal, out=np.zeros(topic_count), where=ideal > 0)


def mapped_gains(grades: np.ndarray, gains: tuple[tuple[int, int | float], ...] | None) -> np.ndarray:
    """Each grade's gain under ``gains`` (``(grade, gain)`` pairs; a grade not listed gains itself)."""
    if gains is None:
        return grades
    mapped = grades.astype(float)
    for grade, gain in gains:
        mapped[grades == grade] = gain
    return mapped


def rbp_residual(ranked: RankedGains, measure: Measure) -> np.ndarray:
    """RBP's residual per topic (Moffat & Zobel, TOIS 2008, Sec. 4; docs/mathematics.md §8): the weight
    (1 - p) p^(i-1) of every unjudged rank i of the ranking, and p^L of the ranks after its end, L documents long
    (to the measure's cut-off k only: then minus p^k). As every rank's weight sums to 1, it is
    1 - p^k - (the weight of the judged ranks), p^k = 0 without a cut-off."""
    assert ranked.judged_rank is not None and ranked.judged_rank_topic is not None, "judged ranks not kept"
    p, cutoff = measure.p, measure.cutoff
    counted = slice(None) if cutoff is None else ranked.judged_rank <= cutoff
    judged_weight = np.bincount(
        ranked.judged_rank_topic[counted],
        weights=(1 - p) * p ** (ranked.judged_rank[counted] - 1.0),
        minlength=len(ranked.topics),
    )
    return 1.0 - (0.0 if cutoff is None else p**cutoff) - judged_weight


def _residual_below(ranked: RankedGains, measure: Measure, depth: int) -> np.ndarray:
    """The part of :func:`rbp_residual` below rank ``depth``: what RBP's optimistic value adds to the unjudged
    documents of the top ``depth`` it grades, so that M+ is Moffat & Zobel's RBP + residual, exactly."""
    assert ranked.judged_rank is not None and ranked.judged_rank_topic is not None, "judged ranks not kept"
    assert ranked.lengths is not None
    p = measure.p
    # the ranks graded are the first ``depth`` the ranking holds (and the cut-off keeps)
    stop = np.minimum(ranked.lengths, depth if measure.cutoff is None else min(depth, measure.cutoff))
    below = ranked.judged_rank > stop[ranked.judged_rank_topic]
    if measure.cutoff is not None:
        below &= ranked.judged_rank <= measure.cutoff
    judged_weight = np.bincount(
        ranked.judged_rank_topic[below],
        weights=(1 - p) * p ** (ranked.judged_rank[below] - 1.0),
        minlength=len(ranked.topics),
    )
    # the ranks below ``stop`` weigh p^stop in all (to the cut-off: p^stop - p^k), the ranking's end included
    return p ** stop.astype(float) - (0.0 if measure.cutoff is None else p**measure.cutoff) - judged_weight


def _interpolated_precision(
    topic: np.ndarray, rank: np.ndarray, relevant_count: np.ndarray, recall: float
) -> np.ndarray:
    """trec_eval 10.0's ``iprec_at_recall_r`` (m_iprec_at_recall.c): the highest precision at any rank at or below
    the one where the run has retrieved c = lround(r * R) relevant documents (c = 0 reads from the first); 0 when
    the run retrieves fewer than c. trec_eval 9 (pytrec_eval's) took c = (long) (r * R + 0.9) instead."""
    topic_count = relevant_count.size
    ordinal = np.arange(1, topic.size + 1) - np.searchsorted(topic, topic, side="left")
    precision = ordinal / rank
    # the highest precision at each relevant document or below it: a running maximum from each topic's end
    reversed_order = np.lexsort((-ordinal, topic))
    best_below = np.empty_like(precision)
    if topic.size:
        # a running maximum that restarts at each topic: each precision as its place among all of them (an integer),
        # each topic lifted above the one before it, so that one accumulation over all topics is exact
        flipped = precision[reversed_order]
        levels = np.unique(flipped)
        place = np.searchsorted(levels, flipped)
        lift = np.searchsorted(np.unique(topic), topic[reversed_order]) * levels.size
        best_below[reversed_order] = levels[np.maximum.accumulate(place + lift) - lift]
    exact = recall * relevant_count
    # C's lround: half away from zero (here >= 0), read from the fraction (floor(x + 0.5) rounds 0.49999999999999994 up)
    wanted = np.where(exact - np.floor(exact) >= 0.5, np.ceil(exact), np.floor(exact)).astype(np.int64)
    wanted = np.maximum(wanted, 1)
    retrieved = np.bincount(topic, minlength=topic_count)
    values = np.zeros(topic_count)
    reached = retrieved >= wanted
    starts = np.searchsorted(topic, np.arange(topic_count), side="left")
    values[reached] = best_below[starts[reached] + wanted[reached] - 1]
    return values


def _set_f(topic: np.ndarray, lengths: np.ndarray | None, relevant_count: np.ndarray, beta: float) -> np.ndarray:
    """trec_eval's ``set_F.b`` (m_set_F.c): (b + 1) P R / (b P + R) over the whole ranking, 0 without a relevant
    document retrieved (b = 1: the harmonic mean of precision and recall)."""
    assert lengths is not None
    retrieved = np.bincount(topic, minlength=relevant_count.size).astype(float)
    found = retrieved > 0
    precision = np.divide(retrieved, lengths, out=np.zeros(retrieved.size), where=found)
    recall = np.divide(retrieved, relevant_count, out=np.zeros(retrieved.size), where=found)
    return np.divide(
        (beta + 1.0) * precision * recall,
        beta * precision + recall,
        out=np.zeros(retrieved.size),
        where=found,
    )


def _compatibility(ranked: RankedGains, p: float, normalize: bool) -> np.ndarray:
    """Clarke, Vtyurina & Smucker's compatibility (TOIS 2021), as ir_measures' ``Compat``: the rank-biased overlap
    (persistence p) of the ranking with the ideal one, to the depth of the longer; normalised by the ideal's overlap
    with itself. The ideal ranks the relevant documents by grade, those of one grade in the run's order (documents
    the run does not retrieve after those it does). RBO at depth D is sum_{d<D} p^d |A_d n B_d| / (d + 1) over
    sum_{d<D} p^d, A_d and B_d the first d + 1 documents of either ranking."""
    assert ranked.lengths is not None
    topic_count = len(ranked.topics)
    relevant_total = np.bincount(ranked.judged_topic, weights=ranked.judged_grades > 0, minlength=topic_count)
    depth = np.maximum(ranked.lengths, relevant_total).astype(np.int64)
    # each retrieved relevant document's place in the ideal: after every more relevant document of its topic, and
    # after those of its grade the run ranks above it
    judged = ranked.judged_grades > 0
    more_relevant = np.zeros(ranked.topic.size, dtype=np.int64)
    for grade in np.unique(ranked.gain):
        counts = np.bincount(ranked.judged_topic[judged & (ranked.judged_grades > grade)], minlength=topic_count)
        more_relevant[ranked.gain == grade] = counts[ranked.topic[ranked.gain == grade]]
    order = np.lexsort((ranked.rank, -ranked.gain, ranked.topic))
    grouped_topic, grouped_gain = ranked.topic[order], ranked.gain[order]
    restart = np.r_[True, (grouped_topic[1:] != grouped_topic[:-1]) | (grouped_gain[1:] != grouped_gain[:-1])]
    position = np.arange(order.size) - np.maximum.accumulate(np.where(restart, np.arange(order.size), 0))
    ideal_position = np.empty(order.size, dtype=np.int64)
    ideal_position[order] = more_relevant[order] + position
    # a document is in both prefixes from depth index max(rank - 1, ideal position) on
    joins = np.maximum(ranked.rank - 1, ideal_position)
    values = np.zeros(topic_count)
    bounds = np.searchsorted(ranked.topic, np.arange(topic_count + 1), side="left")
    for j in range(topic_count):
        size = int(depth[j])
        if size == 0:
            continue
        weights = p ** np.arange(size, dtype=float)
        overlap = np.cumsum(np.bincount(joins[bounds[j] : bounds[j + 1]], minlength=size)[:size])
        score = float(np.sum(weights * overlap / np.arange(1, size + 1))) / float(np.sum(weights))
        if normalize:
            best_overlap = np.minimum(np.arange(1, size + 1), relevant_total[j])
            best = float(np.sum(weights * best_overlap / np.arange(1, size + 1))) / float(np.sum(weights))
            score = score / best if best > 0 else score
        values[j] = score
    return values
