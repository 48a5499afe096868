"""The pipeline under the pytest plugin, the command line and the ``bvtest`` fixture.

``evaluate_spec(spec)`` runs it: files → one score matrix per measure (:mod:`~pytest_bvtest.scoring.matrix`,
or :mod:`~pytest_bvtest.judging.variations` over query variations) → statistics of every system under one
virtual target (:mod:`~pytest_bvtest.stats.registry`) → gate outcomes (:mod:`~pytest_bvtest.judging.gates`)
and guards (:mod:`~pytest_bvtest.judging.guards`). The result, an :class:`~pytest_bvtest.judging.evaluation.Evaluation`,
is what every report is written from.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from pytest_bvtest import CANDIDATE_NAME
from pytest_bvtest.blas import one_thread_while_computing
from pytest_bvtest.errors import InputError, StatisticError, short_list
from pytest_bvtest.io.frames import is_data_frame, qrels_from_frame, qrels_from_mapping, run_from_frame
from pytest_bvtest.io.qrels import Qrels, read_qrels_files
from pytest_bvtest.io.runs import Run
from pytest_bvtest.io.textfiles import ALLOW_OUTSIDE_OPTIONS, project_root, require_inside
from pytest_bvtest.io.topicfiles import TopicFile, read_topic_file
from pytest_bvtest.judging.comparisons import (
    Comparison,
    compare_with_baselines,
    comparison_tests,
    pairwise_comparisons,
    pairwise_tests,
)
from pytest_bvtest.judging.corners import (
    CornerWorlds,
    GatedMeasure,
    corner_worlds,
    graded_run_files,
    judgment_corners,
)
from pytest_bvtest.judging.decision import Verdict, decide
from pytest_bvtest.judging.evaluation import (
    ROLE_BASELINE,
    ROLE_CANDIDATE,
    ROLE_REFERENCE,
    Evaluation,
    MeasureEvaluation,
    Rankings,
    SystemStatistics,
    input_files,
)
from pytest_bvtest.judging.gate_inputs import GateInputs, TopicImpact, gate_inputs, pending_gate_null
from pytest_bvtest.judging.guards import Guard, judgment_guards, measure_guards
from pytest_bvtest.judging.judgments import (
    Corners,
    MeasureJudgments,
    Plausibility,
    every_measure,
    judgment_measures,
    measure_judgments,
)
from pytest_bvtest.judging.limits import gate_limits, joint_false_alarms
from pytest_bvtest.judging.plausible import plausible_from_payload, plausible_payload, plausible_verdicts
from pytest_bvtest.judging.power import PowerFacts, gate_powers, power_from_payload, power_payload
from pytest_bvtest.judging.predictions import predicted_grades
from pytest_bvtest.judging.simulation import simulate_spec, simulation_matrix
from pytest_bvtest.judging.variations import (
    MVE_INTER_TOPIC,
    VariationMVE,
    mean_variance_details,
    topic_weights,
    variation_matrices,
)
from pytest_bvtest.scoring.cache import ScoreCache
from pytest_bvtest.scoring.matrix import MatrixBuilder, ScoreMatrix, run_files_ranking_alike
from pytest_bvtest.scoring.progress import EvaluationProgress
from pytest_bvtest.spec.measures import Measure, TableMeasure
from pytest_bvtest.spec.model import AnalysisSettings, RepeatedRuns, RunFile, ScoreTableFile, Spec
from pytest_bvtest.spec.reader import load_spec, with_candidate, with_candidate_run, with_qrels
from pytest_bvtest.stats.calibration import PendingNull
from pytest_bvtest.stats.gawm import GAWMResult, hits
from pytest_bvtest.stats.plausible import FAR_RANKS
from pytest_bvtest.stats.rankings import rank_agreement, system_ranks
from pytest_bvtest.stats.registry import (
    BIAS_VARIANCE,
    GAP_TERMS,
    GAWM_FIXED_POINT,
    STATISTICS,
    SYSTEM_KEYS,
    SYSTEM_STATISTICS,
    statistic_values,
)
from pytest_bvtest.stats.runs import run_spread
from pytest_bvtest.stats.simulation import SimulationResult
from pytest_bvtest.stats.swaps import read_swaps


def _spec_cache_folder(
    spec: Spec, cache_dir: str | os.PathLike[str] | None, use_cache: bool, allow_outside: bool
) -> Path | None:
    """The cache folder: the caller's ``cache_dir`` (from the command line), else the spec's ``cache``,
    which must lie inside the project unless ``allow_outside``."""
    if not use_cache:
        return None
    if cache_dir:
        return Path(cache_dir)
    if spec.cache is not None and not allow_outside:
        try:
            require_inside(
                spec.cache, project_root(spec.folder), "the cache folder", allow_option=ALLOW_OUTSIDE_OPTIONS
            )
        except InputError as error:
            raise InputError(
                f"cache: {error.message}", path=spec.path, line=spec.line_of("cache"), hint=error.hint
            ) from None
    return spec.cache


def evaluate_spec(
    spec: Spec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    allow_outside: bool = False,
    jobs: int = 1,
    progress: EvaluationProgress | None = None,
    cached_power: bool = True,
) -> Evaluation:
    """Evaluate every measure of ``spec``: matrices, statistics of every system, gate outcomes.

    Each gate's power is read from the cache when every input it is measured from is unchanged, unless
    ``cached_power`` is False: its facts then keep the draws they were measured on, for the power at other drops
    (``bvtest calibrate --detect``).

    ``progress``, when given, is kept up to date for a :class:`~pytest_bvtest.scoring.progress.ProgressLine`.

    ``allow_outside`` lets the spec's ``cache:`` folder lie outside the project (see
    :func:`~pytest_bvtest.io.textfiles.project_root`); ``jobs > 1`` evaluates the run files that miss
    the cache in that many processes at once.

    The BLAS runs on one thread meanwhile (:func:`~pytest_bvtest.blas.one_thread_while_computing`), whichever shell
    or library call asked: the power's small products on two threads took 8 times the CPU on the example.
    """
    with one_thread_while_computing():
        return _evaluated(spec, cache_dir, use_cache, allow_outside, jobs, progress, cached_power)


def _evaluated(
    spec: Spec,
    cache_dir: str | os.PathLike[str] | None,
    use_cache: bool,
    allow_outside: bool,
    jobs: int,
    progress: EvaluationProgress | None,
    cached_power: bool,
) -> Evaluation:
    cache = ScoreCache(_spec_cache_folder(spec, cache_dir, use_cache, allow_outside))
    qrels = spec.qrels_judgments
    if qrels is None and spec.qrels is not None:
        qrels = read_qrels_files(spec.qrels_files())
    variations = None
    judgments: dict[Measure | TableMeasure, MeasureJudgments] = {}
    builder = None
    if spec.analysis.mve.variations is not None:
        matrices, variations = variation_matrices(spec, qrels, cache, jobs, progress)
        weights = variations.weights
    else:
        builder = MatrixBuilder(qrels, cache, jobs=jobs)
        builder.progress = progress
        # the ranks their plausible gradings' rank support reads (FAR_RANKS x d), kept when the runs are scored
        builder.near_sources, builder.near_depth_factor = graded_run_files(spec), FAR_RANKS
        derived = judgment_measures(spec, qrels)
        matrices = builder.build(every_measure(spec.measures, derived), spec.sources())
        judgments = {measure: measure_judgments(measure, derived[measure], matrices) for measure in derived}
        _refuse_one_system_twice(spec, [matrices[measure] for measure in spec.measures])
        weights = topic_weights(spec, next(iter(matrices.values())).topics)
    if progress is not None:
        progress.stage = "computing statistics and gates"
    settings = replace(spec.analysis, topic_weights=weights)
    topic_file = read_topic_file(spec.topics) if spec.topics is not None else None
    texts = topic_file.texts if topic_file is not None else {}
    segments = _segments(spec, topic_file, ordered_topics(matrices), weights)
    candidate_name = spec.candidate_name
    ordered = [matrices[measure] for measure in spec.measures]
    gated = [
        GatedMeasure(
            matrix,
            _measure_settings(spec, matrix, settings),
            judgments.get(measure),
            tuple(gate for gate in spec.gates if gate.measure is None or str(gate.measure) == matrix.measure),
        )
        for measure, matrix in zip(spec.measures, ordered)
    ]
    simulations: dict[str, SimulationResult] = {}
    if spec.analysis.simulation is not None:
        assert qrels is not None  # reader.check_combinations
        # before the gates: a gate on a simulation statistic reads its measure's simulation
        simulations = simulate_spec(spec, qrels, ordered[0].topics, ordered[0].systems)
    comparisons: list[tuple[Comparison, ...]] = [()] * len(ordered)
    nulls: list[dict[int, PendingNull]] = [{} for _ in ordered]
    corners = CornerWorlds(gated, [[] for _ in gated], None, {}, {})
    seed = spec.analysis.bootstrap.seed
    every_pair = pairwise_tests(ordered, seed=seed)
    if candidate_name is not None:
        # every gate's null, the corners' and the comparisons' randomization tests read the same swaps, drawn once
        tests = comparison_tests(ordered, candidate_name, seed)
        nulls = [_pending_nulls(spec, measure, simulations, segments) for measure in gated]
        corners = corner_worlds(
            spec,
            qrels,
            gated,
            segments,
            None if builder is None else builder.run_documents,  # the runs' documents, read with their scores
            None if builder is None else builder.run_near_ranks,  # and their ranks for the rank support
        )
        read_swaps(
            [
                *((tests,) if tests is not None else ()),
                *((every_pair,) if every_pair is not None else ()),
                *{id(null): null for each in nulls for null in each.values()}.values(),  # a shared null once
                *corners.readers,
            ],
            cache if cache.enabled else None,  # the same swaps every time: kept beside the scores
        )
        comparisons = compare_with_baselines(ordered, candidate_name, seed, tests)
    # every system against every other (the HTML report's table, bvtest compare)
    pairwise = pairwise_comparisons(
        ordered, spec.analysis.compare, seed=seed, tests=every_pair if candidate_name is not None else None
    )
    evaluated = [
        _evaluate_measure(spec, measure, variations, texts, compared, simulations, segments, drawn)
        for measure, compared, drawn in zip(gated, comparisons, nulls)
    ]
    evaluated = [(replace(measure, pairwise=table), gates) for (measure, gates), table in zip(evaluated, pairwise)]
    family = spec.analysis.calibration.family
    gates = [gates for _, gates in evaluated]
    cornered = judgment_corners(spec, corners, gates, texts, family, segments)
    predictions = (
        None
        if spec.judgments.predictions is None
        else predicted_grades(spec.judgments.predictions, qrels, _top_grade(qrels))
    )
    inputs_digest = _inputs_digest(spec, cache, qrels, gated, segments)
    # corners (and so documents) need qrels
    key = (
        None
        if corners.documents is None or inputs_digest is None
        else _drawn_key(inputs_digest, qrels, "plausible verdicts")
    )
    weighed = None if key is None else cache.get_entry(key)
    known = None if weighed is None else plausible_from_payload(weighed, [len(row) for row in gates])
    if known is not None:
        plausible, gradings = known
    else:
        plausible, gradings = plausible_verdicts(
            spec,
            corners,
            gates,
            cornered,
            family,
            _top_grade(qrels),
            segments,
            cache if cache.enabled else None,
            predictions,
        )
        if key is not None:
            cache.put_entry(key, plausible_payload(plausible, gradings))
    # over query variations a gate also reads the variations' own results, which the digest leaves out
    power_key = (
        None
        if inputs_digest is None or not cached_power or variations is not None
        else _drawn_key(inputs_digest, qrels, "power")
    )
    held = None if power_key is None else cache.get_entry(power_key)
    powers = None if held is None else power_from_payload(held, sum(len(row) for row in gates))
    verdicts = judge_gates(
        gates,
        [measure.guards for measure, _ in evaluated],
        family,
        cornered,
        spec.judgments.undecided,
        plausible,
        powers,
    )
    if power_key is not None and powers is None:
        cache.put_entry(power_key, power_payload([verdict.power for row in verdicts for verdict in row]))
    measures = tuple(replace(measure, gates=judged) for (measure, _), judged in zip(evaluated, verdicts))
    return Evaluation(
        spec,
        measures,
        simulations=tuple(simulations.values()),
        inputs=input_files(spec, cache),
        texts=texts,
        unjudged=corners.documents,
        gradings=gradings,
        predictions=predictions,
    )


def _drawn_key(inputs_digest: str, qrels: Qrels | None, what: str) -> str:
    """The cache key of ``what`` a check draws from :func:`_inputs_digest`'s inputs alone (the seeds and settings are
    the spec's): the plausible verdicts (:func:`~.plausible.plausible_verdicts`) and every gate's power
    (:func:`~.power.gate_powers`). Their draws cost more than the rest of a cached check, and the same inputs draw
    the same."""
    return ScoreCache.key(inputs_digest, "" if qrels is None else str(qrels.sha256), what, None)


def _inputs_digest(
    spec: Spec, cache: ScoreCache, qrels: Qrels | None, gated: Sequence[GatedMeasure], segments: Mapping[str, str]
) -> str | None:
    """A digest of what a check's gates are judged from: the spec (every setting, seed, gate and file name), the
    score matrices with their settings and judged shares, the segments, the qrels' digest, the digests of every run
    file (the candidate's and each baseline's) and of the predictions file. ``None`` when the cache is off or a run
    or the qrels are held in memory, without a digest."""
    if not cache.enabled or (qrels is not None and not qrels.sha256) or spec.qrels_judgments is not None:
        return None
    digest = hashlib.blake2b(digest_size=20)
    for source in spec.sources():
        runs = source.runs if isinstance(source, RepeatedRuns) else (source,)
        for run in runs:
            if not isinstance(run, RunFile | ScoreTableFile):
                return None
            digest.update(f"{run!r}\0{cache.file_digest(run.path)}\0".encode())
    if spec.judgments.predictions is not None and spec.judgments.predictions.exists():
        digest.update(f"predictions\0{cache.file_digest(spec.judgments.predictions)}\0".encode())
    settings = {item.name: getattr(spec, item.name) for item in fields(spec) if item.name not in _UNREAD_SPEC_FIELDS}
    _digest_value(digest, [settings, None if qrels is None else qrels.sha256, sorted(segments.items())])
    for measure in gated:
        _digest_value(digest, [measure.matrix, measure.settings, measure.judgments, measure.gates])
    return digest.hexdigest()


#: What the spec holds but the gates are not judged from: each key's line, and the judgments in memory (never
#: cached).
_UNREAD_SPEC_FIELDS = ("lines", "qrels_judgments")


def _digest_value(digest: Any, value: object) -> None:
    """Feed ``value`` to ``digest`` whole: dataclasses field by field, mappings and sequences item by item, arrays by
    their bytes (their repr elides the middle of a long one), anything else by its repr."""
    if isinstance(value, np.ndarray):
        digest.update(f"array {value.dtype} {value.shape}\0".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif is_dataclass(value) and not isinstance(value, type):
        digest.update(f"{type(value).__qualname__}(\0".encode())
        _digest_value(digest, {item.name: getattr(value, item.name) for item in fields(value)})
    elif isinstance(value, Mapping):
        digest.update(b"{\0")
        for key, item in value.items():
            _digest_value(digest, key)
            _digest_value(digest, item)
        digest.update(b"}\0")
    elif isinstance(value, set | frozenset):  # in an order that does not depend on the process's string hashing
        _digest_value(digest, sorted(value, key=repr))
    elif isinstance(value, list | tuple) and all(type(item) is str for item in value):
        digest.update(f"strings {value!r}\0".encode())  # a matrix's 7,000 topics in one update, not 7,000
    elif isinstance(value, list | tuple):
        digest.update(b"[\0")
        for item in value:
            _digest_value(digest, item)
        digest.update(b"]\0")
    else:
        digest.update(f"{type(value).__qualname__} {value!r}\0".encode())


def _top_grade(qrels: Qrels | None) -> int:
    """The top grade of the qrels (1 without any): the plausible gradings draw grades 0 to it."""
    if qrels is None:
        return 1
    return max(1, max(max(grades.values()) for grades in qrels.judgments.values()))


def _refuse_one_system_twice(spec: Spec, matrices: list[ScoreMatrix]) -> None:
    """Two baselines whose run files rank alike are one system listed twice (the spec reader refuses one file
    under two names; this, two files with the same rankings): an error at the second one's line."""
    twins = run_files_ranking_alike(spec.baselines, matrices)
    if twins is None:
        return
    first, second = twins
    paths = [spec.baselines[name].path.name for name in twins]  # type: ignore[union-attr]
    raise InputError(
        f"baselines.{second}: {second!r} ({paths[1]}) ranks the same documents in the same order on every topic as "
        f"{first!r} ({paths[0]}): one system listed twice counts twice in ZRisk, GeoRisk, GAWM and the Holm "
        "correction",
        path=spec.path,
        line=spec.line_of("baselines", second),
        hint="list each system once",
    )


