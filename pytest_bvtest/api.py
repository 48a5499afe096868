"""The shared API under the pytest plugin, the command line and the ``bvtest`` fixture.

``evaluate_spec(spec)`` runs the whole pipeline: files → one score matrix per measure → statistics
of every system under one virtual target → gate outcomes. The result, :class:`Evaluation`, is what
every report is written from.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pytest_bvtest.cache import ScoreCache
from pytest_bvtest.errors import InputError, StatisticError
from pytest_bvtest.gates import GateOutcome, TopicImpact, calibrate_family, family_key, judge, with_guards
from pytest_bvtest.guards import (
    Guard,
    GuardSettings,
    identical_to_baseline,
    reference_missing_topics,
    stale_reference,
    target_constant_out_of_range,
    unanswered_topics,
)
from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.io.textfiles import atomic_write_bytes, numbered_lines, project_root, require_inside
from pytest_bvtest.io.topicfiles import Variation, read_topic_texts, read_topic_weights, read_variations
from pytest_bvtest.matrix import MatrixBuilder, RunFile, ScoreMatrix, ScoreTableFile, retrieved_lists
from pytest_bvtest.measures import Measure, parse_measure
from pytest_bvtest.progress import EvaluationProgress
from pytest_bvtest.spec import CANDIDATE_NAME, GateSpec, Spec, load_spec, simulated_form
from pytest_bvtest.stats.biasvar import BiasVarianceAnalysis, Tradeoff
from pytest_bvtest.stats.calibration import SwapNull, null_of_own_value, swap_null
from pytest_bvtest.stats.gawm import GAWMResult, HITSResult, hits
from pytest_bvtest.stats.inference import (
    BootstrapInterval,
    TestResult,
    holm,
    paired_bootstrap,
    paired_t_test,
    randomization_tests,
    topic_bootstrap,
)
from pytest_bvtest.stats.meanvar import (
    IntraTopicMeanVariance,
    MeanVariance,
    VariationLayout,
    crossing_alpha,
    mve_alpha_sweep,
    mve_inter_topic,
    mve_intra_topic,
    variation_layout,
    variation_mve,
)
from pytest_bvtest.stats.rankings import RankAgreement, rank_agreement, system_ranks
from pytest_bvtest.stats.registry import (
    BIAS_VARIANCE,
    GAP_TERMS,
    GAWM_FIXED_POINT,
    STATISTICS,
    SYSTEM_STATISTICS,
    AnalysisSettings,
    p_value_key,
    statistic_values,
)
from pytest_bvtest.stats.simulation import SimulationResult, simulate_topic_bias_variance

__all__ = ["BvtestAPI", "Evaluation", "GateOutcome", "MeasureEvaluation", "SystemStatistics", "evaluate_spec", "spec_under_test"]

ROLE_CANDIDATE = "candidate"
ROLE_REFERENCE = "reference"
ROLE_BASELINE = "baseline"

#: The MVE forms (Zuccon et al. CIKM 2016, MATH.md section 5), as every report names them.
MVE_INTER_TOPIC = "inter-topic"
MVE_INTRA_TOPIC = "intra-topic (covariance 0)"
MVE_GENERAL = "general (aligned by user)"

@dataclass(frozen=True)
class SystemStatistics:
    """Every statistic of one system under one measure; ``None`` where it is not computed."""

    name: str
    role: str
    values: Mapping[str, float | None]
    trisk_p: float | None
    gap: Mapping[str, float]
    missing_topics: tuple[str, ...]
    ignored_topics: tuple[str, ...]
    missing_queries: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """The candidate against one baseline on the mean: paired tests over topics, Holm-corrected
    across the candidate's baselines, with win/tie/loss counts (PyTerrier's and ranx's habits)."""

    baseline: str
    difference: float
    wins: int
    ties: int
    losses: int
    t: float
    p_t: float
    p_t_holm: float
    p_randomization: float
    p_randomization_holm: float
    permutations: int
    seed: int


#: Sign flips of the randomization test (ranx uses 1,000; more resolves small p-values better).
RANDOMIZATION_PERMUTATIONS = 10_000


def compare_with_baselines(matrices: Sequence[ScoreMatrix], candidate: str, seed: int) -> list[tuple[Comparison, ...]]:
    """Paired t-test and randomization test of the candidate's mean against every other system, per matrix.

    The randomization tests of every measure and baseline share one pass over the sign assignments
    (:func:`~pytest_bvtest.stats.inference.randomization_tests`); each p-value is the one a test of
    that pair alone gives.
    """
    pairs = []
    for matrix in matrices:
        index = matrix.index(candidate)
        others = [i for i in range(len(matrix.systems)) if i != index] if len(matrix.topics) >= 2 else []
        pairs.append((matrix, index, others))
    flat = [(matrix.scores[index], matrix.scores[i]) for matrix, index, others in pairs for i in others]
    randomized = iter(randomization_tests(np.array([ours for ours, _ in flat]).reshape(len(flat), -1),
                                          np.array([theirs for _, theirs in flat]).reshape(len(flat), -1),
                                          RANDOMIZATION_PERMUTATIONS, seed) if flat else ())
    return [_comparisons(matrix, index, others, [next(randomized) for _ in others], seed) for matrix, index, others in pairs]


def _comparisons(matrix: ScoreMatrix, index: int, others: Sequence[int], randomized: Sequence[TestResult],
                 seed: int) -> tuple[Comparison, ...]:
    if not others:
        return ()
    ours = matrix.scores[index]
    tests = [(paired_t_test(ours, matrix.scores[i]), randomization) for i, randomization in zip(others, randomized)]
    p_t_holm = holm(np.array([t.p_value for t, _ in tests]))
    p_randomization_holm = holm(np.array([r.p_value for _, r in tests]))
    comparisons = []
    for k, (i, (t_test, randomization)) in enumerate(zip(others, tests)):
        difference = ours - matrix.scores[i]
        comparisons.append(Comparison(
            baseline=matrix.systems[i], difference=float(difference.mean()),
            wins=int(np.count_nonzero(difference > 0)), ties=int(np.count_nonzero(difference == 0)),
            losses=int(np.count_nonzero(difference < 0)),
            t=float(t_test.statistic), p_t=float(t_test.p_value), p_t_holm=float(p_t_holm[k]),
            p_randomization=float(randomization.p_value), p_randomization_holm=float(p_randomization_holm[k]),
            permutations=RANDOMIZATION_PERMUTATIONS, seed=seed,
        ))
    return tuple(comparisons)


