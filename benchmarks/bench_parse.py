"""Reading an MS MARCO-dev-sized run: pytest-bvtest's readers against ``pytrec_eval.parse_run``.

A seeded synthetic run of 7,000 queries x 1,000 passages (7M lines, ~280 MB, spacing as Anserini
writes it) and qrels shaped like MS MARCO dev are written to a scratch folder (``common.write_data``).
Each case runs in a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own;
cases alternate over the repeats so that a busy machine slows them alike (``common.run_cases``).
Reported: the fastest and the median wall time, CPU time of the fastest repeat, the resident memory after
imports and the peak.

Cases:

- ``pytrec_eval.parse_run``: ``parse_run(open(path))``, no validation beyond its duplicate assert.
- ``read_run``: our validated reader into per-topic dictionaries (line numbers on errors).
- ``read_run_columns``: the reader the plugin uses: the file is well formed, so the fast path of
  ``pytest_bvtest.io.runbytes`` reads it into columns (bytes, no Python string per line).
- ``... + evaluate``: the same, then one ``pytrec_eval.RelevanceEvaluator`` pass over
  ``map``, ``recip_rank``, ``ndcg_cut.10``, ``recall.1000`` (the cold evaluation of a run).
- ``read_run_columns + evaluate_run``: ``read_qrels`` + ``read_run_columns`` +
  ``pytest_bvtest.scoring.measures.evaluate_run`` for AP, RR, nDCG@10, R@1000, the project's own cold path.

Run it as a module from the repository root (as a file it cannot import ``benchmarks.common``)::

    python -m benchmarks.bench_parse                       # 7,000 x 1,000, 3 repeats
    python -m benchmarks.bench_parse --queries 700 --repeats 5
    python -m benchmarks.bench_parse --gzip                # read run.gz instead
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import SEED, best_and_median, peak_rss_mb, report_to_parent, run_cases, write_data

PYTREC_MEASURES = {"map", "recip_rank", "ndcg_cut.10", "recall.1000"}
BVTEST_MEASURES = ("AP", "RR", "nDCG@10", "R@1000")
CASES = (
    "pytrec_eval.parse_run",
    "read_run",
    "read_run_columns",
    "pytrec_eval.parse_run + evaluate",
    "read_run + evaluate",
    "read_run_columns + evaluate_run",
)


def open_plain_or_gzip(path: str):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def child(case: str, run_path: str, qrels_path: str) -> None:
    """Run one case in this (fresh) process and print one JSON line."""
    import pytrec_eval

    from pytest_bvtest.io.qrels import read_qrels
    from pytest_bvtest.io.runs import read_run, read_run_columns
    from pytest_bvtest.scoring.measures import evaluate_run
    from pytest_bvtest.spec.measures import parse_measure

    with open_plain_or_gzip(qrels_path) as handle:
        judgments = pytrec_eval.parse_qrel(handle)
    measures = [parse_measure(name) for name in BVTEST_MEASURES]
    rss_before = peak_rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    if case.startswith("pytrec_eval.parse_run"):
        with open_plain_or_gzip(run_path) as handle:
            scores = pytrec_eval.parse_run(handle)
    elif case == "read_run_columns":
        read_run_columns(run_path)
    elif case == "read_run_columns + evaluate_run":
        evaluate_run(read_qrels(qrels_path), read_run_columns(run_path), measures)
    else:
        scores = read_run(run_path).scores
    if case.endswith("+ evaluate"):
        pytrec_eval.RelevanceEvaluator(judgments, PYTREC_MEASURES).evaluate(scores)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    report_to_parent({"case": case, "wall": wall, "cpu": cpu, "rss_before_mb": rss_before, "peak_mb": peak_rss_mb()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="read a gzipped run")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "RUN", "QRELS"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(*arguments.child)
        return

    folder = Path(tempfile.mkdtemp(prefix="bench_parse_"))
    try:
        started = time.perf_counter()
        run_path, qrels_path = write_data(folder, arguments.queries, arguments.depth, compress=arguments.gzip)
        size_mb = run_path.stat().st_size / 1e6
        print(
            f"run: {arguments.queries:,} queries x {arguments.depth:,} docs = "
            f"{arguments.queries * arguments.depth:,} lines, "
            f"{size_mb:.0f} MB{' gzipped' if arguments.gzip else ''} (seed {SEED}, written in "
            f"{time.perf_counter() - started:.0f} s)"
        )
        results = run_cases(
            "benchmarks.bench_parse", CASES, arguments.repeats, lambda case, repeat: (run_path, qrels_path)
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    header = f"{'case':<34} {'best wall s':>11} {'median s':>9} {'cpu s':>7} {'RSS before MB':>14} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    for case, rows in results.items():
        best, median = best_and_median(rows)
        print(
            f"{case:<34} {best['wall']:>11.2f} {median:>9.2f} {best['cpu']:>7.2f} {best['rss_before_mb']:>14.0f} "
            f"{best['peak_mb']:>12.0f}"
        )


if __name__ == "__main__":
    main()
