"""Per-topic values of the measures a spec names (:mod:`pytest_bvtest.spec.measures`): columnar, pytrec_eval, gdeval.

Users name measures as in ir_measures (``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RR(rel=2)``,
``nDCG(dcg='exp-log2')@20``, ``ERR@20``) or as trec_eval does (``map``, ``ndcg_cut_10``, ``P_10``,
``recip_rank``, ``recall_1000``); both parse to one :class:`Measure` whose ``str`` is the canonical
ir_measures form. The syntax is ir_measures' own parser; this module decides what is supported.

Who computes what (docs/mathematics.md §1):

- AP, GMAP, nDCG, nDCG@k (custom ``gains=`` too), P@k, R@k, RR, RR@k, RBP (and its residual), IPrec@r, SetF and
  Compat (any ``rel=``, not judged-only) come from :mod:`pytest_bvtest.scoring.columnar`: trec_eval's definitions (and
  ir_measures' for RBP and Compat) on numpy arrays, every topic in one pass, equal to pytrec_eval, trec_eval 10.0's
  expected outputs and ir_measures (tests/test_columnar.py and tests/test_more_measures.py check every run of the
  shared data).
- GMAP's per-topic value is trec_eval's ``gm_map`` per query: log(max(AP, 1e-5)); its mean over topics is the log
  of GMAP, and :meth:`~pytest_bvtest.spec.measures.Measure.aggregate` gives GMAP itself (exp of the mean).
- The other trec_eval measures come from pytrec_eval, a fresh evaluator per call and one evaluator per
  (relevance level, judged-only) pair, so ``AP`` and ``AP(rel=2)`` in one call cost two passes and
  ``AP``, ``P@10`` and ``nDCG@10`` one. ``rel=N`` is trec_eval's ``-l N`` (grade >= N is relevant
  for binary measures); nDCG is graded and ignores it, as trec_eval does. ``judged_only=True`` is
  trec_eval's ``-J`` (it also drops documents graded below 0). ``nDCG`` is trec_eval's linear-gain
  ``ndcg``/``ndcg_cut``.
- ``RR@k`` is trec_eval's ``recip_rank`` set to 0 when the first relevant document is below rank k
  (trec_eval has no cut-off reciprocal rank; recip_rank is exactly 1/rank, so this is exact).
- ``ERR@k`` and ``nDCG(dcg='exp-log2')@k`` come from :mod:`pytest_bvtest.scoring.gdeval` (gdeval.pl).
- ``Judged@k``, and what the corners of docs/mathematics.md §8 read beside a measure (its optimistic value M+
  and the unjudged documents of a run's top d), come from :mod:`~pytest_bvtest.scoring.columnar`, M+ of gdeval's
  measures from :mod:`~pytest_bvtest.scoring.gdeval`.
- Not supported, with a message saying why (docs/spec.md lists them): ``11pt_avg``, measures that need subtopic
  qrels (alpha-nDCG, ERR-IA, NRBP, ...), C/W/L measures (BPM, INST, ...), ``NumQ`` and every measure pytrec_eval
  lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels, check_top_grade
from pytest_bvtest.io.runs import Run, RunColumns
from pytest_bvtest.scoring import columnar, gdeval
from pytest_bvtest.spec.measures import Measure, OptimisticMeasure, Residual, RunMeasure, TableMeasure

#: The largest grade nDCG (either gain) accepts: trec_eval's nDCG allocates and walks an array per
#: grade level (grade 3e9 took 23 GB), and gdeval's gain 2^g - 1 overflows a float near g = 1024.
NDCG_TOP_GRADE = 512


def check_relevance_levels(qrels: Qrels, measures: Sequence[Measure | TableMeasure]) -> None:
    """Refuse a ``rel=N`` that no judgment reaches: no document would be relevant, every system would score 0
    on every topic, and the gates would pass on a matrix of zeros.

    Checked where runs are scored for a spec or ``bvtest evaluate``
    (:class:`~pytest_bvtest.scoring.matrix.MatrixBuilder`), not by :func:`evaluate_run`, which computes any
    level as trec_eval does (0 where nothing is relevant).
    """
    levels = [measure for measure in measures if isinstance(measure, Measure) and (measure.rel or 0) > 1]
    if not levels:
        return
    top = max(max(docs.values()) for docs in qrels.judgments.values())
    above = next((measure for measure in levels if measure.rel > top), None)
    if above is not None:
        raise InputError(
            f"{above} counts a grade of {above.rel} or more as relevant, but no judgment reaches {above.rel} "
            f"(the top grade is {top}): every system would score 0 on every topic",
            path=qrels.path,
            hint=f"use a level the qrels hold, e.g. {replace(above, rel=top)}",
        )


def _scored(measure: RunMeasure) -> Measure | None:
    """The measure whose conventions ``measure`` follows: itself, an optimistic value's or a residual's measure, or
    none (a count)."""
    if isinstance(measure, OptimisticMeasure | Residual):
        return measure.measure
    return measure if isinstance(measure, Measure) else None


def evaluate_run(
    qrels: Qrels, run: Run | RunColumns, measures: Sequence[RunMeasure]
) -> dict[RunMeasure, dict[str, float]]:
    """Per-topic values of each measure for one run (:func:`evaluate_run_documents` without the documents)."""
    return evaluate_run_documents(qrels, run, measures)[0]


def evaluate_run_documents(
    qrels: Qrels, run: Run | RunColumns, measures: Sequence[RunMeasure], unjudged_depth: int = 0
) -> tuple[dict[RunMeasure, dict[str, float]], columnar.RankedGains | None]:
    """Per-topic values of each measure for one run, and the run's ranked documents that its corners read
    (:func:`~pytest_bvtest.scoring.columnar.documents_payload`): found with the unjudged documents of the first
    ``unjudged_depth`` ranks, or as deep as the measures search for them, in the same pass (``None`` when neither
    asks for unjudged documents).

    Parameters
    ----------
    qrels:
        The judgments; its topic universe is :meth:`Qrels.evaluated_topics` (docs/mathematics.md §1 PIN:
        topics with at least one positive grade).
    run:
        The rankings (a :class:`Run` or, read by :func:`~pytest_bvtest.io.runs.read_run_columns`, its
        columns); order is score descending, ties by docno descending (docs/mathematics.md §1).
    measures:
        What to compute.

    Returns
    -------
    tuple[dict[Measure, dict[str, float]], RankedGains | None]
        ``values[measure][qid]`` for every topic of the universe that the run ranks at least one
        document for, in the qrels' topic order. Topics the run misses are absent (the score matrix
        zero-fills them); topics outside the universe are ignored. Then the ranked documents, or ``None``.

    Raises
    ------
    InputError
        For ERR when a grade exceeds 4 (docs/mathematics.md §1 PIN), for nDCG when a grade exceeds
        :data:`NDCG_TOP_GRADE`, naming the judgment's file and line.
    """
    scored = [measure for measure in map(_scored, measures) if measure is not None]
    if any(measure.name == "ERR" for measure in scored):
        gdeval.check_err_grades(qrels)
    if any(measure.name == "nDCG" for measure in scored):
        check_top_grade(
            qrels,
            NDCG_TOP_GRADE,
            "the largest grade nDCG accepts",
            hint=f"trec_eval's nDCG takes time and memory per grade level and the gain 2^g overflows: "
            f"map the grades onto 0..{NDCG_TOP_GRADE} (binary measures such as AP accept any grade)",
        )
    if isinstance(run, RunColumns):
        ranked_topics = set(run.topics)  # every topic of the columns has a document
        topics = [qid for qid in qrels.evaluated_topics() if qid in ranked_topics]
    else:
        topics = [qid for qid in qrels.evaluated_topics() if run.scores.get(qid)]
    if not topics:
        return {measure: {} for measure in measures}, None
    judgments = {qid: qrels.judgments[qid] for qid in topics}
    values: dict[RunMeasure, dict[str, float]] = {}
    columnar_measures = [measure for measure in measures if columnar.computes(measure)]
    ranked = None
    gdeval_measures = [
        measure
        for measure in measures
        if measure not in columnar_measures and _scored(measure).uses_gdeval  # type: ignore[union-attr]
    ]
    trec_eval_measures = [
        measure for measure in measures if measure not in columnar_measures and measure not in gdeval_measures
    ]
    depth = max(columnar.unjudged_depth(columnar_measures), unjudged_depth)
    judged_ranks = columnar.needs_judged_ranks(columnar_measures)
    if columnar_measures or depth:
        if isinstance(run, RunColumns):
            ranked = columnar.ranked_gains_from_columns(judgments, run, topics, depth, judged_ranks)
        else:
            ranked = columnar.ranked_gains_from_rankings(
                judgments, {qid: run.scores[qid] for qid in topics}, topics, depth, judged_ranks
            )
        values.update(columnar.evaluate(ranked, columnar_measures))
    documents = ranked if depth else None
    if len(columnar_measures) == len(measures):
        return values, documents
    rankings = run.rankings(topics) if isinstance(run, RunColumns) else {qid: run.scores[qid] for qid in topics}
    if trec_eval_measures:
        values.update(_evaluate_with_pytrec_eval(judgments, rankings, trec_eval_measures))
    if gdeval_measures:
        values.update(_evaluate_with_gdeval(judgments, rankings, topics, gdeval_measures))
    return {measure: values[measure] for measure in measures}, documents


def _evaluate_with_pytrec_eval(
    judgments: dict[str, dict[str, int]], rankings: dict[str, dict[str, float]], measures: Sequence[Measure]
) -> dict[Measure, dict[str, float]]:
    """trec_eval's measures, one fresh pytrec_eval evaluator per (relevance level, judged-only) pair."""
    import pytrec_eval

    groups: dict[tuple[int, bool], list[Measure]] = {}
    for measure in sorted(measures, key=lambda measure: measure.rel is None):
        # Measures without a relevance threshold join any evaluator with the same judged-only flag.
        key = (
            (measure.rel, measure.judged_only)
            if measure.rel is not None
            else next((key for key in groups if key[1] == measure.judged_only), (1, measure.judged_only))
        )
        groups.setdefault(key, []).append(measure)
    values: dict[Measure, dict[str, float]] = {}
    for (relevance_level, judged_only), group in groups.items():
        labels = {measure: measure.trec_eval_name or measure.trec_eval_family for measure in group}
        # A fresh evaluator per call: reused ones dropped cut-off measures in old pytrec_eval versions.
        evaluator = pytrec_eval.RelevanceEvaluator(
            judgments, set(labels.values()), relevance_level=relevance_level, judged_docs_only_flag=judged_only
        )
        results = evaluator.evaluate(rankings)
        for measure, label in labels.items():
            per_topic = {qid: results[qid][label] for qid in rankings}
            if measure.name == "RR" and measure.cutoff is not None:
                per_topic = {qid: _reciprocal_rank_at(value, measure.cutoff) for qid, value in per_topic.items()}
            values[measure] = per_topic
    return values


