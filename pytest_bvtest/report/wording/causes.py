"""The causes of a failure: the queries that got worse, grouped by the gates they break, each cause said once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_bvtest.report.wording.numbers import _float, display_path
from pytest_bvtest.report.wording.tables import _topic_list
from pytest_bvtest.report.wording.verdicts import gate_summary

#
# What a reviewer reads first in the Markdown comment, the HTML page and the terminal summary, in this order: the
# verdict, what changed, the causes (the queries that got worse and the gates they break, said once), the warnings
# and notes that concern the verdict (each said once), how sure the verdict is, and the command to reproduce or
# accept it. Every report lays out the same words; the per-gate numbers, the calibration and the comparisons
# follow, folded.

#: Harmed queries listed per cause on the first screen; the JSON report has every topic's scores.
HARMED_QUERIES = 8


@dataclass(frozen=True)
class HarmedQuery:
    """A query behind a cause: its id, its text and, per measure of the cause, ``(compared, candidate)`` scores
    (``None`` where that measure's evaluation does not have them)."""

    topic: str
    text: str | None
    scores: tuple[tuple[float, float] | None, ...]


@dataclass(frozen=True)
class Cause:
    """Failing gates that fail for the same topics: one story, told once.

    Failing gates of one spec and candidate, blamed against the same system, join a cause when most of the topics
    they blame are already the cause's; a failing gate that blames no topic (an undefined value) is a cause of its
    own. ``queries`` are the blamed topics, worst first, ``measures`` the measures of the gates in it.
    """

    spec: str
    system: str
    against: str
    measures: tuple[str, ...]
    queries: tuple[HarmedQuery, ...]
    gates: tuple[Mapping[str, Any], ...]


def _blamed(gate: Mapping[str, Any]) -> list[str]:
    return [impact["topic"] for impact in gate.get("worst_topics") or []]


def _shares_most(topics: Sequence[str], known: set[str]) -> bool:
    """More than half of ``topics`` are in ``known`` (an empty list shares nothing)."""
    return bool(topics) and 2 * sum(topic in known for topic in topics) > len(topics)


def causes(document: Mapping[str, Any]) -> list[Cause]:
    """The failing gates of a session grouped by cause, in document order (:class:`Cause`)."""
    groups: list[list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = []
    # each group's key and the topics its members blame, kept as members join (a session may fail thousands of gates)
    keys: list[tuple[Any, ...]] = []
    known: list[set[str]] = []
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            if gate["passed"]:
                continue
            topics = _blamed(gate)
            key = (evaluation["spec"], gate["system"], gate.get("worst_against"))
            for group, group_key, group_topics in zip(groups, keys, known):
                if group_key == key and _shares_most(topics, group_topics):
                    group.append((evaluation, gate))
                    group_topics.update(topics)
                    break
            else:
                groups.append([(evaluation, gate)])
                keys.append(key)
                known.append(set(topics))
    return [_cause(group) for group in groups]


def _per_topic(evaluation: Mapping[str, Any], system: str) -> dict[str, float] | None:
    row = next((entry.get("per_topic") for entry in evaluation["systems"] if entry["name"] == system), None)
    if row is None:
        return None
    return {topic: _float(value) for topic, value in zip(evaluation["topics"], row)}


def _cause(group: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> Cause:
    first_evaluation, first = group[0]
    measures = list(dict.fromkeys(evaluation["measure"] for evaluation, _ in group))
    by_measure = {evaluation["measure"]: evaluation for evaluation, _ in group}
    against = first.get("worst_against") or first.get("reference") or ""
    topics: dict[str, str | None] = {}
    listed: dict[tuple[str, str], tuple[float, float]] = {}
    for evaluation, gate in group:
        for impact in gate.get("worst_topics") or []:
            topics.setdefault(impact["topic"], impact.get("text"))
            listed.setdefault((evaluation["measure"], impact["topic"]), (impact["compared"], impact["candidate"]))
    rows = {
        measure: (_per_topic(by_measure[measure], first["system"]), _per_topic(by_measure[measure], against))
        for measure in measures
    }

    def scores(measure: str, topic: str) -> tuple[float, float] | None:
        candidate, compared = rows[measure]
        if candidate is not None and compared is not None and topic in candidate:
            return compared[topic], candidate[topic]
        return listed.get((measure, topic))

    queries = tuple(
        HarmedQuery(topic, text, tuple(scores(measure, topic) for measure in measures))
        for topic, text in topics.items()
    )
    return Cause(
        display_path(first_evaluation["spec"]),
        first["system"],
        against,
        tuple(measures),
        queries,
        tuple(gate for _, gate in group),
    )


def _all_worse(cause: Cause) -> bool:
    """Every query of the cause scores lower for the candidate on the cause's first measure."""
    return all(query.scores[0] is not None and query.scores[0][1] < query.scores[0][0] for query in cause.queries)


def cause_title(cause: Cause) -> str:
    """``5 queries got worse (production → candidate) and break 4 gates``; for a gate that blames no topic, what
    failed it."""
    gates = "1 gate" if len(cause.gates) == 1 else f"{len(cause.gates)} gates"
    if not cause.queries:
        gate = cause.gates[0]
        return f"{gate['measure']} {gate['label']} fails, and no query is to blame: {gate_summary(gate)}"
    count = len(cause.queries)
    queries = "1 query" if count == 1 else f"{count} queries"
    moved = "got worse" if _all_worse(cause) else "moved these gates"
    return f"{queries} {moved} ({cause.against} → {cause.system}) and break {gates}"


def harmed_query_table(cause: Cause) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The harmed queries as a header and rows: topic, query text (when any has one), then per measure the
    compared system's score, the candidate's and the change (``0.2918 → 0.0000 (-0.2918)``)."""
    with_text = any(query.text for query in cause.queries)
    header = ("topic", *(["query"] if with_text else []), *cause.measures)
    rows = []
    for query in cause.queries[:HARMED_QUERIES]:
        cells = [
            "-" if scores is None else f"{scores[0]:.4f} → {scores[1]:.4f} ({scores[1] - scores[0]:+.4f})"
            for scores in query.scores
        ]
        rows.append((query.topic, *([query.text or ""] if with_text else []), *cells))
    return header, rows


def more_queries_text(cause: Cause) -> str | None:
    """``... and 3 more queries: 12, 17, 40`` past :data:`HARMED_QUERIES`, or ``None``."""
    rest = [query.topic for query in cause.queries[HARMED_QUERIES:]]
    return None if not rest else f"... and {len(rest)} more: {_topic_list(rest)}"
