"""The CI gate end to end, whole processes: ``bvtest evaluate`` cold and cached, ``bvtest check`` with a
candidate and 10 baselines all cached or with the candidate new, and peers evaluating the same run.

Data (seeded, written to a scratch folder): MS MARCO-dev-shaped qrels and 11 runs of ``--queries`` x
``--docs`` lines (default 6,980 x 1,000, about 250 MB each; ``common.write_data`` writes the qrels and
the first run, the others rank the same judged passages at other depths). The spec has 2 measures
(AP, nDCG@10), the 10 baselines, the candidate and 8 gates (4 per measure, 2 of them noise-aware).

Cases, each a fresh process timed as a whole (interpreter start and imports included), its peak
resident memory from ``wait4``; the cases alternate over the repeats (a busy machine slows all alike):

- ``evaluate cold``: ``bvtest evaluate --mean -m AP -m nDCG@10 -m RR`` of one run into an empty cache.
- ``evaluate cached``: the same again on the cache it filled.
- ``check all cached``: ``bvtest check`` with every run's per-topic scores cached.
- ``check candidate new``: the same with ``--run`` naming a new candidate file (new content) in every repeat.
- peers on the same run and measures (AP, nDCG@10, RR per topic): ``pytrec_eval`` (parse_qrel,
  parse_run, evaluate), ``trec_eval -q`` (when a ``trec_eval`` binary is on the PATH, else skipped),
  ``ir_measures`` (iter_calc), ``ranx`` (evaluate per topic; run with ``--ranx-python`` where ranx is
  installed, since it pins its own numba and numpy).

Ratios are medians over ``pytrec_eval alone``'s median. Run it from the repository root::

    python -m benchmarks.bench_gate --queries 700            # a tenth of the size, for development
    python -m benchmarks.bench_gate                          # 6,980 x 1,000 (several minutes)
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

import numpy as np

from benchmarks.common import REPOSITORY_ROOT, SEED, write_data

BASELINES = 10
MEASURES = ("AP", "nDCG@10", "RR")
GATES_PER_MEASURE = (
    "{statistic: mean, measure: M, max_decrease: 0.01, confidence: 0.95}",
    "{statistic: bias2_plus_var, measure: M, max_increase: 5%, confidence: 0.95}",
    "{statistic: trisk, measure: M, min: -2.0}",
    "{statistic: georisk, measure: M, max_decrease: 5%}",
)

PYTREC_EVAL = """
import sys, pytrec_eval
with open(sys.argv[1]) as handle: judgments = pytrec_eval.parse_qrel(handle)
with open(sys.argv[2]) as handle: rankings = pytrec_eval.parse_run(handle)
results = pytrec_eval.RelevanceEvaluator(judgments, {"map", "ndcg_cut.10", "recip_rank"}).evaluate(rankings)
print(sum(values["map"] for values in results.values()) / len(results))
"""
IR_MEASURES = """
import sys, ir_measures
from ir_measures import AP, nDCG, RR
qrels, run = ir_measures.read_trec_qrels(sys.argv[1]), ir_measures.read_trec_run(sys.argv[2])
values = list(ir_measures.iter_calc([AP, nDCG@10, RR], qrels, run))
print(len(values))
"""
RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels, run = Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec")
print(evaluate(qrels, run, ["map", "ndcg@10", "mrr"], return_mean=False)["map"].mean())
"""


def write_system_run(path: Path, qrels_path: Path, docs: int, seed: int, depth: float) -> None:
    """A run over the qrels' queries whose relevant passages sit at ranks drawn with mean ``depth * docs / 20``."""
    rng = np.random.default_rng(seed)
    relevant: dict[str, list[str]] = {}
    for line in qrels_path.read_text().splitlines():
        qid, _, docno, grade = line.split()
        relevant.setdefault(qid, [])
        if grade != "0":
            relevant[qid].append(docno)
    ranks = np.arange(1, docs + 1)
    with open(path, "w", encoding="utf-8") as run:
        for qid, judged in relevant.items():
            retrieved = rng.choice(8_841_823, size=docs, replace=False).astype(str).tolist()
            for docno in judged:
                if rng.random() < 0.85 and docno not in retrieved:
                    retrieved[min(int(rng.exponential(depth * docs / 20)), docs - 1)] = docno
            scores = np.sort(rng.normal(12.0, 3.0, size=docs))[::-1]
            run.write(
                "".join(
                    f"{qid} Q0 {doc} {rank} {score:.6f} system{seed}\n"
                    for doc, rank, score in zip(retrieved, ranks, scores)
                )
            )