def _evaluate_measure(
    spec: Spec,
    measure: GatedMeasure,
    variations: VariationMVE | None,
    texts: Mapping[str, str],
    comparisons: tuple[Comparison, ...],
    simulations: Mapping[str, SimulationResult],
    segments: Mapping[str, str],
    nulls: Mapping[int, PendingNull],
) -> tuple[MeasureEvaluation, list[GateInputs]]:
    """One measure's statistics of every system, its guards, and the inputs of its gates (not yet decided), whose
    nulls were drawn already (``nulls``: by the gate's position among the measure's, :func:`_pending_nulls`)."""
    matrix, settings, judged = measure.matrix, measure.settings, measure.judgments
    candidate_name = spec.candidate_name
    reference = matrix.index(spec.reference) if spec.reference is not None else None
    memo: dict[str, object] = {}  # the computations several statistics share: each runs once
    try:
        analysis = BIAS_VARIANCE.of(matrix.scores, reference, settings, memo)
    except StatisticError as error:
        raise InputError(f"{matrix.measure}: {error}", path=spec.path) from None
    rankings = spec.analysis.rankings
    wanted = [
        *SYSTEM_STATISTICS,
        *(gate.statistic for gate in spec.gates),
        *((rankings.against, *rankings.statistics) if rankings is not None else ()),
    ]
    # over query variations a statistic with a variation form takes it; a simulation statistic reads its
    # measure's simulation, not the scores: a gate on it computes it
    over_variations = [] if variations is None else [name for name in wanted if STATISTICS[name].from_variations]
    values = statistic_values(
        [name for name in wanted if name not in over_variations and STATISTICS[name].from_simulation is None],
        matrix.scores,
        reference,
        settings,
        memo,
    )
    for name in over_variations:
        values[name] = np.asarray(STATISTICS[name].from_variations(variations.results[matrix.measure]))
    fixed_point: GAWMResult | None = memo.get(GAWM_FIXED_POINT.name) if values["gawm"] is not None else None
    systems = []
    for i, name in enumerate(matrix.systems):
        role = ROLE_CANDIDATE if name == candidate_name else ROLE_REFERENCE if name == spec.reference else ROLE_BASELINE
        systems.append(
            SystemStatistics(
                name=name,
                role=role,
                values={key: (None if values.get(key) is None else float(values[key][i])) for key in SYSTEM_KEYS},
                gap={key: float(getattr(analysis.gap, key)[i]) for key in GAP_TERMS},
                missing_topics=matrix.missing_topics(name),
                ignored_topics=tuple(matrix.ignored_topics.get(name, ())),
                missing_queries=() if variations is None else variations.missing_queries.get(name, ()),
                runs=run_spread(matrix.runs[name]) if name in matrix.runs else None,
            )
        )
    gates: list[GateInputs] = []
    if candidate_name is not None:
        candidate = matrix.index(candidate_name)
        blamed_by: dict[tuple[str, int | None], tuple[TopicImpact, ...]] = {}
        for position, gate in enumerate(measure.gates):
            gated = simulation_matrix(matrix, simulations, gate.statistic)
            converged = _converged(gate.statistic, memo)
            seen = judged if gated is matrix else None  # a simulation statistic's terms are not the scores
            null = nulls[position].null() if position in nulls else None
            gates.append(
                gate_inputs(
                    spec,
                    gate,
                    gated,
                    settings,
                    candidate,
                    values,
                    variations,
                    texts,
                    segments,
                    converged,
                    seen,
                    drawn=null,
                    blamed_by=blamed_by if gated is matrix else None,
                )
            )
    method = MVE_INTER_TOPIC if variations is None else variations.method
    gate_references = tuple(inputs.reference for inputs in gates if inputs.reference is not None)
    guards = measure_guards(
        matrix, analysis, settings, candidate_name, spec.reference, comparisons, spec.analysis.guards, gate_references
    ) + judgment_guards(judged, matrix, candidate_name)
    mve = mean_variance_details(spec, matrix, settings, variations, candidate_name)
    evaluated = MeasureEvaluation(
        matrix.measure,
        matrix,
        settings,
        analysis,
        tuple(systems),
        (),
        candidate_name,
        spec.reference,
        method,
        comparisons,
        mve=mve,
        gawm=fixed_point,
        hits=hits(matrix.scores) if spec.analysis.hits else None,
        rankings=None if rankings is None else _rankings(spec, matrix, values),
        guards=guards,
        judgments=judged,
    )
    return evaluated, gates


