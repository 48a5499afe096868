"""Guards (pytest_bvtest.judging.guards): when they fire, what they say, which gates they make OK*; on
hand-checked matrices and on real TREC DL runs."""

from __future__ import annotations

import gzip
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import said, shared_path, words

from pytest_bvtest.errors import InputError
from pytest_bvtest.judging.guards import (
    Guard,
    candidate_scores_zero,
    identical_to_baseline,
    reference_missing_topics,
    stale_reference,
    target_constant_out_of_range,
    unanswered_topics,
)
from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
from pytest_bvtest.spec.model import GuardSettings

SCORES = np.array(
    [
        [0.5, 0.0, 0.2, 0.9],  # production
        [0.4, 0.0, 0.3, 0.8],  # bm25
        [0.5, 0.0, 0.2, 0.9],  # candidate: production's scores exactly
    ]
)
SYSTEMS = ("production", "bm25", "candidate")


def test_identical_names_every_baseline_with_the_candidates_scores() -> None:
    guard = identical_to_baseline(SCORES, SYSTEMS, 2, "AP")
    assert guard is not None and guard.warning and guard.systems == ("production",)
    assert said(guard).startswith(
        "identical: candidate's per-topic AP scores are identical to production's on all 4 topics"
    )
    assert guard.concerns("trisk", "production") and guard.concerns("bias2", None)  # every gate of the measure
    # one topic differing by 1e-9 is a different run
    different = SCORES.copy()
    different[2, 3] += 1e-9
    assert identical_to_baseline(different, SYSTEMS, 2, "AP") is None


def test_a_candidate_scoring_zero_everywhere_warns_unless_every_system_does() -> None:
    zero = np.vstack([SCORES[:2], np.zeros(4)])
    guard = candidate_scores_zero(zero, 2, SYSTEMS, "AP")
    assert guard is not None and guard.warning and guard.systems == ("candidate",)
    assert said(guard).startswith("the candidate scores 0 AP on all 4 topics, while other systems score above 0 on 3")
    assert candidate_scores_zero(SCORES, 2, SYSTEMS, "AP") is None  # scores somewhere
    assert candidate_scores_zero(np.zeros((3, 4)), 2, SYSTEMS, "AP") is None  # unanswered_topics' case


def test_topics_every_system_misses_are_a_note_up_to_ten_percent_then_a_warning() -> None:
    topics = [f"t{j}" for j in range(4)]
    guard = unanswered_topics(SCORES, topics, "AP")  # t1: 0 for all, 1 of 4 = 25%
    assert guard is not None and guard.warning and guard.topics == ("t1",)
    assert said(guard).startswith("1 of 4 topics (25%) is missed by every system (AP 0 for all): t1;")
    # 1 of 10 topics is exactly 10%: a note, which makes no gate OK*
    ten = np.hstack([SCORES, np.full((3, 6), 0.5)])
    note = unanswered_topics(ten, [f"t{j}" for j in range(10)], "AP")
    assert note is not None and not note.warning and not note.concerns("mean", None)
    assert unanswered_topics(SCORES[:, [0, 2, 3]], ["t0", "t2", "t3"], "AP") is None


def test_stale_reference_needs_a_clear_and_large_gain() -> None:
    guard = stale_reference(0.60, 0.50, "production", 0.001, "nDCG@10", 10_000)
    assert guard is not None and guard.reference == "production"
    assert said(guard) == (
        "a big improvement over production: mean nDCG@10 0.5000 → 0.6000 (+0.1000, +20%, randomization p 0.0010); "
        "gates against a reference this far behind let the next changes lose most of it, so once this change is "
        "merged, make it the reference: pytest --bvtest-update (bvtest check --update)"
    )
    # a note (issue 21): a big improvement is no reason to distrust this change's gates, which stay OK
    assert not guard.warning and not guard.concerns("trisk", "production") and not guard.concerns("mean", None)
    assert stale_reference(0.60, 0.50, "production", 0.02, "nDCG@10", 10_000) is None  # not clear
    assert stale_reference(0.54, 0.50, "production", 0.0001, "nDCG@10", 10_000) is None  # clear but +8% only
    assert stale_reference(0.55, 0.50, "production", 0.0001, "nDCG@10", 10_000) is not None  # +10% exactly