@dataclass(frozen=True)
class AlphaSweep:
    """MVE of every system over a range of alpha (Zuccon et al. CIKM 2016 Figs. 2-4).

    ``values`` and ``ranks`` are ``(alphas, systems)``; ``flips`` maps every other system to the alpha
    at which its MVE ranking against the candidate flips (``None``: never, equal variances).
    """

    alphas: np.ndarray
    values: np.ndarray
    ranks: np.ndarray
    flips: Mapping[str, float | None]


@dataclass(frozen=True)
class MeanVarianceDetails:
    """MVE of every system under one measure: the form used, ``mu``, ``sigma2`` and value per system,
    the per-topic ``O_t`` (``topic_values``, systems x topics, summing to the value) and the sweep."""

    form: str
    alpha: float
    mu: np.ndarray
    sigma2: np.ndarray
    topic_values: np.ndarray
    sweep: AlphaSweep | None = None


@dataclass(frozen=True)
class Rankings:
    """Systems ranked by statistics (1 = best) and each ranking's agreement with the one by ``against``."""

    against: str
    ranks: Mapping[str, np.ndarray]
    agreements: Mapping[str, RankAgreement]


@dataclass(frozen=True)
class MeasureEvaluation:
    """One measure's matrix, target, per-system statistics and gate outcomes."""

    measure: str
    matrix: ScoreMatrix
    settings: AnalysisSettings
    analysis: BiasVarianceAnalysis
    systems: tuple[SystemStatistics, ...]
    gates: tuple[GateOutcome, ...]
    candidate: str | None
    reference: str | None
    mve_method: str = MVE_INTER_TOPIC
    comparisons: tuple[Comparison, ...] = ()
    mve: MeanVarianceDetails | None = None
    gawm: GAWMResult | None = None
    hits: HITSResult | None = None
    rankings: Rankings | None = None
    guards: tuple[Guard, ...] = ()

    @property
    def topics(self) -> tuple[str, ...]:
        return self.matrix.topics

    @property
    def c(self) -> float:
        return float(self.analysis.c)

    @property
    def target(self) -> np.ndarray:
        return self.analysis.target_scores

    @property
    def tradeoff(self) -> Tradeoff:
        return self.analysis.tradeoff

    def system(self, name: str) -> SystemStatistics:
        for system in self.systems:
            if system.name == name:
                return system
        raise InputError(f"unknown system {name!r}", hint=f"systems are: {', '.join(s.name for s in self.systems)}")


@dataclass(frozen=True)
class InputFile:
    """A file the evaluation read: its role (``spec``, ``qrels``, ``topics``, ``candidate``, ``baseline``),
    the system's name for runs and tables, its path and the SHA-256 of its bytes."""

    role: str
    name: str | None
    path: str
    sha256: str


def input_files(spec: Spec, cache: ScoreCache) -> tuple[InputFile, ...]:
    """Every file ``spec`` reads, with its content hash (the JSON report and the history record them);
    ``cache`` hashes each file at most once while it is unchanged."""
    files = [("spec", None, spec.path), ("qrels", None, spec.qrels), ("topics", None, spec.topics),
             ("weights", None, spec.analysis.mve.weights), ("variations", None, spec.analysis.mve.variations)]
    named = [*(("baseline", name, source) for name, source in spec.baselines.items()),
             *([("candidate", _candidate_name(spec), spec.candidate)] if spec.candidate is not None else [])]
    files += [(role, name, source.path) for role, name, source in named if isinstance(source, RunFile | ScoreTableFile)]
    seen: dict[tuple[str, str], InputFile] = {}
    for role, name, path in files:
        if path is not None and (role, str(path)) not in seen:
            seen[(role, str(path))] = InputFile(role, name, str(path), cache.file_digest(path))
    return tuple(seen.values())


@dataclass(frozen=True)
class Evaluation:
    """A spec's evaluation: one :class:`MeasureEvaluation` per measure, and the files it read."""

    spec: Spec
    measures: tuple[MeasureEvaluation, ...]
    cache_hits: int = 0
    cache_misses: int = 0
    #: The per-topic simulation of each of ``analysis.simulation.measures`` (MATH.md 3e), in spec order.
    simulations: tuple[SimulationResult, ...] = ()
    inputs: tuple[InputFile, ...] = ()
    #: Query texts by topic id, from the spec's ``topics`` file (empty without one).
    texts: Mapping[str, str] = field(default_factory=dict)

    @property
    def simulation(self) -> SimulationResult | None:
        """The first simulated measure's simulation (AP by default), ``None`` without a simulation."""
        return self.simulations[0] if self.simulations else None

    def measure(self, measure: str | None = None) -> MeasureEvaluation:
        """The evaluation of ``measure`` (any spelling ir_measures accepts); the only one when omitted."""
        if measure is None:
            if len(self.measures) != 1:
                raise InputError("several measures were evaluated", hint=f"name one of {', '.join(m.measure for m in self.measures)}")
            return self.measures[0]
        labels = {evaluation.measure for evaluation in self.measures}
        wanted = measure.strip() if measure.strip() in labels else str(parse_measure(measure))  # free table labels as written
        for evaluation in self.measures:
            if evaluation.measure == wanted:
                return evaluation
        raise InputError(f"measure {wanted} was not evaluated", hint=f"the spec has {', '.join(m.measure for m in self.measures)}")

    @property
    def gates(self) -> tuple[GateOutcome, ...]:
        return tuple(outcome for evaluation in self.measures for outcome in evaluation.gates)

    @property
    def passed(self) -> bool:
        return all(outcome.passed for outcome in self.gates)

    def gate(self, measure: str, name: str) -> GateOutcome:
        for outcome in self.measure(measure).gates:
            if outcome.id.endswith(f"::{name}"):
                return outcome
        raise InputError(f"no gate named {name!r} for {measure}")

    def statistic(self, name: str, system: str = CANDIDATE_NAME, measure: str | None = None) -> float | None:
        """One statistic of one system, e.g. ``evaluation.statistic("bias2_plus_var", "production", "AP")``."""
        if name not in STATISTICS and name != "trisk_p":
            raise InputError(f"unknown statistic {name!r}", hint=f"statistics: {', '.join(STATISTICS)}")
        stats = self.measure(measure).system(system)
        if name == "trisk_p":
            return stats.trisk_p
        if name.startswith("gap_"):
            return stats.gap[name.removeprefix("gap_")]
        return stats.values[name]


