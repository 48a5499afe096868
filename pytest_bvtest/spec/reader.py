"""Reading the ``bvtest.yaml`` spec into its model (:mod:`pytest_bvtest.spec.model`): what to evaluate, how,
and which gates must hold.

The spec is read with its line numbers kept, so every mistake is reported as
``SPEC:LINE: key: what is wrong; what to do``. Relative paths resolve against the spec's folder.
The full key reference is ``docs/spec.md``.
"""

from __future__ import annotations

import difflib
import glob
import math
import os
import re
import shlex
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from pytest_bvtest import CANDIDATE_NAME, DEFAULT_CACHE_DIR
from pytest_bvtest.errors import CONTROL_CHARACTER, RUNNER_COMMAND_MARK, InputError, excerpt, short_list
from pytest_bvtest.io.frames import IR_DATASETS_PREFIX, qrels_from_ir_datasets
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.tables import TABLE_FORMATS, read_score_table
from pytest_bvtest.io.textfiles import nul_byte_error, require_regular_file
from pytest_bvtest.io.topicfiles import TopicFile, read_topic_file
from pytest_bvtest.spec.measures import Measure, TableMeasure, parse_measure
from pytest_bvtest.spec.model import (
    BOUND_KEYS,
    COMPARISON_CORRECTIONS,
    COMPARISON_TESTS,
    DEFAULT_GROUP_SIZE,
    DEFAULT_RESAMPLES,
    GRADING_DRAWS,
    JUDGING_DEPTH,
    POOL_BIAS_DISCOUNT,
    POOL_BIAS_SPREAD,
    REGRESSION_MODELS,
    UNDECIDED_POLICIES,
    UNJUDGED_READINGS,
    UPPER_BOUNDS,
    VERDICT_CONFIDENCE,
    AlphaSweepSpec,
    AnalysisSettings,
    BootstrapSpec,
    Bound,
    CalibrationSpec,
    CompareSpec,
    DetectAim,
    DifficultyGrouping,
    GateSpec,
    Grouping,
    GuardSettings,
    JudgmentSettings,
    MeanVarianceSpec,
    PowerSpec,
    RandomGrouping,
    RankingSpec,
    RepeatedRuns,
    RunFile,
    SampledGrouping,
    ScoreTableFile,
    SimulationSpec,
    SingleSource,
    Source,
    Spec,
)
from pytest_bvtest.stats.biasvar import NORMALIZATIONS
from pytest_bvtest.stats.registry import STATISTICS
from pytest_bvtest.stats.simulation import SIMULATED_MEASURES

_PERCENT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*%\s*$")

#: Limits that keep a hostile or mistaken spec (a billion-laughs alias bomb, a system file) cheap to refuse.
MAX_SPEC_BYTES = 1 << 20
MAX_SPEC_VALUES = 100_000
_LARGEST_INTEGER = 10**15
#: The most bootstrap resamples, random groupings or simulated collections a spec may ask for (100x the defaults).
MAX_REPETITIONS = 100_000
#: The most swaps of a calibration's null (100x the default 10,000): the null costs time in proportion.
MAX_SWAPS = 1_000_000
#: The deepest a spec nests lists and mappings (a spec needs 5 levels; a hostile one could ask for thousands,
#: which YAML's recursive composer cannot follow).
MAX_SPEC_DEPTH = 32
_STANDARD_TAG = "tag:yaml.org,2002:"
_LONGEST_PATH = 4096  # Linux's PATH_MAX

_TOP_KEYS = (
    "qrels",
    "measures",
    "baselines",
    "candidate",
    "reference",
    "analysis",
    "gates",
    "cache",
    "table_format",
    "topics",
    "judgments",
)
_MVE_FORMS = ("auto", "general", "intra-topic")
_ANALYSIS_KEYS = (
    "target",
    "target_system",
    "normalize",
    "grouping",
    "risk_alpha",
    "mve",
    "gawm",
    "simulation",
    "bootstrap",
    "calibration",
    "power",
    "top_topics",
    "rankings",
    "hits",
    "zrisk_against",
    "variance",
    "guards",
    "compare",
)
_GATE_KEYS = (
    "statistic",
    *BOUND_KEYS,
    "false_alarm",
    "confidence",
    "detect",
    "measure",
    "reference",
    "name",
    "per_segment",
    "segment",
)


class SpecWarning(UserWarning):
    """A spec that is valid but most likely not what its author means (shown by pytest's warnings summary and on
    ``bvtest``'s stderr)."""


