"""Guards: reasons not to trust a green gate, found in the evaluation itself.

A gate compares numbers; some inputs make every comparison pass without saying anything about the
change under review. Each guard below looks for one such input. A guard that fires is a
:class:`Guard`; a *warning* turns the gates it concerns from ``OK`` into ``OK*`` (passed, with the
guard's message in every report), a *note* is only reported. ``docs/troubleshooting.md`` says what
to do about each one.

- ``identical``: the candidate's per-topic scores equal a baseline's on every topic (a CI step that
  did not write the new run tests a baseline's run); equal to the reference's alone, nothing changed (as right
  after ``--bvtest-update``), a note.
- ``candidate_missing``: the candidate has no ranking for topics other systems rank (a truncated run,
  or one made for other topics): scored 0 there, it may still pass, and its pass says nothing about them.
- ``candidate_zero``: the candidate scores 0 on every topic while other systems score (document ids in
  another form than the qrels', a run of another collection): scores of 0 everywhere have Var 0 and
  ZRisk 0, so gates on them pass, and a pass says nothing about the run.
- ``unanswered_topics``: topics on which every system scores 0. They tell no system apart and pull
  every mean toward 0; more than :data:`UNANSWERED_SHARE` of the topics is a warning (qrels of
  another year or track than the runs), fewer a note.
- ``stale_reference``: the candidate beats the reference on the mean by a large, clear margin
  (randomization p below :data:`STALE_REFERENCE_P` and a gain of at least :data:`STALE_REFERENCE_GAIN`
  of the reference's mean). Gates against the reference are then lenient on the next changes; it may be
  stale. A note. Each system a gate is measured against (the spec's reference, a gate's own ``reference:``)
  is judged.
- ``reference_missing``: the reference has no ranking for topics on which the candidate scores above
  0 (scored 0 by the missing-topic rule): the candidate's wins there are free, so gates against the
  reference are lenient (a truncated reference run, or one made for fewer topics).
- ``target_constant``: the target constant ``c`` outside ``[mean of the virtual target, 1]``. Below
  the target's mean, a system whose mean exceeds ``c`` gets a larger Bias² the better it gets, so
  Bias² rewards worse systems (Zhang et al., IPM 2022, Lemma 1; docs/mathematics.md §3).
- ``nothing_judged``: the qrels judge none of the documents of the candidate's top d on any topic (Judged@d 0
  everywhere: document ids in another form, a run of another collection, a random ranking). Nothing judged is not
  green: a *failure* that fails every gate of the measure, as does ``unanswered_topics`` when every system misses
  every topic.
- ``unjudged_nonrelevant``: the qrels judge only relevant documents (no grade below 1, MS MARCO's convention), so
  unjudged documents count as non-relevant and the gates have no corners (docs/mathematics.md §10); a note, said once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_bvtest.spec.model import NONRELEVANT, UNANSWERED_SHARE, GuardSettings
from pytest_bvtest.stats.registry import STATISTICS

if TYPE_CHECKING:
    from pytest_bvtest.judging.comparisons import Comparison
    from pytest_bvtest.judging.judgments import MeasureJudgments
    from pytest_bvtest.scoring.matrix import ScoreMatrix
    from pytest_bvtest.spec.model import AnalysisSettings
    from pytest_bvtest.stats.biasvar import BiasVarianceAnalysis

#: Gated statistics measured against the target constant ``c`` (the catalogue's ``reads_target_constant``).
TARGET_CONSTANT_STATISTICS = tuple(name for name, statistic in STATISTICS.items() if statistic.reads_target_constant)

_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Guard:
    """One reason not to trust a green gate.

    ``warning`` guards make the gates they concern ``OK*``, and ``fails`` ones (warnings too) fail them;
    ``statistics`` limits them to gates on those statistics and ``reference`` to gates measured against that system
    (``None``: no limit). ``facts`` are the numbers and names :func:`pytest_bvtest.report.wording.guard_message`
    says them with.
    """

    kind: str
    warning: bool
    facts: Mapping[str, Any]
    systems: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    statistics: tuple[str, ...] | None = None
    reference: str | None = None
    fails: bool = False

    def concerns(self, statistic: str, reference: str | None) -> bool:
        """Whether a gate on ``statistic`` (measured against ``reference``) is made ``OK*`` by this guard."""
        if not self.warning:
            return False
        if self.statistics is not None and statistic not in self.statistics:
            return False
        return self.reference is None or reference == self.reference


def identical_to_baseline(
    scores: np.ndarray, systems: Sequence[str], candidate: int, measure: str, reference: str | None = None
) -> Guard | None:
    """The candidate's per-topic scores are those of one or more other systems, on every topic.

    A warning when one of them is not the ``reference``: a baseline's run tested as the candidate by mistake. When
    the candidate scores as the reference alone, nothing changed: a note, as right after ``--bvtest-update`` (the
    stored reference is then the run under test, and every build of the main branch sees it), or for a change that
    does not touch the ranking; its gates pass without a warning.
    """
    same = tuple(
        name for i, name in enumerate(systems) if i != candidate and np.array_equal(scores[i], scores[candidate])
    )
    if not same:
        return None
    return Guard(
        "identical",
        any(name != reference for name in same),
        {
            "candidate": systems[candidate],
            "measure": measure,
            "same": same,
            "topics": scores.shape[1],
            "reference": reference,
        },
        systems=same,
    )


def candidate_missing_topics(
    imputed: np.ndarray, topics: Sequence[str], candidate: int, systems: Sequence[str], measure: str
) -> Guard | None:
    """Topics the candidate has no ranking for (``imputed``: scored 0) while another system has one.

    A truncated candidate run, or one made for other topics, is scored 0 there: that lowers its mean, but
    scores piled up at 0 can shrink Var and the gap terms, and a gate that passes says nothing about the
    topics the run lacks. Topics no system ranks are left to :func:`unanswered_topics`.
    """
    lacking = imputed[candidate] & ~np.all(np.delete(imputed, candidate, axis=0), axis=0)
    if not lacking.any():
        return None
    named = tuple(topic for topic, lacks in zip(topics, lacking) if lacks)
    name = systems[candidate]
    return Guard(
        "candidate_missing",
        True,
        {"candidate": name, "measure": measure, "total": len(topics)},
        systems=(name,),
        topics=named,
    )


def candidate_scores_zero(scores: np.ndarray, candidate: int, systems: Sequence[str], measure: str) -> Guard | None:
    """The candidate scores 0 on every topic while another system scores above 0 on some.

    A run whose document ids are not the qrels' (a prefix, another version of the collection) ranks every
    topic and retrieves no judged document, so :func:`candidate_missing_topics` stays silent; its Var and
    ZRisk are 0 (MATH.md §4: ``z = 0`` where ``e = 0``), which Var and ZRisk gates pass.
    """
    if scores[candidate].any():
        return None
    answered = int(np.count_nonzero(np.delete(scores, candidate, axis=0).any(axis=0)))
    if not answered:
        return None  # every system scores 0: unanswered_topics says so
    name = systems[candidate]
    return Guard(
        "candidate_zero",
        True,
        {"candidate": name, "measure": measure, "total": scores.shape[1], "answered": answered},
        systems=(name,),
    )


def unanswered_topics(
    scores: np.ndarray, topics: Sequence[str], measure: str, threshold: float = UNANSWERED_SHARE
) -> Guard | None:
    """Topics on which every system scores 0; a warning above ``threshold`` of the topics, a failure when it is every
    topic (the qrels judge nothing any system retrieved)."""
    missed = tuple(topic for topic, column in zip(topics, np.all(scores == 0, axis=0)) if column)
    if not missed:
        return None
    return Guard(
        "unanswered_topics",
        len(missed) / len(topics) > threshold,
        {"measure": measure, "total": len(topics), "threshold": threshold},
        topics=missed,
        fails=len(missed) == len(topics),
    )


def nothing_judged(judged_shares: np.ndarray, depth: int, label: str, candidate: str, measure: str) -> Guard | None:
    """The qrels judge none of the documents of the candidate's top ``depth`` on any topic (``judged_shares``: its
    Judged@depth per topic): a failure. Nothing it retrieved was judged, so no verdict about it rests on judgments,
    and its corners would be all guesswork (docs/mathematics.md §10, "Nothing judged is not green")."""
    if judged_shares.size == 0 or judged_shares.any():
        return None
    return Guard(
        "nothing_judged",
        True,
        {"measure": measure, "candidate": candidate, "depth": depth, "label": label, "total": int(judged_shares.size)},
        systems=(candidate,),
        fails=True,
    )


def unjudged_nonrelevant(measure: str, label: str, chosen: str) -> Guard:
    """The note of qrels read the trec_eval way (unjudged documents non-relevant): ``chosen`` says why, ``auto``
    (the qrels judge only relevant documents) or ``spec`` (``judgments: {unjudged: nonrelevant}``)."""
    return Guard("unjudged_nonrelevant", False, {"measure": measure, "label": label, "chosen": chosen})


def stale_reference(
    candidate_mean: float,
    reference_mean: float,
    reference: str,
    p_value: float,
    measure: str,
    permutations: int,
    settings: GuardSettings = GuardSettings(),
    spec_reference: bool = True,
) -> Guard | None:
    """The candidate beats the reference by a gain large (``settings.stale_reference_gain`` of its mean) and
    clear (randomization p below ``settings.stale_reference_p``): a note, said once. Gates against a reference this
    far behind are lenient on the next changes, which can lose most of this gain and still pass; this change's
    gates hold as they are (a big improvement is no reason to distrust them), so they stay ``OK``.

    ``spec_reference`` says whether ``reference`` is the spec's reference, which ``--bvtest-update``
    replaces, or only a gate's own ``reference:``, which the spec's author points elsewhere.
    """
    gain = candidate_mean - reference_mean
    clear = p_value < settings.stale_reference_p
    if not (clear and gain > 0 and gain >= settings.stale_reference_gain * abs(reference_mean)):
        return None
    return Guard(
        "stale_reference",
        False,
        {
            "measure": measure,
            "candidate_mean": candidate_mean,
            "reference_mean": reference_mean,
            "reference": reference,
            "p_value": p_value,
            "p_threshold": settings.stale_reference_p,
            "permutations": permutations,
            "spec_reference": spec_reference,
        },
        systems=(reference,),
        reference=reference,
    )


def reference_missing_topics(
    scores: np.ndarray,
    imputed: np.ndarray,
    topics: Sequence[str],
    candidate: int,
    reference: int,
    systems: Sequence[str],
    measure: str,
) -> Guard | None:
    """Topics the reference has no ranking for (``imputed``: scored 0) where the candidate scores above 0.

    Each is a free win for the candidate against the reference: the gates measured against it are
    lenient by as much, whatever the candidate does on the topics both answered.
    """
    free = imputed[reference] & (scores[candidate] > 0)
    if not free.any():
        return None
    named = tuple(topic for topic, is_free in zip(topics, free) if is_free)
    name = systems[reference]
    return Guard(
        "reference_missing",
        True,
        {"reference": name, "candidate": systems[candidate], "measure": measure, "total": len(topics)},
        systems=(name,),
        topics=named,
        reference=name,
    )


def target_constant_out_of_range(
    c: float, target_scores: np.ndarray, bounded_by_one: bool, measure: str
) -> Guard | None:
    """``c`` below the virtual target's mean, or above 1 for a measure bounded by 1 (IPM 2022 Lemma 1)."""
    target_mean = float(np.mean(target_scores))
    if c < target_mean - _TOLERANCE:
        side = "below_target"
    elif bounded_by_one and c > 1 + _TOLERANCE:
        side = "above_one"
    else:
        return None
    return Guard(
        "target_constant",
        True,
        {"measure": measure, "c": c, "target_mean": target_mean, "side": side},
        statistics=TARGET_CONSTANT_STATISTICS,
    )


