"""Reading an MS MARCO-dev-sized run: pytest-bvtest's ``read_run`` against ``pytrec_eval.parse_run``.

A seeded synthetic run of 7,000 queries x 1,000 passages (7M lines, ~250 MB, spacing as Anserini
writes it) and a qrels of 1-3 judgments per query are written to a scratch folder. Each case runs in
a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own; cases alternate
over the repeats so that a busy machine slows them alike. Reported: the fastest and the median wall
time, CPU time of the fastest repeat, the resident memory after imports and the peak.

Cases:

- ``pytrec_eval.parse_run``: ``parse_run(open(path))``, no validation beyond its duplicate assert.
- ``read_run``: our reader (full validation, line numbers on errors).
- ``... + evaluate``: the same, then one ``pytrec_eval.RelevanceEvaluator`` pass over
  ``map``, ``recip_rank``, ``ndcg_cut.10``, ``recall.1000`` (the cold evaluation of a run).
- ``bvtest evaluate_run``: ``read_qrels`` + ``read_run`` + ``pytest_bvtest.measures.evaluate_run``
  for AP, RR, nDCG@10, R@1000, the project's own cold path.

From the repository root::

    python -m benchmarks.bench_parse                       # 7,000 x 1,000, 3 repeats
    python -m benchmarks.bench_parse --queries 700 --repeats 5
    python -m benchmarks.bench_parse --gzip                # read run.gz instead
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SEED = 20240611
PYTREC_MEASURES = {"map", "recip_rank", "ndcg_cut.10", "recall.1000"}
BVTEST_MEASURES = ("AP", "RR", "nDCG@10", "R@1000")
CASES = (
    "pytrec_eval.parse_run",
    "read_run",
    "pytrec_eval.parse_run + evaluate",
    "read_run + evaluate",
    "bvtest evaluate_run",
)
COLLECTION_SIZE = 8_841_823  # MS MARCO v1 passages


def write_data(folder: Path, queries: int, depth: int, compress: bool) -> tuple[Path, Path]:
    """The synthetic run and qrels (seeded: the same files on every machine)."""
    rng = np.random.default_rng(SEED)
    run_path = folder / f"run_{queries}x{depth}.txt"
    qrels_path = folder / f"qrels_{queries}.txt"
    qids = rng.choice(np.arange(1, 1_200_000), size=queries, replace=False)
    with open(run_path, "w", encoding="utf-8") as run, open(qrels_path, "w", encoding="utf-8") as qrels:
        for qid in qids:
            docs = rng.choice(COLLECTION_SIZE, size=depth, replace=False)
            scores = np.sort(rng.normal(12.0, 3.0, size=depth))[::-1]
            run.write("".join(f"{qid} Q0 {doc} {rank} {score:.6f} Anserini\n" for rank, (doc, score) in enumerate(zip(docs, scores), 1)))
            # 1-3 judged passages, about 60% of them retrieved; a dict drops an accidental repeat.
            judged = rng.integers(1, 4)
            candidates = [docs[rng.integers(depth)] if rng.random() < 0.6 else rng.integers(COLLECTION_SIZE) for _ in range(judged)]
            for doc in dict.fromkeys(candidates):
                qrels.write(f"{qid} 0 {doc} {rng.integers(1, 4)}\n")
    if compress:
        with open(run_path, "rb") as source, gzip.open(f"{run_path}.gz", "wb", compresslevel=6) as target:
            shutil.copyfileobj(source, target)
        run_path.unlink()
        run_path = Path(f"{run_path}.gz")
    return run_path, qrels_path


def open_plain_or_gzip(path: str):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def child(case: str, run_path: str, qrels_path: str) -> None:
    """Run one case in this (fresh) process and print one JSON line."""
    import pytrec_eval

    from pytest_bvtest.io.qrels import read_qrels
    from pytest_bvtest.io.runs import read_run
    from pytest_bvtest.measures import evaluate_run, parse_measure

    with open_plain_or_gzip(qrels_path) as handle:
        judgments = pytrec_eval.parse_qrel(handle)
    measures = [parse_measure(name) for name in BVTEST_MEASURES]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    if case.startswith("pytrec_eval.parse_run"):
        with open_plain_or_gzip(run_path) as handle:
            scores = pytrec_eval.parse_run(handle)
    elif case == "bvtest evaluate_run":
        evaluate_run(read_qrels(qrels_path), read_run(run_path), measures)
    else:
        scores = read_run(run_path).scores
    if case.endswith("+ evaluate"):
        pytrec_eval.RelevanceEvaluator(judgments, PYTREC_MEASURES).evaluate(scores)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"case": case, "wall": wall, "cpu": cpu, "rss_before_mb": rss_before / 1024, "peak_mb": peak / 1024}))


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
        run_path, qrels_path = write_data(folder, arguments.queries, arguments.depth, arguments.gzip)
        size_mb = run_path.stat().st_size / 1e6
        print(
            f"run: {arguments.queries:,} queries x {arguments.depth:,} docs = {arguments.queries * arguments.depth:,} lines, "
            f"{size_mb:.0f} MB{' gzipped' if arguments.gzip else ''} (seed {SEED}, written in {time.perf_counter() - started:.0f} s)"
        )
        results: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
        for _ in range(arguments.repeats):
            for case in CASES:
                finished = subprocess.run(
                    [sys.executable, "-m", "benchmarks.bench_parse", "--child", case, str(run_path), str(qrels_path)],
                    capture_output=True,
                    text=True,
                    cwd=Path(__file__).resolve().parents[1],
                )
                if finished.returncode != 0:
                    sys.exit(f"case {case!r} failed:\n{finished.stderr}")
                results[case].append(json.loads(finished.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    header = f"{'case':<34} {'best wall s':>11} {'median s':>9} {'cpu s':>7} {'RSS before MB':>14} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    for case, rows in results.items():
        best = min(rows, key=lambda row: row["wall"])
        median = statistics.median(row["wall"] for row in rows)
        print(f"{case:<34} {best['wall']:>11.2f} {median:>9.2f} {best['cpu']:>7.2f} {best['rss_before_mb']:>14.0f} {best['peak_mb']:>12.0f}")


if __name__ == "__main__":
    main()
