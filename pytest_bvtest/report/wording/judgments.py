"""The words about unjudged documents: each system's judged share, a gate at its corners, the plausible gradings that
weigh it, an undecided gate's warning, and the command that lists the documents to judge."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.report.wording.numbers import (
    _ROUNDING,
    _documents,
    _float,
    _gates,
    _rounded_share,
    _spec_of,
    _spec_path,
    format_number,
)


def judged_line(evaluation: Mapping[str, Any]) -> str | None:
    """Each system's judged share of its top d (docs/mathematics.md §8), or, when every top d is judged, that
    alone; ``None`` where it is not known (per-topic tables)."""
    judgments = evaluation.get("judgments")
    if not judgments:
        return None
    label, depth = judgments["label"], judgments["depth"]
    if judgments["complete"]:
        return f"{label}: every system's top {depth} is judged"
    shares = ", ".join(
        f"{system['name']} {format_number(system['judged'], 3)}"
        + (f" ({system['unjudged']:,} unjudged)" if system["unjudged"] else "")
        for system in evaluation["systems"]
    )
    weighed = next(
        (gate["judgments"] for gate in evaluation["gates"] if (gate.get("judgments") or {}).get("plausible")), None
    )
    prior = ""
    if weighed:
        plausible = weighed["plausible"]
        prior = (
            f"; its gates are weighed over {plausible['draws']:,} plausible gradings of the "
            f"{_documents(plausible['documents'])} of {weighed['candidate']}'s and {weighed['reference']}'s top "
            f"{weighed['depth']} ({_prior_text(weighed)})"
        )
    return (
        f"{label}, the share of each top {depth} the qrels judge (an unjudged document counts as non-relevant): "
        f"{shares}{prior}"
    )


def _deciding(judgments: Mapping[str, Any]) -> str:
    """``84 unjudged documents decide it (66 in monobert's top 10, 21 in monot5's, 3 of them in both)``: each
    document once, as it would be judged."""
    depth = judgments["depth"]
    parts = f"{judgments['candidate_unjudged']:,} in {judgments['candidate']}'s top {depth}"
    if judgments["reference"] is not None:
        parts += f", {judgments['reference_unjudged']:,} in {judgments['reference']}'s"
    if judgments["shared"]:
        parts += f", {judgments['shared']:,} of them in both"
    return f"{_documents(judgments['unjudged'])} decide it ({parts})"


def _corners_disagree(judgments: Mapping[str, Any]) -> bool:
    """The gate's corners do not both hold its verdict as judged: the unjudged documents could change it."""
    return not judgments["optimistic"]["passed"] == judgments["as_judged"] == judgments["pessimistic"]["passed"]


def _weighed(judgments: Mapping[str, Any], counted: bool = True) -> str | None:
    """``passes in 97% of 1,000 plausible gradings of its 84 unjudged documents``, or ``fails in ...`` where it
    passes in at most half of them; ``counted=False``: ``passes in 97% of the plausible gradings of its unjudged
    documents`` (where the counts are said once for the measure, :func:`judged_line`); ``None`` where the gate was
    not weighed over gradings."""
    plausible = judgments.get("plausible")
    if not plausible:
        return None
    passing = plausible["probability"]
    verb, share = ("passes", passing) if passing > 0.5 else ("fails", 1.0 - passing)
    if not counted:
        return f"{verb} in {_rounded_share(share)} of the plausible gradings of its unjudged documents"
    return (
        f"{verb} in {_rounded_share(share)} of {plausible['draws']:,} plausible gradings of its "
        f"{_documents(plausible['documents'])}{predicted_grades_text(plausible)}"
    )


