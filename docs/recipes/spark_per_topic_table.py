"""Per-topic scores computed in Spark, written as the Parquet table that ``bvtest`` gates (docs/scale.md).

    python docs/recipes/spark_per_topic_table.py QRELS RUN OUT.parquet     # pip install pyspark pandas pyarrow
    spark-submit docs/recipes/spark_per_topic_table.py QRELS RUN OUT.parquet

QRELS and RUN are TREC files (any path Spark reads: local, HDFS, S3); RUN may hold several systems
(its tag column). The measure is RR@10: the reciprocal rank of the first relevant document (grade > 0)
in the top 10, 0 when there is none, for every query of the qrels that the system answered (as
trec_eval does). Documents are ranked by score, ties by document id descending (trec_eval's order).
Replace ``per_topic_rr_at_10`` with your own measures: the table only needs one row per system, topic
and measure.

The table is small (one row per system, topic and measure: 70,000 rows for 10 systems on MS MARCO
dev), so it is collected to the driver and written as one Parquet file, which a spec names directly:

    baselines:
      production: {scores: per_topic.parquet, system: production}
    candidate: {scores: per_topic.parquet, system: candidate}
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F


def trec_columns(spark: SparkSession, path: str, names: dict[int, str]) -> DataFrame:
    """The whitespace-separated columns of a TREC file, by position."""
    fields = F.split(F.trim(F.col("value")), r"\s+")
    lines = spark.read.text(path).where(F.trim(F.col("value")) != "")
    return lines.select(*(fields[position].alias(name) for position, name in names.items()))


def per_topic_rr_at_10(qrels: DataFrame, run: DataFrame) -> DataFrame:
    """RR@10 per (system, topic): columns system, topic, measure, value."""
    ranking = Window.partitionBy("system", "topic").orderBy(F.col("score").desc(), F.col("docno").desc())
    top = run.withColumn("rank", F.row_number().over(ranking)).where(F.col("rank") <= 10)
    relevant = qrels.where(F.col("grade") > 0).select("topic", "docno")
    first_relevant = top.join(relevant, ["topic", "docno"]).groupBy("system", "topic").agg(F.min("rank").alias("rank"))
    answered = run.select("system", "topic").distinct().join(qrels.select("topic").distinct(), "topic")
    return answered.join(first_relevant, ["system", "topic"], "left").select(
        "system", "topic", F.lit("RR@10").alias("measure"), F.coalesce(1.0 / F.col("rank"), F.lit(0.0)).alias("value")
    )


def main(qrels_path: str, run_path: str, output: str) -> None:
    spark = SparkSession.builder.appName("bvtest per-topic scores").getOrCreate()
    qrels = trec_columns(spark, qrels_path, {0: "topic", 2: "docno", 3: "grade"}).withColumn(
        "grade", F.col("grade").cast("int")
    )
    run = trec_columns(spark, run_path, {0: "topic", 2: "docno", 4: "score", 5: "system"}).withColumn(
        "score", F.col("score").cast("double")
    )
    scores = per_topic_rr_at_10(qrels, run).orderBy("system", "topic")
    scores.toPandas().to_parquet(output, index=False)
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: spark_per_topic_table.py QRELS RUN OUT.parquet")
    main(*sys.argv[1:])
