"""ScoreMatrix and MatrixBuilder: the topic universe, zero-filled topics, ignored topics, mixed sources.

MATH.md section 1 PIN: the topics are the qrels topics with at least one positive grade, in qrels
order; a universe topic a run lacks scores 0 (trec_eval ``-c``) and is flagged; run topics outside
the universe are ignored and reported. Real numbers come from trec_eval's own expected outputs
(trec_eval_test), DL-HARD's published ``trec_eval -q`` files and named TREC matrices.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.io.textfiles import numbered_lines
from pytest_bvtest.scoring.matrix import MatrixBuilder, ScoreMatrix
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.spec.model import RunFile, ScoreTableFile
from tests.conftest import shared_path
from tests.test_trec_eval_agreement import PRINTED_PRECISION, _supported_measures, _trec_eval_table

AP, RR, NDCG10 = parse_measure("AP"), parse_measure("RR"), parse_measure("nDCG@10")
AP_REL2 = parse_measure("AP(rel=2)")

# Topic B then A then Z then C: the universe keeps this order. Z is judged, but only 0 and -2 (spam).
QRELS = """\
B 0 b1 1
B 0 b2 0
A 0 a1 2
A 0 a2 0
Z 0 z1 0
Z 0 z2 -2
C 0 c1 1
"""
# A: the relevant a1 at rank 2; B: b1 at rank 1; Z is outside the universe, X is not in the qrels; C is missing.
RUN = """\
A Q0 a2 1 3.0 sys
A Q0 a1 2 2.0 sys
B Q0 b1 1 5.0 sys
Z Q0 z1 1 1.0 sys
X Q0 x1 1 1.0 sys
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def qrels_file(tmp_path: Path) -> Path:
    return write(tmp_path / "qrels.txt", QRELS)


def test_universe_zero_fill_and_ignored_topics(tmp_path, qrels_file):
    run_file = write(tmp_path / "sys.run", RUN)
    matrices = MatrixBuilder.from_qrels_file(qrels_file).build([RR, AP], [RunFile(run_file)])
    for measure, matrix in matrices.items():
        assert matrix.measure == str(measure)
        assert matrix.systems == ("sys",)
        assert matrix.topics == ("B", "A", "C")
        assert matrix.imputed.tolist() == [[False, False, True]]
        assert matrix.missing_topics("sys") == ("C",)
        # Z is judged but has no positive grade: outside the universe, so ignored like X.
        assert matrix.ignored_topics == {"sys": ("Z", "X")}
    # One relevant document per topic: RR and AP are both 1/rank of it.
    assert matrices[RR].scores.tolist() == [[1.0, 0.5, 0.0]]
    assert matrices[AP].scores.tolist() == [[1.0, 0.5, 0.0]]


def test_a_run_covering_the_universe_has_nothing_imputed_or_ignored(tmp_path, qrels_file):
    run_file = write(
        tmp_path / "full.run", "C Q0 c9 1 2.0 full\nC Q0 c1 2 1.0 full\nB Q0 b1 1 1.0 full\nA Q0 a1 1 1.0 full\n"
    )
    matrix = MatrixBuilder.from_qrels_file(qrels_file).build([RR], [RunFile(run_file)])[RR]
    assert matrix.topics == ("B", "A", "C")  # qrels order, not run order
    assert matrix.scores.tolist() == [[1.0, 1.0, 0.5]]
    assert not matrix.imputed.any()
    assert matrix.missing_topics("full") == ()
    assert matrix.ignored_topics == {}


