"""Write a TREC run for one named configuration.

    python -m search.run --config production --out runs/production.run
    python -m search.run --all --out-dir runs

Output lines are ``qid Q0 docno rank score tag`` with tag = the configuration name, the top ``depth``
documents per topic, scores to 6 decimals, ranked by score and then docno descending (trec_eval's
order). The same corpus and topics always give the same bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from search.bm25 import FieldedIndex, bm25_weights, build_index, top_documents
from search.collection import CORPUS_PATH, TOPICS_PATH, Document, load_corpus, load_topics
from search.configs import CONFIGS, SearchConfig
from search.rm3 import rm3_query

DEFAULT_DEPTH = 100


class Searcher:
    """One configuration ready to answer queries over an index built with its analyser."""

    def __init__(self, index: FieldedIndex, config: SearchConfig) -> None:
        if index.analyzer != config.analyzer:
            raise ValueError(f"config {config.name!r} needs an index built with {config.analyzer}")
        self.index = index
        self.config = config
        self.weights = bm25_weights(index.weighted_tf(config.name_weight), config.k1, config.b)
        self.feedback_tf = index.weighted_tf(1.0)

    def search(self, query: str, depth: int = DEFAULT_DEPTH) -> list[tuple[str, float]]:
        """The top ``depth`` ``(docno, score)`` pairs for ``query``."""
        query_vector = self.index.query_vector(query)
        scores = self.weights @ query_vector
        rm3 = self.config.rm3
        if rm3 is not None:
            expanded = rm3_query(query_vector, scores, self.feedback_tf, rm3.fb_docs, rm3.fb_terms, rm3.original_weight)
            scores = self.weights @ expanded
        return top_documents(scores, self.index.docnos, depth)


def run_lines(searcher: Searcher, topics: dict[str, str], depth: int = DEFAULT_DEPTH) -> list[str]:
    """The TREC run lines of every topic, in topic order."""
    lines = []
    for qid, query in topics.items():
        for rank, (docno, score) in enumerate(searcher.search(query, depth), start=1):
            lines.append(f"{qid} Q0 {docno} {rank} {score:.6f} {searcher.config.name}")
    return lines


def write_runs(
    names: list[str],
    out_paths: list[Path],
    documents: list[Document],
    topics: dict[str, str],
    depth: int = DEFAULT_DEPTH,
) -> None:
    """Write one run file per configuration name, sharing an index between configurations."""
    indexes: dict[object, FieldedIndex] = {}
    for name, out in zip(names, out_paths, strict=True):
        config = CONFIGS[name]
        if config.analyzer not in indexes:
            indexes[config.analyzer] = build_index(documents, config.analyzer)
        lines = run_lines(Searcher(indexes[config.analyzer], config), topics, depth)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{out}: {len(lines)} lines ({len(topics)} topics) - {config.description}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a TREC run for a named search configuration.")
    choice = parser.add_mutually_exclusive_group(required=True)
    choice.add_argument("--config", choices=sorted(CONFIGS), help="configuration to run")
    choice.add_argument("--all", action="store_true", help="run every configuration into --out-dir")
    parser.add_argument("--out", type=Path, help="run file to write (with --config)")
    parser.add_argument("--out-dir", type=Path, default=Path("runs"), help="folder for --all")
    parser.add_argument("--corpus", type=Path, default=CORPUS_PATH)
    parser.add_argument("--topics", type=Path, default=TOPICS_PATH)
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help="documents per topic")
    args = parser.parse_args(argv)
    if args.config and args.out is None:
        parser.error("--config needs --out")
    names = sorted(CONFIGS) if args.all else [args.config]
    outs = [args.out_dir / f"{name}.run" for name in names] if args.all else [args.out]
    write_runs(names, outs, load_corpus(args.corpus), load_topics(args.topics), args.depth)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
