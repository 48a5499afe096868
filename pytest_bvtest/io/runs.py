"""TREC run files: ``qid Q0 docno rank score tag``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Run:
    """One system's rankings.

    ``scores[qid][docno]`` is the retrieval score. The rank column of the file is not kept: the
    ranking order is always score descending, ties by docno descending (MATH.md section 1).
    """

    name: str
    scores: dict[str, dict[str, float]]
    path: Path | None = None
    tags: tuple[str, ...] = field(default=())
