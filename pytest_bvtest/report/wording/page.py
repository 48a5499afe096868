"""The reviewer's first screen: the verdict and its title, what changed, the near miss, the notices said once, how sure
the verdict is and the commands that reproduce or accept it; the session's counts."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_bvtest.report.wording.causes import _all_worse, causes
from pytest_bvtest.report.wording.guards import FIRST_SCREEN_NOTES, _combined_guard_messages
from pytest_bvtest.report.wording.judgments import _undecided_groups, judge_command, undecided_group_text
from pytest_bvtest.report.wording.numbers import (
    _ROUNDING,
    OUTCOMES,
    _float,
    _gates,
    _joined,
    _plural,
    _share_text,
    _spec_path,
    display_path,
    figure,
    format_number,
    gate_name,
    percent,
    short_number,
)
from pytest_bvtest.report.wording.power import _missed_aim_groups, missed_aim_text, missed_aims_text, power_lines
from pytest_bvtest.report.wording.verdicts import _typical


def together_lines(document: Mapping[str, Any]) -> list[str]:
    """How often an equal-quality change fails at least one gate, once per set of gates that share their swaps
    (each gate's ``calibration.together``, docs/mathematics.md §7), with each gate's own rate beside it: ``Together:
    an equal-quality change fails at least one of these 5 gates (bvtest.yaml, against production) 3.89% of the time
    (10,000 swaps), each gate alone 0.04% to 1.33%; the spec allows 5% together.``"""
    return [f"Together: {together_sentence(gates)}." for gates in _together_groups(document)]


def together_sentence(gates: Sequence[Mapping[str, Any]]) -> str:
    """The joint false-alarm rate of gates that share their swaps, their own rates, and what the spec asked for: the
    families' rates together, or that each calibrated gate keeps its ``false_alarm`` alone."""
    calibrations = [gate["calibration"] for gate in gates]
    together = calibrations[0]["together"]
    spec = _spec_path(gates[0])
    text = (
        f"an equal-quality change fails at least one of these {together['gates']} gates ({spec}, against "
        f"{calibrations[0]['reference']}) {percent(together['rate'])} of the time ({together['swaps']:,} swaps), "
        f"each gate alone {_rates(gates)}"
    )
    calibrated = [c for c in calibrations if c["false_alarm"] is not None]
    families = sorted({c["family"]["false_alarm"] for c in calibrated if c.get("family")}, reverse=True)
    if len(families) == 1:
        return f"{text}; the spec allows {percent(families[0])} together (family-wise limits)"
    if families:
        allowed = ", ".join(f"{percent(rate)} to its false_alarm {percent(rate)} gates" for rate in families)
        return f"{text}; the spec allows {allowed} together (family-wise limits, one family per rate)"
    asked = [c["false_alarm"] for c in calibrated]
    if len(asked) > len(set(asked)):  # calibrated gates that would form a family: per-gate limits were asked for
        return (
            f"{text}; each calibrated gate keeps its false_alarm alone (analysis: {{calibration: {{family: true}}}}, "
            "the default, holds them to it together)"
        )
    return text


def judged_nothing(document: Mapping[str, Any]) -> bool:
    """No spec evaluated, no team test, no spec error in the session: a report of it must not read as a pass."""
    summary = document["summary"]
    return not (document["evaluations"] or summary.get("tests") or document.get("errors") or summary.get("not_run"))


def summary_counts(document: Mapping[str, Any]) -> str:
    """``4 gates, 0 failed; 3 team tests, 1 failed``: the gates and the team's own tests."""
    if judged_nothing(document):
        return "no gates ran (no bvtest spec or team test was collected in this session)"
    summary = document["summary"]
    text = f"{summary['gates']} gate{'' if summary['gates'] == 1 else 's'}, {summary['failed']} failed"
    if summary["warnings"]:
        text += f", {summary['warnings']} with a warning (OK*)"
    undecided = summary.get("undecided") or 0
    if undecided:
        text += f", {undecided} undecided (unjudged documents decide {'it' if undecided == 1 else 'them'})"
    tests = summary.get("tests") or 0
    if tests:
        text += f"; {tests} team test{'' if tests == 1 else 's'}, {summary['tests_failed']} failed"
    errors = document.get("errors") or []
    if errors:
        specs = len({error["spec"] for error in errors})
        text += (
            f"; {specs} spec{'' if specs == 1 else 's'} could not be evaluated "
            f"({len(errors)} item{'' if len(errors) == 1 else 's'})"
        )
    not_run = summary.get("not_run") or 0
    if not_run:
        text += f"; {not_run} gate{'' if not_run == 1 else 's'} {not_run_reason(document)}"
    other = summary.get("other_tests_failed") or 0
    if other:
        text += "; " + OTHER_TESTS_FAILED.format(
            tests=_plural(other, "other test"), verb="fails" if other == 1 else "fail"
        )
    return text


#: The session's other tests that failed, in the headline (pytest's exit code counts them).
OTHER_TESTS_FAILED = "{tests} of the session {verb} (pytest's log names them)"


#: Why a gate of an evaluated spec has no verdict in this session.
NOT_RUN_REASON = "not run (deselected, or the session stopped early)"


#: Why no gate has one in a ``pytest --collect-only`` session.
COLLECTED_ONLY_REASON = "collected, none run (pytest --collect-only)"


def not_run_reason(document: Mapping[str, Any]) -> str:
    """Why the document's ``not_run`` gates have no verdict: :data:`NOT_RUN_REASON`, or for a session that only
    collected them :data:`COLLECTED_ONLY_REASON` (its Markdown said they were deselected)."""
    return COLLECTED_ONLY_REASON if document.get("collected_only") else NOT_RUN_REASON


def error_groups(document: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """The items that could not be evaluated, as ``(spec, items, message)``: one entry per spec and message
    (every gate of a spec whose candidate cannot be read fails with the same message)."""
    groups: dict[tuple[str, str], int] = {}
    for error in document.get("errors") or []:
        key = (display_path(error["spec"]), error["message"] or "")
        groups[key] = groups.get(key, 0) + 1
    return [(spec, count, message) for (spec, message), count in groups.items()]


#: Team tests are listed under this line (terminal) or heading (Markdown).
TEAM_TESTS_TITLE = "Team tests (marked bvtest or using the bvtest fixture)"


def team_test_text(test: Mapping[str, Any]) -> str:
    """``test_id: why`` for a test that did not pass, the id alone otherwise."""
    return f"{test['id']}: {test['message']}" if test.get("message") else test["id"]


def unchanged(document: Mapping[str, Any]) -> bool:
    """Every evaluated candidate scores as its reference on every topic of every measure (the ``identical``
    guard names the reference): nothing changed, as right after ``--bvtest-update``."""
    evaluations = [evaluation for evaluation in document["evaluations"] if evaluation.get("candidate")]
    return bool(evaluations) and all(
        any(
            guard["kind"] == "identical" and evaluation.get("reference") in guard["facts"]["same"]
            for guard in evaluation.get("guards") or []
        )
        for evaluation in evaluations
    )


def failing_gates(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The gates whose headline and topics the details list: the failing ones and the undecided ones (an undecided
    gate may pass, under ``judgments: {undecided: warn}``, and still wants its unjudged documents shown)."""
    return [gate for gate in _gates(document) if not gate["passed"] or gate["outcome"] == "UNDECIDED"]


def failing_gates_title(gates: Sequence[Mapping[str, Any]]) -> str:
    """The title of the details of :func:`failing_gates`."""
    undecided = {gate["outcome"] == "UNDECIDED" for gate in gates}
    if undecided == {True}:
        return "Each undecided gate"
    return "Each failing gate" if undecided == {False} else "Each failing or undecided gate"


def page_verdict(document: Mapping[str, Any]) -> str:
    """``fail`` (a gate, team test or spec failed), ``warn`` (passed, but a gate is not a plain ``OK``, a warning
    was raised, a gate did not run, or nothing was judged) or ``ok``."""
    if not document["passed"] or document["summary"].get("other_tests_failed"):
        return "fail"
    warned = (
        any(gate["outcome"] != "OK" for gate in _gates(document))
        or any(notice.severity == "warning" for notice in notices(document))
        or document["summary"].get("not_run")
        or judged_nothing(document)
    )
    return "warn" if warned else "ok"


def _session_parts(document: Mapping[str, Any]) -> list[str]:
    """The team tests, the specs that could not be evaluated and the gates that did not run, as summary parts."""
    summary = document["summary"]
    parts = []
    tests = summary.get("tests") or 0
    if tests:
        parts.append(f"{_plural(tests, 'team test')}, {summary['tests_failed']} failed")
    errors = document.get("errors") or []
    if errors:
        specs = len({error["spec"] for error in errors})
        parts.append(f"{_plural(specs, 'spec')} could not be evaluated ({_plural(len(errors), 'item')})")
    not_run = summary.get("not_run") or 0
    if not_run:
        parts.append(f"{_plural(not_run, 'gate')} {not_run_reason(document)}")
    other = summary.get("other_tests_failed") or 0
    if other:
        parts.append(
            OTHER_TESTS_FAILED.format(tests=_plural(other, "other test"), verb="fails" if other == 1 else "fail")
        )
    return parts


def page_title(document: Mapping[str, Any]) -> str:
    """The verdict in words, after the report's name: ``5 of 5 gates fail, all for the same 5 queries``, ``5 gates
    pass``, ``no change against production: 5 gates pass``, ``5 gates pass, 1 with a warning (OK*)``."""
    if judged_nothing(document):
        return summary_counts(document)
    summary = document["summary"]
    gates, failed = summary["gates"], summary["failed"]
    parts = []
    if failed:
        found = causes(document)
        why = ""
        if len(found) == 1 and found[0].queries:
            count = len(found[0].queries)
            queries = "query" if count == 1 else f"{count} queries"
            why = f", all for the same {queries}" if failed > 1 else f", for {'1 ' if count == 1 else ''}{queries}"
            if not _all_worse(found[0]):  # some of them gained: they moved the statistic, not all lost
                why = (
                    f", moved by the same {queries}"
                    if failed > 1
                    else f", moved by {'1 ' if count == 1 else ''}{queries}"
                )
        elif len(found) > 1:
            why = f", for {len(found)} causes"
        failing = "the gate fails" if gates == 1 else f"{failed} of {gates} gates fail{'s' if failed == 1 else ''}"
        parts.append(f"{failing}{why}")
    elif gates:
        others = [gate["outcome"] for gate in _gates(document) if gate["outcome"] != "OK"]
        text = f"{_plural(gates, 'gate')} pass{'es' if gates == 1 else ''}"
        if others:
            text += f", {len(others)} with a warning ({', '.join(dict.fromkeys(others))})"
        if unchanged(document):
            references = ", ".join(dict.fromkeys(evaluation["reference"] for evaluation in document["evaluations"]))
            text = f"no change against {references}: {text}"
        parts.append(text)
    elif document["evaluations"]:
        parts.append("analysis only, no gates")
    return "; ".join(parts + _session_parts(document))


def _by_spec(document: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    specs: dict[str, list[Mapping[str, Any]]] = {}
    for evaluation in document["evaluations"]:
        specs.setdefault(evaluation["spec"], []).append(evaluation)
    return specs


def _system(evaluation: Mapping[str, Any], name: str | None) -> Mapping[str, Any] | None:
    return next((system for system in evaluation["systems"] if system["name"] == name), None)


#: The candidate's largest per-topic losses named in the change line of a spec whose gates pass.
LARGEST_LOSSES = 3


def change_lines(document: Mapping[str, Any]) -> list[str]:
    """What changed, per spec with a candidate and a reference: the mean of every measure, reference → candidate;
    where no gate of the spec failed (the causes say it otherwise), on how many queries the candidate got worse on
    its first measure and the largest losses."""
    lines = []
    specs = _by_spec(document)
    for spec, evaluations in specs.items():
        pairs = [
            (
                evaluation,
                _system(evaluation, evaluation.get("candidate")),
                _system(evaluation, evaluation.get("reference")),
            )
            for evaluation in evaluations
        ]
        pairs = [
            (evaluation, candidate, reference) for evaluation, candidate, reference in pairs if candidate and reference
        ]
        if not pairs:
            continue
        first, candidate, reference = pairs[0]
        means = ", ".join(
            f"{evaluation['measure']} {format_number(ref['mean'])} → {format_number(cand['mean'])} "
            f"({_float(cand['mean']) - _float(ref['mean']):+.4f})"
            for evaluation, cand, ref in pairs
            if cand.get("mean") is not None and ref.get("mean") is not None
        )
        named = f"in {display_path(spec)}, " if len(specs) > 1 else ""
        lines.append(
            f"{named}{first['candidate']} against {first['reference']}, mean over {len(first['topics'])} queries: "
            f"{means}"
        )
        if any(not gate["passed"] for evaluation in evaluations for gate in evaluation["gates"]):
            continue
        losses = _losses(first, candidate, reference)
        if losses:
            texts = dict(zip(first["topics"], first.get("topic_texts") or []))
            largest = ", ".join(
                f"{topic}{f' ({texts[topic]})' if texts.get(topic) else ''} {delta:+.4f}"
                for topic, delta in losses[:LARGEST_LOSSES]
            )
            lines.append(
                f"worse on {len(losses)} of {len(first['topics'])} queries ({first['measure']}); "
                f"the largest losses: {largest}"
            )
    return lines


#: A passing gate whose value has come this share of the way from what it is compared with to its limit is a near
#: miss, which the first screen calls one.
NEAR_MISS = 0.9


def _room_used(gate: Mapping[str, Any]) -> float | None:
    """How far a passing gate's value has come from what it is compared with (the reference's value, or what an
    equal-quality change typically gets) towards its limit: 0 at the compared value, 1 at the limit; ``None`` where
    there is no such way (no compared value, a limit on its safe side, a value on the good side of the compared one)."""
    value, limit, excess = (_float(gate.get(key)) for key in ("value", "limit", "excess"))
    compared = _float(gate.get("reference_value")) if gate.get("reference_value") is not None else _typical(gate)
    if not gate["passed"] or None in (value, limit, excess, compared) or gate.get("cannot_fail"):
        return None
    if not all(math.isfinite(number) for number in (value, limit, excess, compared)):  # type: ignore[arg-type]
        return None
    room = abs(limit - compared)  # type: ignore[operator]
    if room <= _ROUNDING or excess > 0 or -excess > room:  # type: ignore[operator]
        return None
    return 1.0 - -excess / room  # type: ignore[operator]


@dataclass(frozen=True)
class Closest:
    """The passing gate closest to its limit: ``near`` when it has come :data:`NEAR_MISS` of the way, and the words."""

    near: bool
    text: str

    @property
    def title(self) -> str:
        return "Near miss" if self.near else "Closest to its limit"


def closest(document: Mapping[str, Any]) -> Closest | None:
    """The passing gate closest to its limit, measured by the share of the way it has come from what it is compared
    with: a near miss, ``risky.yaml::nDCG@10::var passes by 0.000126: nDCG@10 Var 0.084 against a limit of 0.0841,
    99% of the way from production's 0.0706``; ``None`` when no passing gate has such a way."""
    used = [(share, gate) for gate in _gates(document) if (share := _room_used(gate)) is not None]
    if not used:
        return None
    share, gate = max(used, key=lambda pair: pair[0])
    value, limit = _float(gate["value"]), _float(gate["limit"])
    from_what = (
        f"{gate['reference']}'s {figure(gate['reference_value'], gate['value'])}"
        if gate.get("reference_value") is not None
        else f"what an equal-quality change gets, {figure(_typical(gate), gate['value'])}"
    )
    where = (
        f"{gate['measure']} {gate['label']} {short_number(value, limit)} against a limit of "  # type: ignore[arg-type]
        f"{short_number(limit, value)}, {_share_text(share)} of the way from {from_what}"  # type: ignore[arg-type]
    )
    if share >= NEAR_MISS:
        headroom = -_float(gate["excess"])  # type: ignore[operator]
        return Closest(True, f"{gate_name(document, gate)} passes by {headroom:.3g}: {where}")
    return Closest(False, f"{gate_name(document, gate)}, {where}")


def _losses(
    evaluation: Mapping[str, Any], candidate: Mapping[str, Any], reference: Mapping[str, Any]
) -> list[tuple[str, float]]:
    """The topics on which the candidate scores below the reference, largest loss first (empty without scores)."""
    if candidate.get("per_topic") is None or reference.get("per_topic") is None:
        return []
    deltas = [
        (topic, float(ours) - float(theirs))
        for topic, ours, theirs in zip(evaluation["topics"], candidate["per_topic"], reference["per_topic"])
        if ours is not None and theirs is not None
    ]
    return sorted(((topic, delta) for topic, delta in deltas if delta < -_ROUNDING), key=lambda item: item[1])


@dataclass(frozen=True)
class Notice:
    """A warning (the reason a pass is ``OK*``) or a note a reviewer reads first, said once: ``gates`` are the
    gates it concerns (empty for a note that concerns the whole check)."""

    severity: str
    text: str
    gates: tuple[str, ...] = ()


def notices(document: Mapping[str, Any]) -> list[Notice]:
    """The warnings and first-screen notes of a session, each once: the guards' (over a spec's measures, with the
    gates each makes ``OK*``), then each gate's own reason not to trust it (a pass within noise, a limit that cannot
    fail, an outcome the reports know no words for)."""
    found: list[Notice] = []
    for evaluations in _by_spec(document).values():
        kinds: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for evaluation in evaluations:
            for guard in evaluation.get("guards") or []:
                if guard["severity"] in ("warning", "failure") or guard["kind"] in FIRST_SCREEN_NOTES:
                    # a guard that fails its gates is told as warnings are (its gates are FAIL, with their causes)
                    severity = "warning" if guard["severity"] == "failure" else guard["severity"]
                    kinds.setdefault((guard["kind"], severity), []).append(guard)
        for (_, severity), guards in kinds.items():
            for text, said in _combined_guard_messages(guards):
                concerned = tuple(
                    gate_name(document, gate)
                    for evaluation in evaluations
                    for gate in evaluation["gates"]
                    if said & set(gate.get("guards") or [])
                )
                found.append(Notice(severity, text, concerned))
    undecided = _undecided_groups(document)
    missed = _missed_aim_groups(document)
    for evaluation in document["evaluations"]:
        listed = {guard["message"] for guard in evaluation.get("guards") or []}
        for gate in evaluation["gates"]:
            aims = missed.get(gate["id"])
            if aims and aims[0] is gate:
                found.append(
                    Notice("warning", missed_aims_text(aims), tuple(gate_name(document, member) for member in aims))
                )
            if aims:
                listed = listed | {missed_aim_text(gate)}
            group = undecided.get(gate["id"])
            if group and group[0] is gate:
                found.append(
                    Notice(
                        "warning", undecided_group_text(group), tuple(gate_name(document, member) for member in group)
                    )
                )
            own = ([gate["warning"]] if gate.get("warning") else []) + [
                text for text in gate.get("guards") or [] if text not in listed
            ]
            if gate.get("undecided") and not group:
                own.insert(1 if gate.get("warning") else 0, gate["undecided"])
            if not own and gate["passed"] and gate["outcome"] not in OUTCOMES:
                own = [f"{gate['outcome']}: {gate.get('sentence') or gate['headline']}"]
            found += [Notice("warning", text, (gate_name(document, gate),)) for text in own]
    return found


def _together_groups(document: Mapping[str, Any]) -> list[list[Mapping[str, Any]]]:
    """The gates calibrated together, in sets (each set's gates in the document's order)."""
    # a set's gates share one list of its ids in a document made in memory: each list is read once, not once per
    # gate (a tuple of 5,000 ids hashed for each of 5,000 gates took 1.2 s); a document read back has a list per gate
    by_list: dict[int, tuple[Sequence[str], list[tuple[int, Mapping[str, Any]]]]] = {}
    for position, gate in enumerate(_gates(document)):
        together = (gate.get("calibration") or {}).get("together")
        if together:
            by_list.setdefault(id(together["ids"]), (together["ids"], []))[1].append((position, gate))
    groups: dict[tuple[str, ...], list[tuple[int, Mapping[str, Any]]]] = {}
    for ids, gates in by_list.values():
        groups.setdefault(tuple(ids), []).extend(gates)
    return [[gate for _, gate in sorted(members, key=lambda member: member[0])] for members in groups.values()]


def _rates(gates: Sequence[Mapping[str, Any]]) -> str:
    """``1.33%``, or ``0.04% to 1.33%`` when the gates' own false-alarm rates differ."""
    rates = sorted({_float(gate["calibration"]["rate"]) for gate in gates if gate["calibration"]["rate"] is not None})
    if not rates:
        return "undefined"
    low, high = percent(rates[0]), percent(rates[-1])
    return low if low == high else f"{low} to {high}"


def sure_lines(document: Mapping[str, Any]) -> list[str]:
    """How sure the verdict is: how often an equal-quality change (the candidate's and the reference's scores
    swapped on random topics) fails the gates, together and each alone, with the rates the spec asked for; where a
    gate on the mean and the randomization test of the comparisons disagree, why (:func:`test_agreement_lines`)."""
    if unchanged(document):  # every swap gives one value: no rate to tell, and the note says why
        return []
    lines = []
    grouped = set()
    for gates in _together_groups(document):
        grouped.update(gate["id"] for gate in gates)
        sentence = together_sentence(gates)
        lines.append(f"{sentence[0].upper()}{sentence[1:]}.")
    for gate in _gates(document):
        calibration = gate.get("calibration")
        if gate["id"] in grouped or not calibration or calibration.get("false_alarm") is None:
            continue
        lines.append(
            f"An equal-quality change fails {gate_name(document, gate)} {percent(_float(calibration['rate']))} of the "
            f"time ({calibration['swaps']:,} swaps with {calibration['reference']})."
        )
    failing = [gate for gate in _gates(document) if not gate["passed"]]
    shares = [(gate, (gate.get("calibration") or {}).get("p_value")) for gate in failing]
    shares = [(gate, share) for gate, share in shares if share is not None]
    if shares:
        gates = "the failing gate" if len(failing) == 1 else f"each of the {len(failing)} failing gates"
        if len(shares) < len(failing):
            gates = _joined([gate_name(document, gate) for gate, _ in shares])
        lowest, highest = min(share for _, share in shares), max(share for _, share in shares)
        if highest == 0:  # a share of 0 swaps is no rate of 0%: the null holds nothing this bad
            swaps = sorted({(gate.get("calibration") or {}).get("swaps") or 0 for gate, _ in shares})
            drawn = f"{swaps[0]:,}" if len(swaps) == 1 else f"{swaps[0]:,} to {swaps[-1]:,}"
            lines.append(f"Not one of {drawn} equal-quality changes is as bad as the candidate on {gates}.")
        else:
            low, high = percent(lowest), percent(highest)
            lines.append(
                f"An equal-quality change is at least as bad as the candidate on {gates} "
                f"{low if low == high else f'{low} to {high}'} of the time."
            )
    # what a green is worth against a worse change (docs/mathematics.md §9): the smallest drops the check catches
    return lines + test_agreement_lines(document) + power_lines(document)


def test_agreement_lines(document: Mapping[str, Any]) -> list[str]:
    """Gates on the mean and the randomization test of the comparisons, side by side where they disagree: gates
    that fail while the test finds no difference, or pass a drop the test finds real. They ask different questions:
    a gate looks one way (at losses past its limit), the test both ways (a gain as large counts as much)."""
    failing: dict[str, list[tuple[str, float, float]]] = {}
    passing: dict[str, list[tuple[str, float, Mapping[str, Any]]]] = {}
    for evaluation in document["evaluations"]:
        comparisons = {comparison["baseline"]: comparison for comparison in evaluation.get("comparisons") or []}
        for gate in evaluation["gates"]:
            comparison = comparisons.get(gate.get("reference") or "")
            calibration = gate.get("calibration") or {}
            if gate["statistic"] != "mean" or comparison is None or comparison.get("p_randomization") is None:
                continue
            p, level = _float(comparison["p_randomization"]), calibration.get("false_alarm") or 0.05
            name = gate_name(document, gate)
            if not gate["passed"] and p >= level and calibration.get("p_value") is not None:
                failing.setdefault(gate["reference"], []).append((name, p, _float(calibration["p_value"])))
            elif gate["passed"] and p < level and _float(comparison["difference"]) < 0:
                passing.setdefault(gate["reference"], []).append((name, p, gate))
    lines = []
    for reference, gates in failing.items():
        names, said = _joined([name for name, _, _ in gates]), "fails" if len(gates) == 1 else "fail"
        lines.append(
            f"{names} {said} while the randomization test of the means against {reference} finds p "
            f"{_joined([f'{p:.4f}' for _, p, _ in gates])}: a gate looks one way, at drops, and an equal-quality "
            f"change drops this far {_joined([percent(share) for _, _, share in gates])} of the time; the test looks "
            "both ways (a gain as large counts too), so its p is about twice that."
        )
    for reference, gates in passing.items():
        names, said = _joined([name for name, _, _ in gates]), "passes" if len(gates) == 1 else "pass"
        limits = _joined([f"{figure(gate['limit'])} ({gate['rule']})" for _, _, gate in gates])
        lines.append(
            f"{names} {said} while the randomization test of the means against {reference} finds the drop real "
            f"(p {_joined([f'{p:.4f}' for _, p, _ in gates])}): a gate allows a drop down to its limit, {limits}."
        )
    return lines


def commands(document: Mapping[str, Any]) -> list[tuple[str, list[str], str]]:
    """The commands of the verdict, as ``(what, commands, after)``: reproduce it, in the shell that made it
    (``pytest``, or ``bvtest check``), naming the candidate's runs as the command line did (nothing for the spec's
    own candidate, a run file or a table); for a failing one, accept the change on purpose (an update refuses after a
    failed gate, so its force option)."""
    check = document.get("shell", "pytest") != "pytest"
    run_option, force_option = ("--run", "--update-force") if check else ("--bvtest-run", "--bvtest-update-force")
    runs: dict[str, list[str]] = {}
    for evaluation in document["evaluations"]:
        if evaluation["gates"]:
            spec = display_path(evaluation["spec"])
            runs[spec] = runs.get(spec) or list(evaluation.get("candidate_given") or [])
    reproduce = [
        f"{'bvtest check' if check else 'pytest'} {shlex.quote(spec)}"
        + "".join(f" {run_option} {shlex.quote(run)}" for run in each)
        for spec, each in runs.items()
    ]
    if not reproduce:
        return []
    found = [("Reproduce", reproduce, "")]
    undecided = {
        display_path(evaluation["spec"]): gate
        for evaluation in document["evaluations"]
        for gate in evaluation["gates"]
        if gate["outcome"] == "UNDECIDED"
    }
    if undecided:
        found.append(
            (
                "List the unjudged documents that decide it",
                [judge_command(gate, shlex.quote(spec)) for spec, gate in undecided.items()],
                "fill in their grades and list the file under the spec's qrels",
            )
        )
    if any(not gate["passed"] for gate in _gates(document)):
        found.append(
            (
                "Accept it on purpose",
                [f"{command} {force_option}" for command in reproduce],
                "then commit the reference run it writes",
            )
        )
    return found
