"""The shared API: a spec through the whole pipeline, checked against golden values and real runs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import randomization_test, shared_path, words
from scipy import stats as scipy_stats

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.plugin import BvtestAPI
from pytest_bvtest.scoring.matrix import retrieved_lists
from pytest_bvtest.spec.reader import load_spec, with_candidate_run
from pytest_bvtest.stats.simulation import simulate_topic_bias_variance


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def precision_run(tag: str, hits: dict[str, int]) -> str:
    """A run whose P@10 on query q is hits[q] / 10: the first hits[q] documents are relevant."""
    lines = []
    for query, count in hits.items():
        topic = query[1]
        docs = [f"r{topic}-{k}" for k in range(count)] + [f"n{topic}-{k}" for k in range(10 - count)]
        lines += [f"{query} Q0 {doc} {rank} {100 - rank} {tag}" for rank, doc in enumerate(docs, start=1)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def variations_project(tmp_path: Path) -> Path:
    qrels = "".join(f"{t} 0 r{t}-{k} 1\n" for t in "12" for k in range(10))
    write(tmp_path, "qrels.txt", qrels)
    # MATH.md section 5 golden example: topic 1 variations score [0.6, 0.4, 0.2] with popularity
    # [0.5, 0.3, 0.2]; topic 2 scores [0.8, 0.7], uniform popularity.
    write(tmp_path, "runs/candidate.run", precision_run("cand", {"q1a": 6, "q1b": 4, "q1c": 2, "q2a": 8, "q2b": 7}))
    write(tmp_path, "runs/production.run", precision_run("prod", {"q1a": 5, "q1b": 5, "q1c": 5, "q2a": 5, "q2b": 5}))
    write(
        tmp_path,
        "variations.tsv",
        """
        q1a 1 u1 0.5
        q1b 1 u2 0.3
        q1c 1 u3 0.2
        q2a 2 u1 1
        q2b 2 u2 1
    """,
    )
    write(tmp_path, "weights.tsv", "1 0.5\n2 0.5\n")
    return tmp_path


VARIATIONS_SPEC = """
    qrels: qrels.txt
    measures: [P@10]
    baselines: {production: runs/production.run}
    candidate: runs/candidate.run
    analysis:
      mve: {alpha: 2, weights: weights.tsv, variations: variations.tsv}
    gates:
      - {statistic: mve, min: 0.59}
      - {statistic: mve, max_decrease: 0.1}
