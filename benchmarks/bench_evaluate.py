"""Evaluating an MS MARCO-dev-sized run per topic: our pipeline, cold and cached, against pytrec_eval alone and peers.

A seeded synthetic run (default 7,000 queries x 1,000 passages, 7M lines) and qrels shaped like MS
MARCO dev (about 1.1 relevant passages per query, most of them retrieved, plus a few judged
non-relevant) are written to a scratch folder (``common.write_data``). Each case runs in a fresh
Python process so that its peak resident memory (``ru_maxrss``) is its own; the cases alternate over
the repeats so that a busy machine slows them alike (``common.run_cases``).

Cases (measures AP, nDCG@10 and RR per topic):

- ``bvtest cold``: ``MatrixBuilder.from_qrels_file(qrels, ScoreCache(empty folder)).build(...)``:
  reading and hashing the qrels, hashing and reading the run (into columns), evaluating (the
  columnar path), writing the cache entries.
- ``bvtest cached``: the same call again on the folder the cold case filled.
- ``pytrec_eval alone``: ``pytrec_eval.parse_qrel`` + ``pytrec_eval.parse_run`` + a fresh
  ``RelevanceEvaluator`` for ``map``, ``ndcg_cut.10``, ``recip_rank`` (the reference).
- peers, when importable (never runtime dependencies): ``ir_measures`` (``read_trec_qrels``,
  ``read_trec_run``, ``iter_calc``; it evaluates with pytrec_eval underneath) and ``ranx``
  (``Qrels.from_file``, ``Run.from_file``, ``evaluate(..., return_mean=False)`` for ``map``,
  ``ndcg@10``, ``mrr``; its numba compilation on first use is part of its time). ``--ranx-python``
  names a Python where ranx is installed (it pins numba; give it its own environment). No
  ``trec_eval`` binary is packaged for Debian or PyPI: the trec_eval row runs only when one is on
  the PATH (``trec_eval -q``), as a whole process.

Reported: the fastest and the median wall time of the work itself (imports excluded), the CPU
time of the fastest repeat (steadier than wall time on a shared machine) and its ratio to
pytrec_eval alone's, the whole process of the fastest repeat (interpreter start and imports
included), resident memory after imports and the peak, and the mean of each measure, which must
agree across cases (ranx breaks score ties differently from trec_eval and may differ in the last
digits).

Run it as a module from the repository root (as a file it cannot import ``benchmarks.common``)::

    python -m benchmarks.bench_evaluate                         # 7,000 x 1,000, 3 repeats
    python -m benchmarks.bench_evaluate --queries 700 --repeat 5
    python -m benchmarks.bench_evaluate --ranx-python /path/to/ranx-env/bin/python
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import SEED, best_and_median, peak_rss_mb, report_to_parent, run_cases, write_data

MEASURES = ("AP", "nDCG@10", "RR")
PYTREC_EVAL_LABELS = {"AP": "map", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank"}
RANX_METRICS = {"AP": "map", "nDCG@10": "ndcg@10", "RR": "mrr"}
CASES = ("bvtest cold", "bvtest cached", "pytrec_eval alone", "ir_measures", "ranx")
EXPECTED_CACHE_HITS = {"bvtest cold": 0, "bvtest cached": len(MEASURES)}


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
        means = {
            name: statistics.fmean(values[label] for values in results.values())
            for name, label in PYTREC_EVAL_LABELS.items()
        }
        hits = None
    elif case == "ir_measures":
        import ir_measures

        rss_after_imports = peak_rss_mb()
        started, cpu_started = time.perf_counter(), time.process_time()
        wanted = {name: ir_measures.parse_measure(name) for name in MEASURES}
        values = list(
            ir_measures.iter_calc(
                list(wanted.values()), ir_measures.read_trec_qrels(qrels_path), ir_measures.read_trec_run(run_path)
            )
        )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        means = {
            name: statistics.fmean(value.value for value in values if value.measure == measure)
            for name, measure in wanted.items()
        }
        hits = None
    elif case == "ranx":
        from ranx import Qrels, Run, evaluate

        rss_after_imports = peak_rss_mb()
        started, cpu_started = time.perf_counter(), time.process_time()
        results = evaluate(
            Qrels.from_file(qrels_path, kind="trec"),
            Run.from_file(run_path, kind="trec"),
            list(RANX_METRICS.values()),
            return_mean=False,
        )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        means = {name: float(statistics.fmean(results[metric])) for name, metric in RANX_METRICS.items()}
        hits = None
    else:
        from pytest_bvtest.scoring.cache import ScoreCache
        from pytest_bvtest.scoring.matrix import MatrixBuilder
        from pytest_bvtest.spec.measures import parse_measure
        from pytest_bvtest.spec.model import RunFile

        rss_after_imports = peak_rss_mb()
        started, cpu_started = time.perf_counter(), time.process_time()
        cache = ScoreCache(cache_folder)
        measures = [parse_measure(name) for name in MEASURES]
        matrices = MatrixBuilder.from_qrels_file(qrels_path, cache).build(measures, [RunFile(Path(run_path))])
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        means = {str(measure): float(matrix.scores.mean()) for measure, matrix in matrices.items()}
        hits = cache.hits
    report_to_parent(
        {
            "wall": wall,
            "cpu": cpu,
            "rss_after_imports_mb": rss_after_imports,
            "peak_mb": peak_rss_mb(),
            "means": means,
            "hits": hits,
        }
    )


def check_cache_hits(case: str, row: dict) -> None:
    """The cold case must miss the cache for every measure and the cached case hit it for every one."""
    if case in EXPECTED_CACHE_HITS and row["hits"] != EXPECTED_CACHE_HITS[case]:
        sys.exit(f"case {case!r} had {row['hits']} cache hits, expected {EXPECTED_CACHE_HITS[case]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--docs", type=int, default=1000, help="documents per query")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--ranx-python", default=None, help="a Python with ranx installed (default: this one, if it has ranx)"
    )
    parser.add_argument("--child", nargs=4, metavar=("CASE", "RUN", "QRELS", "CACHE"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(*arguments.child)
        return
    ranx_python = arguments.ranx_python or (sys.executable if importlib.util.find_spec("ranx") else None)
    skipped = {"ir_measures": "ir_measures not installed"} if importlib.util.find_spec("ir_measures") is None else {}
    if ranx_python is None:
        skipped["ranx"] = "ranx not installed (give --ranx-python)"
    trec_eval = shutil.which("trec_eval")
    if trec_eval is None:
        skipped["trec_eval -q"] = "no trec_eval binary on the PATH (none packaged for Debian or PyPI)"
    cases = [case for case in CASES if case not in skipped]

    folder = Path(tempfile.mkdtemp(prefix="bench_evaluate_"))
    try:
        started = time.perf_counter()
        run_path, qrels_path = write_data(folder, arguments.queries, arguments.docs)
        judgments = [line.split() for line in qrels_path.read_text().splitlines()]
        relevant = sum(grade != "0" for *_, grade in judgments)
        print(
            f"run: {arguments.queries:,} queries x {arguments.docs:,} docs = {arguments.queries * arguments.docs:,} "
            "lines, "
            f"{run_path.stat().st_size / 1e6:.0f} MB; qrels: {relevant / arguments.queries:.2f} relevant and "
            f"{(len(judgments) - relevant) / arguments.queries:.2f} judged non-relevant per query "
            f"(seed {SEED}, written in {time.perf_counter() - started:.0f} s)"
        )
        # The cold case fills a fresh cache folder in each repeat, the cached case reads it.
        results = run_cases(
            "benchmarks.bench_evaluate",
            cases,
            arguments.repeat,
            lambda case, repeat: (run_path, qrels_path, folder / f"cache{repeat}"),
            check=check_cache_hits,
            pythons={"ranx": ranx_python} if ranx_python else None,
        )
        if trec_eval is not None:
            results["trec_eval -q"] = [
                whole_process(
                    [
                        trec_eval,
                        "-q",
                        "-m",
                        "map",
                        "-m",
                        "ndcg_cut.10",
                        "-m",
                        "recip_rank",
                        str(qrels_path),
                        str(run_path),
                    ]
                )
                for _ in range(arguments.repeat)
            ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    reference_cpu = best_and_median(results["pytrec_eval alone"])[0]["cpu"]
    header = (
        f"{'case':<18} {'best wall s':>11} {'median s':>9} {'cpu s':>6} {'cpu x pytrec_eval':>18} {'process s':>10} "
        f"{'RSS after imports MB':>21} {'peak RSS MB':>12}" + "".join(f" {'mean ' + name:>13}" for name in MEASURES)
    )
    print(header)
    print("-" * len(header))
    for case, rows in results.items():
        best, median = best_and_median(rows)
        print(
            f"{case:<18} {best['wall']:>11.2f} {median:>9.2f} {best['cpu']:>6.2f} {best['cpu'] / reference_cpu:>18.2f} "
            f"{best['process']:>10.2f} {best['rss_after_imports_mb']:>21.0f} "
            f"{max(row['peak_mb'] for row in rows):>12.0f}"
            + "".join(f" {best['means'][name]:>13.6f}" if name in best["means"] else f" {'-':>13}" for name in MEASURES)
        )
    for case, reason in skipped.items():
        print(f"{case:<18} skipped: {reason}")


def whole_process(command: list[str]) -> dict:
    """A peer that is a program of its own (trec_eval): wall, CPU and peak memory of the whole process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed:\n{process.stderr.read().decode() if process.stderr else ''}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "process": wall,
        "rss_after_imports_mb": 0.0,
        "peak_mb": usage.ru_maxrss / 1024,
        "means": {},
    }


if __name__ == "__main__":
    main()