def test_trec_eval_minus_c_means_include_the_zero_filled_topic(tmp_path):
    """out.test.aqc is ``trec_eval -q -c`` on results.trunc, which lacks topic 302.

    Our matrix scores 302 as 0 and flags it; its row means over the three universe topics are
    trec_eval's ``all`` values. The same output read as a per-topic table gives the same row.
    results.trunc ends some lines with free text after the tag (trec_eval ignores it, our reader
    rejects it), so the run is read from a six-column copy.
    """
    folder = shared_path("trec_eval_test")
    run_file = tmp_path / "results.trunc"
    run_file.write_text(
        "".join(" ".join(line.split()[:6]) + "\n" for _, line in numbered_lines(folder / "results.trunc"))
    )
    table = _trec_eval_table(folder / "out.test.aqc")
    # Counts are summed, not averaged, by trec_eval, and num_rel of a missing topic is a qrels count.
    measures = {
        label: measure
        for label, measure in _supported_measures(table, 1).items()
        if not label.startswith("num_") and label != "gm_map"  # gm_map: printed for all topics only
    }
    assert {"map", "P_10", "recip_rank", "ndcg_cut_10", "bpref", "Rprec"} <= set(measures)

    matrices = MatrixBuilder.from_qrels_file(folder / "qrels.test").build(
        list(measures.values()), [RunFile(run_file, name="ours"), ScoreTableFile(folder / "out.test.aqc")]
    )
    for label, measure in measures.items():
        matrix = matrices[measure]
        assert matrix.systems == ("ours", "STANDARD")
        assert matrix.topics == ("301", "302", "303")
        assert matrix.missing_topics("ours") == ("302",)
        assert matrix.missing_topics("STANDARD") == ()
        assert matrix.row("ours")[1] == 0.0
        assert abs(matrix.row("ours").mean() - float(table[label]["all"])) <= PRINTED_PRECISION, label
        assert np.abs(matrix.row("ours") - matrix.row("STANDARD")).max() <= PRINTED_PRECISION, label
    assert abs(matrices[measures["map"]].row("ours").mean() - 0.1016) <= PRINTED_PRECISION


def test_topic_without_a_positive_grade_is_outside_the_universe():
    """qrels.comment.test judges 31 topics; 2024-36302 only with grade 0.

    trec_eval averages map over the 31 topics the run ranks (num_q 31, map 0.2689); our universe has
    the other 30, so the same total over 31 gives trec_eval's mean. The run ranks 301 topics: 270
    not in the qrels and 2024-36302 are ignored and listed, in run order.
    """
    folder = shared_path("trec_eval_test")
    qrels = read_qrels(folder / "qrels.comment.test")
    run = read_run(folder / "results.comment.test.gz")
    matrix = MatrixBuilder(qrels).build([AP], [run])[AP]
    positive = [topic for topic, docs in qrels.judgments.items() if max(docs.values()) > 0]
    assert matrix.topics == tuple(positive) and len(positive) == 30
    assert "2024-36302" in qrels.judgments and "2024-36302" not in matrix.topics
    assert matrix.missing_topics(run.name) == ()
    ignored = matrix.ignored_topics[run.name]
    assert ignored == tuple(topic for topic in run.scores if topic not in positive)
    assert len(ignored) == 271 and "2024-36302" in ignored
    assert abs(matrix.scores[0].sum() / 31 - 0.2689) <= PRINTED_PRECISION


def test_zero_overlap_is_an_input_error_naming_the_run_file(tmp_path, qrels_file):
    elsewhere = write(tmp_path / "elsewhere.run", "X Q0 x1 1 1.0 sys\nY Q0 y1 1 1.0 sys\n")
    with pytest.raises(InputError, match="shares no topic with the qrels") as raised:
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [RunFile(elsewhere)])
    assert raised.value.path == str(elsewhere)
    assert str(raised.value).startswith(f"{elsewhere}: ")
    assert "X, Y" in str(raised.value) and "B, A, C" in str(raised.value)

    # A run whose only qrels topic has no positive grade shares nothing with the universe either.
    only_unjudged = write(tmp_path / "only_z.run", "Z Q0 z1 1 1.0 sys\n")
    with pytest.raises(InputError, match="shares no topic") as raised:
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [RunFile(only_unjudged)])
    assert raised.value.path == str(only_unjudged)


def test_zero_overlap_of_real_files():
    """A DL-HARD run against trec_eval's TREC-6 qrels: different collections, no common topic."""
    run_file = shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.gz")
    qrels_file = shared_path("trec_eval_test", "qrels.test")
    with pytest.raises(InputError, match="shares no topic") as raised:
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [RunFile(run_file)])
    assert raised.value.path == str(run_file)


def test_in_memory_run_without_a_file_is_named_in_the_error(qrels_file):
    run = Run(name="generated", scores={"X": {"x1": 1.0}})
    with pytest.raises(InputError, match="'generated' shares no topic") as raised:
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [run])
    assert raised.value.path == "generated"