def _measure_settings(spec: Spec, matrix: ScoreMatrix, settings: AnalysisSettings) -> AnalysisSettings:
    """The settings of one measure's statistics: a named target system's row (SIGIR 2013 Sec. 2.5: its scores are
    the target)."""
    if spec.analysis.target_system is None:
        return settings
    return replace(settings, target_row=matrix.index(spec.analysis.target_system))


def _pending_nulls(
    spec: Spec, measure: GatedMeasure, simulations: Mapping[str, SimulationResult], segments: Mapping[str, str]
) -> dict[int, PendingNull]:
    """The nulls of the measure's gates, by the gate's position among the measure's, to be read with every other
    reader of the evaluation's swaps (:func:`~pytest_bvtest.stats.swaps.read_swaps`)."""
    matrix = measure.matrix
    candidate = matrix.index(spec.candidate_name)  # type: ignore[arg-type]
    nulls = {}
    # gates that differ in their bounds alone share one null (a spec may hold thousands of such gates)
    shared: dict[tuple[object, ...], PendingNull | None] = {}
    for position, gate in enumerate(measure.gates):
        drawn_as = (gate.statistic, gate.reference, gate.segment, gate.false_alarm is None)
        if drawn_as not in shared:
            gated = simulation_matrix(matrix, simulations, gate.statistic)
            shared[drawn_as] = pending_gate_null(spec, gate, gated, measure.settings, candidate, segments)
        if shared[drawn_as] is not None:
            nulls[position] = shared[drawn_as]
    return nulls


