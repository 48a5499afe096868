"""The committed document collection and topics, read from disk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

EXAMPLE_ROOT = Path(__file__).resolve().parents[1]
CORPUS_PATH = EXAMPLE_ROOT / "corpus" / "stdlib_docs.jsonl"
TOPICS_PATH = EXAMPLE_ROOT / "eval" / "topics.tsv"


@dataclass(frozen=True)
class Document:
    """One documented object: ``docno`` is its dotted name, ``text`` its cleaned docstring."""

    docno: str
    kind: str
    signature: str
    text: str


def load_corpus(path: Path = CORPUS_PATH) -> list[Document]:
    """The documents of a JSON-lines corpus file, in file order; duplicate docnos are an error."""
    documents: list[Document] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                document = Document(**json.loads(line))
            except (json.JSONDecodeError, TypeError) as error:
                raise ValueError(
                    f"{path}:{number}: not a corpus record ({error}); "
                    "rebuild the file with `python -m search.build_corpus`"
                ) from None
            if document.docno in seen:
                raise ValueError(
                    f"{path}:{number}: docno {document.docno!r} appears twice; "
                    "rebuild the file with `python -m search.build_corpus`"
                )
            seen.add(document.docno)
            documents.append(document)
    return documents


def load_topics(path: Path = TOPICS_PATH) -> dict[str, str]:
    """``{qid: query}`` from a ``qid<TAB>query`` file, in file order."""
    topics: dict[str, str] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            qid, tab, query = line.rstrip("\n").partition("\t")
            if not tab or not qid or not query.strip():
                raise ValueError(f"{path}:{number}: expected `qid<TAB>query`, got {line.rstrip()!r}")
            if qid in topics:
                raise ValueError(f"{path}:{number}: topic {qid} appears twice; give each query its own id")
            topics[qid] = query.strip()
    return topics