def _topic_weights(spec: Spec, topics: Sequence[str]) -> np.ndarray | None:
    """The MVE topic weights aligned with ``topics``; every evaluated topic must have one."""
    path = spec.analysis.mve.weights
    if path is None:
        return None
    by_topic = read_topic_weights(path)
    missing = [topic for topic in topics if topic not in by_topic]
    if missing:
        raise InputError(f"no weight for {len(missing)} evaluated topic(s): {_short_list(missing)}", path=path,
                         hint="give every evaluated topic a weight (0 excludes it)")
    return np.array([by_topic[topic] for topic in topics])


def _analysis_settings(spec: Spec, weights: np.ndarray | None) -> AnalysisSettings:
    analysis = spec.analysis
    return AnalysisSettings(
        target=analysis.target,
        normalize=analysis.normalize,
        grouping=analysis.grouping,
        risk_alpha=analysis.risk_alpha,
        mve_alpha=analysis.mve.alpha,
        topic_weights=weights,
        gawm_q=analysis.gawm_q,
        zrisk_against=analysis.zrisk_against,
        variance=analysis.variance,
    )


# A topic moving the statistic by less than this moved it by floating-point noise only.
_NEGLIGIBLE = 1e-12


def _blamed_topics(matrix: ScoreMatrix, statistic: str, candidate: int, reference: int | None, compared: np.ndarray,
                   settings: AnalysisSettings, count: int, texts: Mapping[str, str]) -> tuple[TopicImpact, ...]:
    """The ``count`` topics that moved the gated statistic most the wrong way, worst first.

    A topic's contribution is its share of the change of the statistic from the comparison system to
    the candidate (:meth:`~pytest_bvtest.stats.registry.Statistic.topic_contributions`); only topics
    that moved it in the bad direction are listed. A statistic without a per-topic split (grouped
    bias-variance) falls back on the raw per-topic loss against ``compared``.
    """
    definition = STATISTICS[statistic]
    try:
        contributions = definition.topic_contributions(matrix.scores, candidate, reference, settings)
    except StatisticError:
        contributions = None
    if contributions is None:
        badness, shares = compared - matrix.scores[candidate], None
    else:
        badness, shares = (-contributions if definition.higher_is_better else contributions), contributions
    order = np.argsort(-badness, kind="stable")[:count]
    return tuple(
        TopicImpact(matrix.topics[j], float(matrix.scores[candidate, j]), float(compared[j]), texts.get(matrix.topics[j]),
                    None if shares is None else float(shares[j]))
        for j in order
        if badness[j] > _NEGLIGIBLE
    )


def _judge_gate(spec: Spec, gate: GateSpec, matrix: ScoreMatrix, settings: AnalysisSettings, candidate: int,
                computed: Mapping[str, np.ndarray | None], variations: _VariationMVE | None,
                texts: Mapping[str, str]) -> GateOutcome:
    """Judge one gate; ``computed`` holds the statistics already computed against the spec's reference."""
    statistic = STATISTICS[gate.statistic]
    reference = matrix.index(gate.reference) if gate.reference is not None else None
    # relative to the reference's value: a relative bound, or a calibrated limit on a null of differences
    relative = ((gate.bound is not None and gate.bound.kind in ("max_increase", "max_decrease"))
                or (gate.false_alarm is not None and not null_of_own_value(gate.statistic)))
    reusable = not statistic.needs_reference or gate.reference == spec.reference
    values = computed.get(gate.statistic) if reusable else None
    if values is None:
        try:
            values = np.asarray(statistic.compute(matrix.scores, reference, settings), dtype=float)
        except StatisticError as error:
            raise InputError(f"gate {gate.name}: {error}", path=spec.path, line=gate.line) from None
    reference_value = float(values[reference]) if reference is not None and relative else None
    interval = None
    if gate.confidence is not None and gate.statistic == "mve" and variations is not None:
        result = variations.bootstrap(matrix.measure, candidate, reference if relative else None, spec, gate.confidence)
        interval = (float(result.low), float(result.high))
    elif gate.confidence is not None:
        result = paired_bootstrap(
            matrix.scores, gate.statistic, candidate, reference if relative or statistic.needs_reference else None, settings,
            resamples=spec.analysis.bootstrap.resamples, confidence=gate.confidence, seed=spec.analysis.bootstrap.seed,
        )
        interval = (float(result.low), float(result.high))
    null, null_offset = _gate_null(spec, gate, matrix, settings, candidate, reference, values)
    # the topics are blamed against the gate's reference, else the spec's, else the virtual target
    blamed = reference if reference is not None else (matrix.index(spec.reference) if spec.reference is not None else None)
    compared, against = ((matrix.scores[blamed], matrix.systems[blamed]) if blamed is not None
                         else (matrix.scores.max(axis=0), "the virtual target"))
    return judge(
        gate_id=f"{spec.path.name}::{matrix.measure}::{gate.name}",
        statistic=gate.statistic,
        label=statistic.label,
        measure=matrix.measure,
        system=matrix.systems[candidate],
        reference=gate.reference if relative or statistic.needs_reference else None,
        value=float(values[candidate]),
        reference_value=reference_value,
        bound=gate.bound,
        higher_is_better=statistic.higher_is_better,
        null=null,
        null_offset=null_offset,
        false_alarm=gate.false_alarm,
        interval=interval,
        confidence=gate.confidence,
        seed=spec.analysis.bootstrap.seed if gate.confidence is not None else None,
        worst_topics=_blamed_topics(matrix, gate.statistic, candidate, blamed, compared, settings,
                                    spec.analysis.top_topics, texts),
        worst_against=str(against),
        compared_value=None if blamed is None else float(values[blamed]),
        spec_line=gate.line,
    )