"""


def test_query_variations_reproduce_the_intra_topic_golden_value(variations_project: Path) -> None:
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", VARIATIONS_SPEC)), use_cache=False)
    measure = evaluation.measure("P@10")
    assert measure.mve_method == "intra-topic (covariance 0)"  # topic 2 has no user u3
    assert measure.topics == ("1", "2")
    # per-topic scores the other statistics see: popularity-weighted means 0.46 and 0.75
    assert measure.matrix.row("candidate") == pytest.approx([0.46, 0.75], abs=1e-12)
    assert evaluation.statistic("mve", "candidate") == pytest.approx(0.59155, abs=1e-9)
    # production scores 0.5 on every variation: no variance, O = mean
    assert evaluation.statistic("mve", "production") == pytest.approx(0.5, abs=1e-12)
    assert [gate.passed for gate in measure.gates] == [True, True]


def test_query_variations_aligned_by_user_use_the_general_form(variations_project: Path) -> None:
    write(variations_project, "variations.tsv", "q1a 1 u1\nq1b 1 u2\nq2a 2 u1\nq2b 2 u2\n")
    spec = VARIATIONS_SPEC.replace("weights: weights.tsv, ", "")
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", spec)), use_cache=False)
    assert evaluation.measure().mve_method == "general (aligned by user)"
    # user 1's portfolio return (0.6 + 0.8) / 2 = 0.7, user 2's (0.4 + 0.7) / 2 = 0.55
    returns = np.array([0.7, 0.55])
    assert evaluation.statistic("mve") == pytest.approx(returns.mean() - 2 * returns.var(), abs=1e-12)


def test_general_form_takes_a_users_constant_popularity_as_the_users_probability(variations_project: Path) -> None:
    # Regression (issue 10): the general form ignored popularity, so at alpha = 0 it was not the
    # popularity-weighted mean the other statistics see (MATH.md section 5 PIN).
    write(variations_project, "variations.tsv", "q1a 1 u1 3\nq1b 1 u2 1\nq2a 2 u1 6\nq2b 2 u2 2\n")
    spec = VARIATIONS_SPEC.replace("weights: weights.tsv, ", "")
    at_zero = evaluate_spec(
        load_spec(write(variations_project, "bvtest.yaml", spec.replace("alpha: 2", "alpha: 0"))), use_cache=False
    )
    assert at_zero.measure().mve_method == "general (aligned by user)"
    # topic means with user probabilities [0.75, 0.25]: 0.75*0.6 + 0.25*0.4 = 0.55 and 0.75*0.8 + 0.25*0.7 = 0.775
    assert at_zero.measure().matrix.row("candidate") == pytest.approx([0.55, 0.775], abs=1e-12)
    assert at_zero.statistic("mve") == pytest.approx(0.6625, abs=1e-12)
    assert at_zero.statistic("mve") == pytest.approx(at_zero.statistic("mean"), abs=1e-12)
    # alpha = 2: user returns [0.7, 0.55] with probabilities [0.75, 0.25]: mu 0.6625, variance
    # 0.75 * 0.25 * 0.15^2 = 0.00421875, O = 0.6625 - 2 * 0.00421875 = 0.6540625
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", spec)), use_cache=False)
    assert evaluation.statistic("mve") == pytest.approx(0.6540625, abs=1e-12)


def test_mve_form_is_chosen_explicitly_or_automatically(variations_project: Path) -> None:
    # u1 has 3/4 of topic 1 but 1/2 of topic 2: no single user distribution, so auto takes the intra-topic form
    write(variations_project, "variations.tsv", "q1a 1 u1 3\nq1b 1 u2 1\nq2a 2 u1 1\nq2b 2 u2 1\n")
    spec = VARIATIONS_SPEC.replace("weights: weights.tsv, ", "")
    auto = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", spec)), use_cache=False)
    assert auto.measure().mve_method == "intra-topic (covariance 0)"
    forced = spec.replace("variations: variations.tsv", "variations: variations.tsv, form: general")
    with pytest.raises(InputError, match="general MVE form is not defined.*same share of every topic"):
        evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", forced)), use_cache=False)
    write(variations_project, "variations.tsv", "q1a 1 u1\nq1b 1 u2\nq2a 2 u1\nq2b 2 u2\n")
    intra = spec.replace("variations: variations.tsv", "variations: variations.tsv, form: intra-topic")
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", intra)), use_cache=False)
    assert evaluation.measure().mve_method == "intra-topic (covariance 0)"
    # topic 1 [0.6, 0.4]: mu 0.5, var 0.01; topic 2 [0.8, 0.7]: mu 0.75, var 0.0025; w = 1/2 each:
    # O = 0.625 - 2 * (0.25 * 0.01 + 0.25 * 0.0025) = 0.61875
    assert evaluation.statistic("mve") == pytest.approx(0.61875, abs=1e-12)
    with pytest.raises(InputError, match="`form: general` needs query variations"):
        load_spec(
            write(
                variations_project,
                "bvtest.yaml",
                "measures: [P@10]\nbaselines: {p: runs/production.run}\nanalysis: {mve: {form: general}}\n",
            )
        )


def test_a_missing_variation_scores_0_inside_its_topic_and_only_a_topic_without_any_is_missing(
    variations_project: Path,
) -> None:
    # Regression (issue 10): one missing variation listed the topic as "scored 0" although its score was the
    # mean of the others, breaking the JSON promise "0 wherever missing_topics lists it".
    from pytest_bvtest.report import outputs, terminal

    write(variations_project, "runs/candidate.run", precision_run("cand", {"q1a": 6, "q1c": 2}))
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", VARIATIONS_SPEC)), use_cache=False)
    candidate = evaluation.measure().system("candidate")
    assert candidate.missing_topics == ("2",)
    assert candidate.missing_queries == ("q1b", "q2a", "q2b")
    # topic 1: popularity [0.5, 0.3, 0.2] over [0.6, 0 (missing), 0.2] = 0.34; topic 2: no variation ranked, 0
    assert evaluation.measure().matrix.row("candidate") == pytest.approx([0.34, 0.0], abs=1e-12)
    document = outputs.evaluation_document(evaluation)["evaluations"][0]
    for system in document["systems"]:
        for topic in system["missing_topics"]:
            assert system["per_topic"][document["topics"].index(topic)] == 0
    notes = terminal.topic_notes(document)
    assert "candidate has no ranking for 1 of 2 topics (scored 0): 2" in notes
    assert (
        "candidate has no ranking for 3 query variation(s), each scored 0 in its topic's mean over variations: "
        "q1b, q2a, q2b" in notes
    )
    assert terminal.evaluation_title(document).endswith(" · MVE intra-topic (covariance 0)")


def test_a_judged_topic_without_variations_is_an_error(variations_project: Path) -> None:
    write(variations_project, "variations.tsv", "q1a 1\nq1b 1\n")
    with pytest.raises(InputError, match=r"variations.tsv: 1 judged topic\(s\) have no query variation: 2"):
        evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", VARIATIONS_SPEC)), use_cache=False)


def test_simulation_through_the_spec_equals_the_statistic_on_the_same_lists(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "example_project"
    spec_path = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {example}/eval/qrels.txt
        measures: [AP]
        baselines: {{production: {example}/runs/production.run}}
        candidate: {example}/runs/candidate-risky.run
        analysis: {{simulation: {{samples: 20, seed: 7}}}}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    qrels = read_qrels(example / "eval" / "qrels.txt")
    topics = evaluation.measure().topics
    runs = [read_run(example / "runs" / name) for name in ("production.run", "candidate-risky.run")]
    direct = simulate_topic_bias_variance(
        [retrieved_lists(run, qrels, topics) for run in runs], ["production", "candidate"], topics, samples=20, seed=7
    )
    assert np.array_equal(evaluation.simulation.topic_bias2, direct.topic_bias2)
    assert evaluation.simulation.seed == 7 and evaluation.simulation.samples == 20


def test_fixture_api_reads_any_statistic(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "example_project"
    api = BvtestAPI(use_cache=False)
    evaluation = api.evaluate(example / "bvtest.yaml", example / "runs" / "candidate-risky.run")
    ndcg = evaluation.measure("ndcg_cut_10")  # trec_eval spelling of nDCG@10
    candidate, production = ndcg.matrix.row("candidate"), ndcg.matrix.row("production")
    assert api.statistic(evaluation, "mean", measure="nDCG@10") == pytest.approx(candidate.mean())
    target = ndcg.matrix.scores.max(axis=0)
    assert evaluation.statistic("bias2", measure="nDCG@10") == pytest.approx((candidate.mean() - target.mean()) ** 2)
    assert evaluation.statistic("var", measure="nDCG@10") == pytest.approx(candidate.var())
    assert evaluation.statistic("gap_var", measure="nDCG@10") == pytest.approx((target - candidate).var())
    trisk_alpha0 = scipy_stats.ttest_rel(candidate, production).statistic
    delta = np.where(candidate >= production, candidate - production, 6 * (candidate - production))
    assert evaluation.statistic("urisk", measure="nDCG@10") == pytest.approx(delta.mean())
    assert evaluation.statistic("trisk", measure="nDCG@10") == pytest.approx(
        delta.mean() / (delta.std(ddof=1) / np.sqrt(len(delta)))
    )
    assert evaluation.statistic("trisk", "production", "nDCG@10") == 0.0
    assert trisk_alpha0 > 0  # the mean improves; only the risk-weighted view shows the harm
    with pytest.raises(InputError, match="unknown statistic"):
        evaluation.statistic("bias")


def test_dl_hard_bm25_reference_rm3_candidate_end_to_end(tmp_path: Path) -> None:
    """Real TREC runs: gates whose outcome follows from the published per-topic numbers."""
    folder = shared_path("dl_hard", "dataset")
    doc = folder / "baselines" / "doc"
    spec_path = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {folder}/dl_hard-doc.qrels
        measures: [nDCG@10, AP(rel=2)]
        baselines:
          bm25: {doc}/bm25.run.gz
          electra: {doc}/bm25+electra-mp.run.gz
        candidate: {{run: {doc}/bm25+rm3.run.gz, name: rm3}}
        reference: bm25
        analysis: {{risk_alpha: 1}}
        gates:
          - {{statistic: mean, max_decrease: 0.005}}
          - {{statistic: urisk, min: -0.02}}
          - {{statistic: trisk, min: -2.0}}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    ndcg, ap = evaluation.measure("nDCG@10"), evaluation.measure("AP(rel=2)")
    # means from the upstream trec_eval output (dl_hard PROVENANCE.md): BM25 0.2716 / 0.1741, RM3 0.2793 / 0.1740
    assert ndcg.system("bm25").values["mean"] == pytest.approx(0.2716, abs=5e-5)
    assert ndcg.system("rm3").values["mean"] == pytest.approx(0.2793, abs=5e-5)
    assert ap.system("bm25").values["mean"] == pytest.approx(0.1741, abs=5e-5)
    assert ap.system("rm3").values["mean"] == pytest.approx(0.1740, abs=5e-5)
    # the target is the per-topic best of the three runs, so its mean is at least electra's 0.3850
    assert ndcg.c >= 0.3850
    rm3, bm25 = ndcg.matrix.row("rm3"), ndcg.matrix.row("bm25")
    delta = np.where(rm3 >= bm25, rm3 - bm25, 2 * (rm3 - bm25))
    outcomes = {gate.id.rsplit("::", 2)[1] + "::" + gate.statistic: gate for gate in evaluation.gates}
    # nDCG@10: mean rises by 0.0077, so the mean gate passes; URisk(alpha=1) = mean(delta) is below -0.02
    assert outcomes["nDCG@10::mean"].passed_as_judged
    assert outcomes["nDCG@10::urisk"].value == pytest.approx(delta.mean(), abs=1e-12)
    assert delta.mean() < -0.02 and not outcomes["nDCG@10::urisk"].passed_as_judged
    # ... but not significantly (TRisk above -2): the gate passes
    assert -2 < outcomes["nDCG@10::trisk"].value < 0 and outcomes["nDCG@10::trisk"].passed_as_judged
    # AP(rel=2): the mean drops by 0.0002 < 0.005, passes
    assert outcomes["AP(rel=2)::mean"].passed_as_judged
    # DL-HARD judges about half of each top 10 (docs/judgments.md): RM3's URisk fails only as judged, and passes
    # with RM3's unjudged documents relevant; undecided, it passes CI (judgments: {undecided: warn})
    urisk = outcomes["nDCG@10::urisk"]
    assert urisk.outcome == "UNDECIDED" and urisk.corners.optimistic.passed and urisk.passed
    assert [gate.outcome for gate in evaluation.gates if gate is not urisk].count("FAIL") == 0


def test_every_measures_randomization_p_values_equal_one_test_per_pair() -> None:
    """The comparisons of all measures share one pass of sign flips; each p-value is that pair's own test."""
    from pytest_bvtest.judging.comparisons import RANDOMIZATION_PERMUTATIONS

    example = Path(__file__).resolve().parents[1] / "example_project"
    evaluation = BvtestAPI(use_cache=False).evaluate(example / "bvtest.yaml", example / "runs" / "candidate-risky.run")
    assert len(evaluation.measures) == 2
    for measure in evaluation.measures:
        candidate = measure.matrix.row("candidate")
        assert [comparison.baseline for comparison in measure.comparisons] == ["production", "bm25-alt", "past-release"]
        for comparison in measure.comparisons:
            alone = randomization_test(
                candidate,
                measure.matrix.row(comparison.baseline),
                RANDOMIZATION_PERMUTATIONS,
                evaluation.spec.analysis.bootstrap.seed,
            )
            assert comparison.p_randomization == alone.p_value


