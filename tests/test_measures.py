"""Measure names (ir_measures and trec_eval syntax) and evaluate_run's semantics."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run
from pytest_bvtest.scoring.gdeval import ranked_docnos
from pytest_bvtest.scoring.measures import evaluate_run
from pytest_bvtest.spec.measures import Measure, parse_measure
from tests.oracles import trec_eval_measure

# MATH.md section 1's golden example (see tests/test_gdeval.py for its ERR and gdeval nDCG).
GOLDEN_QRELS = Qrels({"1": {"d1": 3, "d2": 1, "d3": 0, "d4": -2, "d5": 2}, "3": {"f1": 4, "f2": 1}})
GOLDEN_RUN = Run("golden", {"1": {"d4": 5.0, "d2": 4.0, "d1": 3.0, "d6": 3.0, "d5": 1.0}, "3": {"f2": 2.0, "f1": 1.0}})


@pytest.mark.parametrize(
    ("text", "canonical", "trec_eval_name"),
    [
        ("AP", "AP", "map"),
        ("MAP", "AP", "map"),
        ("map", "AP", "map"),
        ("AP(rel=2)", "AP(rel=2)", "map"),
        ("AP@100", "AP@100", "map_cut_100"),
        ("map_cut_100", "AP@100", "map_cut_100"),
        ("nDCG@10", "nDCG@10", "ndcg_cut_10"),
        ("NDCG@10", "nDCG@10", "ndcg_cut_10"),
        ("ndcg_cut_10", "nDCG@10", "ndcg_cut_10"),
        ("ndcg_cut.10", "nDCG@10", "ndcg_cut_10"),
        ("ndcg", "nDCG", "ndcg"),
        ("P@10", "P@10", "P_10"),
        ("P_10", "P@10", "P_10"),
        ("P(rel=2)@10", "P(rel=2)@10", "P_10"),
        ("RR", "RR", "recip_rank"),
        ("recip_rank", "RR", "recip_rank"),
        ("RR(rel=2)", "RR(rel=2)", "recip_rank"),
        ("RR@10", "RR@10", None),
        ("R@1000", "R@1000", "recall_1000"),
        ("recall_1000", "R@1000", "recall_1000"),
        ("Rprec", "Rprec", "Rprec"),
        ("bpref", "Bpref", "bpref"),
        ("infAP", "infAP", "infAP"),
        ("success_10", "Success@10", "success_10"),
        ("num_ret", "NumRet", "num_ret"),
        ("num_rel_ret", "NumRet(rel=1)", "num_rel_ret"),
        ("Judged@10", "Judged@10", None),
        ("NumRelRet", "NumRet(rel=1)", "num_rel_ret"),
        ("num_rel", "NumRel", "num_rel"),
        ("set_P", "SetP", "set_P"),
        ("SetRelP", "SetP(relative=True)", "set_relative_P"),
        ("set_recall", "SetR", "set_recall"),
        ("set_F", "SetF", "set_F"),
        ("set_map", "SetAP", "set_map"),
        ("nDCG(judged_only=True)@10", "nDCG(judged_only=True)@10", "ndcg_cut_10"),
        ("ERR@20", "ERR@20", None),
        ("nDCG(dcg='exp-log2')@20", "nDCG(dcg='exp-log2')@20", None),
        (' nDCG(dcg="exp-log2")@20 ', "nDCG(dcg='exp-log2')@20", None),
    ],
)
def test_names_parse_to_the_canonical_ir_measures_form(text, canonical, trec_eval_name):
    measure = parse_measure(text)
    assert str(measure) == canonical
    assert measure.trec_eval_name == trec_eval_name
    assert parse_measure(canonical) == measure
    assert hash(parse_measure(canonical)) == hash(measure)


def test_equal_measures_written_differently_are_one_key():
    assert parse_measure("AP(rel=1)") == parse_measure("AP") == parse_measure("map")
    assert len({parse_measure("ndcg_cut_10"), parse_measure("nDCG@10"), parse_measure("NDCG@10")}) == 1
    assert parse_measure("AP(rel=2)") != parse_measure("AP")
    assert parse_measure("nDCG@10") != parse_measure("nDCG(dcg='exp-log2')@10")


def test_measure_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_measure("AP").cutoff = 10  # type: ignore[misc]


def test_which_engine_computes_a_measure():
    assert parse_measure("ERR@20").uses_gdeval
    assert parse_measure("nDCG(dcg='exp-log2')@20").uses_gdeval
    assert not parse_measure("nDCG@20").uses_gdeval


@pytest.mark.parametrize(
    ("label", "relevance_level", "canonical"),
    [
        ("map", 1, "AP"),
        ("map", 2, "AP(rel=2)"),
        ("recip_rank", 2, "RR(rel=2)"),
        ("P_10", 2, "P(rel=2)@10"),
        ("ndcg_cut_10", 2, "nDCG@10"),
        ("num_ret", 2, "NumRet"),
        ("num_rel_ret", 2, "NumRet(rel=2)"),
    ],
)
def test_trec_eval_labels_map_back_to_measures(label, relevance_level, canonical):
    measure = trec_eval_measure(label, relevance_level)
    assert str(measure) == canonical
    assert measure.trec_eval_name == label


@pytest.mark.parametrize("label", ["relstring", "11pt_avg", "Rprec_mult_0.20", "runid", "utility"])
def test_trec_eval_labels_without_a_supported_measure_are_rejected(label):
    with pytest.raises(InputError, match="not supported|unknown measure"):
        trec_eval_measure(label)


def test_unknown_measure_suggests_close_names():
    with pytest.raises(InputError) as raised:
        parse_measure("nDGC@10", path="bvtest.yml", line=4)
    message = str(raised.value)
    assert message.startswith("bvtest.yml:4: unknown measure 'nDGC@10'; did you mean nDCG@10 (trec_eval: ndcg_cut_10)?")
    assert "supported: AP" in message and "ERR@k" in message


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("ndcg@10", "nDCG@10"),
        ("recip_rnk", "RR (trec_eval: recip_rank)"),
        ("ndcg_cutt_10", "nDCG@10"),
        ("EER@20", "ERR@20"),
    ],
)
def test_suggestions_cover_case_slips_and_trec_eval_names(text, suggestion):
    with pytest.raises(InputError, match="did you mean") as raised:
        parse_measure(text)
    assert suggestion in str(raised.value)


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("nDCG@10(judged_only=True)", "nDCG(judged_only=True)@10"),
        ("P@10(rel=2)", "P(rel=2)@10"),
        ("RR @ 10 (rel=2)", "RR(rel=2)@10"),
    ],
)
def test_parameters_after_the_cutoff_are_refused_with_the_name_to_write(text, written):
    with pytest.raises(InputError) as raised:
        parse_measure(text, path="bvtest.yaml", line=3)
    assert str(raised.value) == (
        f"bvtest.yaml:3: measure '{text}' puts its parameters after the cutoff; ir_measures writes them before it; "
        f"write {written}"
    )
    assert str(parse_measure(written)) == written  # the name to write is a measure


def test_parameters_after_the_cutoff_that_are_wrong_anyway_get_the_error_of_the_name_to_write():
    with pytest.raises(InputError) as raised:
        parse_measure("ERR@20(judged_only=True)")
    assert str(raised.value).startswith("measure 'ERR(judged_only=True)@20': unsupported params found: ['judged_only']")


def test_a_name_without_any_close_match_lists_what_is_supported():
    with pytest.raises(InputError) as raised:
        parse_measure("zzz")
    assert "did you mean" not in str(raised.value)
    assert "supported: AP, AP@k, GMAP, P@k, R@k, RR" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("nDCG(gains={0:2,1:1,2:3})@10", "a grade of 0 or below must gain 0"),
        ("nDCG(gains={1:float('inf')})@10", "cannot read measure"),
        ("nDCG(gains={1:'x'})@10", "finite number of at least 0"),
        ("nDCG(gains={1:3},dcg='exp-log2')@10", "gains= with dcg='exp-log2'"),
        ("nDCG(dcg='exp-log2',judged_only=True)@10", "judged_only=True with gdeval"),
        ("IPrec@1.5", "recall level from 0 to 1"),
        ("IPrec(judged_only=True)@0.1", "not supported"),
        ("NumQ", "counts topics"),
        ("SetF(beta=0.5,judged_only=True)", "is not supported: SetF"),
        ("RBP(p=1.2)", "strictly between 0 and 1"),
        ("GMAP(rel=0)", "rel must be an integer grade"),
        ("alpha_nDCG@10", "subtopic"),
        ("INST", "C/W/L"),
        ("Judged", "needs a cutoff"),
        ("all_trec", "group of measures"),
        ("P", "needs a cutoff"),
        ("P_5,10", "names 2 measures"),
        ("P@0", "positive integer"),
        ("AP(rel=2.0)", "invalid param rel=2.0"),
        ("AP(rel=True)", "rel must be an integer grade"),
        ("P@True", "cutoff must be a positive integer"),
        ("AP(rel=two)", "cannot read measure"),
        ("   ", "empty measure name"),
    ],
)
def test_unsupported_or_malformed_measures_say_why(text, reason):
    with pytest.raises(InputError, match=reason.replace("(", r"\(")):
        parse_measure(text)


def test_golden_trec_eval_values_with_spam_unjudged_and_a_tie():
    measures = [parse_measure(name) for name in ("ndcg_cut_5", "AP", "AP(rel=2)", "RR", "RR(rel=2)", "P@5", "R@5")]
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, measures)
    topic_1 = {str(measure): per_topic["1"] for measure, per_topic in values.items()}
    # Ranking d4(-2) d2(1) d6(unjudged) d1(3) d5(2): the tie d1/d6 puts d6 first (docno descending).
    assert topic_1 == {
        "nDCG@5": pytest.approx(0.566305, abs=1e-6),  # MATH.md section 1; trec_eval's linear gain, -2 as 0
        "AP": pytest.approx((1 / 2 + 2 / 4 + 3 / 5) / 3, abs=1e-12),
        "AP(rel=2)": pytest.approx((1 / 4 + 2 / 5) / 2, abs=1e-12),
        "RR": pytest.approx(1 / 2, abs=1e-12),
        "RR(rel=2)": pytest.approx(1 / 4, abs=1e-12),
        "P@5": pytest.approx(3 / 5, abs=1e-12),
        "R@5": pytest.approx(1.0, abs=1e-12),
    }


def test_golden_judged_shares_count_every_judgment_and_short_rankings_by_what_they_retrieve():
    # Ranking of topic 1: d4 (judged -2) d2 (1) d6 (unjudged, before d1 by the tie) d1 (3) d5 (2); topic 3: f2 f1.
    measures = [parse_measure(f"Judged@{k}") for k in (1, 2, 3, 4, 5, 10)]
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, measures)
    assert [values[measure]["1"] for measure in measures] == pytest.approx([1, 1, 2 / 3, 3 / 4, 4 / 5, 4 / 5])
    # a ranking shorter than k is judged over what it retrieved, as ir_measures' Judged@k: 5 documents, 4 judged
    assert [values[measure]["3"] for measure in measures] == [1.0] * 6


@pytest.mark.parametrize("relevant", ["a", "b", "c"])
def test_pytrec_eval_breaks_ties_by_docno_descending_like_gdeval(relevant):
    scores = {"a": 1.0, "b": 1.0, "c": 1.0}
    rank = ranked_docnos(scores).index(relevant) + 1
    rr = parse_measure("RR")
    value = evaluate_run(Qrels({"q": {relevant: 1}}), Run("tied", {"q": scores}), [rr])[rr]["q"]
    assert value == pytest.approx(1 / rank, abs=1e-15)
    assert rank == {"c": 1, "b": 2, "a": 3}[relevant]


def test_cut_off_reciprocal_rank_is_zero_below_the_cutoff():
    measures = [parse_measure(name) for name in ("RR@1", "RR@2", "RR(rel=2)@3", "RR(rel=2)@4")]
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, measures)
    assert [values[measure]["1"] for measure in measures] == [0.0, 0.5, 0.0, 0.25]


def test_measures_of_several_relevance_levels_in_one_call_equal_separate_calls():
    names = [
        "AP",
        "AP(rel=2)",
        "nDCG@5",
        "P(rel=2)@2",
        "NumRet",
        "NumRet(rel=2)",
        "NumRel(rel=3)",
        "AP(judged_only=True)",
    ]
    measures = [parse_measure(name) for name in names]
    together = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, measures)
    for measure in measures:
        assert together[measure] == evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [measure])[measure]
    counts = {str(measure): together[measure]["1"] for measure in measures[4:7]}
    assert counts == {"NumRet": 5.0, "NumRet(rel=2)": 2.0, "NumRel(rel=3)": 1.0}


@pytest.mark.parametrize(
    ("judged_only_name", "plain_name"),
    [("nDCG(judged_only=True)@3", "nDCG@3"), ("AP(judged_only=True)", "AP"), ("P(judged_only=True)@3", "P@3")],
)
def test_judged_only_scores_the_run_without_unjudged_and_negatively_graded_documents(judged_only_name, plain_name):
    # trec_eval -J marks unjudged documents with a negative grade internally, so a judged grade below
    # 0 (spam -2) is dropped with them.
    judged_run = Run(
        "judged",
        {
            qid: {d: s for d, s in docs.items() if GOLDEN_QRELS.judgments[qid].get(d, -1) >= 0}
            for qid, docs in GOLDEN_RUN.scores.items()
        },
    )
    judged_only, plain = parse_measure(judged_only_name), parse_measure(plain_name)
    assert evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [judged_only])[judged_only] == pytest.approx(
        evaluate_run(GOLDEN_QRELS, judged_run, [plain])[plain], abs=1e-12
    )
    # d4 (spam) and d6 (unjudged) sit at ranks 1 and 3 of topic 1, so dropping them must matter.
    assert evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [plain])[plain]["1"] != pytest.approx(
        evaluate_run(GOLDEN_QRELS, judged_run, [plain])[plain]["1"]
    )


def test_only_topics_of_the_universe_that_the_run_ranks_are_reported():
    qrels = Qrels(
        {
            "9": {"x": 1},  # in the run
            "2": {"y": 0, "z": -2},  # no positive grade: outside the universe
            "5": {"w": 2},  # missing from the run: left to the matrix to zero-fill
            "4": {"v": 1},  # in the run with an empty ranking: same as missing
            "1": {"u": 1},  # in the run
        }
    )
    run = Run("r", {"1": {"u": 1.0}, "2": {"y": 1.0}, "4": {}, "8": {"x": 1.0}, "9": {"q": 2.0, "x": 1.0}})
    measures = [parse_measure("AP"), parse_measure("ERR@10"), parse_measure("nDCG(dcg='exp-log2')@10")]
    values = evaluate_run(qrels, run, measures)
    for measure in measures:
        assert list(values[measure]) == ["9", "1"], measure  # qrels order
    assert values[measures[0]] == {"9": 0.5, "1": 1.0}


def test_a_run_without_any_universe_topic_gives_empty_values():
    measures = [parse_measure("AP"), parse_measure("ERR@20")]
    assert evaluate_run(GOLDEN_QRELS, Run("elsewhere", {"99": {"a": 1.0}}), measures) == {
        measure: {} for measure in measures
    }


def test_err_grade_check_covers_the_whole_qrels():
    qrels = Qrels({"1": {"a": 1}, "2": {"b": 7}})
    with pytest.raises(InputError, match="topic 2, document b has grade 7"):
        evaluate_run(qrels, Run("r", {"1": {"a": 1.0}}), [parse_measure("ERR@20")])


def test_a_measure_built_directly_equals_the_parsed_one():
    assert Measure("AP") == parse_measure("AP")
    assert Measure("nDCG", cutoff=10) == parse_measure("ndcg_cut_10")
    assert Measure("NumRet").rel is None
    with pytest.raises(ValueError, match="unsupported measure family 'alpha_nDCG'"):
        Measure("alpha_nDCG")
