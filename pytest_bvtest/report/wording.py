"""Every sentence a reviewer reads: the words that render a decision, for every report.

The judging layer decides and returns numbers (:mod:`pytest_bvtest.judging.decision`); the JSON session
document (:mod:`~pytest_bvtest.report.jsonreport`) carries them; this module turns them into words: a
gate's headline, its plain sentence and its whole message, each guard's warning, the calibration's
description, the summary counts, notes and titles that the terminal, Markdown, HTML, GitHub annotations
and JUnit messages all show. Every function reads the session document's dictionaries, so a report
rendered by the pytest controller from its workers' payloads says exactly what the command line says.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_bvtest import CANDIDATE_NAME
from pytest_bvtest.errors import short_list
from pytest_bvtest.stats.registry import GAP_LABELS, GAP_TERMS, STATISTICS, TABLE_COLUMNS

TABLE_HEADER = ("system", "role", *(header for _, header in TABLE_COLUMNS), "gates")


OUTCOMES = ("OK", "OK*", "UNDECIDED", "FAIL")


# Topic lists in notes are cut after this many ids: the JSON report has them all.
_LISTED_TOPICS = 5


def format_number(value: float | str | None, decimals: int = 4) -> str:
    """``value`` with ``decimals`` decimals; ``-`` where a statistic is not computed (null); ``inf`` or
    ``-inf`` for the report's ``"Infinity"``/``"-Infinity"``."""
    return "-" if value is None else f"{float(value):.{decimals}f}"


def display_path(path: str) -> str:
    """``path`` relative to the current working directory when it lies inside it, else unchanged."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path


def outcome_counts(gates: Sequence[Mapping[str, Any]]) -> str:
    """``"3 OK, 1 FAIL"`` for a system's gates, ``-`` when it has none; an outcome the reports do not know yet is
    counted under its own name."""
    known = [*OUTCOMES, *dict.fromkeys(gate["outcome"] for gate in gates if gate["outcome"] not in OUTCOMES)]
    counts = [(sum(gate["outcome"] == outcome for gate in gates), outcome) for outcome in known]
    return ", ".join(f"{count} {outcome}" for count, outcome in counts if count) or "-"


def system_rows(evaluation: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row of cells per system in document order, matching :data:`TABLE_HEADER`."""
    rows = []
    for system in evaluation["systems"]:
        gates = [gate for gate in evaluation["gates"] if gate["system"] == system["name"]]
        rows.append(
            (
                system["name"],
                system["role"],
                *(format_number(system[key]) for key, _ in TABLE_COLUMNS),
                outcome_counts(gates),
            )
        )
    return rows


def evaluation_title(evaluation: Mapping[str, Any]) -> str:
    """``spec · measure · n topics · target c``.

    Plus normalisation, grouping and a query-variation MVE form when set.
    """
    settings = evaluation.get("settings") or {}
    parts = [
        display_path(evaluation["spec"]),
        evaluation["measure"],
        f"{len(evaluation['topics'])} topics",
        f"target c = {format_number(evaluation['target']['c'])}",
    ]
    if settings.get("normalize") not in (None, "none"):
        parts.append(f"normalised {settings['normalize']}")
    grouping = settings.get("grouping")
    if grouping:
        text = f"topics grouped by {grouping['by']}, {grouping['size']} per group"
        if "seed" in grouping:
            text += f", {grouping['repeats']} repeats, seed {grouping['seed']}"
        parts.append(text)
    if settings.get("target_system"):
        parts.append(f"target system {settings['target_system']}")
    if settings.get("variance") == "sample":
        parts.append("sample variances (n - 1)")
    if settings.get("zrisk_against") == "target":
        parts.append("ZRisk/GeoRisk against the target")
    method = settings.get("mve_method")
    if method not in (None, "inter-topic"):  # with query variations the MVE column depends on the form
        parts.append(f"MVE {method}")
    return " · ".join(parts)


def tradeoff_text(evaluation: Mapping[str, Any]) -> str:
    tradeoff = evaluation["tradeoff"]
    return (
        f"Bias²/Var tradeoff across {len(evaluation['systems'])} systems: "
        f"Pearson {format_number(tradeoff['pearson'], 2)}, Spearman {format_number(tradeoff['spearman'], 2)}"
    )


def _topic_list(topics: Sequence[str]) -> str:
    return short_list(topics, _LISTED_TOPICS, rest=", ... (+{} more)")


def topic_notes(evaluation: Mapping[str, Any]) -> list[str]:
    """Per system, the evaluated topics its run lacks (scored 0), the query variations it lacks (scored 0
    inside their topic's mean) and the run topics outside the evaluated topics (ignored)."""
    notes = []
    total = len(evaluation["topics"])
    constant = evaluation["target"].get("constant_topics") or 0
    settings = evaluation.get("settings") or {}
    if constant and settings.get("normalize") == "group-target-ratio" and settings.get("grouping"):
        notes.append(
            f"{constant} of {total} topics lie in groups on which every system has the same score: "
            "each such group's ratio is 1 for all"
            + (" (averaged over the groupings)" if settings["grouping"].get("by") != "difficulty" else "")
        )
    elif constant:
        notes.append(f"{constant} of {total} topics have the same score for every system: normalised to 1 for all")
    for system in evaluation["systems"]:
        missing = system.get("missing_topics") or []
        ignored = system.get("ignored_topics") or []
        if missing:
            notes.append(
                f"{system['name']} has no ranking for {len(missing)} of {total} topics (scored 0): "
                f"{_topic_list(missing)}"
            )
        missing_queries = system.get("missing_queries") or []
        if missing_queries:
            notes.append(
                f"{system['name']} has no ranking for {len(missing_queries)} query variation(s), each scored 0 "
                f"in its topic's mean over variations: {_topic_list(missing_queries)}"
            )
        if ignored:
            topics = "topic" if len(ignored) == 1 else "topics"
            notes.append(
                f"{system['name']} ranked {len(ignored)} {topics} outside the evaluated topics (unjudged, or no "
                f"relevant document; ignored): {_topic_list(ignored)}"
            )
    # the notes a reviewer reads first (no change, a big improvement) are said once, on the first screen
    notes += [
        guard["message"]
        for guard in evaluation.get("guards") or []
        if guard["severity"] == "note" and guard["kind"] not in FIRST_SCREEN_NOTES
    ]
    return notes


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


def guard_warnings(evaluation: Mapping[str, Any]) -> list[str]:
    """The guards that warn not to trust this measure's green gates (they are ``OK*``)."""
    return [guard["message"] for guard in evaluation.get("guards") or [] if guard["severity"] in ("warning", "failure")]


def gate_warnings(evaluation: Mapping[str, Any], gate: Mapping[str, Any]) -> list[str]:
    """A gate's own reasons for ``OK*`` that its measure's guards (:func:`guard_warnings`) do not already give:
    passed within noise, or a calibrated limit that cannot fail."""
    listed = set(guard_warnings(evaluation))
    own = [gate[key] for key in ("warning", "undecided") if gate.get(key)]
    return own + [message for message in gate.get("guards") or [] if message not in listed]


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