def test_candidate_against_every_baseline_with_holm_correction() -> None:
    example = Path(__file__).resolve().parents[1] / "example_project"
    evaluation = BvtestAPI(use_cache=False).evaluate(example / "bvtest.yaml", example / "runs" / "candidate-risky.run")
    ndcg = evaluation.measure("nDCG@10")
    candidate = ndcg.matrix.row("candidate")
    comparisons = {comparison.baseline: comparison for comparison in ndcg.comparisons}
    assert list(comparisons) == ["production", "bm25-alt", "past-release"]
    p_values = []
    for name, comparison in comparisons.items():
        other = ndcg.matrix.row(name)
        expected = scipy_stats.ttest_rel(candidate, other)
        assert comparison.t == pytest.approx(expected.statistic, rel=1e-10)
        assert comparison.p_t == pytest.approx(expected.pvalue, rel=1e-10)
        assert (comparison.wins, comparison.ties, comparison.losses) == (
            int((candidate > other).sum()),
            int((candidate == other).sum()),
            int((candidate < other).sum()),
        )
        assert abs(comparison.p_randomization - comparison.p_t) < 0.02  # two tests of one hypothesis agree
        p_values.append(comparison.p_t)
    # Holm by hand: sort ascending, multiply by (k - rank), running maximum, cap at 1
    order = np.argsort(p_values)
    adjusted = np.maximum.accumulate([min(1.0, p_values[i] * (len(p_values) - rank)) for rank, i in enumerate(order)])
    expected_holm = np.empty(len(p_values))
    expected_holm[order] = adjusted
    assert [c.p_t_holm for c in comparisons.values()] == pytest.approx(list(expected_holm), rel=1e-12)


def test_failing_gates_blame_topics_by_their_contribution_to_the_gated_statistic(tmp_path: Path) -> None:
    # production is flat; the candidate gains on topic 1 and loses on 3 and 4, same mean as production
    write(
        tmp_path,
        "scores.csv",
        """
        topic,production,bm25,new
        1,0.5,0.3,0.9
        2,0.5,0.6,0.5
        3,0.5,0.5,0.4
        4,0.5,0.4,0.2
    """,
    )
    write(tmp_path, "topics.tsv", "1\tfirst query\n2\tsecond query\n3\tthird query\n4\tfourth query\n")
    spec = write(
        tmp_path,
        "bvtest.yaml",
        """
        measures: [AP]
        baselines: scores.csv
        table_format: wide-topics
        topics: topics.tsv
        candidate: new
        reference: production
        gates:
          - {statistic: var, max_increase: 0.001}
          - {statistic: mean, max_decrease: 0.0}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    var_gate, mean_gate = evaluation.gates
    # Var's topic terms (x_j - mean)^2 / n: the candidate's deviations 0.4, 0, -0.1, -0.3, production's 0
    assert [impact.topic for impact in var_gate.worst_topics] == ["1", "4", "3"]
    assert [impact.contribution for impact in var_gate.worst_topics] == pytest.approx([0.04, 0.0225, 0.0025], abs=1e-12)
    assert var_gate.worst_topics[0].text == "first query"
    assert var_gate.worst_topics[0].delta == pytest.approx(0.4)  # a gain that raises the variance
    assert var_gate.delta == pytest.approx(0.065, abs=1e-12)
    # the null of no change: all 2^4 swaps of the candidate's and production's scores
    assert words(var_gate)["sentence"] == (
        "Quality varies more from query to query than in production "
        f"(Var 0.065 vs 0, limit 0.001 at a {var_gate.limits.rate:.0%} false-alarm rate)."
    )
    # the mean's terms are the raw differences over n: only the losing topics, worst first
    assert [impact.topic for impact in mean_gate.worst_topics] == ["4", "3"]
    assert [impact.contribution for impact in mean_gate.worst_topics] == pytest.approx([-0.075, -0.025], abs=1e-12)
    assert mean_gate.passed and words(mean_gate)["sentence"].startswith("Holds: the average quality over all queries")


def test_a_candidate_worse_on_every_topic_fails_a_trisk_gate_and_reports_minus_infinity(tmp_path: Path) -> None:
    # Regression (issue 10): TRisk with no spread was 0, so 0.05 worse on every topic passed `trisk min: -2`.
    jsonschema = pytest.importorskip("jsonschema")
    from pytest_bvtest.report import jsonreport, markdown, outputs, wording

    production = np.array([0.5, 0.3, 0.6, 0.4, 0.7])
    rows = "\n".join(f"{t},{p},{p - 0.05}" for t, p in zip(range(1, 6), production))
    write(tmp_path, "scores.csv", f"topic,production,new\n{rows}\n")
    spec_path = write(
        tmp_path,
        "bvtest.yaml",
        """
        measures: [AP]
        baselines: scores.csv
        table_format: wide-topics
        candidate: new
        reference: production
        gates:
          - {statistic: trisk, min: -2}
          - {statistic: trisk, min: -2, confidence: 0.9}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    assert evaluation.statistic("trisk", "new") == -np.inf
    assert evaluation.statistic("trisk_p", "new") == 0.0
    assert evaluation.statistic("trisk", "production") == 0.0
    assert [gate.passed for gate in evaluation.gates] == [False, False]
    assert evaluation.gates[1].interval == (-np.inf, -np.inf)
    document = outputs.evaluation_document(evaluation)
    text = jsonreport.dumps(document)  # allow_nan=False: no bare Infinity reaches the file
    jsonschema.validate(json.loads(text), jsonreport.schema())
    new = next(system for system in document["evaluations"][0]["systems"] if system["name"] == "new")
    assert new["trisk"] == "-Infinity" and float(new["trisk"]) == -np.inf
    assert document["evaluations"][0]["gates"][0]["value"] == "-Infinity"
    assert wording.format_number(new["trisk"]) == "-inf"
    assert "| ❌ FAIL | `AP::trisk[min]` | -inf |" in markdown.render(document)


def four_system_tables(tmp_path: Path, extra_analysis: str = "") -> Path:
    """Four systems on six topics as a wide-topics table; the candidate `new` trades mean for spread."""
    write(
        tmp_path,
        "scores.csv",
        """
        topic,production,bm25,steady,new
        1,0.50,0.30,0.40,0.90
        2,0.30,0.20,0.42,0.10
        3,0.60,0.50,0.41,0.95
        4,0.40,0.10,0.39,0.05
        5,0.70,0.40,0.43,0.85
        6,0.20,0.30,0.40,0.60
    """,
    )
    return write(
        tmp_path,
        "bvtest.yaml",
        f"""
        measures: [AP]
        baselines: scores.csv
        table_format: wide-topics
        candidate: new
        reference: production
        analysis:
          mve: {{alpha: 2, sweep: {{low: -4, high: 4, steps: 9}}}}
          rankings: {{against: mean, statistics: [mve, gawm, bias2_plus_var, robustness_index]}}
          hits: true
        {extra_analysis}
    """,
    )


def test_rankings_by_statistics_agree_with_scipy_and_the_naive_tau_ap(tmp_path: Path) -> None:
    from test_stats_rankings import naive_tau_ap

    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path)), use_cache=False)
    measure = evaluation.measure()
    names = measure.matrix.systems
    rankings = measure.rankings
    assert rankings.against == "mean" and list(rankings.agreements) == [
        "mve",
        "gawm",
        "bias2_plus_var",
        "robustness_index",
    ]
    means = np.array([evaluation.statistic("mean", name) for name in names])
    assert rankings.ranks["mean"].tolist() == list(scipy_stats.rankdata(-means))
    for name, agreement in rankings.agreements.items():
        values = np.array([evaluation.statistic(name, system) for system in names])
        oriented = values if name != "bias2_plus_var" else -values  # lower Bias²+Var is better
        assert agreement.kendall_tau == pytest.approx(scipy_stats.kendalltau(means, oriented).statistic, abs=1e-12)
        assert agreement.tau_ap == pytest.approx(naive_tau_ap(means, oriented), abs=1e-12)
    from pytest_bvtest.report import outputs

    document = outputs.evaluation_document(evaluation)["evaluations"][0]
    assert document["rankings"]["agreements"][0]["statistic"] == "mve"
    assert document["rankings"]["ranks"]["gawm"] == measure.rankings.ranks["gawm"].tolist()


