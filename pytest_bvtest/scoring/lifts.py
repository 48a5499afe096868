"""A run's unjudged documents, and its measure with chosen ones graded g+ (docs/mathematics.md §10).

The optimistic value M+ beside each measure (:mod:`~pytest_bvtest.scoring.columnar`,
:mod:`~pytest_bvtest.scoring.gdeval`) grades every unjudged document of a run's top d. The corners of a gate and
the documents to judge need more, for the candidate and its reference only, when their top d holds unjudged
documents: which documents those are (with their ranks), the measure with only some of them graded (those both
runs retrieve: one document has one grade at a corner), and the measure with each alone graded (its judging
leverage). :func:`run_lifts` reads one run once for all of that; the normalisation stays the judged qrels' and
every value is capped at the measure's maximum, 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run, RunColumns
from pytest_bvtest.scoring import columnar, gdeval
from pytest_bvtest.scoring import drawn as scored_drawn
from pytest_bvtest.scoring.cache import decoded_array
from pytest_bvtest.spec.measures import OptimisticMeasure

#: Per topic, the documents graded g+: ``topic -> docnos``.
Lifted = Mapping[str, Collection[str]]
#: ``(topics, values)``: per draw (rows of ``values``), a run's value on each of ``topics`` with its unjudged documents
#: graded as the draw grades them.
DrawnValues = tuple[list[str], np.ndarray]


@dataclass(frozen=True)
class Lifts:
    """One run under one optimistic measure: ``documents[topic]`` maps each unjudged document of the first
    ``optimistic.depth`` ranks to its rank (rank order); :meth:`single_of` gives each listed document's topic value
    with that document alone graded g+ (``single``: every document's, computed when first asked); :meth:`values` the
    value with any set of them graded; :meth:`drawn` the value under gradings of them with any grades (the plausible
    verdict's draws); :meth:`judged_counts` per topic the judged documents of each grade in the first
    ``optimistic.depth`` ranks (what the prior of an unjudged grade reads); ``rank(topic, docno)`` any document's rank
    in the run (trec_eval's order), ``None`` where it does not retrieve it."""

    optimistic: OptimisticMeasure
    documents: Mapping[str, Mapping[str, int]]
    _single: Callable[[Sequence[tuple[str, str]]], list[float]]
    _values: Callable[[Lifted], dict[str, float]]
    _values_without: Callable[[Lifted], dict[str, float]]
    rank: Callable[[str, str], int | None]
    _drawn: Callable[[Sequence[tuple[str, str]], np.ndarray], DrawnValues]
    _judged_counts: Callable[[int], Mapping[str, np.ndarray]]
    _ranks: Callable[[Sequence[tuple[str, str]], int], np.ndarray]

    def single_of(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each ``(topic, docno)`` of ``pairs`` (unjudged documents of the top d), the topic's value with that
        document alone graded g+: only those are computed (a corner asks for the few documents two runs share)."""
        return self._single(pairs)

    @cached_property
    def single(self) -> Mapping[tuple[str, str], float]:
        """:meth:`single_of` every unjudged document of the top d (the documents to judge read them all)."""
        pairs = [(topic, docno) for topic, docnos in self.documents.items() for docno in docnos]
        return dict(zip(pairs, self._single(pairs)))

    def values(self, lifted: Lifted) -> dict[str, float]:
        """Per ranked topic of the universe, the measure with the unjudged documents of the top d named in
        ``lifted`` graded g+ (others, and documents below the top d, as judged)."""
        return self._values(lifted)

    def values_without(self, left_out: Lifted) -> dict[str, float]:
        """:meth:`values` with every unjudged document of the top d graded g+ but those named in ``left_out`` (a
        corner grades all but a few: naming the few costs a lookup each, naming all of them one each)."""
        return self._values_without(left_out)

    def drawn(self, pairs: Sequence[tuple[str, str]], grades: np.ndarray) -> DrawnValues:
        """The run's value on each topic it ranks that any of ``pairs`` (unjudged ``(topic, docno)``) is on, under each
        grading: ``grades[s, k]`` is pair ``k``'s grade in draw ``s`` (0: non-relevant), the grades joining the qrels
        as CI would read them had they been judged (a pair this run's top d does not hold moves only the
        normalisation), its other unjudged documents non-relevant. Each topic's distinct gradings are scored once."""
        return self._drawn(pairs, grades)

    def ranks(self, pairs: Sequence[tuple[str, str]], within: int) -> np.ndarray:
        """Each unjudged ``(topic, docno)``'s :attr:`rank` where it lies within the first ``within`` ranks, else 0 (the
        run does not retrieve it, or ranks it below), all at once."""
        return self._ranks(pairs, within)

    def judged_counts(self, grades: int) -> Mapping[str, np.ndarray]:
        """Per ranked topic, the judged documents of grade 0 to ``grades - 1`` in the first d ranks (below 0 counts
        as 0)."""
        return self._judged_counts(grades)


def run_lifts(
    qrels: Qrels, run: Run | RunColumns, measures: Sequence[OptimisticMeasure]
) -> dict[OptimisticMeasure, Lifts]:
    """:class:`Lifts` of ``run`` under each of ``measures`` (columnar or gdeval measures with corners)."""
    if isinstance(run, RunColumns):
        ranked_topics = set(run.topics)
        topics = [qid for qid in qrels.evaluated_topics() if qid in ranked_topics]
    else:
        topics = [qid for qid in qrels.evaluated_topics() if run.scores.get(qid)]
    judgments = {qid: qrels.judgments[qid] for qid in topics}
    rank = _Ranker(lambda: run)
    lifts: dict[OptimisticMeasure, Lifts] = {}
    by_columns = [measure for measure in measures if columnar.computes(measure)]
    if by_columns:
        depth = max(measure.depth for measure in by_columns)
        judged_ranks = columnar.needs_judged_ranks(by_columns)
        if isinstance(run, RunColumns):
            ranked = columnar.ranked_gains_from_columns(judgments, run, topics, depth, judged_ranks)
        else:
            rankings = {qid: run.scores[qid] for qid in topics}
            ranked = columnar.ranked_gains_from_rankings(judgments, rankings, topics, depth, judged_ranks)
        found = _UnjudgedInTop(ranked)
        lifts.update({measure: _columnar_lifts(ranked, measure, rank, found) for measure in by_columns})
    by_gdeval = [measure for measure in measures if measure not in by_columns]
    if by_gdeval:
        rankings = run.rankings(topics) if isinstance(run, RunColumns) else {qid: run.scores[qid] for qid in topics}
        lifts.update({measure: _gdeval_lifts(judgments, rankings, topics, measure, rank) for measure in by_gdeval})
    return lifts


def documents_lifts(
    qrels: Qrels,
    documents: Sequence[Mapping[str, Any]],
    measures: Sequence[OptimisticMeasure],
    read: Callable[[], Run | RunColumns],
    near: Callable[[], Sequence[Mapping[str, Any]] | None] | None = None,
) -> dict[OptimisticMeasure, Lifts] | None:
    """:func:`run_lifts` from the run's ranked documents (:func:`~pytest_bvtest.scoring.columnar.documents_payload`,
    cached when the run was evaluated) instead of the run: the same values; the run is read (``read``) only if a
    document's rank is asked for that ``near`` (:func:`~pytest_bvtest.scoring.columnar.near_ranks_payload`, one per
    chunk of topics, ``None`` when not kept) does not hold (the documents to judge). ``None`` when they cannot stand
    for the run: a measure gdeval computes, unjudged documents not searched deep enough, or an entry that does not
    hold what it should."""
    if not measures or not all(columnar.computes(measure) for measure in measures):
        return None
    try:
        held = {qid for payload in documents for qid in payload["topics"]}
        topics = [qid for qid in qrels.evaluated_topics() if qid in held]
        ranked = columnar.ranked_from_payloads(documents, {qid: qrels.judgments[qid] for qid in topics}, topics)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if ranked.unjudged_depth < max(measure.depth for measure in measures):
        return None
    if ranked.judged_rank is None and columnar.needs_judged_ranks(measures):  # RBP's residual, not kept
        return None
    rank, found = _Ranker(read, near), _UnjudgedInTop(ranked)
    return {measure: _columnar_lifts(ranked, measure, rank, found) for measure in measures}


def combined_lifts(parts: Sequence[Lifts]) -> Lifts:
    """:class:`Lifts` of a system given as several runs (docs/mathematics.md §7): its value on a topic is the mean of
    its runs' (0 for a run without a ranking for the topic, the missing-topic rule), each run with the documents
    graded that its own top d holds, so one document has one grade in all of them; its unjudged documents are the
    union of its runs', each at its best rank among them; its judged documents those of its runs, averaged."""
    optimistic = parts[0].optimistic
    documents: dict[str, dict[str, int]] = {}
    for part in parts:
        for topic, held in part.documents.items():
            merged = documents.setdefault(topic, {})
            for docno, rank in held.items():
                merged[docno] = min(rank, merged.get(docno, rank))
    as_judged = [part.values({}) for part in parts]

    def mean(per_run: Sequence[Mapping[str, float]]) -> dict[str, float]:
        topics = dict.fromkeys(topic for values in per_run for topic in values)
        return {topic: float(np.mean([values.get(topic, 0.0) for values in per_run])) for topic in topics}

    def single(pairs: Sequence[tuple[str, str]]) -> list[float]:
        per_run = []
        for part, judged in zip(parts, as_judged):
            held = [pair for pair in pairs if pair[1] in part.documents.get(pair[0], {})]
            lifted = dict(zip(held, part.single_of(held)))
            per_run.append([lifted.get(pair, judged.get(pair[0], 0.0)) for pair in pairs])
        return np.mean(np.array(per_run, dtype=float).reshape(len(parts), len(pairs)), axis=0).tolist()

    def drawn(pairs: Sequence[tuple[str, str]], grades: np.ndarray) -> DrawnValues:
        per_run = [part.drawn(pairs, grades) for part in parts]
        topics = list(dict.fromkeys(topic for names, _ in per_run for topic in names))
        total = np.zeros((len(grades), len(topics)))
        column = {topic: j for j, topic in enumerate(topics)}
        for (names, values), judged in zip(per_run, as_judged):
            # a topic another run's draws reach but this run's ranking lacks: the run's score there as judged
            total += np.array([judged.get(topic, 0.0) for topic in topics])
            if names:
                at = [column[topic] for topic in names]
                total[:, at] += values - np.array([judged.get(topic, 0.0) for topic in names])
        return topics, total / len(parts)

    def judged_counts(grades: int) -> Mapping[str, np.ndarray]:
        return _mean_counts([part.judged_counts(grades) for part in parts])

    def rank(topic: str, docno: str) -> int | None:
        found = [at for at in (part.rank(topic, docno) for part in parts) if at is not None]
        return min(found) if found else None

    def ranks(pairs: Sequence[tuple[str, str]], within: int) -> np.ndarray:
        retrieved = np.stack([part.ranks(pairs, within) for part in parts]).reshape(len(parts), len(pairs))
        best = np.where(retrieved > 0, retrieved, np.iinfo(np.int64).max).min(axis=0, initial=np.iinfo(np.int64).max)
        return np.where(retrieved.max(axis=0, initial=0) > 0, best, 0)

    return Lifts(
        optimistic,
        documents,
        single,
        lambda lifted: mean([part.values(lifted) for part in parts]),
        lambda left_out: mean([part.values_without(left_out) for part in parts]),
        rank,
        drawn,
        judged_counts,
        ranks,
    )


def _mean_counts(per_run: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Per topic, the mean of the runs' judged-grade counts (a run without the topic counts none)."""
    topics = dict.fromkeys(topic for counts in per_run for topic in counts)
    return {topic: sum(counts.get(topic, 0) for counts in per_run) / len(per_run) for topic in topics}


class _Ranker:
    """A document's rank in the run ``read`` gives (read when first needed) by trec_eval's order (its score as a C
    float descending, ties by docno descending): ``ranker(topic, docno)``, ``None`` where the run does not retrieve it,
    each topic ranked once when first asked; :meth:`of` many documents' at once; :meth:`within` many unjudged
    documents' within a depth, from ``near`` (the ranks kept when the run was evaluated) when it reaches that deep."""

    def __init__(
        self,
        read: Callable[[], Run | RunColumns],
        near: Callable[[], Sequence[Mapping[str, Any]] | None] | None = None,
    ) -> None:
        self._read = read
        self._near = near
        self._loaded: list[tuple[Run | RunColumns, dict[str, tuple[int, int]]]] = []
        self._ranked: dict[str, dict[str, int]] = {}

    def within(self, pairs: Sequence[tuple[str, str]], depth: int) -> np.ndarray:
        """Each unjudged ``(topic, docno)``'s rank where it is within the first ``depth`` ranks, else 0: looked up in
        the near ranks when they reach ``depth`` (reading a run again for them cost 14 s at 6,980 topics), else
        ranked from the run (:meth:`of`)."""
        near = _NearRanks.of(self._near() if self._near is not None else None, depth, {docno for _, docno in pairs})
        ranks = self.of(pairs) if near is None else near.ranks(pairs)
        return np.where(ranks <= depth, ranks, 0)

    def _run(self) -> tuple[Run | RunColumns, dict[str, tuple[int, int]]]:
        if not self._loaded:
            run = self._read()
            self._loaded.append((run, run.topic_starts() if isinstance(run, RunColumns) else {}))
        return self._loaded[0]

    def _scores_of(self, topic: str) -> Mapping[str, float]:
        run, rows = self._run()
        if not isinstance(run, RunColumns):
            return run.scores.get(topic, {})
        if topic not in rows:
            return {}
        start, stop = rows[topic]
        return dict(zip(run.docno_strings(start, stop), run.scores[start:stop].tolist()))

    def __call__(self, topic: str, docno: str) -> int | None:
        if topic not in self._ranked:
            scores = self._scores_of(topic)
            order = sorted(((np.float32(score), name) for name, score in scores.items()), reverse=True)
            self._ranked[topic] = {name: position for position, (_, name) in enumerate(order, start=1)}
        return self._ranked[topic].get(docno)

    def of(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Each ``(topic, docno)``'s rank, 0 where the run does not retrieve it: for a run read as bytes, joined and
        ranked with arrays (ranking each topic in Python cost 4 s for two runs of 1,500 topics)."""
        run, _ = self._run()
        if isinstance(run, RunColumns) and isinstance(run.docnos, np.ndarray):
            index = {topic: j for j, topic in enumerate(run.topics)}
            topic = np.fromiter((index.get(qid, -1) for qid, _ in pairs), dtype=np.int64, count=len(pairs))
            ranked = np.flatnonzero(topic >= 0)
            found = columnar.rows_of_pairs(
                np.cumsum(run.lengths), run.docnos, topic[ranked], [pairs[k][1] for k in ranked.tolist()]
            )
            if found is not None:
                rows, which = found
                ranks = np.zeros(len(pairs), dtype=np.int64)
                ranks[ranked[which]] = columnar.trec_eval_ranks(run.lengths, run.scores, run.docnos, rows)
                return ranks
        return np.array([self(topic, docno) or 0 for topic, docno in pairs], dtype=np.int64)


class _NearRanks:
    """The unjudged documents of each topic's first ``depth`` ranks of a run with their ranks
    (:func:`~pytest_bvtest.scoring.columnar.near_ranks_payload`, one per chunk of topics), looked up by document."""

    def __init__(self, chunks: Sequence[Mapping[str, Any]], wanted: Collection[str]) -> None:
        # one dictionary of the (topic, docno) whose docno is wanted: a verdict asks for most topics' documents at once,
        # and a tenth of the near documents (a dictionary of all 700,000 of 6,980 topics took 0.3 s)
        self._ranks: dict[tuple[str, str], int] = {}
        for chunk in chunks:
            topics, text = chunk["topics"], chunk["unjudged_docno"]
            docnos = text.split("\n") if text else []
            topic = decoded_array(chunk["unjudged_topic"], "<i4", len(docnos)).astype(np.int64)
            ranks = decoded_array(chunk["unjudged_rank"], "<i4", len(docnos)).astype(np.int64)
            kept = np.flatnonzero(np.fromiter(map(wanted.__contains__, docnos), dtype=bool, count=len(docnos)))
            names = [str(name) for name in topics]
            found = zip(map(names.__getitem__, topic[kept].tolist()), map(docnos.__getitem__, kept.tolist()))
            self._ranks.update(zip(found, ranks[kept].tolist()))

    @classmethod
    def of(cls, chunks: Sequence[Mapping[str, Any]] | None, depth: int, wanted: Collection[str]) -> _NearRanks | None:
        """The near ranks of ``chunks`` of the documents named in ``wanted``, when they reach ``depth`` and hold what
        they should, else ``None``."""
        if not chunks:
            return None
        try:
            if min(int(chunk["depth"]) for chunk in chunks) < depth:
                return None
            return cls(chunks, wanted)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):  # binascii.Error is a ValueError
            return None

    def ranks(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Each ``(topic, docno)``'s rank, 0 where the near ranks do not hold it."""
        return np.fromiter(map(self._ranks.get, pairs, itertools.repeat(0)), dtype=np.int64, count=len(pairs))


class _UnjudgedInTop:
    """The unjudged documents of a run's first ``depth`` ranks, per depth (the measures of one depth share them):
    ``topic -> docno -> rank``, and each one's position among ``ranked``'s unjudged documents."""

    def __init__(self, ranked: columnar.RankedGains) -> None:
        self.ranked = ranked
        self._found: dict[int, tuple[dict[str, dict[str, int]], dict[tuple[str, str], int]]] = {}
        self._placed: dict[int, tuple[Sequence[tuple[str, str]], np.ndarray, np.ndarray]] = {}

    def placed(self, depth: int, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Each ``(topic, docno)``'s topic index among the run's topics (-1 where it ranks none) and position among
        its unjudged documents of the first ``depth`` ranks (-1 where it is not one): found once per depth for the
        same ``pairs``, which a verdict's blocks of gradings and its measures of one depth all grade."""
        held = self._placed.get(depth)
        if held is None or held[0] is not pairs:
            _, index = self.at(depth)
            row = {topic: j for j, topic in enumerate(self.ranked.topics)}
            topic = np.fromiter((row.get(name, -1) for name, _ in pairs), dtype=np.int64, count=len(pairs))
            unjudged = np.fromiter(map(index.get, pairs, itertools.repeat(-1)), dtype=np.int64, count=len(pairs))
            held = self._placed[depth] = (pairs, topic, unjudged)
        return held[1], held[2]

    def at(self, depth: int) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str], int]]:
        if depth not in self._found:
            ranked = self.ranked
            assert ranked.unjudged_topic is not None and ranked.unjudged_rank is not None
            rows = np.flatnonzero(ranked.unjudged_rank <= depth)
            topic = ranked.unjudged_topic[rows]
            docnos = [ranked.unjudged_docno[row] for row in rows.tolist()]
            ranks = ranked.unjudged_rank[rows].tolist()
            names = [ranked.topics[j] for j in topic.tolist()]
            # the unjudged documents are in topic order: one dictionary per stretch of a topic (a loop over the
            # 68,000 documents of 6,980 topics cost 0.1 s)
            bounds = [0, *(np.flatnonzero(np.diff(topic)) + 1).tolist(), len(rows)]
            documents = {
                names[start]: dict(zip(docnos[start:stop], ranks[start:stop]))
                for start, stop in zip(bounds[:-1], bounds[1:])
                if stop > start
            }
            self._found[depth] = documents, dict(zip(zip(names, docnos), rows.tolist()))
        return self._found[depth]


def _columnar_lifts(
    ranked: columnar.RankedGains,
    measure: OptimisticMeasure,
    rank: _Ranker,
    found: _UnjudgedInTop,
) -> Lifts:
    documents, index = found.at(measure.depth)

    def single(pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        rows = np.fromiter((index[pair] for pair in pairs), dtype=np.int64, count=len(pairs))
        return columnar.single_lifts(ranked, measure, rows).tolist()

    def rows(named: Lifted) -> list[int]:
        return [index[topic, docno] for topic, docnos in named.items() for docno in docnos if (topic, docno) in index]

    def values(lifted: Lifted) -> dict[str, float]:
        chosen = np.zeros(len(ranked.unjudged_docno), dtype=bool)
        chosen[rows(lifted)] = True
        return columnar.with_unjudged_graded(ranked, measure, chosen)

    def values_without(left_out: Lifted) -> dict[str, float]:
        assert ranked.unjudged_rank is not None
        chosen = ranked.unjudged_rank <= measure.depth
        chosen[rows(left_out)] = False
        return columnar.with_unjudged_graded(ranked, measure, chosen)

    def drawn(pairs: Sequence[tuple[str, str]], grades: np.ndarray) -> DrawnValues:
        if scored_drawn.computes(measure.measure):
            topic, unjudged = found.placed(measure.depth, pairs)
            kept = np.flatnonzero(topic >= 0)
            topics, values = scored_drawn.drawn_values(
                ranked, measure.measure, topic[kept], unjudged[kept], np.asarray(grades)[:, kept]
            )
            return [ranked.topics[j] for j in topics.tolist()], values
        patterns = _distinct_gradings(ranked.topics, pairs, grades, index)
        copy_topic, graded, graded_copy, graded_gain, extra_copy, extra_grades = [], [], [], [], [], []
        for topic, members, own, distinct, _ in patterns:
            copies = len(copy_topic) + np.arange(len(distinct))
            copy_topic += [topic] * len(distinct)
            held = own >= 0
            graded.append(np.tile(own[held], len(distinct)))
            graded_copy.append(np.repeat(copies, int(held.sum())))
            graded_gain.append(distinct[:, held].reshape(-1))
            extra_copy.append(np.repeat(copies, len(members)))
            extra_grades.append(distinct.reshape(-1))
        if not copy_topic:
            return [], np.zeros((len(grades), 0))
        values = columnar.graded_copies(
            ranked,
            measure,
            np.array(copy_topic, dtype=np.int64),
            np.concatenate(graded),
            np.concatenate(graded_copy),
            np.concatenate(graded_gain),
            (np.concatenate(extra_copy), np.concatenate(extra_grades)),
        )
        return _per_draw(ranked.topics, patterns, values)

    def judged_counts(grades: int) -> Mapping[str, np.ndarray]:
        return dict(zip(ranked.topics, columnar.judged_grade_counts(ranked, measure.depth, grades)))

    return Lifts(measure, documents, single, values, values_without, rank, drawn, judged_counts, rank.within)


#: Per topic whose documents a run's top d holds: its index among the run's topics, the columns of the topic's
#: documents among the pairs, each one's position among the run's unjudged documents (-1 where its top d does not
#: hold it), the draws' distinct gradings of them ``(gradings, documents)`` and each draw's grading among them.
Gradings = list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def _distinct_gradings(
    topics: Sequence[str], pairs: Sequence[tuple[str, str]], grades: np.ndarray, held: Mapping[tuple[str, str], int]
) -> Gradings:
    """The draws' distinct gradings of the unjudged documents of each topic of ``pairs`` that the run ranks
    (``grades[:, k]`` pair ``k``'s grade in each draw; ``held`` a pair's position among the run's unjudged documents of
    its top d). Every pair of such a topic counts, also those this run's top d does not hold: judged, they would be in
    the qrels, and CI would score the run against them (nDCG's ideal, AP's relevant count). Most draws grade a
    topic's few unjudged documents alike, and each grading is scored once."""
    row = {topic: j for j, topic in enumerate(topics)}
    by_topic: dict[int, list[int]] = {}
    for k, (topic, _) in enumerate(pairs):
        if topic in row:
            by_topic.setdefault(row[topic], []).append(k)
    found: Gradings = []
    listed = [np.array(members, dtype=np.int64) for members in by_topic.values()]
    encoded = _encoded_gradings(grades, listed)
    for position, (topic, members) in enumerate(zip(by_topic, listed)):
        own = np.array([held.get(pairs[k], -1) for k in members.tolist()], dtype=np.int64)
        if encoded is None:
            distinct, inverse = np.unique(grades[:, members], axis=0, return_inverse=True)
        else:
            distinct, inverse = encoded(position)
        found.append((topic, members, own, distinct, inverse.reshape(-1)))
    return found


def _encoded_gradings(
    grades: np.ndarray, listed: Sequence[np.ndarray]
) -> Callable[[int], tuple[np.ndarray, np.ndarray]] | None:
    """Every topic's distinct gradings found in one sort, as ``numpy.unique(grades[:, members], axis=0,
    return_inverse=True)`` finds them per topic (a sort per topic cost 1.2 s at 7,000 topics): each draw's grades of a
    topic's documents read as the digits of one integer (base: the top grade + 1, so that the integers sort as the
    rows do), each topic's integers offset past the previous topic's. ``None`` when those integers do not fit in 62
    bits (then each topic is sorted alone). The function returns topic ``position``'s distinct gradings (in the rows'
    order) and each draw's among them."""
    if not listed or grades.size == 0 or int(grades.min()) < 0:
        return None
    base = int(grades.max()) + 1
    spans = [base ** len(members) for members in listed]
    if sum(spans) >= 2**62:
        return None
    offsets = np.cumsum([0, *spans[:-1]], dtype=np.int64)
    sizes = np.array([len(members) for members in listed], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    # each document's place value within its topic: base ** (documents after it in the topic)
    after = np.repeat(starts + sizes, sizes) - np.arange(int(sizes.sum())) - 1
    values = grades[:, np.concatenate(listed)].astype(np.int64) * base**after
    codes = np.add.reduceat(values, starts, axis=1) + offsets
    distinct, inverse = np.unique(codes.T.reshape(-1), return_inverse=True)
    bounds = np.searchsorted(distinct, np.append(offsets, offsets[-1] + spans[-1]))
    draws = grades.shape[0]

    def of(position: int) -> tuple[np.ndarray, np.ndarray]:
        low, high = int(bounds[position]), int(bounds[position + 1])
        places = base ** np.arange(len(listed[position]) - 1, -1, -1, dtype=np.int64)
        own = distinct[low:high] - offsets[position]
        rows = (own[:, np.newaxis] // places) % base
        return rows.astype(grades.dtype), inverse[position * draws : (position + 1) * draws] - low

    return of


def _per_draw(topics: Sequence[str], patterns: Gradings, values: np.ndarray) -> DrawnValues:
    """Each draw's value per topic, from the values of the topics' distinct gradings (in :func:`_distinct_gradings`'
    order, one after another)."""
    starts = np.cumsum([0, *(len(distinct) for _, _, _, distinct, _ in patterns)])
    columns = [values[start + inverse] for start, (_, _, _, _, inverse) in zip(starts, patterns)]
    return [topics[topic] for topic, _, _, _, _ in patterns], np.stack(columns, axis=1)


def _width(rows: np.ndarray, width: int) -> np.ndarray:
    """``rows`` cut or padded with 0 to ``width`` columns."""
    rows = rows[:, :width]
    return np.pad(rows, ((0, 0), (0, width - rows.shape[1]))) if rows.shape[1] < width else rows


def _gdeval_lifts(
    judgments: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Mapping[str, float]],
    topics: Sequence[str],
    measure: OptimisticMeasure,
    rank: _Ranker,
) -> Lifts:
    cutoff = measure.measure.cutoff
    marked = gdeval.ranked_grade_matrix(judgments, rankings, topics, cutoff, unjudged=np.nan)
    ideal = gdeval.ideal_grade_matrix(judgments, topics, cutoff)
    ranked = [gdeval.ranked_docnos(rankings[qid], cutoff) for qid in topics]
    documents: dict[str, dict[str, int]] = {}
    for qid, docnos, row in zip(topics, ranked, marked):
        for position in np.flatnonzero(np.isnan(row[: measure.depth])).tolist():
            documents.setdefault(qid, {})[docnos[position]] = position + 1

    def scored(grades: np.ndarray, ideal_grades: np.ndarray) -> np.ndarray:
        if measure.measure.name == "ERR":
            return np.minimum(gdeval.expected_reciprocal_rank(grades), 1.0)
        return np.minimum(gdeval.exponential_ndcg(grades, ideal_grades), 1.0)

    def values(lifted: Lifted) -> dict[str, float]:
        grades = np.nan_to_num(marked, nan=0.0)
        for j, qid in enumerate(topics):
            for docno, position in documents.get(qid, {}).items():
                if docno in lifted.get(qid, ()):
                    grades[j, position - 1] = measure.grade
        return dict(zip(topics, scored(grades, ideal).tolist()))

    pairs = [(j, qid, docno, at) for j, qid in enumerate(topics) for docno, at in documents.get(qid, {}).items()]
    rows = np.array([j for j, _, _, _ in pairs], dtype=np.int64)
    grades = np.nan_to_num(marked[rows], nan=0.0)
    grades[np.arange(len(pairs)), [at - 1 for _, _, _, at in pairs]] = measure.grade
    single = dict(zip(((qid, docno) for _, qid, docno, _ in pairs), scored(grades, ideal[rows]).tolist()))

    def values_without(left_out: Lifted) -> dict[str, float]:
        return values({topic: docnos.keys() - set(left_out.get(topic, ())) for topic, docnos in documents.items()})

    position = {
        (qid, docno): (j, at - 1) for j, qid in enumerate(topics) for docno, at in documents.get(qid, {}).items()
    }

    def drawn(pairs: Sequence[tuple[str, str]], grades: np.ndarray) -> DrawnValues:
        order = {pair: k for k, pair in enumerate(position)}
        patterns = _distinct_gradings(topics, pairs, grades, order)
        if not patterns:
            return [], np.zeros((len(grades), 0))
        cells = list(position.values())
        copies, ideals = [], []
        for topic, _, own, distinct, _ in patterns:
            held = own >= 0
            copy = np.nan_to_num(np.repeat(marked[topic][np.newaxis], len(distinct), axis=0), nan=0.0)
            copy[:, [cells[at][1] for at in own[held]]] = distinct[:, held]
            copies.append(copy)
            # judged, the drawn grades join the topic's ideal ranking, as gdeval.pl would read them from the qrels
            positive = [grade for grade in judgments[topics[topic]].values() if grade > 0]
            ideals.append(
                np.stack([np.sort(np.concatenate([positive, grading[grading > 0]]))[::-1] for grading in distinct])
            )
        width = cutoff if cutoff is not None else max(ideal.shape[1] for ideal in ideals)
        ideal_rows = np.concatenate([_width(ideal, width) for ideal in ideals])
        return _per_draw(topics, patterns, scored(np.concatenate(copies), ideal_rows))

    def judged_counts(grades: int) -> Mapping[str, np.ndarray]:
        counts = {}
        for j, (qid, docnos) in enumerate(zip(topics, ranked)):
            shown = marked[j, : min(measure.depth, len(docnos))]
            judged = np.clip(shown[~np.isnan(shown)].astype(np.int64), 0, grades - 1)
            counts[qid] = np.bincount(judged, minlength=grades)
        return counts

    return Lifts(
        measure,
        documents,
        lambda asked: [single[pair] for pair in asked],
        values,
        values_without,
        rank,
        drawn,
        judged_counts,
        rank.within,
    )
