"""The spec's model: the value types of a validated ``bvtest.yaml`` and every default, written once.

The bottom of the house: it imports the messages, the argument checks and the in-memory run type,
nothing of the pipeline, so every layer above may use these types. :mod:`pytest_bvtest.spec.reader`
builds a :class:`Spec` from YAML (with the line of every key); the statistics read
:class:`AnalysisSettings`, the guards :class:`GuardSettings`, the calibration :class:`CalibrationSpec`.
The full key reference is ``docs/spec.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pytest_bvtest import CANDIDATE_NAME
from pytest_bvtest.checks import whole_number
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run
from pytest_bvtest.spec.measures import Measure, TableMeasure

BOUND_KEYS = ("max", "min", "max_increase", "max_decrease")
#: Bounds that cap a value from above; the others cap it from below.
UPPER_BOUNDS = ("max", "max_increase")

#: Monte-Carlo swaps of a ``false_alarm`` gate's null of no change (docs/mathematics.md §7).
DEFAULT_SWAPS = 10_000
#: ... for a statistic without a sufficient matrix, which recomputes every system per swap (GAWM).
DEFAULT_SWAPS_FULL_MATRIX = 1_000
#: Swaps behind the false-alarm rate a plain bound reports (a rate, not a limit: fewer suffice).
RATE_SWAPS = 1_000
#: Paired-bootstrap resamples of a noise-aware gate (``confidence``).
DEFAULT_RESAMPLES = 1000
#: Seeded draws of a regression that measure a gate's power (docs/mathematics.md §9).
DEFAULT_POWER_DRAWS = 1000
#: A gate whose power's draws are evaluated on stacks of matrices (no sum form: ZRisk, GeoRisk, GAWM, grouping) has
#: it measured by default while draws x topics x rows stay below this (about a second); ``bvtest calibrate`` always.
STACKED_POWER_CELLS = 1_000_000
#: The regression models of a gate's power and of ``detect:`` (docs/mathematics.md §9): a drop on every topic,
#: or on a random 10% of them.
REGRESSION_MODELS = ("uniform", "few")
#: Topics per group of a difficulty or random grouping when the spec gives no ``size`` (docs/mathematics.md §3b).
DEFAULT_GROUP_SIZE = 5

#: More than this share of the topics missed by every system is a warning, not a note.
UNANSWERED_SHARE = 0.10
#: The stale-reference guard needs the candidate's mean gain over the reference to be this clear...
STALE_REFERENCE_P = 0.01
#: ...and at least this large, as a share of the reference's mean.
STALE_REFERENCE_GAIN = 0.10


@dataclass(frozen=True)
class Bound:
    """A gate's bound: ``kind`` is one of :data:`BOUND_KEYS`; ``relative`` when written as ``N%``."""

    kind: str
    amount: float
    relative: bool

    def __str__(self) -> str:
        amount = f"{self.amount * 100:g}%" if self.relative else f"{self.amount:g}"
        return f"{self.kind} {amount}"


@dataclass(frozen=True)
class DetectAim:
    """A gate's stated aim (``detect:``): the drop in the per-topic score it must catch with 80% power.

    ``drop`` is in the measure's units, or a share of the reference's mean score when ``relative``
    (``detect: 5%``); ``model`` is ``"uniform"`` (the drop on every topic) or ``"few"`` (on a random 10% of
    them), docs/mathematics.md §9.
    """

    drop: float
    model: str = "uniform"
    relative: bool = False


@dataclass(frozen=True)
class GateSpec:
    """One gate: a statistic, a bound and/or a false-alarm rate, optionally noise-awareness, a measure, a reference.

    ``bound`` is ``None`` for a gate limited by ``false_alarm`` alone (a calibrated limit, docs/mathematics.md
    §7); with both, the gate fails only when both limits are crossed. ``segment`` restricts the gate to the topics
    of one segment of the topic file (``per_segment: true`` gives one such gate per segment, each named
    ``NAME[SEGMENT]``).
    """

    statistic: str
    bound: Bound | None
    name: str
    line: int
    confidence: float | None = None
    measure: Measure | None = None
    reference: str | None = None
    false_alarm: float | None = None
    detect: DetectAim | None = None
    segment: str | None = None

    @property
    def kind(self) -> str:
        """The bound's kind, or ``false_alarm`` for a calibrated limit alone (distinguishes same-named gates)."""
        return self.bound.kind if self.bound is not None else "false_alarm"