def test_target_constant_outside_mean_target_and_one() -> None:
    target = np.array([0.8, 0.9, 0.7])  # IPM 2022 Table 2: mean target 0.8
    assert target_constant_out_of_range(0.8, target, True, "AP") is None
    assert target_constant_out_of_range(1.0, target, True, "AP") is None
    low = target_constant_out_of_range(0.5, target, True, "AP")
    assert low is not None and "c = 0.5000 is outside [mean target 0.8000, 1]" in said(low)
    assert "Bias² rewards worse systems" in said(low) and "IPM 2022 Lemma 1" in said(low)
    # it concerns the statistics measured against c
    assert (
        low.concerns("bias2_plus_var", "production")
        and low.concerns("bias2", None)
        and not low.concerns("mean", "production")
    )
    high = target_constant_out_of_range(1.5, target, True, "AP")
    assert high is not None and "above 1" in said(high)
    # a measure that is not bounded by 1 (NumRet counts documents) has no upper end to check
    assert target_constant_out_of_range(1.5, target, False, "NumRet") is None


def test_lemma_1_a_c_below_the_mean_target_makes_bias2_prefer_the_worse_system() -> None:
    """Why the guard exists: IPM 2022 Table 2's systems, with c = 0.5 below the target's mean 0.8."""
    means = np.array([[0.8, 0.9, 0.4], [0.5, 0.6, 0.7], [0.3, 0.6, 0.3]]).mean(axis=1)  # 0.7, 0.6, 0.4
    assert np.argmin((means - 0.8) ** 2) == 0  # c = mean target: the best mean has the lowest Bias²
    assert np.argmin((means - 0.5) ** 2) == 1  # c = 0.5: the second system, worse on the mean, "wins"


DL = "dl19_passage_qppeval_runs"


