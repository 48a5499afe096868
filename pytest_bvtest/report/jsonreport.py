"""The JSON report: a versioned document that every other report is rendered from.

The keys promised to users are listed in ``docs/json-schema.md`` and checked by the JSON Schema in
``schema.json`` beside this module. Other keys may be added in a minor version; none of the promised
ones is removed or changes meaning without a new ``schema_version``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from pytest_bvtest import __version__
from pytest_bvtest.judging.comparisons import PairwiseComparisons
from pytest_bvtest.judging.decision import Verdict
from pytest_bvtest.judging.evaluation import InputFile, MeasureEvaluation
from pytest_bvtest.judging.guards import Guard
from pytest_bvtest.judging.judgments import CornerJudgment, Plausibility
from pytest_bvtest.report import wording
from pytest_bvtest.spec.model import Bound
from pytest_bvtest.stats.registry import STATISTICS
from pytest_bvtest.stats.runs import RunSpread
from pytest_bvtest.stats.simulation import SimulationResult

SCHEMA_VERSION = 1

#: How the report spells -inf and +inf (indexed by ``value > 0``).
INFINITY = ("-Infinity", "Infinity")


def _number(value: float | None) -> float | str | None:
    """JSON has no NaN or infinity: an undefined (NaN) value is null, an infinite one the string
    ``"Infinity"`` or ``"-Infinity"`` (TRisk without spread, docs/mathematics.md §4), which Python's
    ``float`` and JavaScript's ``Number`` read back."""
    if value is None:
        return None
    value = float(value)
    if math.isnan(value):
        return None
    return value if math.isfinite(value) else INFINITY[value > 0]


def _numbers(values: np.ndarray) -> list[float | str | None]:
    """:func:`_number` of every value of a vector, at the speed of one ``tolist``."""
    values = np.asarray(values, dtype=float)
    if np.isfinite(values).all():  # a per-topic row of 201 systems' at 7,000 topics: no Python loop
        return values.tolist()
    return [value if math.isfinite(value) else _number(value) for value in values.tolist()]


def _blame_basis(verdict: Verdict) -> str:
    """How ``worst_topics`` were chosen: ``contribution`` to the statistic, ``score difference``
    (the mean, where the two agree), ``term difference`` (a simulation statistic: the growth of each
    topic's term of the simulation, not of its score), or ``raw loss`` (no per-topic split)."""
    if verdict.worst_topics and verdict.worst_topics[0].contribution is None:
        return "raw loss"
    statistic = STATISTICS[verdict.statistic]
    if statistic.from_simulation is not None:
        return "term difference"
    return "score difference" if statistic.mean_like else "contribution"


def _bound_document(bound: Bound | None, limit: float | None) -> dict[str, Any] | None:
    """The bound as written and its own limit; ``None`` for a gate limited by ``false_alarm`` alone."""
    if bound is None:
        return None
    return {
        "kind": bound.kind,
        "amount": bound.amount,
        "relative": bound.relative,
        "limit": _number(limit),
        "text": str(bound),
    }


def _calibration_document(verdict: Verdict) -> dict[str, Any] | None:
    """The null of no change (docs/mathematics.md §7): the false-alarm rate of the gate's limit and how it was drawn."""
    gate_null, limits = verdict.null, verdict.limits
    if gate_null is None or limits.null is None:
        return None
    family, together = limits.family, limits.together
    return {
        "false_alarm": verdict.gate.false_alarm,
        "limit": _number(limits.calibrated),
        "rate": _number(limits.rate),
        "swaps": limits.null.swaps,
        "exact": limits.null.exact,
        "seed": limits.null.seed,
        "reference": gate_null.partner,
        # what an equal-quality change typically gets, and how often it is at least as bad as the candidate
        "typical": _number(gate_null.typical),
        "p_value": _number(gate_null.share_as_bad(verdict.value)),
        "runs": None
        if limits.null.runs is None
        else {"candidate": limits.null.runs[0], "reference": limits.null.runs[1]},
        "family": None
        if family is None
        else {
            "false_alarm": family.false_alarm,
            "gates": len(family.limits),
            "level": family.level,
            "rate": family.rate,
            "swaps": family.swaps,
        },
        "together": None
        if together is None
        else {
            "gates": len(together.gates),
            "ids": together.ids,
            "rate": together.rate,
            "swaps": together.swaps,
        },
    }