@dataclass(frozen=True)
class RunFile:
    """A system given as a TREC run file; ``name`` overrides the run's tag, ``tag`` selects one."""

    path: Path
    name: str | None = None
    tag: str | None = None


@dataclass(frozen=True)
class ScoreTableFile:
    """Systems given as a per-topic score table; ``systems`` selects some of them (all by default)."""

    path: Path
    format: str = "auto"
    systems: tuple[str, ...] | None = None
    rename: Mapping[str, str] = field(default_factory=dict)


#: One run of a system: a run file, one system of a per-topic table, or an in-memory run.
SingleSource = RunFile | ScoreTableFile | Run


@dataclass(frozen=True)
class RepeatedRuns:
    """One system given as several runs of a nondeterministic engine (approximate nearest-neighbour search, GPU
    re-rankers), each a :data:`SingleSource` scored as this system.

    Its per-topic score is the mean over its runs, and the null of no change draws one of them to stand for the
    system in each swap (docs/mathematics.md §7, "Run-to-run noise").
    """

    runs: tuple[SingleSource, ...]
    name: str

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise StatisticError(f"repeated runs need at least 2 runs, got {len(self.runs)}")


#: What a system can be given as: a run file, a per-topic table, an in-memory run, or several runs of one system.
Source = RunFile | ScoreTableFile | Run | RepeatedRuns


@dataclass(frozen=True)
class DifficultyGrouping:
    """Group topics by difficulty into groups of about ``size`` topics.

    ``difficulty`` is ``"target"`` (raw ``x_T`` ascending, docs/mathematics.md §3b) or ``"mean"`` (the raw mean over
    systems ascending; CIKM 2014 Sec. 3.2.2 mentions both).
    """

    size: int
    difficulty: str = "target"

    def __post_init__(self) -> None:
        whole_number(self.size, "group size")
        if self.difficulty not in ("target", "mean"):
            raise StatisticError(f"difficulty is measured by 'target' or 'mean', got {self.difficulty!r}")


@dataclass(frozen=True)
class RandomGrouping:
    """Group topics at random into groups of about ``size`` topics, ``repeats`` times, seeded."""

    size: int
    repeats: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        whole_number(self.size, "group size")
        whole_number(self.repeats, "number of random groupings")
        whole_number(self.seed, "seed", minimum=0)


@dataclass(frozen=True)
class SampledGrouping:
    """IPM 2022's sampled groups: ``groups`` groups of ``size`` topics, each drawn without replacement
    from the whole topic set (groups may share topics), ``repeats`` times, seeded."""

    size: int = 10
    groups: int = 50
    repeats: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        whole_number(self.size, "group size")
        whole_number(self.groups, "number of sampled groups")
        whole_number(self.repeats, "number of sampled groupings")
        whole_number(self.seed, "seed", minimum=0)


Grouping = DifficultyGrouping | RandomGrouping | SampledGrouping


@dataclass(frozen=True)
class AlphaSweepSpec:
    """MVE's value and rank of every system over ``steps`` alphas from ``low`` to ``high`` (Zuccon et al. Figs. 2-4)."""

    low: float = -5.0
    high: float = 5.0
    steps: int = 21


@dataclass(frozen=True)
class MeanVarianceSpec:
    """Mean-variance evaluation (docs/mathematics.md §5): the risk preference, topic weights, query variations,
    the form over variations and the alpha sweep."""

    alpha: float = 2.0
    weights: Path | None = None
    variations: Path | None = None
    form: str = "auto"
    sweep: AlphaSweepSpec | None = None


@dataclass(frozen=True)
class RankingSpec:
    """Rank systems by each of ``statistics`` and compare with the ranking by ``against`` (Kendall, tau_AP)."""

    against: str = "mean"
    statistics: tuple[str, ...] = ("mve", "gawm", "bias2_plus_var")


#: The paired tests of the all-pairs comparison (``bvtest compare``, the HTML report), by name.
COMPARISON_TESTS = ("t", "wilcoxon", "randomization")
#: Its corrections for multiple comparisons, by statsmodels' names.
COMPARISON_CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "none")


@dataclass(frozen=True)
class CompareSpec:
    """The all-pairs comparison of the systems on each measure (``analysis.compare``): the paired ``test`` that marks
    a difference significant, the ``correction`` of its p-values over the pairs of one measure, and the level
    ``alpha`` they are read at."""

    test: str = "t"
    correction: str = "holm"
    alpha: float = 0.05


