"""The guards' words: each guard's warning or note, and those of a measure said once for the gates they concern."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.errors import short_list
from pytest_bvtest.report.wording.numbers import _joined


def guard_warnings(evaluation: Mapping[str, Any]) -> list[str]:
    """The guards that warn not to trust this measure's green gates (they are ``OK*``)."""
    return [guard["message"] for guard in evaluation.get("guards") or [] if guard["severity"] in ("warning", "failure")]


def stale_reference_message(guards: Sequence[Mapping[str, Any]]) -> str:
    """One note for the ``stale_reference`` guards of a spec's measures against one reference: a big improvement,
    the means of each measure, and that gates against a reference this far behind are lenient on the next changes."""
    facts = guards[0]["facts"]
    reference = facts["reference"]
    gains = []
    for number, guard in enumerate(guards):
        said = guard["facts"]
        gain = said["candidate_mean"] - said["reference_mean"]
        relative = f", {gain / said['reference_mean']:+.0%}" if said["reference_mean"] else ""
        test = "randomization p" if number == 0 else "p"
        gains.append(
            f"{said['measure']} {said['reference_mean']:.4f} → {said['candidate_mean']:.4f} ({gain:+.4f}{relative}, "
            f"{test} {said['p_value']:.4f})"
        )
    advice = (
        "once this change is merged, make it the reference: pytest --bvtest-update (bvtest check --update)"
        if facts["spec_reference"]
        else f"compare the gates that name `reference: {reference}` with a recent baseline"
    )
    return (
        f"a big improvement over {reference}: mean {', '.join(gains)}; gates against a reference this far behind "
        f"let the next changes lose most of it, so {advice}"
    )


def _candidate_called(name: str) -> str:
    """How a guard names the candidate: by its system name where it is not the run under test."""
    return "the candidate" if name == "candidate" else f"the candidate {name}"