def test_mve_sweep_values_ranks_and_flip_alpha_recomputed_independently(tmp_path: Path) -> None:
    from pytest_bvtest.stats.meanvar import mve_inter_topic

    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path)), use_cache=False)
    measure = evaluation.measure()
    scores, names = measure.matrix.scores, measure.matrix.systems
    sweep = measure.mve.sweep
    assert sweep.alphas.tolist() == [-4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    for k, alpha in enumerate(sweep.alphas):
        direct = np.array([mve_inter_topic(row, alpha).value for row in scores])
        np.testing.assert_allclose(sweep.values[k], direct, atol=1e-12)
        assert sweep.ranks[k].tolist() == list(scipy_stats.rankdata(-direct))
    # the candidate (mean 0.575, high spread) against production (mean 0.45): equal MVE at the flip alpha
    candidate, production = scores[names.index("new")], scores[names.index("production")]
    flip = sweep.flips["production"]
    assert flip == pytest.approx(
        (candidate.mean() - production.mean()) / (candidate.var() - production.var()), abs=1e-12
    )
    assert mve_inter_topic(candidate, flip).value == pytest.approx(mve_inter_topic(production, flip).value, abs=1e-12)
    assert mve_inter_topic(candidate, flip - 0.1).value > mve_inter_topic(production, flip - 0.1).value
    assert mve_inter_topic(candidate, flip + 0.1).value < mve_inter_topic(production, flip + 0.1).value
    # per-topic O_t sum to the value
    np.testing.assert_allclose(
        measure.mve.topic_values.sum(axis=1), [evaluation.statistic("mve", n) for n in names], atol=1e-12
    )


def test_gawm_and_hits_diagnostics_reach_the_fixture_and_the_json(tmp_path: Path) -> None:
    from pytest_bvtest.report import jsonreport, outputs
    from pytest_bvtest.stats.gawm import gawm, hits

    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path)), use_cache=False)
    measure = evaluation.measure()
    direct = gawm(measure.matrix.scores)
    np.testing.assert_array_equal(measure.gawm.topic_weights, direct.topic_weights)
    assert (measure.gawm.iterations, measure.gawm.converged) == (direct.iterations, direct.converged)
    np.testing.assert_array_equal(measure.hits.system_authority, hits(measure.matrix.scores).system_authority)
    document = outputs.evaluation_document(evaluation)["evaluations"][0]
    assert document["gawm"]["topic_weights"] == direct.topic_weights.tolist()
    assert document["gawm"]["iterations"] == direct.iterations and document["gawm"]["converged"] is True
    assert document["hits"]["topic_authority"] == hits(measure.matrix.scores).topic_authority.tolist()
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(jsonreport.session_document([document]), jsonreport.schema())


def test_intra_topic_per_topic_values_and_the_noise_aware_mve_gate_over_variations(variations_project: Path) -> None:
    from pytest_bvtest.stats.meanvar import mve_intra_topic

    spec = VARIATIONS_SPEC.replace("- {statistic: mve, min: 0.59}", "- {statistic: mve, min: 0.59, confidence: 0.9}")
    spec = spec.replace("analysis:", "analysis:\n      bootstrap: {resamples: 200, seed: 3}")
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", spec)), use_cache=False)
    measure = evaluation.measure()
    # MATH.md section 5 golden: O_1 = 0.5 * 0.46 - 2 * 0.25 * 0.0244 = 0.2178,
    # O_2 = 0.5 * 0.75 - 2 * 0.25 * 0.0025 = 0.37375
    candidate = measure.matrix.systems.index("candidate")
    np.testing.assert_allclose(measure.mve.topic_values[candidate], [0.2178, 0.37375], atol=1e-12)
    # the interval: a naive loop resampling topics (each with all its variations) with the bootstrap's own draws
    scores = {"1": [0.6, 0.4, 0.2], "2": [0.8, 0.7, np.nan]}
    popularity = {"1": [0.5, 0.3, 0.2], "2": [1.0, 1.0, 0.0]}
    topics = ["1", "2"]
    draws = np.random.default_rng(3).integers(0, 2, size=(200, 2))
    values = []
    for drawn in draws:
        chosen = [topics[j] for j in drawn]
        present = np.array([[not np.isnan(v) for v in scores[t]] for t in chosen])
        values.append(
            mve_intra_topic(
                np.array([scores[t] for t in chosen]),
                2.0,
                weights=[0.5, 0.5],
                popularity=np.array([popularity[t] for t in chosen]),
                present=present,
            ).value
        )
    low, high = np.quantile(values, [0.05, 0.95])
    gate = measure.gates[0]
    assert gate.interval == pytest.approx((low, high), abs=1e-12)
    assert gate.value == pytest.approx(0.59155, abs=1e-12)


def test_terminal_and_markdown_name_the_discerning_topics_rankings_and_the_mve_flip(tmp_path: Path) -> None:
    from pytest_bvtest.report import markdown, outputs, terminal

    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path)), use_cache=False)
    measure = evaluation.measure()
    document = outputs.evaluation_document(evaluation)
    lines = terminal.analysis_lines(document["evaluations"][0])
    order = np.argsort(-measure.gawm.topic_weights, kind="stable")
    most = ", ".join(measure.topics[j] for j in order[:3])
    least = ", ".join(measure.topics[j] for j in order[::-1][:3])
    assert lines[0] == (
        f"GAWM (q = 1, converged in {measure.gawm.iterations} iterations): most discerning topics {most}; least {least}"
    )
    mve = measure.rankings.agreements["mve"]
    assert lines[1].startswith(f"rankings against Mean: MVE Kendall {mve.kendall_tau:.2f}, tau_AP {mve.tau_ap:.2f}; ")
    flip = measure.mve.sweep.flips["production"]
    assert lines[2] == f"MVE (inter-topic) over alpha -4..4: new and production swap places at alpha {flip:.4f}"
    rendered = markdown.render(document)
    assert all(line.replace("&", "&amp;").replace("<", "&lt;") in rendered for line in lines)


def test_the_mve_sweep_is_plotted(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pytest_bvtest.report import outputs, plots

    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path)), use_cache=False)
    document = outputs.evaluation_document(evaluation)
    written = plots.write_plots(document, tmp_path / "plots")
    assert [path.name for path in written] == [
        "bvtest-AP-bias-variance.png",
        "bvtest-AP-scatter.png",
        "bvtest-AP-difference.png",
        "bvtest-AP-mve-sweep.png",
    ]
    assert written[3].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("with_qrels", [True, False])