def _gate_null(spec: Spec, gate: GateSpec, matrix: ScoreMatrix, settings: AnalysisSettings, candidate: int,
               reference: int | None, values: np.ndarray) -> tuple[SwapNull | None, float]:
    """The gate's null of no change (MATH.md section 7) and the offset that puts it on the value's scale.

    Every gate with a reference gets one, so that plain bounds report their false-alarm rate too;
    the offset is the reference's value when the null is of ``S(candidate) - S(reference)``.
    """
    if reference is None or reference == candidate:
        return None, 0.0
    try:
        calibration = spec.analysis.calibration
        swaps = calibration.swaps
        if swaps is None and gate.false_alarm is None:
            swaps = calibration.plain_bound_swaps  # a reported rate, not a limit: fewer swaps suffice
        null = swap_null(matrix.scores, gate.statistic, candidate, reference, settings, swaps=swaps,
                         seed=calibration.seed)
    except StatisticError as error:
        raise InputError(f"gate {gate.name}: the null of no change: {error}", path=spec.path, line=gate.line) from None
    return null, (0.0 if null.own_value else float(values[reference]))


def _candidate_name(spec: Spec) -> str | None:
    if spec.candidate is None:
        return None
    if isinstance(spec.candidate, RunFile | Run):
        return spec.candidate.name or CANDIDATE_NAME
    return spec.candidate.rename.get(spec.candidate.systems[0], spec.candidate.systems[0])  # type: ignore[union-attr]


def _evaluate_measure(spec: Spec, matrix: ScoreMatrix, settings: AnalysisSettings, variations: _VariationMVE | None,
                      texts: Mapping[str, str], comparisons: tuple[Comparison, ...],
                      simulations: Mapping[str, SimulationResult]) -> MeasureEvaluation:
    if spec.analysis.target_system is not None:  # SIGIR 2013 Sec. 2.5: a named system's scores are the target
        settings = replace(settings, target_system=matrix.index(spec.analysis.target_system))
    candidate_name = _candidate_name(spec)
    reference = matrix.index(spec.reference) if spec.reference is not None else None
    memo: dict[str, object] = {}  # the computations several statistics share: each runs once
    try:
        analysis = BIAS_VARIANCE.of(matrix.scores, reference, settings, memo)
    except StatisticError as error:
        raise InputError(f"{matrix.measure}: {error}", path=spec.path) from None
    rankings = spec.analysis.rankings
    wanted = [*SYSTEM_STATISTICS, *(gate.statistic for gate in spec.gates),
              *((rankings.against, *rankings.statistics) if rankings is not None else ())]
    # MVE over query variations is the variation form, computed with the variations
    # a simulation statistic reads its measure's simulation, not the scores: a gate on it computes it
    values = statistic_values([name for name in wanted if (variations is None or name != "mve")
                               and STATISTICS[name].from_simulation is None], matrix.scores, reference, settings, memo)
    if variations is not None:
        values["mve"] = np.asarray(variations.results[matrix.measure].value)
    fixed_point: GAWMResult | None = memo.get(GAWM_FIXED_POINT.name) if values["gawm"] is not None else None
    trisk_p = values.get(p_value_key("trisk"))
    systems = []
    for i, name in enumerate(matrix.systems):
        role = ROLE_CANDIDATE if name == candidate_name else ROLE_REFERENCE if name == spec.reference else ROLE_BASELINE
        systems.append(
            SystemStatistics(
                name=name,
                role=role,
                values={key: (None if values[key] is None else float(values[key][i])) for key in SYSTEM_STATISTICS},
                trisk_p=None if trisk_p is None else float(trisk_p[i]),
                gap={key: float(getattr(analysis.gap, key)[i]) for key in GAP_TERMS},
                missing_topics=matrix.missing_topics(name),
                ignored_topics=tuple(matrix.ignored_topics.get(name, ())),
                missing_queries=() if variations is None else variations.missing_queries.get(name, ()),
            )
        )
    gates: list[GateOutcome] = []
    if candidate_name is not None:
        candidate = matrix.index(candidate_name)
        for gate in spec.gates:
            if gate.measure is None or str(gate.measure) == matrix.measure:
                gated = _simulation_matrix(matrix, simulations, gate.statistic)
                gates.append(_judge_gate(spec, gate, gated, settings, candidate, values, variations, texts))
    method = MVE_INTER_TOPIC if variations is None else variations.method
    guards = _guards(matrix, analysis, settings, candidate_name, spec.reference, comparisons, spec.analysis.guards)
    gates = [with_guards(outcome, guards) for outcome in gates]
    mve = _mean_variance_details(spec, matrix, settings, variations, candidate_name)
    return MeasureEvaluation(matrix.measure, matrix, settings, analysis, tuple(systems), tuple(gates), candidate_name,
                             spec.reference, method, comparisons, mve=mve, gawm=fixed_point,
                             hits=hits(matrix.scores) if spec.analysis.hits else None,
                             rankings=None if rankings is None else _rankings(spec, matrix, values), guards=guards)


def _simulation_matrix(matrix: ScoreMatrix, simulations: Mapping[str, SimulationResult], statistic: str) -> ScoreMatrix:
    """The matrix a gate on ``statistic`` reads: the scores, or for a simulation statistic each system's
    per-topic term of the measure's simulation (MATH.md 3e), in the matrix's system and topic order."""
    source = STATISTICS[statistic].from_simulation
    if source is None:
        return matrix
    result = simulations[matrix.measure]  # the spec refuses a simulation gate on a measure not simulated
    rows = [result.system_names.index(name) for name in matrix.systems]
    columns = [result.topic_ids.index(topic) for topic in matrix.topics]
    return replace(matrix, scores=np.asarray(source(result), dtype=float)[np.ix_(rows, columns)])


