"""The example project's candidates a reviewer meets, as run files: the docs' screenshots and the width test use them.

The passing and risky candidates are the example's own runs; the failing one is production with the documents
judged non-relevant moved to the top of five hard topics (their relevant documents fall out of the top ten), and the
``OK*`` one the passing candidate without three topics (a truncated run: the ``candidate_missing`` guard warns).
"""

from __future__ import annotations

from pathlib import Path

#: Production's topics whose rankings the failing candidate reverses (nDCG@10 0.23 to 0.29 in production).
BROKEN_TOPICS = ("19", "22", "35", "39", "49")
#: The topics the truncated candidate has no ranking for.
MISSING_TOPICS = ("10", "25", "54")


def broken_run(production: Path, qrels: Path, out: Path) -> Path:
    """``production`` with the documents ``qrels`` judges non-relevant moved to the top of each of
    :data:`BROKEN_TOPICS`, tagged ``broken``: their relevant documents fall out of the top ten, and every document of
    the new top ten is judged, so the loss is a loss whatever the missing judgments say (a plain ``FAIL``, not
    ``UNDECIDED``)."""
    not_relevant = set()
    for line in qrels.read_text(encoding="utf-8").splitlines():
        topic, _, doc, grade = line.split()
        if int(grade) <= 0:
            not_relevant.add((topic, doc))
    by_topic: dict[str, list[str]] = {}
    for line in production.read_text(encoding="utf-8").splitlines():
        topic, _, doc = line.split()[:3]
        by_topic.setdefault(topic, []).append(doc)
    lines = []
    for topic, docs in by_topic.items():
        if topic in BROKEN_TOPICS:
            docs = sorted(docs, key=lambda doc: (topic, doc) not in not_relevant)  # stable: production's order kept
        lines += [f"{topic} Q0 {doc} {rank} {len(docs) - rank + 1}.0 broken" for rank, doc in enumerate(docs, 1)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def truncated_run(candidate: Path, out: Path) -> Path:
    """``candidate`` without the rankings of :data:`MISSING_TOPICS`."""
    kept = [
        line for line in candidate.read_text(encoding="utf-8").splitlines() if line.split()[0] not in MISSING_TOPICS
    ]
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return out
