"""Runs grouped by topic read and evaluated a chunk of topics at a time (bounded memory), and the fall-backs.

Memory itself is measured by benchmarks/bench_evaluate.py; here the chunks must give exactly the columns and the
per-topic values of the whole file, and a run that cannot be read in chunks must be read whole, with its errors.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path
from test_io_runbytes import anserini_lines

import pytest_bvtest.io.runbytes as runbytes
import pytest_bvtest.scoring.matrix as matrix_module
from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run_column_chunks, read_run_columns
from pytest_bvtest.io.textfiles import file_digest
from pytest_bvtest.scoring import columnar
from pytest_bvtest.scoring.lifts import _Ranker
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.spec.model import RunFile
from pytest_bvtest.stats.plausible import FAR_RANKS

MEASURES = [parse_measure(name) for name in ("AP", "nDCG@10", "RR@10", "P@5", "R@100", "ERR@20", "Rprec")]


def joined(chunks: list) -> tuple[tuple[str, ...], list[int], list[str], np.ndarray]:
    topics = tuple(topic for chunk in chunks for topic in chunk.topics)
    lengths = [length for chunk in chunks for length in chunk.lengths.tolist()]
    docnos = [docno for chunk in chunks for docno in chunk.docno_strings(0, int(chunk.lengths.sum()))]
    return topics, lengths, docnos, np.concatenate([chunk.scores for chunk in chunks])


@pytest.mark.parametrize(
    "parts",
    [
        ("dl_hard", "dataset", "baselines", "doc", "bm25+rm3.run.gz"),
        ("dl19_passage_qppeval_runs", "runs", "run-msmarco-passage-bm25-monot5-0.8-0.5.txt.gz"),
    ],
)
def test_chunks_of_a_real_run_join_into_the_whole_files_columns(parts: tuple[str, ...], monkeypatch) -> None:
    path = shared_path(*parts)
    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 1 << 14)  # many blocks, so chunks end inside blocks
    whole = read_run_columns(path)
    chunks = list(read_run_column_chunks(path, lines=3000))
    assert len(chunks) > 5
    # each chunk: whole topics, at least 3000 lines but the last, at most 3000 plus one topic and one block
    assert all(chunk.lengths.sum() >= 3000 for chunk in chunks[:-1])
    assert all(chunk.lengths.sum() <= 3000 + chunk.lengths.max() + (1 << 14) // 20 for chunk in chunks)
    topics, lengths, docnos, scores = joined(chunks)
    assert topics == whole.topics and lengths == whole.lengths.tolist()
    assert docnos == whole.docno_strings(0, len(docnos))
    assert scores.view(np.int64).tolist() == whole.scores.view(np.int64).tolist()
    assert {chunk.name for chunk in chunks} == {whole.name}


def test_a_run_evaluated_in_chunks_gives_the_values_of_the_whole_file(monkeypatch) -> None:
    folder = shared_path("dl_hard", "dataset")
    qrels = read_qrels(folder / "dl_hard-doc.qrels")
    source = RunFile(folder / "baselines" / "doc" / "bm25+rm3.run.gz")
    whole = matrix_module._per_topic_from_run(read_run_columns(source.path), qrels, MEASURES)
    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 1 << 14)
    chunked, digest, documents = matrix_module._per_topic_from_run_chunks(
        source, qrels, MEASURES, digest=True, lines=5000, documents_depth=20, near_depth=FAR_RANKS * 20
    )
    assert digest == file_digest(source.path)  # the bytes read, chunk after chunk
    for measure in MEASURES:
        assert chunked[measure].per_topic == whole[measure].per_topic  # the same floats, in the qrels' order
        assert list(chunked[measure].per_topic) == list(whole[measure].per_topic)
        assert chunked[measure].ignored_topics == whole[measure].ignored_topics
        assert chunked[measure].run_name == whole[measure].run_name
    # the ranked documents the corners read, one per chunk (through JSON, as cached), are the whole run's
    assert len(documents) > 3
    run = read_run_columns(source.path)
    topics = [qid for qid in qrels.evaluated_topics() if qid in set(run.topics)]
    judgments = {qid: qrels.judgments[qid] for qid in topics}
    expected = columnar.ranked_gains_from_columns(judgments, run, topics, 20)
    ranked = columnar.ranked_from_payloads(json.loads(json.dumps(documents)), judgments, topics)
    for field in dataclasses.fields(columnar.RankedGains):
        mine, theirs = getattr(ranked, field.name), getattr(expected, field.name)
        assert type(mine) is type(theirs) and np.array_equal(mine, theirs), field.name
        assert getattr(mine, "dtype", None) == getattr(theirs, "dtype", None), field.name
    assert len(ranked.unjudged_docno) > 400 and ranked.unjudged_depth == 20
    # the ranks kept beside them for the rank support (FAR_RANKS x 20 deep, one per chunk) are the run's own, read
    # and ranked again (the path they replace), for every unjudged document of the first 400 ranks (0 below 200)
    near = [chunk["near"] for chunk in json.loads(json.dumps(documents))]
    deeper = columnar.ranked_gains_from_columns(judgments, run, topics, 400)
    pairs = [(topics[topic], docno) for topic, docno in zip(deeper.unjudged_topic.tolist(), deeper.unjudged_docno)]
    pairs += [(topics[0], "not-retrieved"), ("no-such-topic", pairs[0][1])]

    def unread() -> None:
        raise AssertionError("the run was read again")

    kept = _Ranker(unread, lambda: near).within(pairs, FAR_RANKS * 20)
    assert kept.tolist() == _Ranker(lambda: run).within(pairs, FAR_RANKS * 20).tolist()
    assert 0 < np.count_nonzero(kept) < len(pairs) - 2 and kept.max() <= FAR_RANKS * 20  # some below 200
    assert [chunk["depth"] for chunk in near] == [FAR_RANKS * 20] * len(near)


def test_a_run_not_grouped_by_topic_is_read_whole_with_the_same_values(tmp_path: Path, monkeypatch) -> None:
    lines = anserini_lines(topics=6, depth=50, seed=3)
    shuffled = lines[:100] + lines[200:-1] + lines[100:200]  # topics 1000, 1007, then 1014 ... 1035, then 1014, 1021
    shuffled.insert(10, lines[-1])  # and the last line of topic 1035 among the first topic's
    run = tmp_path / "unsorted.run"
    run.write_text("\n".join(shuffled) + "\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"{line.split()[0]} 0 {line.split()[2]} 1\n" for line in lines[::7]))
    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 1 << 10)  # about 25 lines: the first chunk ends in topic 1007
    with pytest.raises(runbytes.NotInChunks):
        list(read_run_column_chunks(run, lines=60))
    monkeypatch.setattr(
        matrix_module,
        "read_run_column_chunks",
        lambda path, **options: read_run_column_chunks(path, lines=60, hasher=options.get("hasher")),
    )
    values, digest, _ = matrix_module._per_topic_from_run_file(RunFile(run), read_qrels(qrels), MEASURES, True)
    assert digest == file_digest(run)  # from the whole file's reading, not the chunks abandoned
    expected = matrix_module._per_topic_from_run(read_run_columns(run), read_qrels(qrels), MEASURES)
    assert {m: v.per_topic for m, v in values.items()} == {m: v.per_topic for m, v in expected.items()}
    assert len(values[MEASURES[0]].per_topic) == 6


def test_an_error_after_the_first_chunks_names_its_line(tmp_path: Path, monkeypatch) -> None:
    lines = anserini_lines(topics=5, depth=40, seed=4)
    lines[150] = lines[150].replace(" Q0 ", " Q0  ")  # two blanks: not regular, then the validated reader decides
    lines[170] = lines[170].rsplit(" ", 2)[0] + " NaN Anserini"
    run = tmp_path / "broken.run"
    run.write_text("\n".join(lines) + "\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("1000 0 x 1\n")
    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 1 << 10)
    monkeypatch.setattr(
        matrix_module, "read_run_column_chunks", lambda path, **options: read_run_column_chunks(path, lines=40)
    )
    with pytest.raises(InputError, match=r"broken\.run:171"):
        matrix_module._per_topic_from_run_file(RunFile(run), read_qrels(qrels), MEASURES, False)
