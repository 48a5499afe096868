"""The per-topic score matrix: systems × topics for one measure, the only thing statistics see.

Systems come from run files (evaluated against qrels, through the cache), from in-memory
:class:`~pytest_bvtest.io.runs.Run` objects, or from per-topic score tables. The topic universe
follows docs/mathematics.md §1: the qrels topics with at least one positive judgment, in qrels order; a
topic of the universe missing from a run scores 0 (trec_eval ``-c``) and the cell is flagged; run
topics absent from the qrels are ignored and reported. Tables must cover the universe exactly.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pytest_bvtest.errors import InputError, excerpt, short_list
from pytest_bvtest.io.qrels import Qrels, read_qrels_files
from pytest_bvtest.io.runbytes import NotInChunks
from pytest_bvtest.io.runs import (
    CHUNK_LINES,
    Run,
    RunColumns,
    read_run_column_chunks,
    read_run_columns,
    same_rankings,
)
from pytest_bvtest.io.tables import ScoreTable, TopicScores, read_score_table
from pytest_bvtest.scoring import columnar
from pytest_bvtest.scoring.cache import CachedScores, ScoreCache
from pytest_bvtest.scoring.columnar import RankedGains, documents_payload, near_ranks_payload, within_depth
from pytest_bvtest.scoring.measures import check_relevance_levels, evaluate_run_documents
from pytest_bvtest.scoring.progress import EvaluationProgress
from pytest_bvtest.spec.measures import Measure, OptimisticMeasure, TableMeasure
from pytest_bvtest.spec.model import RepeatedRuns, RunFile, ScoreTableFile, SingleSource, Source

if TYPE_CHECKING:
    from pytest_bvtest.stats.simulation import RetrievedList


@dataclass(frozen=True)
class ScoreMatrix:
    """Per-topic effectiveness ``scores[i, j]`` of system ``systems[i]`` on topic ``topics[j]``.

    ``imputed[i, j]`` is true where the value came from the missing-topic rule (the run had no
    ranking for the topic and scores 0). ``ignored_topics[name]`` lists the run's topics that are not
    in the qrels universe. ``runs[name]`` holds the per-topic scores ``(k, n)`` of each of the ``k`` runs of a
    system given as several (docs/mathematics.md §7, run-to-run noise), in the order given; its row in
    ``scores`` is their mean, and a topic one of them missed is imputed.
    """

    measure: str
    systems: tuple[str, ...]
    topics: tuple[str, ...]
    scores: np.ndarray
    imputed: np.ndarray
    ignored_topics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    runs: Mapping[str, np.ndarray] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        shape = (len(self.systems), len(self.topics))
        if self.scores.shape != shape or self.imputed.shape != shape:
            raise ValueError(f"matrix shape {self.scores.shape} does not match {shape}")

    def index(self, system: str) -> int:
        try:
            return self.systems.index(system)
        except ValueError:
            raise InputError(
                f"unknown system {excerpt(system)}", hint=f"systems are: {', '.join(self.systems)}"
            ) from None

    def row(self, system: str) -> np.ndarray:
        return self.scores[self.index(system)]

    def restricted(self, columns: Sequence[int]) -> ScoreMatrix:
        """The same systems on the topics at ``columns`` only (a segment's), in that order."""
        kept = np.asarray(columns, dtype=np.intp)
        return ScoreMatrix(
            self.measure,
            self.systems,
            tuple(self.topics[j] for j in kept),
            self.scores[:, kept],
            self.imputed[:, kept],
            self.ignored_topics,
            {name: runs[:, kept] for name, runs in self.runs.items()},
        )

    def with_rows(self, rows: Mapping[str, np.ndarray]) -> ScoreMatrix:
        """The same matrix with the systems of ``rows`` scored anew (a corner's or a plausible grading's world,
        docs/mathematics.md §10). A system given as several runs keeps its runs' spread around its new mean: each run
        moves as its mean moved (a document graded relevant lifts every run that retrieves it alike)."""
        scores = self.scores.copy()
        runs = dict(self.runs)
        for system, values in rows.items():
            row = self.index(system)
            if system in runs:
                runs[system] = runs[system] + (np.asarray(values) - scores[row])
            scores[row] = values
        return replace(self, scores=scores, runs=runs)

    def run_scores(self, system: str) -> np.ndarray:
        """The per-topic scores ``(k, n)`` of each run of ``system``: its ``k`` repeated runs, or its one row."""
        repeated = self.runs.get(system)
        return repeated if repeated is not None else self.row(system)[np.newaxis]

    def missing_topics(self, system: str) -> tuple[str, ...]:
        """Topics of the universe the system's run did not rank (scored 0)."""
        return tuple(self.topics[j] for j in np.flatnonzero(self.imputed[self.index(system)]))


def _per_topic_from_run(
    run: Run | RunColumns, qrels: Qrels, measures: Sequence[Measure]
) -> dict[Measure, CachedScores]:
    return _evaluated(run, qrels, measures)[0]


def _evaluated(
    run: Run | RunColumns, qrels: Qrels, measures: Sequence[Measure], documents_depth: int = 0, near_depth: int = 0
) -> tuple[dict[Measure, CachedScores], list[dict[str, object]]]:
    """A run's scores, and its ranked documents as deep as ``documents_depth`` with the ranks of its unjudged ones
    as deep as ``near_depth`` (:func:`_documents`)."""
    run_topics = list(run.topics if isinstance(run, RunColumns) else run.scores)
    _require_shared_topic(run.name, run.path, run_topics, qrels)
    values, ranked = evaluate_run_documents(qrels, run, measures, max(documents_depth, near_depth))
    return _cached(run.name, run_topics, values, qrels), _documents(ranked, documents_depth, near_depth)


def _documents(ranked: RankedGains | None, depth: int, near_depth: int = 0) -> list[dict[str, object]]:
    """The ranked documents a run's corners read, as a cache entry's chunk (none when ``depth`` is 0), with the ranks
    of its unjudged documents as deep as ``near_depth`` (what the rank support reads) under ``near``, found in the
    same pass (:meth:`MatrixBuilder._store` keeps those apart)."""
    if not depth or ranked is None:
        return []
    near = {_NEAR: near_ranks_payload(within_depth(ranked, near_depth))} if near_depth else {}
    return [{**documents_payload(within_depth(ranked, depth)), **near}]


#: The key of a ranked-documents chunk that holds its near ranks until they are stored apart.
_NEAR = "near"


def _require_shared_topic(name: str, path: Path | None, run_topics: Sequence[str], qrels: Qrels) -> None:
    """Refuse a run whose topic ids are the qrels' written another way, or that shares no topic with the qrels."""
    universe = set(qrels.evaluated_topics())
    ignored = [topic for topic in run_topics if topic not in universe]
    _refuse_topics_in_another_form(ignored, qrels.judgments, run_topics, path if path is not None else name, "run")
    if not universe.intersection(run_topics):
        raise InputError(
            f"run {excerpt(name)} shares no topic with the qrels",
            path=path if path is not None else name,
            hint=f"the run ranks {short_list(run_topics)}; the qrels judge {short_list(qrels.evaluated_topics())}",
        )


def _cached(
    name: str, run_topics: Sequence[str], values: Mapping[Measure, Mapping[str, float]], qrels: Qrels
) -> dict[Measure, CachedScores]:
    universe = set(qrels.evaluated_topics())
    ignored = tuple(topic for topic in run_topics if topic not in universe)
    return {measure: CachedScores(name, per_topic, ignored) for measure, per_topic in values.items()}


def _per_topic_from_run_file(
    source: RunFile,
    qrels: Qrels,
    measures: Sequence[Measure],
    digest: bool,
    documents_depth: int = 0,
    near_depth: int = 0,
) -> tuple[dict[Measure, CachedScores], str | None, list[dict[str, object]]]:
    """Read and evaluate one run file (in a worker process when evaluating in parallel); with ``digest``, also the
    SHA-256 of the bytes read, the key its scores are cached under (a file replaced since it was looked up in
    the cache is cached as what was read); with ``documents_depth``, also its ranked documents for the corners
    (:func:`~pytest_bvtest.scoring.columnar.documents_payload`, one per chunk), found in the same pass.

    A regular run grouped by topic (as every tool writes them) is read and evaluated a chunk of topics at a
    time, so memory is bounded by the chunk, not the file; any other run is read whole (with the same values).
    """
    try:
        return _per_topic_from_run_chunks(
            source, qrels, measures, digest, documents_depth=documents_depth, near_depth=near_depth
        )
    except NotInChunks:
        run = read_run_columns(source.path, tag=source.tag, digest=digest)
        scores, documents = _evaluated(run, qrels, measures, documents_depth, near_depth)
        return scores, run.sha256, documents


def _per_topic_from_run_chunks(
    source: RunFile,
    qrels: Qrels,
    measures: Sequence[Measure],
    digest: bool = False,
    lines: int = CHUNK_LINES,
    documents_depth: int = 0,
    near_depth: int = 0,
) -> tuple[dict[Measure, CachedScores], str | None, list[dict[str, object]]]:
    """Evaluate a run file a chunk of whole topics at a time (:func:`~pytest_bvtest.io.runs.read_run_column_chunks`),
    with the SHA-256 of the bytes read when ``digest`` and each chunk's ranked documents to ``documents_depth``.

    Raises :class:`~pytest_bvtest.io.runbytes.NotInChunks` when the file must be read whole.
    """
    universe = set(qrels.evaluated_topics())
    run_topics: list[str] = []
    gathered: dict[Measure, dict[str, float]] = {measure: {} for measure in measures}
    documents: list[dict[str, object]] = []
    name = str(source.path)
    hasher = hashlib.sha256() if digest else None
    for chunk in read_run_column_chunks(source.path, tag=source.tag, lines=lines, hasher=hasher):
        name = chunk.name
        run_topics.extend(chunk.topics)
        if universe.intersection(chunk.topics):
            values, ranked = evaluate_run_documents(qrels, chunk, measures, max(documents_depth, near_depth))
            for measure, per_topic in values.items():
                gathered[measure].update(per_topic)
            documents += _documents(ranked, documents_depth, near_depth)
    _require_shared_topic(name, source.path, run_topics, qrels)
    # in the qrels' topic order, as evaluate_run gives them
    order = [topic for topic in qrels.evaluated_topics() if topic in gathered[measures[0]]] if measures else []
    values = {measure: {topic: per_topic[topic] for topic in order} for measure, per_topic in gathered.items()}
    return _cached(name, run_topics, values, qrels), None if hasher is None else hasher.hexdigest(), documents


#: How often a worker process looks whether its parent is still there.
_PARENT_POLL_SECONDS = 0.5


def _exit_with_parent() -> None:
    """Run in each worker process as it starts: the worker exits when its parent does.

    A parent killed with SIGKILL (a CI job cancelled, ``kill -9``) cannot shut its pool down, and its idle
    workers would wait on the pool's queue for good, each holding its memory: a thread watches for the
    parent to change (the worker reparented to init or a subreaper) and ends the process.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="bvtest-exit-with-parent", daemon=True).start()


@dataclass(frozen=True)
class _EvaluatedSystem:
    name: str
    per_topic: Mapping[str, float]
    ignored_topics: tuple[str, ...]
    origin: str
    from_table: bool
    #: The system's other runs when it is given as several (:class:`~pytest_bvtest.spec.model.RepeatedRuns`).
    repeats: tuple[_EvaluatedSystem, ...] = ()


class MatrixBuilder:
    """Evaluates sources once for all measures and assembles one :class:`ScoreMatrix` per measure.

    With ``jobs > 1``, run files that miss the cache are read and evaluated in up to ``jobs`` processes
    at once (each holds one parsed run in memory); the main process writes their cache entries, which
    are atomic, so several builders can share a cache folder.
    """

    def __init__(
        self, qrels: Qrels | None, cache: ScoreCache | None = None, *, qrels_digest: str | None = None, jobs: int = 1
    ) -> None:
        """``qrels_digest`` identifies in-memory qrels for the cache; qrels read from a file are identified by the
        digest of the bytes read (hashing the path afterwards would file their scores under a file that may have
        been replaced meanwhile)."""
        self.qrels = qrels
        self.cache = cache or ScoreCache(None)
        if qrels_digest is None and qrels is not None:
            # judgments held in memory (a DataFrame, ir_datasets) carry the digest of what they judge
            qrels_digest = qrels.sha256 or (self.cache.file_digest(qrels.path) if qrels.path is not None else None)
        self._qrels_digest = qrels_digest
        self._tables: dict[tuple[Path, str], ScoreTable] = {}
        self.jobs = jobs
        self._evaluated_run_files: dict[RunFile, dict[Measure, CachedScores]] = {}
        self.progress: EvaluationProgress | None = None
        #: How deep the runs' unjudged documents are kept for the corners (0: no measure has corners), and the
        #: ranked documents of the run files read in this evaluation (:meth:`run_documents`)
        self._documents_depth = 0
        self._documents: dict[RunFile, list[dict[str, object]]] = {}
        #: the run files whose near ranks are kept (:meth:`run_near_ranks`: the candidate's and the gates'
        #: references', whose documents the plausible gradings draw), how many times the corners' depth they reach
        #: (the rank support's ``FAR_RANKS``: the pipeline sets both), and those of the ones read in this evaluation
        self.near_sources: Collection[RunFile] = frozenset()
        self.near_depth_factor = 0
        self._near: dict[RunFile, list[dict[str, object]]] = {}

    @classmethod
    def from_qrels_file(
        cls,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
        cache: ScoreCache | None = None,
        *,
        jobs: int = 1,
    ) -> MatrixBuilder:
        """A builder for the judgments of ``path``: one qrels file, or several read as one (``read_qrels_files``)."""
        if path is None:
            return cls(None, cache, jobs=jobs)
        paths = [path] if isinstance(path, str | os.PathLike) else list(path)
        return cls(read_qrels_files(paths), cache, jobs=jobs)

    def _require_qrels(self, what: str) -> Qrels:
        if self.qrels is None:
            raise InputError(f"{what} needs relevance judgments", hint="name a qrels file (spec key `qrels`)")
        return self.qrels

    @property
    def _caching(self) -> bool:
        return self.cache.enabled and self._qrels_digest is not None

    def _cached_run_file_scores(self, source: RunFile, measures: Sequence[Measure]) -> dict[Measure, CachedScores]:
        """The cache entries of a run file's measures, found under the file's digest."""
        found: dict[Measure, CachedScores] = {}
        run_digest = self.cache.known_digest(source.path) if self._caching else None
        if run_digest is None and self._caching:
            self.cache.misses += len(measures)  # a file the cache never saw, hashed as it is read: no entry to look up
        elif run_digest is not None:
            for measure in measures:
                entry = self.cache.get(ScoreCache.key(run_digest, self._qrels_digest, str(measure), source.tag))
                if entry is not None:
                    found[measure] = entry
        return found

    def _before_reading(self, source: RunFile) -> tuple[list[int] | None, int]:
        """The run file's stat fields and the time, before it is read (and hashed as it is read)."""
        return self.cache.stat_fields(source.path), time.time_ns()

    def _after_reading(
        self, source: RunFile, before: tuple[list[int] | None, int] | None, read_digest: str | None
    ) -> None:
        """Remember the digest of the bytes read as the file's when it did not change while read, so that neither
        this check (the report's inputs, the plausible verdicts' key) nor the next hashes it again."""
        if before is not None and before[0] is not None and read_digest is not None:
            self.cache.remember_digest(source.path, before[0], before[1], read_digest)

    def _store(
        self,
        source: RunFile,
        fresh: Mapping[Measure, CachedScores],
        read_digest: str | None,
        documents: list[dict[str, object]],
    ) -> None:
        """Cache a run file's fresh scores (and its ranked documents) under the digest of the bytes they were
        computed from; keep the documents for :meth:`run_documents` and their near ranks, apart, for
        :meth:`run_near_ranks`."""
        near = [chunk.pop(_NEAR) for chunk in documents if _NEAR in chunk]
        if documents:
            self._documents[source] = documents
        if near:
            self._near[source] = near  # type: ignore[assignment]
        if read_digest is None:
            return
        for measure, entry in fresh.items():
            self.cache.put(ScoreCache.key(read_digest, self._qrels_digest, str(measure), source.tag), entry)
        if documents:
            self.cache.put_documents(self._documents_key(read_digest, source), documents)
        if near:
            self.cache.put_entry(self._near_key(read_digest, source), {"chunks": near})

    def _documents_key(self, run_digest: str, source: RunFile) -> str:
        assert self._qrels_digest is not None
        # "ties": documents tied across the depth in trec_eval's docno order (a payload from before listed them by
        # file order, and is not read)
        what = f"ranked documents, ties@{self._documents_depth}"
        return ScoreCache.key(run_digest, self._qrels_digest, what, source.tag)

    def _near_depth(self, source: RunFile) -> int:
        """How deep a run file's unjudged documents' ranks are kept: as deep as the rank support reads them
        (:attr:`near_depth_factor` times d) for :attr:`near_sources`, else not at all."""
        return self.near_depth_factor * self._documents_depth if source in self.near_sources else 0

    def _near_key(self, run_digest: str, source: RunFile) -> str:
        assert self._qrels_digest is not None
        # "encoded": docnos as lines of text, topics and ranks as int32 bytes (a payload of JSON lists is not read)
        what = f"near ranks encoded, ties@{self.near_depth_factor * self._documents_depth}"
        return ScoreCache.key(run_digest, self._qrels_digest, what, source.tag)

    def run_near_ranks(self, source: RunFile) -> list[dict[str, object]] | None:
        """The ranks of a run file's unjudged documents as deep as the rank support of the plausible gradings reads
        them (:func:`~pytest_bvtest.scoring.columnar.near_ranks_payload`, one per chunk of topics), found when it was
        evaluated: kept from this evaluation's reading, else the cache's, else (for :attr:`near_sources`) read now
        with the run's documents and cached, so that the next check reads them (a cache of an older layout holds
        none); ``None`` for another run (it is then read for the ranks asked) or when no measure has corners."""
        if source in self._near:
            return self._near[source]
        if not self._documents_depth or not self.near_depth_factor or not self._caching:
            return None
        entry = self.cache.get_entry(self._near_key(self.cache.file_digest(source.path), source))
        chunks = None if entry is None else entry.get("chunks")
        if isinstance(chunks, list):
            return chunks
        if source not in self.near_sources:
            return None
        self._read_documents(source)
        return self._near.get(source)

    def run_documents(self, source: RunFile) -> list[dict[str, object]] | None:
        """The ranked documents of a run file of the last :meth:`build`, with its unjudged ones as deep as its
        measures with corners look (:func:`~pytest_bvtest.scoring.columnar.documents_payload`, one per chunk of
        topics): kept from this evaluation's reading, else the cache's, else read now (and cached); ``None`` when
        no measure has corners."""
        if source in self._documents:
            return self._documents[source]
        if not self._documents_depth:
            return None
        if self._caching:
            entry = self.cache.get_documents(self._documents_key(self.cache.file_digest(source.path), source))
            if entry is not None:
                return entry["chunks"]
        return self._read_documents(source)

    def _read_documents(self, source: RunFile) -> list[dict[str, object]]:
        """Read a run file for its ranked documents (and its near ranks, for :attr:`near_sources`), keep and cache
        them; its scores are not computed."""
        qrels = self._require_qrels(f"run file {source.path}")
        _, read_digest, documents = _per_topic_from_run_file(
            source, qrels, [], self._caching, self._documents_depth, self._near_depth(source)
        )
        self._store(source, {}, read_digest, documents)
        return documents

    def _run_file_scores(self, source: RunFile, measures: Sequence[Measure]) -> dict[Measure, CachedScores]:
        if source in self._evaluated_run_files:
            return self._evaluated_run_files.pop(source)
        qrels = self._require_qrels(f"run file {source.path}")
        found = self._cached_run_file_scores(source, measures)
        missing = [measure for measure in measures if measure not in found]
        if missing:
            # a file hashed (or its digest trusted) to look it up just now: read unchanged, the bytes read are those,
            # and hashing them again while reading cost 0.16 s for a 321 MB run; changed while read, it is not cached.
            # A file the cache never saw was not hashed: it is hashed as it is read, and that digest remembered
            hashed = self._caching and self.cache.hashed_digest(source.path) is not None
            before = self._before_reading(source) if self._caching and not hashed else None
            fresh, read_digest, documents = _per_topic_from_run_file(
                source, qrels, missing, self._caching and not hashed, self._documents_depth, self._near_depth(source)
            )
            if hashed:
                read_digest = self.cache.hashed_digest(source.path)
            self._after_reading(source, before, read_digest)
            self._store(source, fresh, read_digest, documents)
            found.update(fresh)
        return found

    def _evaluate_run_files_in_parallel(self, sources: Sequence[Source], measures: Sequence[Measure]) -> None:
        """Evaluate the run files that miss the cache in ``jobs`` processes; keep their scores for :meth:`build`."""
        pending = []
        for source in dict.fromkeys(run for given in sources for run in _runs_of(given) if isinstance(run, RunFile)):
            found = self._cached_run_file_scores(source, measures)
            missing = [measure for measure in measures if measure not in found]
            if missing:
                pending.append((source, found, missing))
            else:  # every score cached: kept, so that build does not read the entries again
                self._evaluated_run_files[source] = found
        if len(pending) < 2:
            return
        qrels = self._require_qrels(f"run file {pending[0][0].path}")
        before = {source: self._before_reading(source) for source, _, _ in pending}
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(pending)), initializer=_exit_with_parent) as pool:
            futures = [
                pool.submit(
                    _per_topic_from_run_file,
                    source,
                    qrels,
                    missing,
                    self._caching,
                    self._documents_depth,
                    self._near_depth(source),
                )
                for source, _, missing in pending
            ]
            for (source, found, _), future in zip(pending, futures):
                fresh, read_digest, documents = future.result()
                self._after_reading(source, before[source], read_digest)
                self._store(source, fresh, read_digest, documents)
                self._evaluated_run_files[source] = {**found, **fresh}

    def _evaluate(self, source: SingleSource, measures: Sequence[Measure]) -> dict[Measure, list[_EvaluatedSystem]]:
        labels = [str(measure) for measure in measures if isinstance(measure, TableMeasure)]
        if labels and not isinstance(source, ScoreTableFile):
            where = source.path if isinstance(source, RunFile) else source.name
            raise InputError(
                f"the measure {labels[0]} can only come from per-topic tables; a run cannot be scored with it",
                path=where,
                hint="give this system as a table too, or use a measure the project computes",
            )
        if isinstance(source, RunFile):
            return {
                measure: [
                    _EvaluatedSystem(
                        source.name or entry.run_name, entry.per_topic, entry.ignored_topics, str(source.path), False
                    )
                ]
                for measure, entry in self._run_file_scores(source, measures).items()
            }
        if isinstance(source, Run):
            qrels = self._require_qrels(f"run {excerpt(source.name)}")
            return {
                measure: [_EvaluatedSystem(entry.run_name, entry.per_topic, entry.ignored_topics, source.name, False)]
                for measure, entry in _per_topic_from_run(source, qrels, measures).items()
            }
        table_key = (source.path, source.format)
        if table_key not in self._tables:
            self._tables[table_key] = read_score_table(source.path, format=source.format)
        table = self._tables[table_key]
        if len(measures) > 1 and table.measures() == [None]:
            raise InputError(
                f"the table names no measure, yet the spec asks for {len(measures)} "
                f"({', '.join(map(str, measures))}): its values would be reported as each of them",
                path=source.path,
                hint="give the spec the one measure the table holds, or a table with a measure column "
                "(system,topic,measure,value) for each",
            )
        evaluated: dict[Measure, list[_EvaluatedSystem]] = {}
        for measure in measures:
            by_system = table.for_measure(measure)
            names = source.systems if source.systems is not None else tuple(by_system)
            unknown = [name for name in names if name not in by_system]
            if unknown:
                raise InputError(
                    f"system {excerpt(unknown[0])} is not in this table",
                    path=source.path,
                    hint=f"the table has {short_list(list(by_system))}",
                )
            evaluated[measure] = [
                _EvaluatedSystem(source.rename.get(name, name), by_system[name], (), str(source.path), True)
                for name in names
            ]
        return evaluated

    def build(self, measures: Sequence[Measure], sources: Sequence[Source]) -> dict[Measure, ScoreMatrix]:
        """One matrix per measure over the same systems, in the order the sources give them; a system given as
        several runs is one row, the mean of its runs (each run evaluated and cached on its own)."""
        if self.qrels is not None and any(isinstance(run, RunFile | Run) for s in sources for run in _runs_of(s)):
            check_relevance_levels(self.qrels, measures)
        cornered = [m for m in measures if isinstance(m, OptimisticMeasure) and columnar.computes(m)]
        self._documents_depth = max((measure.depth for measure in cornered), default=0)
        if self.jobs > 1:
            self._evaluate_run_files_in_parallel(sources, measures)
        systems: dict[Measure, list[_EvaluatedSystem]] = {measure: [] for measure in measures}
        if self.progress is not None:
            self.progress.runs_total += sum(len(_runs_of(source)) for source in sources)
        for source in sources:
            by_run = []
            for run in _runs_of(source):
                by_run.append(self._evaluate(run, measures))
                if self.progress is not None:
                    self.progress.runs_done += 1
                    self.progress.cache_hits = self.cache.hits
            for measure in measures:
                first, *others = (evaluated[measure] for evaluated in by_run)
                if others:  # each run of repeated runs is one system of the same name
                    systems[measure].append(replace(first[0], repeats=tuple(other[0] for other in others)))
                else:
                    systems[measure].extend(first)
        return {measure: self._assemble(measure, systems[measure]) for measure in measures}

    def _universe(self, systems: Sequence[_EvaluatedSystem]) -> tuple[str, ...]:
        if self.qrels is not None:
            return tuple(self.qrels.evaluated_topics())
        if not systems:
            raise InputError("no systems to evaluate", hint="name baselines or a candidate in the spec")
        return tuple(systems[0].per_topic)

    def _assemble(self, measure: Measure, systems: Sequence[_EvaluatedSystem]) -> ScoreMatrix:
        topics = self._universe(systems)
        names = [system.name for system in systems]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InputError(
                f"two systems are named {', '.join(map(repr, duplicates))}",
                hint="give each system a distinct name: its key in a spec's baselines, NAME=RUN in bvtest evaluate",
            )
        scores = np.zeros((len(systems), len(topics)))
        imputed = np.zeros((len(systems), len(topics)), dtype=bool)
        missing = measure.missing_value if isinstance(measure, Measure) else 0.0
        runs = {}
        ignored = {}
        for i, system in enumerate(systems):
            each_run = (system, *system.repeats)
            rows = np.zeros((len(each_run), len(topics)))
            for k, run in enumerate(each_run):
                if isinstance(run.per_topic, TopicScores) and run.per_topic.topics == topics:
                    rows[k] = run.per_topic.array  # a Parquet table's row: every topic, in order
                    continue
                if tuple(run.per_topic) == topics:  # every topic, in order (a table's rows usually are)
                    rows[k] = np.fromiter(run.per_topic.values(), dtype=float, count=len(topics))
                    continue
                if run.from_table:
                    _check_table_topics(run, topics)
                imputed[i] |= ~np.fromiter(map(run.per_topic.__contains__, topics), dtype=bool, count=len(topics))
                rows[k] = np.fromiter(
                    map(run.per_topic.get, topics, itertools.repeat(missing)), dtype=float, count=len(topics)
                )
            scores[i] = rows.mean(axis=0) if system.repeats else rows[0]
            if system.repeats:
                rows.flags.writeable = False
                runs[system.name] = rows
            left_out = tuple(dict.fromkeys(topic for run in each_run for topic in run.ignored_topics))
            if left_out:
                ignored[system.name] = left_out
        return ScoreMatrix(str(measure), tuple(names), topics, scores, imputed, ignored, runs)


