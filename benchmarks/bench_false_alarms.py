"""How often the recommended spec fails a change that is no worse, and how often it catches a worse one.

The README's four gates (``trisk``; ``var`` and ``bias2_plus_var`` with ``max_increase: 5%``; ``mean`` with
``max_decrease: 0.01``; all ``false_alarm: 0.05``) judge pairs of real systems (candidate, reference)
from five collections in ``../shared/data``, each pair with two other real systems of the collection as
the remaining baselines, once with per-gate limits (``family: false``) and once with family-wise limits
(``family: true``), through the public pipeline: a per-topic table and a spec are written to a scratch
folder and :func:`pytest_bvtest.judging.pipeline.evaluate_spec` judges them, as ``bvtest check`` would. A pair is
"red" when at least one gate FAILs (the CI check's one red or green).

Pairs, per collection (every draw seeded with ``SEED``):

- **equal (swapped)**: two real systems (a pair drawn at random for each of 200 draws) whose scores are
  swapped on random topics (each with probability 1/2): equal quality by construction; every red is a
  false alarm.
- **equal means**: real pairs whose means do not differ (two-sided randomization p > 0.5); a red may also
  be a real change of spread.
- **worse, p < 0.01**: real pairs where the candidate's mean is lower with randomization p < 0.01.
- **worse, 0.01 <= p < 0.05**: the same, less clearly worse.

From the repository root (needs ``../shared/data``, or ``BVTEST_SHARED_DATA``; about 15 minutes on one
core; the table and its reading are in docs/benchmarks.md)::

    python -m benchmarks.bench_false_alarms
    python -m benchmarks.bench_false_alarms --scale 0.25    # a quarter of the pairs
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.inference import randomization_tests

SEED = 20261125
SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

#: Pairs drawn per collection and kind (fewer when a collection has fewer such pairs).
PAIRS = {"equal (swapped)": 200, "equal means": 100, "worse, p < 0.01": 100, "worse, 0.01 <= p < 0.05": 60}

GATES = """\
gates:
  - {statistic: trisk, false_alarm: 0.05}
  - {statistic: var, max_increase: 5%, false_alarm: 0.05}
  - {statistic: bias2_plus_var, max_increase: 5%, false_alarm: 0.05}
  - {statistic: mean, max_decrease: 0.01, false_alarm: 0.05}
