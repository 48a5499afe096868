"""What the run benchmarks share: the synthetic MS MARCO-dev-sized data and the fresh-process harness.

- ``write_data``: a seeded synthetic TREC run and qrels shaped like MS MARCO dev (``SEED``: the same
  files on every machine), optionally with the run gzipped.
- ``run_cases``: runs each case of a benchmark in a fresh ``python -m benchmarks.<script> --child CASE
  ...`` process (so that its peak resident memory is its own), alternating the cases over the
  repeats so that a busy machine slows them alike; ``best_and_median`` summarises the repeats.
- ``peak_rss_mb`` and ``report_to_parent``: the child's side (its peak memory and its one JSON line).

Used by ``bench_parse.py`` and ``bench_evaluate.py``; run those as modules from the repository root
(``python -m benchmarks.bench_parse``), not as files, so that ``benchmarks.common`` can be imported.
"""

from __future__ import annotations

import gzip
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

# One seed for the run benchmarks' data (bench_parse used 20240611 before the generator was shared;
# this is bench_evaluate's, so its data, and the numbers in docs/benchmarks.md, are unchanged).
SEED = 20240612
COLLECTION_SIZE = 8_841_823  # MS MARCO v1 passages
EXTRA_RELEVANT_SHARE = 0.1  # MS MARCO dev: 7,437 relevant judgments for 6,980 queries
RETRIEVED_RELEVANT_SHARE = 0.85
MAX_JUDGED_NON_RELEVANT = 3
REPOSITORY_ROOT = Path(__file__).resolve().parents[1]


def write_data(folder: Path, queries: int, docs: int, compress: bool = False) -> tuple[Path, Path]:
    """Write the synthetic run and qrels into ``folder`` and return their paths.

    The run has ``queries`` queries of ``docs`` passages each, scores descending, spaced as Anserini
    writes it. The qrels are shaped like MS MARCO dev: one relevant passage per query, two for about
    a tenth of the queries; most relevant passages are retrieved, and ranked high more often than not
    (as in a real first stage); up to three retrieved passages per query judged non-relevant. With
    ``compress`` the run is gzipped (``run_*.txt.gz``); the qrels never are.
    """
    rng = np.random.default_rng(SEED)
    run_path, qrels_path = folder / f"run_{queries}x{docs}.txt", folder / f"qrels_{queries}.txt"
    qids = rng.choice(np.arange(1, 1_200_000), size=queries, replace=False)
    ranks = np.arange(1, docs + 1)
    with open(run_path, "w", encoding="utf-8") as run, open(qrels_path, "w", encoding="utf-8") as qrels:
        for qid in qids:
            retrieved = rng.choice(COLLECTION_SIZE, size=docs, replace=False)
            scores = np.sort(rng.normal(12.0, 3.0, size=docs))[::-1]
            run.write(
                "".join(
                    f"{qid} Q0 {doc} {rank} {score:.6f} Anserini\n"
                    for doc, rank, score in zip(retrieved, ranks, scores)
                )
            )
            relevant_count = 1 + int(rng.random() < EXTRA_RELEVANT_SHARE)
            # Relevant passages sit high in the ranking more often than not, as in a real first stage.
            judged = {
                int(
                    retrieved[min(int(rng.exponential(docs / 20)), docs - 1)]
                    if rng.random() < RETRIEVED_RELEVANT_SHARE
                    else rng.integers(COLLECTION_SIZE)
                ): 1
                for _ in range(relevant_count)
            }
            for _ in range(rng.integers(0, MAX_JUDGED_NON_RELEVANT + 1)):
                judged.setdefault(int(retrieved[rng.integers(docs)]), 0)
            qrels.write("".join(f"{qid} 0 {doc} {grade}\n" for doc, grade in judged.items()))
    if compress:
        gzipped = run_path.with_name(f"{run_path.name}.gz")
        with open(run_path, "rb") as source, gzip.open(gzipped, "wb", compresslevel=6) as target:
            shutil.copyfileobj(source, target)
        run_path.unlink()
        run_path = gzipped
    return run_path, qrels_path


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report_to_parent(row: dict) -> None:
    """The child's answer: one JSON line on stdout (``run_child`` reads the last line)."""
    print(json.dumps(row), flush=True)


def run_child(module: str, case: str, arguments: Sequence[str], python: str = sys.executable) -> dict:
    """Run ``python -m <module> --child CASE ARGUMENTS...`` in a fresh process from the repository root.

    Returns the JSON object on the last line of its output with ``process`` added: the wall time of
    the whole process, interpreter start and imports included. Exits with the child's stderr if it
    fails.
    """
    started = time.perf_counter()
    finished = subprocess.run(
        [python, "-m", module, "--child", case, *map(str, arguments)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY_ROOT,
        check=False,  # a failure exits below, with the child's stderr
    )
    if finished.returncode != 0:
        sys.exit(f"case {case!r} failed:\n{finished.stderr}")
    row = json.loads(finished.stdout.strip().splitlines()[-1])
    row["process"] = time.perf_counter() - started
    return row


def run_cases(
    module: str,
    cases: Sequence[str],
    repeats: int,
    arguments: Callable[[str, int], Sequence[object]],
    check: Callable[[str, dict], None] | None = None,
    pythons: Mapping[str, str] | None = None,
) -> dict[str, list[dict]]:
    """Every case ``repeats`` times, each in a fresh process (``run_child``), the cases alternating.

    ``arguments(case, repeat)`` gives the child's arguments after the case; ``check(case, row)``, if
    given, sees each row as it comes (to exit on a wrong one). ``pythons[case]``, if given, is the Python
    that runs that case (a peer installed in its own environment); the others run in this one.
    """
    results: dict[str, list[dict]] = {case: [] for case in cases}
    for repeat in range(repeats):
        for case in cases:
            row = run_child(module, case, arguments(case, repeat), (pythons or {}).get(case, sys.executable))
            if check is not None:
                check(case, row)
            results[case].append(row)
    return results


def best_and_median(rows: Sequence[dict]) -> tuple[dict, float]:
    """The row of the fastest repeat (by the ``wall`` time of the work itself) and the median ``wall``."""
    return min(rows, key=lambda row: row["wall"]), statistics.median(row["wall"] for row in rows)