def _mean_variance_details(spec: Spec, matrix: ScoreMatrix, settings: AnalysisSettings, variations: _VariationMVE | None,
                           candidate: str | None) -> MeanVarianceDetails:
    """The MVE terms of every system in the form used, and the alpha sweep when the spec asks for it."""
    if variations is not None:
        result, form = variations.results[matrix.measure], variations.method
    else:
        result = mve_inter_topic(matrix.scores, settings.mve_alpha, settings.topic_weights, variance=settings.variance)
        form = MVE_INTER_TOPIC
    mu, sigma2 = np.asarray(result.mu, dtype=float), np.asarray(result.sigma2, dtype=float)
    sweep = None
    if spec.analysis.mve.sweep is not None and len(matrix.systems) >= 2:
        grid = spec.analysis.mve.sweep
        alphas = np.linspace(grid.low, grid.high, grid.steps)
        swept = mve_alpha_sweep(mu, sigma2, alphas)
        flips = {}
        if candidate is not None:
            index = matrix.index(candidate)
            flips = {name: crossing_alpha(mu[index], sigma2[index], mu[i], sigma2[i])
                     for i, name in enumerate(matrix.systems) if i != index}
        ranks = np.array([system_ranks(row, higher_is_better=True) for row in swept])
        sweep = AlphaSweep(alphas, swept, ranks, flips)
    return MeanVarianceDetails(form, spec.analysis.mve.alpha, mu, sigma2, np.asarray(result.topic_value, dtype=float), sweep)


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
            why = "it needs a reference system" if STATISTICS[name].needs_reference else "it is undefined for these scores"
            raise InputError(f"{matrix.measure}: systems cannot be ranked by {name}: {why}", path=spec.path, line=line)
        oriented[name] = computed if STATISTICS[name].higher_is_better else -computed
    ranks = {name: system_ranks(value, higher_is_better=True) for name, value in oriented.items()}
    agreements = {name: rank_agreement(oriented[wanted.against], oriented[name]) for name in wanted.statistics}
    return Rankings(wanted.against, ranks, agreements)


def _guards(matrix: ScoreMatrix, analysis: BiasVarianceAnalysis, settings: AnalysisSettings, candidate: str | None,
            reference: str | None, comparisons: Sequence[Comparison], thresholds: GuardSettings) -> tuple[Guard, ...]:
    """The guards that fire on one measure's evaluation (:mod:`pytest_bvtest.guards`), most urgent first."""
    scores = matrix.scores
    found = []
    if candidate is not None:
        index = matrix.index(candidate)
        found.append(identical_to_baseline(scores, matrix.systems, index, matrix.measure))
        against = next((comparison for comparison in comparisons if comparison.baseline == reference), None)
        if against is not None:
            mean = float(scores[index].mean())
            found.append(stale_reference(mean, mean - against.difference, against.baseline, against.p_randomization,
                                         matrix.measure, against.permutations, thresholds))
        if reference is not None:
            found.append(reference_missing_topics(scores, matrix.imputed, matrix.topics, index, matrix.index(reference),
                                                  matrix.systems, matrix.measure))
    found.append(unanswered_topics(scores, matrix.topics, matrix.measure, thresholds.unanswered_share))
    bounded_by_one = settings.normalize != "none" or bool(np.all(scores <= 1))
    found.append(target_constant_out_of_range(float(analysis.c), analysis.target_scores, bounded_by_one, matrix.measure))
    return tuple(guard for guard in found if guard is not None)


@dataclass(frozen=True)
class _VariationMVE:
    """Mean-variance results per measure computed over query variations, the form used, and what the
    noise-aware gate needs to resample topics with all their variations."""

    results: Mapping[str, MeanVariance | IntraTopicMeanVariance]
    method: str
    missing_queries: Mapping[str, tuple[str, ...]]
    arranged: Mapping[str, np.ndarray]
    layout: VariationLayout
    weights: np.ndarray | None
    user_probability: np.ndarray | None

    def bootstrap(self, measure: str, candidate: int, reference: int | None, spec: Spec, confidence: float) -> BootstrapInterval:
        """The paired bootstrap over topics of MVE, each resampled topic bringing all its variations."""
        scores, layout, weights = self.arranged[measure], self.layout, self.weights

        def values_of(drawn: np.ndarray) -> np.ndarray:
            return np.asarray(variation_mve(
                scores[:, drawn], spec.analysis.mve.alpha, weights=None if weights is None else weights[drawn],
                popularity=None if layout.popularity is None else layout.popularity[drawn],
                present=layout.present[drawn], user_probability=self.user_probability, variance=spec.analysis.variance,
            ).value)

        return topic_bootstrap(values_of, len(layout.topics), candidate, reference, "mve",
                               resamples=spec.analysis.bootstrap.resamples, confidence=confidence,
                               seed=spec.analysis.bootstrap.seed)


def _variation_matrices(spec: Spec, qrels: Qrels | None, cache: ScoreCache, jobs: int, weights: np.ndarray | None,
                        progress: EvaluationProgress | None = None) -> tuple[dict[Measure, ScoreMatrix], _VariationMVE]:
    """Evaluate every query variation against its topic's qrels (Zuccon et al. CIKM 2016).

    The per-topic matrix the other statistics see holds each topic's popularity-weighted mean over its
    variations; MVE uses the general form (covariance across topics) when variations are aligned by
    user, the intra-topic form with covariance 0 otherwise (MATH.md section 5).
    """
    path = spec.analysis.mve.variations
    assert path is not None
    variations = read_variations(path)
    universe = _variation_universe(variations) if qrels is None else qrels.evaluated_topics()
    in_universe = set(universe)
    variations = [variation for variation in variations if variation.topic_id in in_universe]
    covered = {variation.topic_id for variation in variations}
    uncovered = [topic for topic in universe if topic not in covered]
    if uncovered:
        raise InputError(f"{len(uncovered)} judged topic(s) have no query variation: {_short_list(uncovered)}",
                         path=path, hint="list at least one query (e.g. the title query) for every judged topic")
    order = {topic: j for j, topic in enumerate(universe)}
    variations.sort(key=lambda variation: order[variation.topic_id])
    query_ids = [variation.query_id for variation in variations]
    if qrels is None:
        # per-query score tables only: the tables give the scores, the variations file the topics
        builder = MatrixBuilder(None, cache, jobs=jobs)
        builder.progress = progress
        built = builder.build(list(spec.measures), spec.sources())
        query_matrices = {measure: _in_query_order(matrix, query_ids, path) for measure, matrix in built.items()}
    else:
        query_qrels = Qrels({variation.query_id: qrels.judgments[variation.topic_id] for variation in variations})
        digest = hashlib.blake2b((cache.file_digest(spec.qrels) + cache.file_digest(path)).encode(), digest_size=20).hexdigest()
        builder = MatrixBuilder(query_qrels, cache, qrels_digest=digest, jobs=jobs)
        builder.progress = progress
        query_matrices = builder.build(list(spec.measures), spec.sources())
    popularity = [variation.popularity for variation in variations]
    users = [variation.user for variation in variations]
    layout = variation_layout(
        [variation.topic_id for variation in variations],
        None if None in users else users,
        None if None in popularity else popularity,
    )
    alpha = spec.analysis.mve.alpha
    user_probability = _general_form_users(spec, layout)
    topic_matrices, results, arrangements = {}, {}, {}
    for measure, queries in query_matrices.items():
        arranged = layout.arrange(queries.scores)
        arrangements[str(measure)] = arranged
        intra = mve_intra_topic(arranged, alpha, weights=weights, popularity=layout.popularity, present=layout.present)
        try:
            results[str(measure)] = intra if spec.analysis.variance == "population" and user_probability is None else \
                variation_mve(arranged, alpha, weights=weights, popularity=layout.popularity, present=layout.present,
                              user_probability=user_probability, variance=spec.analysis.variance)
        except StatisticError as error:  # a sample variance of a topic with one variation
            raise InputError(f"MVE: {error}", path=spec.path, line=spec.line_of("analysis", "variance"),
                             hint="give every topic at least 2 variations, or use `variance: population`") from None
        # A topic is missing (and scores 0) only when the run ranks none of its variations; a missing
        # variation alone scores 0 inside its topic's mean and is listed in missing_queries.
        imputed = np.all((layout.arrange(queries.imputed.astype(float)) == 1.0) | ~layout.present, axis=-1)
        topic_matrices[measure] = ScoreMatrix(queries.measure, queries.systems, layout.topics, np.asarray(intra.topic_mu),
                                              imputed, queries.ignored_topics)
    method = MVE_GENERAL if user_probability is not None else MVE_INTRA_TOPIC
    queries = next(iter(query_matrices.values()))  # the same queries are missing under every measure
    missing_queries = {system: tuple(query for query, flag in zip(queries.topics, queries.imputed[i]) if flag)
                       for i, system in enumerate(queries.systems)}
    return topic_matrices, _VariationMVE(results, method, missing_queries, arrangements, layout, weights, user_probability)