def _reciprocal_rank_at(reciprocal_rank: float, cutoff: int) -> float:
    """RR@k from trec_eval's recip_rank, which is exactly 1/rank of the first relevant document (0 if none)."""
    if reciprocal_rank <= 0:
        return 0.0
    return reciprocal_rank if round(1 / reciprocal_rank) <= cutoff else 0.0


def _evaluate_with_gdeval(
    judgments: dict[str, dict[str, int]],
    rankings: dict[str, dict[str, float]],
    topics: list[str],
    measures: Sequence[Measure | OptimisticMeasure],
) -> dict[RunMeasure, dict[str, float]]:
    """ERR@k and exponential-gain nDCG@k (and their optimistic values M+, docs/mathematics.md §8) for every topic
    and cutoff from one grade matrix."""
    cutoffs = [_scored(measure).cutoff for measure in measures]  # type: ignore[union-attr]
    depth = None if any(cutoff is None for cutoff in cutoffs) else max(cutoffs)  # type: ignore[type-var]
    optimistic = any(isinstance(measure, OptimisticMeasure) for measure in measures)
    # unjudged documents are NaN until each measure says what they gain: 0 as judged, g+ at the optimistic corner
    marked = gdeval.ranked_grade_matrix(judgments, rankings, topics, depth, unjudged=np.nan if optimistic else 0.0)
    ideal = gdeval.ideal_grade_matrix(judgments, topics, depth)
    values: dict[RunMeasure, dict[str, float]] = {}
    for measure in measures:
        scored = _scored(measure)
        assert scored is not None
        grades = marked[:, slice(None, scored.cutoff)]
        if isinstance(measure, OptimisticMeasure):
            grades = gdeval.with_unjudged_graded(grades, measure.grade, measure.depth)
        elif optimistic:
            grades = np.nan_to_num(grades, nan=0.0)
        if scored.name == "ERR":
            scores = gdeval.expected_reciprocal_rank(grades)
        else:
            scores = gdeval.exponential_ndcg(grades, ideal[:, slice(None, scored.cutoff)])
        if isinstance(measure, OptimisticMeasure):
            scores = np.minimum(scores, 1.0)
        values[measure] = dict(zip(topics, scores.tolist()))
    return values