def power_document(verdict: Verdict) -> dict[str, Any] | None:
    """The gate's power (docs/mathematics.md §9): its MDE under each regression model, how it was measured, and
    its ``detect:`` aim's power; ``None`` when the spec leaves power out (``analysis: {power: false}``)."""
    facts = verdict.power
    if facts is None:
        return None
    result, aim = facts.result, facts.aim
    return {
        "skipped": facts.skipped,
        "reference": facts.partner,
        "level": None if result is None else result.level,
        "draws": None if result is None else result.draws,
        "seed": None if result is None else result.seed,
        "topics": None if result is None else result.topics,
        "harmed": None if result is None else result.harmed,
        "method": None if result is None else result.method,
        "swaps": None if result is None else result.swaps,
        "family": None if result is None else result.family,
        "models": []
        if result is None
        else [
            {
                "model": each.model,
                "mde": _number(each.drop),
                "error": _number(each.error),
                "power": _number(each.power),
                "largest": _number(each.largest),
                "moves": each.moves,
            }
            for each in result.detectable
        ],
        "aim": None
        if aim is None
        else {
            "drop": aim.drop,
            "model": aim.model,
            "relative": aim.relative,
            "power": _number(aim.power),
            "level": aim.level,
            "topics": aim.topics,
            "topics_needed": aim.topics_needed,
            "reachable": aim.reachable,
            "missed": aim.missed,
        },
    }


def guard_document(guard: Guard) -> dict[str, Any]:
    """One guard: its kind, whether it warns (``OK*``) or notes, whom it names, its facts and its words."""
    document = {
        "kind": guard.kind,
        "severity": "failure" if guard.fails else "warning" if guard.warning else "note",
        "systems": list(guard.systems),
        "topics": list(guard.topics),
        "facts": {key: list(value) if isinstance(value, tuple) else value for key, value in guard.facts.items()},
    }
    return {**document, "message": wording.guard_message(document)}


def _corner_document(corner: CornerJudgment) -> dict[str, Any]:
    return {
        "value": _number(corner.value),
        "reference_value": _number(corner.reference_value),
        "limit": _number(corner.limit),
        "excess": _number(corner.excess),
        "passed": corner.passed,
        "graded": corner.graded,
    }


def corners_document(verdict: Verdict, candidate_runs: Sequence[str] = ()) -> dict[str, Any]:
    """A gate at its two corners of unjudged documents (docs/mathematics.md §10): how many there are, the gate as
    judged and at each corner, whether they leave it undecided, its plausible gradings, and the candidate's run files
    (``candidate_runs``: what ``bvtest judge --run`` names)."""
    corners = verdict.corners
    assert corners is not None
    return {
        "depth": corners.depth,
        "optimistic_grade": corners.grade,
        "candidate": corners.candidate,
        "reference": corners.reference,
        "candidate_unjudged": corners.candidate_unjudged,
        "reference_unjudged": corners.reference_unjudged,
        "shared": corners.shared,
        "unjudged": corners.unjudged,
        "topics": corners.topics,
        "as_judged": verdict.passed_as_judged,
        "optimistic": _corner_document(corners.optimistic),
        "pessimistic": _corner_document(corners.pessimistic),
        "undecided": verdict.undecided,
        "plausible": None if verdict.plausible is None else plausible_document(verdict.plausible),
        "candidate_runs": list(candidate_runs),
    }