def _variation_universe(variations: Sequence[Variation]) -> list[str]:
    """Without qrels the topics are those of the variations file, in order of first appearance."""
    return list(dict.fromkeys(variation.topic_id for variation in variations))


def _in_query_order(matrix: ScoreMatrix, query_ids: Sequence[str], path: Path) -> ScoreMatrix:
    """A per-query table matrix with its columns in the variations file's order; both must list the same queries."""
    missing = [query for query in query_ids if query not in matrix.topics]
    extra = sorted(set(matrix.topics) - set(query_ids))
    if missing or extra:
        problems = ([f"{len(missing)} variation(s) without a score: {_short_list(missing)}"] if missing else []) + \
                   ([f"{len(extra)} scored query id(s) not in the variations file: {_short_list(extra)}"] if extra else [])
        raise InputError(f"the per-query score tables and the variations file disagree: {'; '.join(problems)}", path=path,
                         hint="the tables' topic column holds query ids; list each of them once in the variations file")
    columns = [matrix.topics.index(query) for query in query_ids]
    return ScoreMatrix(matrix.measure, matrix.systems, tuple(query_ids), matrix.scores[:, columns],
                       matrix.imputed[:, columns], matrix.ignored_topics)


def _general_form_users(spec: Spec, layout: VariationLayout) -> np.ndarray | None:
    """The user probabilities of the general MVE form, or ``None`` for the intra-topic form.

    ``mve.form: auto`` takes the general form whenever it is defined: variations aligned by user and
    a popularity that gives each user the same share of every topic (MATH.md section 5 PIN).
    ``general`` asks for it and is an error where it is not defined; ``intra-topic`` never uses it.
    """
    form = spec.analysis.mve.form
    if form == "intra-topic":
        return None
    probability = layout.user_probability()
    if probability is None and form == "general":
        why = ("every topic needs the same users, one query each" if not layout.aligned_by_user
               else "a user's popularity must be the same share of every topic (it is the user's probability)")
        raise InputError(f"the general MVE form is not defined for these query variations: {why}",
                         path=spec.path, line=spec.line_of("analysis", "mve", "form"),
                         hint="use `form: intra-topic` (covariance 0 across topics) or `form: auto`")
    return probability


def _short_list(items: Sequence[str], limit: int = 10) -> str:
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _simulate(spec: Spec, qrels: Qrels, topics: Sequence[str], systems: Sequence[str]) -> dict[str, SimulationResult]:
    """Per-topic bias-variance over simulated collections (MATH.md section 3e) for every system, by measure."""
    settings = spec.analysis.simulation
    assert settings is not None
    runs = []
    for source in spec.sources():
        if isinstance(source, ScoreTableFile):
            raise InputError("the per-topic simulation needs run files: per-topic tables have no rankings",
                             path=spec.path, line=spec.line_of("analysis", "simulation"))
        runs.append(source if isinstance(source, Run) else read_run(source.path, tag=source.tag))
    lists = [retrieved_lists(run, qrels, topics) for run in runs]
    results = {}
    for measure in settings.measures:
        form = simulated_form(measure)
        assert form is not None  # the spec admits simulable measures only
        results[str(measure)] = simulate_topic_bias_variance(lists, systems, topics, samples=settings.samples,
                                                             seed=settings.seed, measure=form[0], cutoff=form[1])
    return results


#: How a user allows writes outside the project (the spec's ``cache:``, ``--bvtest-update``, ini report paths).
ALLOW_OUTSIDE_OPTIONS = "--bvtest-allow-outside-project (pytest) or --allow-outside-project (bvtest check)"


def _spec_cache_folder(spec: Spec, cache_dir: str | os.PathLike[str] | None, use_cache: bool,
                       allow_outside: bool) -> Path | None:
    """The cache folder: the caller's ``cache_dir`` (from the command line), else the spec's ``cache``,
    which must lie inside the project unless ``allow_outside``."""
    if not use_cache:
        return None
    if cache_dir:
        return Path(cache_dir)
    if spec.cache is not None and not allow_outside:
        try:
            require_inside(spec.cache, project_root(spec.folder), "the cache folder", allow_option=ALLOW_OUTSIDE_OPTIONS)
        except InputError as error:
            raise InputError(f"cache: {error.message}", path=spec.path, line=spec.line_of("cache"), hint=error.hint) from None
    return spec.cache


