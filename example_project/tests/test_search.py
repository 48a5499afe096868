"""The search code: tokeniser, BM25/BM25F, RM3, run writer, committed data.

Nothing here needs ``../shared/data``: the corpus, topics, judgments and runs are committed in this
project.
"""

from __future__ import annotations

import json
import math
import platform
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from scipy import sparse
from search.analysis import IDENTIFIER_ANALYZER, PLAIN_ANALYZER, identifier_parts, plural_stem
from search.bm25 import bm25_idf, bm25_weights, build_index, top_documents
from search.build_corpus import iter_documents
from search.collection import CORPUS_PATH, Document, load_corpus, load_topics
from search.configs import CONFIGS
from search.rm3 import rm3_query
from search.run import Searcher, main, run_lines

PROJECT = Path(__file__).resolve().parents[1]
QRELS_PATH = PROJECT / "eval" / "qrels.txt"
RUNS = PROJECT / "runs"


def doc(docno: str, text: str) -> Document:
    return Document(docno=docno, kind="function", signature="", text=text)


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    return load_corpus()


@pytest.fixture(scope="module")
def topics() -> dict[str, str]:
    return load_topics()


@pytest.fixture(scope="module")
def qrels() -> dict[str, dict[str, int]]:
    judgments: dict[str, dict[str, int]] = {}
    for line in QRELS_PATH.read_text(encoding="utf-8").splitlines():
        qid, _, docno, grade = line.split()
        assert docno not in judgments.get(qid, {}), f"{qid} {docno} judged twice"
        judgments.setdefault(qid, {})[docno] = int(grade)
    return judgments


@pytest.fixture(scope="module")
def indexes(corpus):
    return {analyzer: build_index(corpus, analyzer) for analyzer in (IDENTIFIER_ANALYZER, PLAIN_ANALYZER)}


# --- tokeniser --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("subprocess.check_output", ["subprocess", "check", "output", "checkoutput"]),
        ("ThreadPoolExecutor", ["thread", "pool", "executor", "threadpoolexecutor"]),
        ("os.path.join", ["os", "path", "join"]),
        ("HTTPSConnection", ["http", "connection", "httpsconnection"]),
        ("base64 b64encode", ["base64", "b64", "encode", "b64encode"]),
        ("Remove the directories of a process", ["remove", "directory", "process"]),
    ],
)
def test_identifier_analyzer_splits_identifiers_and_stems_plurals(text, expected):
    assert IDENTIFIER_ANALYZER.tokens(text) == expected


def test_plain_analyzer_keeps_whole_words_and_drops_only_stopwords():
    assert PLAIN_ANALYZER.tokens("Run the check_output of ThreadPoolExecutor") == [
        "run",
        "check_output",
        "threadpoolexecutor",
    ]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("files", "file"),
        ("directories", "directory"),
        ("processes", "process"),
        ("hashes", "hash"),
        ("indexes", "index"),
        ("bytes", "byte"),
        ("process", "process"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("os", "os"),
        ("ids", "ids"),
    ],
)
def test_plural_stem(word, stem):
    assert plural_stem(word) == stem


def test_identifier_parts_handles_acronyms_and_digits():
    assert identifier_parts("getLogger") == ["get", "logger"]
    assert identifier_parts("sha3_256") == ["sha3", "256"]
    assert identifier_parts("XMLParser") == ["xml", "parser"]


# --- BM25 -------------------------------------------------------------------------------------------

# Three documents under the plain analyser (the docno "dN" is one name token per document):
#   d1: apple banana (+ d1)                 length 3
#   d2: apple apple cherry (+ d2)           length 4
#   d3: banana cherry cherry date (+ d3)    length 5       avgdl = 4, N = 3
TINY = [doc("d1", "apple banana"), doc("d2", "apple apple cherry"), doc("d3", "banana cherry cherry date")]