def test_query_variations_from_per_query_score_tables(variations_project: Path, with_qrels: bool) -> None:
    # The MATH.md section 5 golden example again, the per-query P@10 given as a table instead of runs.
    rows = [
        ("candidate", "q1a", 0.6),
        ("candidate", "q1b", 0.4),
        ("candidate", "q1c", 0.2),
        ("candidate", "q2a", 0.8),
        ("candidate", "q2b", 0.7),
    ] + [("production", q, 0.5) for q in ("q1a", "q1b", "q1c", "q2a", "q2b")]
    write(variations_project, "per-query.csv", "system,topic,value\n" + "".join(f"{s},{q},{v}\n" for s, q, v in rows))
    spec = VARIATIONS_SPEC.replace(
        "baselines: {production: runs/production.run}", "baselines: {production: {scores: per-query.csv}}"
    )
    spec = spec.replace("candidate: runs/candidate.run", "candidate: {scores: per-query.csv, system: candidate}")
    if not with_qrels:
        spec = spec.replace("qrels: qrels.txt", "")
    evaluation = evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", spec)), use_cache=False)
    measure = evaluation.measure("P@10")
    assert measure.topics == ("1", "2") and measure.mve_method == "intra-topic (covariance 0)"
    assert measure.matrix.row("candidate") == pytest.approx([0.46, 0.75], abs=1e-12)
    assert evaluation.statistic("mve", "candidate") == pytest.approx(0.59155, abs=1e-9)
    write(
        variations_project,
        "per-query.csv",
        "system,topic,value\n" + "".join(f"{s},{q},{v}\n" for s, q, v in rows if q != "q2b"),
    )
    with pytest.raises(InputError, match="q2b"):
        evaluate_spec(load_spec(write(variations_project, "bvtest.yaml", spec)), use_cache=False)


def test_a_measure_the_project_cannot_compute_is_named_freely_when_every_system_comes_from_tables(
    tmp_path: Path,
) -> None:
    # Real data: TREC-COVID round 1 per-topic RBP(0.5) of 107 runs (Benham et al. ECIR 2021), long format.
    table = shared_path("trec_covid_round1_benham", "round1_data.csv")
    spec_path = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        measures: ["RBP(p=0.5)"]
        baselines: {{OHSU_RUN1: {{scores: {table}, format: long}}, T5R1: {{scores: {table}, format: long}}}}
        candidate: {{scores: {table}, format: long, system: OHSU_RUN2, name: OHSU_RUN2}}
        reference: OHSU_RUN1
        gates:
          - {{statistic: mean, max_decrease: 0.5, measure: "RBP(p=0.5)"}}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    measure = evaluation.measure("RBP(p=0.5)")
    # RBP is computed from runs too now: the label is its canonical name (binary relevance, Moffat & Zobel's)
    assert measure.measure == "RBP(p=0.5,rel=1)" and len(measure.topics) == 30
    rows = [line.split(",") for line in table.read_text().splitlines()[1:]]
    for system in ("OHSU_RUN1", "OHSU_RUN2", "T5R1"):
        values = [float(score) for name, _, score in rows if name == system]
        assert evaluation.statistic("mean", system, "RBP(p=0.5)") == pytest.approx(np.mean(values), abs=1e-12)
    # PROVENANCE.md's cross-checked cells: OHSU_RUN1 topic 1 = 0.8026, OHSU_RUN2 topic 2 = 0.9945
    assert measure.matrix.row("OHSU_RUN1")[measure.topics.index("1")] == 0.8026
    assert measure.matrix.row("OHSU_RUN2")[measure.topics.index("2")] == 0.9945
    assert [gate.passed for gate in measure.gates] == [True]
    # a run file cannot be scored with a free label (uRBP, trectools' RBP with a second qrels, is no measure here)
    free = write(tmp_path, "free.yaml", spec_path.read_text().replace("RBP(p=0.5)", "uRBP(p=0.5)"))
    assert evaluate_spec(load_spec(free), use_cache=False).measure("uRBP(p=0.5)").measure == "uRBP(p=0.5)"
    example = Path(__file__).resolve().parents[1] / "example_project"
    with pytest.raises(InputError, match="cannot compute|unknown|not supported|uRBP"):
        evaluate_spec(with_candidate_run(load_spec(free), example / "runs" / "candidate-risky.run"), use_cache=False)


def test_zrisk_against_the_target_through_the_spec(tmp_path: Path) -> None:
    from pytest_bvtest.report import outputs, terminal
    from pytest_bvtest.stats.risk import zrisk_georisk_against_target

    spec_path = four_system_tables(tmp_path, "  zrisk_against: target\n          risk_alpha: 0")
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    scores = evaluation.measure().matrix.scores
    expected = zrisk_georisk_against_target(scores, 0.0)
    assert [evaluation.statistic("zrisk", name) for name in evaluation.measure().matrix.systems] == pytest.approx(
        expected.zrisk.tolist(), abs=1e-12
    )
    document = outputs.evaluation_document(evaluation)["evaluations"][0]
    assert document["settings"]["zrisk_against"] == "target"
    assert "ZRisk/GeoRisk against the target" in terminal.evaluation_title(document)


def test_sample_variance_is_named_in_the_reports(tmp_path: Path) -> None:
    from pytest_bvtest.report import outputs, terminal

    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path, "  variance: sample")), use_cache=False)
    new = evaluation.measure().matrix.row("new")
    assert evaluation.statistic("var", "new") == pytest.approx(new.var(ddof=1), abs=1e-12)
    document = outputs.evaluation_document(evaluation)["evaluations"][0]
    assert document["settings"]["variance"] == "sample"
    assert "sample variances (n - 1)" in terminal.evaluation_title(document)


def test_the_simulation_tradeoff_table_per_topic_is_in_the_markdown(tmp_path: Path) -> None:
    from pytest_bvtest.report import markdown, outputs

    example = Path(__file__).resolve().parents[1] / "example_project"
    spec_path = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {example}/eval/qrels.txt
        measures: [AP, P@10]
        baselines: {{production: {example}/runs/production.run, bm25: {example}/runs/bm25-alt.run}}
        candidate: {example}/runs/candidate-risky.run
        analysis: {{simulation: {{samples: 20, seed: 7}}}}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    simulation = evaluation.simulation
    rendered = markdown.render(outputs.evaluation_document(evaluation))
    assert rendered.count("per-topic simulation (AP, 20 samples, seed 7)") == 1  # once for the spec's two measures
    first = simulation.topic_tradeoff[0]
    expected = (
        f"| {simulation.topic_ids[0]} | {first.pearson:.6g} | {first.spearman:.6g} |"
        if first.pearson is not None
        else f"| {simulation.topic_ids[0]} | - | - |"
    )
    assert expected in rendered
    assert f"| candidate | {simulation.bias2[simulation.system_names.index('candidate')]:.6g} |" in rendered


# --- issue 10's last items through the spec: named target, group ratio, simulation gates, MVE variance -------