def evaluate_spec(spec: Spec, *, cache_dir: str | os.PathLike[str] | None = None, use_cache: bool = True,
                  allow_outside: bool = False, jobs: int = 1, progress: EvaluationProgress | None = None) -> Evaluation:
    """Evaluate every measure of ``spec``: matrices, statistics of every system, gate outcomes.

    ``progress``, when given, is kept up to date for a :class:`~pytest_bvtest.progress.ProgressLine`.

    ``allow_outside`` lets the spec's ``cache:`` folder lie outside the project (see
    :func:`~pytest_bvtest.io.textfiles.project_root`); ``jobs > 1`` evaluates the run files that miss
    the cache in that many processes at once.
    """
    cache = ScoreCache(_spec_cache_folder(spec, cache_dir, use_cache, allow_outside))
    qrels = read_qrels(spec.qrels) if spec.qrels is not None else None
    variations = None
    if spec.analysis.mve.variations is not None:
        if qrels is None and not all(isinstance(source, ScoreTableFile) for source in spec.sources()):
            raise InputError("query variations from run files need relevance judgments", path=spec.path,
                             hint="add `qrels:`, or give every system as a per-query score table")
        # every judged topic must have a variation, so the topics are the qrels universe, in its order
        if qrels is not None:
            weights = _topic_weights(spec, qrels.evaluated_topics())
        else:
            weights = _topic_weights(spec, _variation_universe(read_variations(spec.analysis.mve.variations)))
        matrices, variations = _variation_matrices(spec, qrels, cache, jobs, weights, progress)
    else:
        builder = MatrixBuilder(qrels, cache, jobs=jobs)
        builder.progress = progress
        matrices = builder.build(list(spec.measures), spec.sources())
        weights = _topic_weights(spec, next(iter(matrices.values())).topics)
    if progress is not None:
        progress.stage = "computing statistics and gates"
    settings = _analysis_settings(spec, weights)
    texts = read_topic_texts(spec.topics) if spec.topics is not None else {}
    candidate_name = _candidate_name(spec)
    ordered = [matrices[measure] for measure in spec.measures]
    simulations: dict[str, SimulationResult] = {}
    if spec.analysis.simulation is not None:
        if qrels is None or variations is not None:
            raise InputError("the per-topic simulation needs run files and qrels, without query variations",
                             path=spec.path, line=spec.line_of("analysis", "simulation"))
        # before the gates: a gate on a simulation statistic reads its measure's simulation
        simulations = _simulate(spec, qrels, ordered[0].topics, ordered[0].systems)
    comparisons = ([()] * len(ordered) if candidate_name is None
                   else compare_with_baselines(ordered, candidate_name, spec.analysis.bootstrap.seed))
    measures = _family_wise(spec, tuple(_evaluate_measure(spec, matrix, settings, variations, texts, compared, simulations)
                                        for matrix, compared in zip(ordered, comparisons)))
    return Evaluation(spec, measures, cache.hits, cache.misses, tuple(simulations.values()), input_files(spec, cache),
                      texts)


def _family_wise(spec: Spec, measures: tuple[MeasureEvaluation, ...]) -> tuple[MeasureEvaluation, ...]:
    """The spec's calibrated gates, on every measure, judged again as families (``analysis.calibration.family``)."""
    if not spec.analysis.calibration.family:
        return measures
    families: dict[tuple[object, ...], list[tuple[int, int]]] = {}
    for m, evaluation in enumerate(measures):
        for g, outcome in enumerate(evaluation.gates):
            key = family_key(outcome, evaluation.topics)
            if key is not None:
                families.setdefault(key, []).append((m, g))
    gates = [list(evaluation.gates) for evaluation in measures]
    for members in families.values():
        if len(members) > 1:  # a family of one is the gate's own calibration
            for (m, g), outcome in zip(members, calibrate_family([gates[m][g] for m, g in members])):
                gates[m][g] = with_guards(outcome, measures[m].guards)
    return tuple(replace(evaluation, gates=tuple(judged)) for evaluation, judged in zip(measures, gates))


def replay_baselines(spec: Spec, *, cache_dir: str | os.PathLike[str] | None = None,
                     use_cache: bool = True) -> dict[str, Evaluation]:
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


#: What can stand in for a spec's candidate: a run file, a source, or an in-memory ``{qid: {docno: score}}``.
CandidateRun = str | os.PathLike[str] | RunFile | ScoreTableFile | Run | Mapping[str, Mapping[str, float]]


def spec_under_test(spec: Spec | str | os.PathLike[str], run: CandidateRun | None = None, *,
                    name: str = CANDIDATE_NAME) -> Spec:
    """``spec`` (a :class:`Spec` or its path) with its candidate replaced by ``run`` when one is given.

    The one place a candidate override is applied (``--bvtest-run`` for the gates, the ``bvtest``
    fixture and ``--bvtest-update``; ``bvtest check --run``; the fixture's ``run`` argument), so every
    check of a session judges the same candidate. A dict run is named ``name``.
    """
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    if run is None:
        return spec
    if isinstance(run, Mapping):
        run = Run(name=name, scores={str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items()})
    if isinstance(run, Run | RunFile | ScoreTableFile):
        return spec.with_candidate(run)
    return spec.with_candidate_run(run)