def measure_guards(
    matrix: ScoreMatrix,
    analysis: BiasVarianceAnalysis,
    settings: AnalysisSettings,
    candidate: str | None,
    reference: str | None,
    comparisons: Sequence[Comparison],
    thresholds: GuardSettings,
    gate_references: Sequence[str] = (),
) -> tuple[Guard, ...]:
    """The guards that fire on one measure's evaluation, most urgent first.

    ``gate_references`` are the systems the measure's gates are measured against (a gate may name its
    own ``reference``): each is checked like the spec's reference, for being stale and for topics it has
    no ranking for, and its guards concern the gates measured against it.
    """
    scores = matrix.scores
    found = []
    if candidate is not None:
        index = matrix.index(candidate)
        found.append(identical_to_baseline(scores, matrix.systems, index, matrix.measure, reference))
        found.append(candidate_missing_topics(matrix.imputed, matrix.topics, index, matrix.systems, matrix.measure))
        found.append(candidate_scores_zero(scores, index, matrix.systems, matrix.measure))
        # every system a gate is measured against: the spec's reference and the gates' own `reference:`
        compared_with = [
            name
            for name in dict.fromkeys((*((reference,) if reference is not None else ()), *gate_references))
            if name != candidate
        ]
        mean = float(scores[index].mean())
        for compared in compared_with:
            against = next((comparison for comparison in comparisons if comparison.baseline == compared), None)
            if against is not None:
                found.append(
                    stale_reference(
                        mean,
                        mean - against.difference,
                        against.baseline,
                        against.p_randomization,
                        matrix.measure,
                        against.permutations,
                        thresholds,
                        spec_reference=compared == reference,
                    )
                )
        for compared in compared_with:
            found.append(
                reference_missing_topics(
                    scores, matrix.imputed, matrix.topics, index, matrix.index(compared), matrix.systems, matrix.measure
                )
            )
    found.append(unanswered_topics(scores, matrix.topics, matrix.measure, thresholds.unanswered_share))
    bounded_by_one = settings.normalize != "none" or bool(np.all(scores <= 1))
    found.append(
        target_constant_out_of_range(float(analysis.c), analysis.target_scores, bounded_by_one, matrix.measure)
    )
    return tuple(guard for guard in found if guard is not None)


def judgment_guards(judged: MeasureJudgments | None, matrix: ScoreMatrix, candidate: str | None) -> tuple[Guard, ...]:
    """The guards of what was judged at the measure's depth (``judged``; ``None`` where it is not known): nothing of
    the candidate's top d judged (a failure), and unjudged documents read the trec_eval way (a note)."""
    if judged is None:
        return ()
    found = []
    if candidate is not None:
        found.append(
            nothing_judged(
                judged.shares[matrix.index(candidate)], judged.depth, judged.label, candidate, judged.measure
            )
        )
    if judged.reading == NONRELEVANT:
        found.append(unjudged_nonrelevant(judged.measure, judged.label, judged.chosen))
    return tuple(guard for guard in found if guard is not None)
