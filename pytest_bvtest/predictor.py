"""The baseline predictor that ships: a document's grade by its nearest judged documents of the same topic
(docs/predictions.md).

``python -m pytest_bvtest.predictor --qrels QRELS [--documents TEXTS] [--run RUN ...]`` reads the rows
``bvtest judge --predict`` writes (``topic, query, docno, text`` on standard input) and writes
``topic<TAB>docno<TAB>grade`` for each. A document's grade is the similarity-weighted vote of its
:data:`NEIGHBOURS` most similar documents that the qrels judge on its topic (k nearest neighbours; the document
itself never votes, so a judged document of the sample is graded as if it were not judged: its agreement with people
is honest), similar by

- their texts (``--documents``, or the ``text`` column): cosine of TF-IDF vectors, the IDF over every text given
  (the cluster hypothesis: relevant documents resemble each other, van Rijsbergen 1979; Büttcher, Clarke, Yeung &
  Soboroff, SIGIR 2007, grade unjudged documents with a classifier over their text);
- their ranks in the runs (``--run``, for collections without texts): ``1 / (1 + d)`` with ``d`` the distance of their
  ``log2`` ranks across the runs, averaged per run (a document the runs place where relevant ones stand tends to be
  relevant: Aslam & Montague, SIGIR 2001); a document farther from every judged one than any judged document lies
  from its nearest other is left out (no judged document was placed as it is: the runs say nothing of it).

With both, the two similarities are averaged. numpy and scipy only, offline.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.predictions import PREDICTOR_COLUMNS, read_documents
from pytest_bvtest.io.qrels import read_qrels_files
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.stats.predictions import neighbour_grades, tfidf_vectors

#: How many judged neighbours vote.
NEIGHBOURS = 5
#: The rank given to a document a run does not retrieve.
UNRETRIEVED_RANK = 2000


def _rows(stream: TextIO) -> list[tuple[str, str, str]]:
    """``(topic, docno, text)`` of each row of the predictor's input."""
    rows = []
    for number, line in enumerate(stream, start=1):
        cells = line.rstrip("\r\n").split("\t")
        if number == 1 and tuple(cells[: len(PREDICTOR_COLUMNS)]) == PREDICTOR_COLUMNS:
            continue
        if not line.strip():
            continue
        if len(cells) != len(PREDICTOR_COLUMNS) or not cells[0] or not cells[2]:
            raise InputError(
                f"expected {len(PREDICTOR_COLUMNS)} tab-separated columns ({', '.join(PREDICTOR_COLUMNS)}), "
                f"got {len(cells)}",
                path="<stdin>",
                line=number,
                hint="feed it the rows `bvtest judge --predict` writes",
            )
        rows.append((cells[0], cells[2], cells[3]))
    return rows


def _log_ranks(runs: Sequence[str], pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """``(pairs, runs)``: ``log2`` of each document's rank in each run (:data:`UNRETRIEVED_RANK` where it is not
    retrieved); runs rank by score, ties by docno descending, as trec_eval does."""
    ranks = np.full((len(pairs), len(runs)), float(UNRETRIEVED_RANK))
    for column, path in enumerate(runs):
        ranking = {
            topic: {
                docno: rank
                for rank, (docno, _) in enumerate(
                    sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True), start=1
                )
            }
            for topic, scores in read_run(path).scores.items()
        }
        for row, (topic, docno) in enumerate(pairs):
            rank = ranking.get(topic, {}).get(docno)
            if rank is not None:
                ranks[row, column] = rank
    return np.log2(ranks)