@dataclass
class BvtestAPI:
    """What the ``bvtest`` fixture hands a test: load a spec, evaluate a run, read any statistic.

    ``run`` and ``specs`` are the session's: the candidate the gates judge (``--bvtest-run``) and the
    specs it tests (``--bvtest-spec``, else the collected ``bvtest*.yaml``). :meth:`evaluate` uses
    them when it is not given a run or a spec, so a team's own rules check the pull request's run.
    """

    cache_dir: str | os.PathLike[str] | None = None
    use_cache: bool = True
    allow_outside: bool = False
    run: str | os.PathLike[str] | None = None
    specs: Sequence[str | os.PathLike[str]] = ()
    jobs: int = 1

    def load_spec(self, path: str | os.PathLike[str]) -> Spec:
        return load_spec(path)

    def evaluate(self, spec: Spec | str | os.PathLike[str] | None = None, run: CandidateRun | None = None,
                 *, name: str = CANDIDATE_NAME) -> Evaluation:
        """Evaluate ``spec`` (the session's only spec when omitted) with ``run`` as its candidate.

        ``run`` is a run file, a :class:`Run`, or a dict ``{qid: {docno: score}}`` (named ``name``);
        when omitted, the session's ``--bvtest-run`` if given, else the spec's own candidate.
        """
        if spec is None:
            spec = self.session_spec()
        return evaluate_spec(spec_under_test(spec, run if run is not None else self.run, name=name),
                             cache_dir=self.cache_dir, use_cache=self.use_cache, allow_outside=self.allow_outside,
                             jobs=self.jobs)

    def session_spec(self) -> Path:
        """The session's spec, when there is exactly one."""
        specs = list(dict.fromkeys(Path(path) for path in self.specs))
        if len(specs) != 1:
            found = f"found {', '.join(map(str, specs))}" if specs else "none was given or collected"
            raise InputError("evaluate() without a spec needs exactly one spec in the session",
                             hint=f"{found}; pass the spec's path, e.g. bvtest.evaluate('bvtest.yaml')")
        return specs[0]

    def statistic(self, evaluation: Evaluation, name: str, system: str = CANDIDATE_NAME, measure: str | None = None) -> float | None:
        return evaluation.statistic(name, system, measure)


def update_reference(evaluation: Evaluation, *, force: bool = False, allow_outside: bool = False,
                     keep_folder: str | os.PathLike[str] | None = None) -> list[str]:
    """Make the candidate run the stored reference run (``--bvtest-update``); say what changed.

    Parameters
    ----------
    evaluation:
        The spec's evaluation; when one of its gates failed the update is refused unless ``force``.
    force:
        Update even though a gate failed (``--bvtest-update-force``).
    allow_outside:
        Allow a reference file outside the project (after following symbolic links).
    keep_folder:
        Where the previous reference is kept (``previous/NAME.previous-HASH``); by default the
        spec's cache folder. With neither, the previous version is left to version control.

    The reference keeps its format: a ``.gz`` file stays gzip, and a reference that is one tag of a
    multi-system run file has only its own lines replaced (the candidate's lines, tagged with the
    reference's tag). Every write is atomic: killed at any moment, each file is complete-old or
    complete-new.
    """
    spec = evaluation.spec
    if spec.candidate is None or spec.reference is None:
        return [f"bvtest: {spec.path.name}: nothing to update (the spec has no candidate or no reference)"]
    stored = spec.baselines[spec.reference]
    if not isinstance(stored, RunFile) or not isinstance(spec.candidate, RunFile):
        raise InputError(
            "--bvtest-update needs the reference and the candidate to be run files",
            path=spec.path, line=spec.line_of("reference"),
            hint="per-topic tables are not rewritten; update the table in your own pipeline",
        )
    failed = [outcome.id for outcome in evaluation.gates if not outcome.passed]
    if failed and not force:
        raise InputError(
            f"reference {spec.reference!r} not updated: {len(failed)} gate(s) failed: {', '.join(failed)}",
            path=spec.path,
            hint="update after the gates pass, or on purpose with --bvtest-update-force (bvtest check --update-force)",
        )
    if not allow_outside:
        try:
            require_inside(stored.path, project_root(spec.folder), "the reference run", allow_option=ALLOW_OUTSIDE_OPTIONS)
        except InputError as error:
            raise InputError(f"not updated: {error.message}", path=spec.path, line=spec.line_of("baselines", spec.reference),
                             hint=error.hint) from None
    old_text = "".join(f"{line}\n" for _, line in numbered_lines(stored.path))
    new_text = _replaced_run_text(stored, spec.candidate)
    if new_text == old_text:
        return [f"bvtest: reference {spec.reference!r} ({stored.path}) already holds the candidate run; nothing changed"]
    lines = []
    folder = keep_folder if keep_folder is not None else spec.cache
    if folder is not None:
        old = stored.path.read_bytes()
        kept = Path(folder) / "previous" / f"{stored.path.name}.previous-{hashlib.blake2b(old, digest_size=6).hexdigest()}"
        if not kept.exists():
            atomic_write_bytes(kept, old)
        kept_line = f"bvtest: previous reference kept as {kept}"
    else:
        kept_line = f"bvtest: previous reference not kept (no cache folder): restore it from version control (git checkout -- {stored.path.name})"
    data = new_text.encode("utf-8")
    atomic_write_bytes(stored.path, gzip.compress(data, mtime=0) if stored.path.name.endswith(".gz") else data)
    lines += [
        f"bvtest: reference {spec.reference!r} updated: {stored.path} now holds the candidate {spec.candidate.path}"
        + (f" (tag {stored.tag!r}, the file's other systems kept)" if stored.tag is not None else ""),
        kept_line,
    ]
    if failed:
        lines.append(f"bvtest: note: updated as forced although {len(failed)} gate(s) failed: {', '.join(failed)}")
    for measure in evaluation.measures:
        before = measure.system(spec.reference).values["mean"]
        after = measure.system(measure.candidate).values["mean"] if measure.candidate else None
        if before is not None and after is not None:
            lines.append(f"bvtest:   {measure.measure} mean {before:.4f} -> {after:.4f} ({after - before:+.4f})")
    return lines


def _replaced_run_text(stored: RunFile, candidate: RunFile) -> str:
    """The reference file's new text: the candidate's run lines (its selected tag only), in place of the
    whole file, or of the reference tag's lines (re-tagged) when the reference is one system of several."""
    new_lines = [line for _, line in numbered_lines(candidate.path)
                 if candidate.tag is None or _run_tag(line) == candidate.tag]
    if stored.tag is None:
        return "".join(f"{line}\n" for line in new_lines)
    retagged = [" ".join([*line.split()[:5], stored.tag]) for line in new_lines if _run_tag(line) is not None]
    text: list[str] = []
    for _, line in numbered_lines(stored.path):
        if _run_tag(line) != stored.tag:
            text.append(line)
        elif retagged:
            text += retagged
            retagged = []
    return "".join(f"{line}\n" for line in text)


def _run_tag(line: str) -> str | None:
    """The tag of a run line; ``None`` for a comment, a blank line or anything else."""
    fields = line.split()
    return fields[5] if len(fields) == 6 and not fields[0].startswith("#") else None