def test_bm25_scores_match_a_hand_computation():
    index = build_index(TINY, PLAIN_ANALYZER)
    weights = bm25_weights(index.weighted_tf(1.0), k1=1.2, b=0.75)
    scores = weights @ index.query_vector("apple cherry")
    idf_df2 = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # apple and cherry occur in two documents

    def saturation(tf: int, length: int) -> float:
        return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 4))

    expected = [
        idf_df2 * saturation(1, 3),
        idf_df2 * (saturation(2, 4) + saturation(1, 4)),
        idf_df2 * saturation(2, 5),
    ]
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    assert scores[1] == pytest.approx(0.470004 * (4.4 / 3.2 + 1.0), abs=1e-6)


def test_bm25_idf_is_lucene_style_and_positive():
    tf = sparse.csr_matrix(np.array([[1, 1], [1, 0], [1, 0], [1, 0]], dtype=float))
    np.testing.assert_allclose(bm25_idf(tf), [math.log(1 + 0.5 / 4.5), math.log(1 + 3.5 / 1.5)])
    assert bm25_idf(tf).min() > 0


def test_bm25_rejects_parameters_out_of_range():
    tf = sparse.csr_matrix(np.ones((2, 2)))
    with pytest.raises(ValueError, match="0 <= b <= 1"):
        bm25_weights(tf, k1=1.2, b=1.5)
    with pytest.raises(ValueError, match="k1 >= 0"):
        bm25_weights(tf, k1=-1.0, b=0.5)


def test_name_weight_equals_repeating_the_name_in_the_body():
    documents = [
        doc("json.dumps", "serialize obj to a json formatted str"),
        doc("pickle.dumps", "return the pickled representation of the object"),
        doc("json.loads", "deserialize s to a python object"),
    ]
    repeated = [doc(d.docno, f"{d.docno} {d.text}") for d in documents]
    boosted = bm25_weights(build_index(documents, IDENTIFIER_ANALYZER).weighted_tf(2.0), 0.9, 0.4)
    baseline_index = build_index(repeated, IDENTIFIER_ANALYZER)
    plain = bm25_weights(baseline_index.weighted_tf(1.0), 0.9, 0.4)
    np.testing.assert_allclose(boosted.toarray(), plain.toarray(), rtol=1e-12)


def test_top_documents_orders_by_score_then_docno_descending_and_drops_non_matches():
    docnos = ("a", "b", "c", "d", "e")
    scores = np.array([1.0, 2.0, 1.0, 0.0, 1.00000004])
    # 1.00000004 rounds to the 6 decimals the run keeps, so it ties with a and c.
    assert top_documents(scores, docnos, depth=10) == [("b", 2.0), ("e", 1.0), ("c", 1.0), ("a", 1.0)]
    assert top_documents(scores, docnos, depth=2) == [("b", 2.0), ("e", 1.0)]


# --- RM3 --------------------------------------------------------------------------------------------


def test_rm3_query_matches_a_hand_computation():
    # Vocabulary [w0, w1, w2]; three documents; the first pass scores 3, 1, 0 (d3 is not feedback).
    tf = sparse.csr_matrix(np.array([[2, 2, 0], [0, 1, 3], [5, 0, 0]], dtype=float))
    query = np.array([1.0, 0.0, 0.0])
    expanded = rm3_query(query, np.array([3.0, 1.0, 0.0]), tf, fb_docs=3, fb_terms=2, original_weight=0.6)
    # P(D|Q) = 3/4, 1/4. RM1 = 3/4 * [1/2, 1/2, 0] + 1/4 * [0, 1/4, 3/4] = [3/8, 7/16, 3/16];
    # the two heaviest terms are w1 and w0, renormalised: [6/13, 7/13, 0].
    np.testing.assert_allclose(expanded, 0.6 * np.array([1, 0, 0]) + 0.4 * np.array([6 / 13, 7 / 13, 0]))
    assert expanded.sum() == pytest.approx(1.0)


