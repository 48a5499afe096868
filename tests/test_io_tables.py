"""read_score_table: the four layouts, format detection, errors, and the published TREC matrices."""

from __future__ import annotations

import gzip
import statistics
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path
from scipy.optimize import linear_sum_assignment

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.tables import ScoreTable, read_score_table
from pytest_bvtest.spec.measures import parse_measure

TREC_EVAL_Q = """\
num_ret               \tq1\t1000
map                   \tq1\t0.2500
relstring_10          \tq1\t'0010000000'
num_ret               \tq2\t1000
map                   \tq2\t0.5000
relstring_10          \tq2\t'1100000000'
runid                 \tall\tmyrun
num_q                 \tall\t2
map                   \tall\t0.3750
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


# --- trec_eval -q ------------------------------------------------------------------------------


def test_trec_eval_output_named_by_its_runid(tmp_path):
    table = read_score_table(write(tmp_path / "bm25.eval", TREC_EVAL_Q))
    assert table.format == "trec_eval"
    assert table.scores == {
        ("myrun", "num_ret"): {"q1": 1000.0, "q2": 1000.0},
        ("myrun", "map"): {"q1": 0.25, "q2": 0.5},
    }
    assert (table.systems(), table.measures()) == (["myrun"], ["num_ret", "map"])


def test_trec_eval_system_name_from_argument_then_file_stem(tmp_path):
    without_runid = TREC_EVAL_Q.replace("runid                 \tall\tmyrun\n", "")
    path = write(tmp_path / "bm25.run.eval", without_runid)
    assert read_score_table(path).systems() == ["bm25.run"]
    with gzip.open(tmp_path / "bm25.run.eval.gz", "wt") as handle:
        handle.write(without_runid)
    assert read_score_table(tmp_path / "bm25.run.eval.gz").systems() == ["bm25.run"]
    assert read_score_table(write(tmp_path / "x.eval", TREC_EVAL_Q), system="mine").systems() == ["mine"]


def test_for_measure_matches_names_and_measure_objects(tmp_path):
    table = read_score_table(write(tmp_path / "x.eval", TREC_EVAL_Q))
    assert table.for_measure("map") == {"myrun": {"q1": 0.25, "q2": 0.5}}
    assert table.for_measure(parse_measure("AP")) == {"myrun": {"q1": 0.25, "q2": 0.5}}
    with pytest.raises(InputError, match=r"holds the measures num_ret, map; none of them is nDCG@10"):
        table.for_measure(parse_measure("nDCG@10"))
    with pytest.raises(InputError, match=r"no measure was named"):
        table.for_measure(None)


def test_measure_argument_keeps_one_measure_or_labels_an_unnamed_table(tmp_path):
    table = read_score_table(write(tmp_path / "x.eval", TREC_EVAL_Q), measure="map")
    assert table.scores == {("myrun", "map"): {"q1": 0.25, "q2": 0.5}}
    with pytest.raises(InputError, match=r"no measure 'P_10'; it holds num_ret, map"):
        read_score_table(tmp_path / "x.eval", measure="P_10")
    wide = read_score_table(write(tmp_path / "w.csv", "AP,1,2\nsysA,0.1,0.2\n"), measure="AP")
    assert wide.measures() == ["AP"]
    # A table labelled with one measure is never served as another (a silently wrong number).
    assert wide.for_measure(parse_measure("AP")) == {"sysA": {"1": 0.1, "2": 0.2}}
    with pytest.raises(
        InputError, match=r"w.csv: the table holds the measure AP; none of them is nDCG@10 \(trec_eval: ndcg_cut_10\)"
    ):
        wide.for_measure(parse_measure("nDCG@10"))


# --- long --------------------------------------------------------------------------------------


def test_long_csv_columns_in_header_order(tmp_path):
    path = write(
        tmp_path / "long.csv",
        "measure,value,topic,system\nAP,0.5,t1,a\nAP,0.25,t2,a\nP@10,0.3,t1,a\nAP,0.125,t1,b\n",
    )
    table = read_score_table(path)
    assert table.format == "long"
    assert table.scores == {
        ("a", "AP"): {"t1": 0.5, "t2": 0.25},
        ("a", "P@10"): {"t1": 0.3},
        ("b", "AP"): {"t1": 0.125},
    }


def test_long_tsv_with_pyterrier_names_and_no_measure_column(tmp_path):
    pyterrier = read_score_table(write(tmp_path / "pt.tsv", "name\tqid\tmeasure\tvalue\nBM25\t301\tAP\t0.2\n"))
    assert pyterrier.scores == {("BM25", "AP"): {"301": 0.2}}
    bare = read_score_table(write(tmp_path / "bare.csv", '"system","topic","score"\n"a","1",0.5\n'))
    assert bare.scores == {("a", None): {"1": 0.5}}


def test_long_header_errors(tmp_path):
    with pytest.raises(InputError, match=r":1: unknown column 'extra' in the header"):
        read_score_table(write(tmp_path / "a.csv", "system,topic,value,extra\na,1,0.5,x\n"), format="long")
    with pytest.raises(InputError, match=r":1: the header has no value column"):
        read_score_table(write(tmp_path / "b.csv", "system,topic\na,1\n"), format="long")


# --- wide and wide-topics ----------------------------------------------------------------------


def test_wide_rows_are_systems(tmp_path):
    table = read_score_table(write(tmp_path / "w.csv", "AP,401,402\nsysA,0.5,0.0\nsysB,7e-04,1\n"))
    assert table.format == "wide"
    assert table.for_measure(None) == {"sysA": {"401": 0.5, "402": 0.0}, "sysB": {"401": 0.0007, "402": 1.0}}


def test_wide_topics_with_and_without_a_topic_column(tmp_path):
    with_ids = read_score_table(write(tmp_path / "t.csv", '"topic","s1","s2"\r\n301,0.1,0.2\r\n302,0.3,0.4\r\n'))
    assert with_ids.format == "wide-topics"
    assert with_ids.for_measure(None) == {"s1": {"301": 0.1, "302": 0.3}, "s2": {"301": 0.2, "302": 0.4}}
    numbered = read_score_table(write(tmp_path / "n.csv", "run1,run2\n0.1,0.2\n0.3,0.4\n0.5,0.6\n"))
    assert numbered.format == "wide-topics"
    assert numbered.for_measure(None) == {
        "run1": {"1": 0.1, "2": 0.3, "3": 0.5},
        "run2": {"1": 0.2, "2": 0.4, "3": 0.6},
    }


def test_old_mac_line_endings_and_gzip(tmp_path):
    text = "AP,1,2\rs1,0.1,0.2\rs2,0.3,0.4\r"
    expected = {"s1": {"1": 0.1, "2": 0.2}, "s2": {"1": 0.3, "2": 0.4}}
    assert read_score_table(write(tmp_path / "mac.csv", text)).for_measure(None) == expected
    with gzip.open(tmp_path / "mac.csv.gz", "wt", newline="") as handle:
        handle.write(text)
    assert read_score_table(tmp_path / "mac.csv.gz").for_measure(None) == expected


def test_a_byte_order_mark_is_not_part_of_the_first_cell(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufefftopic,s1\r\n301,0.5\r\n".encode("utf-8"))
    table = read_score_table(path)
    assert (table.format, table.scores) == ("wide-topics", {("s1", None): {"301": 0.5}})


def test_explicit_format_overrides_detection(tmp_path):
    # Auto reads this as wide-topics without a topic column; stated as wide, rows are systems.
    path = write(tmp_path / "x.csv", "label,t1\n0.5,0.25\n")
    assert read_score_table(path).scores == {("label", None): {"1": 0.5}, ("t1", None): {"1": 0.25}}
    assert read_score_table(path, format="wide").scores == {("0.5", None): {"t1": 0.25}}


@pytest.mark.parametrize(
    "text",
    [
        "label,401,402b\n1,0.1,0.2\n2,0.3,0.4\n",  # numbered systems and mixed topic ids, or the reverse
        "system topic value\na 1 0.5\n",  # neither comma- nor tab-separated, and no trec_eval `all` row
    ],
)
def test_ambiguous_layout_asks_for_the_format(tmp_path, text):
    path = write(tmp_path / "amb.csv", text)
    with pytest.raises(InputError) as error:
        read_score_table(path)
    assert f"{path}:1: cannot tell the table's layout" in str(error.value)
    assert "format=" in str(error.value)


def test_a_trec_eval_table_without_all_rows_reads_when_stated(tmp_path):
    path = write(tmp_path / "q.eval", "map q1 0.5\nmap q2 0.25\n")
    with pytest.raises(InputError, match="cannot tell"):
        read_score_table(path)
    assert read_score_table(path, format="trec_eval").scores == {("q", "map"): {"q1": 0.5, "q2": 0.25}}


def test_unknown_format_name(tmp_path):
    with pytest.raises(InputError, match=r"unknown table format 'matrix'"):
        read_score_table(write(tmp_path / "a.csv", "AP,1\ns,0.1\n"), format="matrix")


# --- errors with file and line -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("format", "text", "line", "message"),
    [
        ("wide", "AP,1,2\ns1,0.1,0.2\ns2,0.1,n/a\n", 3, "value 'n/a' is not a number"),
        ("wide", "AP,1,2\ns1,0.1,0.2\ns2,0.1,NaN\n", 3, "value 'NaN' is not a finite number"),
        ("wide", "AP,1,2\ns1,0.1,0.2\ns2,0.1,inf\n", 3, "value 'inf' is not a finite number"),
        ("wide", "AP,1,2\ns1,0.1,0.2\ns2,0.1,\n", 3, "value '' is not a number"),
        ("wide", "AP,1,2\ns1,0.1,0.2\ns2,0.1\n", 3, "the row has 2 cells, the header has 3"),
        ("wide", "AP,1,2\ns1,0.1,0.2\ns1,0.1,0.3\n", 3, "system 's1' has a second row (first on line 2)"),
        ("wide", "AP,1,1\ns1,0.1,0.2\n", 1, "topic '1' names header cells 2 and 3"),
        ("wide-topics", "topic,a,b\n1,0.1,0.2\n1,0.1,0.3\n", 3, "topic '1' has a second row (first on line 2)"),
        ("wide-topics", "a,b,a\n0.1,0.2,0.3\n", 1, "system 'a' names header cells 1 and 3"),
        ("wide-topics", "a,b\n0.1,0.2,0.3\n", 2, "the row has 3 cells, the header has 2"),
        ("long", "system,topic,value\na,1,0.5\na,1,0.5\n", 3, "system 'a', topic '1' appears twice (first on line 2)"),
        ("long", "system,topic,measure,value\na,1,AP,0.5\na,2,AP,x\n", 3, "value 'x' is not a number"),
        ("long", "system,topic,value\na,1\n", 2, "the row has 2 cells, the header has 3"),
        ("trec_eval", "map\tq1\t0.5\nmap\tq1\t0.6\n", 2, "measure 'map' of topic 'q1' appears twice (first on line 1)"),
        ("trec_eval", "map\tq1\t0.5\nmap\tq2\tnan\n", 2, "value 'nan' is not a finite number"),
        ("trec_eval", "map\tq1\t0.5\nmap q2\n", 2, "found 2 fields, expected 3"),
        ("trec_eval", "runid all a\nmap q1 0.5\nrunid all b\n", 3, "a second runid 'b'"),
    ],
)
def test_bad_cell_is_reported_with_file_and_line(tmp_path, format, text, line, message):
    path = write(tmp_path / "bad.txt", text)
    with pytest.raises(InputError) as error:
        read_score_table(path, format=format)
    assert f"{path}:{line}: {message}" in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no scores: the file is empty"),
        ("# nothing yet\n\n", "no scores: the file is empty"),
        ("runid all a\nmap all 0.5\n", "no per-topic rows, only `all` summaries"),
    ],
)
def test_a_table_without_scores_is_an_error(tmp_path, text, message):
    path = write(tmp_path / "empty.eval", text)
    with pytest.raises(InputError) as error:
        read_score_table(path)
    assert str(error.value).startswith(f"{path}: {message}")


def test_system_argument_only_for_trec_eval(tmp_path):
    with pytest.raises(InputError, match="system= names the one system of a trec_eval table"):
        read_score_table(write(tmp_path / "w.csv", "AP,1\ns,0.1\n"), system="s")


# --- summary rows, two names of one measure, commas in TSV names --------------------------------


def test_pandas_margins_are_summaries_not_a_topic(tmp_path):
    # pd.pivot_table(frame, index="system", columns="topic", values="value", margins=True).to_csv(...)
    wide = write(tmp_path / "margins.csv", "system,1,2,All\na,0.5,0.25,0.375\nb,0.25,0.75,0.5\nAll,0.375,0.5,0.4375\n")
    with pytest.raises(InputError) as error:
        read_score_table(wide)
    assert str(error.value) == (
        f"{wide}:1: header cell 4 'All' is a summary of the other topics, not a topic (trec_eval writes `all` "
        "rows, pandas' margins=True an `All` row and column); leave the summaries out of the table "
        "(margins=False; drop trec_eval's `all` rows)"
    )
    # the transpose (index="topic"): the `All` row is the summary
    transposed = write(
        tmp_path / "margins-t.csv", "topic,a,b,All\n1,0.5,0.25,0.375\n2,0.25,0.75,0.5\nAll,0.375,0.5,0.4375\n"
    )
    with pytest.raises(InputError, match=r"margins-t.csv:4: the topic 'All' is a summary of the other topics"):
        read_score_table(transposed)


def test_trec_eval_all_rows_in_a_long_table_are_refused_at_their_line(tmp_path):
    """A real trec_eval -q output turned into a long CSV with its `all` row (trec_eval's own layout skips it)."""
    with gzip.open(shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.eval.gz"), "rt") as handle:
        rows = [line.split() for line in handle if line.split()[0] == "ndcg_cut_10"]
    topics = [topic for _, topic, _ in rows]
    assert (len(topics), topics.count("all")) == (51, 1)
    path = write(
        tmp_path / "bm25.csv",
        "system,topic,measure,value\n" + "".join(f"bm25,{topic},{label},{value}\n" for label, topic, value in rows),
    )
    with pytest.raises(InputError) as error:
        read_score_table(path)
    assert str(error.value).startswith(
        f"{path}:{topics.index('all') + 2}: the topic 'all' is a summary of the other topics, not a topic"
    )
    without = write(
        tmp_path / "bm25-topics.csv", "".join(line for line in path.read_text().splitlines(True) if ",all," not in line)
    )
    ndcg = read_score_table(without).for_measure(parse_measure("nDCG@10"))["bm25"]
    assert (len(ndcg), round(statistics.mean(ndcg.values()), 4)) == (50, 0.2716)


def test_two_names_of_one_measure_are_one_measure_and_must_agree(tmp_path):
    # bm25 written by trec_eval (ndcg_cut_10), rm3 by ir_measures (nDCG@10), bm25 partly under both
    text = (
        "system,topic,measure,value\n"
        "bm25,1,ndcg_cut_10,0.5\nbm25,2,ndcg_cut_10,0.25\n"
        "rm3,1,nDCG@10,0.75\nrm3,2,nDCG@10,0.125\n"
        "bm25,1,nDCG@10,0.5\n"
    )
    table = read_score_table(write(tmp_path / "mixed.csv", text))
    # before: ndcg_cut_10 won, and rm3 (only under nDCG@10) was missing from the gate's systems
    assert table.for_measure(parse_measure("nDCG@10")) == {
        "bm25": {"1": 0.5, "2": 0.25},
        "rm3": {"1": 0.75, "2": 0.125},
    }
    conflicting = write(tmp_path / "conflict.csv", text.replace("bm25,1,nDCG@10,0.5", "bm25,1,nDCG@10,0.6"))
    with pytest.raises(InputError) as error:
        read_score_table(conflicting).for_measure(parse_measure("nDCG@10"))
    assert str(error.value) == (
        f"{conflicting}: system 'bm25', topic '1': ndcg_cut_10 is 0.5 and nDCG@10 is 0.6, two names of one measure "
        "with different values; keep one name of each measure in the table, or values that agree"
    )


@pytest.mark.parametrize(
    ("name", "text", "format"),
    [
        ("wide-topics.tsv", "topic\tbm25,rm3\tql\n1\t0.5\t0.4\n2\t0.3\t0.2\n", "wide-topics"),
        ("long.tsv.gz", "system\ttopic\tvalue\nbm25,rm3\t1\t0.5\nbm25,rm3\t2\t0.3\nql\t1\t0.4\nql\t2\t0.2\n", "long"),
        ("wide.txt", "system\t1\t2\nbm25,rm3\t0.5\t0.3\nql\t0.4\t0.2\n", "wide"),
    ],
)
def test_a_comma_in_a_tsv_system_name_is_text(tmp_path, name, text, format):
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        write(path, text)
    table = read_score_table(path)
    assert table.format == format
    assert table.for_measure(None) == {"bm25,rm3": {"1": 0.5, "2": 0.3}, "ql": {"1": 0.4, "2": 0.2}}


def test_a_csv_keeps_its_commas_whatever_its_header_holds(tmp_path):
    # a tab inside a quoted CSV cell is text, as a comma inside a TSV cell is
    table = read_score_table(write(tmp_path / "w.csv", '"topic","bm25\tv2",ql\n1,0.5,0.4\n'))
    assert table.for_measure(None) == {"bm25\tv2": {"1": 0.5}, "ql": {"1": 0.4}}


# --- real tables -------------------------------------------------------------------------------


def test_dl_hard_trec_eval_tables_match_provenance_and_their_all_rows():
    folder = shared_path("dl_hard", "dataset", "baselines")
    bm25 = read_score_table(folder / "doc" / "bm25.run.eval.gz")
    assert bm25.format == "trec_eval"
    assert bm25.systems() == ["PYSERINI"]
    assert len(bm25.measures()) == 90  # all_trec per-topic measures; relstring is not a number
    ndcg = bm25.for_measure(parse_measure("nDCG@10"))["PYSERINI"]
    assert len(ndcg) == 50
    assert (ndcg["1049519"], ndcg["1056204"], ndcg["1056416"]) == (0.3934, 0.1829, 0.2775)
    assert round(statistics.mean(ndcg.values()), 4) == 0.2716
    paths = sorted(folder.glob("*/*.run.eval.gz"))
    assert len(paths) == 20
    for path in paths:
        table = read_score_table(path)
        (system,) = table.systems()  # the runid row: PYSERINI, capreolus, BERT-Max-P, T5-P, ...
        with gzip.open(path, "rt") as handle:
            summary = {
                fields[0]: float(fields[2])
                for fields in map(str.split, handle)
                if fields[1] == "all" and fields[0] != "runid"
            }
        for label in ("map", "ndcg_cut_10", "recip_rank", "P_10", "recall_1000"):
            values = table.for_measure(label)[system].values()
            # trec_eval's `all` row is the mean of the unrounded per-topic values.
            assert abs(statistics.mean(values) - summary[label]) <= 1e-4, (path.name, label)
        assert sum(table.for_measure("num_ret")[system].values()) == summary["num_ret"]


def test_trec_eval_test_expected_output():
    table = read_score_table(shared_path("trec_eval_test", "out.test.aq"))
    assert table.systems() == ["STANDARD"]
    assert table.for_measure("map")["STANDARD"] == {"301": 0.0324, "302": 0.4175, "303": 0.0858}
    assert "relstring" not in table.measures()


def test_newbestsub_wide_matrices():
    ah99 = read_score_table(shared_path("newbestsub_named_matrices", "AH99.csv"))
    assert ah99.format == "wide"
    matrix = ah99.for_measure(None)
    assert len(matrix) == 129
    assert all(list(topics) == [str(topic) for topic in range(401, 451)] for topics in matrix.values())
    assert matrix["8manexT3D1N0"]["401"] == 0.4711


def test_mq07_old_mac_line_endings():
    path = shared_path("newbestsub_named_matrices", "MQ07-Top26.csv")
    raw = path.read_bytes()
    assert b"\r" in raw and b"\n" not in raw
    matrix = read_score_table(path).for_measure(None)
    assert len(matrix) == 26
    assert {len(topics) for topics in matrix.values()} == {1153}
    assert matrix["LucSpel0"]["10"] == 0.488091


def test_topic_system_matrices_with_and_without_a_topic_column():
    folder = shared_path("trec_topic_system_matrices")
    robust = read_score_table(folder / "sigir2018-simulation" / "robust2004_ap.csv")
    assert robust.format == "wide-topics"
    matrix = robust.for_measure(None)
    assert (len(matrix), len(matrix["sys1"])) == (110, 249)
    assert list(matrix["sys1"])[:3] == ["301", "302", "303"] and "700" in matrix["sys1"]
    adhoc8 = read_score_table(folder / "sigir2019-statistical" / "adhoc8_ap.csv")
    assert adhoc8.format == "wide-topics"
    matrix = adhoc8.for_measure(None)
    assert (len(matrix), list(matrix["run1"])) == (129, [str(topic) for topic in range(1, 51)])


def _as_array(table: ScoreTable, topics: list[str] | None = None) -> np.ndarray:
    matrix = table.for_measure(None)
    return np.array([[values[topic] for topic in (topics or list(values))] for values in matrix.values()])


def _max_matched_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The largest cell difference under the best one-to-one pairing of the rows of a and b."""
    differences = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
    rows, columns = linear_sum_assignment(differences)
    assert len(rows) == len(a) == len(b)
    return float(differences[rows, columns].max())


def test_named_and_anonymous_matrices_hold_the_same_systems():
    """PROVENANCE cross-checks: each named TREC run is one anonymous column (to the 4th decimal)."""
    named = shared_path("newbestsub_named_matrices")
    anonymous = shared_path("trec_topic_system_matrices")
    ah99 = read_score_table(named / "AH99.csv")
    adhoc8 = read_score_table(anonymous / "sigir2019-statistical" / "adhoc8_ap.csv")
    assert _max_matched_difference(_as_array(ah99), _as_array(adhoc8)) <= 1e-4 + 1e-12

    web14 = read_score_table(named / "WEB14GD.csv")
    web2014 = read_score_table(anonymous / "sigir2018-simulation" / "web2014_ndcg20.csv")
    assert _max_matched_difference(_as_array(web14), _as_array(web2014)) <= 1e-4 + 1e-12

    r04 = read_score_table(named / "R04.csv")
    robust = read_score_table(anonymous / "sigir2018-simulation" / "robust2004_ap.csv")
    topics = list(robust.for_measure(None)["sys1"])  # aligned by topic id, both files name them
    assert _max_matched_difference(_as_array(r04, topics), _as_array(robust, topics)) <= 1e-4 + 1e-12
    named_r04, anonymous_robust = r04.for_measure(None), robust.for_measure(None)
    for tag, column in (("apl04rsDw", "sys1"), ("apl04rsTDNfw", "sys2")):
        assert max(abs(named_r04[tag][topic] - anonymous_robust[column][topic]) for topic in topics) <= 1e-4 + 1e-12


@pytest.mark.parametrize("huge", ["1e308", "-1e200", "1.5e101"])
@pytest.mark.parametrize(
    ("name", "text", "line", "column"),
    [
        ("long.csv", "system,topic,value\nnew,1,0.5\nnew,2,{huge}\nprod,1,0.4\nprod,2,0.3\n", 3, "value"),
        ("wide.csv", "topic,new,prod\n1,0.5,0.4\n2,{huge},0.3\n", 3, "column 'new'"),
        ("run.eval", "map\t1\t0.5\nmap\t2\t{huge}\nmap\tall\t0.5\n", 2, "value"),
    ],
)
def test_a_score_too_large_for_the_statistics_is_refused_at_its_cell(
    tmp_path: Path, name: str, text: str, line: int, column: str, huge: str
) -> None:
    """Cells of 1e308 or -1e200 overflowed the statistics' squares: "scores contain NaN or infinite values", naming
    no table, and numpy's overflow warnings after it. The error names the table, the line and the column, and
    nothing is computed from the table (no warning)."""
    import warnings

    path = write(tmp_path / name, text.format(huge=huge))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError) as error:
            read_score_table(path)
    assert str(error.value).startswith(f"{path}:{line}: {column}: '{huge}' is too large a score (at most 1e+100"), str(
        error.value
    )
    assert read_score_table(write(tmp_path / name, text.format(huge="1e100")))  # the largest score still read