def predicted_grades_text(plausible: Mapping[str, Any]) -> str:
    """How many of a weighed gate's grades were predicted and how far the predictor agrees with people
    (docs/predictions.md): ``, decided with 84 predicted grades (the predictor agrees with people on 78% of 200
    judged documents, κ 0.61, trusted at 0.52)``; empty without a predictions file."""
    predicted = plausible.get("predicted")
    if not predicted:
        return ""
    count = predicted["documents"]
    grades = f"{count:,} predicted grade{'' if count == 1 else 's'}"
    if predicted["agreement"] is None:
        return f", {grades} not used: the predictions file grades no judged document, so nothing measures the predictor"
    measured = (
        f"the predictor agrees with people on {predicted['agreement']:.0%} of {predicted['sample']:,} judged "
        f"documents, κ {predicted['kappa']:.2f}"
    )
    if not predicted["used"]:
        return f", {grades} not used: {measured}, no better than chance"
    verb = "undecided" if plausible.get("decided") is None else "decided"
    return f", {verb} with {grades} ({measured}, trusted at {predicted['trust']:.2f})"


def _prior_text(judgments: Mapping[str, Any]) -> str:
    """``judged documents at these ranks: 73% relevant; an unjudged one is taken to be relevant with 36%``."""
    plausible = judgments["plausible"]
    return (
        f"judged documents at these ranks: {_rounded_share(plausible['judged_relevant'])} relevant; an unjudged one "
        f"is taken to be relevant with {_rounded_share(plausible['relevant'])}"
    )


def _settle(judgments: Mapping[str, Any]) -> str:
    """``; judging about the first 12 documents of `bvtest judge`'s list is expected to settle it``."""
    settle = (judgments.get("plausible") or {}).get("settle")
    if settle is None:
        return ""
    return f"; judging about the first {settle:,} of its documents that `bvtest judge` lists is expected to settle it"


