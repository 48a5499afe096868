"""Quick per-topic comparison of runs against the judgments, with pytrec_eval.

    python eval/compare_runs.py runs/production.run runs/*.run

The first run is the reference: every other run is listed with its mean nDCG@10 and AP, the number
of topics it wins and loses against the reference, and its worst per-topic nDCG@10 losses. Topics
are the qrels topics with a relevant document; a topic a run does not answer scores 0 (trec_eval -c).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytrec_eval

MEASURES = {"ndcg_cut_10": "nDCG@10", "map": "AP"}
QRELS_PATH = Path(__file__).resolve().parent / "qrels.txt"


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            qid, _, docno, grade = line.split()
            qrels.setdefault(qid, {})[docno] = int(grade)
    return qrels


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            qid, _, docno, _, score, _ = line.split()
            run.setdefault(qid, {})[docno] = float(score)
    return run


def per_topic(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """``{measure: {qid: score}}`` over every qrels topic with a relevant document."""
    topics = [qid for qid, docs in qrels.items() if any(grade > 0 for grade in docs.values())]
    evaluator = pytrec_eval.RelevanceEvaluator({qid: qrels[qid] for qid in topics}, set(MEASURES))
    scores = evaluator.evaluate({qid: run[qid] for qid in topics if qid in run})
    return {measure: {qid: scores.get(qid, {}).get(measure, 0.0) for qid in topics} for measure in MEASURES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path)
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--qrels", type=Path, default=QRELS_PATH)
    parser.add_argument("--worst", type=int, default=5, help="largest per-topic losses to list")
    args = parser.parse_args(argv)
    qrels = read_qrels(args.qrels)
    reference = per_topic(read_run(args.reference), qrels)
    print(f"{'run':<22}{'nDCG@10':>9}{'AP':>8}{'wins':>6}{'losses':>8}  worst nDCG@10 losses vs {args.reference.stem}")
    for path in [args.reference] + [p for p in args.runs if p != args.reference]:
        scores = per_topic(read_run(path), qrels)
        ndcg, ap = scores["ndcg_cut_10"], scores["map"]
        deltas = {qid: ndcg[qid] - reference["ndcg_cut_10"][qid] for qid in ndcg}
        wins = sum(delta > 1e-9 for delta in deltas.values())
        losses = sorted((delta, qid) for qid, delta in deltas.items() if delta < -1e-9)
        worst = ", ".join(f"{qid}:{delta:+.3f}" for delta, qid in losses[: args.worst])
        mean_ndcg = sum(ndcg.values()) / len(ndcg)
        mean_ap = sum(ap.values()) / len(ap)
        print(f"{path.stem:<22}{mean_ndcg:>9.4f}{mean_ap:>8.4f}{wins:>6}{len(losses):>8}  {worst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