def predict(
    rows: Sequence[tuple[str, str, str]],
    judgments: Mapping[str, Mapping[str, int]],
    texts: Mapping[str, str] | None,
    runs: Sequence[str],
    neighbours: int = NEIGHBOURS,
) -> list[int | None]:
    """Each row's grade by its nearest judged neighbours of its topic (see the module's docstring); ``None`` where it
    abstains: by ranks, a row farther from the judged documents than they are from each other."""
    given = {docno: text for _, docno, text in rows if text}
    corpus = dict(given if texts is None else {**given, **texts})
    use_texts = bool(corpus)
    if not use_texts and not runs:
        raise InputError(
            "the predictor has neither texts nor runs to compare documents by",
            hint="pass --documents TEXTS (or name `judgments: {documents:}` in the spec), or --run RUN",
        )
    topics = sorted({topic for topic, _, _ in rows})
    judged = [(topic, docno) for topic in topics for docno in judgments.get(topic, {})]
    asked = [(topic, docno) for topic, docno, _ in rows]
    if use_texts:
        vocabulary: dict[str, int] = {}
        names = sorted(corpus)
        vectors = tfidf_vectors([corpus[name] for name in names], vocabulary)
        position = {name: k for k, name in enumerate(names)}
    log_ranks = _log_ranks(runs, judged + asked) if runs else None
    grades = np.zeros(len(rows), dtype=np.int64)
    abstains = np.zeros(len(rows), dtype=bool)
    for topic in topics:
        mine = [k for k, (row_topic, _) in enumerate(asked) if row_topic == topic]
        theirs = [k for k, (judged_topic, _) in enumerate(judged) if judged_topic == topic]
        if not theirs:
            continue  # no judged document on the topic: grade 0, as the prior mostly has it
        similarity = np.zeros((len(mine), len(theirs)))
        parts = 0
        if use_texts:
            rows_at = [position.get(asked[k][1]) for k in mine]
            judged_at = [position.get(judged[k][1]) for k in theirs]
            known_rows = [k for k, at in enumerate(rows_at) if at is not None]
            known_judged = [k for k, at in enumerate(judged_at) if at is not None]
            if known_rows and known_judged:
                products = (
                    vectors[[rows_at[k] for k in known_rows]] @ vectors[[judged_at[k] for k in known_judged]].T
                ).toarray()
                similarity[np.ix_(known_rows, known_judged)] += products
            parts += 1
        itself = np.array([asked[k][1] for k in mine])[:, np.newaxis] == np.array([judged[j][1] for j in theirs])
        if log_ranks is not None:
            left = log_ranks[[len(judged) + k for k in mine]]
            right = log_ranks[theirs]
            distance = np.sqrt(((left[:, np.newaxis, :] - right[np.newaxis, :, :]) ** 2).mean(axis=2))
            similarity += 1.0 / (1.0 + distance)
            parts += 1
            abstains[mine] = _far(distance, itself, right)
        similarity /= parts
        similarity[itself] = -np.inf  # the document itself never votes
        votes = np.array([judgments[topic][judged[j][1]] for j in theirs])
        grades[mine] = neighbour_grades(similarity, votes, neighbours)
    return [None if abstain else grade for grade, abstain in zip(grades.tolist(), abstains.tolist())]


def _far(distance: np.ndarray, itself: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Which rows lie farther from every judged document, by their ranks, than any judged document lies from its
    nearest other: no judged document was ever placed as they are, so the runs say nothing of them (a document a
    pooled run ranks low, or a run brought up from deep down). The predictor leaves them out: their prior stands."""
    nearest = np.where(itself, np.inf, distance).min(axis=1)
    among = np.sqrt(((judged[:, np.newaxis, :] - judged[np.newaxis, :, :]) ** 2).mean(axis=2))
    np.fill_diagonal(among, np.inf)
    return nearest > among.min(axis=1).max() if len(judged) > 1 else np.zeros(len(nearest), dtype=bool)


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_bvtest.predictor",
        description="Predict grades by the nearest judged documents of each topic (texts or run ranks); reads "
        "topic, query, docno, text rows on standard input, writes topic, docno, grade (docs/predictions.md).",
    )
    parser.add_argument("--qrels", action="append", required=True, help="qrels file (repeat to read several)")
    parser.add_argument("--documents", help="the documents' texts: docno<TAB>text, or JSON lines")
    parser.add_argument("--run", action="append", default=[], help="a run file whose ranks compare documents")
    parser.add_argument("--neighbours", type=int, default=NEIGHBOURS, help="how many judged neighbours vote")
    arguments = parser.parse_args(argv)
    out = sys.stdout if stdout is None else stdout
    try:
        rows = _rows(sys.stdin if stdin is None else stdin)
        judgments = read_qrels_files(arguments.qrels).judgments
        texts = None if arguments.documents is None else read_documents(arguments.documents)
        grades = predict(rows, judgments, texts, arguments.run, max(1, arguments.neighbours))
    except InputError as error:
        sys.stderr.write(f"pytest_bvtest.predictor: error: {error}\n")
        return 2
    out.write(
        "".join(f"{topic}\t{docno}\t{grade}\n" for (topic, docno, _), grade in zip(rows, grades) if grade is not None)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