def ordered_topics(matrices: Mapping[object, ScoreMatrix]) -> tuple[str, ...]:
    """The evaluated topics (every measure's matrix has the same)."""
    return next(iter(matrices.values())).topics


def _segments(
    spec: Spec, topic_file: TopicFile | None, topics: tuple[str, ...], weights: np.ndarray | None
) -> dict[str, str]:
    """Each topic's segment, from the topic file; with a gate per segment every evaluated topic needs one (a topic
    left out of every segment would be judged by no segment's gate without a word), and a segment whose gate weighs
    its topics (``weighted_mean``) needs a weight above 0 among them (``weights``, aligned with ``topics``)."""
    segments = dict(topic_file.segments) if topic_file is not None else {}
    if any(gate.segment is not None for gate in spec.gates):
        assert topic_file is not None and spec.topics is not None  # the reader requires a segment column
        missing = [topic for topic in topics if topic not in segments]
        if missing:
            raise InputError(
                f"no segment for {len(missing)} evaluated topic(s): {short_list(missing)}",
                path=spec.topics,
                hint="give every evaluated topic a segment (a line `topic<TAB>segment` under the header)",
            )
    weighing = [
        gate for gate in spec.gates if gate.segment is not None and STATISTICS[gate.statistic].uses_topic_weights
    ]
    for gate in weighing if weights is not None else ():
        inside = [weight for topic, weight in zip(topics, weights) if segments[topic] == gate.segment]
        if not sum(inside) > 0:
            raise InputError(
                f"segment {gate.segment!r}: the weights of its {len(inside)} evaluated topics sum to 0, so the gate "
                f"{gate.name} ({spec.path.name}:{gate.line}) has nothing to weigh",
                path=spec.topics,
                hint="give some of its topics a weight above 0, or name the segments to gate (`segment: NAME`) "
                "instead of `per_segment: true`",
            )
    return segments