def dl_spec(tmp_path: Path, reference: str) -> Path:
    """DL19 runs against the DL 2019+2020 qrels (97 topics; the runs rank only DL19's 43)."""
    folder = shared_path(DL)
    runs = folder / "runs"
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {folder / "trecdl1920.qrels"}
        measures: [nDCG@10]
        baselines:
          monobert: {runs / "run-msmarco-passage-bm25-monobert-0.8-0.5.txt.gz"}
          drmm: {runs / "drmm.res.gz"}
        candidate: {runs / "run-msmarco-passage-bm25-monot5-0.8-0.5.txt.gz"}
        reference: {reference}
        gates:
          - {{statistic: trisk, min: -2}}
          - {{statistic: bias2, max: 1}}
    """)
    )
    return spec


def kinds(guards: tuple[Guard, ...]) -> list[str]:
    return [guard.kind for guard in guards]


def test_real_dl19_runs_against_dl19_and_20_qrels(tmp_path: Path) -> None:
    # drmm as the reference: monoT5 is far better, and 54 DL20 topics are missed by every system
    evaluation = evaluate_spec(spec_under_test(dl_spec(tmp_path, "drmm")), use_cache=False).measure()
    assert kinds(evaluation.guards) == ["stale_reference", "unanswered_topics"]
    unanswered = evaluation.guards[1]
    assert unanswered.warning and len(unanswered.topics) == 54 and len(evaluation.topics) == 97
    assert said(unanswered).startswith("54 of 97 topics (56%) are missed by every system (nDCG@10 0 for all)")
    missed = set(unanswered.topics)
    with gzip.open(shared_path(DL, "runs", "drmm.res.gz"), "rt") as run:
        ranked = {line.split()[0] for line in run}
    assert not missed & ranked  # the missed topics are exactly those no DL19 run ranks (DL20's)
    comparison = next(c for c in evaluation.comparisons if c.baseline == "drmm")
    assert comparison.p_randomization < 0.01 and comparison.difference > 0.1 * evaluation.system("drmm").values["mean"]
    # both gates are OK* by the unanswered topics; the stale reference is a note, no reason to distrust a gate
    trisk, bias2 = evaluation.gates
    assert trisk.outcome == bias2.outcome == "OK*" and not evaluation.guards[0].warning
    assert tuple(words(trisk)["guards"]) == tuple(words(bias2)["guards"]) == (said(unanswered),)


def test_real_run_tested_against_itself_is_identical(tmp_path: Path) -> None:
    spec = spec_under_test(
        dl_spec(tmp_path, "monobert"), shared_path(DL, "runs", "run-msmarco-passage-bm25-monobert-0.8-0.5.txt.gz")
    )
    evaluation = evaluate_spec(spec, use_cache=False).measure()
    assert kinds(evaluation.guards) == ["identical", "unanswered_topics"]
    identical, unanswered = evaluation.guards
    assert identical.systems == ("monobert",)
    # the reference's own run: no change, as right after --bvtest-update, a note that makes no gate OK*; the gates
    # are OK* by the unanswered topics alone
    assert not identical.warning and said(identical).startswith("no change: the candidate's per-topic nDCG@10 scores")
    assert all(
        gate.outcome == "OK*" and tuple(words(gate)["guards"]) == (said(unanswered),) for gate in evaluation.gates
    )
    # the same run under another baseline's name is a run tested by mistake: a warning on every gate
    mistaken = spec_under_test(
        dl_spec(tmp_path, "drmm"), shared_path(DL, "runs", "run-msmarco-passage-bm25-monobert-0.8-0.5.txt.gz")
    )
    evaluation = evaluate_spec(mistaken, use_cache=False).measure()
    identical = evaluation.guards[0]
    assert identical.kind == "identical" and identical.warning and identical.systems == ("monobert",)
    assert all(tuple(words(gate)["guards"])[0].startswith("identical:") for gate in evaluation.gates)


@pytest.mark.parametrize("target, fires", [("mean", False), ("1", False), ("0.2", True)])
def test_real_target_constant(tmp_path: Path, target: str, fires: bool) -> None:
    spec = dl_spec(tmp_path, "monobert")
    spec.write_text(spec.read_text() + f"analysis: {{target: {target}}}\n")
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False).measure()
    assert ("target_constant" in kinds(evaluation.guards)) == fires
    trisk, bias2 = evaluation.gates
    assert ("IPM 2022 Lemma 1" in " ".join(tuple(words(bias2)["guards"]))) == fires and not any(
        "Lemma" in g for g in tuple(words(trisk)["guards"])
    )


def test_thresholds_come_from_the_spec() -> None:
    topics = [f"t{j}" for j in range(4)]
    assert unanswered_topics(SCORES, topics, "AP", threshold=0.25).warning is False  # 25% is not above 25%
    lenient = GuardSettings(stale_reference_p=0.05, stale_reference_gain=0.05)
    assert stale_reference(0.54, 0.50, "production", 0.02, "nDCG@10", 10_000) is None
    guard = stale_reference(0.54, 0.50, "production", 0.02, "nDCG@10", 10_000, lenient)
    assert guard is not None and "(+0.0400, +8%, randomization p 0.0200)" in said(guard)


def test_a_reference_without_a_ranking_where_the_candidate_scores_is_a_free_win() -> None:
    imputed = np.zeros_like(SCORES, dtype=bool)
    imputed[0, [1, 2]] = True  # production has no ranking for t1 (candidate 0 there too) and t2
    scores = SCORES.copy()
    scores[0, 2] = 0.0
    guard = reference_missing_topics(scores, imputed, ["t0", "t1", "t2", "t3"], 2, 0, SYSTEMS, "AP")
    assert guard is not None and guard.warning and guard.topics == ("t2",) and guard.reference == "production"
    assert said(guard).startswith(
        "the reference production has no ranking for 1 of 4 topics where candidate scores "
        "above 0 (AP 0 by the missing-topic rule): t2;"
    )
    assert guard.concerns("mean", "production") and not guard.concerns("mean", None)
    answered = np.zeros_like(imputed)
    assert reference_missing_topics(scores, answered, ["t0", "t1", "t2", "t3"], 2, 0, SYSTEMS, "AP") is None


def test_real_trec_covid_reference_cut_to_35_topics_no_longer_passes_a_worse_candidate_green(tmp_path: Path) -> None:
    """OHSU round 4: AbstractOHSU loses to FullOHSU by 0.089 nDCG@10 (p 0.01). Against a FullOHSU run cut to
    topics 1-35, the ten free wins make it +0.08 and every gate passed OK; the guard makes them OK*."""
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    with gzip.open(runs / "FullOHSU.txt.gz", "rt") as full:
        cut = [line for line in full if int(line.split()[0]) <= 35]
    (tmp_path / "full-cut.run").write_text("".join(cut))
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round4.txt")}
        measures: [nDCG@10]
        baselines: {{production: full-cut.run}}
        candidate: {{run: {runs / "AbstractOHSU.txt.gz"}, name: candidate}}
        reference: production
        cache: false
        gates:
          - {{statistic: trisk, false_alarm: 0.05}}
          - {{statistic: mean, max_decrease: 0.01, false_alarm: 0.05}}
          - {{statistic: var, max: 1.0, name: absolute}}
    """)
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False).measure()
    assert evaluation.system("candidate").values["mean"] - evaluation.system("production").values["mean"] == (
        pytest.approx(0.0825, abs=5e-5)
    )
    assert kinds(evaluation.guards) == ["reference_missing", "unanswered_topics"]
    assert evaluation.guards[0].topics == tuple(str(topic) for topic in range(36, 46))
    trisk, mean, absolute = evaluation.gates
    assert trisk.outcome == mean.outcome == "OK*" and tuple(words(trisk)["guards"])[0].startswith(
        "the reference production has no"
    )
    assert absolute.outcome == "OK"  # an absolute bound is not measured against the reference


