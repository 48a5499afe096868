"""The systems' tables and the analysis of one measure: statistics per system, the Bias²/Var tradeoff, the gap to the
target, the comparisons, GAWM, MVE and the per-topic simulation, and the notes on topics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.errors import short_list
from pytest_bvtest.report.wording.guards import FIRST_SCREEN_NOTES
from pytest_bvtest.report.wording.numbers import OUTCOMES, display_path, format_number
from pytest_bvtest.stats.registry import GAP_LABELS, GAP_TERMS, STATISTICS, TABLE_COLUMNS

TABLE_HEADER = ("system", "role", *(header for _, header in TABLE_COLUMNS), "gates")


# Topic lists in notes are cut after this many ids: the JSON report has them all.
_LISTED_TOPICS = 5


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
