"""Evaluating an MS MARCO-dev-sized run per topic: our pipeline, cold and cached, against pytrec_eval alone.

A seeded synthetic run (default 7,000 queries x 1,000 passages, 7M lines) and qrels shaped like MS
MARCO dev (about 1.1 relevant passages per query, most of them retrieved, plus a few judged
non-relevant) are written to a scratch folder (``common.write_data``). Each case runs in a fresh
Python process so that its peak resident memory (``ru_maxrss``) is its own; the cases alternate over
the repeats so that a busy machine slows them alike (``common.run_cases``).

Cases (measures AP, nDCG@10 and RR per topic):

- ``bvtest cold``: ``MatrixBuilder.from_qrels_file(qrels, ScoreCache(empty folder)).build(...)``:
  reading and hashing the qrels, hashing and reading the run, evaluating, writing the cache entries.
- ``bvtest cached``: the same call again on the folder the cold case filled.
- ``pytrec_eval alone``: ``pytrec_eval.parse_qrel`` + ``pytrec_eval.parse_run`` + a fresh
  ``RelevanceEvaluator`` for ``map``, ``ndcg_cut.10``, ``recip_rank`` (the reference).

Reported: the fastest and the median wall time of the work itself (imports excluded), the CPU
time of the fastest repeat (steadier than wall time on a shared machine), the whole process of the
fastest repeat (interpreter start and imports included), resident memory after imports and the peak, and
the mean of each measure, which must agree across cases.

Run it as a module from the repository root (as a file it cannot import ``benchmarks.common``)::

    python -m benchmarks.bench_evaluate                         # 7,000 x 1,000, 3 repeats
    python -m benchmarks.bench_evaluate --queries 700 --repeat 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import SEED, best_and_median, peak_rss_mb, report_to_parent, run_cases, write_data

MEASURES = ("AP", "nDCG@10", "RR")
PYTREC_EVAL_LABELS = {"AP": "map", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank"}
CASES = ("bvtest cold", "bvtest cached", "pytrec_eval alone")
EXPECTED_CACHE_HITS = {"bvtest cold": 0, "bvtest cached": len(MEASURES), "pytrec_eval alone": None}


def child(case: str, run_path: str, qrels_path: str, cache_folder: str) -> None:
    """Run one case in this (fresh) process and print one JSON line."""
    # Each case imports only what it uses, so the process time and memory after imports are its own.
    if case == "pytrec_eval alone":
        import pytrec_eval

        rss_after_imports = peak_rss_mb()
        started, cpu_started = time.perf_counter(), time.process_time()
        with open(qrels_path, encoding="utf-8") as handle:
            judgments = pytrec_eval.parse_qrel(handle)
        with open(run_path, encoding="utf-8") as handle:
            rankings = pytrec_eval.parse_run(handle)
        labels = {"map", "ndcg_cut.10", "recip_rank"}
        results = pytrec_eval.RelevanceEvaluator(judgments, labels).evaluate(rankings)
        # freeing the parsed run is part of any pipeline's cost (ours frees it inside its timing too)
        del rankings
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        means = {name: statistics.fmean(values[label] for values in results.values()) for name, label in PYTREC_EVAL_LABELS.items()}
        hits = None
    else:
        from pytest_bvtest.cache import ScoreCache
        from pytest_bvtest.matrix import MatrixBuilder, RunFile
        from pytest_bvtest.measures import parse_measure

        rss_after_imports = peak_rss_mb()
        started, cpu_started = time.perf_counter(), time.process_time()
        cache = ScoreCache(cache_folder)
        measures = [parse_measure(name) for name in MEASURES]
        matrices = MatrixBuilder.from_qrels_file(qrels_path, cache).build(measures, [RunFile(Path(run_path))])
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        means = {str(measure): float(matrix.scores.mean()) for measure, matrix in matrices.items()}
        hits = cache.hits
    report_to_parent({"wall": wall, "cpu": cpu, "rss_after_imports_mb": rss_after_imports, "peak_mb": peak_rss_mb(), "means": means, "hits": hits})


def check_cache_hits(case: str, row: dict) -> None:
    """The cold case must miss the cache for every measure and the cached case hit it for every one."""
    if row["hits"] != EXPECTED_CACHE_HITS[case]:
        sys.exit(f"case {case!r} had {row['hits']} cache hits, expected {EXPECTED_CACHE_HITS[case]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--docs", type=int, default=1000, help="documents per query")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=4, metavar=("CASE", "RUN", "QRELS", "CACHE"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(*arguments.child)
        return

    folder = Path(tempfile.mkdtemp(prefix="bench_evaluate_"))
    try:
        started = time.perf_counter()
        run_path, qrels_path = write_data(folder, arguments.queries, arguments.docs)
        judgments = [line.split() for line in qrels_path.read_text().splitlines()]
        relevant = sum(grade != "0" for *_, grade in judgments)
        print(
            f"run: {arguments.queries:,} queries x {arguments.docs:,} docs = {arguments.queries * arguments.docs:,} lines, "
            f"{run_path.stat().st_size / 1e6:.0f} MB; qrels: {relevant / arguments.queries:.2f} relevant and "
            f"{(len(judgments) - relevant) / arguments.queries:.2f} judged non-relevant per query "
            f"(seed {SEED}, written in {time.perf_counter() - started:.0f} s)"
        )
        # The cold case fills a fresh cache folder in each repeat, the cached case reads it.
        results = run_cases(
            "benchmarks.bench_evaluate",
            CASES,
            arguments.repeat,
            lambda case, repeat: (run_path, qrels_path, folder / f"cache{repeat}"),
            check=check_cache_hits,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    header = (
        f"{'case':<18} {'best wall s':>11} {'median s':>9} {'cpu s':>6} {'process s':>10} {'RSS after imports MB':>21} {'peak RSS MB':>12}"
        + "".join(f" {'mean ' + name:>13}" for name in MEASURES)
    )
    print(header)
    print("-" * len(header))
    for case, rows in results.items():
        best, median = best_and_median(rows)
        print(
            f"{case:<18} {best['wall']:>11.2f} {median:>9.2f} {best['cpu']:>6.2f} {best['process']:>10.2f} {best['rss_after_imports_mb']:>21.0f} "
            f"{max(row['peak_mb'] for row in rows):>12.0f}" + "".join(f" {best['means'][name]:>13.6f}" for name in MEASURES)
        )


if __name__ == "__main__":
    main()
