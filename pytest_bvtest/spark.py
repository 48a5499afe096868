"""Per-topic scores of runs too large for one machine, computed in Spark: the table a gate reads (docs/scale.md).

``pip install pyspark pyarrow`` (the ``spark`` extra; Spark needs a Java runtime). The columnar
measures of :mod:`pytest_bvtest.scoring.columnar` with trec_eval's conventions (docs/mathematics.md §1), and
Judged@k (MATH.md §8), for every system and topic of runs held in a Spark DataFrame or read from TREC
files or Parquet:

- **Order**: score descending, compared as a C ``float`` as trec_eval stores it (``-0.0`` is ``0.0``),
  ties by docno descending (byte order, as ``strcmp``).
- **Topics**: those of the qrels with a positive grade that the system ranks at least one document for
  (docs/mathematics.md §1 PIN); a topic the system misses is absent, and the gate counts it 0 with a
  warning.
- **AP**, **P@k**, **R@k**, **RR** / **RR@k** (``rel=L``: grade at least ``L`` is relevant, 1 by
  default; the relevant count of a topic counts every such judgment, retrieved or not), **nDCG** /
  **nDCG@k** (linear gain, a negative grade gains 0, discount ``log2(rank + 1)``, the ideal ranking cut
  like the ranking) and **Judged@k** (the documents among the first ``k`` that have any judgment, any
  grade, over ``k`` as MATH.md §8 says; ir_measures divides by the documents there, which differs on a
  topic with fewer than ``k``).

The result has one row per system, topic and measure (``system``, ``topic``, ``measure``, ``value``),
the measure under its ir_measures name (``nDCG@10``): small enough to collect (70,000 rows for 10
systems x 6,980 topics x one measure), so :func:`write_table` writes it as one Parquet file, which a spec
names as ``{scores: per_topic.parquet, system: NAME}``. From the command line::

    python -m pytest_bvtest.spark --qrels qrels.txt -m nDCG@10 -m AP -o per_topic.parquet runs/*.run
    spark-submit --module pytest_bvtest.spark ...          # or through spark-submit, on a cluster

Runs named ``*.parquet`` are read as Parquet with columns ``system`` (or ``run``, ``tag``), ``topic``
(or ``qid``), ``docno`` and ``score``; any other file as a TREC run, the system from its tag column.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_bvtest.errors import BvtestError, InputError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# Judged@k until the measure family is known to parse_measure (MATH.md §8): the share of judged documents.
_JUDGED = re.compile(r"Judged@(\d+)")

#: The columnar measures this module computes in Spark (GMAP, RBP, IPrec, SetF, Compat and custom gains are local only).
_SPARK_FAMILIES = ("AP", "nDCG", "P", "R", "RR", "Judged")

# Names a Parquet run's columns may have, as a long per-topic table's (io/tables.py).
_RUN_COLUMNS = {
    "system": ("system", "run", "runid", "run_id", "tag", "name"),
    "topic": ("topic", "qid", "query_id", "topic_id", "query"),
    "docno": ("docno", "doc_id", "docid", "document"),
    "score": ("score", "sim", "value"),
}


def _measure(text: str) -> tuple[str, str, int | None, int | None]:
    """``(name, family, cutoff, rel)`` of a measure this module computes; an :class:`InputError` otherwise."""
    judged = _JUDGED.fullmatch(text.strip())
    if judged:
        return f"Judged@{int(judged.group(1))}", "Judged", int(judged.group(1)), None
    from pytest_bvtest.scoring.columnar import computes
    from pytest_bvtest.spec.measures import parse_measure

    measure = parse_measure(text)
    if not computes(measure) or measure.name not in _SPARK_FAMILIES or measure.gains is not None:
        raise InputError(
            f"measure {text!r}: the Spark evaluator computes AP, nDCG, nDCG@k, P@k, R@k, RR, RR@k and Judged@k",
            hint="compute the others locally (bvtest evaluate) or in your own Spark job",
        )
    return str(measure), measure.name, measure.cutoff, measure.rel


def per_topic_scores(runs: DataFrame, qrels: DataFrame, measures: Sequence[str]) -> DataFrame:
    """Per-topic values of ``measures`` for every system of ``runs``, with trec_eval's conventions (module docstring).

    Parameters
    ----------
    runs:
        Columns ``system``, ``topic``, ``docno``, ``score`` (one row per retrieved document; several systems).
    qrels:
        Columns ``topic``, ``docno``, ``grade``.
    measures:
        ir_measures names: ``AP``, ``nDCG``, ``nDCG@k``, ``P@k``, ``R@k``, ``RR``, ``RR@k`` (with
        ``(rel=L)``), ``Judged@k``.

    Returns
    -------
    pyspark.sql.DataFrame
        ``system``, ``topic``, ``measure``, ``value``: one row per system, evaluated topic and measure.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    parsed = [_measure(measure) for measure in measures]
    run = runs.select(
        F.col("system").cast("string").alias("system"),
        F.col("topic").cast("string").alias("topic"),
        F.col("docno").cast("string").alias("docno"),
        F.col("score").cast("double").alias("score"),
    )
    judgments = qrels.select(
        F.col("topic").cast("string").alias("topic"),
        F.col("docno").cast("string").alias("docno"),
        F.col("grade").cast("long").alias("grade"),
    )
    levels = sorted({rel for _, family, _, rel in parsed if rel is not None})
    ideal_cutoffs = sorted({cutoff or 0 for _, family, cutoff, _ in parsed if family == "nDCG"})

    # per topic of the universe (a positive grade): the relevant counts and the ideal DCGs
    ideal_rank = Window.partitionBy("topic").orderBy(F.col("grade").desc())
    ideal = judgments.where(F.col("grade") > 0).withColumn("ideal_rank", F.row_number().over(ideal_rank))
    ideal_gain = F.col("grade") / F.log2(F.col("ideal_rank") + 1.0)
    topic_columns = [F.sum((F.col("grade") >= level).cast("long")).alias(f"relevant_{level}") for level in levels]
    topic_columns += [
        F.sum(F.when(F.col("grade") > 0, 1).otherwise(0)).alias("positive"),
    ]
    per_topic = judgments.groupBy("topic").agg(*topic_columns).where(F.col("positive") > 0)
    if ideal_cutoffs:
        ideals = ideal.groupBy("topic").agg(
            *(
                F.sum(ideal_gain if cutoff == 0 else F.when(F.col("ideal_rank") <= cutoff, ideal_gain)).alias(
                    f"ideal_{cutoff}"
                )
                for cutoff in ideal_cutoffs
            )
        )
        per_topic = per_topic.join(ideals, "topic", "left")

    # the ranking, in trec_eval's order: the score as a C float (+0.0 for -0.0), ties by docno descending
    similarity = F.col("score").cast("float")
    similarity = F.when(similarity == 0, F.lit(0.0).cast("float")).otherwise(similarity)
    ranking = Window.partitionBy("system", "topic").orderBy(similarity.desc(), F.col("docno").desc())
    ranked = (
        run.join(per_topic.select("topic"), "topic")
        .withColumn("rank", F.row_number().over(ranking))
        .join(judgments, ["topic", "docno"], "left")
    )
    running = Window.partitionBy("system", "topic").orderBy("rank").rowsBetween(Window.unboundedPreceding, 0)
    for level in levels:
        relevant = F.coalesce((F.col("grade") >= level).cast("long"), F.lit(0))
        ranked = ranked.withColumn(f"rel_{level}", relevant)
        if any(family == "AP" and rel == level for _, family, _, rel in parsed):
            ranked = ranked.withColumn(f"so_far_{level}", F.sum(relevant).over(running))

    rank = F.col("rank")
    sums: dict[str, Column] = {}
    for name, family, cutoff, rel in parsed:
        within = rank <= cutoff if cutoff is not None else F.lit(True)
        if family == "AP":
            sums[name] = F.sum(F.when(F.col(f"rel_{rel}") == 1, F.col(f"so_far_{rel}") / rank).otherwise(0.0))
        elif family in ("P", "R"):
            sums[name] = F.sum(F.when(within & (F.col(f"rel_{rel}") == 1), 1.0).otherwise(0.0))
        elif family == "RR":
            sums[name] = F.min(F.when(within & (F.col(f"rel_{rel}") == 1), rank))
        elif family == "nDCG":
            gain = F.greatest(F.coalesce(F.col("grade"), F.lit(0)), F.lit(0)) / F.log2(rank + 1.0)
            sums[name] = F.sum(F.when(within, gain).otherwise(0.0))
        else:  # Judged
            sums[name] = F.sum(F.when(within & F.col("grade").isNotNull(), 1.0).otherwise(0.0))
    totals = ranked.groupBy("system", "topic").agg(*(total.alias(f"m{i}") for i, total in enumerate(sums.values())))
    totals = totals.join(per_topic, "topic")

    rows = []
    for i, (name, family, cutoff, rel) in enumerate(parsed):
        total = F.col(f"m{i}")
        if family in ("AP", "R"):
            count = F.col(f"relevant_{rel}")
            value = F.when(count > 0, total / count).otherwise(0.0)
        elif family in ("P", "Judged"):
            value = total / float(cutoff)
        elif family == "RR":
            value = F.coalesce(1.0 / total, F.lit(0.0))
        else:
            best = F.col(f"ideal_{cutoff or 0}")
            value = F.when(best > 0, total / best).otherwise(0.0)
        rows.append(totals.select("system", "topic", F.lit(name).alias("measure"), value.cast("double").alias("value")))
    scores = rows[0]
    for more in rows[1:]:
        scores = scores.unionByName(more)
    return scores