#: Baselines listed in the comparison block; the JSON report has them all.
MAX_COMPARISONS = 10


def comparison_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """The candidate's mean against each baseline: difference, win/tie/loss, paired tests with Holm."""
    comparisons = evaluation.get("comparisons") or []
    if not comparisons:
        return []
    reference = [c for c in comparisons if c["baseline"] == evaluation.get("reference")]
    shown = (reference + [c for c in comparisons if c not in reference])[:MAX_COMPARISONS]
    width = max(len(comparison["baseline"]) for comparison in shown)
    first = comparisons[0]
    lines = [
        f"{evaluation['candidate']} vs baselines on the mean (paired over topics; Holm over {len(comparisons)}; "
        f"randomization: {first['permutations']:,} sign flips, seed {first['seed']}):"
    ]
    for comparison in shown:
        lines.append(
            f"  {comparison['baseline']:<{width}}  {comparison['difference']:+.4f}  "
            f"W/T/L {comparison['wins']}/{comparison['ties']}/{comparison['losses']}  "
            f"t-test p {format_number(comparison['p_t'])} (Holm {format_number(comparison['p_t_holm'])})  "
            f"randomization p {format_number(comparison['p_randomization'])} (Holm "
            f"{format_number(comparison['p_randomization_holm'])})"
        )
    if len(comparisons) > len(shown):
        lines.append(f"  ... and {len(comparisons) - len(shown)} more baselines in the JSON report")
    return lines


def simulation_lines(simulation: Mapping[str, Any]) -> list[str]:
    """The per-topic simulation's averaged Bias² and Var per system (docs/mathematics.md §3e)."""
    rows = [("system", "Bias²", "Var")] + [
        (system["name"], format_number(system["bias2"]), format_number(system["var"]))
        for system in simulation["systems"]
    ]
    width = max(len(row[0]) for row in rows)
    lines = [
        f"per-topic simulation ({simulation['measure']}, {simulation['samples']} samples, seed {simulation['seed']}), "
        f"averaged over {len(simulation['topics'])} topics:"
    ]
    lines += [f"  {name:<{width}}  {bias2:>7}  {var:>7}" for name, bias2, var in rows]
    return lines


#: Topics named at each end of the GAWM discernment order.
DISCERNING_TOPICS = 3


GAP_TITLE = "Gap to the target, rho = x_T - x per topic: Var(rho) = Var(x_T) + Var(x) - 2 Cov(x_T, x)"


#: Above this many systems the gap table keeps the candidate and the reference (the JSON report has every system).
GAP_TABLE_SYSTEMS = 12


def gap_rows(evaluation: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The gap decomposition's table (docs/mathematics.md §3a): a header, then one row per system (the candidate and
    the reference alone above :data:`GAP_TABLE_SYSTEMS` systems), the terms in the catalogue's order."""
    header = ("system", *(GAP_LABELS[term] for term in GAP_TERMS))
    systems = evaluation["systems"]
    if len(systems) > GAP_TABLE_SYSTEMS and any(system["role"] != "baseline" for system in systems):
        systems = [system for system in systems if system["role"] != "baseline"]
    rows = [(system["name"], *(format_number(system["gap"][term]) for term in GAP_TERMS)) for system in systems]
    return [header, *rows]


def mve_reordering_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """MVE's note when its variance term cannot move the ranking at the spec's alpha (docs/mathematics.md §5): MVE
    then ranks the systems as their mean term does, and says at which alpha the variance term would first reorder
    two of them; over query variations, why it is so weak."""
    mve = evaluation.get("mve") or {}
    alpha = mve.get("alpha") or 0.0
    if len(evaluation["systems"]) < 2 or not alpha:
        return []
    reordering = mve.get("reordering")
    if reordering is not None and abs(float(reordering["alpha"])) <= abs(alpha):
        return []
    first = (
        "never, on that side of 0"
        if reordering is None
        else f"first at alpha {format_number(reordering['alpha'])} ({' and '.join(reordering['systems'])})"
    )
    weaker = (
        ""
        if mve["form"] == "inter-topic"
        else f"; over query variations it sums w_t² var_t, with {len(evaluation['topics'])} equally weighted topics "
        f"{len(evaluation['topics'])} times weaker than the mean term's w_t mu_t"
    )
    return [
        f"MVE ({mve['form']}) at alpha {alpha:g} ranks the systems as their mean term does: its variance "
        f"term reorders two of them {first}{weaker}"
    ]