def _runs_of(source: Source) -> tuple[SingleSource, ...]:
    """The runs a source gives its system: the repeated runs of one, else the source itself."""
    return source.runs if isinstance(source, RepeatedRuns) else (source,)


def _topic_form(topic: str) -> str:
    """A topic id without what trec_eval treats as different but a person does not: surrounding blanks, case
    and leading zeros (CACM's qrels write ``01`` where a run writes ``1``)."""
    return topic.strip().lower().lstrip("0") or "0"


def _refuse_topics_in_another_form(
    named: Sequence[str], judged: Iterable[str], ranked: Iterable[str], where: object, what: str
) -> None:
    """Refuse ``named`` topics (of a run or table, absent from the qrels) that are judged topics written another
    way, which the system does not also name as the qrels write them: trec_eval would ignore them and score the
    judged topic 0, so every system would miss it and the gate would pass on the rest."""
    forms = {_topic_form(topic): topic for topic in judged}
    present = set(ranked)
    pairs = [
        (topic, forms[_topic_form(topic)])
        for topic in named
        if _topic_form(topic) in forms and forms[_topic_form(topic)] not in present
    ]
    if pairs:
        shown = short_list([f"{excerpt(own)} is {excerpt(judged_as)}" for own, judged_as in pairs])
        raise InputError(
            f"{len(pairs)} topic id{'' if len(pairs) == 1 else 's'} of the {what} match the qrels' only after "
            f"removing leading zeros, case or blanks ({what} id is qrels id): {shown}",
            path=where,
            hint=f"write the {what}'s topic ids exactly as the qrels write them; trec_eval compares them as text",
        )