def _example_spec(tmp_path: Path, analysis: str, gates: str = "", measures: str = "[AP, P@10]") -> Path:
    example = Path(__file__).resolve().parents[1] / "example_project"
    return write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {example}/eval/qrels.txt
        measures: {measures}
        baselines: {{production: {example}/runs/production.run, bm25: {example}/runs/bm25-alt.run}}
        candidate: {example}/runs/candidate-risky.run
        reference: production
        analysis: {analysis}
        gates: {gates or "[]"}
    """,
    )


def test_a_named_target_system_is_that_systems_scores_in_every_report(tmp_path: Path) -> None:
    from pytest_bvtest.report import jsonreport, markdown, outputs, terminal
    from pytest_bvtest.stats.biasvar import bias_variance_analysis

    evaluation = evaluate_spec(load_spec(_example_spec(tmp_path, "{target_system: bm25}")), use_cache=False)
    measure = evaluation.measure("AP")
    scores, systems = measure.matrix.scores, measure.matrix.systems
    np.testing.assert_array_equal(measure.analysis.target_scores, scores[systems.index("bm25")])
    direct = bias_variance_analysis(scores, target_system=systems.index("bm25"))
    candidate = measure.system("candidate")
    assert candidate.values["bias2_plus_var"] == pytest.approx(
        direct.bias_variance.error[systems.index("candidate")], abs=1e-15
    )
    assert candidate.gap["bias"] == pytest.approx(
        np.mean(scores[systems.index("bm25")] - scores[systems.index("candidate")]), abs=1e-15
    )
    documents = outputs.evaluation_document(evaluation)["evaluations"]
    assert documents[0]["settings"]["target_system"] == "bm25"
    assert "target system bm25" in terminal.evaluation_title(documents[0])
    assert "target system bm25" in markdown.render(jsonreport.session_document(documents))


def test_an_unknown_target_system_names_the_systems_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"bvtest.yaml:6: analysis.target_system: 'bm26' is not a system of the spec"
    ) as error:
        load_spec(_example_spec(tmp_path, "{target_system: bm26}"))
    assert "did you mean 'bm25'" in str(error.value)
    with pytest.raises(InputError, match=r"systems are: production, bm25, candidate"):
        load_spec(_example_spec(tmp_path, "{target_system: zzz}"))


def test_group_target_ratio_through_the_spec_equals_the_statistic(tmp_path: Path) -> None:
    from pytest_bvtest.spec.model import DifficultyGrouping
    from pytest_bvtest.stats.biasvar import bias_variance_analysis

    spec = _example_spec(
        tmp_path,
        "{normalize: group-target-ratio, grouping: {by: difficulty, size: 3}}",
        gates="[{statistic: bias2_plus_var, max_increase: 0.5, confidence: 0.9}]",
        measures="[AP]",
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    measure = evaluation.measure()
    direct = bias_variance_analysis(
        measure.matrix.scores, normalize="group-target-ratio", grouping=DifficultyGrouping(3)
    )
    np.testing.assert_allclose([s.values["var"] for s in measure.systems], direct.bias_variance.var, rtol=1e-13)
    assert measure.c == 1.0
    assert measure.gates[0].interval is not None


def test_a_gate_on_the_simulation_reads_its_measures_per_topic_terms(tmp_path: Path) -> None:
    from pytest_bvtest.stats.inference import paired_bootstrap

    spec = _example_spec(
        tmp_path,
        "{simulation: {samples: 20, seed: 7, measures: [AP, P@10]}}",
        gates="[{statistic: sim_bias2_plus_var, max_increase: 0.0}, "
        "{statistic: sim_var, measure: P@10, max_increase: 1, confidence: 0.9}]",
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    assert [s.measure for s in evaluation.simulations] == ["AP", "P@10"]
    for measure, simulation in zip(("AP", "P@10"), evaluation.simulations):
        gate = evaluation.measure(measure).gates[0]
        names = simulation.system_names
        terms = simulation.topic_bias2 + simulation.topic_var
        assert gate.value == pytest.approx(terms[names.index("candidate")].mean(), abs=1e-15)
        assert gate.reference_value == pytest.approx(terms[names.index("production")].mean(), abs=1e-15)
        assert gate.passed is (gate.value <= gate.reference_value + 1e-12)
    noisy = evaluation.measure("P@10").gates[1]
    simulation = evaluation.simulations[1]
    names = simulation.system_names
    expected = paired_bootstrap(
        simulation.topic_var,
        "sim_var",
        names.index("candidate"),
        names.index("production"),
        resamples=1000,
        confidence=0.9,
        seed=0,
    )
    assert noisy.interval == pytest.approx((expected.low, expected.high), abs=1e-15)


def test_simulation_gates_and_measures_are_checked_at_their_line(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"gates\[0\].statistic: sim_var is read from the per-topic simulation, which is off"
    ):
        load_spec(_example_spec(tmp_path, "{}", gates="[{statistic: sim_var, max: 1}]"))
    with pytest.raises(InputError, match=r"gates\[0\].statistic: sim_var on P@10: not simulated"):
        load_spec(_example_spec(tmp_path, "{simulation: {}}", gates="[{statistic: sim_var, max: 1}]"))
    with pytest.raises(InputError, match=r"analysis.simulation.measures\[1\]: the simulation cannot score ERR@10"):
        load_spec(_example_spec(tmp_path, "{simulation: {measures: [AP, ERR@10]}}"))
    with pytest.raises(InputError, match=r"analysis.simulation.measures\[0\]: the simulation cannot score AP\(rel=2\)"):
        load_spec(_example_spec(tmp_path, "{simulation: {measures: [AP(rel=2)]}}"))
    with pytest.raises(InputError, match=r"rankings.statistics\[0\]: sim_var comes from the per-topic simulation"):
        load_spec(_example_spec(tmp_path, "{rankings: {statistics: [sim_var]}}"))


def test_sample_variance_reaches_mve_in_every_form(tmp_path: Path, variations_project: Path) -> None:
    evaluation = evaluate_spec(
        load_spec(_example_spec(tmp_path, "{variance: sample}", measures="[AP]")), use_cache=False
    )
    measure = evaluation.measure()
    for system in measure.systems:
        row = measure.matrix.row(system.name)
        assert system.values["mve"] == pytest.approx(np.mean(row) - 2.0 * np.var(row, ddof=1), abs=1e-15)
    # MATH.md section 5's intra-topic example with sample variances: var_1 = 0.0244 / 0.62, var_2 = 0.005
    spec = write(variations_project, "bvtest.yaml", VARIATIONS_SPEC)
    spec.write_text(spec.read_text().replace("analysis:", "analysis:\n  variance: sample", 1))
    value = evaluate_spec(load_spec(spec), use_cache=False).measure().system("candidate").values["mve"]
    assert value == pytest.approx(0.605 - 2 * 0.25 * (0.0244 / 0.62 + 0.005), abs=1e-12)


def test_a_failing_simulation_gate_blames_the_topics_whose_terms_grew(tmp_path: Path) -> None:
    from pytest_bvtest.report import markdown, outputs

    spec = _example_spec(
        tmp_path,
        "{simulation: {samples: 20, seed: 7}}",
        gates="[{statistic: sim_bias2_plus_var, measure: AP, max_increase: -1}]",
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    gate = evaluation.measure("AP").gates[0]
    simulation = evaluation.simulation
    names = simulation.system_names
    terms = simulation.topic_bias2 + simulation.topic_var
    growth = terms[names.index("candidate")] - terms[names.index("production")]
    worst = simulation.topic_ids[int(np.argmax(growth))]
    assert not gate.passed and gate.worst_topics[0].topic == worst
    assert gate.worst_topics[0].candidate == pytest.approx(terms[names.index("candidate"), int(np.argmax(growth))])
    assert "per-topic terms vs production" in words(gate)["message"]
    rendered = markdown.render(outputs.evaluation_document(evaluation))
    assert "Topics whose per-topic sim Bias²+Var grew most against production" in rendered


def test_a_simulation_gates_reports_all_say_its_topics_are_blamed_by_their_simulation_terms(tmp_path: Path) -> None:
    """JSON said `blame_by: score difference` for sim_* gates, whose topics are ranked by the growth of their
    per-topic simulation terms; Markdown's table and the terminal message must say the same."""
    from pytest_bvtest.report import jsonreport, markdown, outputs

    spec = _example_spec(
        tmp_path,
        "{simulation: {samples: 20, seed: 7}}",
        gates="[{statistic: sim_var, measure: AP, max_increase: -1}, {statistic: mean, measure: AP, max: 0}]",
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    sim_var, mean = evaluation.measure("AP").gates
    document = outputs.evaluation_document(evaluation)
    gates = {gate["statistic"]: gate for gate in document["evaluations"][0]["gates"]}
    assert gates["sim_var"]["blame_by"] == "term difference" and gates["mean"]["blame_by"] == "score difference"
    simulation = evaluation.simulation
    names, terms = simulation.system_names, simulation.topic_var
    first = gates["sim_var"]["worst_topics"][0]
    column = simulation.topic_ids.index(first["topic"])
    assert first["candidate"] == pytest.approx(terms[names.index("candidate"), column])  # a term, not a score
    assert first["compared"] == pytest.approx(terms[names.index("production"), column])
    assert "topics whose per-topic sim Var grew most (per-topic terms vs production)" in words(sim_var)["message"]
    assert "topics that moved Mean most the wrong way (scores vs production)" in words(mean)["message"]
    rendered = markdown.render(document)
    assert "Topics whose per-topic sim Var grew most against production (the simulation's per-topic terms):" in rendered
    assert "sim Var term Δ" in rendered
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, jsonreport.schema())