def plausible_document(plausible: Plausibility) -> dict[str, Any]:
    """A gate weighed over plausible gradings of its unjudged documents (docs/mathematics.md §10)."""
    decided = plausible.decided
    return {
        "draws": plausible.draws,
        "passing": plausible.passing,
        "probability": plausible.probability,
        "decided": None if decided is None else "pass" if decided else "fail",
        "seed": plausible.seed,
        "confidence": plausible.confidence,
        "discount": plausible.discount,
        "swaps": plausible.swaps,
        "documents": plausible.documents,
        "relevant": plausible.relevant,
        "judged_relevant": plausible.judged_relevant,
        "settle": plausible.settle,
        "predicted": None
        if plausible.predicted is None
        else {
            "documents": plausible.predicted.documents,
            "sample": plausible.predicted.sample,
            "agreement": plausible.predicted.agreement,
            "kappa": plausible.predicted.kappa,
            "trust": plausible.predicted.trust,
            "used": plausible.predicted.used,
        },
    }


def gate_document(verdict: Verdict, spec_path: str | None = None, candidate_runs: Sequence[str] = ()) -> dict[str, Any]:
    """One gate's verdict in the spec at ``spec_path`` (when known; ``candidate_runs``: its candidate's run files):
    its numbers, how its limit was set, its outcome and why, and its words
    (:func:`~pytest_bvtest.report.wording.with_words`)."""
    gate, inputs, limits = verdict.gate, verdict.inputs, verdict.limits
    cannot_fail = verdict.cannot_fail
    document = {
        "id": verdict.id,
        "spec": spec_path,
        "statistic": verdict.statistic,
        "measure": verdict.measure,
        "system": verdict.system,
        "reference": verdict.reference,
        "value": _number(verdict.value),
        "reference_value": _number(verdict.reference_value),
        "bound": _bound_document(gate.bound, limits.bound),
        "limit": _number(limits.value),
        "rule": wording.rule_text(None if gate.bound is None else str(gate.bound), gate.false_alarm),
        "calibration": _calibration_document(verdict),
        "excess": _number(verdict.excess),
        "interval": None
        if inputs.interval is None
        else {
            "low": _number(inputs.interval.low),
            "high": _number(inputs.interval.high),
            "confidence": inputs.interval.confidence,
            "seed": inputs.interval.seed,
        },
        "passed": verdict.passed,
        "outcome": verdict.outcome,
        "undefined": verdict.undefined,
        "within_noise": verdict.within_noise,
        "cannot_fail": None
        if cannot_fail is None
        else {"smallest_rate": cannot_fail.smallest_rate, "swaps": cannot_fail.swaps, "exact": cannot_fail.exact},
        "guard_facts": [guard_document(guard) for guard in verdict.guards],
        "power": power_document(verdict),
        "missed_aim": verdict.missed_aim is not None,
        "higher_is_better": verdict.higher_is_better,
        "upper": verdict.upper,
        "label": verdict.label,
        "compared_value": _number(inputs.compared_value),
        "delta": _number(verdict.delta),
        "spec_line": gate.line,
        "docs": STATISTICS[verdict.statistic].wording.docs,
        "blame_by": _blame_basis(verdict),
        "worst_topics": [
            {
                "topic": impact.topic,
                "text": impact.text,
                "candidate": impact.candidate,
                "compared": impact.compared,
                "delta": impact.delta,
                "contribution": _number(impact.contribution),
                **(
                    {}
                    if impact.unjudged is None
                    else {
                        "unjudged": impact.unjudged,
                        "compared_unjudged": impact.compared_unjudged,
                        "candidate_optimistic": _number(impact.candidate_optimistic),
                    }
                ),
            }
            for impact in verdict.worst_topics
        ],
        "worst_against": inputs.worst_against,
        "segment": None if gate.segment is None else {"name": gate.segment, "topics": len(inputs.topics)},
    }
    if verdict.corners is not None:
        document["judgments"] = corners_document(verdict, candidate_runs)
    return wording.with_words(document)