def _rankings(spec: Spec, matrix: ScoreMatrix, values: Mapping[str, np.ndarray | None]) -> Rankings:
    """Systems ranked by every statistic the spec lists, and Kendall's tau and tau_AP against ``against``."""
    wanted = spec.analysis.rankings
    assert wanted is not None
    line = spec.line_of("analysis", "rankings")
    if len(matrix.systems) < 2:
        raise InputError("rankings need at least 2 systems", path=spec.path, line=line)
    oriented = {}
    for name in (wanted.against, *wanted.statistics):
        computed = values.get(name)
        if computed is None or np.isnan(computed).any():
            # a statistic that needs a reference has one here (reader.check_combinations)
            raise InputError(
                f"{matrix.measure}: systems cannot be ranked by {name}: it is undefined for these scores",
                path=spec.path,
                line=line,
            )
        oriented[name] = computed if STATISTICS[name].higher_is_better else -computed
    ranks = {name: system_ranks(value, higher_is_better=True) for name, value in oriented.items()}
    agreements = {name: rank_agreement(oriented[wanted.against], oriented[name]) for name in wanted.statistics}
    return Rankings(wanted.against, ranks, agreements)


def _converged(statistic: str, memo: Mapping[str, object]) -> bool:
    """Whether a statistic found by iteration reached its fixed point (GAWM); True for the others."""
    definition = STATISTICS[statistic]
    if definition.converged is None or definition.shared is None or definition.shared.name not in memo:
        return True
    return definition.converged(memo[definition.shared.name])