def test_real_web_2012_baselines_miss_seven_topics_a_spec_may_accept_it_and_rejects_a_share_above_one(
    tmp_path: Path,
) -> None:
    """Four of Indri's official Web 2012 baselines all score 0 on 7 of 50 topics (14%): with the default 10% that
    is a warning (every gate OK*), with `guards: {unanswered_share: 0.2}` a note."""
    folder = shared_path("trec_web2012_risk_baselines")
    spec = tmp_path / "bvtest.yaml"
    text = textwrap.dedent(f"""
        qrels: {folder / "qrels.web.151-200.txt"}
        measures: [nDCG@20]
        baselines:
          rm: {folder / "runs" / "rm.results-cata-filtered.txt.gz"}
          ql-unfiltered: {folder / "runs" / "ql.results-cata.txt.gz"}
          rm-catb: {folder / "runs" / "rm.results-catb-filtered.txt.gz"}
        candidate: {{run: {folder / "runs" / "ql.results-cata-filtered.txt.gz"}, name: ql}}
        reference: rm
        cache: false
        gates: [{{statistic: mean, max_decrease: 0.05}}]
        analysis: {{risk_alpha: 1, guards: GUARDS}}
    """)
    spec.write_text(text.replace("GUARDS", "{}"))
    default = evaluate_spec(spec_under_test(spec), use_cache=False).measure()
    assert default.guards[0].kind == "unanswered_topics" and len(default.guards[0].topics) == 7
    # the gate's verdict also rests on unjudged documents: weighed over plausible gradings of them it passes
    # (docs/judgments.md), and the guard makes that pass OK*
    assert default.guards[0].warning and default.gates[0].guards == (default.guards[0],)
    assert default.gates[0].plausible.decided is True and default.gates[0].outcome == "OK*"
    spec.write_text(text.replace("GUARDS", "{unanswered_share: 0.2}"))
    accepted = evaluate_spec(spec_under_test(spec), use_cache=False).measure()
    assert not accepted.guards[0].warning and accepted.gates[0].guards == ()
    spec.write_text(text.replace("GUARDS", "{stale_reference_gain: 1.5}"))
    with pytest.raises(InputError, match=r"analysis\.guards\.stale_reference_gain: must lie between 0 and 1"):
        spec_under_test(spec)