def test_rm3_leaves_an_unmatched_query_unexpanded():
    tf = sparse.csr_matrix(np.eye(3))
    expanded = rm3_query(np.array([0.0, 2.0, 0.0]), np.zeros(3), tf, fb_docs=2, fb_terms=5, original_weight=0.5)
    np.testing.assert_array_equal(expanded, [0.0, 1.0, 0.0])


def test_rm3_rejects_an_original_weight_outside_the_unit_interval():
    with pytest.raises(ValueError, match="original_weight"):
        rm3_query(np.ones(2), np.ones(2), sparse.csr_matrix(np.eye(2)), 1, 1, original_weight=1.5)


# --- corpus and topic files -------------------------------------------------------------------------


def test_committed_corpus_is_modest_unique_and_records_its_interpreter(corpus):
    meta = json.loads(CORPUS_PATH.with_suffix(".meta.json").read_text(encoding="utf-8"))
    assert meta["documents"] == len(corpus)
    assert 2000 <= len(corpus) <= 5000
    assert len({d.docno for d in corpus}) == len(corpus)
    assert all(d.text.strip() for d in corpus)
    assert {"json.dumps", "subprocess.run", "shutil.rmtree", "os.path.join"} <= {d.docno for d in corpus}
    assert meta["python_version"].count(".") == 2


def test_extraction_reproduces_the_committed_corpus_on_the_recording_interpreter(tmp_path):
    meta = json.loads(CORPUS_PATH.with_suffix(".meta.json").read_text(encoding="utf-8"))
    if (platform.python_version(), sys.platform) != (meta["python_version"], meta["platform"]):
        pytest.skip(
            f"corpus recorded on Python {meta['python_version']} ({meta['platform']}); docstrings differ elsewhere"
        )
    extracted = list(iter_documents())
    assert [d.docno for d in extracted] == [d.docno for d in load_corpus()]
    assert extracted == load_corpus()


def test_load_corpus_names_the_line_of_a_bad_record(tmp_path):
    path = tmp_path / "docs.jsonl"
    good = json.dumps({"docno": "a.b", "kind": "function", "signature": "", "text": "x"})
    path.write_text(good + "\n" + good + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"docs\.jsonl:2: docno 'a\.b' appears twice"):
        load_corpus(path)
    path.write_text(good + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"docs\.jsonl:2: not a corpus record"):
        load_corpus(path)