def read_trec_run(spark: SparkSession, path: str) -> DataFrame:
    """A TREC run (``qid Q0 docno rank score tag`` per line) or a Parquet run as ``system, topic, docno, score``."""
    from pyspark.sql import functions as F

    if path.endswith(".parquet"):
        frame = spark.read.parquet(path)
        names = {column.lower(): column for column in frame.columns}
        chosen = {}
        for wanted, accepted in _RUN_COLUMNS.items():
            found = [names[name] for name in accepted if name in names]
            if not found:
                raise InputError(
                    f"{path}: no {wanted} column (columns: {', '.join(frame.columns)})",
                    hint=f"name it one of {', '.join(accepted)}",
                )
            chosen[wanted] = F.col(found[0]).alias(wanted)
        return frame.select(*chosen.values())
    fields = F.split(F.trim(F.col("value")), r"\s+")
    lines = spark.read.text(path).where(F.trim(F.col("value")) != "")
    return lines.select(
        fields[5].alias("system"), fields[0].alias("topic"), fields[2].alias("docno"), fields[4].alias("score")
    )


def read_trec_qrels(spark: SparkSession, path: str) -> DataFrame:
    """TREC qrels (``qid iteration docno grade`` per line) as ``topic, docno, grade``."""
    from pyspark.sql import functions as F

    fields = F.split(F.trim(F.col("value")), r"\s+")
    lines = spark.read.text(path).where(F.trim(F.col("value")) != "")
    return lines.select(fields[0].alias("topic"), fields[2].alias("docno"), fields[3].cast("long").alias("grade"))