@pytest.mark.parametrize(
    "analysis, neutralised, note",
    [
        ("{normalize: target-ratio}", 7, "7 of 50 topics have the same score for every system: normalised to 1"),
        ("{normalize: group-target-ratio}", 7, "7 of 50 topics have the same score for every system: normalised to 1"),
        (
            "{normalize: group-target-ratio, grouping: {by: difficulty, size: 5}}",
            5,
            "5 of 50 topics lie in groups on which every system has the same score: each such group's ratio is 1",
        ),
    ],
)
def test_real_web_2012_group_target_ratio_reports_the_topics_it_neutralises(
    tmp_path: Path, analysis: str, neutralised: int, note: str
) -> None:
    """Indri's Web 2012 baselines all score 0 on 7 of 50 topics. The group ratio sets them to 1 without grouping,
    and with difficulty groups of 5 the first group (5 of the 7, hardest first) to 1; it reported 0 for both."""
    from pytest_bvtest.report import outputs, terminal

    folder = shared_path("trec_web2012_risk_baselines")
    spec = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {folder / "qrels.web.151-200.txt"}
        measures: [nDCG@20]
        baselines:
          rm: {folder / "runs" / "rm.results-cata-filtered.txt.gz"}
          ql-unfiltered: {folder / "runs" / "ql.results-cata.txt.gz"}
          rm-catb: {folder / "runs" / "rm.results-catb-filtered.txt.gz"}
        candidate: {{run: {folder / "runs" / "ql.results-cata-filtered.txt.gz"}, name: ql}}
        cache: false
        analysis: {analysis}
        """,
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    measure = evaluation.measure()
    zero = np.all(measure.matrix.scores == 0, axis=0)
    assert int(zero.sum()) == 7 and int((np.ptp(measure.matrix.scores, axis=0) == 0).sum()) == 7
    assert measure.analysis.constant_topics == neutralised
    document = outputs.evaluation_document(evaluation)["evaluations"][0]
    assert document["target"]["constant_topics"] == neutralised
    assert any(line.startswith(note) for line in terminal.topic_notes(document))


def test_real_web_2012_a_much_worse_steadier_candidate_passes_bias2_plus_var_and_the_sentence_says_why(
    tmp_path: Path,
) -> None:
    """Web 2012: Indri's unfiltered QL run (spam-ridden, nDCG@20 0.063) against the official filtered RM baseline
    (0.157). Its Bias² grows, but it scores near 0 everywhere, so its Var falls further and Bias²+Var passes. The
    passing sentence said "quality that is both close to the best achievable and consistent", which it is not: a
    pass only bounds the sum."""
    folder = shared_path("trec_web2012_risk_baselines")
    spec = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {folder / "qrels.web.151-200.txt"}
        measures: [nDCG@20]
        baselines:
          production: {folder / "runs" / "rm.results-cata-filtered.txt.gz"}
        candidate: {folder / "runs" / "ql.results-cata.txt.gz"}
        cache: false
        analysis: {{guards: {{unanswered_share: 0.2}}}}
        gates: [{{statistic: bias2_plus_var, max_increase: 5%}}]
        """,
    )
    measure = evaluate_spec(load_spec(spec), use_cache=False).measure()
    candidate, production = measure.system("candidate").values, measure.system("production").values
    assert candidate["mean"] == pytest.approx(0.0631, abs=5e-5) and production["mean"] == pytest.approx(
        0.1567, abs=5e-5
    )
    assert candidate["bias2"] > production["bias2"] and candidate["var"] < production["var"]
    gate = measure.gates[0]
    assert gate.passed_as_judged and gate.value == pytest.approx(candidate["bias2"] + candidate["var"], abs=1e-12)
    # the unfiltered run's top 20 is full of documents the pool never judged: at the qrels' top grade they would
    # change everything, but as they plausibly grade the gate passes (docs/judgments.md); its words as judged are a
    # pass's
    assert gate.outcome == "OK" and gate.corners.candidate_unjudged > 500 and gate.plausible.decided is True
    from pytest_bvtest.report.wording import sentence

    as_judged = {key: value for key, value in words(gate).items() if key != "judgments"}
    assert sentence(as_judged).startswith(
        "Holds: closeness to the best achievable and consistency from query to query taken together, so a gain in "
        "one can hide a loss in the other (Bias²+Var "
    )


def test_a_candidate_identical_to_production_passes_plain_simulation_bounds(tmp_path: Path) -> None:
    """DL-HARD: the production run copied under another name gets the same simulated values, so a plain
    bound on a simulation statistic does not fire on Monte-Carlo noise (seeded by name it differed by +5.8%)."""
    doc = shared_path("dl_hard", "dataset") / "baselines" / "doc"
    copy = tmp_path / "candidate.run.gz"
    copy.write_bytes((doc / "bm25+electra-mp.run.gz").read_bytes())
    spec_path = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {doc.parent.parent}/dl_hard-doc.qrels
        measures: [AP]
        baselines:
          production: {doc}/bm25+electra-mp.run.gz
          bm25: {doc}/bm25.run.gz
        candidate: {{run: {copy}, name: candidate}}
        reference: production
        analysis: {{simulation: {{samples: 100, seed: 1}}}}
        gates:
          - {{statistic: sim_var, max_increase: 0.05}}
          - {{statistic: sim_bias2_plus_var, max_increase: 0}}
    """,
    )
    evaluation = evaluate_spec(load_spec(spec_path), use_cache=False)
    simulation = evaluation.simulation
    names = simulation.system_names
    np.testing.assert_array_equal(
        simulation.sample_scores[names.index("candidate")], simulation.sample_scores[names.index("production")]
    )
    assert not np.array_equal(
        simulation.sample_scores[names.index("bm25")], simulation.sample_scores[names.index("production")]
    )
    for gate in evaluation.measure().gates:
        assert gate.value == gate.reference_value and gate.passed, gate


def test_real_web_2012_passing_sentences_of_combined_statistics_claim_no_more_than_the_statistic(
    tmp_path: Path,
) -> None:
    """GeoRisk, Bias(ρ)²+Var(ρ) and sim Bias²+Var combine two terms, so a pass bounds their combination only;
    Var(ρ) passing does not mean no query that others solve is failed. The passing sentences said more."""
    folder = shared_path("trec_web2012_risk_baselines")
    spec = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {folder / "qrels.web.151-200.txt"}
        measures: [AP]
        baselines:
          production: {folder / "runs" / "rm.results-cata-filtered.txt.gz"}
          rm-catb: {folder / "runs" / "rm.results-catb-filtered.txt.gz"}
        candidate: {folder / "runs" / "ql.results-cata-filtered.txt.gz"}
        cache: false
        analysis: {{guards: {{unanswered_share: 0.2}}, simulation: {{samples: 10, measures: [AP]}}}}
        gates:
          - {{statistic: georisk, min: 0}}
          - {{statistic: gap_mse, max: 1}}
          - {{statistic: gap_var, max: 1}}
          - {{statistic: sim_bias2_plus_var, max: 1}}
        """,
    )
    georisk, gap_mse, gap_var, simulated = evaluate_spec(load_spec(spec), use_cache=False).measure().gates
    assert all(gate.outcome == "OK" for gate in (georisk, gap_mse, gap_var, simulated))
    assert words(georisk)["sentence"].startswith(
        "Holds: high quality and few surprising shortfalls against the other systems combined, so one can make up "
        "for the other (GeoRisk "
    )
    assert words(gap_mse)["sentence"].startswith(
        "Holds: a small and even gap to the best system taken together, so a gain in one can hide a loss in the "
        "other (Bias(ρ)²+Var(ρ) "
    )
    assert words(gap_var)["sentence"].startswith(
        "Holds: an even gap to the best system across queries, which queries that others solve and we fail make "
        "uneven (Var(ρ) "
    )
    assert words(simulated)["sentence"].startswith(
        "Holds: per-query closeness to the best and stability when the collection changes taken together, so a "
        "gain in one can hide a loss in the other (sim Bias²+Var "
    )


