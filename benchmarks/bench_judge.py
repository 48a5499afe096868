"""How long the documents to judge take (``bvtest judge``: :func:`pytest_bvtest.judging.documents.documents_to_judge`).

Each unjudged document of the candidate's and the reference's top 10 is given its judging leverage on every gate
with corners (docs/mathematics.md §10). Cases, each evaluated once (not timed), then its documents to judge timed
(best of ``--repeat``, wall and CPU of this process):

- ``DL19 pooled``: tests/test_judgments.py's real case (43 topics, 84 documents; skipped without the shared data);
- ``synthetic``: ``--topics`` seeded topics (default 2,000) with sparse qrels (one or two relevant passages per
  topic, a few judged non-relevant) and five runs of 20 passages per topic, the README's gates on nDCG@10, so that
  nearly every document of the two top 10s is unjudged (about 20 per topic).

From the repository root::

    python -m benchmarks.bench_judge
    python -m benchmarks.bench_judge --topics 6980
    PYTHONPATH=../other-checkout python -m benchmarks.bench_judge   # an older version's documents to judge
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import pytest_bvtest
from benchmarks.bench_gate import gates_yaml, recommended_spec
from benchmarks.common import REPOSITORY_ROOT, SEED
from pytest_bvtest.judging.documents import documents_to_judge
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.reader import load_spec

SYSTEMS = 5
DOCS_PER_TOPIC = 20


def write_synthetic(folder: Path, topics: int) -> Path:
    """Sparse qrels, ``SYSTEMS`` runs drawing their passages from one pool per topic, and the README's gates."""
    rng = np.random.default_rng(SEED)
    pools = rng.integers(0, 8_841_823, size=(topics, 40))
    qrels = []
    runs: list[list[str]] = [[] for _ in range(SYSTEMS)]
    for topic, pool in enumerate(pools.tolist()):
        judged = rng.choice(40, size=int(rng.integers(2, 5)), replace=False)
        qrels += [f"{topic} 0 {pool[at]} {int(i < 1 + (rng.random() < 0.1))}\n" for i, at in enumerate(judged)]
        for system, lines in enumerate(runs):
            ranked = rng.choice(40, size=DOCS_PER_TOPIC, replace=False)
            lines += [f"{topic} Q0 {pool[at]} {r + 1} {100 - r} s{system}\n" for r, at in enumerate(ranked)]
    (folder / "qrels.txt").write_text("".join(qrels))
    for system, lines in enumerate(runs):
        (folder / f"s{system}.run").write_text("".join(lines))
    _, gates = recommended_spec()
    lines = ["qrels: qrels.txt", "measures: [nDCG@10]", "baselines:"]
    lines += [f"  b{system}: s{system}.run" for system in range(1, SYSTEMS)]
    lines += ["candidate: {run: s0.run, name: new}", "reference: b1", "cache: false", "analysis: {power: false}"]
    lines += gates_yaml([{key: value for key, value in gate.items() if key != "measure"} for gate in gates])
    spec = folder / "bvtest.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def dl19_pooled(folder: Path) -> Path | None:
    """tests/test_judgments.py's DL19 pooled spec, or ``None`` without the shared data."""
    sys.path.insert(0, str(REPOSITORY_ROOT / "tests"))
    from conftest import SHARED_DATA  # noqa: PLC0415 (the tests' folder is on the path only here)
    from test_judgments import DL19_RUNS, dl19_spec, pooled_qrels  # noqa: PLC0415

    if not SHARED_DATA.is_dir():
        return None
    folder.mkdir()
    runs = SHARED_DATA / "dl19_passage_qppeval_runs" / "runs"
    qrels = pooled_qrels(
        SHARED_DATA / "anserini_tools_qrels_topics" / "qrels" / "qrels.dl19-passage.txt",
        [runs / DL19_RUNS[name] for name in ("monot5", "colbert", "drmm")],
        10,
        folder / "pooled.qrels",
    )
    return dl19_spec(folder, qrels)


def timed(spec: Path, repeat: int) -> tuple[float, float, int, object]:
    """Best wall and CPU seconds of :func:`documents_to_judge` over ``repeat`` fresh evaluations of ``spec`` (each
    computes the single lifts and reads the ranks when first asked, as ``bvtest judge`` does), the gates with
    corners, and the documents."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        evaluation = evaluate_spec(load_spec(spec), use_cache=False)
        wall, cpu = time.perf_counter(), time.process_time()
        documents = documents_to_judge(evaluation)
        best_wall, best_cpu = min(best_wall, time.perf_counter() - wall), min(best_cpu, time.process_time() - cpu)
    gates = sum(verdict.corners is not None for verdict in evaluation.gates)
    return best_wall, best_cpu, gates, (len(evaluation.measures[0].topics), documents)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=2000, help="topics of the synthetic case")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per case (the best is shown)")
    arguments = parser.parse_args()
    print(f"pytest_bvtest from {Path(pytest_bvtest.__file__).parent}; load average {os.getloadavg()[0]:.1f}")
    header = f"{'case':<26} {'topics':>7} {'documents':>10} {'gates':>6} {'best s':>8} {'best cpu s':>11}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as scratch:
        cases = {"DL19 pooled": dl19_pooled(Path(scratch, "dl19").resolve())}
        cases[f"synthetic (seed {SEED})"] = write_synthetic(Path(scratch).resolve(), arguments.topics)
        for name, spec in cases.items():
            if spec is None:
                print(f"{name:<26} skipped (no shared data)")
                continue
            wall, cpu, gates, (topics, documents) = timed(spec, arguments.repeat)
            print(f"{name:<26} {topics:>7,} {len(documents):>10,} {gates:>6} {wall:>8.2f} {cpu:>11.2f}")


if __name__ == "__main__":
    main()