def _dl_hard_sources(task: str) -> tuple[list, list[str]]:
    """Every DL-HARD run of ``task``, alternately as a run file and as an in-memory Run, then its
    published ``trec_eval -q`` table renamed '<run> table'; the system names in order."""
    folder = shared_path("dl_hard", "dataset", "baselines", task)
    names = sorted(path.name.removesuffix(".run.gz") for path in folder.glob("*.run.gz"))
    runs: list = []
    tables: list = []
    for index, name in enumerate(names):
        path = folder / f"{name}.run.gz"
        runs.append(RunFile(path, name=name) if index % 2 == 0 else read_run(path, name=name))
        table = folder / f"{name}.run.eval.gz"
        # A published table is named by its runid, which several runs share.
        (runid,) = read_score_table(table).systems()
        tables.append(ScoreTableFile(table, rename={runid: f"{name} table"}))
    return runs + tables, names + [f"{name} table" for name in names]


# (task, run, published mean AP(rel=2), published mean nDCG@10): dl_hard/PROVENANCE.md.
DL_HARD_MEANS = [
    ("doc", "bm25", 0.1741, 0.2716),
    ("doc", "bm25+rm3", 0.1740, 0.2793),
    ("doc", "bm25+electra-mp", 0.2159, 0.3850),
    ("passage", "bm25", 0.1731, 0.3037),
    ("passage", "bm25+rm3+t5(zs)", 0.2385, 0.3959),
]


@pytest.mark.parametrize("task", ["doc", "passage"])
def test_runs_in_memory_runs_and_trec_eval_tables_give_the_same_rows(task):
    """DL-HARD's tables are ``trec_eval -l 2 -c -q`` outputs of its runs: map is AP(rel=2)."""
    sources, names = _dl_hard_sources(task)
    qrels_file = shared_path("dl_hard", "dataset", f"dl_hard-{task}.qrels")
    matrices = MatrixBuilder.from_qrels_file(qrels_file).build([AP_REL2, NDCG10], sources)
    universe = tuple(read_qrels(qrels_file).evaluated_topics())
    assert len(universe) == 50
    for measure, matrix in matrices.items():
        assert matrix.systems == tuple(names)
        assert matrix.topics == universe
        assert not matrix.imputed.any() and matrix.ignored_topics == {}
        half = len(names) // 2
        assert np.abs(matrix.scores[:half] - matrix.scores[half:]).max() <= PRINTED_PRECISION, measure
    for expected_task, run, mean_ap, mean_ndcg in DL_HARD_MEANS:
        if expected_task == task:
            assert abs(matrices[AP_REL2].row(run).mean() - mean_ap) <= PRINTED_PRECISION
            assert abs(matrices[NDCG10].row(run).mean() - mean_ndcg) <= PRINTED_PRECISION


def test_one_matrix_per_measure_with_the_same_systems_and_topics_in_the_given_order(tmp_path, qrels_file):
    first = write(tmp_path / "first.run", "B Q0 b2 1 2.0 first\nB Q0 b1 2 1.0 first\nA Q0 a1 1 1.0 first\n")
    second = write(tmp_path / "second.run", RUN.replace(" sys", " second"))
    builder = MatrixBuilder.from_qrels_file(qrels_file)
    measures = [RR, AP, parse_measure("P@1")]
    forward = builder.build(measures, [RunFile(first), RunFile(second)])
    backward = builder.build(measures, [RunFile(second), RunFile(first)])
    assert list(forward) == measures
    for measure in measures:
        assert forward[measure].systems == ("first", "second")
        assert backward[measure].systems == ("second", "first")
        assert forward[measure].topics == backward[measure].topics == ("B", "A", "C")
        assert np.array_equal(forward[measure].scores, backward[measure].scores[::-1])
        assert np.array_equal(forward[measure].imputed, backward[measure].imputed[::-1])
    assert forward[RR].scores.tolist() == [[0.5, 1.0, 0.0], [1.0, 0.5, 0.0]]
    assert forward[parse_measure("P@1")].scores.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert forward[RR].missing_topics("first") == ("C",) and forward[RR].ignored_topics == {"second": ("Z", "X")}