def run_files_ranking_alike(named: Mapping[str, Source], matrices: Sequence[ScoreMatrix]) -> tuple[str, str] | None:
    """The first two names of ``named`` (in its order) whose run files rank the same documents in the same order
    on every topic (:func:`~pytest_bvtest.io.runs.same_rankings`), ``None`` when no two do.

    Only runs whose scores agree on every topic of every matrix are read again to compare their rankings, so a
    spec without such twins reads nothing. Two copies of one system under two names (TREC-COVID's
    ``orig_fusion_OHSU`` and ``total_fusion_OHSU``) would count twice in ZRisk, GeoRisk, GAWM and the Holm
    correction.
    """
    runs = [(name, source) for name, source in named.items() if isinstance(source, RunFile)]
    for (first, first_source), (second, second_source) in itertools.combinations(runs, 2):
        if all(np.array_equal(matrix.row(first), matrix.row(second)) for matrix in matrices) and same_rankings(
            read_run_columns(first_source.path, tag=first_source.tag),
            read_run_columns(second_source.path, tag=second_source.tag),
        ):
            return first, second
    return None


def _check_table_topics(system: _EvaluatedSystem, topics: Sequence[str]) -> None:
    expected = set(topics)
    missing = [topic for topic in topics if topic not in system.per_topic]
    extra = [topic for topic in system.per_topic if topic not in expected]
    _refuse_topics_in_another_form(extra, missing, system.per_topic, system.origin, "table")
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"lacks topics {short_list(missing)}")
        if extra:
            parts.append(f"has topics not evaluated elsewhere {short_list(extra)}")
        raise InputError(
            f"system {excerpt(system.name)} {' and '.join(parts)}",
            path=system.origin,
            hint="every system must be scored on the same topic set; fix the table or the qrels",
        )


def retrieved_lists(run: Run, qrels: Qrels, topics: Sequence[str]) -> list[RetrievedList]:
    """Per topic, what the per-topic simulation needs (docs/mathematics.md §3e): the run's retrieved scores,
    which of them are relevant (grade > 0; unjudged counts as non-relevant), and the topic's number of
    relevant documents in the qrels. A topic the run did not rank is an empty list.
    """
    from pytest_bvtest.stats.simulation import RetrievedList  # the simulation's own import: evaluating needs none

    lists = []
    for topic in topics:
        judged = qrels.judgments.get(topic, {})
        ranked = run.scores.get(topic, {})
        lists.append(
            RetrievedList(
                scores=np.fromiter(ranked.values(), dtype=float, count=len(ranked)),
                relevant=np.fromiter((judged.get(doc, 0) > 0 for doc in ranked), dtype=bool, count=len(ranked)),
                relevant_in_qrels=sum(grade > 0 for grade in judged.values()),
            )
        )
    return lists
