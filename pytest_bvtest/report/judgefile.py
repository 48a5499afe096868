"""The judge file: the documents to judge (:mod:`pytest_bvtest.judging.documents`) as a TSV annotators fill in.

One row per unjudged (topic, document) pair of the candidate's and its references' top d, by decreasing judging
leverage, with an empty ``grade`` column, the query, the document's rank in each run, the gates it moves and, when the
spec names the documents' texts (``judgments.documents``), the first 300 characters of its text. The
qrels reader takes the filled-in file back (:func:`pytest_bvtest.io.qrels.read_qrels`, its judge form): list it in
the spec's ``qrels`` after the official qrels. Written atomically, and never over a file holding a grade (what an
annotator filled in) or a file that is not a judge file, unless asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import JUDGE_COLUMNS, read_judge_file
from pytest_bvtest.io.textfiles import atomic_write_text
from pytest_bvtest.judging.documents import DocumentToJudge
from pytest_bvtest.judging.evaluation import Evaluation


def _cell(text: str | None) -> str:
    """A TSV cell: tabs and line breaks become blanks."""
    return " ".join((text or "").split())


def _moves(document: DocumentToJudge) -> str:
    return "; ".join(
        f"{move.gate}{' (undecided)' if move.undecided else ''} {move.change:+.4g} ({move.share:.0%})"
        for move in document.moves
    )


#: How much of a document's text the judge file shows (``judgments.documents``): enough to judge most at a glance.
SNIPPET_CHARS = 300


def _snippet(text: str | None) -> str:
    """The first :data:`SNIPPET_CHARS` characters of a document's text, on one line (``-`` when it is unknown)."""
    if text is None:
        return "-"
    cell = _cell(text)
    return cell if len(cell) <= SNIPPET_CHARS else cell[: SNIPPET_CHARS - 3].rstrip() + "..."


def judge_file_text(
    evaluation: Evaluation,
    documents: Sequence[DocumentToJudge],
    path: str | os.PathLike[str] = "judgments.tsv",
    texts: Mapping[str, str] | None = None,
) -> str:
    """The judge file of ``evaluation`` to be written at ``path``: a comment header saying what it is and how to use
    it, then the TSV; with the documents' ``texts`` (``judgments.documents``), a snippet of each."""
    spec = evaluation.spec
    # the runs whose top d was read: the candidate and its gates' references (named even when nothing is unjudged)
    systems = list(dict.fromkeys(system for document in documents for system in document.ranks)) or [
        name
        for name in dict.fromkeys([spec.candidate_name, *(verdict.gate.reference for verdict in evaluation.gates)])
        if name is not None
    ]
    judged = [measure.judgments for measure in evaluation.measures if measure.judgments is not None]
    top = max((judgments.grade for judgments in judged), default=1)
    depths = sorted({judgments.depth for judgments in judged})
    undecided = sum(verdict.undecided for verdict in evaluation.gates)
    listed = [os.path.relpath(file, spec.folder) for file in (*spec.qrels_files(), Path(path).absolute())]
    header = [
        f"# bvtest judge {spec.path.name}: {len(documents):,} unjudged documents of the top "
        f"{'/'.join(map(str, depths))} of {', '.join(systems)}, most settling first; {undecided} gate"
        f"{'' if undecided == 1 else 's'} undecided (docs/judgments.md)",
        f"# Fill in the grade column (0 not relevant, up to {top}; leave a row empty to skip it), then list this file "
        f"in the spec's qrels after the others: qrels: [{', '.join(listed)}]",
        "# leverage: the largest share of an undecided gate's move between its two corners that the document alone "
        "makes (of any gate's when none is undecided); the rows come by leverage weighted by how uncertain the "
        "document's grade is (one sure to be non-relevant settles nothing); gates: each gate it moves, by how much, "
        "and that share",
        "\t".join(
            (
                *JUDGE_COLUMNS,
                "leverage",
                "query",
                *(f"rank {system}" for system in systems),
                "gates",
                *(("text",) if texts is not None else ()),
            )
        ),
    ]
    rows = [
        "\t".join(
            (
                document.topic,
                document.docno,
                "",
                f"{document.settling or document.leverage:.3f}",
                _cell(document.query),
                *("-" if document.ranks.get(system) is None else str(document.ranks[system]) for system in systems),
                _moves(document),
                *((_snippet(texts.get(document.docno)),) if texts is not None else ()),
            )
        )
        for document in documents
    ]
    return "\n".join(header + rows) + "\n"


def check_judge_file_path(path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Refuse to write over a file an annotator may have worked on: an existing file that is not a judge file, or a
    judge file with a grade filled in (``force`` overwrites either)."""
    target = Path(path)
    if force or not target.exists() or target.is_dir() or not target.is_file():  # a stream (/dev/stdout) is written
        return
    try:
        graded = read_judge_file(target).graded
    except InputError:
        raise InputError(
            "exists and is not a judge file: it is not replaced", path=target, hint="name another file, or --force"
        ) from None
    if graded:
        raise InputError(
            f"is a judge file with {graded:,} grade{'' if graded == 1 else 's'} filled in: it is not replaced",
            path=target,
            hint="list it in the spec's qrels to use its grades, or write the new documents to another file",
        )


def write_judge_file(
    path: str | os.PathLike[str],
    evaluation: Evaluation,
    documents: Sequence[DocumentToJudge],
    *,
    force: bool = False,
    texts: Mapping[str, str] | None = None,
) -> None:
    """Write the judge file at ``path`` atomically, after :func:`check_judge_file_path` (``texts``: as
    :func:`judge_file_text` reads them)."""
    check_judge_file_path(path, force=force)
    atomic_write_text(Path(path), judge_file_text(evaluation, documents, path, texts))