def test_example_risky_candidates_trisk_of_minus_2_46_is_not_called_no_significant_loss() -> None:
    """The README's risky RM3 candidate: TRisk -2.46 at alpha 5 passes the family-wise limit -4.71, but below -2 is
    the rule of thumb's significant loss; the passing sentence said "no significant loss on single queries"."""
    from pytest_bvtest.judging.pipeline import spec_under_test

    example = Path(__file__).resolve().parent.parent / "example_project"
    spec = spec_under_test(example / "bvtest.yaml", example / "runs" / "candidate-risky.run")
    trisk = next(
        gate for gate in evaluate_spec(spec, use_cache=False).measure("nDCG@10").gates if gate.statistic == "trisk"
    )
    assert trisk.outcome == "OK" and trisk.value == pytest.approx(-2.45917, abs=5e-6) and trisk.value < -2
    assert trisk.limit == pytest.approx(-4.71065, abs=5e-6)
    assert words(trisk)["sentence"] == (
        "Holds: losses on single queries against production no more significant than allowed "
        "(TRisk -2.46, limit -4.71 at a 1.55% false-alarm rate)."
    )


def test_example_risky_candidates_negative_urisk_is_not_called_no_net_loss(tmp_path: Path) -> None:
    """URisk -0.0163 at alpha 1 (a net risk-weighted loss) passing `min: -0.05` was called "no net loss"."""
    example = Path(__file__).resolve().parent.parent / "example_project"
    spec = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {example / "eval" / "qrels.txt"}
        measures: [nDCG@10]
        baselines: {{production: {example / "runs" / "production.run"}}}
        candidate: {example / "runs" / "candidate-risky.run"}
        cache: false
        analysis: {{risk_alpha: 1}}
        gates: [{{statistic: urisk, min: -0.05}}]
        """,
    )
    urisk = evaluate_spec(load_spec(spec), use_cache=False).measure().gates[0]
    assert urisk.outcome == "OK" and urisk.value == pytest.approx(-0.0162574, abs=5e-7)
    assert words(urisk)["sentence"].startswith(
        "Holds: a risk-weighted change against production (losses counting extra) within the limit (URisk -0.0"
    )


def test_example_past_release_losing_more_queries_than_it_wins_is_not_said_to_win_more(tmp_path: Path) -> None:
    """The example's past release against production: robustness index -0.321 (more queries lost than won) passed
    `min: -0.5` with "Holds: more queries won than lost"; ZRisk -15.8 passed `min: -100` with "no query much worse
    than the other systems lead one to expect"."""
    example = Path(__file__).resolve().parent.parent / "example_project"
    spec = write(
        tmp_path,
        "bvtest.yaml",
        f"""
        qrels: {example / "eval" / "qrels.txt"}
        measures: [nDCG@10]
        baselines:
          production: {example / "runs" / "production.run"}
          bm25-alt: {example / "runs" / "bm25-alt.run"}
        candidate: {example / "runs" / "past-release.run"}
        cache: false
        gates: [{{statistic: robustness_index, min: -0.5}}, {{statistic: zrisk, min: -100}}]
        """,
    )
    measure = evaluate_spec(load_spec(spec), use_cache=False).measure()
    robustness, zrisk = measure.gates
    production, candidate = measure.matrix.row("production"), measure.matrix.row("candidate")
    won, lost = int((candidate > production).sum()), int((candidate < production).sum())
    assert lost > won and robustness.value == pytest.approx((won - lost) / len(production), abs=1e-12)
    assert robustness.outcome == zrisk.outcome == "OK" and zrisk.value == pytest.approx(-15.7717, abs=5e-5)
    assert words(robustness)["sentence"].startswith(
        "Holds: the share of queries won minus the share lost against production within the limit (RI -0.321,"
    )
    assert words(zrisk)["sentence"].startswith(
        "Holds: shortfalls against what the other systems lead one to expect within the limit (ZRisk -15.8,"
    )


# --- one system under two names: two run files with the same rankings (issue 22) -----------------------------------


def covid_spec(folder: Path, twin: str) -> Path:
    """TREC-COVID round 4 (OHSU's runs): two fusions and a second file holding one of them under another name."""
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    qrels = shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round4.txt")
    return write(
        folder,
        "bvtest.yaml",
        f"""
        qrels: {qrels}
        measures: [nDCG@10, AP]
        baselines:
          orig_fusion: {runs / "orig_fusion_OHSU.txt.gz"}
          abstract: {runs / "AbstractOHSU.txt.gz"}
          twin: {runs / twin}
        candidate: {runs / "FullOHSU.txt.gz"}
        reference: orig_fusion
        gates:
          - {{statistic: zrisk, max_decrease: 0.5}}
        cache: false
        """,
    )


@pytest.mark.parametrize(
    "twin",
    [
        "total_fusion_OHSU.txt.gz",  # the same lines, another file name
        "R4_orig_fusion.txt.gz",  # another run tag, the scores spelt with one digit less
    ],
)
def test_two_run_files_with_the_same_rankings_are_one_system_listed_twice(
    tmp_path: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], twin: str
) -> None:
    """They were accepted and counted twice in ZRisk, GeoRisk, GAWM and Holm."""
    from pytest_bvtest.cli import main

    spec = covid_spec(tmp_path, twin)
    expected = (
        f"{spec}:6: baselines.twin: 'twin' ({twin}) ranks the same documents in the same order on every topic as "
        "'orig_fusion' (orig_fusion_OHSU.txt.gz): one system listed twice counts twice in ZRisk, GeoRisk, GAWM and "
        "the Holm correction; list each system once"
    )
    with pytest.raises(InputError) as error:
        evaluate_spec(load_spec(spec))
    assert str(error.value) == expected
    assert main(["check", str(spec)]) == 2
    assert capsys.readouterr().err == f"bvtest: error: {expected}\n"
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec))
    result.assert_outcomes(failed=2)  # the zrisk gate on each measure: the spec could not be evaluated
    result.stdout.fnmatch_lines([f"*baselines.twin: 'twin' ({twin}) ranks the same documents*"])


def test_runs_that_only_score_alike_on_some_measure_are_distinct_systems(tmp_path: Path) -> None:
    spec = covid_spec(tmp_path, "time_fusion_OHSU.txt.gz")
    evaluation = evaluate_spec(load_spec(spec))
    assert evaluation.measure("nDCG@10").matrix.systems == ("orig_fusion", "abstract", "twin", "candidate")