def simulation_document(simulation: SimulationResult) -> dict[str, Any]:
    """Per-topic bias-variance over simulated collections (docs/mathematics.md §3e; grade > 0 relevant)."""
    return {
        "measure": simulation.measure,
        "samples": simulation.samples,
        "seed": simulation.seed,
        "topics": list(simulation.topic_ids),
        "systems": [
            {
                "name": name,
                "bias2": _number(simulation.bias2[i]),
                "var": _number(simulation.var[i]),
                "topic_bias2": _numbers(simulation.topic_bias2[i]),
                "topic_var": _numbers(simulation.topic_var[i]),
            }
            for i, name in enumerate(simulation.system_names)
        ],
        "tradeoff": {
            "pearson": _number(simulation.tradeoff.pearson),
            "spearman": _number(simulation.tradeoff.spearman),
        },
        "topic_tradeoff": [
            {"pearson": _number(tradeoff.pearson), "spearman": _number(tradeoff.spearman)}
            for tradeoff in simulation.topic_tradeoff
        ],
    }


def runs_document(spread: RunSpread | None) -> dict[str, Any] | None:
    """A system given as several runs: how many, each run's mean, and their spread per topic and in summary
    (sample standard deviations, docs/mathematics.md §7, "Run-to-run noise"); ``None`` for a system of one run."""
    if spread is None:
        return None
    return {
        "count": spread.runs,
        "run_means": _numbers(spread.run_means),
        "sd_of_means": _number(spread.sd_of_means),
        "range_of_means": _number(spread.range_of_means),
        "mean_topic_sd": _number(spread.mean_topic_sd),
        "topic_sd": _numbers(spread.topic_sd),
    }


def inputs_document(inputs: Iterable[InputFile]) -> list[dict[str, Any]]:
    """The files an evaluation read, with their SHA-256 content hashes."""
    return [{"role": item.role, "name": item.name, "path": item.path, "sha256": item.sha256} for item in inputs]


def mve_document(evaluation: MeasureEvaluation) -> dict[str, Any] | None:
    """MVE's form and terms per system (aligned with ``systems``), per-topic O_t and the alpha sweep."""
    mve = evaluation.mve
    if mve is None:
        return None
    sweep = mve.sweep
    return {
        "form": mve.form,
        "alpha": mve.alpha,
        "mu": _numbers(mve.mu),
        "sigma2": _numbers(mve.sigma2),
        "topic_values": [_numbers(row) for row in mve.topic_values],
        "reordering": None
        if mve.reordering is None
        else {"alpha": _number(mve.reordering[0]), "systems": list(mve.reordering[1:])},
        "sweep": None
        if sweep is None
        else {
            "alphas": _numbers(sweep.alphas),
            "values": [_numbers(row) for row in sweep.values],
            "ranks": [_numbers(row) for row in sweep.ranks],
            "flips": {name: _number(alpha) for name, alpha in sweep.flips.items()},
            "kendall_tau": _numbers(sweep.kendall_tau),
            "tau_ap": _numbers(sweep.tau_ap),
        },
    }


def gawm_document(evaluation: MeasureEvaluation) -> dict[str, Any] | None:
    """GAWM's fixed point (docs/mathematics.md §6): E_t, W_t, W_s, log W_s, iterations and convergence."""
    result = evaluation.gawm
    if result is None:
        return None
    return {
        "q": evaluation.settings.gawm_q,
        "iterations": int(result.iterations),
        "converged": bool(result.converged),
        "topic_ease": _numbers(result.topic_ease),
        "topic_weights": _numbers(result.topic_weights),
        "system_weights": _numbers(result.system_weights),
        "system_log_weights": _numbers(result.system_log_weights),
    }


def hits_document(evaluation: MeasureEvaluation) -> dict[str, Any] | None:
    result = evaluation.hits
    if result is None:
        return None
    return {
        key: _numbers(getattr(result, key))
        for key in ("system_authority", "system_hubness", "topic_authority", "topic_hubness")
    }


def rankings_document(evaluation: MeasureEvaluation) -> dict[str, Any] | None:
    rankings = evaluation.rankings
    if rankings is None:
        return None
    return {
        "against": rankings.against,
        "ranks": {name: _numbers(ranks) for name, ranks in rankings.ranks.items()},
        "agreements": [
            {
                "statistic": name,
                "kendall_tau": _number(agreement.kendall_tau),
                "kendall_p": _number(agreement.kendall_p),
                "tau_ap": _number(agreement.tau_ap),
            }
            for name, agreement in rankings.agreements.items()
        ],
    }


