"""Peak memory of ``bvtest evaluate`` on runs far larger than the parsed run fits: read a chunk of topics at a time.

A seeded run of ``--queries`` x ``--docs`` lines, written topic after topic as every tool writes runs (default
200,000 x 1,000 = 200 million lines, about 8 GB), and MS MARCO-shaped qrels are written to a scratch folder;
``bvtest evaluate --mean -m AP -m nDCG@10`` evaluates it in a fresh process, timed with its peak resident
memory (GNU time). ``--shuffled`` writes the same lines with the first topic's last line moved to the end (not
grouped by topic: the run is read whole, the fallback). Run it from the repository root::

    python -m benchmarks.bench_memory --queries 20000           # 20 million lines, for development
    python -m benchmarks.bench_memory                           # 200 million lines (several minutes, 8 GB of disk)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import COLLECTION_SIZE, REPOSITORY_ROOT, SEED

# Topics written per batch: one numpy formatting pass per batch keeps writing near the disk's speed.
_BATCH = 2000


def write_run(path: Path, qrels_path: Path, queries: int, docs: int, shuffled: bool) -> None:
    """``queries`` topics of ``docs`` lines each, scores descending, and one relevant passage per topic in the qrels."""
    rng = np.random.default_rng(SEED)
    ranks = np.tile(np.arange(1, docs + 1), _BATCH)
    moved = b""
    with open(path, "wb") as run, open(qrels_path, "w", encoding="utf-8") as qrels:
        for first in range(0, queries, _BATCH):
            count = min(_BATCH, queries - first)
            qids = np.repeat(np.arange(first, first + count) + 1, docs)
            # distinct within a topic: a random start and a stride whose first 1,000 multiples stay below the collection
            starts = rng.integers(0, COLLECTION_SIZE, size=(count, 1))
            docnos = ((starts + np.arange(docs) * 8839) % COLLECTION_SIZE).ravel()
            scores = np.sort(rng.normal(12.0, 3.0, size=(count, docs)), axis=1)[:, ::-1].ravel()
            lines = [
                f"{qid} Q0 {docno} {rank} {score:.6f} bench\n"
                for qid, docno, rank, score in zip(
                    qids.tolist(), docnos.tolist(), ranks[: count * docs].tolist(), scores.tolist()
                )
            ]
            if shuffled and first == 0:
                moved = lines.pop(docs - 1).encode()
            run.write("".join(lines).encode())
            relevant = docnos.reshape(count, docs)[np.arange(count), rng.integers(0, min(docs, 50), size=count)]
            qrels.write(
                "".join(
                    f"{qid} 0 {docno} 1\n" for qid, docno in zip(range(first + 1, first + count + 1), relevant.tolist())
                )
            )
        run.write(moved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200_000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--shuffled", action="store_true", help="a run not grouped by topic (read whole)")
    parser.add_argument("--folder", default=None, help="scratch folder (default: a new one in /tmp, removed after)")
    arguments = parser.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("needs GNU time (/usr/bin/time) to measure the child's peak memory")
    folder = Path(arguments.folder or tempfile.mkdtemp(prefix="bench_memory_"))
    try:
        run, qrels = folder / "run.txt", folder / "qrels.txt"
        started = time.perf_counter()
        write_run(run, qrels, arguments.queries, arguments.docs, arguments.shuffled)
        lines = arguments.queries * arguments.docs
        print(
            f"run: {arguments.queries:,} queries x {arguments.docs:,} docs = {lines:,} lines, "
            f"{run.stat().st_size / 1e9:.1f} GB, {'not grouped by topic' if arguments.shuffled else 'grouped by topic'}"
            f" (seed {SEED}, written in {time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        command = [sys.executable, "-m", "pytest_bvtest.cli", "evaluate", "--mean", "--qrels", str(qrels)]
        command += ["-m", "AP", "-m", "nDCG@10", str(run)]
        finished = subprocess.run(
            ["/usr/bin/time", "-f", "bench-time %e %U %S %M", *command],
            cwd=REPOSITORY_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if finished.returncode != 0:
            sys.exit(finished.stderr)
        wall, user, system, peak = finished.stderr.strip().splitlines()[-1].split()[1:]
        cpu = float(user) + float(system)
        print(f"bvtest evaluate: {float(wall):.1f} s wall, {cpu:.1f} s CPU, peak RSS {int(peak) / 1024:.0f} MB")
        print(finished.stdout.strip())
    finally:
        if arguments.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