def test_a_gate_with_its_own_reference_is_checked_for_that_references_missing_topics(tmp_path: Path) -> None:
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    with gzip.open(runs / "FullOHSU.txt.gz", "rt") as full:
        (tmp_path / "full-cut.run").write_text("".join(line for line in full if int(line.split()[0]) <= 35))
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round4.txt")}
        measures: [nDCG@10]
        baselines: {{production: {runs / "FullUDel.txt.gz"}, cut: full-cut.run}}
        candidate: {{run: {runs / "AbstractOHSU.txt.gz"}, name: candidate}}
        reference: production
        cache: false
        gates:
          - {{statistic: mean, max_decrease: 0.01, reference: cut}}
          - {{statistic: mean, max_decrease: 0.2, name: against_production}}
    """)
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False).measure()
    missing = [guard for guard in evaluation.guards if guard.kind == "reference_missing"]
    assert [guard.reference for guard in missing] == ["cut"]
    against_cut, against_production = evaluation.gates
    # weighed too (half of AbstractOHSU's top 10 is unjudged): it passes its plausible gradings, the guard makes it OK*
    assert against_cut.outcome == "OK*" and tuple(words(against_cut)["guards"])[0].startswith(
        "the reference cut has no ranking"
    )
    assert not any(guard.startswith("the reference") for guard in tuple(words(against_production)["guards"]))


def test_real_dl_hard_a_gate_with_its_own_stale_reference_gets_a_note(tmp_path: Path) -> None:
    """DL-HARD documents: BM25+ELECTRA beats plain BM25 by +0.1134 nDCG@10 (+42%, randomization p 0.0003) and
    BM25+PARADE by +0.0289 (p 0.35). A gate that names `reference: bm25` got no word before: only the spec's
    reference (PARADE) was checked for being stale. The word is a note: the gate stays OK (issue 21)."""
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")}
        measures: [nDCG@10]
        baselines:
          parade: {runs / "bm25+parade-electra.run.gz"}
          bm25: {runs / "bm25.run.gz"}
        candidate: {runs / "bm25+electra-mp.run.gz"}
        reference: parade
        cache: false
        gates:
          - {{statistic: mean, max_decrease: 0.01, reference: bm25, name: vs-bm25}}
          - {{statistic: mean, max_decrease: 0.05, name: vs-parade}}
    """)
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False).measure()
    bm25 = next(c for c in evaluation.comparisons if c.baseline == "bm25")
    assert bm25.difference == pytest.approx(0.384965 - 0.271607, abs=1e-6) and bm25.p_randomization < 0.01
    stale = [guard for guard in evaluation.guards if guard.kind == "stale_reference"]
    assert [guard.reference for guard in stale] == ["bm25"]  # PARADE, +0.0289 at p 0.35, is not stale
    assert said(stale[0]).endswith("compare the gates that name `reference: bm25` with a recent baseline")
    vs_bm25, vs_parade = evaluation.gates
    assert said(stale[0]).startswith("a big improvement over bm25: mean nDCG@10 0.2716 → 0.3850 (+0.1134, +42%")
    # weighed too (DL-HARD judges half of each top 10): both pass their plausible gradings; the big improvement is a
    # note of the measure, not the gates'
    assert vs_bm25.outcome == vs_parade.outcome == "OK"
    assert vs_bm25.plausible.decided is True and vs_parade.plausible.decided is True
    assert not tuple(words(vs_bm25)["guards"]) and not tuple(words(vs_parade)["guards"])