def judge_gates(
    gates: Sequence[Sequence[GateInputs]],
    guards: Sequence[Sequence[Guard]],
    family: bool,
    corners: Sequence[Sequence[Corners | None]] | None = None,
    undecided: str = "warn",
    plausible: Sequence[Sequence[Plausibility | None]] | None = None,
    powers: Sequence[PowerFacts | None] | None = None,
) -> list[tuple[Verdict, ...]]:
    """Every gate of a spec decided once, each measure's gates with that measure's guards and their corners.

    The limits come first, all together (docs/mathematics.md §7): calibrated gates that share their swaps and
    their rate, on any measure, form a family (when ``family``) whose per-gate level holds them together to that
    rate; then every gate that shares its swaps with others learns how often an equal change fails at least one
    of them. Then each gate's power at that limit (docs/mathematics.md §9). Only then is each gate decided, from
    its inputs, its limit, its power, its measure's guards and, where its top d holds unjudged documents, its two
    corners (:mod:`~pytest_bvtest.judging.corners`) and, where they do not agree, its plausible gradings
    (:mod:`~pytest_bvtest.judging.plausible`; ``undecided`` is the spec's policy for a verdict those do not decide).
    ``powers``, every gate's power as an evaluation of the same inputs found it, is read instead of measured.
    """
    every = [inputs for measure in gates for inputs in measure]
    limits = gate_limits(every, family)
    for position, together in joint_false_alarms(every, limits).items():
        limits[position] = replace(limits[position], together=together)
    # what an evaluation of the same inputs found (power_from_payload) is read as it is: nothing is drawn
    powers = list(powers) if powers is not None else gate_powers(every, limits)
    verdicts: list[tuple[Verdict, ...]] = []
    position = 0
    for m, (measure, concerning) in enumerate(zip(gates, guards)):
        verdicts.append(
            tuple(
                decide(
                    inputs,
                    limits[position + i],
                    concerning,
                    powers[position + i],
                    None if corners is None else corners[m][i],
                    undecided,
                    None if plausible is None else plausible[m][i],
                )
                for i, inputs in enumerate(measure)
            )
        )
        position += len(measure)
    return verdicts


