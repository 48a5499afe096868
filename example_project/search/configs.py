"""The named retrieval configurations the team compares."""

from __future__ import annotations

from dataclasses import dataclass

from search.analysis import IDENTIFIER_ANALYZER, PLAIN_ANALYZER, Analyzer


@dataclass(frozen=True)
class RM3Params:
    """RM3 feedback settings (see :func:`search.rm3.rm3_query`)."""

    fb_docs: int
    fb_terms: int
    original_weight: float


@dataclass(frozen=True)
class SearchConfig:
    """One system: analyser, BM25 parameters, name-field weight (simple BM25F) and optional RM3."""

    name: str
    description: str
    analyzer: Analyzer
    k1: float
    b: float
    name_weight: float = 1.0
    rm3: RM3Params | None = None


CONFIGS: dict[str, SearchConfig] = {
    config.name: config
    for config in (
        SearchConfig(
            "past-release",
            "v1: BM25 k1=1.2 b=0.75, whole words only (no identifier splitting, no stemming)",
            PLAIN_ANALYZER,
            k1=1.2,
            b=0.75,
        ),
        SearchConfig(
            "production",
            "BM25 k1=0.9 b=0.4 with identifier splitting and plural stemming",
            IDENTIFIER_ANALYZER,
            k1=0.9,
            b=0.4,
        ),
        SearchConfig(
            "bm25-alt",
            "BM25 k1=1.2 b=0.75 with identifier splitting and plural stemming",
            IDENTIFIER_ANALYZER,
            k1=1.2,
            b=0.75,
        ),
        SearchConfig(
            "candidate-pass",
            "production retuned: k1=0.8 b=0.3, name field weighted 1.25 (simple BM25F)",
            IDENTIFIER_ANALYZER,
            k1=0.8,
            b=0.3,
            name_weight=1.25,
        ),
        SearchConfig(
            "candidate-risky",
            "production + aggressive RM3 (10 docs, 20 terms, original weight 0.3)",
            IDENTIFIER_ANALYZER,
            k1=0.9,
            b=0.4,
            rm3=RM3Params(fb_docs=10, fb_terms=20, original_weight=0.3),
        ),
    )
}