class _SpecReader:
    """Validates the composed YAML tree, raising InputError at the offending key's line."""

    def __init__(self, path: Path, lines: dict[tuple[Any, ...], int]) -> None:
        self.path = path
        self.lines = lines
        self.mve_alpha_stated = False
        #: judgments held in memory that replace ``qrels:`` (:func:`load_spec`), and what they are
        self.given_qrels: tuple[Qrels, str] | None = None

    def error(self, key: tuple[Any, ...], message: str, hint: str | None = None) -> InputError:
        line = None
        probe = key
        while line is None and probe:
            line = self.lines.get(probe)
            probe = probe[:-1]
        label = ".".join(str(part) if not isinstance(part, int) else f"[{part}]" for part in key).replace(".[", "[")
        return InputError(f"{label}: {message}" if label else message, path=self.path, line=line, hint=hint)

    def check_keys(self, value: Any, key: tuple[Any, ...], allowed: Sequence[str], what: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected a mapping of {what} settings, got {_kind(value)}")
        for name in value:
            if name not in allowed:
                close = difflib.get_close_matches(str(name), allowed, n=1)
                hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"
                raise self.error((*key, name), f"unknown {what} key", hint)
        return value

    def path_value(self, value: Any, key: tuple[Any, ...], must_exist: bool = True) -> Path:
        if not isinstance(value, str) or not value.strip() or len(value) > _LONGEST_PATH:
            raise self.error(key, f"expected a file path, got {_kind(value)}")
        resolved = Path(os.path.realpath(self.path.parent / value))
        if must_exist:
            try:
                require_regular_file(resolved)
            except InputError as error:
                if not resolved.exists() and not resolved.is_symlink():
                    raise self.error(
                        key, f"file not found: {resolved}", "paths are relative to the spec's folder"
                    ) from None
                raise self.error(key, f"{resolved} {error.message}", "name the file itself") from None
        return resolved

    def name_value(self, value: Any, key: tuple[Any, ...], what: str) -> str:
        """A name the reports and test ids show (a gate's, a system's): text that is not blank. YAML 1.2 reads
        ``12:30`` as that text; a number, a list or nothing is refused rather than turned into some text."""
        if not isinstance(value, str):
            raise self.error(
                key,
                f"{what} is text, got {_kind(value)}",
                "quote it ('2024')" if isinstance(value, int | float) and not isinstance(value, bool) else None,
            )
        if not value.strip():
            raise self.error(key, f"{what} is empty", "write a name, or leave the key out")
        return value

    def test_id_part(self, value: str, key: tuple[Any, ...], what: str) -> str:
        """A gate's name or a measure's label, part of a test id that pytest prints as it is: without a mark a CI
        runner reads as a command anywhere in a line (``##[warning]`` became an annotation of GitHub Actions)."""
        mark = RUNNER_COMMAND_MARK.search(value)
        if mark is not None:
            raise self.error(
                key,
                f"{what} {excerpt(value)} holds {mark.group()!r}, which a CI log reads as a command wherever it "
                "stands (it is part of the test id pytest prints)",
                "name it without it",
            )
        return value

    def format_value(self, value: Any, key: tuple[Any, ...]) -> str:
        formats = ("auto", *TABLE_FORMATS)
        if value not in formats:
            raise self.error(key, f"unknown table format {value!r}", f"use one of {', '.join(formats)}")
        return str(value)

    def number(
        self,
        value: Any,
        key: tuple[Any, ...],
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        integer: bool = False,
    ) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"expected a number, got {_kind(value)}")
        if isinstance(value, int) and abs(value) > _LARGEST_INTEGER:
            raise self.error(key, f"{excerpt(str(value))} is too large a number", "write a number below 1e15")
        if not math.isfinite(value):
            raise self.error(key, f"expected a finite number, got {_kind(value)}")
        if integer and int(value) != value:
            raise self.error(key, f"expected a whole number, got {value}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be at least {minimum:g}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(
                key,
                f"must be at most {maximum:,}, got {value:,}",
                "more repetitions cost time and memory "
                "in proportion and change the result less than its Monte-Carlo error",
            )
        return int(value) if integer else float(value)

    def read(self, document: Any) -> Spec:
        if document is None:
            raise self.error((), "the spec is empty", "see docs/spec.md for a minimal spec")
        top = self.check_keys(document, (), _TOP_KEYS, "top-level")
        self.table_format = self.format_value(top.get("table_format", "auto"), ("table_format",))
        given = self.given_qrels
        if given is None and isinstance(top.get("qrels"), str) and top["qrels"].startswith(IR_DATASETS_PREFIX):
            given = self.ir_datasets_qrels(top["qrels"])
        qrels, extra_qrels = self.qrels(top.get("qrels")) if given is None else (None, ())
        measures_value = top.get("measures")
        baselines = self.baselines(top.get("baselines"))
        candidate = self.candidate(top.get("candidate"), baselines)
        sources = [*baselines.values(), *([candidate] if candidate is not None else [])]
        all_tables = bool(sources) and all(isinstance(source, ScoreTableFile) for source in sources)
        measures = self.measures(measures_value, free_labels=all_tables)
        reference = self.reference(top.get("reference"), baselines, candidate)
        analysis = self.analysis(top.get("analysis"))
        if analysis.target_system is not None:
            names = [*baselines, *([source_name(candidate)] if candidate is not None else [])]
            if analysis.target_system not in names:
                close = difflib.get_close_matches(analysis.target_system, names, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"systems are: {', '.join(names) or 'none'}"
                raise self.error(
                    ("analysis", "target_system"), f"{analysis.target_system!r} is not a system of the spec", hint
                )
        topics = self.path_value(top["topics"], ("topics",)) if top.get("topics") is not None else None
        topic_file = read_topic_file(topics) if topics is not None else None
        self.check_topic_weights(topic_file, analysis)
        gates = self.gates(top.get("gates"), measures, reference, baselines, topic_file, analysis)
        weighted = topic_file is not None and topic_file.weights or analysis.mve.weights is not None
        unweighted = next(
            (gate for gate in gates if STATISTICS[gate.statistic].uses_topic_weights and not weighted), None
        )
        if unweighted is not None and unweighted.statistic == "weighted_mean":
            raise InputError(
                "gates: weighted_mean needs topic weights, and the spec gives none",
                path=self.path,
                line=unweighted.line,
                hint="add a weight column to the topic file (`topics:`; header `topic<TAB>weight`), or "
                "analysis.mve.weights",
            )
        self.simulated_gates(gates, measures, analysis)
        self.warn_of_a_default_alpha_over_variations(gates, analysis)
        cache = top.get("cache")
        if cache is False:
            cache_path = None
        elif cache is None:
            cache_path = self.path.parent / DEFAULT_CACHE_DIR
        elif isinstance(cache, str) and cache.lower() in ("no", "off", "yes", "on"):
            raise self.error(
                ("cache",),
                f"{cache!r} is a folder's name in YAML 1.2 (YAML 1.1 read it as a boolean)",
                "write `cache: false` for no cache, or quote a folder of that name with a path: `cache: ./off`",
            )
        elif isinstance(cache, str):
            cache_path = (self.path.parent / cache).resolve()
        else:
            raise self.error(("cache",), f"expected a folder path or false, got {_kind(cache)}")
        if qrels is None and given is None:
            run_keys = [("baselines", name) for name, source in baselines.items() if _has_run_files(source)]
            run_keys += [("candidate",)] if candidate is not None and _has_run_files(candidate) else []
            if run_keys:
                raise self.error(run_keys[0], "run files need relevance judgments", "add `qrels: path/to/qrels`")
        spec = Spec(
            self.path,
            measures,
            baselines,
            qrels,
            candidate,
            reference,
            analysis,
            gates,
            cache_path,
            topics,
            self.lines,
            judgments=self.judgments(top.get("judgments")),
            extra_qrels=extra_qrels,
            qrels_judgments=given[0] if given is not None else None,
            qrels_source=given[1] if given is not None else None,
        )
        check_combinations(spec)
        return spec

    def ir_datasets_qrels(self, value: str) -> tuple[Qrels, str]:
        """``qrels: irds:<id>``: the qrels of an ir_datasets dataset (ir_datasets installed: the extra ``irds``)."""
        dataset_id = value.removeprefix(IR_DATASETS_PREFIX).strip()
        if not dataset_id:
            raise self.error(
                ("qrels",), "irds: names no dataset", "e.g. qrels: irds:msmarco-passage/trec-dl-2019/judged"
            )
        try:
            return qrels_from_ir_datasets(dataset_id), f"{IR_DATASETS_PREFIX}{dataset_id}"
        except InputError as error:
            raise self.error(("qrels",), error.message, error.hint) from None

    def qrels(self, value: Any) -> tuple[Path | None, tuple[Path, ...]]:
        """``qrels:`` a file, or a list of files read as one in order (the official qrels, then a team's own): the
        first, and the others."""
        if value is None:
            return None, ()
        if not isinstance(value, list):
            return self.path_value(value, ("qrels",)), ()
        if not value:
            raise self.error(("qrels",), "expected a qrels file or a list of them, got an empty list")
        paths = [self.path_value(entry, ("qrels", index)) for index, entry in enumerate(value)]
        for index, path in enumerate(paths):
            if path in paths[:index]:
                raise self.error(("qrels", index), f"{path.name} is listed twice")
        return paths[0], tuple(paths[1:])

    def judgments(self, value: Any) -> JudgmentSettings:
        """The ``judgments`` section (docs/mathematics.md §10): judging depth, optimistic grade, undecided policy, how
        unjudged documents are read and the plausible gradings' confidence, discount, draws and seed."""
        if value is None:
            return JudgmentSettings()
        key = ("judgments",)
        section = self.check_keys(
            value,
            key,
            (
                "undecided",
                "depth",
                "optimistic_grade",
                "unjudged",
                "confidence",
                "discount",
                "discount_sd",
                "draws",
                "seed",
                "documents",
                "predictor",
                "predictions",
            ),
            "judgments",
        )
        undecided = section.get("undecided", "warn")
        if undecided not in UNDECIDED_POLICIES:
            raise self.error(
                (*key, "undecided"),
                f"expected warn or fail, got {_kind(undecided)}",
                "warn: a gate that unjudged documents decide passes, shown as UNDECIDED (the default); "
                "fail: it fails the check",
            )
        unjudged = section.get("unjudged", "auto")
        if unjudged not in UNJUDGED_READINGS:
            raise self.error(
                (*key, "unjudged"),
                f"expected auto, plausible or nonrelevant, got {_kind(unjudged)}",
                "plausible: weigh what unjudged documents probably are; nonrelevant: count them non-relevant as "
                "trec_eval does; auto (the default): nonrelevant for qrels that judge only relevant documents",
            )
        depth = self.number(section.get("depth", JUDGING_DEPTH), (*key, "depth"), minimum=1, integer=True)
        grade = section.get("optimistic_grade")
        confidence = self.number(section.get("confidence", VERDICT_CONFIDENCE), (*key, "confidence"))
        if not 0.5 < confidence < 1:
            raise self.error(
                (*key, "confidence"),
                f"must lie strictly between 0.5 and 1, got {confidence}",
                "the share of plausible gradings a verdict must hold in, e.g. 0.95",
            )
        discount = self.number(section.get("discount", POOL_BIAS_DISCOUNT), (*key, "discount"))
        if not 0 <= discount <= 1:
            raise self.error(
                (*key, "discount"),
                f"must lie between 0 and 1, got {discount}",
                "the share of a judged document's chance of relevance an unjudged one gets (docs/judgments.md)",
            )
        spread = self.number(section.get("discount_sd", POOL_BIAS_SPREAD), (*key, "discount_sd"), minimum=0)
        if spread and not spread**2 < discount * (1 - discount):
            raise self.error(
                (*key, "discount_sd"),
                f"must be below {math.sqrt(discount * (1 - discount)):.3g} for a discount of {discount:g}, "
                f"got {spread}",
                "the standard deviation of the pool-bias discount across gradings; 0 holds it fixed",
            )
        draws = self.number(
            section.get("draws", GRADING_DRAWS), (*key, "draws"), minimum=100, maximum=100_000, integer=True
        )
        seed = self.number(section.get("seed", 0), (*key, "seed"), minimum=0, maximum=2**32 - 1, integer=True)
        return JudgmentSettings(
            depth=int(depth),
            optimistic_grade=None
            if grade is None
            else int(self.number(grade, (*key, "optimistic_grade"), minimum=1, integer=True)),
            undecided=str(undecided),
            unjudged=str(unjudged),
            confidence=float(confidence),
            discount=float(discount),
            discount_sd=float(spread),
            draws=int(draws),
            seed=int(seed),
            documents=None
            if section.get("documents") is None
            else self.path_value(section["documents"], (*key, "documents")),
            predictor=self.predictor(section.get("predictor"), (*key, "predictor")),
            # written by `bvtest judge --predict`: it need not exist yet (the evaluation says so when it reads it)
            predictions=None
            if section.get("predictions") is None
            else self.path_value(section["predictions"], (*key, "predictions"), must_exist=False),
        )

    def predictor(self, value: Any, key: tuple[Any, ...]) -> str | None:
        """``judgments.predictor``: a command, split as a shell would split it (it is run without one)."""
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"expected a command, got {_kind(value)}", 'e.g. predictor: "python -m team.judge"')
        try:
            shlex.split(value)
        except ValueError as error:
            raise self.error(key, f"cannot split the command ({error})", "close its quotes") from None
        return value.strip()

    def measures(self, value: Any, free_labels: bool = False) -> tuple[Measure | TableMeasure, ...]:
        """The spec's measures; with ``free_labels`` (every system from tables) a name the project cannot
        compute becomes a :class:`TableMeasure` label instead of an error."""
        if value is None:
            raise self.error(("measures",), "missing", "add e.g. `measures: [AP, nDCG@10]` (ir_measures syntax)")
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            raise self.error(("measures",), f"expected a list of measure names, got {_kind(value)}")
        parsed = []
        for index, text in enumerate(items):
            key = ("measures", index) if not isinstance(value, str) else ("measures",)
            if not isinstance(text, str):
                raise self.error(key, f"expected a measure name such as nDCG@10, got {_kind(text)}")
            try:
                parsed.append(parse_measure(text))
            except InputError as error:
                if free_labels and text.strip():
                    parsed.append(TableMeasure(self.test_id_part(text.strip(), key, "the measure")))
                    continue
                # a real measure the project cannot compute (RBP, ...) may still come from tables
                free = "tables may carry it: name it freely when every system comes from a table"
                hint = f"{free}; {error.hint}" if "not supported" in error.message else error.hint
                raise self.error(key, error.message, hint) from None
        duplicates = {str(m) for m in parsed if parsed.count(m) > 1}
        if duplicates:
            raise self.error(("measures",), f"measure listed twice: {', '.join(sorted(duplicates))}")
        return tuple(parsed)

    def table_or_run(self, value: Any, key: tuple[Any, ...], name: str) -> Source:
        """A system: a run file's path, ``{run, tag}``, ``{scores, system, format}``, or a list of those, the runs of
        a nondeterministic engine (:class:`RepeatedRuns`; ``run:`` may list them too)."""
        if isinstance(value, list):
            return self.repeated_runs(value, key, name)
        if isinstance(value, str):
            return RunFile(self.path_value(value, key), name=name)
        entry = self.check_keys(value, key, ("run", "tag", "scores", "system", "format"), "system")
        if ("run" in entry) == ("scores" in entry):
            raise self.error(key, "give exactly one of `run` (a run file) or `scores` (a per-topic table)")
        if "run" in entry:
            tag = entry.get("tag")
            if tag is not None and not isinstance(tag, str):
                raise self.error((*key, "tag"), f"expected a run tag, got {_kind(tag)}")
            if isinstance(entry["run"], list):
                runs = [{"run": run, "tag": tag} if isinstance(run, str) else run for run in entry["run"]]
                return self.repeated_runs(runs, (*key, "run"), name)
            return RunFile(self.path_value(entry["run"], (*key, "run")), name=name, tag=tag)
        system = entry.get("system", name)
        return ScoreTableFile(
            self.path_value(entry["scores"], (*key, "scores")),
            format=self.format_value(entry.get("format", self.table_format), (*key, "format")),
            systems=(str(system),),
            rename={str(system): name},
        )

    def repeated_runs(self, value: list[Any], key: tuple[Any, ...], name: str) -> Source:
        """The runs of one system (docs/mathematics.md §7, run-to-run noise); a list of one is that run."""
        if not value:
            raise self.error(key, "expected at least one run, got an empty list")
        runs = []
        for index, entry in enumerate(value):
            if isinstance(entry, list):
                raise self.error((*key, index), "expected a run, got a list inside the list of runs")
            runs.append(self.table_or_run(entry, (*key, index), name))
        if len(runs) == 1:
            return runs[0]
        return RepeatedRuns(tuple(runs), name)  # type: ignore[arg-type]

    def baselines(self, value: Any) -> dict[str, Source]:
        if value is None:
            return {}
        if isinstance(value, str):
            path = self.path_value(value, ("baselines",))
            try:
                systems = read_score_table(path, format=self.table_format).systems()
            except InputError as error:
                raise self.error(("baselines",), str(error)) from None
            return {name: ScoreTableFile(path, format=self.table_format, systems=(name,)) for name in systems}
        if not isinstance(value, Mapping):
            raise self.error(
                ("baselines",), f"expected name: run-file pairs or a per-topic table path, got {_kind(value)}"
            )
        baselines = {}
        systems_named: dict[tuple[Path, str | None], str] = {}
        for name, entry in value.items():
            self.name_value(name, ("baselines", name), "a baseline's name")
            if name == CANDIDATE_NAME:
                raise self.error(("baselines", name), f"{CANDIDATE_NAME!r} is reserved for the run under test")
            source = self.table_or_run(entry, ("baselines", name), str(name))
            self.check_listed_once(source, ("baselines", name), str(name), systems_named)
            baselines[str(name)] = source
        return baselines

    def check_listed_once(
        self, source: Source, key: tuple[Any, ...], name: str, systems_named: dict[tuple[Path, str | None], str]
    ) -> None:
        """Refuse a run or table system already given (``systems_named``: by file and tag or system, the name that
        gave it): one system under two names would count twice in ZRisk, GeoRisk, GAWM and the Holm correction, and
        one run twice among a system's repeated runs would count twice in its mean."""
        for index, run in enumerate(source.runs if isinstance(source, RepeatedRuns) else (source,)):
            assert isinstance(run, RunFile | ScoreTableFile)
            system = run.tag if isinstance(run, RunFile) else run.systems[0]  # type: ignore[index]
            first = systems_named.get((run.path.resolve(), system))
            systems_named.setdefault((run.path.resolve(), system), name)
            what = "run" if isinstance(run, RunFile) else f"table system {system!r}"
            where = (*key, index) if isinstance(source, RepeatedRuns) else key
            if first is None:
                continue
            if first == name:
                raise self.error(
                    where,
                    f"{what} {run.path.name} is listed twice among the runs of {name!r}: "
                    "it would count twice in their mean",
                    "list each run once",
                )
            raise self.error(
                where,
                f"{name!r} names the same {what} as {first!r} ({run.path.name}): one system listed twice "
                "counts twice in ZRisk, GeoRisk, GAWM and the Holm correction",
                "list each system once",
            )

    def candidate(self, value: Any, baselines: dict[str, Source]) -> Source | None:
        """The run under test; a name of a baseline table's system moves that system out of the baselines."""
        if value is None:
            return None
        key = ("candidate",)
        if isinstance(value, str):
            named = baselines.get(value)
            if isinstance(named, ScoreTableFile) and not (self.path.parent / value).exists():
                return baselines.pop(value)
            table_systems = [name for name, source in baselines.items() if isinstance(source, ScoreTableFile)]
            if table_systems and not (self.path.parent / value).exists():
                # meant as a table's system name (a typo), not a run file: "file not found" would mislead
                close = difflib.get_close_matches(value, table_systems, n=1)
                raise self.error(
                    key,
                    f"{excerpt(value)} is neither a file nor a system of the baselines' tables "
                    f"({short_list(table_systems)})",
                    f"did you mean `{close[0]}`?" if close else "name one of those systems, or a run file",
                )
            return RunFile(self.path_value(value, key), name=CANDIDATE_NAME)
        if isinstance(value, list):
            candidate = self.table_or_run(value, key, CANDIDATE_NAME)
            self.check_listed_once(candidate, key, CANDIDATE_NAME, {})
            self.check_own_runs(candidate, key, baselines)
            return candidate
        entry = self.check_keys(value, key, ("run", "tag", "scores", "system", "format", "name"), "candidate")
        name = self.name_value(entry.get("name", CANDIDATE_NAME), (*key, "name"), "the candidate's name")
        if name in baselines:
            raise self.error((*key, "name"), f"{name!r} is already a baseline's name")
        candidate = self.table_or_run({k: v for k, v in entry.items() if k != "name"}, key, name)
        self.check_listed_once(candidate, key, name, {})
        self.check_own_runs(candidate, (*key, "run") if "run" in entry else key, baselines)
        return candidate

    def check_own_runs(self, candidate: Source, key: tuple[Any, ...], baselines: Mapping[str, Source]) -> None:
        """Refuse a candidate given as several runs of which one is a baseline's (:func:`baseline_run_among`)."""
        found = baseline_run_among(candidate, baselines)
        if found is not None:
            index, name, run = found
            raise self.error((*key, index), _baseline_run_message(run, name), _OWN_RUNS_HINT)

    def reference(self, value: Any, baselines: dict[str, Source], candidate: Source | None) -> str | None:
        names = list(baselines)
        if value is None:
            return names[0] if names else None
        if value not in names:
            close = difflib.get_close_matches(str(value), names, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"baselines are: {', '.join(names) or 'none'}"
            raise self.error(("reference",), f"{value!r} is not a baseline", hint)
        return value

    def analysis(self, value: Any) -> AnalysisSettings:
        if value is None:
            return AnalysisSettings()
        section = self.check_keys(value, ("analysis",), _ANALYSIS_KEYS, "analysis")
        key = lambda *parts: ("analysis", *parts)  # noqa: E731
        settings: dict[str, Any] = {}
        if "target" in section:
            target = section["target"]
            settings["target"] = "mean" if target == "mean" else self.number(target, key("target"))
        if section.get("target_system") is not None:
            if not isinstance(section["target_system"], str):
                raise self.error(
                    key("target_system"), f"expected a system's name, got {_kind(section['target_system'])}"
                )
            settings["target_system"] = section["target_system"]
        if "normalize" in section:
            normalize = section["normalize"]
            if normalize not in NORMALIZATIONS:
                raise self.error(
                    key("normalize"), f"unknown normalisation {normalize!r}", f"use one of {', '.join(NORMALIZATIONS)}"
                )
            settings["normalize"] = normalize
        if "grouping" in section and section["grouping"] not in (None, "none"):
            settings["grouping"] = self.grouping(section["grouping"])
        if "risk_alpha" in section:
            settings["risk_alpha"] = self.number(section["risk_alpha"], key("risk_alpha"), minimum=0)
        if "mve" in section:
            mve = self.check_keys(
                section["mve"], key("mve"), ("alpha", "weights", "variations", "form", "sweep"), "mve"
            )
            form = mve.get("form", MeanVarianceSpec.form)
            if form not in _MVE_FORMS:
                raise self.error(
                    key("mve", "form"), f"unknown MVE form {form!r}", f"use one of {', '.join(_MVE_FORMS)}"
                )
            if form != "auto" and "variations" not in mve:
                raise self.error(
                    key("mve", "form"),
                    f"`form: {form}` needs query variations",
                    "without `variations` MVE takes one query per topic (the inter-topic form); drop `form`",
                )
            self.mve_alpha_stated = "alpha" in mve
            settings["mve"] = MeanVarianceSpec(
                alpha=self.number(mve.get("alpha", MeanVarianceSpec.alpha), key("mve", "alpha")),
                weights=self.path_value(mve["weights"], key("mve", "weights")) if "weights" in mve else None,
                variations=self.path_value(mve["variations"], key("mve", "variations"))
                if "variations" in mve
                else None,
                form=form,
                sweep=self.alpha_sweep(mve["sweep"], key("mve", "sweep")) if mve.get("sweep") is not None else None,
            )
        if "gawm" in section:
            gawm = self.check_keys(section["gawm"], key("gawm"), ("q",), "gawm")
            settings["gawm_q"] = self.number(gawm.get("q", AnalysisSettings.gawm_q), key("gawm", "q"), minimum=0)
        if "simulation" in section:
            simulation = self.check_keys(
                section["simulation"] or {}, key("simulation"), ("samples", "seed", "measures"), "simulation"
            )
            settings["simulation"] = SimulationSpec(
                samples=self.number(
                    simulation.get("samples", SimulationSpec.samples),
                    key("simulation", "samples"),
                    minimum=1,
                    maximum=MAX_REPETITIONS,
                    integer=True,
                ),
                seed=self.number(
                    simulation.get("seed", SimulationSpec.seed), key("simulation", "seed"), minimum=0, integer=True
                ),
                measures=self.simulated_measures(simulation.get("measures", ["AP"]), key("simulation", "measures")),
            )
        if "bootstrap" in section:
            bootstrap = self.check_keys(section["bootstrap"], key("bootstrap"), ("resamples", "seed"), "bootstrap")
            settings["bootstrap"] = BootstrapSpec(
                resamples=self.number(
                    bootstrap.get("resamples", DEFAULT_RESAMPLES),
                    key("bootstrap", "resamples"),
                    minimum=10,
                    maximum=MAX_REPETITIONS,
                    integer=True,
                ),
                seed=self.number(
                    bootstrap.get("seed", BootstrapSpec.seed), key("bootstrap", "seed"), minimum=0, integer=True
                ),
            )
        if "calibration" in section:
            calibration = self.check_keys(
                section["calibration"], key("calibration"), ("swaps", "seed", "family"), "calibration"
            )
            swaps = calibration.get("swaps")
            family = calibration.get("family", CalibrationSpec.family)
            if not isinstance(family, bool):
                raise self.error(key("calibration", "family"), f"expected true or false, got {_kind(family)}")
            settings["calibration"] = CalibrationSpec(
                swaps=None
                if swaps is None
                else self.number(swaps, key("calibration", "swaps"), minimum=100, maximum=MAX_SWAPS, integer=True),
                seed=self.number(
                    calibration.get("seed", CalibrationSpec.seed), key("calibration", "seed"), minimum=0, integer=True
                ),
                family=family,
            )
        if "power" in section:
            settings["power"] = self.power(section["power"], key("power"))
        if "guards" in section:
            guards = self.check_keys(
                section["guards"],
                key("guards"),
                ("unanswered_share", "stale_reference_p", "stale_reference_gain"),
                "guards",
            )
            thresholds = {name: self.number(value, key("guards", name), minimum=0) for name, value in guards.items()}
            for name, value in thresholds.items():
                if value > 1:
                    raise self.error(key("guards", name), f"must lie between 0 and 1 (a share), got {value:g}")
            settings["guards"] = GuardSettings(**thresholds)
        if "top_topics" in section:
            settings["top_topics"] = self.number(section["top_topics"], key("top_topics"), minimum=0, integer=True)
        if section.get("rankings") is not None:
            settings["rankings"] = self.rankings(section["rankings"], key("rankings"))
        if "variance" in section:
            if section["variance"] not in ("population", "sample"):
                raise self.error(
                    key("variance"),
                    f"unknown variance convention {section['variance']!r}",
                    "use `population` (divide by n, the default) or `sample` (divide by n - 1)",
                )
            settings["variance"] = section["variance"]
        if "zrisk_against" in section:
            if section["zrisk_against"] not in ("systems", "target"):
                raise self.error(
                    key("zrisk_against"),
                    f"unknown ZRisk baseline {section['zrisk_against']!r}",
                    "use `systems` (every other system) or `target` (the virtual target alone)",
                )
            settings["zrisk_against"] = section["zrisk_against"]
        if "hits" in section:
            if not isinstance(section["hits"], bool):
                raise self.error(key("hits"), f"expected true or false, got {_kind(section['hits'])}")
            settings["hits"] = section["hits"]
        if section.get("compare") is not None:
            settings["compare"] = self.compare(section["compare"], key("compare"))
        return AnalysisSettings(**settings)

    def compare(self, value: Any, key: tuple[Any, ...]) -> CompareSpec:
        """``analysis.compare``: the test, the correction and the level of the all-pairs comparison."""
        section = self.check_keys(value, key, ("test", "correction", "alpha"), "compare")
        chosen: dict[str, Any] = {}
        for name, choices in (("test", COMPARISON_TESTS), ("correction", COMPARISON_CORRECTIONS)):
            if name in section:
                if section[name] not in choices:
                    raise self.error(
                        (*key, name),
                        f"unknown {name} {excerpt(str(section[name]))}",
                        f"use one of {', '.join(choices)}",
                    )
                chosen[name] = section[name]
        if "alpha" in section:
            alpha = self.number(section["alpha"], (*key, "alpha"))
            if not 0 < alpha < 1:
                raise self.error((*key, "alpha"), f"must lie between 0 and 1, got {alpha:g}", "e.g. alpha: 0.05")
            chosen["alpha"] = alpha
        return CompareSpec(**chosen)

    def simulated_measures(self, value: Any, key: tuple[Any, ...]) -> tuple[Measure, ...]:
        """The measures the per-topic simulation scores: binary-relevance ones it can compute on a ranked list."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            raise self.error(key, f"expected a list of measure names such as [AP, P@10], got {_kind(value)}")
        measures = []
        for index, text in enumerate(items):
            where = (*key, index) if not isinstance(value, str) else key
            try:
                measure = parse_measure(str(text))
            except InputError as error:
                raise self.error(where, error.message, error.hint) from None
            if simulated_form(measure) is None:
                raise self.error(
                    where,
                    f"the simulation cannot score {measure}",
                    f"it scores binary relevance (grade >= 1) on the ranked list: {SIMULATED_EXAMPLES}",
                )
            measures.append(measure)
        return tuple(dict.fromkeys(measures))

    def simulated_gates(
        self, gates: tuple[GateSpec, ...], measures: tuple[Measure | TableMeasure, ...], analysis: AnalysisSettings
    ) -> None:
        """A gate on a simulation statistic needs the simulation of every measure it runs on."""
        for index, gate in enumerate(gates):
            if STATISTICS[gate.statistic].from_simulation is None:
                continue
            key = ("gates", index, "statistic")
            if analysis.simulation is None:
                raise self.error(
                    key,
                    f"{gate.statistic} is read from the per-topic simulation, which is off",
                    "add `analysis: {simulation: {measures: [AP]}}` (docs/mathematics.md §3e)",
                )
            missing = [
                str(m)
                for m in ([gate.measure] if gate.measure is not None else measures)
                if m not in analysis.simulation.measures
            ]
            if missing:
                raise self.error(
                    key,
                    f"{gate.statistic} on {', '.join(missing)}: not simulated",
                    f"add {missing[0]} to `analysis.simulation.measures`, or give the gate `measure:` "
                    "naming a simulated measure",
                )

    def warn_of_a_default_alpha_over_variations(self, gates: Sequence[GateSpec], analysis: AnalysisSettings) -> None:
        """An ``mve`` gate over query variations at the default ``alpha`` judges the mean (docs/concepts.md,
        "Mean-variance and query variations"): a :class:`SpecWarning` at the gate's line."""
        gate = next((gate for gate in gates if gate.statistic == "mve"), None)
        if gate is None or analysis.mve.variations is None or self.mve_alpha_stated:
            return
        warnings.warn_explicit(
            f"{self.path.name}: an mve gate over query variations at the default alpha "
            f"{MeanVarianceSpec.alpha:g} judges the mean: with variations the variance is the portfolio's, "
            "sum_t w_t^2 var_t, about 1/n of the topics' own for n topics (0.04% of the value on Robust04's 249 "
            "topics); state analysis.mve.alpha on that scale, about 2 x the number of topics",
            SpecWarning,
            str(self.path),
            gate.line,
        )

    def statistic_name(self, value: Any, key: tuple[Any, ...]) -> str:
        """A name of :data:`STATISTICS`, or an error suggesting the one it spells (a report's label such as
        ``Bias²+Var`` or ``bias2+var``), else the closest name."""
        if not isinstance(value, str) or value not in STATISTICS:
            spelled = _STATISTIC_SPELLINGS.get(_spelling(str(value)))
            if spelled is not None:
                hint = f"did you mean {spelled!r}? (the reports label it {STATISTICS[spelled].label})"
            else:
                close = difflib.get_close_matches(str(value), list(STATISTICS), n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"statistics: {', '.join(STATISTICS)}"
            raise self.error(key, f"unknown statistic {excerpt(value)}", hint)
        return value

    def rankings(self, value: Any, key: tuple[Any, ...]) -> RankingSpec:
        section = self.check_keys(value, key, ("against", "statistics"), "rankings")
        against = self.statistic_name(section.get("against", RankingSpec.against), (*key, "against"))
        listed = section.get("statistics", list(RankingSpec.statistics))
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not listed:
            raise self.error((*key, "statistics"), f"expected a list of statistics, got {_kind(listed)}")
        statistics = tuple(self.statistic_name(name, (*key, "statistics", i)) for i, name in enumerate(listed))
        for i, name in enumerate((against, *statistics)):
            if STATISTICS[name].from_simulation is not None:
                where = (*key, "against") if i == 0 else (*key, "statistics", i - 1)
                raise self.error(
                    where,
                    f"{name} comes from the per-topic simulation; rankings read the score matrix",
                    "rank by the score-matrix statistics (mean, bias2_plus_var, mve, ...)",
                )
        return RankingSpec(against, tuple(dict.fromkeys(name for name in statistics if name != against)))

    def alpha_sweep(self, value: Any, key: tuple[Any, ...]) -> AlphaSweepSpec:
        section = self.check_keys(value, key, ("low", "high", "steps"), "sweep")
        low = self.number(section.get("low", AlphaSweepSpec.low), (*key, "low"))
        high = self.number(section.get("high", AlphaSweepSpec.high), (*key, "high"))
        if not high > low:
            raise self.error(key, f"`high` ({high}) must be above `low` ({low})")
        steps = self.number(section.get("steps", AlphaSweepSpec.steps), (*key, "steps"), minimum=2, integer=True)
        return AlphaSweepSpec(low, high, int(steps))

    def grouping(self, value: Any) -> Grouping:
        key = ("analysis", "grouping")
        group = self.check_keys(value, key, ("by", "size", "repeats", "seed", "difficulty", "groups"), "grouping")
        by = group.get("by")
        default_size = SampledGrouping.size if by == "sampled" else DEFAULT_GROUP_SIZE
        size = self.number(group.get("size", default_size), (*key, "size"), minimum=1, integer=True)
        if by != "difficulty" and "difficulty" in group:
            raise self.error((*key, "difficulty"), "`difficulty` belongs to `by: difficulty`")
        if by != "sampled" and "groups" in group:
            raise self.error((*key, "groups"), "`groups` belongs to `by: sampled`")
        if by == "difficulty":
            if "repeats" in group or "seed" in group:
                raise self.error(
                    key, "difficulty grouping is deterministic: `repeats` and `seed` belong to `by: random`"
                )
            difficulty = group.get("difficulty", DifficultyGrouping.difficulty)
            if difficulty not in ("target", "mean"):
                raise self.error(
                    (*key, "difficulty"),
                    f"unknown difficulty {difficulty!r}",
                    "use `target` (the virtual target) or `mean` (the mean over systems)",
                )
            return DifficultyGrouping(size, difficulty)
        if by in ("random", "sampled"):
            repeats = self.number(
                group.get("repeats", RandomGrouping.repeats),
                (*key, "repeats"),
                minimum=1,
                maximum=MAX_REPETITIONS,
                integer=True,
            )
            seed = self.number(group.get("seed", RandomGrouping.seed), (*key, "seed"), minimum=0, integer=True)
            if by == "random":
                return RandomGrouping(size, repeats, seed)
            groups = self.number(group.get("groups", SampledGrouping.groups), (*key, "groups"), minimum=1, integer=True)
            return SampledGrouping(size, groups, repeats, seed)
        raise self.error(
            (*key, "by"), f"unknown grouping {by!r}", "use `by: difficulty`, `by: random` or `by: sampled`"
        )

    def check_topic_weights(self, topic_file: TopicFile | None, analysis: AnalysisSettings) -> None:
        """Topic weights come from one place: the topic file's weight column or ``analysis.mve.weights``."""
        if topic_file is not None and topic_file.weights and analysis.mve.weights is not None:
            raise self.error(
                ("analysis", "mve", "weights"),
                "the topic file (`topics:`) has a weight column too: topic weights come from one place",
                "keep the weight column of the topic file (MVE reads it as well), or drop it",
            )

    def gates(
        self,
        value: Any,
        measures: tuple[Measure, ...],
        reference: str | None,
        baselines: Mapping[str, Source],
        topic_file: TopicFile | None = None,
        analysis: AnalysisSettings | None = None,
    ) -> tuple[GateSpec, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.error(("gates",), f"expected a list of gates, got {_kind(value)}")
        gates = []
        segmented: list[tuple[str, ...]] = []
        for index, entry in enumerate(value):
            key = ("gates", index)
            gate = self.check_keys(entry, key, _GATE_KEYS, "gate")
            statistic = self.statistic_name(gate.get("statistic"), (*key, "statistic"))
            segmented.append(self.gate_segments(gate, key, statistic, topic_file, analysis))
            false_alarm = self.false_alarm(gate, key)
            bound = self.bound(gate, key, statistic, calibrated=false_alarm is not None)
            confidence = None
            if gate.get("confidence") is not None:
                confidence = self.share(gate["confidence"], (*key, "confidence"), upper=1, example=0.95)
                if false_alarm is not None:
                    raise self.error(
                        (*key, "confidence"),
                        "a gate with `false_alarm` is already calibrated against noise",
                        "drop `confidence` (or `false_alarm`) from this gate",
                    )
            measure = None
            if gate.get("measure") is not None:
                labels = {str(known): known for known in measures if isinstance(known, TableMeasure)}
                try:
                    measure = labels.get(str(gate["measure"]).strip()) or parse_measure(str(gate["measure"]))
                except InputError as error:
                    raise self.error((*key, "measure"), error.message, error.hint) from None
                if measure not in measures:
                    raise self.error(
                        (*key, "measure"), f"{measure} is not among the spec's measures", "add it to `measures`"
                    )
            gate_reference = gate.get("reference", reference)
            if gate.get("reference") is not None and (
                not isinstance(gate_reference, str) or gate_reference not in baselines
            ):
                raise self.error((*key, "reference"), f"{gate_reference!r} is not a baseline")
            needs_reference = (
                false_alarm is not None
                or STATISTICS[statistic].needs_reference
                or (bound is not None and bound.kind in ("max_increase", "max_decrease"))
            )
            if needs_reference and gate_reference is None:
                why = (
                    "false_alarm: its null swaps topics with the reference"
                    if false_alarm is not None
                    else (bound.kind if bound is not None else statistic)
                )
                raise self.error(
                    key,
                    f"gate on {statistic} ({why}) needs a reference system",
                    "add a baseline and `reference:` naming it",
                )
            detect = None
            if gate.get("detect") is not None:
                gated = (measure,) if measure is not None else measures
                detect = self.detect(gate["detect"], (*key, "detect"), statistic, gate_reference, gated)
            name = self.name_value(gate.get("name", statistic), (*key, "name"), "a gate's name")
            self.test_id_part(name, (*key, "name"), "the name")
            gates.append(
                GateSpec(
                    statistic,
                    bound,
                    name,
                    self.lines.get(key, 0),
                    confidence,
                    measure,
                    gate_reference,
                    false_alarm,
                    detect,
                )
            )
        # a gate per segment is a gate on that segment's topics, named and tested on its own: NAME[SEGMENT]
        gates = [
            replace(gate, segment=segment)
            for gate, segments in zip(gates, segmented)
            for segment in segments or (None,)
        ]
        _disambiguate_names(gates)
        return tuple(
            replace(gate, name=f"{gate.name}[{gate.segment}]") if gate.segment is not None else gate for gate in gates
        )

    def gate_segments(
        self,
        gate: Mapping[str, Any],
        key: tuple[Any, ...],
        statistic: str,
        topic_file: TopicFile | None,
        analysis: AnalysisSettings | None,
    ) -> tuple[str, ...]:
        """The segments a gate applies to on its own: every segment of the topic file for ``per_segment: true``,
        one for ``segment: NAME``; none (the whole topic set) otherwise."""
        per_segment = gate.get("per_segment", False)
        if not isinstance(per_segment, bool):
            raise self.error((*key, "per_segment"), f"expected true or false, got {_kind(per_segment)}")
        named = gate.get("segment")
        if named is None and not per_segment:
            return ()
        which = (*key, "segment") if named is not None else (*key, "per_segment")
        if named is not None and per_segment:
            raise self.error(which, "give `per_segment: true` or `segment: NAME`, not both")
        known = topic_file.segment_names if topic_file is not None else ()
        if not known:
            raise self.error(
                which,
                "a gate per segment needs segments: a topic file (`topics:`) with a segment column",
                "add a header line `topic<TAB>segment` (or with query and weight columns) to the topic file; see "
                "docs/spec.md, topics",
            )
        if analysis is not None and analysis.mve.variations is not None and STATISTICS[statistic].from_variations:
            raise self.error(which, f"{statistic} over query variations cannot be gated per segment")
        if named is None:
            return known
        if not isinstance(named, str) or named not in known:
            close = difflib.get_close_matches(str(named), known, n=1)
            raise self.error(
                which,
                f"{excerpt(str(named))} is not a segment of the topic file",
                f"did you mean {close[0]!r}?" if close else f"segments are: {', '.join(known)}",
            )
        return (named,)

    def power(self, value: Any, key: tuple[Any, ...]) -> PowerSpec:
        """``power: {draws, seed}`` (docs/mathematics.md §9), or ``power: false`` to leave each gate's power out."""
        if value is False:
            return PowerSpec(enabled=False)
        if value is True or value is None:
            return PowerSpec()
        power = self.check_keys(value, key, ("draws", "seed"), "power")
        return PowerSpec(
            draws=self.number(
                power.get("draws", PowerSpec.draws),
                (*key, "draws"),
                minimum=100,
                maximum=MAX_REPETITIONS,
                integer=True,
            ),
            seed=self.number(power.get("seed", PowerSpec.seed), (*key, "seed"), minimum=0, integer=True),
        )

    def detect(
        self,
        value: Any,
        key: tuple[Any, ...],
        statistic: str,
        reference: str | None,
        measures: Sequence[Measure | TableMeasure] = (),
    ) -> DetectAim:
        """The gate's stated aim (docs/mathematics.md §9): ``detect: 0.02``, ``detect: 5%`` (of the reference's
        mean score) or ``detect: {drop: 0.02, model: few}``; a drop in the measure's units lies within the range of
        each of ``measures`` (the gate's) that has a known one (:func:`measure_range`)."""
        example = "`detect: 0.02` (a drop of 0.02 on every query) or `detect: {drop: 0.02, model: few}`"
        if STATISTICS[statistic].from_simulation is not None:
            raise self.error(
                key,
                f"{statistic} is a statistic of the per-topic simulation: a drop in the scores does not reach it, "
                "so its power is not measured",
                "drop `detect` from this gate",
            )
        model = "uniform"
        drop_key = key
        if isinstance(value, Mapping):
            aim = self.check_keys(value, key, ("drop", "model"), "detect")
            if "drop" not in aim:
                raise self.error(key, "`detect` needs a `drop`", f"write {example}")
            model = aim.get("model", "uniform")
            if model not in REGRESSION_MODELS:
                raise self.error(
                    (*key, "model"),
                    f"unknown model {model!r}",
                    "use `uniform` (the drop on every query) or `few` (on a random 10% of the queries)",
                )
            value, drop_key = aim["drop"], (*key, "drop")
        if isinstance(value, str):
            match = _PERCENT.match(value)
            if not match:
                raise self.error(drop_key, f"expected a number or a percentage such as 5%, got {excerpt(value)}")
            share = float(match.group(1)) / 100.0
            if not 0 < share <= 1:
                raise self.error(drop_key, f"a relative drop lies above 0% and at most 100%, got {value.strip()}")
            if reference is None:
                raise self.error(
                    drop_key,
                    "a drop in percent is a share of the reference's mean score, and this gate has no reference",
                    "write the drop in the measure's units (0.02), or add `reference:`",
                )
            return DetectAim(share, model, relative=True)
        drop = self.number(value, drop_key)
        if drop <= 0:
            raise self.error(drop_key, f"a drop to detect is above 0, got {drop:g}", f"write {example}")
        beyond = [measure for measure in measures if drop > (measure_range(measure) or float("inf"))]
        if beyond:
            raise self.error(
                drop_key,
                f"a drop of {drop:g} is larger than {beyond[0]}'s whole range (0 to {measure_range(beyond[0]):g}): "
                "no score can drop that far, and every gate would seem to catch it",
                f"write a drop in {beyond[0]}'s units, at most {measure_range(beyond[0]):g} (0.02), or a share of "
                "the reference's mean (5%)",
            )
        return DetectAim(drop, model)

    def false_alarm(self, gate: Mapping[str, Any], key: tuple[Any, ...]) -> float | None:
        """The gate's false-alarm rate ``P`` (docs/mathematics.md §7): its limit is the null's P-quantile."""
        if gate.get("false_alarm") is None:
            return None
        return self.share(
            gate["false_alarm"],
            (*key, "false_alarm"),
            upper=0.5,
            example=0.05,
            meaning="it is the share of equal-quality changes the gate may fail",
        )

    def share(
        self, value: Any, key: tuple[Any, ...], *, upper: float, example: float, meaning: str | None = None
    ) -> float:
        """A share strictly between 0 and ``upper`` (``false_alarm``, ``confidence``), written as a number.

        A percentage is refused with the number to write: in a bound, ``5%`` means relative to the reference,
        and one spelling should not mean two things."""
        percentage = _PERCENT.match(value) if isinstance(value, str) else None
        if percentage is not None:
            raise self.error(
                key,
                f"got the percentage {value.strip()!r}; write {float(percentage.group(1)) / 100:g}, "
                f"a number between 0 and {upper:g}",
                "a percentage such as 5% is for max_increase / max_decrease, where it is relative to the reference",
            )
        share = self.number(value, key)
        if not 0 < share < upper:
            # a share written as a percentage without its % sign: say which number was meant
            meant = f"; for {share:g}% write {share / 100:g}" if 1 <= share < 100 * upper else ""
            raise self.error(
                key, f"must lie strictly between 0 and {upper:g} (e.g. {example:g}), got {share:g}{meant}", meaning
            )
        return share

    def bound(self, gate: Mapping[str, Any], key: tuple[Any, ...], statistic: str, *, calibrated: bool) -> Bound | None:
        kinds = [kind for kind in BOUND_KEYS if kind in gate]
        if calibrated and not kinds:
            return None
        if len(kinds) != 1:
            found = ", ".join(kinds) if kinds else "none"
            raise self.error(
                key,
                f"a gate needs exactly one bound of {', '.join(BOUND_KEYS)} or a `false_alarm` (found {found})",
                "write two gates for two bounds",
            )
        kind = kinds[0]
        raw = gate[kind]
        higher_is_better = STATISTICS[statistic].higher_is_better
        if calibrated and (kind in UPPER_BOUNDS) == higher_is_better:
            side = "a low" if higher_is_better else "a high"
            raise self.error(
                (*key, kind),
                f"`false_alarm` places a limit on the bad side ({side} {statistic}), "
                f"but `{kind}` bounds the other side",
                "write the two bounds as two gates",
            )
        if kind == "max_increase" and higher_is_better:
            raise self.error(
                (*key, kind),
                f"{statistic} is better when higher, so an increase is no regression",
                "use `max_decrease`",
            )
        if kind == "max_decrease" and not higher_is_better:
            raise self.error(
                (*key, kind), f"{statistic} is better when lower, so a decrease is no regression", "use `max_increase`"
            )
        if isinstance(raw, str):
            match = _PERCENT.match(raw)
            if not match:
                raise self.error((*key, kind), f"expected a number or a percentage such as 5%, got {raw!r}")
            if kind in ("max", "min"):
                raise self.error(
                    (*key, kind), "a percentage is relative to the reference: use it with max_increase / max_decrease"
                )
            share = float(match.group(1)) / 100.0
            if not math.isfinite(share) or abs(share) > _LARGEST_INTEGER:
                raise self.error(
                    (*key, kind), f"{excerpt(raw)} is too large a percentage", "write a percentage below 1e15%"
                )
            return Bound(kind, share, relative=True)
        return Bound(kind, self.number(raw, (*key, kind)), relative=False)


SIMULATED_EXAMPLES = "AP, P@k, R@k, RR, RR@k, nDCG, nDCG@k (binary gains), Rprec"


def simulated_form(measure: Measure | TableMeasure) -> tuple[str, int | None] | None:
    """``(name, cutoff)`` of :func:`~pytest_bvtest.stats.simulation.simulate_topic_bias_variance` for a
    measure the simulation can score, else ``None`` (graded gains, another threshold, ``-J``, ERR, ...)."""
    if not isinstance(measure, Measure) or measure.name not in SIMULATED_MEASURES:
        return None
    binary = (
        measure.rel in (None, 1) and not measure.judged_only and not measure.exponential_gain and measure.gains is None
    )
    if (
        not binary
        or (measure.name in ("P", "R") and measure.cutoff is None)
        or (measure.name == "Rprec" and measure.cutoff)
    ):
        return None
    return measure.name, measure.cutoff


def _has_run_files(source: Source) -> bool:
    """True when ``source`` is a run file or repeated runs that include one (they need qrels)."""
    return any(isinstance(run, RunFile) for run in (source.runs if isinstance(source, RepeatedRuns) else (source,)))


def source_name(source: Source) -> str:
    """The name a source's system has in the evaluation (the candidate's ``name``, a renamed table system)."""
    if isinstance(source, ScoreTableFile):
        return source.rename.get(source.systems[0], source.systems[0])
    return source.name or CANDIDATE_NAME


def _clashes(gates: Sequence[GateSpec]) -> list[int]:
    """For each gate, how many earlier gates would share its test id on some measure: same name and segment,
    and a measure in common (no measure: every measure).

    Linear in the gates (a spec may hold thousands): gates are counted per name and segment, and within
    those per measure, with the gates of every measure apart.
    """
    per_measure: dict[tuple[str, Any, str | None], int] = defaultdict(int)
    any_measure: dict[tuple[str, Any], int] = defaultdict(int)
    every_measure: dict[tuple[str, Any], int] = defaultdict(int)
    earlier = []
    for gate in gates:
        group = (gate.name, gate.segment)
        if gate.measure is None:
            earlier.append(any_measure[group])
            every_measure[group] += 1
        else:
            earlier.append(per_measure[(*group, gate.measure)] + every_measure[group])
            per_measure[(*group, gate.measure)] += 1
        any_measure[group] += 1
    return earlier


def _disambiguate_names(gates: list[GateSpec]) -> None:
    """Give gates that would share a test id distinct names: first by bound kind, then by number (the second
    of a name is ``#2``, the third ``#3``)."""
    earlier = _clashes(gates)
    later = _clashes(gates[::-1])[::-1]
    for index, clash in enumerate(zip(earlier, later)):
        if any(clash):
            gates[index] = replace(gates[index], name=f"{gates[index].name}[{gates[index].kind}]")
    for index, count in enumerate(_clashes(gates)):
        if count:
            gates[index] = replace(gates[index], name=f"{gates[index].name}#{count + 1}")


def _spelling(name: str) -> str:
    """``name`` reduced to letters and digits, ``²`` as 2, ``+`` as plus and ``ρ`` as rho: ``Bias²+Var``,
    ``bias2+var`` and ``bias2_plus_var`` are one spelling."""
    spelled = name.lower().replace("²", "2").replace("+", "plus").replace("ρ", "rho")
    return re.sub(r"[^a-z0-9]+", "", spelled)


#: Each statistic under the spellings of its name and of its label in the reports.
_STATISTIC_SPELLINGS = {
    _spelling(spelled): name for name, entry in STATISTICS.items() for spelled in (entry.label, name)
}


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {excerpt(value)}"


def _compose(path: Path) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The YAML document at ``path`` as plain Python values, and the line of every key path.

    Bounded: a spec larger than :data:`MAX_SPEC_BYTES` or expanding (through YAML aliases) to more
    than :data:`MAX_SPEC_VALUES` values is refused before it can use much time or memory.
    """
    try:
        size = require_regular_file(path)
    except InputError as error:
        raise InputError(
            "spec file not found" if error.message == "file not found" else f"the spec {error.message}",
            path=path,
            hint=error.hint if error.message != "file not found" else None,
        ) from None
    if size > MAX_SPEC_BYTES:
        raise InputError(
            f"the spec is {size:,} bytes, more than a spec needs ({MAX_SPEC_BYTES:,} at most)",
            path=path,
            hint="is this the right file?",
        )
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        line = error.object[: error.start].count(b"\n") + 1
        raise InputError(
            "not UTF-8 text (a binary or wrongly encoded file?)", path=path, line=line, hint="save the spec as UTF-8"
        ) from None
    except OSError as error:
        raise InputError(f"cannot read the spec ({error.strerror or error})", path=path) from None
    if "\x00" in text:
        raise nul_byte_error(path, text[: text.index("\x00")].count("\n") + 1)
    try:
        root = _composed(path, text, _FAST_LOADER)
    except yaml.YAMLError:
        try:  # the pure-Python parser's words for what is wrong, which the error quotes
            root = _composed(path, text, _PythonLoader)
        except yaml.YAMLError as error:
            raise _yaml_error(path, error) from None
    lines: dict[tuple[Any, ...], int] = {}
    constructor = _CoreSchemaConstructor()
    converted = 0

    def plain(node: yaml.Node) -> yaml.Node:
        if not node.tag.startswith(_STANDARD_TAG) or node.tag.startswith(f"{_STANDARD_TAG}python/"):
            raise InputError(
                f"the YAML tag {excerpt(node.tag.replace(_STANDARD_TAG, '!!'))} is not allowed in a spec",
                path=path,
                line=node.start_mark.line + 1,
                hint="specs are plain YAML: remove the tag",
            )
        return node

    def scalar(node: yaml.Node, *, is_key: bool = False) -> Any:
        # a key is a name (a section's, a system's, a topic's) and stays the text it is written as: `1e3:`, `2024:`
        try:
            value = node.value if is_key else constructor.construct_object(node, deep=True)
        except yaml.YAMLError as error:
            raise _yaml_error(path, error) from None
        if isinstance(value, str) and CONTROL_CHARACTER.search(value):
            # a newline in a gate's or a system's name reaches pytest's output at the start of a line, where GitHub
            # Actions reads it as a workflow command (`::error ...`, `::add-mask::`); an ESC recolours a terminal
            raise InputError(
                f"{excerpt(value)} holds a control character "
                f"({excerpt(CONTROL_CHARACTER.search(value).group())}); a spec's names and paths are plain text",
                path=path,
                line=node.start_mark.line + 1,
                hint="remove it (a quoted `\\n`, `\\e` or `\\x1b` writes one)",
            )
        return value

    def convert(node: yaml.Node, key: tuple[Any, ...]) -> Any:
        nonlocal converted
        plain(node)
        converted += 1
        if converted > MAX_SPEC_VALUES:
            raise InputError(
                f"the spec expands to more than {MAX_SPEC_VALUES:,} values (YAML aliases repeating aliases?)",
                path=path,
                line=node.start_mark.line + 1,
                hint="write the spec without nested aliases",
            )
        lines.setdefault(key, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise InputError(
                        f"a {'list' if isinstance(key_node, yaml.SequenceNode) else 'mapping'} where a key belongs",
                        path=path,
                        line=line,
                        hint="a key is a plain name followed by `:`",
                    )
                name = scalar(plain(key_node), is_key=True)
                if name in result:
                    raise InputError(
                        f"key {excerpt(str(name))} appears twice (first on line {lines[(*key, name)]})",
                        path=path,
                        line=line,
                        hint="YAML keeps only one; remove the duplicate",
                    )
                lines[(*key, name)] = line
                result[name] = convert(value_node, (*key, name))
            return result
        if isinstance(node, yaml.SequenceNode):
            return [convert(item, (*key, index)) for index, item in enumerate(node.value)]
        return scalar(node)

    return (None if root is None else convert(root, ())), lines


class _CoreSchemaResolver(yaml.resolver.BaseResolver):
    """The tags of plain scalars as YAML 1.2's core schema gives them (docs/spec.md promises YAML 1.2), where
    PyYAML's resolver follows YAML 1.1: ``12:30`` was the sexagesimal 750, ``0b1`` and ``010`` the numbers 1 and 8,
    ``yes``/``off`` booleans, ``2024-01-01`` a date, and ``1e-3`` text. Here each of those is text (``1e-3`` a
    number), and a key's checks refuse it where a number or a boolean belongs."""


for _tag, _pattern, _first in (
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", list("-+0123456789")),
    (
        "float",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        list("-+.0123456789"),
    ),
):
    _CoreSchemaResolver.add_implicit_resolver(f"{_STANDARD_TAG}{_tag}", re.compile(f"^(?:{_pattern})$"), _first)


class _CoreSchemaConstructor(yaml.constructor.SafeConstructor):
    """PyYAML's safe constructor with YAML 1.2's integers and floats (``010`` is ten, not the octal eight; no
    ``1_000``, ``0b1`` or ``1:30``), for scalars the resolver above tagged or a spec tagged ``!!int``/``!!float``."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = self.construct_scalar(node)
        match = re.fullmatch(r"([-+]?)(?:([0-9]+)|0o([0-7]+)|0x([0-9a-fA-F]+))", text)
        if match is None:
            raise yaml.constructor.ConstructorError(
                None, None, f"{excerpt(text)} is not a YAML 1.2 integer", node.start_mark
            )
        sign, decimal, octal, hexadecimal = match.groups()
        value = int(decimal, 10) if decimal else int(octal, 8) if octal else int(hexadecimal, 16)
        return -value if sign == "-" else value

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        text = self.construct_scalar(node)
        special = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}.get(text.lower())
        if special is not None:
            return special
        if not re.fullmatch(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?", text):
            raise yaml.constructor.ConstructorError(
                None, None, f"{excerpt(text)} is not a YAML 1.2 number", node.start_mark
            )
        return float(text)


_CoreSchemaConstructor.add_constructor(f"{_STANDARD_TAG}int", _CoreSchemaConstructor.construct_yaml_int)
_CoreSchemaConstructor.add_constructor(f"{_STANDARD_TAG}float", _CoreSchemaConstructor.construct_yaml_float)


class _PythonLoader(
    yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, _CoreSchemaResolver
):
    """The pure-Python parser and composer, with YAML 1.2's tags: its words for what is wrong are the error's."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _CoreSchemaResolver.__init__(self)


# libyaml's parser where PyYAML has it (its wheels do; a spec of 200 baselines took 0.2 s to compose in Python), with
# the same resolver: both loaders give one tree.
if yaml.__with_libyaml__:

    class _FastLoader(yaml.cyaml.CParser, _CoreSchemaResolver):
        def __init__(self, stream: str) -> None:
            yaml.cyaml.CParser.__init__(self, stream)
            _CoreSchemaResolver.__init__(self)

    _FAST_LOADER: type = _FastLoader
else:  # pragma: no cover - PyYAML built without libyaml
    _FAST_LOADER = _PythonLoader


def _composed(path: Path, text: str, loader: type) -> yaml.Node | None:
    _check_nesting(path, text, loader)
    return yaml.compose(text, Loader=loader)


def _check_nesting(path: Path, text: str, loader: type) -> None:
    """Refuse lists and mappings nested deeper than :data:`MAX_SPEC_DEPTH`, at the line where they do, before
    the recursive composer meets them (a list nested 5,000 deep raised RecursionError)."""
    depth = 0
    for token in yaml.scan(text, Loader=loader):
        if isinstance(token, _OPENING_TOKENS):
            depth += 1
            if depth > MAX_SPEC_DEPTH:
                raise InputError(
                    f"lists and mappings nest more than {MAX_SPEC_DEPTH} deep",
                    path=path,
                    line=token.start_mark.line + 1,
                    hint="a spec nests a few levels; is this the right file?",
                )
        elif isinstance(token, _CLOSING_TOKENS):
            depth -= 1


_OPENING_TOKENS = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSING_TOKENS = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def _yaml_error(path: Path, error: yaml.YAMLError) -> InputError:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return InputError(
        f"invalid YAML: {excerpt(problem, 200)[1:-1]}",
        path=path,
        line=mark.line + 1 if mark else None,
        hint="check indentation and quoting around this line (specs are plain YAML, without tags)",
    )


def load_spec(path: str | os.PathLike[str], *, qrels: tuple[Qrels, str] | None = None) -> Spec:
    """Read and validate the spec at ``path``; every problem is an :class:`InputError` with its line.

    ``qrels``, judgments held in memory and what they are (``DataFrame``), replace the spec's ``qrels:`` (which may
    then be left out)."""
    spec_path = Path(os.path.realpath(path))
    document, lines = _compose(spec_path)
    reader = _SpecReader(spec_path, lines)
    reader.given_qrels = qrels
    return reader.read(document)


def with_qrels(spec: Spec, qrels: Qrels, source: str) -> Spec:
    """``spec`` with its judgments replaced by ``qrels`` held in memory (a DataFrame), named ``source``."""
    replaced = replace(spec, qrels=None, extra_qrels=(), qrels_judgments=qrels, qrels_source=source)
    check_combinations(replaced)
    return replaced


#: Measures that count documents: they have no upper end, and a drop in them may be any size.
_COUNTS = ("NumRet", "NumRel")


def measure_range(measure: Measure | TableMeasure) -> float | None:
    """How far a score of ``measure`` can drop: 1 for every measure the project computes but the counts (their
    scores lie in [0, 1]), ``None`` when it is unknown (a count, a measure read from a table)."""
    if isinstance(measure, TableMeasure) or measure.name in _COUNTS:
        return None
    return 1.0


def check_combinations(spec: Spec) -> None:
    """The checks that read several sections of ``spec`` at once, raised at the line of the section that
    cannot work with the others, so a broken spec fails before anything is evaluated."""
    tables = [isinstance(source, ScoreTableFile) for source in spec.sources()]
    mve = spec.analysis.mve
    repeated = [source.name for source in spec.sources() if isinstance(source, RepeatedRuns)]
    for section, what in (("variations", "query variations"), ("simulation", "the per-topic simulation")):
        wanted = mve.variations if section == "variations" else spec.analysis.simulation
        if repeated and wanted is not None:
            raise InputError(
                f"{what} read one run per system, but {repeated[0]!r} is given as several runs",
                path=spec.path,
                line=spec.line_of("analysis", "mve", "variations")
                if section == "variations"
                else spec.line_of("analysis", "simulation"),
                hint=f"give {repeated[0]!r} as one run, or remove `{section}`",
            )
    if mve.variations is not None and not spec.has_qrels and not all(tables):
        raise InputError(
            "query variations from run files need relevance judgments",
            path=spec.path,
            line=spec.line_of("analysis", "mve", "variations"),
            hint="add `qrels:`, or give every system as a per-query score table",
        )
    if spec.analysis.simulation is not None:
        simulation = spec.line_of("analysis", "simulation")
        if not spec.has_qrels or mve.variations is not None:
            raise InputError(
                "the per-topic simulation needs run files and qrels, without query variations",
                path=spec.path,
                line=simulation,
            )
        if any(tables):
            raise InputError(
                "the per-topic simulation needs run files: per-topic tables have no rankings",
                path=spec.path,
                line=simulation,
            )
    for index, gate in enumerate(spec.gates):
        if gate.detect is None:
            continue
        if not spec.analysis.power.enabled:
            raise InputError(
                "`detect` needs the gate's power, and `analysis: {power: false}` leaves it out",
                path=spec.path,
                line=spec.line_of("gates", index, "detect"),
                hint="drop `detect`, or `power: false`",
            )
        if mve.variations is not None and STATISTICS[gate.statistic].from_variations is not None:
            raise InputError(
                f"`detect` on {gate.statistic} over query variations: its power is not measured (a drop of one "
                "query's score moves it only through its topic's variations)",
                path=spec.path,
                line=spec.line_of("gates", index, "detect"),
                hint="drop `detect` from this gate",
            )
    rankings = spec.analysis.rankings
    if rankings is not None and not any(tables) and len(spec.sources()) < 2:
        # a table may hold several systems: those are counted once it is read
        raise InputError(
            "rankings need at least 2 systems",
            path=spec.path,
            line=spec.line_of("analysis", "rankings"),
            hint="add baselines, or remove `rankings`",
        )
    if rankings is not None and spec.reference is None:
        for name in (rankings.against, *rankings.statistics):
            if STATISTICS[name].needs_reference:
                raise InputError(
                    f"systems cannot be ranked by {name}: it needs a reference system",
                    path=spec.path,
                    line=spec.line_of("analysis", "rankings"),
                    hint="add a baseline (the first is the reference) or rank by another statistic",
                )


_OWN_RUNS_HINT = "list only runs of the system under test: several runs of one engine, each of them once"


def _run_key(run: SingleSource) -> tuple[Path, str | None] | None:
    """What makes two runs the same system: the file and its tag, or a table's file and system (``None`` in memory)."""
    if isinstance(run, RunFile):
        return run.path.resolve(), run.tag
    if isinstance(run, ScoreTableFile):
        return run.path.resolve(), run.systems[0] if run.systems else None
    return None


def baseline_run_among(candidate: Source, baselines: Mapping[str, Source]) -> tuple[int, str, SingleSource] | None:
    """The first of a candidate's several runs that is a baseline's run: its position, the baseline and the run.

    A candidate's runs are runs of the system under test, and its score is their mean: a baseline's run among them
    would pull that mean towards the baseline (halfway, with two runs), and the check would judge a blend
    (docs/spec.md, "Several runs of one system"). ``None`` for a candidate of one run (a candidate identical to a
    baseline is a guard's concern, not an error).
    """
    if not isinstance(candidate, RepeatedRuns):
        return None
    owners = {
        _run_key(run): name
        for name, source in baselines.items()
        for run in (source.runs if isinstance(source, RepeatedRuns) else (source,))
        if _run_key(run) is not None
    }
    for index, run in enumerate(candidate.runs):
        key = _run_key(run)
        if key is not None and key in owners:
            return index, owners[key], run
    return None


def _baseline_run_message(run: SingleSource, baseline: str) -> str:
    what = f"run {run.path.name}" if isinstance(run, RunFile) else f"table system {run.systems[0]!r}"  # type: ignore[union-attr]
    return (
        f"{what} belongs to baseline {baseline!r}: among the candidate's runs it would pull their mean towards "
        f"{baseline} (halfway with two runs), and the check would judge that blend"
    )


def with_candidate(spec: Spec, candidate: Source) -> Spec:
    """``spec`` with another system under test, checked again (the candidate's kind matters; several runs of it
    hold no baseline's run, :func:`baseline_run_among`)."""
    found = baseline_run_among(candidate, spec.baselines)
    if found is not None:
        index, name, run = found
        raise InputError(
            f"candidate run {index + 1} of {len(candidate.runs)}: {_baseline_run_message(run, name)}",  # type: ignore[union-attr]
            path=getattr(run, "path", None),
            hint=f"{_OWN_RUNS_HINT} (--bvtest-run / --run)",
        )
    replaced = replace(spec, candidate=candidate)
    check_combinations(replaced)
    return replaced


def with_candidate_run(spec: Spec, path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> Spec:
    """``spec`` with its candidate replaced by a run file (``--bvtest-run``), or by several runs of one system
    (``--bvtest-run`` repeated, or a quoted glob such as ``'runs/new-*.run'``, expanded in sorted order)."""
    paths = [path] if isinstance(path, str | os.PathLike) else list(path)
    if not paths:
        raise InputError("no candidate run given", hint="give the run file to test with --bvtest-run / --run")
    runs: list[RunFile] = []
    for each in paths:
        if not str(each).strip():
            raise InputError(
                'the candidate run\'s path is empty (an unset variable in `--bvtest-run "$RUN"`?)',
                hint="give the run file to test with --bvtest-run / --run",
            )
        matched = [each]
        if not os.path.lexists(each) and glob.has_magic(str(each)):
            matched = sorted(glob.glob(str(each)))
            if not matched:
                raise InputError(
                    f"candidate run pattern {excerpt(str(each))} matches no file", hint="check --bvtest-run / --run"
                )
        for found in matched:
            try:
                require_regular_file(found)
            except InputError as error:
                problem = "not found" if error.message == "file not found" else error.message
                raise InputError(f"candidate run {problem}", path=found, hint="check --bvtest-run / --run") from None
            run = RunFile(Path(os.path.realpath(found)), name=CANDIDATE_NAME)
            if run in runs:
                raise InputError(
                    "candidate run given twice: it would count twice in the mean of the candidate's runs",
                    path=found,
                    hint="give each run once to --bvtest-run / --run",
                )
            runs.append(run)
    replaced = with_candidate(spec, runs[0] if len(runs) == 1 else RepeatedRuns(tuple(runs), CANDIDATE_NAME))
    return replace(replaced, candidate_given=tuple(os.fspath(each) for each in paths))