def guard_message(guard: Mapping[str, Any]) -> str:
    """The warning or note of one guard (:mod:`pytest_bvtest.judging.guards`), from its kind and facts."""
    facts, topics = guard["facts"], guard.get("topics") or []
    measure = facts.get("measure")
    kind = guard["kind"]
    if kind == "identical":
        if guard["severity"] == "note":
            return (
                f"no change: {_candidate_called(facts['candidate'])}'s per-topic {measure} scores are "
                f"{facts['reference']}'s on all "
                f"{facts['topics']} topics, as right after an update of the reference; if this change should move the "
                "ranking, check that CI wrote the new run where --bvtest-run points"
            )
        return (
            f"identical: {facts['candidate']}'s per-topic {measure} scores are identical to "
            f"{' and '.join(facts['same'])}'s on all {facts['topics']} topics; is this the run you meant to test? "
            "(a CI step that did not write the new run tests an old one)"
        )
    if kind == "candidate_missing":
        return (
            f"{_candidate_called(facts['candidate'])} has no ranking for {len(topics)} of {facts['total']} topics "
            f"that other systems rank ({measure} 0 by the missing-topic rule): {short_list(topics)}; is the run "
            "truncated, or made for other topics? A gate that passes says nothing about those topics (and scores "
            "of 0 can shrink Var); give the candidate a ranking for every topic, or restrict the qrels to the "
            "topics it answers"
        )
    if kind == "candidate_zero":
        return (
            f"{_candidate_called(facts['candidate'])} scores 0 {measure} on all {facts['total']} topics, while other "
            f"systems score above 0 on {facts['answered']} of them: does it retrieve judged documents? (document ids "
            "in another form than the qrels', a run of another collection, or qrels of another round or collection "
            "than the run: a round-4 run against round-3 qrels retrieves none of the documents judged then) A gate "
            "that passes says nothing about its quality: scores of 0 everywhere have Var 0 and ZRisk 0"
        )
    if kind == "unanswered_topics":
        threshold, total = facts["threshold"], facts["total"]
        advice = (
            "every topic: nothing any system retrieved is judged relevant, so the gates fail (no verdict rests on "
            "judgments); are the qrels for the topics and the collection the runs were made for?"
            if guard["severity"] == "failure"
            else f"more than {threshold:.0%} of the topics: are the qrels for the topics the runs were made for? "
            "Restrict the qrels to them (or raise analysis.guards.unanswered_share when the systems truly miss them)"
            if guard["severity"] == "warning"
            else "such topics tell no system apart and lower every mean"
        )
        return (
            f"{len(topics)} of {total} topics ({len(topics) / total:.0%}) {'is' if len(topics) == 1 else 'are'} "
            f"missed by every system ({measure} 0 for all): {short_list(topics)}; {advice}"
        )
    if kind == "stale_reference":
        return stale_reference_message([guard])
    if kind == "reference_missing":
        name = facts["reference"]
        return (
            f"the reference {name} has no ranking for {len(topics)} of {facts['total']} topics where "
            f"{facts['candidate']} scores above 0 ({measure} 0 by the missing-topic rule): {short_list(topics)}; the "
            f"candidate's wins there are free, so gates against {name} are lenient; give {name} a ranking for every "
            "topic, or restrict the qrels to the topics it answered"
        )
    if kind == "target_constant":
        why = (
            "below it, a system whose mean exceeds c gets a larger Bias² the better it gets, so Bias² rewards "
            "worse systems"
            if facts["side"] == "below_target"
            else "above 1, the measure's maximum: Bias² then measures the distance to a score no system can reach"
        )
        return (
            f"{measure} target constant c = {facts['c']:.4f} is outside [mean target {facts['target_mean']:.4f}, 1]; "
            f"{why} (IPM 2022 Lemma 1); use `target: mean` or a number in that range"
        )
    if kind == "nothing_judged":
        return (
            f"nothing judged: the qrels judge none of the documents of {_candidate_called(facts['candidate'])}'s top "
            f"{facts['depth']} on any of the {facts['total']} topics ({facts['label']} 0), so its {measure} rests on "
            "no judgment and its gates fail; are its document ids in the qrels' form, and is it a run of this "
            "collection and round?"
        )
    if kind == "unjudged_nonrelevant":
        why = (
            "the qrels judge only relevant documents (no grade below 1, MS MARCO's convention), so"
            if facts["chosen"] == "auto"
            else "as the spec asks (judgments: {unjudged: nonrelevant}),"
        )
        instead = (
            "; `judgments: {unjudged: plausible}` weighs what they probably are instead"
            if facts["chosen"] == "auto"
            else ""
        )
        return (
            f"{why} an unjudged document counts as non-relevant in {measure}, as trec_eval counts it, and no gate is "
            f"judged at its corners ({facts['label']} says how much of each top was judged){instead}"
        )
    raise ValueError(f"no words for the guard {kind!r}")


#: Notes that belong on the first screen (the others are folded with their measure's tables).
FIRST_SCREEN_NOTES = ("identical", "stale_reference", "unjudged_nonrelevant")


def _without_measure(guard: Mapping[str, Any]) -> tuple[Any, ...]:
    facts = {key: value for key, value in guard["facts"].items() if key != "measure"}
    return (guard["kind"], guard["severity"], repr(sorted(facts.items())), tuple(guard.get("topics") or []))


def _combined_guard_messages(guards: Sequence[Mapping[str, Any]]) -> list[tuple[str, set[str]]]:
    """The messages of one kind of guard over a spec's measures, each said once, with the per-measure messages each
    stands for: guards whose facts differ only in the measure are one message naming the measures (``nDCG@10 and
    AP``)."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for guard in guards:
        groups.setdefault(_without_measure(guard), []).append(guard)
    messages: dict[str, set[str]] = {}
    stale = [guard for guard in guards if guard["kind"] == "stale_reference"]
    if stale:  # one big improvement, its numbers per measure
        references: dict[str, list[Mapping[str, Any]]] = {}
        for guard in stale:
            references.setdefault(guard["facts"]["reference"], []).append(guard)
        for same in references.values():
            messages[stale_reference_message(same)] = {guard["message"] for guard in same}
        groups = {key: group for key, group in groups.items() if group[0]["kind"] != "stale_reference"}
    for group in groups.values():
        measures = [guard["facts"].get("measure") for guard in group]
        if len(group) == 1 or None in measures:
            for guard in group:
                messages.setdefault(guard["message"], set()).add(guard["message"])
            continue
        combined = guard_message({**group[0], "facts": {**group[0]["facts"], "measure": _joined(measures)}})
        messages.setdefault(combined, set()).update(guard["message"] for guard in group)
    return list(messages.items())