def judgments_document(evaluation: MeasureEvaluation) -> dict[str, Any] | None:
    """What was judged at the measure's depth (docs/mathematics.md §8): Judged@d's label, d, the grade g+ of the
    optimistic corner, whether every system's top d is judged, and whether the measure has corners."""
    judged = evaluation.judgments
    if judged is None:
        return None
    return {
        "label": judged.label,
        "depth": judged.depth,
        "optimistic_grade": judged.grade,
        "complete": judged.complete,
        "corners": judged.optimistic is not None,
    }


def _system_judged(evaluation: MeasureEvaluation, row: int) -> dict[str, Any]:
    """One system's judged share of its top d: mean over topics, per topic, and its unjudged documents; null for a
    measure whose judgments are not known (a per-topic table)."""
    judged = evaluation.judgments
    if judged is None:
        return {"judged": None, "judged_per_topic": None, "unjudged": None}
    return {
        "judged": _number(judged.shares[row].mean()),
        "judged_per_topic": _numbers(judged.shares[row]),
        "unjudged": judged.unjudged_documents(row),
    }


def pairwise_document(table: PairwiseComparisons) -> dict[str, Any]:
    """The JSON form of one measure's all-pairs comparison (the ``pairwise`` key of a measure's document)."""
    return {
        "measure": table.measure,
        "systems": list(table.systems),
        "means": list(table.means),
        "test": table.test,
        "correction": table.correction,
        "alpha": table.alpha,
        "permutations": table.permutations,
        "seed": table.seed,
        "pairs": [
            {
                "first": pair.first,
                "second": pair.second,
                "difference": pair.difference,
                "wins": pair.wins,
                "ties": pair.ties,
                "losses": pair.losses,
                "p": dict(pair.p),
                "adjusted": dict(pair.adjusted),
                "significant": table.significant(pair),
            }
            for pair in table.pairs
        ],
    }