"""


def _wide_table(path: str, measure: str | None = None) -> tuple[list[str], np.ndarray]:
    """Systems and their per-topic scores from a per-topic table of the shared data."""
    table = read_score_table(SHARED_DATA / path, measure=measure)
    values = table.for_measure(measure)
    systems = list(values)
    topics = list(values[systems[0]])
    return systems, np.array([[values[system][topic] for topic in topics] for system in systems])


def _trec_eval_tables(folder: str, measure: str) -> tuple[list[str], np.ndarray]:
    """One system per ``trec_eval -q`` output file (``*.eval.gz``) in ``folder``."""
    tables = [
        read_score_table(path, format="trec_eval", measure=measure).for_measure(measure)
        for path in sorted((SHARED_DATA / folder).glob("*.eval.gz"))
    ]
    systems = [system for table in tables for system in table]
    topics = list(next(iter(tables[0].values())))
    return systems, np.array([[scores[topic] for topic in topics] for table in tables for scores in table.values()])


def _dl19_passage() -> tuple[list[str], np.ndarray]:
    """nDCG@10 of the DL19 passage re-rankers, evaluated by the plugin on the 43 DL19 topics."""
    folder = SHARED_DATA / "dl19_passage_qppeval_runs"
    runs = sorted((folder / "runs").glob("*.gz"))
    with tempfile.TemporaryDirectory() as scratch:
        topics = {line.split()[0] for line in _lines(runs[0])}  # the DL19 topics (one run holds DL19 only)
        qrels = Path(scratch) / "qrels.txt"
        qrels.write_text("".join(line for line in _lines(folder / "trecdl1920.qrels") if line.split()[0] in topics))
        baselines = "".join(f"  run{i}: {run}\n" for i, run in enumerate(runs))
        spec = Path(scratch) / "bvtest.yaml"
        spec.write_text(f"qrels: {qrels}\nmeasures: [nDCG@10]\ncache: false\nbaselines:\n{baselines}")
        matrix = evaluate_spec(load_spec(spec)).measure().matrix
        return [run.name for run in runs], matrix.scores


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return handle.readlines()


COLLECTIONS: dict[str, Callable[[], tuple[list[str], np.ndarray]]] = {
    "TREC-8 ad hoc, AP": lambda: _wide_table("newbestsub_named_matrices/AH99.csv"),
    "TREC Web 2012, nDCG@20": lambda: _wide_table("trec_topic_system_matrices/sigir2018-simulation/web2012_ndcg20.csv"),
    "TREC-COVID round 1, RBP(0.5)": lambda: _wide_table("trec_covid_round1_benham/round1_data.csv"),
    "TREC DL19 passage, nDCG@10": _dl19_passage,
    "DL-HARD documents, nDCG@10": lambda: _trec_eval_tables("dl_hard/dataset/baselines/doc", "ndcg_cut_10"),
}


def _red(folder: Path, scores: np.ndarray, family: bool) -> bool:
    """Whether the recommended spec fails at least one gate: row 0 the candidate, row 1 the reference."""
    names = ["candidate", "reference", "other1", "other2"][: len(scores)]
    table = folder / "scores.csv"
    header = "system," + ",".join(f"t{j}" for j in range(scores.shape[1]))
    rows = [name + "," + ",".join(repr(float(value)) for value in row) for name, row in zip(names, scores)]
    table.write_text("\n".join([header, *rows]) + "\n")
    baselines = "".join(f"  {name}: {{scores: scores.csv, system: {name}}}\n" for name in names[1:])
    (folder / "bvtest.yaml").write_text(
        f"measures: [score]\ntable_format: wide\ncache: false\nbaselines:\n{baselines}"
        "candidate: {scores: scores.csv, system: candidate}\nreference: reference\n"
        f"analysis:\n  risk_alpha: 5\n  calibration: {{family: {str(family).lower()}}}\n{GATES}"
    )
    return not evaluate_spec(load_spec(folder / "bvtest.yaml")).passed


def _pairs(scores: np.ndarray, rng: np.random.Generator) -> dict[str, list[tuple[int, int]]]:
    """Ordered pairs of distinct systems, by kind, in a seeded random order: every real pair of its kind once,
    and for the swapped equal pairs ``PAIRS`` draws with replacement (each draw gets its own random swap, so a
    collection of few systems still gives as many equal-quality pairs)."""
    count = len(scores)
    first, second = np.array([(c, r) for c in range(count) for r in range(count) if c != r]).T
    tests = randomization_tests(scores[first], scores[second], seed=SEED)
    p = np.array([test.p_value for test in tests])
    loss = scores[first].mean(axis=1) < scores[second].mean(axis=1)
    kinds = {
        "equal means": p > 0.5,
        "worse, p < 0.01": loss & (p < 0.01),
        "worse, 0.01 <= p < 0.05": loss & (p >= 0.01) & (p < 0.05),
    }
    swapped = rng.integers(len(first), size=PAIRS["equal (swapped)"])
    return {
        "equal (swapped)": [(int(first[i]), int(second[i])) for i in swapped],
        **{
            kind: [(int(first[i]), int(second[i])) for i in rng.permutation(np.flatnonzero(chosen))]
            for kind, chosen in kinds.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="draw this share of the pairs (default 1)")
    arguments = parser.parse_args()
    print(f"pytest-bvtest false alarms and power of the recommended four gates (seed {SEED})")
    print(f"{'collection':<30}{'systems x topics':>17}  {'pairs':<24}{'n':>5}{'per-gate red':>16}{'family red':>16}")
    rng = np.random.default_rng(SEED)
    pooled = {kind: [0, 0, 0] for kind in PAIRS}  # pairs, per-gate reds, family reds over every collection
    with tempfile.TemporaryDirectory() as scratch:
        for collection, load in COLLECTIONS.items():
            systems, scores = load()
            for kind, pairs in _pairs(scores, rng).items():
                pairs = pairs[: round(PAIRS[kind] * arguments.scale)]
                red = {False: 0, True: 0}
                for candidate, reference in pairs:
                    others = [i for i in range(len(systems)) if i not in (candidate, reference)]
                    chosen = scores[[candidate, reference, *rng.choice(others, size=2, replace=False)]].copy()
                    if kind == "equal (swapped)":
                        swapped = rng.random(scores.shape[1]) < 0.5
                        chosen[0], chosen[1] = (
                            np.where(swapped, chosen[1], chosen[0]),
                            np.where(swapped, chosen[0], chosen[1]),
                        )
                    for family in red:
                        red[family] += _red(Path(scratch), chosen, family)
                pooled[kind] = [pooled[kind][0] + len(pairs), pooled[kind][1] + red[False], pooled[kind][2] + red[True]]
                _print_row(collection, f"{len(systems)} x {scores.shape[1]}", kind, len(pairs), red[False], red[True])
    for kind, (pairs, per_gate, family) in pooled.items():
        _print_row("all five", "", kind, pairs, per_gate, family)


def _print_row(collection: str, shape: str, kind: str, pairs: int, per_gate: int, family: int) -> None:
    """One line of the table: the share of red pairs in each mode with its binomial standard error."""

    def share(reds: int) -> str:
        return "-" if not pairs else f"{reds / pairs:.1%} ±{np.sqrt(reds * (pairs - reds) / pairs) / pairs:.1%}"

    print(f"{collection:<30}{shape:>17}  {kind:<24}{pairs:>5}{share(per_gate):>16}{share(family):>16}", flush=True)


if __name__ == "__main__":
    main()