def write_table(scores: DataFrame, path: str | Path) -> None:
    """Collect the per-topic table to the driver and write it as one Parquet file, atomically (sorted rows)."""
    import pyarrow as arrow
    import pyarrow.parquet as parquet

    from pytest_bvtest.io.textfiles import atomic_write_bytes

    buffer = arrow.BufferOutputStream()
    parquet.write_table(scores.orderBy("system", "measure", "topic").toArrow(), buffer)
    atomic_write_bytes(path, buffer.getvalue().to_pybytes())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_bvtest.spark", description="Per-topic scores of runs computed in Spark, as Parquet."
    )
    parser.add_argument("--qrels", required=True, help="TREC qrels (any path Spark reads)")
    parser.add_argument("-m", "--measure", action="append", required=True, dest="measures", help="e.g. nDCG@10, AP")
    parser.add_argument("-o", "--output", required=True, help="the Parquet file to write (one file)")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="TREC runs or Parquet runs (*.parquet)")
    arguments = parser.parse_args(argv)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("bvtest spark: pyspark is not installed; pip install pyspark pyarrow", file=sys.stderr)
        return 2
    try:
        for measure in arguments.measures:
            _measure(measure)
        spark = SparkSession.builder.appName("bvtest per-topic scores").getOrCreate()
        try:
            runs = [read_trec_run(spark, path) for path in arguments.runs]
            every = runs[0]
            for more in runs[1:]:
                every = every.unionByName(more)
            write_table(
                per_topic_scores(every, read_trec_qrels(spark, arguments.qrels), arguments.measures), arguments.output
            )
        finally:
            spark.stop()
    except BvtestError as error:
        print(f"bvtest spark: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
