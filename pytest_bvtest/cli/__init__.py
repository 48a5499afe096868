"""The ``bvtest`` command: the gate without pytest, per-topic evaluation, gate calibration and history.

Exit codes: 0 success (every gate passed; ``calibrate`` always, it only reports), 1 a gate failed,
2 invalid input or usage (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TextIO

from pytest_bvtest import DEFAULT_CACHE_DIR, __version__
from pytest_bvtest.blas import one_thread_for_this_process, one_thread_while_computing
from pytest_bvtest.errors import BvtestError, InputError, short_list

if TYPE_CHECKING:
    from pytest_bvtest.judging.decision import Verdict
    from pytest_bvtest.judging.documents import DocumentToJudge
    from pytest_bvtest.judging.evaluation import Evaluation
    from pytest_bvtest.spec.model import CalibrationSpec, RunFile, Spec

# The pipeline is imported by the command that runs it, so `bvtest --help` and usage errors answer at once.

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INPUT_ERROR = 2


class _Writer:
    """The small part of pytest's terminal writer that the summary renderer uses."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        # the summary wraps at the terminal's width, as under pytest (COLUMNS, else 80 when not a terminal)
        self._tw = SimpleNamespace(fullwidth=shutil.get_terminal_size().columns)

    def write_sep(self, sep: str, title: str = "", **markup: bool) -> None:
        width = self._tw.fullwidth
        line = f" {title} ".center(width, sep) if title else sep * width
        self.stream.write(line + "\n")

    def write_line(self, text: str = "", **markup: bool) -> None:
        self.stream.write(text + "\n")


class _TerminalText:
    """A text stream that writes what a terminal or a CI log may show
    (:func:`~pytest_bvtest.report.untrusted.terminal_text`): the reports of ``check``, ``report``, ``calibrate``,
    ``history`` and ``judge``, whose names and query texts come from the inputs. ``evaluate``'s TSV and a judge file
    written to stdout are data, written as they are."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        from pytest_bvtest.report.untrusted import terminal_text

        return self.stream.write(terminal_text(text))

    def flush(self) -> None:
        self.stream.flush()


def _say(message: str) -> None:
    """One line on stderr (an error, a warning, a note), as a terminal or a CI log may show it."""
    _TerminalText(sys.stderr).write(message + "\n")


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 2 like input errors, without a traceback
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT_ERROR, f"bvtest: error: {message}\n")


def _jobs(text: str) -> int:
    """``-j N``: a whole number of processes, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"-j needs a whole number of processes, at least 1, got {text!r}")
    return int(text)


#: What each command's ``--help`` says below its options: what it is for, examples, and its exit codes.
_GUIDES: dict[str, tuple[str, str, str]] = {
    "evaluate": (
        "Per-topic scores of run files as TSV (topic, system, measure, score) on stdout: the numbers every gate reads,"
        " to compare with trec_eval or a notebook.",
        "bvtest evaluate --qrels eval/qrels.txt -m nDCG@10 -m AP runs/*.run\n"
        "  bvtest evaluate --qrels eval/qrels.txt -m nDCG@10 --mean runs/candidate.run",
        "0 the scores were written; 2 an input or usage error (one line on stderr)",
    ),
    "compare": (
        "Every system against every other on each measure: the mean difference, paired tests corrected over the "
        "pairs, as a table.",
        "bvtest compare --spec bvtest.yaml\n"
        "  bvtest compare --qrels eval/qrels.txt -m nDCG@10 --test randomization runs/*.run --format markdown",
        "0 the table was written; 2 an input or usage error",
    ),
    "check": (
        "The spec's gates without pytest: the same verdict, terminal summary and reports as `pytest bvtest.yaml`.",
        "bvtest check bvtest.yaml\n"
        "  bvtest check bvtest.yaml --run runs/new.run --markdown reports/bvtest.md --html reports/bvtest.html\n"
        "  bvtest check bvtest.yaml --run 'runs/new-*.run'          # several runs of a nondeterministic engine\n"
        "  bvtest check bvtest.yaml --run runs/new.run --update     # after merge: the run becomes the reference",
        "0 every gate passed (OK, OK*, or UNDECIDED under judgments: {undecided: warn}); 1 a gate failed; 2 an input "
        "or usage error (one line on stderr, no traceback)",
    ),
    "report": (
        "The spec's analysis without its gates: every system's statistics, the comparisons and the notes.",
        "bvtest report bvtest.yaml\n  bvtest report bvtest.yaml --html reports/analysis.html --plots reports/plots",
        "0 the analysis was written; 2 an input or usage error",
    ),
    "judge": (
        "The unjudged documents that decide the spec's gates, most settling first, as a TSV to fill in with grades;"
        " list the filled-in file under the spec's qrels, after the official ones.",
        "bvtest judge bvtest.yaml -o judgments.tsv\n  bvtest judge bvtest.yaml --run runs/new.run -o -",
        "0 the file was written; 2 an input or usage error (FILE holds grades: --force)",
    ),
    "history": (
        "Each gate over the records of a --bvtest-history file: its value and limit, one line per record.",
        "bvtest history reports/history.jsonl\n  bvtest history reports/history.jsonl --plot reports/history",
        "0 the history was written; 2 an input or usage error",
    ),
    "calibrate": (
        "How often each gate fails an equal-quality change (the candidate's and the reference's scores swapped on "
        "random topics), the calibrated limits, and with --detect how large a drop each gate catches.",
        "bvtest calibrate bvtest.yaml\n  bvtest calibrate bvtest.yaml --detect 5% --model few",
        "0 always (it only reports); 2 an input or usage error",
    ),
}