def write_spec(folder: Path, qrels: Path, baselines: list[Path], candidate: Path) -> Path:
    gates = [gate.replace("M", measure) for measure in ("AP", "nDCG@10") for gate in GATES_PER_MEASURE]
    lines = [f"qrels: {qrels.name}", "measures: [AP, nDCG@10]", "baselines:"]
    lines += [f"  b{i}: {path.name}" for i, path in enumerate(baselines)]
    lines += [f"candidate: {candidate.name}", "reference: b0", "gates:"] + [f"  - {gate}" for gate in gates]
    spec = folder / "bvtest.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def timed(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system, steadier on a shared machine) and peak resident MB of one
    fresh process (exit status 0 or 1: a failed gate is fine)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPOSITORY_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({code}):\n{process.stderr.read().decode() if process.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--docs", type=int, default=1000, help="documents per query")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--ranx-python", default=None, help="a Python with ranx installed (default: this one, if it has ranx)"
    )
    arguments = parser.parse_args()
    python = sys.executable
    ranx_python = arguments.ranx_python or (python if importlib.util.find_spec("ranx") else None)
    trec_eval = shutil.which("trec_eval")

    folder = Path(tempfile.mkdtemp(prefix="bench_gate_"))
    try:
        started = time.perf_counter()
        first_run, qrels = write_data(folder, arguments.queries, arguments.docs)
        baselines = [first_run]
        for i in range(1, BASELINES):
            baselines.append(folder / f"baseline{i}.run")
            write_system_run(baselines[-1], qrels, arguments.docs, SEED + i, 0.6 + 0.1 * i)
        candidate = folder / "candidate.run"
        write_system_run(candidate, qrels, arguments.docs, SEED + 100, 0.8)
        spec = write_spec(folder, qrels, baselines, candidate)
        size = sum(path.stat().st_size for path in [*baselines, candidate]) / 1e6
        print(
            f"data: {arguments.queries:,} queries x {arguments.docs:,} docs, 11 runs, {size / 11:.0f} MB each "
            f"(seed {SEED}, written in {time.perf_counter() - started:.0f} s); machine: {os.cpu_count()} cores, shared"
        )

        evaluate = [python, "-m", "pytest_bvtest.cli", "evaluate", "--mean", "--qrels", str(qrels)] + [
            option for measure in MEASURES for option in ("-m", measure)
        ]
        check = [python, "-m", "pytest_bvtest.cli", "check", str(spec)]
        for _ in range(2):  # fills the spec's cache; the second pass records the files' stat once they have aged
            timed(check)
        cases: dict[str, list[str] | None] = {
            "pytrec_eval alone": [python, "-c", PYTREC_EVAL, str(qrels), str(candidate)],
            "evaluate cold": None,  # a fresh cache folder per repeat, below
            "evaluate cached": [*evaluate, "--cache-dir", str(folder / "cache-evaluate"), str(candidate)],
            "check all cached": check,
            "check candidate new": None,  # a rewritten candidate per repeat, below
            "trec_eval -q": [
                trec_eval,
                "-q",
                "-m",
                "map",
                "-m",
                "ndcg_cut.10",
                "-m",
                "recip_rank",
                str(qrels),
                str(candidate),
            ]
            if trec_eval
            else None,
            "ir_measures": [python, "-c", IR_MEASURES, str(qrels), str(candidate)],
            "ranx": [ranx_python, "-c", RANX, str(qrels), str(candidate)] if ranx_python else None,
        }
        skipped = [name for name in ("trec_eval -q", "ranx") if cases[name] is None]
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases if name not in skipped}
        timed([*evaluate, "--cache-dir", str(folder / "cache-evaluate"), str(candidate)])
        for repeat in range(arguments.repeat):
            for name in results:
                command = cases[name]
                if name == "evaluate cold":
                    command = [*evaluate, "--cache-dir", str(folder / f"cache-cold-{repeat}"), str(candidate)]
                elif name == "check candidate new":
                    new_candidate = folder / f"new-candidate-{repeat}.run"
                    write_system_run(new_candidate, qrels, arguments.docs, SEED + 200 + repeat, 0.8)
                    command = [*check, "--run", str(new_candidate)]
                assert command is not None
                results[name].append(timed(command))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    reference = statistics.median(wall for wall, _, _ in results["pytrec_eval alone"])
    reference_cpu = statistics.median(cpu for _, cpu, _ in results["pytrec_eval alone"])
    header = (
        f"{'case':<22} {'median s':>9} {'best s':>7} {'x pytrec_eval':>14} {'median cpu s':>13} "
        f"{'cpu x pytrec_eval':>18} "
        f"{'peak RSS MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for name, rows in results.items():
        median = statistics.median(wall for wall, _, _ in rows)
        cpu = statistics.median(cpu for _, cpu, _ in rows)
        print(
            f"{name:<22} {median:>9.2f} {min(wall for wall, _, _ in rows):>7.2f} {median / reference:>14.2f} "
            f"{cpu:>13.2f} {cpu / reference_cpu:>18.2f} {max(peak for _, _, peak in rows):>12.0f}"
        )
    for name in skipped:
        print(
            f"{name:<22} skipped "
            f"({'no trec_eval binary on the PATH' if name.startswith('trec') else 'ranx not installed'})"
        )


if __name__ == "__main__":
    main()