def test_duplicate_system_names_are_an_input_error():
    """DL-HARD's bm25 and bm25+rm3 runs both carry the tag PYSERINI."""
    folder = shared_path("dl_hard", "dataset")
    builder = MatrixBuilder.from_qrels_file(folder / "dl_hard-doc.qrels")
    bm25, rm3 = (folder / "baselines" / "doc" / f"{name}.run.gz" for name in ("bm25", "bm25+rm3"))
    with pytest.raises(InputError, match="two systems are named 'PYSERINI'; give each"):
        builder.build([NDCG10], [RunFile(bm25), RunFile(rm3)])
    named = builder.build([NDCG10], [RunFile(bm25), RunFile(rm3, name="rm3")])[NDCG10]
    assert named.systems == ("PYSERINI", "rm3")


def test_duplicate_name_across_a_run_and_a_table(tmp_path, qrels_file):
    run_file = write(tmp_path / "sys.run", RUN)
    table = write(tmp_path / "table.csv", "system,B,A,C\nsys,0.1,0.2,0.3\n")
    with pytest.raises(InputError, match="two systems are named 'sys'"):
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [RunFile(run_file), ScoreTableFile(table)])
    renamed = MatrixBuilder.from_qrels_file(qrels_file).build(
        [AP], [RunFile(run_file), ScoreTableFile(table, rename={"sys": "published"})]
    )[AP]
    assert renamed.systems == ("sys", "published")
    assert renamed.row("published").tolist() == [0.1, 0.2, 0.3]
    assert renamed.missing_topics("published") == ()


def test_table_that_does_not_cover_the_universe(tmp_path, qrels_file):
    table = write(tmp_path / "table.csv", "system,B,A,Q\nlacking,0.1,0.2,0.3\n")
    with pytest.raises(InputError) as raised:
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [ScoreTableFile(table)])
    message = str(raised.value)
    assert message.startswith(f"{table}: system 'lacking' lacks topics C and has topics not evaluated elsewhere Q; ")
    assert "same topic set" in message


def test_tables_with_different_topic_sets_without_qrels():
    """TREC-8 (topics 401-450) and Robust04 (301-450, 601-700) matrices cannot share a universe."""
    folder = shared_path("newbestsub_named_matrices")
    ah99, r04 = ScoreTableFile(folder / "AH99.csv"), ScoreTableFile(folder / "R04.csv")
    builder = MatrixBuilder(None)
    with pytest.raises(InputError) as raised:
        builder.build([AP], [ah99, r04])
    message = str(raised.value)
    assert message.startswith(f"{folder / 'R04.csv'}: system ")
    assert "has topics not evaluated elsewhere 301, 302, 303, 304, 305, 306, 307, 308, 309, 310 and 189 more" in message
    assert "lacks" not in message
    with pytest.raises(InputError) as raised:
        builder.build([AP], [r04, ah99])
    message = str(raised.value)
    assert (
        message.startswith(f"{folder / 'AH99.csv'}: system '1' lacks topics 301, 302, ") and "and 189 more" in message
    )


def test_table_only_matrix_without_qrels():
    """AH99.csv: 129 named TREC-8 runs x topics 401-450, AP; compared with a plain numpy parse."""
    path = shared_path("newbestsub_named_matrices", "AH99.csv")
    matrix = MatrixBuilder(None).build([AP], [ScoreTableFile(path)])[AP]
    lines = path.read_text().splitlines()
    expected = np.array([[float(cell) for cell in line.split(",")[1:]] for line in lines[1:]])
    assert matrix.scores.shape == (129, 50) == expected.shape
    assert matrix.topics == tuple(str(topic) for topic in range(401, 451))
    assert matrix.systems == tuple(line.split(",")[0] for line in lines[1:])
    assert np.array_equal(matrix.scores, expected)
    assert matrix.row("8manexT3D1N0")[0] == 0.4711
    assert not matrix.imputed.any() and matrix.ignored_topics == {}


def test_two_tables_are_aligned_by_topic_id():
    """Robust04 named (R04.csv) and anonymous (robust2004_ap.csv) matrices: sys1 is apl04rsDw,
    sys2 apl04rsTDNfw, sys3 apl04rsTDNw5 (PROVENANCE cross-check, to the 4th decimal)."""
    named = ScoreTableFile(shared_path("newbestsub_named_matrices", "R04.csv"))
    anonymous = ScoreTableFile(
        shared_path("trec_topic_system_matrices", "sigir2018-simulation", "robust2004_ap.csv"),
        systems=("sys1", "sys2", "sys3"),
    )
    matrix = MatrixBuilder(None).build([AP], [named, anonymous])[AP]
    assert matrix.scores.shape == (113, 249)
    assert matrix.systems[-3:] == ("sys1", "sys2", "sys3")
    for anonymous_name, name in [("sys1", "apl04rsDw"), ("sys2", "apl04rsTDNfw"), ("sys3", "apl04rsTDNw5")]:
        assert np.abs(matrix.row(anonymous_name) - matrix.row(name)).max() <= 1e-4 + 1e-12