@dataclass(frozen=True)
class SimulationSpec:
    """The per-topic simulation (docs/mathematics.md §3e): ``samples`` collections drawn with ``seed``,
    scored by each of ``measures``."""

    samples: int = 100
    seed: int = 0
    measures: tuple[Measure, ...] = (Measure("AP"),)


@dataclass(frozen=True)
class BootstrapSpec:
    """The paired bootstrap of noise-aware gates (``confidence``): ``resamples`` drawn with ``seed``."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0


@dataclass(frozen=True)
class CalibrationSpec:
    """The swap null of calibrated limits (docs/mathematics.md §7): ``swaps`` Monte-Carlo swaps drawn with ``seed``.

    ``swaps`` ``None`` takes the defaults: the statistic's for a ``false_alarm`` gate (10,000; GAWM
    1,000), ``plain_bound_swaps`` for the false-alarm rate a plain bound reports (not a spec key:
    ``bvtest calibrate`` sets it to ``None``, the statistic's default, for precise limits).
    ``family`` (the default) holds the ``false_alarm`` gates that share their swaps and their rate to that rate
    together (Westfall-Young min-p, :func:`~pytest_bvtest.stats.calibration.family_level`): the CI check is one red
    or green, so its false-alarm rate is the one a spec asks for; off, each gate keeps its rate alone.
    """

    swaps: int | None = None
    seed: int = 0
    family: bool = True
    plain_bound_swaps: int | None = RATE_SWAPS


@dataclass(frozen=True)
class PowerSpec:
    """Each gate's power (docs/mathematics.md §9): ``draws`` seeded draws of a regression, with ``seed``;
    ``enabled`` False (``power: false``) leaves it out. ``stacked_cells`` (not a spec key) is the most
    draws x topics x rows a statistic without a sum form is evaluated on by default; ``None`` (``bvtest
    calibrate``) measures every gate."""

    draws: int = DEFAULT_POWER_DRAWS
    seed: int = 0
    enabled: bool = True
    stacked_cells: int | None = STACKED_POWER_CELLS


@dataclass(frozen=True)
class GuardSettings:
    """The guards' thresholds (the spec's ``analysis.guards``); the defaults are the constants above."""

    unanswered_share: float = UNANSWERED_SHARE
    stale_reference_p: float = STALE_REFERENCE_P
    stale_reference_gain: float = STALE_REFERENCE_GAIN


#: The judging depth d of docs/mathematics.md §8 for a measure without a cut-off (AP, RR, nDCG): how many ranks
#: of a run its judged share and its optimistic value M+ look at (at a run's full depth AP+ sits at its cap).
JUDGING_DEPTH = 10
#: What a gate whose verdict depends on the missing judgments (UNDECIDED) does to CI: ``warn`` (the default:
#: it passes, shown as UNDECIDED with the documents to judge) or ``fail``.
UNDECIDED_POLICIES = ("warn", "fail")
#: How unjudged documents are read (docs/mathematics.md §10): ``plausible`` weighs what they probably are (the corners
#: and, where the corners disagree, the plausible gradings), ``nonrelevant`` counts them non-relevant as trec_eval
#: does (no corners, no draws: the convention of sparse positive-only qrels such as MS MARCO's), ``auto`` the latter
#: for qrels without a judgment below grade 1 and the former otherwise.
UNJUDGED_READINGS = ("auto", "plausible", "nonrelevant")
PLAUSIBLE, NONRELEVANT = UNJUDGED_READINGS[1:]
#: A plausible verdict is decided when it holds in at least this share of the gradings (MATH.md §8: 1 - eps).
VERDICT_CONFIDENCE = 0.95
#: The pool-bias discount lambda of the prior of an unjudged grade (MATH.md §8): an unjudged document of the top d
#: gets each positive grade with lambda times its share among the judged ones. Chosen on benchmarks/bench_judgments.py
#: (docs/judgments.md, "How the defaults were chosen").
POOL_BIAS_DISCOUNT = 0.4
#: How uncertain that discount is: its standard deviation across gradings, drawn per group of documents the same runs
#: retrieve (docs/mathematics.md §10); chosen with the discount.
POOL_BIAS_SPREAD = 0.1
#: How many plausible gradings of the unjudged documents a verdict is weighed over (MATH.md §8: S).
GRADING_DRAWS = 1000


@dataclass(frozen=True)
class JudgmentSettings:
    """The spec's ``judgments`` section (docs/mathematics.md §10): ``depth`` is the judging depth d of a measure
    without a cut-off; ``optimistic_grade`` the grade g+ the unjudged documents get at the optimistic corner
    (``None``: the top grade of the qrels); ``undecided`` whether a verdict the missing judgments decide passes
    with a warning (``warn``) or fails (``fail``); ``unjudged`` how unjudged documents are read
    (:data:`UNJUDGED_READINGS`); ``confidence`` the share of plausible gradings a verdict must hold in to be decided,
    ``discount`` the pool-bias discount of the prior of an unjudged grade, ``draws`` how many gradings, ``seed`` their
    seed; ``discount_sd`` how uncertain that discount is. ``documents`` names the documents' texts (a TSV or JSON
    lines of docno and text), ``predictor`` a command that predicts grades and ``predictions`` the file of its
    predicted grades, kept apart from the qrels (docs/predictions.md)."""

    depth: int = JUDGING_DEPTH
    optimistic_grade: int | None = None
    undecided: str = "warn"
    unjudged: str = "auto"
    confidence: float = VERDICT_CONFIDENCE
    discount: float = POOL_BIAS_DISCOUNT
    discount_sd: float = POOL_BIAS_SPREAD
    draws: int = GRADING_DRAWS
    seed: int = 0
    documents: Path | None = None
    predictor: str | None = None
    predictions: Path | None = None


@dataclass(frozen=True)
class AnalysisSettings:
    """How an evaluation computes its statistics: the spec's ``analysis`` section, the one settings type.

    The reader fills the spec's keys; the pipeline adds, per score matrix, what depends on its rows and
    topics (``topic_weights``, ``target_row``) with :func:`dataclasses.replace`.

    Attributes
    ----------
    target:
        The bias target constant ``c``: ``"mean"`` (docs/mathematics.md §3 PIN, the mean of the virtual
        target) or a number (1 = the metric maximum).
    target_system:
        A baseline whose per-topic scores are the target ``x_T`` of the bias-variance family (SIGIR 2013
        Sec. 2.5); ``None`` for the virtual target (the per-topic max, docs/mathematics.md §2).
    normalize:
        ``"none"``, ``"max-min"``, ``"target-ratio"`` or ``"group-target-ratio"`` (docs/mathematics.md §3c),
        bias-variance family only.
    grouping:
        ``None`` (topics are the samples) or a grouping (docs/mathematics.md §3b), bias-variance family only.
    risk_alpha:
        Extra weight of a loss in URisk, TRisk, ZRisk and GeoRisk (docs/mathematics.md §4). It fixes no
        default; 5 is one of the values the TREC Web track 2013-14 reported (0, 1, 5, 10): a loss counts
        six times a gain of the same size.
    mve:
        Mean-variance evaluation (docs/mathematics.md §5): ``mve.alpha`` is the risk preference of
        ``mu - alpha * sigma2`` (§5 fixes no default; 2 is its golden example's), plus weights and variations.
    gawm_q:
        Conformity exponent ``q`` of GAWM (docs/mathematics.md §6).
    zrisk_against:
        ``"systems"`` (every other system, SIGIR 2016) or ``"target"`` (the virtual target alone, IPM 2022
        Table 8) as the baselines of ZRisk and GeoRisk.
    variance:
        ``"population"`` (docs/mathematics.md's default) or ``"sample"`` (n - 1, IPM 2022 Table 8, Zuccon
        et al.'s pilot) for Var, Bias²+Var, the gap terms and MVE's variance.
    simulation, bootstrap, calibration, power, rankings, hits, top_topics, guards:
        The per-topic simulation (§3e), the noise-aware gates' bootstrap, the null of no change (§7), each
        gate's power (§9), the rankings, HITS, how many topics a gate blames, the guards' thresholds.
    topic_weights:
        Per matrix: topic importance for ``mve``, aligned with the matrix's topics (normalised to sum 1 by
        :mod:`~pytest_bvtest.stats.meanvar`); ``None`` is uniform. Left out of ``==`` (an array).
    target_row:
        Per matrix: the row of ``target_system``.
    """

    target: Literal["mean"] | float = "mean"
    target_system: str | None = None
    normalize: str = "none"
    grouping: Grouping | None = None
    risk_alpha: float = 5.0
    mve: MeanVarianceSpec = field(default_factory=MeanVarianceSpec)
    gawm_q: float = 1.0
    simulation: SimulationSpec | None = None
    bootstrap: BootstrapSpec = field(default_factory=BootstrapSpec)
    calibration: CalibrationSpec = field(default_factory=CalibrationSpec)
    power: PowerSpec = field(default_factory=PowerSpec)
    top_topics: int = 5
    rankings: RankingSpec | None = None
    hits: bool = False
    zrisk_against: str = "systems"
    variance: str = "population"
    guards: GuardSettings = field(default_factory=GuardSettings)
    compare: CompareSpec = field(default_factory=CompareSpec)
    topic_weights: np.ndarray | None = field(default=None, compare=False)
    target_row: int | None = None


@dataclass(frozen=True)
class Spec:
    """A validated spec. ``baselines`` maps names to sources; ``candidate`` is ``None`` for analysis only.

    ``qrels`` is the first qrels file and ``extra_qrels`` those listed after it (a team's own judgments, read as
    one with the first: :meth:`qrels_files`). ``qrels_judgments`` are judgments held in memory instead (a DataFrame
    given to the Python API, or ``qrels: irds:<id>`` read through ir_datasets), named ``qrels_source``.
    """

    path: Path
    measures: tuple[Measure | TableMeasure, ...]
    baselines: Mapping[str, Source]
    qrels: Path | None = None
    candidate: Source | None = None
    reference: str | None = None
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)
    gates: tuple[GateSpec, ...] = ()
    cache: Path | None = None
    topics: Path | None = None
    lines: Mapping[tuple[Any, ...], int] = field(default_factory=dict, repr=False, compare=False)
    judgments: JudgmentSettings = field(default_factory=JudgmentSettings)
    extra_qrels: tuple[Path, ...] = ()
    qrels_judgments: Qrels | None = field(default=None, repr=False, compare=False)
    qrels_source: str | None = None
    #: The candidate's run files as the command line named them (``--bvtest-run``, ``bvtest check --run``), ``None``
    #: for the spec's own candidate: the reports' commands repeat them as they were typed.
    candidate_given: tuple[str, ...] | None = field(default=None, compare=False)

    @property
    def has_qrels(self) -> bool:
        """Whether the spec has relevance judgments: qrels files, or judgments held in memory."""
        return self.qrels is not None or self.qrels_judgments is not None

    def qrels_files(self) -> tuple[Path, ...]:
        """Every qrels file, in the order they are read (the official qrels first, then a team's own)."""
        return () if self.qrels is None else (self.qrels, *self.extra_qrels)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def line_of(self, *key: Any) -> int | None:
        return self.lines.get(tuple(key))

    @property
    def candidate_name(self) -> str | None:
        """The candidate's name in the matrices and reports; ``None`` without a candidate."""
        if self.candidate is None:
            return None
        if isinstance(self.candidate, RunFile | Run | RepeatedRuns):
            return self.candidate.name or CANDIDATE_NAME
        return self.candidate.rename.get(self.candidate.systems[0], self.candidate.systems[0])  # type: ignore[index]

    def sources(self) -> list[Source]:
        """Every system to evaluate: the baselines in spec order, then the candidate."""
        return [*self.baselines.values(), *([self.candidate] if self.candidate is not None else [])]

    def files(self) -> list[tuple[str, str | None, Path]]:
        """``(role, system name or None, path)`` of every file the spec reads: itself, the qrels, the topic texts,
        weights and variations, then each run file and table (a table once per system it gives; each of a system's
        repeated runs under its name)."""
        files = [
            ("spec", None, self.path),
            *(("qrels", None, path) for path in self.qrels_files()),
            ("topics", None, self.topics),
            ("weights", None, self.analysis.mve.weights),
            ("variations", None, self.analysis.mve.variations),
            ("documents", None, self.judgments.documents),
            ("predictions", None, self.judgments.predictions),
        ]
        named = [
            *(("baseline", name, source) for name, source in self.baselines.items()),
            *([("candidate", self.candidate_name, self.candidate)] if self.candidate is not None else []),
        ]
        files += [
            (role, name, run.path)
            for role, name, source in named
            for run in (source.runs if isinstance(source, RepeatedRuns) else (source,))
            if isinstance(run, RunFile | ScoreTableFile)
        ]
        return [(role, name, path) for role, name, path in files if path is not None]

    def without_gates(self) -> Spec:
        """The same spec as an analysis-only report."""
        return replace(self, gates=())