def test_load_topics_names_the_line_of_a_bad_topic(tmp_path):
    path = tmp_path / "topics.tsv"
    path.write_text("1\tparse json\n2 no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"topics\.tsv:2: expected `qid<TAB>query`"):
        load_topics(path)
    path.write_text("1\tparse json\n1\tread csv\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"topics\.tsv:2: topic 1 appears twice"):
        load_topics(path)


# --- judgments --------------------------------------------------------------------------------------


def test_judgments_cover_every_topic_with_valid_grades_and_known_documents(qrels, topics, corpus):
    docnos = {d.docno for d in corpus}
    assert len(topics) >= 40
    assert list(qrels) == list(topics)
    for qid, judged in qrels.items():
        assert any(grade > 0 for grade in judged.values()), f"topic {qid} has no relevant document"
        assert set(judged.values()) <= {0, 1, 2, 3}
        assert set(judged) <= docnos
    assert qrels["2"]["subprocess.run"] == 3 and qrels["2"]["subprocess.check_output"] == 3
    assert qrels["5"]["shutil.rmtree"] == 3


def test_every_committed_run_is_judged_to_the_pool_depth(qrels):
    pool_depth = 20
    for path in sorted(RUNS.glob("*.run")):
        for line in path.read_text(encoding="utf-8").splitlines():
            qid, _, docno, rank, _, _ = line.split()
            if int(rank) <= pool_depth:
                assert docno in qrels[qid], f"{path.name}: {qid} {docno} at rank {rank} is unjudged"


# --- runs -------------------------------------------------------------------------------------------


def test_run_lines_are_trec_formatted_and_deterministic(indexes, topics):
    config = CONFIGS["candidate-risky"]
    searcher = Searcher(indexes[config.analyzer], config)
    first = run_lines(searcher, topics, depth=10)
    again = run_lines(Searcher(indexes[config.analyzer], config), topics, depth=10)
    assert first == again
    rows = [line.split() for line in first]
    assert all(len(row) == 6 and row[1] == "Q0" and row[5] == "candidate-risky" for row in rows)
    for qid in topics:
        ranks = [int(row[3]) for row in rows if row[0] == qid]
        assert ranks == list(range(1, len(ranks) + 1)) and len(ranks) == 10


def test_searcher_refuses_an_index_built_with_another_analyzer(indexes):
    with pytest.raises(ValueError, match="needs an index built with"):
        Searcher(indexes[PLAIN_ANALYZER], CONFIGS["production"])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_code_reproduces_the_committed_run(name, indexes, topics):
    config = CONFIGS[name]
    expected = (RUNS / f"{name}.run").read_text(encoding="utf-8").splitlines()
    assert run_lines(Searcher(indexes[config.analyzer], config), topics) == expected


def test_command_line_writes_the_committed_bytes(tmp_path, capsys):
    out = tmp_path / "production.run"
    assert main(["--config", "production", "--out", str(out)]) == 0
    committed = (RUNS / "production.run").read_bytes()
    assert out.read_bytes() == committed
    line_count = len(committed.splitlines())
    assert f"{out}: {line_count} lines (56 topics)" in capsys.readouterr().out


# --- the showcase: what the candidates do against production ----------------------------------------


def _per_topic(path: Path, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docno, _, score, _ = line.split()
        run.setdefault(qid, {})[docno] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map"})
    scores = evaluator.evaluate(run)
    return {qid: scores.get(qid, {"ndcg_cut_10": 0.0, "map": 0.0}) for qid in qrels}


@pytest.fixture(scope="module")
def effectiveness(qrels):
    return {path.stem: _per_topic(path, qrels) for path in RUNS.glob("*.run")}


def _column(scores: dict[str, dict[str, float]], measure: str) -> np.ndarray:
    return np.array([scores[qid][measure] for qid in sorted(scores, key=int)])


def test_committed_system_means(effectiveness):
    means = {name: (_column(s, "ndcg_cut_10").mean(), _column(s, "map").mean()) for name, s in effectiveness.items()}
    assert means["production"] == pytest.approx((0.5597, 0.4866), abs=5e-5)
    assert means["bm25-alt"] == pytest.approx((0.5365, 0.4741), abs=5e-5)
    assert means["past-release"] == pytest.approx((0.5002, 0.4397), abs=5e-5)
    assert means["candidate-pass"] == pytest.approx((0.5734, 0.4886), abs=5e-5)
    assert means["candidate-risky"] == pytest.approx((0.5794, 0.5574), abs=5e-5)


def test_candidate_pass_improves_modestly_without_large_losses(effectiveness):
    production = _column(effectiveness["production"], "ndcg_cut_10")
    delta = _column(effectiveness["candidate-pass"], "ndcg_cut_10") - production
    assert delta.mean() > 0.005
    assert delta.min() > -0.1


def test_candidate_risky_raises_the_mean_but_hurts_several_topics_badly(effectiveness):
    production = effectiveness["production"]
    risky = effectiveness["candidate-risky"]
    delta = _column(risky, "ndcg_cut_10") - _column(production, "ndcg_cut_10")
    assert delta.mean() > 0.015
    hurt = {qid for qid in production if risky[qid]["ndcg_cut_10"] - production[qid]["ndcg_cut_10"] < -0.15}
    assert hurt == {"4", "18", "23", "39", "44", "47", "51"}
    assert _column(risky, "ndcg_cut_10").mean() > _column(effectiveness["candidate-pass"], "ndcg_cut_10").mean()