#: A check that fails more than this share of equal-quality changes fails most pull requests that change nothing.
MOST_EQUAL_CHANGES = 0.5


@dataclass(frozen=True)
class CheckWarning:
    """A warning about the spec's gates as a check: ``message``, at ``line`` of the spec, carried by the gate
    ``gate_id`` (the first of those it concerns, so that each session shows it once, under pytest-xdist too)."""

    gate_id: str
    message: str
    line: int


def checks_failing_most_equal_changes(evaluation: Evaluation) -> list[CheckWarning]:
    """One :class:`CheckWarning` per set of gates that share their swaps and together fail most equal-quality
    changes, at the spec's ``gates:`` line (a gate alone: at its line): 26 plain bounds together failed 99.7% of
    them, said only by a line of the report. Shown as a :class:`~pytest_bvtest.spec.reader.SpecWarning`."""
    spec = evaluation.spec
    found: dict[tuple[str, ...], CheckWarning] = {}
    for verdict in evaluation.gates:
        null, limits = verdict.inputs.null, verdict.limits
        if null is None or limits.rate is None:
            continue
        together = limits.together
        ids, rate, swaps = (
            (together.gates, together.rate, together.swaps)
            if together is not None
            else ((verdict.id,), limits.rate, null.distribution.swaps)
        )
        if rate <= MOST_EQUAL_CHANGES or ids in found:
            continue
        what = f"the {len(ids)} gates against {null.partner} together fail" if len(ids) > 1 else "fails"
        subject = "" if len(ids) > 1 else f"gate {verdict.id} "
        line = spec.line_of("gates") if len(ids) > 1 else verdict.gate.line
        found[ids] = CheckWarning(
            ids[0],
            f"{spec.path.name}: {subject}{what} {rate:.1%} of equal-quality changes ({swaps:,} swaps with "
            f"{null.partner}): most pull requests that change nothing would fail this check; calibrate the gates "
            f"(`false_alarm: 0.05` holds them to 5% together), or loosen or drop bounds (`bvtest calibrate "
            f"{spec.path.name}` prints each gate's rate)",
            line or 1,
        )
    return list(found.values())


