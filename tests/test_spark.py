"""The Spark evaluator (pytest_bvtest.spark) against the local one and ir_measures, on the shared DL19 runs.

Skipped where PySpark or a Java runtime is missing (``pip install pyspark pyarrow``, the spark extra; not in the test
extra: a Spark session takes seconds to start).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import shared_path

pytest.importorskip("pyspark", reason="the Spark evaluator needs PySpark: pip install pyspark pyarrow")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("the Spark evaluator needs a Java runtime", allow_module_level=True)

import ir_measures  # noqa: E402
import numpy as np  # noqa: E402

from pytest_bvtest import spark as bvtest_spark  # noqa: E402
from pytest_bvtest.errors import InputError  # noqa: E402
from pytest_bvtest.io.qrels import read_qrels  # noqa: E402
from pytest_bvtest.io.runs import read_run_columns  # noqa: E402
from pytest_bvtest.io.tables import read_score_table  # noqa: E402
from pytest_bvtest.scoring.measures import evaluate_run  # noqa: E402
from pytest_bvtest.spec.measures import parse_measure  # noqa: E402

MEASURES = ["AP", "AP(rel=2)", "nDCG", "nDCG@10", "P@10", "R@100", "RR", "RR@10", "RR(rel=2)@10"]
RUNS = ("colbert-on-bm25-trec-dl-queries.gz", "drmm.res.gz", "run-msmarco-passage-bm25-monot5-0.8-0.5.txt.gz")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("bvtest tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def spark_values(frame) -> dict[tuple[str, str, str], float]:
    return {(row.system, row.measure, row.topic): row.value for row in frame.collect()}


def test_every_columnar_measure_equals_the_local_evaluator_on_real_dl19_runs(spark, tmp_path: Path) -> None:
    folder = shared_path("dl19_passage_qppeval_runs")
    qrels_path = folder / "trecdl1920.qrels"
    paths = [folder / "runs" / name for name in RUNS]
    runs = bvtest_spark.read_trec_run(spark, str(paths[0]))
    for path in paths[1:]:
        runs = runs.unionByName(bvtest_spark.read_trec_run(spark, str(path)))
    got = spark_values(
        bvtest_spark.per_topic_scores(runs, bvtest_spark.read_trec_qrels(spark, str(qrels_path)), MEASURES)
    )
    qrels = read_qrels(qrels_path)
    compared = 0
    for path in paths:
        run = read_run_columns(path)
        (system,) = run.tags
        expected = evaluate_run(qrels, run, [parse_measure(name) for name in MEASURES])
        for measure, per_topic in expected.items():
            ours = {topic: value for (s, m, topic), value in got.items() if s == system and m == str(measure)}
            assert ours.keys() == per_topic.keys(), (system, measure)
            for topic, value in per_topic.items():
                assert ours[topic] == pytest.approx(value, abs=1e-12), (system, measure, topic)
                compared += 1
    assert compared == 3 * 43 * len(MEASURES)  # 43 judged DL19 topics, every system answers every one


def test_judged_at_k_equals_ir_measures_on_a_real_dl19_run(spark) -> None:
    folder = shared_path("dl19_passage_qppeval_runs")
    qrels_path, path = folder / "trecdl1920.qrels", folder / "runs" / "drmm.res.gz"
    got = spark_values(
        bvtest_spark.per_topic_scores(
            bvtest_spark.read_trec_run(spark, str(path)),
            bvtest_spark.read_trec_qrels(spark, str(qrels_path)),
            ["Judged@10", "Judged@100"],
        )
    )
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(path)))
    # ir_measures scores every topic of the qrels; the table has those with a positive grade that the run answers
    evaluated = {judgment.query_id for judgment in qrels if judgment.relevance > 0} & {row.query_id for row in run}
    for k in (10, 100):
        expected = {
            metric.query_id: metric.value
            for metric in ir_measures.iter_calc(
                [ir_measures.parse_measure(f"Judged@{k}")], qrels, ir_measures.read_trec_run(str(path))
            )
            if metric.query_id in evaluated
        }
        ours = {topic: value for (_, measure, topic), value in got.items() if measure == f"Judged@{k}"}
        assert ours.keys() == expected.keys() and len(ours) == 43
        scores = {
            topic: sorted((float(np.float32(row.score)) for row in run if row.query_id == topic), reverse=True)
            for topic in expected
        }
        # ir_measures breaks ties its own way: compared where no tie straddles rank k (trec_eval's order decides there)
        clear = [topic for topic, ranked in scores.items() if len(ranked) <= k or ranked[k - 1] != ranked[k]]
        for topic in clear:
            # MATH.md section 8 divides by k; ir_measures by the documents in the first k, fewer where a topic
            # has fewer than k (DRMM ranks 5 documents for topic 855410)
            assert ours[topic] == pytest.approx(expected[topic] * min(k, len(scores[topic])) / k, abs=1e-12), (k, topic)
        assert len(clear) >= 10
        assert 0 <= min(ours.values()) < max(ours.values()) == 1
    # topic 962179: five documents tie at 20.662338 across rank 10; docno descending puts three judged ones first
    assert got[("run", "Judged@10", "962179")] == 1.0


def test_ties_in_single_precision_and_negative_zero_follow_trec_eval(spark, tmp_path: Path) -> None:
    # scores equal as C floats tie and are ordered by docno descending; -0.0 ties with 0.0
    run = tmp_path / "ties.run"
    run.write_text(
        "".join(
            [
                "1 Q0 d1 1 0.30000001 t\n",
                "1 Q0 d3 2 0.30000002 t\n",  # equal to 0.30000001 in single precision
                "1 Q0 d2 3 0.3 t\n",
                "1 Q0 d5 4 -0.0 t\n",
                "1 Q0 d4 5 0.0 t\n",
                "2 Q0 a 1 2.5 t\n",
                "2 Q0 b 2 2.5 t\n",
                "2 Q0 c 3 1.0 t\n",
            ]
        )
    )
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text("1 0 d1 1\n1 0 d4 2\n1 0 d2 0\n2 0 a 3\n2 0 c 1\n2 0 x 2\n")
    measures = ["AP", "nDCG@2", "RR", "P@1", "nDCG"]
    got = spark_values(
        bvtest_spark.per_topic_scores(
            bvtest_spark.read_trec_run(spark, str(run)), bvtest_spark.read_trec_qrels(spark, str(qrels_path)), measures
        )
    )
    expected = evaluate_run(read_qrels(qrels_path), read_run_columns(run), [parse_measure(m) for m in measures])
    for measure, per_topic in expected.items():
        for topic, value in per_topic.items():
            assert got[("t", str(measure), topic)] == pytest.approx(value, abs=1e-12), (measure, topic)
    # d1, d3 and d2 score the same C float: docno descending puts d3 and d2 (not relevant) before d1
    assert got[("t", "RR", "1")] == pytest.approx(1 / 3)


def test_the_command_writes_one_parquet_table_the_gate_reads(tmp_path: Path) -> None:
    folder = shared_path("dl19_passage_qppeval_runs")
    output = tmp_path / "per_topic.parquet"
    code = bvtest_spark.main(
        [
            "--qrels",
            str(folder / "trecdl1920.qrels"),
            "-m",
            "nDCG@10",
            "-o",
            str(output),
            str(folder / "runs" / "drmm.res.gz"),
        ]
    )
    assert code == 0
    table = read_score_table(output)
    expected = evaluate_run(
        read_qrels(folder / "trecdl1920.qrels"),
        read_run_columns(folder / "runs" / "drmm.res.gz"),
        [parse_measure("nDCG@10")],
    )
    scores = table.for_measure("nDCG@10")["run"]
    assert scores == pytest.approx(expected[parse_measure("nDCG@10")], abs=1e-12) and len(scores) == 43


def test_a_measure_spark_does_not_compute_is_one_clear_error() -> None:
    with pytest.raises(InputError, match="'ERR@20': the Spark evaluator computes AP, nDCG"):
        bvtest_spark._measure("ERR@20")
    assert bvtest_spark._measure("ndcg_cut_10") == ("nDCG@10", "nDCG", 10, None)
    assert bvtest_spark._measure("Judged@5") == ("Judged@5", "Judged", 5, None)
