"""What an evaluation produces: the result types every report is written from.

:func:`~pytest_bvtest.judging.pipeline.evaluate_spec` builds an :class:`Evaluation`: one :class:`MeasureEvaluation`
per measure (matrix, target, every system's statistics, gate outcomes, guards) and the files it read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pytest_bvtest import CANDIDATE_NAME
from pytest_bvtest.errors import InputError
from pytest_bvtest.judging.comparisons import Comparison, PairwiseComparisons
from pytest_bvtest.judging.decision import Verdict
from pytest_bvtest.judging.guards import Guard
from pytest_bvtest.judging.judgments import MeasureJudgments, UnjudgedDocuments
from pytest_bvtest.judging.plausible import PlausibleGradings
from pytest_bvtest.judging.predictions import PredictedGrades
from pytest_bvtest.judging.variations import MVE_INTER_TOPIC, MeanVarianceDetails
from pytest_bvtest.scoring.cache import ScoreCache
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.spec.model import AnalysisSettings, GateSpec, Spec
from pytest_bvtest.stats.biasvar import BiasVarianceAnalysis, Tradeoff
from pytest_bvtest.stats.gawm import GAWMResult, HITSResult
from pytest_bvtest.stats.rankings import RankAgreement
from pytest_bvtest.stats.registry import STATISTICS, SYSTEM_KEYS
from pytest_bvtest.stats.runs import RunSpread
from pytest_bvtest.stats.simulation import SimulationResult

ROLE_CANDIDATE = "candidate"

ROLE_REFERENCE = "reference"

ROLE_BASELINE = "baseline"


@dataclass(frozen=True)
class SystemStatistics:
    """Every statistic of one system under one measure; ``None`` where it is not computed. ``runs`` is the spread
    of a system given as several runs (its statistics read their per-topic mean)."""

    name: str
    role: str
    values: Mapping[str, float | None]
    gap: Mapping[str, float]
    missing_topics: tuple[str, ...]
    ignored_topics: tuple[str, ...]
    missing_queries: tuple[str, ...] = ()
    runs: RunSpread | None = None


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
    gates: tuple[Verdict, ...]
    candidate: str | None
    reference: str | None
    mve_method: str = MVE_INTER_TOPIC
    comparisons: tuple[Comparison, ...] = ()
    mve: MeanVarianceDetails | None = None
    gawm: GAWMResult | None = None
    hits: HITSResult | None = None
    rankings: Rankings | None = None
    guards: tuple[Guard, ...] = ()
    #: What was judged of every system at the measure's depth (docs/mathematics.md §8); ``None`` where it is not
    #: known (a system from a per-topic table, query variations, Judged@k itself).
    judgments: MeasureJudgments | None = None
    #: Every system against every other on the mean (``analysis.compare``); ``None`` where nothing is compared.
    pairwise: PairwiseComparisons | None = None

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
    seen: dict[tuple[str, str], InputFile] = {}
    for role, name, path in spec.files():
        if (role, str(path)) not in seen:
            seen[(role, str(path))] = InputFile(role, name, str(path), cache.file_digest(path))
        if role == "spec" and spec.qrels_judgments is not None and spec.qrels_source is not None:
            # judgments held in memory: named by what they are, with the digest of what they judge (the history
            # tells a change of qrels by it)
            seen[("qrels", spec.qrels_source)] = InputFile(
                "qrels", None, spec.qrels_source, spec.qrels_judgments.sha256
            )
    return tuple(seen.values())


@dataclass(frozen=True)
class Evaluation:
    """A spec's evaluation: one :class:`MeasureEvaluation` per measure, and the files it read."""

    spec: Spec
    measures: tuple[MeasureEvaluation, ...]
    #: The per-topic simulation of each of ``analysis.simulation.measures`` (docs/mathematics.md §3e), in spec order.
    simulations: tuple[SimulationResult, ...] = ()
    inputs: tuple[InputFile, ...] = ()
    #: Query texts by topic id, from the spec's ``topics`` file (empty without one).
    texts: Mapping[str, str] = field(default_factory=dict)
    #: The unjudged documents of the candidate's and its references' top d, read for the gates' corners (``None``
    #: when no gate has any): what ``bvtest judge`` lists (:mod:`~pytest_bvtest.judging.documents`).
    unjudged: UnjudgedDocuments | None = None
    #: The plausible gradings the gates whose corners disagree were weighed over (``None`` when none was).
    gradings: PlausibleGradings | None = None
    #: The predicted grades of ``judgments.predictions``, read against the qrels (``None`` without them).
    predictions: PredictedGrades | None = None

    @property
    def simulation(self) -> SimulationResult | None:
        """The first simulated measure's simulation (AP by default), ``None`` without a simulation."""
        return self.simulations[0] if self.simulations else None

    def measure(self, measure: str | None = None) -> MeasureEvaluation:
        """The evaluation of ``measure`` (any spelling ir_measures accepts); the only one when omitted."""
        if measure is None:
            if len(self.measures) != 1:
                raise InputError(
                    "several measures were evaluated", hint=f"name one of {', '.join(m.measure for m in self.measures)}"
                )
            return self.measures[0]
        labels = {evaluation.measure for evaluation in self.measures}
        wanted = (
            measure.strip() if measure.strip() in labels else str(parse_measure(measure))
        )  # free table labels as written
        for evaluation in self.measures:
            if evaluation.measure == wanted:
                return evaluation
        raise InputError(
            f"measure {wanted} was not evaluated", hint=f"the spec has {', '.join(m.measure for m in self.measures)}"
        )

    @property
    def gates(self) -> tuple[Verdict, ...]:
        return tuple(outcome for evaluation in self.measures for outcome in evaluation.gates)

    @property
    def passed(self) -> bool:
        return all(outcome.passed for outcome in self.gates)

    def gate(self, measure: str, gate: GateSpec | str) -> Verdict:
        """The outcome of ``gate`` (the spec's gate, or its name) on ``measure``."""
        for outcome in self.measure(measure).gates:
            if outcome.gate is not None and (outcome.gate == gate or outcome.gate.name == gate):
                return outcome
        raise InputError(f"no gate named {getattr(gate, 'name', gate)!r} for {measure}")

    def statistic(self, name: str, system: str = CANDIDATE_NAME, measure: str | None = None) -> float | None:
        """One statistic of one system, e.g. ``evaluation.statistic("bias2_plus_var", "production", "AP")``."""
        if name not in STATISTICS and name not in SYSTEM_KEYS:
            raise InputError(f"unknown statistic {name!r}", hint=f"statistics: {', '.join(STATISTICS)}")
        stats = self.measure(measure).system(system)
        if name.startswith("gap_"):
            return stats.gap[name.removeprefix("gap_")]
        return stats.values[name]