def measure_document(
    spec_path: str,
    evaluation: MeasureEvaluation,
    simulations: Sequence[SimulationResult] = (),
    inputs: Iterable[InputFile] = (),
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One measure's evaluation without its gates (they are added per item by :func:`session_document`).

    ``simulations`` (one per simulated measure; ``simulation`` is the first), ``inputs`` and the query
    ``texts`` by topic, the same for every measure of a spec, are repeated in each.
    """
    texts = texts or {}
    settings = evaluation.settings
    grouping = settings.grouping
    return {
        "spec": spec_path,
        "measure": evaluation.measure,
        "topics": list(evaluation.topics),
        "topic_texts": [texts.get(topic) for topic in evaluation.topics],
        "target": {
            "c": _number(evaluation.c),
            "per_topic": _numbers(evaluation.target),
            "constant_topics": int(evaluation.analysis.constant_topics),
        },
        "settings": {
            "target": settings.target,
            "normalize": settings.normalize,
            "grouping": None
            if grouping is None
            else {"by": type(grouping).__name__.removesuffix("Grouping").lower(), **vars(grouping)},
            "risk_alpha": settings.risk_alpha,
            "mve_alpha": settings.mve.alpha,
            "mve_method": evaluation.mve_method,
            "gawm_q": settings.gawm_q,
            "zrisk_against": settings.zrisk_against,
            "variance": settings.variance,
            "target_system": None if settings.target_row is None else evaluation.matrix.systems[settings.target_row],
        },
        "candidate": evaluation.candidate,
        "reference": evaluation.reference,
        "systems": [
            {
                "name": system.name,
                "role": system.role,
                **{key: _number(value) for key, value in system.values.items()},
                "gap": {key: _number(value) for key, value in system.gap.items()},
                "per_topic": _numbers(evaluation.matrix.row(system.name)),
                "missing_topics": list(system.missing_topics),
                "ignored_topics": list(system.ignored_topics),
                "missing_queries": list(system.missing_queries),
                "runs": runs_document(system.runs),
                **_system_judged(evaluation, row),
            }
            for row, system in enumerate(evaluation.systems)
        ],
        "tradeoff": {
            "pearson": _number(evaluation.tradeoff.pearson),
            "spearman": _number(evaluation.tradeoff.spearman),
        },
        "comparisons": [
            {
                "baseline": comparison.baseline,
                "difference": _number(comparison.difference),
                "wins": comparison.wins,
                "ties": comparison.ties,
                "losses": comparison.losses,
                "t": _number(comparison.t),
                "p_t": _number(comparison.p_t),
                "p_t_holm": _number(comparison.p_t_holm),
                "p_randomization": _number(comparison.p_randomization),
                "p_randomization_holm": _number(comparison.p_randomization_holm),
                "permutations": comparison.permutations,
                "seed": comparison.seed,
            }
            for comparison in evaluation.comparisons
        ],
        "pairwise": None if evaluation.pairwise is None else pairwise_document(evaluation.pairwise),
        "guards": [guard_document(guard) for guard in evaluation.guards],
        "simulation": simulation_document(simulations[0]) if simulations else None,
        "simulations": [simulation_document(simulation) for simulation in simulations],
        "inputs": inputs_document(inputs),
        "mve": mve_document(evaluation),
        "gawm": gawm_document(evaluation),
        "hits": hits_document(evaluation),
        "rankings": rankings_document(evaluation),
        "judgments": judgments_document(evaluation),
        "gates": [],
    }


def session_document(
    evaluations: Iterable[Mapping[str, Any]],
    tests: Iterable[Mapping[str, Any]] = (),
    context: Mapping[str, Any] | None = None,
    *,
    errors: Iterable[Mapping[str, Any]] = (),
    not_run: Iterable[str] = (),
    collected_only: bool = False,
    other_failed: int = 0,
) -> dict[str, Any]:
    """The whole report: ``schema_version``, the tool, when and on which commit, the per-measure
    evaluations, and the team's own tests (marked ``bvtest`` or using the fixture): a failing one
    fails the session like a gate.

    ``context`` is :func:`pytest_bvtest.report.history.run_context`'s ``timestamp``, ``commit`` and
    ``branch`` (all null when not given). ``errors`` are the bvtest items that could not be evaluated
    (``id``, ``spec``, ``message``): any fails the session. ``not_run`` are the ids of the evaluated
    specs' gates that did not run in this session (deselected, or after the session stopped early), every gate
    of a ``collected_only`` session (``pytest --collect-only``), which the document then says. ``other_failed``
    counts the session's other tests that failed (neither a gate nor a team test): they fail pytest's exit code, so
    the headline counts them, and ``passed`` keeps its meaning (the gates and the team tests).
    """
    evaluations = list(evaluations)
    tests = [dict(test) for test in tests]
    errors = [dict(error) for error in errors]
    not_run = list(not_run)
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    failed_tests = sum(not test["passed"] for test in tests)
    context = context or {}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "pytest-bvtest", "version": __version__},
        "timestamp": context.get("timestamp"),
        "commit": context.get("commit"),
        "branch": context.get("branch"),
        "passed": all(gate["passed"] for gate in gates) and not failed_tests and not errors,
        "summary": {
            "gates": len(gates),
            "failed": sum(not gate["passed"] for gate in gates),
            "warnings": sum(gate["outcome"] == "OK*" for gate in gates),
            "undecided": sum(gate["outcome"] == "UNDECIDED" for gate in gates),
            "tests": len(tests),
            "tests_failed": failed_tests,
            "errors": len(errors),
            "not_run": len(not_run),
            "other_tests_failed": other_failed,
        },
        "evaluations": evaluations,
        "tests": tests,
        "errors": errors,
        "not_run": not_run,
        **({"collected_only": True} if collected_only else {}),
    }


def schema() -> dict[str, Any]:
    """The JSON Schema of :func:`session_document`'s output."""
    return json.loads(resources.files("pytest_bvtest.report").joinpath("schema.json").read_text(encoding="utf-8"))


def dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