def _corner_sides(judgments: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """Each corner with the run whose unjudged documents it grades and how many that run's top d holds."""
    sides = [("optimistic", judgments["candidate"], judgments["candidate_unjudged"])]
    if judgments["reference"] is not None:
        sides.append(("pessimistic", judgments["reference"], judgments["reference_unjudged"]))
    return sides


def _graded(judgments: Mapping[str, Any], corner: str, system: str, count: int, measure: str) -> str:
    """``the 66 unjudged documents of monobert's top 10``, or, where the corner leaves out documents both top d hold
    that raise the other run's score more, ``64 of the 66 ... (not the 2 that raise monot5's nDCG@10 more)``."""
    graded = judgments[corner]["graded"]
    documents = f"{_documents(count)} of {system}'s top {judgments['depth']}"
    if graded >= count:
        return f"the {documents}"
    other = judgments["reference"] if system == judgments["candidate"] else judgments["candidate"]
    return f"{graded:,} of the {documents} (not the {count - graded:,} that raise {other}'s {measure} more)"


def _corner_outcomes(judgments: Mapping[str, Any], measure: str) -> str:
    """What the gate does at the corners where it differs from its verdict as judged: ``passes if the 66 unjudged
    documents of monobert's top 10 are relevant (grade 3)``."""
    verb = {True: "passes", False: "fails"}
    differing = [
        (judgments[corner]["passed"], _graded(judgments, corner, system, count, measure))
        for corner, system, count in _corner_sides(judgments)
        if judgments[corner]["passed"] != judgments["as_judged"]
    ]
    (passed, documents), *rest = differing
    text = f"{verb[passed]} if {documents} are relevant (grade {judgments['optimistic_grade']})"
    for _, documents in rest:  # both corners differ from the verdict as judged (and so agree)
        text += f", or if {documents} are"
    return text


def undecided_text(gate: Mapping[str, Any]) -> str | None:
    """Why an ``UNDECIDED`` gate is undecided, and what it does to CI (``judgments.undecided``); ``None`` for a
    decided gate."""
    judgments = gate.get("judgments")
    if not judgments or not judgments["undecided"]:
        return None
    as_judged = "passes" if judgments["as_judged"] else "fails"
    effect = (
        "it passes CI with this warning (judgments: {undecided: warn})"
        if gate["passed"]
        else "it fails CI (judgments: {undecided: fail})"
    )
    weighed = _weighed(judgments)
    plausible = judgments.get("plausible")
    how = (
        f"{_corner_outcomes(judgments, gate['measure'])}"
        if weighed is None
        else f"{weighed}, short of the {_rounded_share(plausible['confidence'])} that would decide it"
    )
    return (
        f"UNDECIDED: {_deciding(judgments)}: {gate['measure']} {gate['label']} {as_judged} as judged, but {how}; "
        f"{effect}; `{judge_command(gate)}` lists them to grade{_settle(judgments)}"
    )


def corner_lines(gate: Mapping[str, Any]) -> list[str]:
    """The gate at its two corners of unjudged documents (docs/mathematics.md §10), when its candidate's or its
    reference's top d holds any: what it would be if they were relevant."""
    judgments = gate.get("judgments")
    if not judgments:
        return []
    label, grade = gate["label"], judgments["optimistic_grade"]
    if _corners_disagree(judgments):
        lines = [f"at its corners, with the unjudged documents graded {grade}, it passes at one, fails at the other:"]
    else:
        held = "holds" if judgments["as_judged"] else "fails"
        lines = [
            f"{_deciding(judgments).replace(' decide it', '')} cannot change it: at its corners, with the unjudged "
            f"documents graded {grade}, it {held} as judged:"
        ]
    for corner, system, count in _corner_sides(judgments):
        at = judgments[corner]
        versus = "" if at["reference_value"] is None else f" vs {_float(at['reference_value']):.6g}"
        lines.append(
            f"  {corner}, {_graded(judgments, corner, system, count, gate['measure'])} relevant: {label} "
            f"{_float(at['value']):.6g}{versus}, limit {_float(at['limit']):.6g}: "
            f"{'passes' if at['passed'] else 'fails'}"
        )
    plausible = judgments.get("plausible")
    if plausible:
        drawn = f"{plausible['draws']:,} plausible gradings (seed {plausible['seed']}"
        how = f"pool-bias discount {plausible['discount']:g}; each grading's limits from {plausible['swaps']:,} swaps"
        passes = _rounded_share(plausible["probability"])
        lines.append(
            f"weighed over {drawn}; {_prior_text(judgments)}, {how}): passes in {passes}, decided at "
            f"{_rounded_share(plausible['confidence'])} either way"
        )
    return lines


def judged_only_form(measure: str) -> str | None:
    """The judged-only form of a measure (``nDCG@10`` gives ``nDCG(judged_only=True)@10``: unjudged documents
    removed from the ranking, trec_eval ``-J``); ``None`` where there is none (gdeval's measures, a table's label)."""
    from dataclasses import replace

    from pytest_bvtest.errors import InputError
    from pytest_bvtest.spec.measures import parse_measure

    try:
        parsed = parse_measure(measure)
        if parsed.uses_gdeval or not parsed.takes_judged_only:
            return None
        return str(replace(parsed, judged_only=True))
    except InputError:
        return None


def judge_command(gate: Mapping[str, Any], spec: str | None = None) -> str:
    """``bvtest judge SPEC --run RUN -o judgments.tsv``: the command that lists the unjudged documents deciding a
    gate, naming the candidate's every run file as the command line named it (``--bvtest-run``), none for the
    spec's own."""
    runs = (gate.get("judgments") or {}).get("candidate_runs") or []
    named = "".join(f" --run {shlex.quote(run)}" for run in runs)
    return f"bvtest judge {spec or _spec_of(gate)}{named} -o judgments.tsv"


def unjudged_hint(gate: Mapping[str, Any]) -> str | None:
    """When most of the topics a gate blames lose only as judged (with the candidate's unjudged documents of the top
    d relevant, its score there would reach the comparison's), that, and the judged-only form of the measure."""
    judgments, worst = gate.get("judgments"), gate.get("worst_topics") or []
    if gate["outcome"] not in ("FAIL", "UNDECIDED"):  # a gate that passes has no loss to explain
        return None
    if not judgments or not worst or worst[0].get("candidate_optimistic") is None:
        return None
    if (judgments.get("plausible") or {}).get("decided") == "fail":  # it fails however its documents plausibly grade
        return None
    within = [
        impact
        for impact in worst
        if impact["unjudged"] and _float(impact["candidate_optimistic"]) >= impact["compared"] - _ROUNDING
    ]
    if 2 * len(within) <= len(worst):
        return None
    text = (
        f"{len(within)} of the {len(worst)} topics listed lose only as judged: with the unjudged documents of "
        f"{gate['system']}'s top {judgments['depth']} relevant they would not lose "
        f"({', '.join(impact['topic'] for impact in within)})"
    )
    judged_only = judged_only_form(gate["measure"])
    if judged_only is not None:
        text += (
            f"; {judged_only} scores only the documents that were judged: add it to the spec's measures to see the "
            "change without them"
        )
    return f"{text}; or judge them: {judge_command(gate)}"


def _topic_unjudged(gate: Mapping[str, Any], impact: Mapping[str, Any]) -> str:
    """``; 3 of monobert's top 10 unjudged``: a blamed topic's unjudged documents, where the gate has corners."""
    judgments = gate.get("judgments")
    if not judgments or impact.get("unjudged") is None:
        return ""
    text = f"; {impact['unjudged']} of {gate['system']}'s top {judgments['depth']}"
    if impact.get("compared_unjudged") is not None:
        text += f" and {impact['compared_unjudged']} of {gate['worst_against']}'s"
    return text + " unjudged"


def _undecided_groups(document: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The ``UNDECIDED`` gates of a spec that the same unjudged documents decide the same way (as judged they pass,
    or fail, and CI passes or fails them), by gate id: said once on the first screen, not once per gate (DL-HARD's 11
    undecided gates filled it); a gate alone in its group is not listed."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for gate in _gates(document):
        judgments = gate.get("judgments")
        if gate.get("undecided") and judgments:
            key = (_spec_path(gate), _deciding(judgments), judgments["as_judged"], gate["passed"])
            groups.setdefault(key, []).append(gate)
    return {gate["id"]: gates for gates in groups.values() if len(gates) > 1 for gate in gates}


def undecided_group_text(gates: Sequence[Mapping[str, Any]]) -> str:
    """One warning for several ``UNDECIDED`` gates that the same unjudged documents decide: how many documents, which
    way each gate goes as judged and in CI; each gate's count is in its details (:func:`corner_lines`)."""
    judgments = gates[0]["judgments"]
    deciding = _deciding(judgments).replace(" decide it ", f" decide these {len(gates)} gates ")
    as_judged, otherwise = ("pass", "fail") if judgments["as_judged"] else ("fail", "pass")
    effect = (
        "they pass CI with this warning (judgments: {undecided: warn})"
        if gates[0]["passed"]
        else "they fail CI (judgments: {undecided: fail})"
    )
    shares = [gate["judgments"]["plausible"]["probability"] for gate in gates if gate["judgments"].get("plausible")]
    if len(shares) == len(gates):
        low, high = _rounded_share(min(shares)), _rounded_share(max(shares))
        draws = f"{gates[0]['judgments']['plausible']['draws']:,}"
        passing = low if low == high else f"{low} to {high}"
        settles = [gate["judgments"]["plausible"]["settle"] for gate in gates]
        settle = (
            f"; judging about the first {max(settles):,} of the documents `bvtest judge` lists is expected to settle "
            "them"
            if None not in settles
            else ""
        )
        return (
            f"UNDECIDED: {deciding}: they {as_judged} as judged, and pass in {passing} of {draws} plausible gradings "
            "of them, short of the "
            f"{_rounded_share(judgments['plausible']['confidence'])} that would decide them either way; {effect}"
            f"{settle}"
        )
    return (
        f"UNDECIDED: {deciding}: they {as_judged} as judged, but each would {otherwise} if enough of them are "
        f"relevant (grade {judgments['optimistic_grade']}; each gate's details say how many); {effect}"
    )
