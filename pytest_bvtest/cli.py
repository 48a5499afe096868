"""The ``bvtest`` command: the gate without pytest, and per-topic evaluation.

Exit codes: 0 success (every gate passed), 1 a gate failed, 2 invalid input or usage (one line on
stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pytest_bvtest import __version__
from pytest_bvtest.cache import DEFAULT_CACHE_DIR
from pytest_bvtest.errors import BvtestError

# The pipeline is imported by the command that runs it, so `bvtest --help` and usage errors answer at once.

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INPUT_ERROR = 2


class _Writer:
    """The small part of pytest's terminal writer that the summary renderer uses."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write_sep(self, sep: str, title: str = "", **markup: bool) -> None:
        line = f" {title} ".center(88, sep) if title else sep * 88
        self.stream.write(line + "\n")

    def write_line(self, text: str = "", **markup: bool) -> None:
        self.stream.write(text + "\n")


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 2 like input errors, without a traceback
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT_ERROR, f"bvtest: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="bvtest", description="Search-quality gates: bias-variance, risk and mean-variance evaluation.")
    parser.add_argument("--version", action="version", version=f"pytest-bvtest {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)

    evaluate = commands.add_parser("evaluate", help="print per-topic scores of runs as TSV")
    evaluate.add_argument("--qrels", required=True, help="qrels file (qid iter docno grade)")
    evaluate.add_argument("-m", "--measure", action="append", required=True, dest="measures",
                          help="measure in ir_measures syntax (repeatable), e.g. nDCG@10, AP(rel=2), ERR@20")
    evaluate.add_argument("--mean", action="store_true", help="print one mean per system and measure instead")
    evaluate.add_argument("--tag", default=None, help="evaluate only this run tag of files that hold several systems")
    evaluate.add_argument("--cache-dir", default=None, help=f"per-topic score cache (default: none; e.g. {DEFAULT_CACHE_DIR})")
    evaluate.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (.gz allowed)")

    for name, help_text in (("check", "run the spec's gates (exit 1 when one fails)"), ("report", "print the analysis without gating")):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("spec", metavar="SPEC", help="bvtest.yaml")
        command.add_argument("--run", default=None, help="run file to test instead of the spec's candidate")
        command.add_argument("--json", default=None, metavar="PATH", help="write the JSON report here")
        command.add_argument("--markdown", default=None, metavar="PATH", help="write the Markdown summary here")
        command.add_argument("--plots", default=None, metavar="DIR", help="write Bias²/Var plots here (needs matplotlib)")
        command.add_argument("--no-cache", action="store_true", help="do not use the per-topic score cache")
        command.add_argument("--allow-outside-project", action="store_true",
                             help="allow the spec's cache folder (and check's updated reference) outside the project")
    check = commands.choices["check"]
    check.add_argument("--update", action="store_true",
                       help="when every gate passed, make the candidate run the stored reference run (after merge)")
    check.add_argument("--update-force", action="store_true", help="--update even when a gate failed")
    return parser


def _evaluate(arguments: argparse.Namespace, out: TextIO) -> int:
    from pytest_bvtest.cache import ScoreCache
    from pytest_bvtest.matrix import MatrixBuilder, RunFile
    from pytest_bvtest.measures import parse_measure

    measures = [parse_measure(text) for text in arguments.measures]
    builder = MatrixBuilder.from_qrels_file(arguments.qrels, ScoreCache(arguments.cache_dir))
    sources = [RunFile(Path(path), tag=arguments.tag) for path in arguments.runs]
    matrices = builder.build(measures, sources)
    if arguments.mean:
        out.write("system\tmeasure\tmean\n")
    else:
        out.write("system\ttopic\tmeasure\tvalue\n")
    for matrix in matrices.values():
        for i, system in enumerate(matrix.systems):
            if arguments.mean:
                out.write(f"{system}\t{matrix.measure}\t{float(matrix.scores[i].mean())!r}\n")
                continue
            for j, topic in enumerate(matrix.topics):
                out.write(f"{system}\t{topic}\t{matrix.measure}\t{float(matrix.scores[i, j])!r}\n")
    notes = next(iter(matrices.values()))  # missing and ignored topics are the same for every measure
    for system in notes.systems:
        missing = notes.missing_topics(system)
        if missing:
            print(f"bvtest: {system}: {len(missing)} topic(s) without a ranking scored 0: "
                  f"{', '.join(missing[:10])}", file=sys.stderr)
        ignored = notes.ignored_topics.get(system, ())
        if ignored:
            print(f"bvtest: {system}: {len(ignored)} topic(s) outside the evaluated topics (not judged, or no relevant document) ignored: {', '.join(ignored[:10])}", file=sys.stderr)
    return EXIT_OK


def _check_or_report(arguments: argparse.Namespace, out: TextIO) -> int:
    from pytest_bvtest.api import evaluate_spec, spec_under_test, update_reference
    from pytest_bvtest.report import collect

    spec = spec_under_test(arguments.spec, arguments.run)
    if arguments.command == "report":
        spec = spec.without_gates()
    evaluation = evaluate_spec(spec, use_cache=not arguments.no_cache, allow_outside=arguments.allow_outside_project)
    document = collect.evaluation_document(evaluation)
    collect.write_session_outputs(
        document,
        terminal_writer=_Writer(out),
        json_path=arguments.json,
        markdown_path=arguments.markdown,
        plots_dir=arguments.plots,
    )
    if arguments.command == "check" and (arguments.update or arguments.update_force):
        try:
            lines = update_reference(evaluation, force=arguments.update_force, allow_outside=arguments.allow_outside_project)
        except BvtestError as error:
            if evaluation.passed:
                raise
            print(f"bvtest: error: {error}", file=sys.stderr)  # refused: the gates failed (exit 1 says so)
            return EXIT_GATE_FAILED
        for line in lines:
            out.write(line + "\n")
    return EXIT_OK if evaluation.passed else EXIT_GATE_FAILED


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    arguments = _parser().parse_args(argv)
    out = out or sys.stdout
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        code = _run(arguments, out)
    for warning in caught:  # one line each, like the errors (a full cache folder, say)
        print(f"bvtest: warning: {warning.message}", file=sys.stderr)
    return code


def _run(arguments: argparse.Namespace, out: TextIO) -> int:
    try:
        if arguments.command == "evaluate":
            return _evaluate(arguments, out)
        return _check_or_report(arguments, out)
    except BvtestError as error:
        print(f"bvtest: error: {error}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except OSError as error:  # a stream the writers do not own (stdout on a full disk); str() names the file if known
        print(f"bvtest: error: {error}", file=sys.stderr)
        return EXIT_INPUT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
