"""Relevance judgments: ``qid iter docno grade``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Qrels:
    """Graded judgments, ``judgments[qid][docno] = grade`` (grades may be negative, e.g. spam -2).

    Topics keep the order of their first appearance in the file.
    """

    judgments: dict[str, dict[str, int]]
    path: Path | None = None

    def evaluated_topics(self) -> list[str]:
        """The topic universe of MATH.md section 1: topics with at least one positive grade, in file order."""
        return [qid for qid, docs in self.judgments.items() if any(grade > 0 for grade in docs.values())]
