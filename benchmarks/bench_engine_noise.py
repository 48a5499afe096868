"""How often an unchanged nondeterministic engine, given as several runs, fails the README's gates.

docs/mathematics.md §7, "Run-to-run noise". The engine is DL-HARD's BM25 (its per-topic nDCG@10 on the 50 topics,
from the collection's ``trec_eval -q`` output); each of its runs is that score plus a shift the run draws for every
topic at once (sd ``SHIFT``: an index built anew, a re-ranker on another GPU) and noise on each topic (sd
``TOPIC_NOISE``), clipped to [0, 1]. The candidate is ``k_c`` runs of it, the reference ``k_r`` runs of the same
engine: every red is a false alarm. Each repetition writes the runs as one per-topic table and judges them with the
README's four gates (``trisk``; ``var`` and ``bias2_plus_var`` with ``max_increase: 5%``; ``mean`` with
``max_decrease: 0.01``; all ``false_alarm: 0.05``, family-wise) through
:func:`pytest_bvtest.judging.pipeline.evaluate_spec`, as ``bvtest check`` would.

From the repository root (needs ``../shared/data``, or ``BVTEST_SHARED_DATA``)::

    python -m benchmarks.bench_engine_noise                 # 400 repetitions per setting
    python -m benchmarks.bench_engine_noise --repetitions 100
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.reader import load_spec

SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
BM25_EVAL = ("dl_hard", "dataset", "baselines", "doc", "bm25.run.eval.gz")
SHIFT = 0.01
TOPIC_NOISE = 0.03
SEED = 20261128
#: ``(k_c, k_r)``: the issue's two candidate runs against one reference run, then two and five a side.
SETTINGS = ((2, 1), (2, 2), (5, 5))
GATES = [
    {"statistic": "trisk", "false_alarm": 0.05},
    {"statistic": "var", "max_increase": "5%", "false_alarm": 0.05},
    {"statistic": "bias2_plus_var", "max_increase": "5%", "false_alarm": 0.05},
    {"statistic": "mean", "max_decrease": 0.01, "false_alarm": 0.05},
]


def engine_scores() -> np.ndarray:
    """DL-HARD BM25's nDCG@10 on each of the 50 topics."""
    table = read_score_table(SHARED_DATA.joinpath(*BM25_EVAL), format="trec_eval", measure="ndcg_cut_10")
    (scores,) = table.for_measure("ndcg_cut_10").values()
    return np.array([scores[topic] for topic in sorted(scores)])


def engine_runs(quality: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` runs of the engine: a shift per run, noise per topic, clipped to [0, 1]."""
    shifts = rng.normal(0.0, SHIFT, (count, 1))
    return np.clip(quality + shifts + rng.normal(0.0, TOPIC_NOISE, (count, quality.size)), 0.0, 1.0)


def judge_runs(folder: Path, candidate: np.ndarray, reference: np.ndarray, swaps: int | None = None) -> dict[str, str]:
    """Every gate's outcome for ``candidate`` runs against ``reference`` runs, through ``evaluate_spec`` (the null's
    ``swaps``: the spec's default when ``None``)."""
    lines = ["system,topic,measure,value"]
    names = {"c": candidate, "r": reference}
    for prefix, runs in names.items():
        for a, run in enumerate(runs):
            lines.extend(f"{prefix}{a},{j},nDCG@10,{float(value)!r}" for j, value in enumerate(run))
    (folder / "runs.csv").write_text("\n".join(lines) + "\n")

    def system(prefix: str, runs: np.ndarray) -> object:
        entries = [{"scores": "runs.csv", "system": f"{prefix}{a}"} for a in range(len(runs))]
        return entries[0] if len(entries) == 1 else entries

    spec = {
        "measures": ["nDCG@10"],
        "table_format": "long",
        "baselines": {"production": system("r", reference)},
        "candidate": system("c", candidate),
        "reference": "production",
        "analysis": {"power": False, **({} if swaps is None else {"calibration": {"swaps": swaps}})},
        "gates": GATES,
    }
    (folder / "bvtest.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    evaluation = evaluate_spec(load_spec(folder / "bvtest.yaml"), use_cache=False)
    return {verdict.gate.statistic: verdict.outcome for verdict in evaluation.gates}


def false_alarms(
    candidate_runs: int, reference_runs: int, repetitions: int, seed: int = SEED, swaps: int | None = None
) -> tuple[float, Counter]:
    """The share of repetitions in which at least one gate FAILs, and how often each gate does."""
    quality = engine_scores()
    rng = np.random.default_rng([seed, candidate_runs, reference_runs])
    red, by_gate = 0, Counter()
    with tempfile.TemporaryDirectory(prefix="bvtest-noise-") as scratch:
        for _ in range(repetitions):
            runs = engine_runs(quality, candidate_runs + reference_runs, rng)
            outcomes = judge_runs(Path(scratch), runs[:candidate_runs], runs[candidate_runs:], swaps)
            failing = [name for name, outcome in outcomes.items() if outcome == "FAIL"]
            red += bool(failing)
            by_gate.update(failing)
    return red / repetitions, by_gate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=400)
    arguments = parser.parse_args()
    print(
        f"pytest-bvtest: an unchanged engine as several runs (shift sd {SHIFT}, per-topic sd {TOPIC_NOISE}, DL-HARD "
        f"BM25 nDCG@10), README's four gates at false_alarm 0.05 together, {arguments.repetitions} repetitions, "
        f"seed {SEED}"
    )
    header = f"{'runs (candidate, reference)':28} {'red':>6}  failing gates"
    print(header)
    print("-" * len(header))
    for candidate_runs, reference_runs in SETTINGS:
        rate, by_gate = false_alarms(candidate_runs, reference_runs, arguments.repetitions)
        gates = ", ".join(f"{name} {count / arguments.repetitions:.1%}" for name, count in by_gate.most_common())
        print(f"{f'{candidate_runs}, {reference_runs}':28} {rate:6.1%}  {gates}")


if __name__ == "__main__":
    main()