def test_unknown_system_of_a_table_and_of_a_matrix(tmp_path, qrels_file):
    table = write(tmp_path / "table.csv", "system,B,A,C\nsys,0.1,0.2,0.3\n")
    with pytest.raises(InputError, match="system 'other' is not in this table; the table has sys") as raised:
        MatrixBuilder.from_qrels_file(qrels_file).build([AP], [ScoreTableFile(table, systems=("other",))])
    assert raised.value.path == str(table)
    matrix = MatrixBuilder.from_qrels_file(qrels_file).build([AP], [ScoreTableFile(table)])[AP]
    with pytest.raises(InputError, match="unknown system 'other'; systems are: sys"):
        matrix.row("other")


def test_runs_need_qrels(tmp_path):
    run_file = write(tmp_path / "sys.run", RUN)
    with pytest.raises(InputError, match="needs relevance judgments; name a qrels file"):
        MatrixBuilder(None).build([AP], [RunFile(run_file)])
    with pytest.raises(InputError, match="no systems to evaluate"):
        MatrixBuilder(None).build([AP], [])


def test_matrix_shape_is_checked():
    with pytest.raises(ValueError, match="does not match"):
        ScoreMatrix("AP", ("a",), ("1", "2"), np.zeros((1, 3)), np.zeros((1, 3), dtype=bool))


# --- worker processes die with their parent (issue 22) ---------------------------------------------------------------

PARENT_OF_A_POOL = """
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
from pytest_bvtest.scoring.matrix import _exit_with_parent

pool = ProcessPoolExecutor(max_workers=2, initializer=_exit_with_parent)  # as MatrixBuilder's -j pool
pids = {pool.submit(os.getpid).result() for _ in range(20)}
print(" ".join(map(str, sorted(pids))), flush=True)
time.sleep(600)
"""


def test_worker_processes_exit_when_their_parent_is_killed() -> None:
    """`bvtest check -j N` killed with SIGKILL (a cancelled CI job) left its workers waiting on the pool for good,
    each holding its memory."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT_OF_A_POOL], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in parent.stdout.readline().split()]  # type: ignore[union-attr]
        assert workers and all(Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.05)
    survivors = [pid for pid in workers if alive(pid)]
    for pid in survivors:  # never left behind by the test itself
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not yet reaped by init, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_run_topic_ids_that_match_the_qrels_only_after_removing_leading_zeros_are_an_error(tmp_path: Path) -> None:
    """CACM's qrels write topic '01' where a run writes '1': trec_eval compares ids as text, so every system
    missed topics 01-09 (9 of 52, scored 0 for all) and the gate stayed green on the rest (issue 19)."""
    cacm = shared_path("classic_collections", "cacm", "qrels.text")
    judged = [line.split() for line in cacm.read_text().splitlines() if line.strip()]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{query} 0 {document} 1\n" for query, document, *_ in judged))
    run = tmp_path / "run.txt"  # the run drops the leading zero, as a search engine's query ids do
    run.write_text("".join(f"{int(query)} Q0 {document} 1 1.0 r\n" for query, document, *_ in judged))
    builder = MatrixBuilder.from_qrels_file(qrels)
    with pytest.raises(InputError) as raised:
        builder.build([parse_measure("AP")], [RunFile(run)])
    message = str(raised.value)
    assert message.startswith(f"{run}: 9 topic ids of the run match the qrels' only after removing leading zeros")
    assert (
        "'1' is '01', '2' is '02'" in message and "write the run's topic ids exactly as the qrels write them" in message
    )
    fixed = tmp_path / "fixed.txt"  # the same ids as the qrels: no error
    fixed.write_text("".join(f"{query} Q0 {document} 1 1.0 r\n" for query, document, *_ in judged))
    assert builder.build([parse_measure("AP")], [RunFile(fixed)])[parse_measure("AP")].scores.shape == (1, 52)