def test_real_candidate_made_for_other_topics_no_longer_passes_the_var_gate_green(tmp_path: Path) -> None:
    """A DL19 passage run (DRMM) as the candidate of the DL-HARD document gates: it ranks 13 of the 50 DL-HARD
    topics and scores 0 on all of them, so its Var is 0 and the Var gate passed plain OK (the other gates fail). The
    qrels judge none of its documents: every gate fails (nothing judged is not green), the guard among its
    warnings."""
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")}
        measures: [nDCG@10]
        baselines:
          production: {runs / "bm25+electra-mp.run.gz"}
          bm25: {runs / "bm25.run.gz"}
        reference: production
        cache: false
        gates:
          - {{statistic: var, max_increase: 5%, false_alarm: 0.05}}
          - {{statistic: mean, max_decrease: 0.01}}
    """)
    )
    drmm = shared_path(DL, "runs", "drmm.res.gz")
    evaluation = evaluate_spec(spec_under_test(spec, drmm), use_cache=False).measure()
    candidate = evaluation.matrix.row("candidate")
    assert not candidate.any() and len(evaluation.system("candidate").missing_topics) == 37
    missing = next(guard for guard in evaluation.guards if guard.kind == "candidate_missing")
    assert missing.warning and missing.topics == evaluation.system("candidate").missing_topics
    assert said(missing).startswith("the candidate has no ranking for 37 of 50 topics that other systems rank")
    var, mean = evaluation.gates
    assert var.value == 0.0 and var.outcome == "FAIL" and said(missing) in tuple(words(var)["guards"])
    assert [guard.kind for guard in var.guards if guard.fails] == ["nothing_judged"]
    assert mean.outcome == "FAIL" and f"  warning: {said(missing)}" in words(mean)["message"]
    # a complete candidate run draws no such warning
    complete = evaluate_spec(spec_under_test(spec, runs / "bm25+parade-electra.run.gz"), use_cache=False).measure()
    assert "candidate_missing" not in kinds(complete.guards)


def test_real_candidate_scoring_zero_everywhere_no_longer_passes_var_and_zrisk_green(tmp_path: Path) -> None:
    """DL-HARD's BM25+RM3 run with its document ids in another form ('msmarco_doc_' + id, as MS MARCO v2 writes
    them) against the v1 qrels: it ranks all 50 topics, retrieves no judged document and scores 0 everywhere. Its
    Var (0) passed the Var gate and its ZRisk (0, MATH.md §4: z = 0 where e = 0) the ZRisk gate plain OK, then OK*
    with the guard; now they fail: nothing judged is not green."""
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    with gzip.open(runs / "bm25+rm3.run.gz", "rt") as source:
        lines = [line.split() for line in source if line.strip()]
    renamed = tmp_path / "renamed.run"
    renamed.write_text("".join(f"{q} Q0 msmarco_doc_{d} {r} {s} {t}\n" for q, _, d, r, s, t in lines))
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")}
        measures: [nDCG@10]
        baselines:
          production: {runs / "bm25+electra-mp.run.gz"}
          bm25: {runs / "bm25.run.gz"}
        reference: production
        gates:
          - {{statistic: var, max_increase: 5%}}
          - {{statistic: zrisk, max_decrease: 1}}
          - {{statistic: mean, max_decrease: 0.01}}
    """)
    )
    evaluation = evaluate_spec(spec_under_test(spec, renamed), use_cache=False).measure()
    assert not evaluation.matrix.row("candidate").any() and evaluation.system("candidate").missing_topics == ()
    assert "candidate_missing" not in kinds(evaluation.guards)
    answered = (evaluation.matrix.row("production") > 0) | (evaluation.matrix.row("bm25") > 0)
    assert answered.sum() == 46
    zero = next(guard for guard in evaluation.guards if guard.kind == "candidate_zero")
    assert zero.warning and said(zero) == (
        "the candidate scores 0 nDCG@10 on all 50 topics, while other systems score above 0 on 46 of them: does it "
        "retrieve judged documents? (document ids in another form than the qrels', a run of another collection, or "
        "qrels of another round or collection than the run: a round-4 run against round-3 qrels retrieves none of the "
        "documents judged then) A gate that passes says nothing about its quality: scores of 0 everywhere have Var 0 "
        "and ZRisk 0"
    )
    var, zrisk, mean = evaluation.gates
    nothing = next(guard for guard in evaluation.guards if guard.kind == "nothing_judged")
    assert (var.value, var.outcome, tuple(words(var)["guards"])) == (0.0, "FAIL", (said(zero), said(nothing)))
    assert (zrisk.value, zrisk.outcome, tuple(words(zrisk)["guards"])) == (0.0, "FAIL", (said(zero), said(nothing)))
    assert words(var)["sentence"].startswith("Fails whatever its numbers say (Var 0 vs")
    assert mean.outcome == "FAIL"
    # the run as published scores: no such warning
    published = evaluate_spec(spec_under_test(spec, runs / "bm25+rm3.run.gz"), use_cache=False).measure()
    assert "candidate_zero" not in kinds(published.guards)


def test_real_round_4_run_against_round_3_qrels_is_said_to_be_judged_by_another_round(tmp_path: Path) -> None:
    """TREC-COVID: a round-4 run retrieves only documents no earlier round judged, so against round-3 qrels it
    scores 0 everywhere; the guard named only document id forms as a cause (issue 19)."""
    qrels = shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round3.txt")
    runs = shared_path("trec_covid_ohsu_runs", "runs")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {qrels}\nmeasures: [nDCG@10]\n"
        f"baselines: {{round3: {runs / 'Round3_Runs_v2' / 'orig_fusion_v2.txt.gz'}}}\n"
        f"candidate: {runs / 'Round4_Runs_LessRM3' / 'R4_total_fusion.txt.gz'}\n"
        "reference: round3\ncache: false\ngates:\n  - {statistic: var, max_increase: 5%}\n"
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False, allow_outside=True).measure()
    zero = next(guard for guard in evaluation.guards if guard.kind == "candidate_zero")
    assert "qrels of another round or collection than the run" in said(zero)
    # the qrels judge nothing it retrieved: not a green
    assert evaluation.gates[0].outcome == "FAIL" and "nothing_judged" in kinds(evaluation.gates[0].guards)