def replay_baselines(
    spec: Spec, *, cache_dir: str | os.PathLike[str] | None = None, use_cache: bool = True
) -> dict[str, Evaluation]:
    """Evaluate the spec's gates with each baseline but the reference as the candidate (``bvtest calibrate``).

    A release the team accepted should pass its gates; one that fails shows a gate that would have
    raised a false alarm. The replayed baseline leaves the baselines (it is now the system under
    test), so the other systems and the reference are as in the spec.
    """
    replays = {}
    for name, source in spec.baselines.items():
        if name == spec.reference:
            continue
        others = {other: kept for other, kept in spec.baselines.items() if other != name}
        gates = tuple(gate for gate in spec.gates if gate.reference != name)
        replayed = replace(spec, baselines=others, candidate=source, gates=gates)
        replays[name] = evaluate_spec(replayed, cache_dir=cache_dir, use_cache=use_cache)
    return replays


#: What can stand in for a spec's candidate: a run file, several runs of it (a list of paths, or a quoted glob),
#: a source, or an in-memory ``{qid: {docno: score}}``.
CandidateRun = (
    str
    | os.PathLike[str]
    | Sequence[str | os.PathLike[str]]
    | RunFile
    | ScoreTableFile
    | RepeatedRuns
    | Run
    | Mapping[str, Mapping[str, float]]
)


#: Judgments given to the Python API instead of the spec's ``qrels:``: a :class:`Qrels`, a dict
#: ``{qid: {docno: grade}}`` or a pandas DataFrame (``Any``: pandas is optional and never imported for a type).
QrelsGiven = Any


def _judgments_given(qrels: QrelsGiven) -> tuple[Qrels, str]:
    """Judgments given to the API, and what they are (shown where the reports name the qrels)."""
    if isinstance(qrels, Qrels):  # given its digest, which the cache keys scores by
        return (qrels if qrels.sha256 else qrels_from_mapping(qrels.judgments)), "judgments given in memory"
    if is_data_frame(qrels):
        return qrels_from_frame(qrels), "a DataFrame"
    if isinstance(qrels, Mapping):
        return qrels_from_mapping(qrels), "a dict"
    raise InputError(
        f"qrels must be a DataFrame or a dict {{qid: {{docno: grade}}}}, got {type(qrels).__name__}",
        hint="or name a qrels file in the spec (`qrels:`)",
    )


def require_candidate_for_gates(spec: Spec) -> None:
    """Refuse to gate a spec that has gates but no candidate: its gates would be left out and the check
    would pass as analysis only (a spec that leaves the candidate to CI's ``--bvtest-run``, run without it)."""
    if spec.gates and spec.candidate is None:
        count = len(spec.gates)
        raise InputError(
            f"gates: the spec has {count} gate{'' if count == 1 else 's'} but no candidate to judge",
            path=spec.path,
            line=spec.line_of("gates"),
            hint="name the run under test: `candidate:` in the spec, or --bvtest-run (ini bvtest_run), "
            "or bvtest check --run",
        )


def spec_under_test(
    spec: Spec | str | os.PathLike[str],
    run: CandidateRun | None = None,
    *,
    name: str = CANDIDATE_NAME,
    qrels: QrelsGiven | None = None,
) -> Spec:
    """``spec`` (a :class:`Spec` or its path) with its candidate replaced by ``run`` when one is given, and its
    judgments by ``qrels`` when given.

    The one place a candidate override is applied (``--bvtest-run`` for the gates, the ``bvtest``
    fixture and ``--bvtest-update``; ``bvtest check --run``; the fixture's ``run`` argument), so every
    check of a session judges the same candidate. A dict run, or a DataFrame (PyTerrier's ``qid, docno, score``,
    ranx's and ir_datasets' ``query_id, doc_id, score``), is named ``name``. ``qrels`` is a DataFrame (PyTerrier's
    ``qid, docno, label``, ir_datasets' ``query_id, doc_id, relevance``) or a dict ``{qid: {docno: grade}}``; a spec
    given as a path may then leave out ``qrels:``.
    """
    given = None if qrels is None else _judgments_given(qrels)
    if not isinstance(spec, Spec):
        spec = load_spec(spec, qrels=given)
    elif given is not None:
        spec = with_qrels(spec, *given)
    if run is None:
        return spec
    if is_data_frame(run):
        run = run_from_frame(run, name)
    if isinstance(run, Mapping):
        run = Run(name=name, scores={str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items()})
    if isinstance(run, Run | RunFile | ScoreTableFile | RepeatedRuns):
        return with_candidate(spec, run)
    return with_candidate_run(spec, run)