def analysis_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """GAWM's most and least discerning topics, the rankings' agreement, MVE's note when its variance term cannot move
    the ranking, and the MVE alpha sweep's flip."""
    lines = []
    fixed_point = evaluation.get("gawm")
    if fixed_point and len(evaluation["topics"]) > 1:
        order = sorted(range(len(evaluation["topics"])), key=lambda j: -float(fixed_point["topic_weights"][j] or 0.0))
        count = min(DISCERNING_TOPICS, len(order) // 2)
        most = ", ".join(evaluation["topics"][j] for j in order[:count])
        least = ", ".join(evaluation["topics"][j] for j in reversed(order[-count:]))
        state = (
            f"converged in {fixed_point['iterations']} iterations"
            if fixed_point["converged"]
            else f"NOT converged after {fixed_point['iterations']} iterations"
        )
        lines.append(f"GAWM (q = {fixed_point['q']:g}, {state}): most discerning topics {most}; least {least}")
    rankings = evaluation.get("rankings")
    if rankings:
        parts = [
            f"{STATISTICS[item['statistic']].label} Kendall {format_number(item['kendall_tau'], 2)}, "
            f"tau_AP {format_number(item['tau_ap'], 2)}"
            for item in rankings["agreements"]
        ]
        lines.append(f"rankings against {STATISTICS[rankings['against']].label}: " + "; ".join(parts))
    mve = evaluation.get("mve") or {}
    lines += mve_reordering_lines(evaluation)
    sweep = mve.get("sweep")
    reference = evaluation.get("reference")
    if sweep and evaluation.get("candidate") and reference in sweep["flips"]:
        alphas = sweep["alphas"]
        flip = sweep["flips"][reference]
        where = "never (equal variances)" if flip is None else f"at alpha {format_number(flip)}"
        lines.append(
            f"MVE ({mve['form']}) over alpha {alphas[0]:g}..{alphas[-1]:g}: {evaluation['candidate']} "
            f"and {reference} swap places {where}"
        )
    return lines


#: The topics with the largest run-to-run spread a system's line names.
SPREAD_TOPICS = 3


def run_spread_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """One line per system given as several runs: their means, how far they differ, the topics they differ on
    most, and what the gates make of it (docs/mathematics.md §7, "Run-to-run noise")."""
    lines = []
    for system in evaluation["systems"]:
        runs = system.get("runs")
        if not runs:
            continue
        means = [float(value) for value in runs["run_means"] if value is not None]
        order = sorted(range(len(evaluation["topics"])), key=lambda j: -float(runs["topic_sd"][j] or 0.0))
        most = ", ".join(
            f"{evaluation['topics'][j]} ({format_number(runs['topic_sd'][j], 3)})"
            for j in order[:SPREAD_TOPICS]
            if float(runs["topic_sd"][j] or 0.0) > 0
        )
        lines.append(
            f"{system['name']}: {runs['count']} runs, {evaluation['measure']} means "
            f"{format_number(min(means))} to {format_number(max(means))} (sd {format_number(runs['sd_of_means'])}); "
            f"per topic sd {format_number(runs['mean_topic_sd'])} on average"
            + (f", most on {most}" if most else ", none on any topic")
            + "; its scores are the mean of its runs"
        )
    if lines:
        lines.append(
            "the null of no change adds the engine's run-to-run shift, estimated from the runs, to every swap: that "
            "noise alone fails a calibrated gate no more often than its false-alarm rate"
        )
    return lines


def _compares_already(gate: Mapping[str, Any]) -> bool:
    """The gate's statistic already compares the candidate with its reference (TRisk, URisk, ...): its value is no
    level of its own to subtract the reference's from."""
    statistic = STATISTICS.get(gate["statistic"])
    return statistic is not None and statistic.needs_reference and gate.get("reference_value") is None


def _typical(gate: Mapping[str, Any]) -> float | None:
    return _float((gate.get("calibration") or {}).get("typical"))


def delta_text(gate: Mapping[str, Any]) -> str:
    """``+0.0105 (worse)``: the candidate's change, and whether it is for the better or the worse.

    The change is candidate minus reference; for a statistic that already compares the two (TRisk, URisk), it is the
    change from what an equal-quality change typically gets (the null's median: with losses weighted that is below
    0, so a negative TRisk alone is no loss), and ``-`` without a null. The word is the change's verdict in the
    statistic's own direction (a lower Var is better), so a reader need not know which way each statistic points;
    whether the gate passes is the limit's call.
    """
    if _compares_already(gate):
        typical = _typical(gate)
        delta = None if typical is None else _float(gate["value"]) - typical
    else:
        delta = _float(gate.get("delta"))
    if delta is None or math.isnan(delta):
        return "-"
    if not math.isfinite(delta) or abs(delta) <= _ROUNDING:
        return f"{delta:+.4g}" if abs(delta) > _ROUNDING else "0 (no change)"
    better = (delta > 0) == gate.get("higher_is_better", True)
    return f"{delta:+.4g} ({'better' if better else 'worse'})"


def reference_text(gate: Mapping[str, Any]) -> str:
    """What a gate's value is compared with: ``0.0706 production``; for a statistic that already compares the two,
    ``-1.12 equal change`` (the null's median), else ``against production``; ``-`` without a reference."""
    if not gate.get("reference"):
        return "-"
    if gate.get("reference_value") is not None:
        return f"{figure(gate['reference_value'], gate['value'])} {gate['reference']}"
    typical = _typical(gate)
    if _compares_already(gate) and typical is not None:
        return f"{figure(typical, gate['value'])} equal change"
    return f"against {gate['reference']}"


def limit_cell(gate: Mapping[str, Any]) -> str:
    """``<= 0.0839``; ``none can fail`` for a calibrated limit that no equal-quality change crosses (the null is too
    coarse: its number would suggest a check that is not made), ``undefined`` for a NaN one."""
    if gate.get("cannot_fail"):
        return "none can fail"
    if gate.get("limit") is None:
        return "undefined"
    return f"{_side(gate)} {figure(gate['limit'], gate['value'])}"


def interval_text(gate: Mapping[str, Any]) -> str:
    """``candidate - reference [-0.41, 0.02] 95%, seed 0``, or ``-`` for a gate without a bootstrap interval."""
    interval = gate.get("interval")
    if interval is None:
        return "-"
    what = "candidate - reference" if gate.get("reference_value") is not None else "candidate"
    return (
        f"{what} [{figure(interval['low'])}, {figure(interval['high'])}] "
        f"{interval['confidence']:.0%}, seed {interval['seed']}"
    )


#: The columns of the table of every gate, each cell rendered by :func:`gate_cells`.
GATE_COLUMNS = (
    "outcome",
    "gate",
    "value",
    "reference",
    "change",
    "limit",
    "rule",
    "false alarm",
    "as bad",
    "mde",
    "interval",
)

#: How the table of every gate heads its columns.
GATE_HEADERS = {
    "outcome": "outcome",
    "gate": "gate",
    "value": "value",
    "reference": "compared with",
    "change": "change",
    "limit": "limit",
    "rule": "rule",
    "false alarm": "false alarm",
    "as bad": "equal change as bad",
    "mde": "MDE (all / 10%)",
    "interval": "bootstrap interval",
}


def gate_cells(document: Mapping[str, Any], gate: Mapping[str, Any]) -> dict[str, str]:
    """A gate's cells in the table of every gate (:data:`GATE_COLUMNS`): outcome, name, value, what it is compared
    with, the change (better or worse), the limit and the rule that set it, the gate's own false-alarm rate (how
    often an equal-quality change fails it), how often an equal-quality change is as bad as the candidate, and the
    bootstrap interval."""
    calibration = gate.get("calibration") or {}
    return {
        "outcome": gate["outcome"],
        "gate": gate_name(document, gate),
        "value": figure(gate["value"], gate.get("limit"), gate.get("reference_value")),
        "reference": reference_text(gate),
        "change": delta_text(gate),
        "limit": limit_cell(gate),
        "rule": gate.get("rule") or "-",
        "false alarm": "-" if calibration.get("rate") is None else percent(calibration["rate"]),
        "as bad": "-" if calibration.get("p_value") is None else percent(calibration["p_value"]),
        "mde": power_cell(gate),
        "interval": interval_text(gate),
    }


def gate_table_columns(gates: Sequence[Mapping[str, Any]], *, rule: bool = True) -> list[str]:
    """The columns of :data:`GATE_COLUMNS` that some gate fills (no empty interval or rate column)."""
    columns = [column for column in GATE_COLUMNS if rule or column != "rule"]
    if not any(gate.get("calibration") for gate in gates):
        columns = [column for column in columns if column not in ("false alarm", "as bad")]
    if not any(gate.get("interval") for gate in gates):
        columns.remove("interval")
    if not any(gate.get("power") and not gate["power"].get("skipped") for gate in gates):
        columns.remove("mde")
    return columns


def calibration_note(document: Mapping[str, Any]) -> str | None:
    """How the false-alarm rates of the gate table were drawn: ``false alarm: how often an equal-quality change
    fails the gate (10,000 swaps with production, seed 0); equal change as bad: ...``."""
    drawn = []
    for gate in _gates(document):
        calibration = gate.get("calibration")
        if calibration:
            how = (
                f"all {calibration['swaps']:,} swaps with {calibration['reference']}"
                if calibration["exact"]
                else f"{calibration['swaps']:,} swaps with {calibration['reference']}, seed {calibration['seed']}"
            )
            drawn.append(how)
    if not drawn:
        return None
    return (
        "false alarm: how often an equal-quality change (the candidate's and the reference's scores swapped on "
        "random topics) fails the gate at its limit; equal change as bad: how often it is at least as bad as the "
        f"candidate (the gate's one-sided p-value); {'; '.join(dict.fromkeys(drawn))}"
    )


def blame_rows(gate: Mapping[str, Any]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The blamed topics of a gate as a header and rows: scores, their difference, each topic's share.

    The share column is left out where the topics were ranked by their raw loss (no per-topic split).
    """
    worst = gate.get("worst_topics") or []
    against = gate.get("worst_against") or "the comparison"
    with_text = any(impact.get("text") for impact in worst)
    with_share = gate.get("blame_by", "contribution") == "contribution" and any(
        impact.get("contribution") is not None for impact in worst
    )
    label = gate.get("label") or gate["statistic"]
    # where the gate has corners: each topic's unjudged documents in the two top d (docs/mathematics.md §10)
    depth = (gate.get("judgments") or {}).get("depth")
    unjudged = [] if depth is None or not worst or worst[0].get("unjudged") is None else [gate["system"]]
    if unjudged and worst[0].get("compared_unjudged") is not None:
        unjudged.append(against)
    header = (
        "topic",
        *(["query"] if with_text else []),
        gate["system"],
        against,
        f"{label} term Δ" if gate.get("blame_by") == "term difference" else "score Δ",
        *([f"moves {label} by"] if with_share else []),
        *(f"unjudged in {name}'s top {depth}" for name in unjudged),
    )
    rows = [
        (
            impact["topic"],
            *([impact.get("text") or ""] if with_text else []),
            format_number(impact["candidate"]),
            format_number(impact["compared"]),
            f"{impact['delta']:+.4f}",
            *(
                [
                    format_number(impact["contribution"])
                    if impact["contribution"] is None
                    else f"{float(impact['contribution']):+.4g}"
                ]
                if with_share
                else []
            ),
            *(str(impact[key]) for key in ("unjudged", "compared_unjudged")[: len(unjudged)]),
        )
        for impact in worst
    ]
    return header, rows


def blame_heading(gate: Mapping[str, Any]) -> str:
    """What the table of :func:`blame_rows` lists: by each topic's share of the change, by term, or by raw loss."""
    label = gate.get("label") or gate["statistic"]
    against = gate.get("worst_against") or "the comparison"
    worst = gate.get("worst_topics") or []
    basis = gate.get("blame_by", "contribution")
    if basis == "raw loss" or (worst and worst[0].get("contribution") is None):
        return f"Topics that lost most against {against} ({label} has no per-topic split here):"
    if basis == "term difference":
        return f"Topics whose per-topic {label} grew most against {against} (the simulation's per-topic terms):"
    if basis == "score difference":
        return f"Topics that lost most against {against}:"
    return f"Topics that moved {label} most the wrong way (each topic's share of the change against {against}):"


# --- a gate ---------------------------------------------------------------------------------------------------

#: Up to this much past the limit is rounding, and the gate passes (as :data:`pytest_bvtest.judging.limits.TOLERANCE`).
_ROUNDING = 1e-12


def percent(rate: float | None) -> str:
    """``4.99%`` (three significant digits); ``undefined`` for a NaN or missing rate."""
    return "undefined" if rate is None or math.isnan(float(rate)) else f"{float(rate) * 100:.3g}%"


def short_number(value: float, other: float | None = None) -> str:
    """``value`` with 3 significant digits, more (up to 6) when needed to tell it from ``other``."""
    for digits in range(3, 7):
        text = f"{value:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return text


def _float(value: float | str | None) -> float | None:
    """A number of the document (``"Infinity"`` and ``"-Infinity"`` included) as a float; ``None`` stays."""
    return None if value is None else float(value)


def rule_text(bound: str | None, false_alarm: float | None) -> str:
    """The gate's limit as the spec wrote it: ``max_increase 5%``, ``false_alarm 5%``, or both."""
    calibrated = None if false_alarm is None else f"false_alarm {percent(false_alarm)}"
    return " + ".join(text for text in (bound, calibrated) if text)


def calibration_text(gate: Mapping[str, Any]) -> str:
    """``false-alarm rate 4.9% (10,000 swaps with production, seed 0)``: how often an equal-quality change fails
    this gate at its limit; ``family-wise`` when its limit shares its ``false_alarm`` with other gates (the rate of
    them together is said once, by :func:`sure_lines`)."""
    calibration = gate["calibration"]
    drawn = (
        f"all {calibration['swaps']:,} swaps with {calibration['reference']}"
        if calibration["exact"]
        else f"{calibration['swaps']:,} swaps with {calibration['reference']}, seed {calibration['seed']}"
    )
    runs = calibration.get("runs")
    if runs:
        drawn += f"; engine noise from {runs['candidate']} and {runs['reference']} runs"
    family = calibration.get("family")
    shared = (
        ""
        if not family
        else f", family-wise with {family['gates']} gates at false_alarm {percent(family['false_alarm'])} together"
    )
    return f"false-alarm rate {percent(_float(calibration['rate']))}{shared} ({drawn})"


def _verdict_word(gate: Mapping[str, Any]) -> str:
    if gate.get("outcome") == "UNDECIDED":
        return "UNDECIDED"
    if not gate["passed"]:
        return "FAILED"
    if gate.get("within_noise"):
        return "passed within noise"
    return "passed with a warning" if gate_reasons(gate) else "passed"


def undefined_text(gate: Mapping[str, Any]) -> str | None:
    """Which number of a gate is undefined and why that fails it, or ``None`` (docs/mathematics.md §7)."""
    label, undefined = gate["label"], gate.get("undefined")
    if undefined == "value":
        return f"{gate['system']}'s {label} is NaN: the statistic is undefined on these per-topic scores"
    if undefined == "unconverged":
        return (
            f"{label}'s fixed point was not reached within its iterations, so {gate['system']}'s {label} "
            f"{_float(gate['value']):.6g} is not a value to judge"
        )
    if undefined == "reference_value":
        return f"{gate['reference']}'s {label} is NaN, so the limit relative to it is undefined"
    if undefined == "null":
        return f"{label} is NaN on some swaps of the null of no change, so the calibrated limit is undefined"
    if undefined == "limit":
        return f"the limit of {label} is NaN"
    return None


def judged_text(gate: Mapping[str, Any]) -> str:
    """What the gate judges: ``nDCG@10 Mean``, or on one segment ``nDCG@10 Mean on segment tail (12 topics)``."""
    segment = gate.get("segment")
    where = "" if not segment else f" on segment {segment['name']} ({segment['topics']} topics)"
    return f"{gate['measure']} {gate['label']}{where}"


def headline(gate: Mapping[str, Any]) -> str:
    """The first line of a gate's message: verdict, value, the rule and its limit, the margin, the calibration."""
    verdict = _verdict_word(gate)
    undefined = undefined_text(gate)
    if undefined is not None:
        never = "a gate never passes on it" if gate.get("undefined") == "unconverged" else "a gate never passes on NaN"
        return f"{judged_text(gate)} {verdict}: undefined: {undefined}; {never}"
    versus = ""
    if gate["reference"] is not None:
        versus = (
            f" against {gate['reference']}"
            if gate["reference_value"] is None
            else f" vs {gate['reference']} {_float(gate['reference_value']):.6g}"
        )
    relation = "<=" if gate["upper"] else ">="
    excess = _float(gate["excess"])
    # up to the rounding tolerance past the limit the gate passes: its headroom is 0, not "past the limit by
    # 5.55e-17" (a pass within noise is past it for real); max(0.0, -excess): never "-0"
    past = excess > _ROUNDING or (excess > 0 and not gate["passed"])
    margin = f"past the limit by {excess:.6g}" if past else f"headroom {max(0.0, -excess):.6g}"
    judgments = gate.get("judgments")
    if judgments and _corners_disagree(judgments):
        # where the value stands as judged: past its limit also when it passes within noise (OK* as judged)
        past = excess > _ROUNDING or (excess > 0 and not judgments["as_judged"])
        margin = (
            f"past the limit by {excess:.6g} as judged; " if past else f"headroom {max(0.0, -excess):.6g} as judged; "
        )
        weighed = _weighed(judgments)
        margin += _deciding(judgments) if weighed is None or judgments["undecided"] else weighed
        if weighed is not None and judgments["undecided"]:
            margin += f"; {weighed}"
    if _failing_guard(gate) is not None:
        margin += f"; fails: {_failing_guard(gate)['kind'].replace('_', ' ')}"
    rule = f"bound {gate['rule']}" if gate["bound"] is not None else gate["rule"]
    calibration = f"; {calibration_text(gate)}" if gate.get("calibration") else ""
    typical = _typical(gate)
    if _compares_already(gate) and typical is not None:
        versus += f" (an equal-quality change: {typical:.6g})"
    # a limit no equal-quality change crosses is no check: its number is not printed (the warning says why)
    limit = (
        f"{rule} gives no limit that can fail"
        if gate.get("cannot_fail")
        else f"{rule} requires {relation} {_float(gate['limit']):.6g}; {margin}"
    )
    value = f"{gate['system']} {_float(gate['value']):.6g}{versus}"
    return f"{judged_text(gate)} {verdict}: {value}; {limit}{calibration}"


def _failing_guard(gate: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The guard that fails the gate whatever its numbers say (nothing judged), or ``None``."""
    return next((guard for guard in gate.get("guard_facts") or [] if guard["severity"] == "failure"), None)


def within_noise_text(gate: Mapping[str, Any]) -> str | None:
    """Why a gate past its bound passed (``OK*``): its bootstrap interval reaches the safe side."""
    if not gate.get("within_noise"):
        return None
    interval = gate["interval"]
    return (
        f"point estimate past the bound by {_float(gate['excess']):.4g}, but the {interval['confidence']:.0%} "
        f"interval [{_float(interval['low']):.4g}, {_float(interval['high']):.4g}] reaches the safe side: "
        "within noise (OK*)"
    )


def cannot_fail_text(gate: Mapping[str, Any]) -> str | None:
    """Why a calibrated limit that no swap crosses cannot fail: the null is too coarse for the rate asked.

    With ``2**n`` swaps for few topics, or few topics where the two systems differ, the null's most extreme
    value holds more than ``P`` of the swaps; the ``P``-quantile is then that extreme, which no equal change
    crosses, and neither does a worse one that sits on it (docs/mathematics.md §7).
    """
    coarse = gate.get("cannot_fail")
    if not coarse:
        return None
    label, calibration = gate["label"], gate["calibration"]
    partner = calibration["reference"]
    family = calibration.get("family")
    level = (
        f"false_alarm {percent(calibration['false_alarm'])}"
        if not family
        else f"the family's per-gate level {percent(family['level'])}"
    )
    drawn = f"all {coarse['swaps']:,} swaps" if coarse["exact"] else f"{coarse['swaps']:,} swaps"
    smallest = percent(coarse["smallest_rate"])
    return (
        f"the null of no change is too coarse for {level}: its most extreme {label} already holds "
        f"{smallest} of {drawn} with {partner} (too few topics, or too few that differ), so the "
        f"limit sits on it and this gate cannot fail; add topics, or raise false_alarm to at least {smallest}"
    )


# --- power (docs/mathematics.md §9) ---------------------------------------------------------------------------


def about(count: int) -> str:
    """``180`` for 183, ``1,200`` for 1,234: a count to two significant digits, for an estimate."""
    if count < 100:
        return str(count)
    digits = len(str(count)) - 2
    return f"{round(count, -digits):,}"


def model_words(model: str, power: Mapping[str, Any]) -> str:
    """Where a regression model drops the score: ``on every query``, ``on 5 of the 50 queries``."""
    if model == "uniform":
        return "on every query"
    return f"on {power['harmed']:,} of the {power['topics']:,} queries (10%)"


def _drop(value: float) -> str:
    return f"{value:.3g}"


def power_cell(gate: Mapping[str, Any]) -> str:
    """The gate's MDE under each model for a table cell: ``0.0716 / never`` (every query / 10% of them); ``-``
    where power was not measured."""
    power = gate.get("power")
    if not power or power.get("skipped"):
        return "-"
    return " / ".join("never" if m["mde"] is None else _drop(float(m["mde"])) for m in power["models"])


def power_legend(document: Mapping[str, Any]) -> str | None:
    """What the tables' MDE column says, with the draws behind it; ``None`` when no gate has a power."""
    powers = [
        gate["power"]
        for evaluation in document["evaluations"]
        for gate in evaluation["gates"]
        if gate.get("power") and not gate["power"].get("skipped")
    ]
    if not powers:
        return None
    seeds = sorted({power["seed"] for power in powers})
    draws = sorted({power["draws"] for power in powers})
    return (
        f"MDE (all / 10%): the smallest drop in a query's score that each gate catches {powers[0]['level']:.0%} of the "
        f"time, on every query / on 10% of them ({'/'.join(f'{d:,}' for d in draws)} seeded draws of an equal-quality "
        "change made worse, each with the limits this check would set for it, seed "
        f"{'/'.join(str(seed) for seed in seeds)}); never: not even a drop to the measure's minimum. A green gate says "
        "nothing about smaller drops."
    )


def power_lines(document: Mapping[str, Any]) -> list[str]:
    """What a green is worth against a worse change, once per spec, measure and segment: the smallest drop on every
    query, and on 10% of the queries, that fails the check at least 80% of the time, with the gate that catches it
    (the check fails when any gate does, so at least as often as its most powerful gate: docs/mathematics.md §9)."""
    lines = []
    for evaluation in document["evaluations"]:
        groups: dict[str | None, list[Mapping[str, Any]]] = {}
        for gate in evaluation["gates"]:
            if gate.get("power") and not gate["power"].get("skipped"):
                groups.setdefault((gate.get("segment") or {}).get("name"), []).append(gate)
        for segment, gates in groups.items():
            where = f", segment {segment}" if segment is not None else ""
            head = f"Power ({display_path(evaluation['spec'])}, {evaluation['measure']}{where}): "
            lines.append(head + _check_power(gates))
    return lines


def _check_power(gates: Sequence[Mapping[str, Any]]) -> str:
    """The smallest drop under each model that some gate of ``gates`` (on the same topics) catches, in words."""
    power = gates[0]["power"]
    caught, missed = [], []
    for model in ("uniform", "few"):
        found = [
            (float(each["mde"]), gate["label"])
            for gate in gates
            for each in gate["power"]["models"]
            if each["model"] == model and each["mde"] is not None
        ]
        where = model_words(model, power).removesuffix(" (10%)")
        if found:
            drop, label = min(found)
            caught.append(f"{'a drop' if not caught else 'one'} of {_drop(drop)} {where} ({label})")
        else:
            missed.append(where)
    level = f"{power['level']:.0%} of the time"
    if not caught:
        return f"no drop {' or '.join(missed)} fails this check {level}, however large."
    text = f"{' or '.join(caught)} fails this check at least {level}; smaller drops can pass"
    return text + (f", and so can a drop {' or '.join(missed)}, however large." if missed else ".")


#: What ``bvtest calibrate``'s aim columns say (docs/mathematics.md §9 "Topics needed").
AIM_COLUMNS_NOTE = (
    "catches the aim: how often each gate fails a drop of the asked size (--detect, else the gate's detect:); topics "
    "needed: about how many topics like these it needs to catch it 80% of the time, an estimate (the mean by its "
    "closed form, the others by resampling topics); no number: more topics do not get there (its bound lets such a "
    "drop pass, or the statistic does not move under it)."
)


def power_text(gate: Mapping[str, Any]) -> str | None:
    """The gate's power in a sentence: the drop it catches under each model, or why it catches none
    (docs/mathematics.md §9); ``None`` when the spec leaves power out."""
    power = gate.get("power")
    if not power:
        return None
    if power.get("skipped"):
        return f"power not measured: {power['skipped']}"
    level, measure, label = power["level"], gate["measure"], gate["label"]
    parts = []
    for each in power["models"]:
        where = model_words(each["model"], power)
        if each["mde"] is not None and float(each["mde"]) == 0:
            parts.append(f"fails most equal-quality changes already, so any drop {where}")
        elif each["mde"] is not None:
            error = f" (±{float(each['error']):.1g})" if each.get("error") is not None else ""
            parts.append(
                f"catches a drop of {_drop(float(each['mde']))}{error} in {measure} {where} {level:.0%} of the time"
            )
        elif not each["moves"]:
            parts.append(f"cannot see a drop {where}: {label} does not get worse under it")
        else:
            parts.append(
                f"misses a drop of any size {where} (at most {percent(_float(each['power']))} of the time, even "
                "down to the measure's minimum)"
            )
    partner = f" swapping with {power['reference']}" if power["reference"] else ""
    method = ", sums drawn from their Gaussian" if power["method"] == "gaussian" else ""
    swaps = power.get("swaps")
    family = power.get("family") or 1
    limits = (
        ""
        if swaps is None
        else f", each with its own limit{'s' if family > 1 else ''} from {swaps:,} swaps of its null"
        + (f" and its family of {family} gates" if family > 1 else "")
    )
    return f"power: {'; '.join(parts)} ({power['draws']:,} draws{partner}{limits}, seed {power['seed']}{method})"


def missed_aim_text(gate: Mapping[str, Any]) -> str | None:
    """Why a passing gate with a ``detect:`` aim is ``OK*``: the drop it would miss, and the topics it would need."""
    if not gate.get("missed_aim"):
        return None
    power = gate["power"]
    aim = power["aim"]
    drop = _drop(aim["drop"])
    if aim["relative"] is not None:
        drop += f" ({aim['relative'] * 100:g}% of {power['reference'] or 'the reference'}'s mean)"
    where = model_words(aim["model"], power) if aim["model"] == "uniform" else "on 10% of the queries"
    text = (
        f"this gate would miss a drop of {drop} in {gate['measure']} {where} on {aim['topics']:,} topics: it "
        f"catches it {percent(_float(aim['power']))} of the time, not {aim['level']:.0%}"
    )
    if aim["topics_needed"] is not None:
        return f"{text}; it needs about {about(aim['topics_needed'])} topics like these (an estimate)"
    return (
        f"{text}; more topics like these would not get there (its bound lets such a drop pass, or {gate['label']} "
        "does not move under it)"
    )


def gate_reasons(gate: Mapping[str, Any]) -> list[str]:
    """The warnings a gate carries besides a pass within noise: its measure's guards that concern it, then its
    own (a calibrated limit that cannot fail, a ``detect:`` aim it would miss)."""
    own = [text for text in (cannot_fail_text(gate), missed_aim_text(gate)) if text]
    return [guard_message(guard) for guard in gate.get("guard_facts") or []] + own


def blame_title(gate: Mapping[str, Any]) -> str:
    """What the list of blamed topics is: by contribution to the statistic, or by raw loss. A simulation
    statistic's topics show its per-topic terms (docs/mathematics.md §3e), not scores."""
    label, against = gate["label"], gate["worst_against"]
    if gate["blame_by"] == "raw loss":
        return f"topics that lost most against {against} ({label} has no per-topic split)"
    if gate["blame_by"] == "term difference":
        return f"topics whose per-topic {label} grew most (per-topic terms vs {against})"
    return f"topics that moved {label} most the wrong way (scores vs {against})"


def sentence(gate: Mapping[str, Any]) -> str:
    """One sentence for a reader who never heard of the statistic: what the gate protects, what happened.

    The wording is the statistic's own (:class:`~pytest_bvtest.stats.registry.Wording`), e.g. "Quality varies
    more from query to query or sits further below the best achievable than in production (Bias²+Var 0.0879 vs
    0.0774, limit 0.0812)."
    """
    statistic = STATISTICS[gate["statistic"]]
    wording = statistic.wording
    assert wording is not None, f"{gate['statistic']} has no wording"
    reference = gate["reference"] or "the reference"
    undefined = undefined_text(gate)
    if undefined is not None:
        never = "a gate never passes on it" if gate.get("undefined") == "unconverged" else "a gate never passes on NaN"
        return f"{statistic.label} cannot be judged: {undefined}; {never}."
    value, limit = _float(gate["value"]), _float(gate["limit"])
    segment = gate.get("segment")
    numbers = (
        f"{'' if not segment else 'segment ' + segment['name'] + ': '}{statistic.label} {short_number(value, limit)}"
    )
    if gate["reference_value"] is not None:
        numbers += f" vs {short_number(_float(gate['reference_value']), limit)}"
    if gate.get("cannot_fail"):
        numbers += ", no limit that can fail"
    else:
        numbers += f", limit {short_number(limit, value)}"
        if gate.get("calibration"):
            numbers += f" at a {percent(_float(gate['calibration']['rate']))} false-alarm rate"
    than = f" than in {gate['reference']}" if gate["reference_value"] is not None else " than allowed"
    worse = wording.worse.replace("the reference", reference) + than
    failing = _failing_guard(gate)
    if failing is not None:
        return f"Fails whatever its numbers say ({numbers}): {failing['message']}."
    judgments = gate.get("judgments")
    if judgments and _corners_disagree(judgments):
        as_judged = "holds" if judgments["as_judged"] else "fails"
        corners = _corner_outcomes(judgments, gate["measure"])
        weighed = _weighed(judgments, counted=False)
        if weighed is None:
            return f"Undecided: {as_judged} as judged ({numbers}), but {corners}."
        # the gradings' count and prior are the measure's, said once beside its judged shares (judged_line)
        if judgments["undecided"]:
            return f"Undecided: {as_judged} as judged ({numbers}), {weighed}; {corners}{_settle(judgments)}."
        if gate["passed"]:
            return f"Holds: {weighed}; {as_judged} as judged ({numbers}); it only {corners}."
        return f"{worse}: {weighed}; {as_judged} as judged ({numbers}); it only {corners}."
    reasons = gate_reasons(gate)
    if gate["passed"] and reasons and not gate.get("within_noise"):
        # the warnings themselves follow the sentence (terminal) or head the report (Markdown): point to them
        why = "a warning says why" if len(reasons) == 1 else f"{len(reasons)} warnings say why"
        return f"Holds on paper, but do not trust it: {why} ({numbers})."
    if gate["passed"] and not gate.get("within_noise"):
        return f"Holds: {wording.protects.replace('the reference', reference)} ({numbers})."
    confidence = (gate.get("interval") or {}).get("confidence")
    if gate["passed"]:
        return f"Within noise: {worse} ({numbers}), but the {confidence:.0%} interval reaches the safe side."
    beyond = f"; the whole {confidence:.0%} interval is past the limit" if gate.get("interval") else ""
    return f"{worse} ({numbers}{beyond})."


def message(gate: Mapping[str, Any]) -> str:
    """A gate's whole explanation, as pytest prints a failing gate: headline, sentence, interval, warnings and,
    when the statistic itself is in doubt (a failure, a pass within noise, a limit that cannot fail), the topics
    that moved it most the wrong way."""
    lines = [headline(gate), f"  {sentence(gate)}"]
    interval = gate.get("interval")
    if interval is not None:
        kind = (gate.get("bound") or {}).get("kind")
        what = "candidate - reference" if kind in ("max_increase", "max_decrease") else "value"
        lines.append(
            f"  {interval['confidence']:.0%} bootstrap interval of {what}: "
            f"[{_float(interval['low']):.6g}, {_float(interval['high']):.6g}] (seed {interval['seed']})"
        )
    lines += [f"  {line}" for line in corner_lines(gate)]
    noise = within_noise_text(gate)
    reasons = gate_reasons(gate)
    lines += [f"  warning: {text}" for text in ([noise] if noise else []) + reasons]
    power = power_text(gate)
    if power and gate["passed"]:  # what a green could have caught; a red has caught something
        lines.append(f"  {power}")
    undecided = gate.get("outcome") == "UNDECIDED"
    if gate["worst_topics"] and (not gate["passed"] or noise or gate.get("cannot_fail") or undecided):
        lines.append(f"  {blame_title(gate)}:")
        label = gate["label"]
        for impact in gate["worst_topics"]:
            about = f" ({impact['text']})" if impact["text"] else ""
            contribution = _float(impact["contribution"])
            share = "" if contribution is None else f"; moves {label} by {contribution:+.4g}"
            lines.append(
                f"    {impact['topic']}{about}: {impact['candidate']:.4f} vs {impact['compared']:.4f} "
                f"({impact['delta']:+.4f}{share}{_topic_unjudged(gate, impact)})"
            )
        hint = unjudged_hint(gate)
        if hint is not None:
            lines.append(f"  hint: {hint}")
    return "\n".join(lines)


# --- unjudged documents (docs/mathematics.md §10) ---------------------------------------------------------------


def _documents(count: int) -> str:
    return f"{count:,} unjudged document{'' if count == 1 else 's'}"


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


def _rounded_share(share: float) -> str:
    """A share of gradings as a percentage that never rounds to 100% or 0% unless it is: ``99.9%``, not ``100%``."""
    text = f"{share * 100:.0f}%"
    if text == "100%" and share < 1:
        text = f"{share * 100:.1f}%" if share < 0.9995 else ">99.9%"
    if text == "0%" and share > 0:
        text = f"{share * 100:.1f}%" if share >= 0.0005 else "<0.1%"
    return text


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


def _spec_path(gate: Mapping[str, Any]) -> str:
    """The path of a gate's spec from the working folder (the id names only its file, which a document without
    ``spec`` falls back to)."""
    return display_path(gate.get("spec") or gate["id"].split("::", 1)[0])


def _spec_of(gate: Mapping[str, Any]) -> str:
    """The spec of a gate as a command names it."""
    return shlex.quote(_spec_path(gate))


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


def failed_by_warning(gate: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A passing gate whose pytest item failed because the session turned its warning into an error (``-W
    error::...GateGuardWarning``): counted as failed, as pytest counts it, its own explanation kept below."""
    said = f"{gate['measure']} {gate['label']} FAILED in this session: its warning is an error (pytest -W error)"
    return {
        **gate,
        "passed": False,
        "outcome": "FAIL",
        "headline": f"{said}: {reason}",
        "message": f"{said}: {reason}\n{gate['message']}",
        "sentence": f"{said}. {gate['sentence']}",
    }


def with_words(gate: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's document with its words: ``warning`` (within noise), ``guards`` (every other warning),
    ``headline``, ``sentence`` and ``message``, so that every report shows the same words without rendering
    them again."""
    noise = within_noise_text(gate)
    undecided = {"undecided": undecided_text(gate), "hint": unjudged_hint(gate)} if gate.get("judgments") else {}
    return {
        **gate,
        "warning": noise,
        **undecided,
        "guards": gate_reasons(gate),
        "headline": headline(gate),
        "sentence": sentence(gate),
        "message": message(gate),
    }


# --- a guard --------------------------------------------------------------------------------------------------


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


# --- the reviewer's page: the verdict, one story per cause, how sure, what to do --------------------------------
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
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            if gate["passed"]:
                continue
            topics = _blamed(gate)
            key = (evaluation["spec"], gate["system"], gate.get("worst_against"))
            for group in groups:
                first_evaluation, first = group[0]
                known = {topic for _, member in group for topic in _blamed(member)}
                if (first_evaluation["spec"], first["system"], first.get("worst_against")) == key and _shares_most(
                    topics, known
                ):
                    group.append((evaluation, gate))
                    break
            else:
                groups.append([(evaluation, gate)])
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


def figure(value: float | str | None, *others: float | str | None) -> str:
    """``value`` with 3 significant digits (trailing zeros kept: ``0.560``), more (up to 6) where needed to tell it
    from ``others``; ``-`` for a missing value."""
    if value is None:
        return "-"
    number = float(value)
    if not math.isfinite(number) or number == 0:
        return f"{number:g}"
    rest = [float(other) for other in others if other is not None and float(other) != number]
    for digits in range(3, 7):
        text = f"{number:#.{digits}g}".rstrip(".")
        if all(text != f"{other:#.{digits}g}".rstrip(".") for other in rest):
            return text
    return text


def _side(gate: Mapping[str, Any]) -> str:
    upper = gate["upper"] if "upper" in gate else (gate.get("bound") or {}).get("kind") in ("max", "max_increase")
    return "<=" if upper else ">="


def gate_summary(gate: Mapping[str, Any]) -> str:
    """One line with a gate's numbers, as a cause lists the gates it breaks: ``nDCG@10 Var 0.0877 vs 0.0706, limit
    <= 0.0839: quality varies more from query to query than in production``; for a statistic that already compares
    the two systems, its value is set beside what an equal-quality change typically gets."""
    undefined = undefined_text(gate)
    name = judged_text(gate)
    if undefined is not None:
        return f"{name}: undefined: {undefined}; a gate never passes on NaN"
    value = gate["value"]
    text = f"{name} {figure(value, gate['limit'])}"
    typical = _typical(gate)
    if gate.get("reference_value") is not None:
        text += f" vs {figure(gate['reference_value'], value)}"
    elif _compares_already(gate) and typical is not None:
        text += f" vs {figure(typical, value)} for an equal-quality change"
    text += f", limit {limit_cell(gate)}"
    statistic = STATISTICS.get(gate["statistic"])
    if statistic is not None and statistic.wording is not None and not gate["passed"]:
        reference = gate.get("reference") or "the reference"
        than = f" than in {reference}" if gate.get("reference_value") is not None else " than allowed"
        worse = statistic.wording.worse.replace("the reference", reference) + than
        text += f": {worse[0].lower()}{worse[1:]}"
    judgments = gate.get("judgments") or {}
    weighed = _weighed(judgments) if judgments and not judgments.get("undecided") else None
    if weighed is not None:  # a verdict the unjudged documents' plausible gradings decided: say what it rests on
        text += f" ({weighed})"
    return text


def gate_name(document: Mapping[str, Any], gate: Mapping[str, Any]) -> str:
    """A gate's id without its spec file (``nDCG@10::trisk``) when the session has one spec, else whole."""
    specs = {evaluation["spec"] for evaluation in document["evaluations"]}
    return gate["id"].split("::", 1)[-1] if len(specs) <= 1 else gate["id"]


def _gates(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [gate for evaluation in document["evaluations"] for gate in evaluation["gates"]]


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


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


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


def sentence_start(text: str, document: Mapping[str, Any]) -> str:
    """``text`` as a sentence on its own (the Markdown and HTML reports): its first letter raised, unless it starts
    with a system's name, which is written as the spec spells it (``bm25+rm3 against bm25``, not ``Bm25+rm3``); the
    default name of the run under test is a word and is raised."""
    names = {system["name"] for evaluation in document["evaluations"] for system in evaluation.get("systems") or []} - {
        CANDIDATE_NAME
    }
    if any(text.startswith(f"{name} ") for name in names):
        return text
    return text[:1].upper() + text[1:]


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


def _share_text(share: float) -> str:
    """A share as a whole percentage that says 99%, not 100%, for a gate that has not reached its limit."""
    return f"{min(share * 100, 99.0) if share < 1 else 100:.0f}%"


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


def _missed_aim_groups(document: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The passing gates of a spec that would miss their ``detect:`` aim, by gate id, when there are several: said
    once on the first screen (DL-HARD's three mean gates, one per measure, each had its own warning)."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for gate in _gates(document):
        if missed_aim_text(gate):
            aim = gate["power"]["aim"]
            key = (_spec_path(gate), aim["relative"], aim["model"], aim["level"], aim["topics"])
            groups.setdefault(key, []).append(gate)
    return {gate["id"]: gates for gates in groups.values() if len(gates) > 1 for gate in gates}


def missed_aims_text(gates: Sequence[Mapping[str, Any]]) -> str:
    """One warning for several gates that would miss their ``detect:`` aim: each gate's drop, how often it catches
    it, and the topics it would need (:func:`missed_aim_text` says it for one)."""
    parts = []
    for gate in gates:
        aim = gate["power"]["aim"]
        needed = (
            f"about {about(aim['topics_needed'])} topics needed"
            if aim["topics_needed"] is not None
            else "no number of topics gets there"
        )
        parts.append(
            f"{gate['measure']} {gate['label']} misses a drop of {_drop(aim['drop'])} "
            f"({percent(_float(aim['power']))} caught; {needed})"
        )
    first = gates[0]["power"]["aim"]
    where = model_words(first["model"], gates[0]["power"]) if first["model"] == "uniform" else "on 10% of the queries"
    relative = f"{first['relative'] * 100:g}% of the reference's mean, " if first["relative"] is not None else ""
    return (
        f"{len(gates)} gates catch the drop their detect: asks for ({relative}{where} on {first['topics']:,} "
        f"topics) less than {first['level']:.0%} of the time: {'; '.join(parts)} (the topics are estimates)"
    )


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


def _together_groups(document: Mapping[str, Any]) -> list[list[Mapping[str, Any]]]:
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for gate in _gates(document):
        together = (gate.get("calibration") or {}).get("together")
        if together:
            groups.setdefault(tuple(together["ids"]), []).append(gate)
    return list(groups.values())


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
        low, high = percent(min(share for _, share in shares)), percent(max(share for _, share in shares))
        lines.append(
            f"It is at least as bad as the candidate on {gates} {low if low == high else f'{low} to {high}'} of the "
            "time."
        )
    # what a green is worth against a worse change (docs/mathematics.md §9): the smallest drops the check catches
    return lines + test_agreement_lines(document) + power_lines(document)


def _joined(texts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; repeated texts once."""
    unique = list(dict.fromkeys(texts))
    return unique[0] if len(unique) == 1 else f"{', '.join(unique[:-1])} and {unique[-1]}"


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
