"""Our readers + evaluate_run reproduce trec_eval's own expected outputs and DL-HARD's published -q files.

trec_eval_test/ holds trec_eval 10.0's regression data (commands in its PROVENANCE.md); dl_hard/ holds
per-topic ``trec_eval -l 2 -o -c -M1000 -q -m all_trec`` outputs for 20 real runs. Values are compared
at the printed precision (4 decimals; counts exactly).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.io.textfiles import numbered_lines
from pytest_bvtest.scoring.measures import evaluate_run
from pytest_bvtest.spec.measures import Measure, parse_measure
from tests.conftest import shared_files, shared_path
from tests.oracles import trec_eval_measure

PRINTED_PRECISION = 0.5e-4 + 1e-12

# trec_eval labels in these outputs that no supported measure names: aggregates (num_q, gm_bpref), text
# (runid, relstring), and measures ir_measures has no name for (rbp, with trec_eval's p = 0.9 and graded gains, is
# compared in tests/test_more_measures.py).
UNSUPPORTED_LABEL = re.compile(
    r"runid|num_q|gm_bpref|relstring(_[0-9]+)?|11pt_avg.*|Rprec_mult_.*|utility.*|binG|G"
    r"|ndcg_rel|Rndcg|relative_P_.*|num_nonrel_judged_ret|rbp|rbp_resid|unj_.*|ndcg_1=3,2=9,4=4\.5"
)


def _trec_eval_table(path: Path) -> dict[str, dict[str, str]]:
    """A trec_eval ``-q`` output as ``label -> topic -> printed value``."""
    table: dict[str, dict[str, str]] = {}
    for _, line in numbered_lines(path):
        label, topic, value = (field.strip() for field in line.split("\t"))
        table.setdefault(label, {})[topic] = value
    return table


def _supported_measures(table: dict[str, dict[str, str]], relevance_level: int) -> dict[str, Measure]:
    """``label -> measure`` for every label we support; the others must be the known unsupported ones."""
    measures: dict[str, Measure] = {}
    for label in table:
        try:
            measures[label] = trec_eval_measure(label, relevance_level)
        except InputError:
            assert UNSUPPORTED_LABEL.fullmatch(label), f"{label} is not supported"
    return measures


def _assert_close(value: float, printed: str, where: str) -> None:
    if "." in printed:
        assert abs(value - float(printed)) <= PRINTED_PRECISION, f"{where}: {value} vs {printed}"
    else:
        assert value == int(printed), f"{where}: {value} vs {printed}"


def _assert_per_topic_agreement(
    table: dict[str, dict[str, str]],
    qrels: Qrels,
    run: Run,
    relevance_level: int = 1,
    zero_filled: frozenset[str] = frozenset(),
    left_out: str = "gm_map",
) -> dict[str, dict[str, float]]:
    """Every supported label's per-topic rows equal our values on the same topics.

    ``zero_filled`` topics are those trec_eval ``-c`` reports for a topic the run misses: we leave
    them to the score matrix, and trec_eval must print 0 for them (num_rel, a property of the qrels,
    aside). Labels matching ``left_out`` are not compared: gm_map, printed for all topics only (its per-topic
    value, log AP, is compared with pytrec_eval's).
    """
    measures = {
        label: measure
        for label, measure in _supported_measures(table, relevance_level).items()
        if not re.fullmatch(left_out, label)
    }
    values = evaluate_run(qrels, run, list(measures.values()))
    for label, measure in measures.items():
        expected = {topic: printed for topic, printed in table[label].items() if topic != "all"}
        assert set(values[measure]) == set(expected) - zero_filled, label
        for topic, printed in expected.items():
            if topic in zero_filled:
                assert label == "num_rel" or float(printed) == 0, f"{label} topic {topic}: {printed}"
            else:
                _assert_close(values[measure][topic], printed, f"{label} topic {topic}")
    return {label: values[measure] for label, measure in measures.items()}


def _summary(per_topic: dict[str, float], label: str, topic_count: int, measure: Measure | None = None) -> float:
    """trec_eval's ``all`` row: counts are summed, everything else averaged over ``topic_count`` topics, the topics
    without a value at the measure's value for a missing topic (``gm_map``: exp of the mean of log AP)."""
    if label.startswith("num_"):
        return sum(per_topic.values())
    if measure is None:
        return sum(per_topic.values()) / topic_count
    padded = [*per_topic.values(), *[measure.missing_value] * (topic_count - len(per_topic))]
    return measure.aggregate(padded)


@pytest.mark.parametrize("qrels_name", ["qrels.test", "qrels.test.with-comments"])
def test_default_summary(qrels_name):
    folder = shared_path("trec_eval_test")
    table = _trec_eval_table(folder / "out.test")
    qrels, run = read_qrels(folder / qrels_name), read_run(folder / "results.test")
    measures = _supported_measures(table, 1)
    assert set(measures) == {"num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"} | {
        f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    } | {f"iprec_at_recall_{level / 10:.2f}" for level in range(11)}
    values = evaluate_run(qrels, run, list(measures.values()))
    topic_count = int(table["num_q"]["all"])
    for label, measure in measures.items():
        assert len(values[measure]) == topic_count
        _assert_close(_summary(values[measure], label, topic_count, measure), table[label]["all"], label)


def test_all_trec_per_topic():
    folder = shared_path("trec_eval_test")
    table = _trec_eval_table(folder / "out.test.aq")
    compared = _assert_per_topic_agreement(table, read_qrels(folder / "qrels.test"), read_run(folder / "results.test"))
    # The measures users reach for most are among those compared.
    assert {"map", "P_10", "recip_rank", "ndcg", "ndcg_cut_10", "recall_1000", "Rprec", "bpref", "infAP"} <= set(
        compared
    )
    # 9 cutoffs each of P, recall, map_cut, ndcg_cut; map, ndcg, Rprec, bpref, recip_rank, infAP, three
    # counts, five set measures, three success cutoffs and 11 recall levels of iprec_at_recall.
    assert len(compared) == 4 * 9 + 17 + 11


def test_all_trec_per_topic_on_a_truncated_run(tmp_path):
    """``-c``: the run misses topic 302, which trec_eval scores 0 and averages over, as our matrix does.

    results.trunc ends some lines with free text after the tag, which trec_eval ignores and our run
    reader rejects as a malformed line; the run is read from a copy without it.
    """
    folder = shared_path("trec_eval_test")
    table = _trec_eval_table(folder / "out.test.aqc")
    six_columns = tmp_path / "results.trunc"
    six_columns.write_text(
        "".join(" ".join(line.split()[:6]) + "\n" for _, line in numbered_lines(folder / "results.trunc"))
    )
    qrels, run = read_qrels(folder / "qrels.test"), read_run(six_columns)
    missing = frozenset(topic for topic in qrels.evaluated_topics() if topic not in run.scores)
    assert missing == {"302"}
    compared = _assert_per_topic_agreement(table, qrels, run, zero_filled=missing)
    universe_size = len(qrels.evaluated_topics())
    for label, per_topic in compared.items():
        if not label.startswith("num_"):
            _assert_close(_summary(per_topic, label, universe_size), table[label]["all"], label)


def test_all_trec_per_topic_at_relevance_level_2():
    folder = shared_path("trec_eval_test")
    table = _trec_eval_table(folder / "out.test.aql")
    compared = _assert_per_topic_agreement(
        table, read_qrels(folder / "qrels.rel_level"), read_run(folder / "results.test"), relevance_level=2
    )
    assert "map" in compared and "num_rel" in compared


def test_measure_parameters_per_topic():
    folder = shared_path("trec_eval_test")
    table = _trec_eval_table(folder / "out.test.meas_params")
    compared = _assert_per_topic_agreement(table, read_qrels(folder / "qrels.test"), read_run(folder / "results.test"))
    # trec_eval truncates the cutoff 23.4 to 23.
    assert set(compared) == {
        "P_3", "P_5", "P_7", "recall_20", "recall_2000", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23",
        "success_2", "success_5", "success_20", "iprec_at_recall_0.10", "iprec_at_recall_0.20",
        "iprec_at_recall_0.25", "iprec_at_recall_0.50", "iprec_at_recall_0.75",
    }  # fmt: skip


def test_comment_lines_and_hash_in_docnos():
    """MS MARCO v2.1 segment ids contain '#'; only whole-line comments are comments.

    trec_eval averages over the 31 qrels topics the run ranks; one of them has no positive grade, so
    it is outside our topic universe (MATH.md section 1 PIN) and scores 0 (or counts its retrieved
    documents) in trec_eval's summary.
    """
    folder = shared_path("trec_eval_test")
    table = _trec_eval_table(folder / "out.comment.test")
    qrels, run = read_qrels(folder / "qrels.comment.test"), read_run(folder / "results.comment.test.gz")
    trec_eval_topics = [topic for topic in qrels.judgments if topic in run.scores]
    outside_universe = [topic for topic in trec_eval_topics if topic not in qrels.evaluated_topics()]
    assert len(trec_eval_topics) == int(table["num_q"]["all"]) == 31
    assert len(outside_universe) == 1

    measures = _supported_measures(table, 1)
    values = evaluate_run(qrels, run, list(measures.values()))
    for label, measure in measures.items():
        assert len(values[measure]) == 30
        summary = _summary(values[measure], label, len(trec_eval_topics), measure)
        if label == "num_ret":
            summary += len(run.scores[outside_universe[0]])
        _assert_close(summary, table[label]["all"], label)


DL_HARD_RUNS = [
    (task, name.rsplit("/", 1)[-1].removesuffix(".run.gz"))
    for task in ("doc", "passage")
    for name in shared_files("dl_hard", f"dataset/baselines/{task}/*.run.gz")
]


def test_dl_hard_columns_are_the_measures_we_name():
    """``trec_eval -l 2``: binary measures count grade >= 2 as relevant, nDCG stays graded."""
    assert trec_eval_measure("map", relevance_level=2) == parse_measure("AP(rel=2)")
    assert trec_eval_measure("recip_rank", relevance_level=2) == parse_measure("RR(rel=2)")
    assert trec_eval_measure("ndcg_cut_10", relevance_level=2) == parse_measure("nDCG@10")


@pytest.mark.parametrize(
    ("task", "run_name"), DL_HARD_RUNS or [pytest.param("doc", "bm25", marks=pytest.mark.skip("no DL-HARD data"))]
)
def test_dl_hard_published_per_topic_values(task, run_name):
    folder = shared_path("dl_hard", "dataset")
    baselines = folder / "baselines" / task
    table = _trec_eval_table(baselines / f"{run_name}.run.eval.gz")
    qrels, run = read_qrels(folder / f"dl_hard-{task}.qrels"), read_run(baselines / f"{run_name}.run.gz")
    # -M1000 cuts rankings at 1000 documents; these runs never go deeper, so it changes nothing.
    assert max(len(ranking) for ranking in run.scores.values()) <= 1000

    # the published outputs come from trec_eval 9, which cut iprec_at_recall's recall levels as (long) (r R + 0.9)
    # where trec_eval 10 rounds r R (tests/test_more_measures.py compares both where they cut alike)
    compared = _assert_per_topic_agreement(table, qrels, run, relevance_level=2, left_out="gm_map|iprec_at_recall_.*")

    # -c averages over all 50 qrels topics; every one is in the run and in our universe.
    topic_count = int(table["num_q"]["all"])
    assert topic_count == len(qrels.evaluated_topics()) == 50
    for label in ("map", "ndcg_cut_10", "recip_rank"):
        _assert_close(_summary(compared[label], label, topic_count), table[label]["all"], label)