def _add_command(commands: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` has its description, examples and exit codes (:data:`_GUIDES`)."""
    description, examples, exits = _GUIDES[name]
    # the examples keep their lines; the sentences are wrapped as argparse wraps the options
    width = min(shutil.get_terminal_size().columns, 100) - 2
    return commands.add_parser(
        name,
        help=help_text,
        description=textwrap.fill(description, width),
        epilog=f"examples:\n  {examples}\n\n" + textwrap.fill(f"exit codes: {exits}", width, subsequent_indent="  "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="bvtest", description="Search-quality gates: bias-variance, risk and mean-variance evaluation."
    )
    parser.add_argument("--version", action="version", version=f"pytest-bvtest {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)

    evaluate = _add_command(commands, "evaluate", "print per-topic scores of runs as TSV")
    evaluate.add_argument(
        "--qrels",
        required=True,
        action="append",
        help="qrels file (qid iter docno grade), or a judge file filled in; repeat it to read several as one, "
        "in order (a later file adds judgments and may not change one)",
    )
    evaluate.add_argument(
        "-m",
        "--measure",
        action="append",
        required=True,
        dest="measures",
        help="measure in ir_measures syntax (repeatable), e.g. nDCG@10, AP(rel=2), ERR@20",
    )
    evaluate.add_argument("--mean", action="store_true", help="print one mean per system and measure instead")
    evaluate.add_argument("--tag", default=None, help="evaluate only this run tag of files that hold several systems")
    evaluate.add_argument(
        "--cache-dir", default=None, help=f"per-topic score cache (default: none; e.g. {DEFAULT_CACHE_DIR})"
    )
    evaluate.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=os.cpu_count() or 1,
        metavar="N",
        help="evaluate up to N run files at once, each in its own process (default: the core count)",
    )
    evaluate.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="TREC run files (.gz allowed), each named by its run tag; NAME=RUN names it (runs that share a tag, "
        "as Anserini's and Pyserini's do)",
    )

    compare = _add_command(
        commands,
        "compare",
        "every system against every other on each measure: paired tests, corrected, as a table (ranx's)",
    )
    compare.add_argument("--spec", default=None, metavar="SPEC", help="compare the systems of this bvtest.yaml")
    compare.add_argument(
        "--qrels", action="append", default=None, help="qrels file of the runs given (repeatable, as for evaluate)"
    )
    compare.add_argument(
        "-m", "--measure", action="append", default=None, dest="measures", help="measure of the runs (repeatable)"
    )
    compare.add_argument(
        "--test",
        default=None,
        help="the paired test whose corrected p-values mark the table: t, wilcoxon or randomization (default: the "
        "spec's analysis.compare, else t)",
    )
    compare.add_argument(
        "--correction",
        default=None,
        help="correction over the pairs of each measure: holm, bonferroni, fdr_bh or none (default: the spec's, "
        "else holm)",
    )
    compare.add_argument(
        "--alpha", type=float, default=None, help="significance level (default: the spec's, else 0.05)"
    )
    compare.add_argument(
        "--format",
        choices=("text", "markdown", "latex"),
        default="text",
        help="text (the table and every pair), markdown or latex (the table)",
    )
    compare.add_argument(
        "--permutations", type=int, default=None, help="sign flips of the randomization test (default 10,000)"
    )
    compare.add_argument("--seed", type=int, default=None, help="seed of the sign flips (default: the spec's, 0)")
    compare.add_argument("--no-cache", action="store_true", help="do not use the spec's per-topic score cache")
    compare.add_argument("runs", nargs="*", metavar="RUN", help="run files (NAME=RUN names one), with --qrels and -m")

    for name, help_text in (
        ("check", "run the spec's gates (exit 1 when one fails)"),
        ("report", "print the analysis without gating"),
    ):
        command = _add_command(commands, name, help_text)
        command.add_argument("spec", metavar="SPEC", help="bvtest.yaml")
        command.add_argument(
            "--run",
            action="append",
            default=None,
            help="run file to test instead of the spec's candidate; repeat it (or quote a glob) for several runs "
            "of a nondeterministic engine, whose mean is judged",
        )
        command.add_argument("--json", default=None, metavar="PATH", help="write the JSON report here")
        command.add_argument("--markdown", default=None, metavar="PATH", help="write the Markdown summary here")
        command.add_argument("--html", default=None, metavar="PATH", help="write the self-contained HTML report here")
        command.add_argument(
            "--plots", default=None, metavar="DIR", help="write Bias²/Var plots here (needs matplotlib)"
        )
        command.add_argument("--no-cache", action="store_true", help="do not use the per-topic score cache")
        command.add_argument(
            "-j",
            "--jobs",
            type=_jobs,
            default=os.cpu_count() or 1,
            metavar="N",
            help="evaluate up to N uncached run files at once, each in its own process (default: the core count)",
        )
        command.add_argument(
            "--allow-outside-project",
            action="store_true",
            help="allow the spec's cache folder (and check's updated reference) outside the project",
        )
    check = commands.choices["check"]
    check.add_argument(
        "--update",
        action="store_true",
        help="when every gate passed, make the candidate run the stored reference run (after merge)",
    )
    check.add_argument("--update-force", action="store_true", help="--update even when a gate failed")

    judge = _add_command(
        commands, "judge", "write the unjudged documents that decide the spec's gates, as a file to fill in with grades"
    )
    judge.add_argument("spec", metavar="SPEC", help="bvtest.yaml")
    judge.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the judge file to write (TSV); - writes it to stdout"
    )
    judge.add_argument(
        "--run",
        action="append",
        default=None,
        help="run file to judge instead of the spec's candidate (repeatable, as for check: every run's documents)",
    )
    judge.add_argument(
        "--force", action="store_true", help="write over FILE even when it holds grades, or is not a judge file"
    )
    judge.add_argument(
        "--predict",
        nargs="?",
        const="",
        default=None,
        metavar="CMD",
        help="also run a predictor on the documents to judge and on a sample of judged ones (CMD, or the spec's "
        "judgments.predictor), and write its grades to the predictions file (docs/predictions.md)",
    )
    judge.add_argument(
        "--predictions",
        default=None,
        metavar="FILE",
        help="where --predict writes the predicted grades (default: the spec's judgments.predictions)",
    )
    judge.add_argument(
        "--predict-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long the predictor may run (default 3600)",
    )
    judge.add_argument("--no-cache", action="store_true", help="do not use the per-topic score cache")
    judge.add_argument(
        "--allow-outside-project", action="store_true", help="allow the spec's cache folder outside the project"
    )

    history = _add_command(commands, "history", "each gate over the records of a --bvtest-history file")
    history.add_argument("path", metavar="PATH", help="the history file (JSON lines)")
    history.add_argument(
        "--plot",
        default=None,
        metavar="DIR",
        help="write one SVG chart per gate here: its value over time and its limit",
    )

    calibrate = _add_command(commands, "calibrate", "false-alarm rates and calibrated limits of the spec's gates")
    calibrate.add_argument("spec", metavar="SPEC", help="bvtest.yaml")
    calibrate.add_argument(
        "--run",
        action="append",
        default=None,
        help="run file to calibrate for instead of the spec's candidate (repeatable, as for check)",
    )
    calibrate.add_argument(
        "--swaps", type=int, default=None, help="Monte-Carlo swaps (default: the spec's calibration.swaps)"
    )
    calibrate.add_argument("--seed", type=int, default=None, help="seed of the swaps (default: the spec's, 0)")
    calibrate.add_argument(
        "--detect",
        default=None,
        metavar="DROP",
        help="a drop in a query's score to catch (0.02, or 5%% of the reference's mean): each gate's power at it "
        "and about how many topics it needs to catch it 80%% of the time",
    )
    calibrate.add_argument(
        "--model",
        choices=("uniform", "few"),
        default="uniform",
        help="where --detect drops the score: on every query (uniform, the default) or on 10%% of them (few)",
    )
    calibrate.add_argument("--no-cache", action="store_true", help="do not use the per-topic score cache")
    return parser


def _evaluate(arguments: argparse.Namespace, out: TextIO) -> int:
    from pytest_bvtest.scoring.cache import ScoreCache
    from pytest_bvtest.scoring.matrix import MatrixBuilder
    from pytest_bvtest.spec.measures import Measure, Residual, parse_measure

    measures = [parse_measure(text) for text in arguments.measures]
    # RBP's residual is printed below each RBP measure: what its unjudged documents could still add
    residuals = [Residual(measure) for measure in measures if measure.name == "RBP"]
    builder = MatrixBuilder.from_qrels_file(list(arguments.qrels), ScoreCache(arguments.cache_dir), jobs=arguments.jobs)
    sources = [_named_run(text, arguments.tag) for text in arguments.runs]
    matrices = builder.build([*measures, *residuals], sources)
    if arguments.mean:
        out.write("system\tmeasure\tmean\n")
    else:
        out.write("system\ttopic\tmeasure\tvalue\n")
    for measure, matrix in matrices.items():
        for i, system in enumerate(matrix.systems):
            if arguments.mean:
                # GMAP's per-topic values are logs: its summary is exp of their mean, as trec_eval's
                summary = (
                    measure.aggregate(matrix.scores[i]) if isinstance(measure, Measure) else matrix.scores[i].mean()
                )
                out.write(f"{system}\t{matrix.measure}\t{float(summary)!r}\n")
                continue
            for j, topic in enumerate(matrix.topics):
                out.write(f"{system}\t{topic}\t{matrix.measure}\t{float(matrix.scores[i, j])!r}\n")
    notes = next(iter(matrices.values()))  # missing and ignored topics are the same for every measure
    for system in notes.systems:
        missing = notes.missing_topics(system)
        if missing:
            _say(f"bvtest: {system}: {len(missing)} topic(s) without a ranking scored 0: {short_list(missing)}")
        ignored = notes.ignored_topics.get(system, ())
        if ignored:
            _say(
                f"bvtest: {system}: {len(ignored)} topic(s) outside the evaluated topics "
                f"(not judged, or no relevant document) ignored: {short_list(ignored)}"
            )
    return EXIT_OK


def _named_run(text: str, tag: str | None) -> RunFile:
    """A ``bvtest evaluate`` run argument: ``path``, named by its run tag, or ``NAME=path`` (a path that exists is a
    path, ``=`` in it or not)."""
    from pytest_bvtest.spec.model import RunFile

    name, separator, path = text.partition("=")
    if not separator or os.path.lexists(text):
        return RunFile(Path(text), tag=tag)
    if not name.strip() or not path:
        raise InputError(
            f"run {text!r}: NAME=RUN needs a name and a run file", hint="e.g. bm25=runs/bm25.run, or the run alone"
        )
    return RunFile(Path(path), tag=tag, name=name.strip())


def _compare(arguments: argparse.Namespace, out: TextIO) -> int:
    """Every system against every other: the table (and, as text, every pair) of ``analysis.compare``'s test and
    correction, or those the options choose."""
    from dataclasses import replace

    from pytest_bvtest.judging.comparisons import RANDOMIZATION_PERMUTATIONS, pairwise_comparisons
    from pytest_bvtest.report import compare
    from pytest_bvtest.report.jsonreport import pairwise_document
    from pytest_bvtest.spec.model import COMPARISON_CORRECTIONS, COMPARISON_TESTS, CompareSpec

    for option, value, choices in (
        ("--test", arguments.test, COMPARISON_TESTS),
        ("--correction", arguments.correction, COMPARISON_CORRECTIONS),
    ):
        if value is not None and value not in choices:
            raise InputError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    if arguments.alpha is not None and not 0 < arguments.alpha < 1:
        raise InputError(f"--alpha must lie between 0 and 1, got {arguments.alpha:g}")
    if arguments.permutations is not None and arguments.permutations < 1:
        raise InputError(f"--permutations must be at least 1, got {arguments.permutations}")
    settings, seed = CompareSpec(), 0
    if arguments.spec is not None:
        if arguments.runs or arguments.qrels or arguments.measures:
            raise InputError(
                "give either --spec or runs with --qrels and -m, not both",
                hint="the spec names its systems, qrels and measures",
            )
        from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test

        spec = spec_under_test(arguments.spec).without_gates()
        settings, seed = spec.analysis.compare, spec.analysis.bootstrap.seed
        matrices = [measure.matrix for measure in evaluate_spec(spec, use_cache=not arguments.no_cache).measures]
    else:
        if not arguments.runs or not arguments.qrels or not arguments.measures:
            raise InputError(
                "compare needs a spec (--spec bvtest.yaml), or run files with --qrels and -m",
                hint="e.g. bvtest compare --qrels qrels.txt -m nDCG@10 bm25=bm25.run rm3=rm3.run",
            )
        from pytest_bvtest.scoring.matrix import MatrixBuilder
        from pytest_bvtest.spec.measures import parse_measure

        measures = [parse_measure(text) for text in arguments.measures]
        built = MatrixBuilder.from_qrels_file(list(arguments.qrels)).build(
            measures, [_named_run(text, None) for text in arguments.runs]
        )
        matrices = list(built.values())
    if len(matrices[0].systems) < 2:
        raise InputError("compare needs at least two systems", hint="give more runs (or baselines in the spec)")
    overrides = {"test": arguments.test, "correction": arguments.correction, "alpha": arguments.alpha}
    settings = replace(settings, **{key: value for key, value in overrides.items() if value is not None})
    documents = [
        pairwise_document(table)
        for table in pairwise_comparisons(
            matrices,
            settings,
            permutations=arguments.permutations or RANDOMIZATION_PERMUTATIONS,
            seed=seed if arguments.seed is None else arguments.seed,
        )
    ]
    if arguments.format == "markdown":
        out.write(compare.markdown_table(documents))
    elif arguments.format == "latex":
        out.write(compare.latex_table(documents))
    else:
        out.write("\n".join(compare.text_table(documents)) + "\n")
        for document in documents:
            out.write("\n" + "\n".join(compare.pair_lines(document)) + "\n")
    return EXIT_OK


def _check_or_report(arguments: argparse.Namespace, out: TextIO) -> int:
    from pytest_bvtest.judging.pipeline import (
        checks_failing_most_equal_changes,
        evaluate_spec,
        require_candidate_for_gates,
        spec_under_test,
    )
    from pytest_bvtest.report import outputs
    from pytest_bvtest.report.paths import check_output_paths
    from pytest_bvtest.report.reference_update import update_reference
    from pytest_bvtest.spec.reader import SpecWarning

    spec = spec_under_test(arguments.spec, arguments.run)
    if arguments.command == "report":
        spec = spec.without_gates()
    require_candidate_for_gates(spec)
    check_output_paths(
        {
            "--json": arguments.json,
            "--markdown": arguments.markdown,
            "--html": arguments.html,
            "--plots": arguments.plots,
        },
        [spec],
        folder_options=("--plots",),
    )
    evaluation = evaluate_spec(
        spec, use_cache=not arguments.no_cache, allow_outside=arguments.allow_outside_project, jobs=arguments.jobs
    )
    for check in checks_failing_most_equal_changes(evaluation):
        warnings.warn_explicit(check.message, SpecWarning, str(spec.path), check.line)  # stderr, after the summary
    document = outputs.evaluation_document(evaluation, shell=f"bvtest {arguments.command}")
    outputs.write_session_outputs(
        document,
        terminal_writer=_Writer(out),
        json_path=arguments.json,
        markdown_path=arguments.markdown,
        html_path=arguments.html,
        plots_dir=arguments.plots,
    )
    if arguments.command == "check" and (arguments.update or arguments.update_force):
        try:
            lines = update_reference(
                evaluation, force=arguments.update_force, allow_outside=arguments.allow_outside_project
            )
        except BvtestError as error:
            if evaluation.passed:
                raise
            _say(f"bvtest: error: {error}")  # refused: the gates failed (exit 1 says so)
            return EXIT_GATE_FAILED
        for line in lines:
            out.write(line + "\n")
    return EXIT_OK if evaluation.passed else EXIT_GATE_FAILED


def _judge(arguments: argparse.Namespace, out: TextIO) -> int:
    """Write the documents to judge: the unjudged documents of the candidate's and its references' top d, by
    leverage, with an empty grade column (docs/judgments.md)."""
    from dataclasses import replace

    from pytest_bvtest.io.predictions import read_documents
    from pytest_bvtest.judging.documents import documents_to_judge, require_gates_to_judge
    from pytest_bvtest.judging.pipeline import evaluate_spec, require_candidate_for_gates, spec_under_test
    from pytest_bvtest.report.judgefile import check_judge_file_path, judge_file_text, write_judge_file
    from pytest_bvtest.report.paths import check_output_paths

    to_stdout = arguments.output == "-"
    spec = spec_under_test(arguments.spec, arguments.run)
    require_candidate_for_gates(spec)
    require_gates_to_judge(spec)
    predicting = _prediction_target(arguments, spec)
    if not to_stdout:
        check_output_paths({"-o": arguments.output}, [spec])
        check_judge_file_path(arguments.output, force=arguments.force)
    if predicting is not None and spec.judgments.predictions is not None and not spec.judgments.predictions.exists():
        # the first prediction: nothing to read yet
        spec = replace(spec, judgments=replace(spec.judgments, predictions=None))
    evaluation = evaluate_spec(spec, use_cache=not arguments.no_cache, allow_outside=arguments.allow_outside_project)
    documents = documents_to_judge(evaluation)
    undecided = sum(verdict.undecided for verdict in evaluation.gates)
    said = (
        f"{len(documents):,} unjudged document{'' if len(documents) == 1 else 's'} to judge, most settling first; "
        f"{undecided} of {len(evaluation.gates)} gates undecided"
    )
    texts = None if spec.judgments.documents is None else read_documents(spec.judgments.documents)
    if predicting is not None:
        said_predicted = _predict(arguments, evaluation, documents, texts, *predicting)
        (_say if to_stdout else lambda line: out.write(line + "\n"))(said_predicted)
    if to_stdout:  # the file itself on stdout, as it is (ids must round-trip); what was written on stderr
        out.write(judge_file_text(evaluation, documents, spec.folder / "judgments.tsv", texts))
        _say(f"bvtest: wrote the judge file to standard output: {said}")
        return EXIT_OK
    write_judge_file(arguments.output, evaluation, documents, force=arguments.force, texts=texts)
    out.write(f"wrote {arguments.output}: {said}\n")
    return EXIT_OK


def _prediction_target(arguments: argparse.Namespace, spec: Spec) -> tuple[str, Path] | None:
    """``judge --predict``'s command and the predictions file it writes (``None`` without --predict); refuses a
    missing command or file, and a file that is not a predictions file (unless --force)."""
    from pytest_bvtest.io.predictions import PREDICTIONS_MARK

    if arguments.predict is None:
        return None
    command = arguments.predict or spec.judgments.predictor
    if not command:
        raise InputError(
            "--predict names no command and the spec has no `judgments: {predictor: ...}`",
            path=spec.path,
            hint='pass --predict "python -m team.judge", or add the predictor to the spec',
        )
    target = Path(arguments.predictions) if arguments.predictions is not None else spec.judgments.predictions
    if target is None:
        raise InputError(
            "--predict needs a predictions file to write",
            path=spec.path,
            hint="pass --predictions predicted.tsv, or add `judgments: {predictions: predicted.tsv}` to the spec",
        )
    if target.is_file() and not arguments.force:
        with target.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
        if not first.startswith(PREDICTIONS_MARK):
            raise InputError(
                "exists and is not a predictions file bvtest wrote: it is not replaced",
                path=target,
                hint="name another file, or --force",
            )
    return command, target


def _predict(
    arguments: argparse.Namespace,
    evaluation: Evaluation,
    documents: Sequence[DocumentToJudge],
    texts: Mapping[str, str] | None,
    command: str,
    target: Path,
) -> str:
    """Run the predictor on the documents to judge and a sample of judged ones, write its grades to ``target``
    (atomically) and say how far it agrees with people."""
    from pytest_bvtest.io.predictions import PREDICTOR_TIMEOUT, predictions_text, run_predictor
    from pytest_bvtest.io.qrels import read_qrels_files
    from pytest_bvtest.io.textfiles import atomic_write_text
    from pytest_bvtest.judging.documents import predictor_rows
    from pytest_bvtest.judging.predictions import predicted_grades

    spec = evaluation.spec
    qrels = spec.qrels_judgments if spec.qrels_judgments is not None else read_qrels_files(spec.qrels_files())
    top_grade = max(1, max(max(grades.values(), default=0) for grades in qrels.judgments.values()))
    rows, judged = predictor_rows(evaluation, documents, qrels, texts)
    if not rows:
        return "no document to predict: nothing is unjudged where a gate reads"
    timeout = PREDICTOR_TIMEOUT if arguments.predict_timeout is None else arguments.predict_timeout
    grades = run_predictor(command, rows, top_grade, timeout, spec.folder)
    if not grades:
        raise InputError(
            f"the predictor graded none of the {len(rows):,} documents it read: nothing written to {target}",
            hint="write one line per document, topic<TAB>docno<TAB>grade, on standard output",
        )
    atomic_write_text(target, predictions_text(grades, command, judged, len(rows) - judged))
    measured = predicted_grades(target, qrels, top_grade)
    agreement = (
        "none of the judged documents was graded, so nothing measures it"
        if measured.agreement is None
        else f"it agrees with people on {measured.agreement:.0%} of {measured.sample:,} judged documents, "
        f"κ {measured.kappa:.2f}"
        + (
            f", trusted at {measured.trust:.2f}"
            if measured.used
            else " (no better than chance: its grades will change nothing)"
        )
    )
    return (
        f"wrote {target}: {len(measured.grades):,} predicted grades of unjudged documents "
        f"({len(rows) - len(grades):,} left out by the predictor); {agreement}"
    )


def _history(arguments: argparse.Namespace, out: TextIO) -> int:
    """Per gate: how many records, the latest value, limit and outcome, and the outcomes over time."""
    from pytest_bvtest.report.history import gate_series, read_history

    history = read_history(arguments.path)
    for message in history.skipped:
        _say(f"bvtest: warning: {message}")
    series = gate_series(history.records)
    if not series:
        raise InputError(
            "the history file has no gate records",
            path=arguments.path,
            hint="run pytest with --bvtest-history PATH on a spec with gates first",
        )
    header = ("gate", "records", "latest", "limit", "outcomes, oldest first")
    rows = [
        (
            entry.id,
            str(len(entry.times)),
            _history_number(entry.values[-1]),
            _history_number(entry.limits[-1]),
            " ".join(
                f"| {outcome}" if index in entry.judgment_changes else outcome
                for index, outcome in enumerate(entry.outcomes)
            ),
        )
        for entry in series
    ]
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header) - 1)]
    for row in (header, *rows):
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] + "\n")
    changes = sorted({(index, entry.commits[index]) for entry in series for index in entry.judgment_changes})
    for index, commit in changes:
        at = f" (commit {commit[:12]})" if commit else ""
        out.write(
            f"| the qrels changed at record {index + 1}{at}: the values before and after were judged with other "
            "qrels and are not comparable\n"
        )
    if arguments.plot:
        from pytest_bvtest.report.html import write_history_charts

        for path in write_history_charts(series, Path(arguments.plot)):
            out.write(f"wrote {path}\n")
    return EXIT_OK


def _history_number(value: float | str | None) -> str:
    return "-" if value is None else f"{float(value):.6g}"


#: The false-alarm rates ``bvtest calibrate`` gives limits for.
CALIBRATION_RATES = (0.05, 0.01)


def _calibrate(arguments: argparse.Namespace, out: TextIO) -> int:
    """For every gate: its limit's false-alarm rate, the limits at 5% and 1%, and a replay of every baseline."""
    from dataclasses import replace

    from pytest_bvtest.judging.pipeline import evaluate_spec, replay_baselines, spec_under_test
    from pytest_bvtest.spec.reader import MAX_SWAPS

    spec = spec_under_test(arguments.spec, arguments.run)
    if spec.candidate is None or not spec.gates:
        raise InputError(
            "calibrate needs a candidate and gates",
            path=spec.path,
            hint="add `candidate:` (or pass --run) and at least one gate",
        )
    if arguments.swaps is not None and not 100 <= arguments.swaps <= MAX_SWAPS:
        raise InputError(
            f"--swaps must lie between 100 and {MAX_SWAPS:,}, got {arguments.swaps:,}",
            hint="more swaps cost time in proportion and change a limit less than its Monte-Carlo error",
        )
    if arguments.seed is not None and arguments.seed < 0:
        raise InputError(f"--seed must be a whole number >= 0, got {arguments.seed}")
    detect = _detect_argument(arguments.detect, spec)
    calibration = spec.analysis.calibration
    calibration = replace(
        calibration,
        swaps=arguments.swaps if arguments.swaps is not None else calibration.swaps,
        seed=arguments.seed if arguments.seed is not None else calibration.seed,
        plain_bound_swaps=None,
    )
    power = replace(spec.analysis.power, stacked_cells=None)  # every gate's power, however long it takes
    spec = replace(spec, analysis=replace(spec.analysis, calibration=calibration, power=power))
    # --detect reads the power at its drop from the draws the power was measured on: measured, not read from the cache
    evaluation = evaluate_spec(spec, use_cache=not arguments.no_cache, cached_power=detect is None)
    replays = replay_baselines(spec, use_cache=not arguments.no_cache)
    out.write(
        f"bvtest calibrate {spec.path.name}: the null of no change swaps the candidate's and the reference's "
        f"scores on random topics (seed {calibration.seed})\n\n"
    )
    from pytest_bvtest.report.outputs import evaluation_document
    from pytest_bvtest.report.wording import AIM_COLUMNS_NOTE, notices, power_legend, together_lines

    document = evaluation_document(evaluation)
    measures = document["evaluations"]
    # the guards' warnings and notes, then each gate's own (a limit that cannot fail): the null swaps this candidate
    # with the reference, so a candidate identical to it gives a null of no spread, limits on the reference's own
    # value and a joint false-alarm rate of 0, and one differing on few topics a null too coarse for its rate
    said = [
        f"{'WARNING' if notice.severity == 'warning' else 'note'}"
        + (f" ({', '.join(notice.gates)})" if notice.gates else "")
        + f": {notice.text}"
        for notice in notices(document)
    ]
    if said:
        out.write("The limits below are computed for this candidate, and these words say they may mean little:\n")
        out.write("".join(f"{line}\n" for line in said) + "\n")
    header = (
        "gate",
        "reference",
        "rule",
        "limit",
        "false alarm",
        "swaps",
        *(f"limit {rate:.0%}" for rate in CALIBRATION_RATES),
        "MDE all / 10%",
        *(f"replay {name}" for name in replays),
    )
    documents = [gate for measure in measures for gate in measure["gates"]]
    with_aim = detect is not None or any(gate["power"] and gate["power"]["aim"] for gate in documents)
    header = (*header, "catches the aim", "topics needed") if with_aim else header
    rows = [
        _calibration_row(verdict, gate, replays, (detect, arguments.model) if with_aim else None)
        for verdict, gate in zip(evaluation.gates, documents)
    ]
    widths = [max(len(str(row[column])) for row in (header, *rows)) for column in range(len(header))]
    for row in (header, *rows):
        out.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")
    together = together_lines({"evaluations": measures})
    out.write("\n" + "".join(f"{line}\n" for line in together) if together else "")
    legend = power_legend({"evaluations": measures})
    out.write(f"\n{legend}\n" if legend else "")
    out.write(f"{AIM_COLUMNS_NOTE}\n" if with_aim else "")
    out.write("\nReplay: each baseline but the reference as the candidate; a release the team accepted should pass.\n")
    out.write("Limits are on the value's scale for the spec's candidate: the null depends on its per-topic scores.\n\n")
    limited = (
        "every gate calibrated so that together they fail an equal-quality change 5% of the time"
        if calibration.family
        else "every gate limited where an equal-quality change fails it 5% of the time"
    )
    out.write(f"# paste into {spec.path.name}: {limited}\n")
    out.write(_calibrated_gates_yaml(spec, calibration))
    return EXIT_OK


def _detect_argument(text: str | None, spec: Spec) -> tuple[float, bool] | None:
    """``--detect``: ``(drop, relative)`` from ``0.02`` or ``5%`` (of the reference's mean score); a drop in the
    measures' units lies within the range of every measure a gate of ``spec`` reads."""
    from pytest_bvtest.spec.reader import measure_range

    if text is None:
        return None
    relative = text.strip().endswith("%")
    try:
        drop = float(text.strip().removesuffix("%")) / (100 if relative else 1)
    except ValueError:
        drop = float("nan")
    if not drop > 0 or drop == float("inf") or (relative and drop > 1):
        raise InputError(
            f"--detect must be a drop above 0 (0.02, or a percentage of the reference's mean such as 5%), got {text!r}"
        )
    gated = {measure for gate in spec.gates for measure in ((gate.measure,) if gate.measure else spec.measures)}
    beyond = sorted((str(measure), span) for measure in gated if (span := measure_range(measure)) is not None)
    beyond = [(name, span) for name, span in beyond if not relative and drop > span]
    if beyond:
        name, span = beyond[0]
        raise InputError(
            f"--detect {text.strip()} is larger than {name}'s whole range (0 to {span:g}): no score can drop that far, "
            "and every gate would seem to catch it",
            hint=f"give --detect a drop in the measure's units, at most {span:g} (0.02), or a share of the reference's "
            "mean (5%)",
        )
    return drop, relative


def _calibration_row(
    verdict: Verdict,
    gate: dict[str, Any],
    replays: dict[str, Evaluation],
    aim_asked: tuple[tuple[float, bool] | None, str] | None = None,
) -> tuple[str, ...]:
    """One gate's row: its limit and that limit's false-alarm rate, its limits at each of
    :data:`CALIBRATION_RATES`, its MDE under each model (docs/mathematics.md §9), its outcome with each baseline
    replayed as the candidate, and with ``aim_asked`` (``--detect`` and ``--model``, the drop ``None`` for the
    gate's own ``detect:``) its power at that drop and about how many topics it needs."""
    from pytest_bvtest.judging.power import aim_power
    from pytest_bvtest.report.wording import about, power_cell

    replayed = []
    for evaluation in replays.values():
        matches = [
            other for other in evaluation.gates if other.gate == verdict.gate and other.measure == verdict.measure
        ]
        replayed.append(matches[0].outcome if matches else "-")
    null, limits = verdict.null, verdict.limits
    limit_at = ["-" if null is None else f"{null.limit_at(rate):.6g}" for rate in CALIBRATION_RATES]
    rate = "-" if limits.rate is None else f"{limits.rate:.2%}"
    swaps = (
        "-"
        if limits.null is None
        else (f"all {limits.null.swaps:,}" if limits.null.exact else f"{limits.null.swaps:,}")
    )
    aim: tuple[str, ...] = ()
    power = verdict.power
    if aim_asked is not None:
        (detect, model), aim = aim_asked, ("-", "-")
        if power is not None and power.result is not None and power.group is not None and detect is not None:
            aim = _aim_cells(aim_power(verdict.inputs, power.group, power.index, detect[0], model, detect[1]), about)
        elif power is not None and power.aim is not None:
            aim = _aim_cells(power.aim, about)
    return (
        f"{verdict.measure}::{verdict.gate.name}",
        verdict.reference or "-",
        gate["rule"],
        f"{verdict.limit:.6g}",
        rate,
        swaps,
        *limit_at,
        power_cell(gate),
        *replayed,
        *aim,
    )


def _aim_cells(aim: Any, about: Any) -> tuple[str, str]:
    """``power at the aim``, ``topics needed``: ``34%``, ``about 180`` (or ``enough`` / ``no number``)."""
    needed = "enough" if not aim.missed else (f"about {about(aim.topics_needed)}" if aim.reachable else "no number")
    return f"{aim.power:.0%}", needed


def _calibrated_gates_yaml(spec: Spec, calibration: CalibrationSpec) -> str:
    """The spec's gates with ``false_alarm: 0.05`` (confidence dropped: the calibration accounts for noise)."""
    from pytest_bvtest.spec.model import DEFAULT_SWAPS

    family = "" if calibration.family else ", family: false"
    lines = [
        "analysis:",
        f"  calibration: {{swaps: {calibration.swaps or DEFAULT_SWAPS}, seed: {calibration.seed}{family}}}",
        "gates:",
    ]
    for gate in spec.gates:
        entries = [f"statistic: {gate.statistic}"]
        if gate.measure is not None:
            entries.append(f"measure: {gate.measure}")
        if gate.bound is not None:
            amount = f"{gate.bound.amount * 100:g}%" if gate.bound.relative else f"{gate.bound.amount:g}"
            entries.append(f"{gate.bound.kind}: {amount}")
        entries.append("false_alarm: 0.05")
        if gate.reference is not None and gate.reference != spec.reference:
            entries.append(f"reference: {gate.reference}")
        lines.append(f"  - {{{', '.join(entries)}}}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    one_thread_for_this_process()
    arguments = _parser().parse_args(argv)
    out = out or sys.stdout
    # in a process that loaded numpy before (a caller's, a test's) the variables come too late: limit the threads
    with warnings.catch_warnings(record=True) as caught, one_thread_while_computing():
        warnings.simplefilter("default")
        code = _run(arguments, out)
    for warning in caught:  # one line each, like the errors (a full cache folder, say)
        _say(f"bvtest: warning: {warning.message}")
    return code


def _run(arguments: argparse.Namespace, out: TextIO) -> int:
    try:
        code = _command(arguments, out)
    except BvtestError as error:
        _say(f"bvtest: error: {error}")
        return EXIT_INPUT_ERROR
    except BrokenPipeError:  # before OSError, its base class
        # The reader left before the command finished: its verdict and its reports are unknown, so a
        # pipeline under pipefail must not read this as a pass (Python's SIGPIPE recipe exits 1 too).
        _discard_stdout(out)
        return EXIT_GATE_FAILED
    except OSError as error:  # a stream the writers do not own (stdout on a full disk); str() names the file if known
        _say(f"bvtest: error: {error}")
        return EXIT_INPUT_ERROR
    try:
        out.flush()  # a reader that closed the pipe shows here, not in the interpreter's flush at exit
    except BrokenPipeError:  # the command finished: its own exit code (a failed gate stays 1) holds
        _discard_stdout(out)
    return code


def _command(arguments: argparse.Namespace, out: TextIO) -> int:
    if arguments.command == "evaluate":
        return _evaluate(arguments, out)
    if arguments.command == "judge" and arguments.output == "-":
        return _judge(arguments, out)
    out = _TerminalText(out)  # type: ignore[assignment]
    if arguments.command == "calibrate":
        return _calibrate(arguments, out)
    if arguments.command == "history":
        return _history(arguments, out)
    if arguments.command == "judge":
        return _judge(arguments, out)
    if arguments.command == "compare":
        return _compare(arguments, out)
    return _check_or_report(arguments, out)


def _discard_stdout(out: TextIO) -> None:
    """The reader closed the pipe early (``bvtest evaluate ... | head``): stop quietly, as Unix tools do.

    Python's SIGPIPE recipe (https://docs.python.org/3/library/signal.html#note-on-sigpipe): point
    stdout at devnull, so that the interpreter's flush at exit does not fail again and print
    "Exception ignored ... BrokenPipeError". A stream other than stdout (a caller's) is left alone.
    """
    if out is not sys.stdout:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
