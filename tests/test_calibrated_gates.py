"""Calibrated gates end to end (MATH.md section 7): pytester, the example project, real TREC runs."""

from __future__ import annotations

import gzip
import itertools
import json
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
import yaml
from conftest import example_trec_spec, shared_path, words
from test_plugin import PRODUCTION, QRELS, RISKY, run_text

from pytest_bvtest.errors import InputError
from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
from pytest_bvtest.report import wording
from pytest_bvtest.report.jsonreport import gate_document
from pytest_bvtest.report.wording import together_lines
from pytest_bvtest.spec.reader import load_spec

REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLE = REPOSITORY / "example_project"

# AP of the pytester project's systems, topic by topic: the relevant document at rank r gives 1/r
PRODUCTION_AP = np.array([1 / PRODUCTION[t] for t in sorted(PRODUCTION)])
RISKY_AP = np.array([1 / RISKY[t] for t in sorted(RISKY)])


def brute_force_urisk_null(candidate: np.ndarray, reference: np.ndarray, alpha: float) -> np.ndarray:
    """URisk of the swapped candidate against the swapped reference, over all 2^n swaps, by loops."""
    values = []
    for swapped in itertools.product((False, True), repeat=len(candidate)):
        c = [r if s else x for x, r, s in zip(candidate, reference, swapped)]
        b = [x if s else r for x, r, s in zip(candidate, reference, swapped)]
        deltas = [ci - bi if ci >= bi else (1 + alpha) * (ci - bi) for ci, bi in zip(c, b)]
        values.append(sum(deltas) / len(deltas))
    return np.sort(values)


@pytest.fixture
def calibrated_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".txt", qrels=QRELS)
    runs = pytester.mkdir("runs")
    for name, ranks in (("production", PRODUCTION), ("risky", RISKY)):
        (runs / f"{name}.run").write_text(run_text(name, ranks))
    (pytester.path / "bvtest.yaml").write_text(
        textwrap.dedent("""
        qrels: qrels.txt
        measures: [AP]
        baselines: {production: runs/production.run}
        candidate: runs/risky.run
        analysis: {risk_alpha: 5}
        gates:
          - {statistic: urisk, false_alarm: 0.1}
          - {statistic: urisk, min: -0.05, name: fixed}
    """).lstrip()
    )
    return pytester


def test_a_calibrated_gate_takes_the_brute_force_quantile_and_every_report_shows_its_rate(
    calibrated_project: pytest.Pytester,
) -> None:
    null = brute_force_urisk_null(RISKY_AP, PRODUCTION_AP, 5.0)
    limit = null[int(0.1 * 64)]  # 6 topics: all 64 swaps; at most 6 of them lie below the limit
    result = calibrated_project.runpytest(
        "--bvtest-json", "report.json", "--bvtest-markdown", "report.md", "--junitxml", "junit.xml", "-v"
    )
    report = json.loads((calibrated_project.path / "report.json").read_text())
    gates = {gate["id"].rsplit("::", 1)[1]: gate for gate in report["evaluations"][0]["gates"]}
    calibrated, fixed = gates["urisk"], gates["fixed"]
    assert calibrated["bound"] is None and calibrated["rule"] == "false_alarm 10%"
    assert calibrated["limit"] == pytest.approx(limit, abs=1e-12)
    assert calibrated["calibration"]["limit"] == pytest.approx(limit, abs=1e-12)
    assert calibrated["calibration"] == {
        **calibrated["calibration"],
        "false_alarm": 0.1,
        "swaps": 64,
        "exact": True,
        "reference": "production",
    }
    assert calibrated["calibration"]["rate"] == pytest.approx(np.mean(null < limit - 1e-12))
    assert calibrated["passed"] == (calibrated["value"] >= limit - 1e-12)
    # the fixed bound reports the share of equal-quality changes it fails
    assert fixed["calibration"]["rate"] == pytest.approx(np.mean(null < -0.05))
    assert fixed["calibration"]["false_alarm"] is None and fixed["rule"] == "min -0.05"
    result.stdout.fnmatch_lines(
        [
            f"*false_alarm 10% requires >= {limit:.6g}*all 64 swaps with production*",
            "*bound min -0.05 requires >= -0.05*false-alarm rate*",
        ]
    )
    # the two gates share the 64 swaps: an equal change fails at least one where the null is below either limit
    joint = np.mean(null < max(limit, -0.05) - 1e-12)
    for gate in (calibrated, fixed):
        assert gate["calibration"]["together"] == {
            "gates": 2,
            "ids": ["bvtest.yaml::AP::urisk", "bvtest.yaml::AP::fixed"],
            "rate": pytest.approx(joint),
            "swaps": 64,
        }
        assert gate["calibration"]["family"] is None  # one calibrated gate: a family of one is its own limit
    together = (
        f"An equal-quality change fails at least one of these 2 gates (bvtest.yaml, against production) "
        f"{wording.percent(joint)} of the time (64 swaps), each gate alone "
        f"{wording.percent(min(calibrated['calibration']['rate'], fixed['calibration']['rate']))} to "
        f"{wording.percent(max(calibrated['calibration']['rate'], fixed['calibration']['rate']))}."
    )
    result.stdout.fnmatch_lines([f"How sure: {together}"])
    markdown = (calibrated_project.path / "report.md").read_text()
    assert "| false alarm |" in markdown and f"**How sure:**\n\n- {together}\n" in markdown
    assert f"| {wording.percent(fixed['calibration']['rate'])} |" in markdown
    properties = {
        f"AP::{case.get('name')}": {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ElementTree.parse(calibrated_project.path / "junit.xml").iter("testcase")
    }
    assert float(properties["AP::urisk"]["bvtest_false_alarm"]) == 0.1
    assert float(properties["AP::urisk"]["bvtest_false_alarm_rate"]) == pytest.approx(calibrated["calibration"]["rate"])
    assert properties["AP::fixed"]["bvtest_null_swaps"] == "64" and "bvtest_false_alarm" not in properties["AP::fixed"]
    assert properties["AP::fixed"]["bvtest_together_gates"] == "2"
    assert float(properties["AP::fixed"]["bvtest_together_rate"]) == pytest.approx(joint)


def test_a_gate_needing_a_reference_without_one_is_a_spec_error_at_its_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".txt", qrels=QRELS)
    pytester.mkdir("runs")
    (pytester.path / "runs" / "risky.run").write_text(run_text("risky", RISKY))
    (pytester.path / "bvtest.yaml").write_text(
        "qrels: qrels.txt\nmeasures: [AP]\ncandidate: runs/risky.run\ngates:\n  - {statistic: var, false_alarm: 0.05}\n"
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*bvtest.yaml:5: gates[[]0[]]: gate on var (false_alarm*needs a reference system*"])
    assert "Traceback" not in result.stdout.str()


# --- the recommended gates on the example project and on real TREC runs ---------------------------

RECOMMENDED = yaml.safe_load((EXAMPLE / "bvtest.yaml").read_text())["gates"]
BEFORE = [  # what README, quickstart and the example recommended before calibration
    {"statistic": "trisk", "measure": "nDCG@10", "min": -2.0},
    {"statistic": "bias2_plus_var", "measure": "nDCG@10", "max_increase": "5%"},
    {"statistic": "mean", "max_decrease": 0.01, "confidence": 0.95},
]


def test_the_recommended_gates_are_calibrated() -> None:
    assert all("false_alarm" in gate for gate in RECOMMENDED)


def verdicts(
    spec: Path, gates: list[dict], candidate: Path | None = None, family: bool | None = None
) -> dict[str, tuple[str, float]]:
    """Each gate's outcome as judged and value; ``family`` sets ``analysis.calibration.family`` (``None``: the
    default). As judged: every unjudged document non-relevant, what the calibration reads; where DL19's and
    TREC-COVID's qrels leave documents of the top 10 unjudged some of these gates are also UNDECIDED, which
    tests/test_judgments.py checks."""
    document = yaml.safe_load(spec.read_text())
    document["gates"] = gates
    document["cache"] = False
    if candidate is not None:
        document["candidate"] = str(candidate)
    if family is not None:
        document.setdefault("analysis", {})["calibration"] = {"family": family}
    written = spec.with_name(f"gated-{spec.name}")
    written.write_text(yaml.safe_dump(document))
    evaluation = evaluate_spec(load_spec(written), use_cache=False)
    return {verdict.id.split("::", 1)[1]: (as_judged(verdict), verdict.value) for verdict in evaluation.gates}


def as_judged(verdict) -> str:
    """The outcome the gate has on the judgments as they are, corners of unjudged documents aside."""
    if not verdict.undecided:
        return verdict.outcome
    if not verdict.passed_as_judged:
        return "FAIL"
    return "OK*" if verdict.within_noise or verdict.cannot_fail or verdict.guards else "OK"


def example_spec(tmp_path: Path) -> Path:
    document = yaml.safe_load((EXAMPLE / "bvtest.yaml").read_text())
    for key in ("qrels", "topics", "candidate"):
        document[key] = str(EXAMPLE / document[key])
    document["baselines"] = {name: str(EXAMPLE / path) for name, path in document["baselines"].items()}
    document["judgments"]["documents"] = str(EXAMPLE / document["judgments"]["documents"])
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(yaml.safe_dump(document))
    return spec


def test_the_examples_risky_candidate_fails_var_alone_but_passes_the_five_gates_together_and_the_stable_one_passes(
    tmp_path: Path,
) -> None:
    spec = example_spec(tmp_path)
    risky = EXAMPLE / "runs" / "candidate-risky.run"
    before = verdicts(spec, BEFORE, risky)
    assert before["nDCG@10::trisk"] == ("FAIL", pytest.approx(-2.45917, abs=5e-6))
    per_gate = verdicts(spec, RECOMMENDED, risky, family=False)
    assert per_gate["nDCG@10::var"][0] == "FAIL"  # its spread grows past 95% of equal changes for Var alone
    assert per_gate["nDCG@10::trisk"][0] == "OK"  # its wins outweigh its losses as an equal change's would
    # the default holds the five gates to 5% together: Var's growth (0.0706 -> 0.0840) is within what they see
    document = yaml.safe_load(spec.read_text())
    document["candidate"] = str(risky)
    spec.write_text(yaml.safe_dump(document))
    var = evaluate_spec(load_spec(spec), use_cache=False).gate("nDCG@10", "var")
    assert var.passed and var.value == pytest.approx(0.0840177, abs=5e-8)
    assert var.limit - var.value == pytest.approx(0.00012567, abs=5e-9)
    assert var.limits.together.rate == pytest.approx(0.0499) and var.limits.family.level == pytest.approx(0.0155)
    assert {
        outcome for outcome, _ in verdicts(spec, RECOMMENDED, EXAMPLE / "runs" / "candidate-pass.run").values()
    } == {"OK"}


def real_spec(tmp_path: Path, qrels: Path, baselines: dict[str, Path], candidate: Path) -> Path:
    spec = tmp_path / "real.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "qrels": str(qrels),
                "measures": ["nDCG@10", "AP"],
                "baselines": {k: str(v) for k, v in baselines.items()},
                "candidate": str(candidate),
                "reference": next(iter(baselines)),
                "analysis": {"risk_alpha": 5},
                "cache": False,
            },
            sort_keys=False,
        )
    )
    return spec


def test_dl19_monot5_against_monobert_fails_a_fixed_trisk_bound_and_passes_the_calibrated_gates(tmp_path: Path) -> None:
    """monoT5 vs monoBERT on TREC DL 2019 passage: nDCG@10 +0.0009, 19 wins and 19 losses."""
    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    spec = real_spec(
        tmp_path,
        shared_path("anserini_tools_qrels_topics", "qrels", "qrels.dl19-passage.txt"),
        {
            "monobert": runs / "run-msmarco-passage-bm25-monobert-0.8-0.5.txt.gz",
            "colbert": runs / "colbert-on-bm25-trec-dl-queries.gz",
            "drmm": runs / "drmm.res.gz",
        },
        runs / "run-msmarco-passage-bm25-monot5-0.8-0.5.txt.gz",
    )
    before, after = verdicts(spec, BEFORE), verdicts(spec, RECOMMENDED)
    assert before["nDCG@10::trisk"] == ("FAIL", pytest.approx(-2.50177, abs=5e-6))
    assert before["nDCG@10::bias2_plus_var"][0] == "FAIL"
    assert {outcome for outcome, _ in after.values()} == {"OK"}, after


def test_trec_covid_round4_fusion_fails_a_fixed_trisk_bound_and_passes_the_calibrated_gates(tmp_path: Path) -> None:
    """OHSU's round-4 fusion run against its full-text run: AP +0.056, nDCG@10 TRisk -3.23 at alpha 5."""
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    spec = real_spec(
        tmp_path,
        shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round4.txt"),
        {"FullOHSU": runs / "FullOHSU.txt.gz", "AbstractOHSU": runs / "AbstractOHSU.txt.gz"},
        runs / "R4_orig_fusion.txt.gz",
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    ap = evaluation.measure("AP")
    assert ap.system("candidate").values["mean"] - ap.system("FullOHSU").values["mean"] == pytest.approx(
        0.0561, abs=5e-5
    )
    before, after = verdicts(spec, BEFORE), verdicts(spec, RECOMMENDED)
    assert before["nDCG@10::trisk"] == ("FAIL", pytest.approx(-3.22675, abs=5e-6))
    # every calibrated gate passes; those against FullOHSU on AP are OK* because the fusion run is so
    # much better (+0.056, p < 0.01) that the stale-reference guard suggests updating the reference
    assert {outcome for outcome, _ in after.values()} <= {"OK", "OK*"}, after
    assert "stale_reference" in [guard.kind for guard in ap.guards], ap.guards
    assert {key for key, (outcome, _) in after.items() if outcome == "OK*"} <= {
        key for key in after if key.startswith("AP::")
    }


def test_a_plain_bound_reports_its_rate_from_fewer_swaps_than_a_calibrated_limit_uses(tmp_path: Path) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document["gates"] = [BEFORE[0], RECOMMENDED[0]]
    spec.write_text(yaml.safe_dump(document))
    plain, calibrated = evaluate_spec(load_spec(spec), use_cache=False).measure("nDCG@10").gates
    assert (plain.limits.null.swaps, calibrated.limits.null.swaps) == (1_000, 10_000)
    assert plain.limits.rate > 0.5  # TRisk >= -2 at alpha 5 fails most equal-quality changes of this candidate


def test_gates_differing_in_their_bounds_alone_share_a_null_and_each_reports_the_rate_it_has_alone(
    tmp_path: Path,
) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    gates = [
        {"statistic": "var", "measure": "nDCG@10", "max": 0.069},
        {"statistic": "var", "measure": "nDCG@10", "max": 0.072},
        {"statistic": "var", "measure": "nDCG@10", "max_increase": "5%", "false_alarm": 0.05},
    ]

    def judged(chosen: list[dict]) -> list:
        document["gates"] = chosen
        spec.write_text(yaml.safe_dump(document))
        return evaluate_spec(load_spec(spec), use_cache=False).measure("nDCG@10").gates

    tighter, looser, calibrated = judged(gates)
    alone = [judged([gate])[0] for gate in gates]
    # the plain bounds read one null of 1,000 swaps, the calibrated limit its own 10,000
    assert tighter.null.distribution is looser.null.distribution
    assert (tighter.limits.null.swaps, calibrated.limits.null.swaps) == (1_000, 10_000)
    for verdict, lone in zip((tighter, looser, calibrated), alone):
        assert np.array_equal(verdict.null.distribution.values, lone.null.distribution.values)
        assert verdict.limits.rate == lone.limits.rate
    assert 0 < looser.limits.rate < tighter.limits.rate  # a looser bound fails fewer equal-quality changes


# --- family-wise limits (analysis.calibration.family) ------------------------------------------------


def joint_rate(outcomes: list) -> float:
    """Share of the shared swaps on which at least one gate's null lies strictly past its effective limit."""
    shared = min(outcome.limits.null.swaps for outcome in outcomes)
    failing = np.zeros(shared, dtype=bool)
    for outcome in outcomes:
        values = outcome.null.distribution.by_swap[:shared] + outcome.null.offset
        limit = outcome.limit
        failing |= values < limit - 1e-12 if outcome.higher_is_better else values > limit + 1e-12
    return float(failing.mean())


def test_family_wise_limits_are_the_default_and_hold_the_examples_recommended_gates_to_five_percent_together(
    tmp_path: Path,
) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document.update(candidate=str(EXAMPLE / "runs" / "candidate-risky.run"), cache=False)
    assert "calibration" not in document["analysis"]
    spec.write_text(yaml.safe_dump(document))
    together = [gate for measure in evaluate_spec(load_spec(spec), use_cache=False).measures for gate in measure.gates]
    document["analysis"]["calibration"] = {"family": False}
    spec.write_text(yaml.safe_dump(document))
    alone = [gate for measure in evaluate_spec(load_spec(spec), use_cache=False).measures for gate in measure.gates]
    assert len(together) == 5 and all(gate.limits.family is not None for gate in together)
    assert all(gate.limits.family is None for gate in alone)
    family = together[0].limits.family
    assert len(family.limits) == 5 and family.swaps == 10_000
    # the five gates, calibrated one by one, fail an equal change far more often than 5% together, and say so
    assert joint_rate(alone) == pytest.approx(0.1464)
    assert all(gate.limits.together.rate == pytest.approx(joint_rate(alone)) for gate in alone)
    assert "false-alarm rate 5% (10,000 swaps" in words(alone[1])["message"]  # the joint rate is said once
    (line,) = together_lines({"evaluations": [{"gates": [gate_document(gate) for gate in alone]}]})
    assert "fails at least one of these 5 gates (bvtest.yaml, against production) 14.6% of the time" in line
    assert joint_rate(together) == pytest.approx(family.rate) and family.rate <= 0.05
    assert family.rate > 0.045  # and not much less: the min-p level uses the family's dependence
    for gate in together:  # every limit is the gate's own null at the family's per-gate count
        assert gate.limits.calibrated == gate.null.distribution.limit_past(family.count) + gate.null.offset
        assert "false-alarm rate 1.55%, family-wise with 5 gates at false_alarm 5% together" in words(gate)["message"]
        document = gate_document(gate)["calibration"]
        assert document["family"] == {
            "false_alarm": 0.05,
            "gates": 5,
            "level": family.level,
            "rate": family.rate,
            "swaps": 10_000,
        }
        # the effective limits: the bounds beside false_alarm are more lenient here, so no more than the family
        assert document["together"]["gates"] == 5 and document["together"]["rate"] <= family.rate
    (line,) = together_lines({"evaluations": [{"gates": [gate_document(gate) for gate in together]}]})
    assert line == (
        "Together: an equal-quality change fails at least one of these 5 gates (bvtest.yaml, against production) "
        f"{wording.percent(together[0].limits.together.rate)} of the time (10,000 swaps), each gate alone "
        f"{wording.percent(together[0].limits.rate)}; the spec allows 5% together (family-wise limits)."
    )
    # Var's 19% growth on the risky candidate is past 95% of equal changes for Var alone, not for the five
    verdict = {
        gate.id.split("::", 1)[1]: (alone_gate.outcome, gate.outcome) for alone_gate, gate in zip(alone, together)
    }
    assert verdict["nDCG@10::var"] == ("FAIL", "OK")


def naive_min_p_count(nulls: list, false_alarm: float) -> int:
    """The largest per-gate count k (up to floor(P N)) whose limits, each null's k-th most extreme value on its bad
    side, fail at most floor(P N) of the shared swaps: every k tried, no tail counts."""
    swaps = len(nulls[0].by_swap)
    allowed = int(np.floor(false_alarm * swaps + 1e-9))
    best = None
    for k in range(allowed + 1):
        failing = np.zeros(swaps, dtype=bool)
        for null in nulls:
            limit = null.limit_past(k)
            slack = 1e-12 * max(1.0, abs(limit))
            failing |= null.by_swap < limit - slack if null.higher_is_better else null.by_swap > limit + slack
        if failing.sum() <= allowed:
            best = k
    assert best is not None
    return best


def test_gates_asking_for_different_rates_form_one_family_per_rate_and_report_their_joint_rate(tmp_path: Path) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document["candidate"] = str(EXAMPLE / "runs" / "candidate-risky.run")
    document["analysis"]["calibration"] = {"swaps": 2000}
    document["gates"] = [
        {"statistic": "trisk", "measure": "nDCG@10", "false_alarm": 0.05},
        {"statistic": "var", "measure": "nDCG@10", "false_alarm": 0.05},
        {"statistic": "bias2_plus_var", "measure": "nDCG@10", "false_alarm": 0.1},
        {"statistic": "mean", "false_alarm": 0.1},  # on both measures
    ]
    spec.write_text(yaml.safe_dump(document))
    gates = evaluate_spec(load_spec(spec), use_cache=False).gates  # mixed rates are no error by default
    families = {gate.id.split("::", 1)[1]: gate.limits.family for gate in gates}
    assert {name: (family.false_alarm, len(family.limits)) for name, family in families.items()} == {
        "nDCG@10::trisk": (0.05, 2),
        "nDCG@10::var": (0.05, 2),
        "nDCG@10::bias2_plus_var": (0.1, 3),
        "nDCG@10::mean": (0.1, 3),
        "AP::mean": (0.1, 3),
    }
    for rate, members in ((0.05, gates[:2]), (0.1, gates[2:])):
        family = members[0].limits.family
        assert family.count == naive_min_p_count([gate.null.distribution for gate in members], rate)
        assert family.rate <= rate and joint_rate(list(members)) == pytest.approx(family.rate)
    # the check as a whole: the five gates share the swaps, and fail an equal change more often than either family
    joint = joint_rate(list(gates))
    assert all(
        gate.limits.together.rate == pytest.approx(joint) and len(gate.limits.together.gates) == 5 for gate in gates
    )
    assert max(families["nDCG@10::trisk"].rate, families["AP::mean"].rate) <= joint <= 0.15
    documents = [gate_document(gate) for gate in gates]
    lines = together_lines({"evaluations": [{"gates": documents}]})
    rates = sorted({gate["calibration"]["rate"] for gate in documents})
    assert lines == [
        f"Together: an equal-quality change fails at least one of these 5 gates (bvtest.yaml, against production) "
        f"{wording.percent(joint)} of the time (2,000 swaps), each gate alone {wording.percent(rates[0])} to "
        f"{wording.percent(rates[-1])}; the spec allows 10% to its false_alarm 10% gates, 5% to its false_alarm 5% "
        "gates together (family-wise limits, one family per rate)."
    ]


def test_family_must_be_a_boolean(tmp_path: Path) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document["analysis"]["calibration"] = {"family": "yes"}
    spec.write_text(yaml.safe_dump(document))
    with pytest.raises(InputError, match="calibration.family: expected true or false"):
        load_spec(spec)


def test_four_topics_cannot_calibrate_a_five_percent_gate_so_a_run_worse_on_all_of_them_is_ok_star_not_ok(
    tmp_path: Path,
) -> None:
    """The example's last-quarter release loses on each of topics 1-4 to production: with 4 topics the
    16 swaps cannot place a 5% limit anywhere but on the worst swap, which is the candidate itself."""
    keep = {"1", "2", "3", "4"}

    def subset(source: Path) -> Path:
        lines = [line for line in source.read_text().splitlines() if line.split()[0] in keep]
        target = tmp_path / source.name
        target.write_text("\n".join(lines) + "\n")
        return target

    spec = tmp_path / "tiny.yaml"
    document = {
        "qrels": str(subset(EXAMPLE / "eval" / "qrels.txt")),
        "measures": ["nDCG@10"],
        "baselines": {"production": str(subset(EXAMPLE / "runs" / "production.run"))},
        "candidate": str(subset(EXAMPLE / "runs" / "past-release.run")),
        "cache": False,
        "gates": [{"statistic": "trisk", "false_alarm": 0.05}, {"statistic": "mean", "false_alarm": 0.05}],
    }
    spec.write_text(yaml.safe_dump(document))
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    matrix = evaluation.measure("nDCG@10").matrix
    assert (matrix.scores[matrix.index("candidate")] < matrix.scores[matrix.index("production")]).all()
    gates = evaluation.gates
    assert [gate.outcome for gate in gates] == ["OK*", "OK*"]
    assert all(gate.limits.null.exact and gate.limits.null.swaps == 16 and gate.limits.rate == 0 for gate in gates)
    assert all("raise false_alarm to at least 6.25%" in words(gate)["guards"][0] for gate in gates)
    document["gates"] = [{"statistic": "mean", "false_alarm": 0.0625}]
    spec.write_text(yaml.safe_dump(document))
    assert [gate.outcome for gate in evaluate_spec(load_spec(spec), use_cache=False).gates] == ["FAIL"]


def test_the_dl_hard_examples_calibrated_family_passes_rm3_against_bm25(tmp_path: Path) -> None:
    """BM25+RM3 vs BM25 on DL-HARD: nDCG@10 +0.0077, AP(rel=2) -0.0002, RR(rel=2) -0.0023 (upstream
    trec_eval means): no harm beyond noise. The twelve calibrated gates (four on each of three measures)
    keep 5% together; the fixed TRisk >= -2 they replace failed 29.6% of equal changes on nDCG@10."""
    example = example_trec_spec()
    document = yaml.safe_load(example.read_text())
    assert document["analysis"]["calibration"] == {"family": True}
    evaluation = evaluate_spec(load_spec(example), use_cache=False)
    # every gate passes as judged, and the mean gates would miss the drop their `detect: 10%` names
    # (test_power_gates.py); DL-HARD judges about half of each top 10, and all but nDCG@10's Bias²+Var fail if
    # BM25's (or, for Var and Bias²+Var, RM3's) unjudged documents are relevant; weighed over plausible gradings of
    # them, each passes in at least 95% of them: decided, not undecided (docs/judgments.md)
    assert len(evaluation.gates) == 12 and all(gate.passed_as_judged and gate.passed for gate in evaluation.gates)
    assert all(gate.missed_aim is not None for gate in evaluation.gates if gate.id.endswith("::mean"))
    outcomes = {gate.id.split("::", 1)[1]: gate.outcome for gate in evaluation.gates}
    assert {gate for gate, outcome in outcomes.items() if outcome != "OK"} == {
        "nDCG@10::mean",
        "AP(rel=2)::mean",
        "RR(rel=2)::mean",
    }  # OK*: the aim they miss
    weighed = {gate.id.split("::", 1)[1] for gate in evaluation.gates if gate.plausible is not None}
    assert weighed == set(outcomes) - {"nDCG@10::bias2_plus_var"}
    assert all(gate.plausible.decided for gate in evaluation.gates if gate.plausible is not None)
    families = {(len(gate.limits.family.limits), gate.limits.family.rate) for gate in evaluation.gates}
    assert len(families) == 1
    ((members, rate),) = families
    assert members == 12 and 0.045 < rate <= 0.05
    assert joint_rate(list(evaluation.gates)) == pytest.approx(rate)


def test_real_pass_on_a_limit_that_sits_on_the_candidate_says_headroom_0_not_past_the_limit(tmp_path: Path) -> None:
    """DL-HARD: BM25+ELECTRA cut by two topics against itself. Only 4 swaps differ, the calibrated limit sits on the
    candidate's mean, and rounding put it 5.55e-17 past: the passing gate said "past the limit by 5.55112e-17".
    (The null from sums puts it exactly on the value; the message must say the same either way.)"""
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    with gzip.open(runs / "bm25+electra-mp.run.gz", "rt") as full:
        cut = [line for line in full if line.split()[0] not in ("1056204", "1049519")]
    (tmp_path / "cut.run").write_text("".join(cut))
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")}
        measures: [nDCG@10]
        baselines: {{production: {runs / "bm25+electra-mp.run.gz"}}}
        candidate: cut.run
        cache: false
        gates: [{{statistic: mean, max_decrease: 0.01, false_alarm: 0.05}}]
    """)
    )
    gate = evaluate_spec(spec_under_test(spec), use_cache=False).measure().gates[0]
    assert gate.passed and gate.outcome == "OK*" and 0 <= gate.excess <= 1e-12
    assert gate.value == pytest.approx(0.373404, abs=1e-6) and gate.limit == pytest.approx(gate.value, abs=1e-12)
    # a limit no equal-quality change crosses is not printed, nor a margin to it (issue 21)
    assert "gives no limit that can fail; false-alarm rate 0%" in words(gate)["message"].split("\n")[0]
    assert "past the limit" not in words(gate)["message"] and "headroom" not in words(gate)["message"]


def test_the_default_family_and_the_joint_rate_equal_a_brute_force_over_every_swap(tmp_path: Path) -> None:
    """10 topics, so the pipeline enumerates all 1,024 swaps: the family's limits (three calibrated gates at 10%)
    and the rate of the four gates together (a plain bound included) equal loops over every swap."""
    from test_stats_calibration import RISK_5, brute_force_family, brute_force_nulls_in_swap_order

    scores = np.random.default_rng(11).beta(2.0, 3.0, size=(3, 10)).round(4)  # candidate, production, other
    table = tmp_path / "scores.csv"
    table.write_text(
        "system,"
        + ",".join(f"t{j}" for j in range(10))
        + "\n"
        + "".join(
            f"{name}," + ",".join(map(str, row)) + "\n" for name, row in zip(("new", "production", "other"), scores)
        )
    )
    (tmp_path / "bvtest.yaml").write_text(
        textwrap.dedent("""
        measures: [score]
        table_format: wide
        cache: false
        baselines:
          production: {scores: scores.csv, system: production}
          other: {scores: scores.csv, system: other}
        candidate: {scores: scores.csv, system: new}
        reference: production
        analysis: {risk_alpha: 5}
        gates:
          - {statistic: trisk, false_alarm: 0.1}
          - {statistic: var, false_alarm: 0.1}
          - {statistic: mean, false_alarm: 0.1}
          - {statistic: bias2_plus_var, max_increase: 10%}
        """).lstrip()
    )
    gates = evaluate_spec(load_spec(tmp_path / "bvtest.yaml"), use_cache=False).gates
    names = ("trisk", "var", "mean", "bias2_plus_var")
    nulls = brute_force_nulls_in_swap_order(scores, names, RISK_5)
    count, rate, limits = brute_force_family(nulls[:3], names[:3], 0.1)
    for gate, limit in zip(gates[:3], limits):
        assert gate.limits.null.exact and gate.limits.null.swaps == 1024
        assert gate.limits.family.count == count and gate.limits.family.rate == pytest.approx(rate)
        assert gate.limits.calibrated - gate.null.offset == pytest.approx(limit, abs=1e-12)
    assert gates[3].limits.family is None  # a plain bound joins no family, but counts in the check's rate
    failing = 0
    for b in range(1024):
        failing += any(
            (nulls[g, b] < gate.limit - gate.null.offset - 1e-12)
            if gate.higher_is_better
            else (nulls[g, b] > gate.limit - gate.null.offset + 1e-12)
            for g, gate in enumerate(gates)
        )
    for gate in gates:
        assert gate.limits.together.gates == tuple(outcome.id for outcome in gates)
        assert gate.limits.together.rate == pytest.approx(failing / 1024) and gate.limits.together.swaps == 1024


@pytest.mark.parametrize("lone_rate", [None, 0.2])
def test_the_together_line_names_each_family_a_gate_alone_at_its_rate_and_leaves_plain_bounds_out(
    tmp_path: Path, lone_rate: float | None
) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document["analysis"]["calibration"] = {"swaps": 2000}
    document["gates"] = [
        {"statistic": "trisk", "measure": "nDCG@10", "false_alarm": 0.05},
        {"statistic": "var", "measure": "nDCG@10", "false_alarm": 0.05},
        {"statistic": "mean", "measure": "nDCG@10", "max_decrease": 0.01},  # a plain bound: in the check, no family
        *([{"statistic": "bias2_plus_var", "measure": "nDCG@10", "false_alarm": lone_rate}] if lone_rate else []),
    ]
    spec.write_text(yaml.safe_dump(document))
    gates = evaluate_spec(load_spec(spec), use_cache=False).gates
    family = gates[0].limits.family
    assert gates[2].limits.family is None and len(family.limits) == 2
    (line,) = together_lines({"evaluations": [{"gates": [gate_document(gate) for gate in gates]}]})
    # the two calibrated gates keep 5% together; the plain bound and a gate with a rate of its own are not in it
    assert line.endswith("; the spec allows 5% together (family-wise limits).")
    if lone_rate is not None:
        assert gates[3].limits.family is None and gates[3].limits.rate <= 0.2
    assert f"{wording.percent(gates[0].limits.together.rate)} of the time (2,000 swaps)" in line


def test_real_gates_without_a_relative_bound_name_the_system_their_null_swaps_with(tmp_path: Path) -> None:
    """DL-HARD, RM3 against BM25: a calibrated ZRisk gate and an absolute Var bound draw their null from swaps with
    the spec's reference, yet said '10,000 swaps with None' (JSON calibration.reference "None")."""
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        textwrap.dedent(f"""
        qrels: {shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")}
        measures: [nDCG@10]
        baselines:
          bm25: {runs / "bm25.run.gz"}
          electra: {runs / "bm25+electra-mp.run.gz"}
        candidate: {runs / "bm25+rm3.run.gz"}
        reference: bm25
        cache: false
        analysis: {{calibration: {{swaps: 1000}}}}
        gates:
          - {{statistic: zrisk, false_alarm: 0.05}}
          - {{statistic: var, max: 0.09}}
          - {{statistic: mean, min: 0.2, reference: electra}}
    """)
    )
    zrisk, var, mean = evaluate_spec(spec_under_test(spec), use_cache=False).measure().gates
    for gate, partner in ((zrisk, "bm25"), (var, "bm25"), (mean, "electra")):
        assert gate.reference is None  # no value of the reference enters the limit
        assert gate.null is not None and gate.null.partner == partner
        assert f"(1,000 swaps with {partner}, seed 0)" in words(gate)["message"].split("\n")[0]
        assert gate_document(gate)["calibration"]["reference"] == partner


# --- a check that fails most equal-quality changes is a warning at the spec (issue 22) ------------------------------

TIGHT_PLAIN_BOUNDS = """gates:
  - {statistic: mean, max_decrease: 0.002}
  - {statistic: var, max_increase: 1%}
  - {statistic: bias2_plus_var, max_increase: 1%}
  - {statistic: trisk, min: -1}
  - {statistic: urisk, min: -0.01}
  - {statistic: bias2, max_increase: 1%}
"""


def tight_example(folder: Path) -> Path:
    """The example project, its gates replaced by six plain bounds tighter than noise (on both measures)."""
    import shutil

    example = Path(__file__).resolve().parents[1] / "example_project"
    shutil.copytree(example, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".bvtest_cache", "reports"))
    spec = folder / "bvtest.yaml"
    text = spec.read_text()
    spec.write_text(text[: text.index("gates:")] + TIGHT_PLAIN_BOUNDS)
    return spec


def test_plain_bounds_that_together_fail_most_equal_changes_are_a_warning_at_the_spec(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """26 plain bounds of one spec together failed 99.7% of equal-quality changes, said only by a line of the report."""
    from pytest_bvtest.cli import main
    from pytest_bvtest.judging.pipeline import checks_failing_most_equal_changes

    spec = tight_example(pytester.path)
    gates_line = spec.read_text().splitlines().index("gates:") + 1
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    rates = {gate.limits.together.rate for measure in evaluation.measures for gate in measure.gates}
    (rate,) = rates  # the 12 gates (6 per measure) share the swaps with production: one check
    assert rate > 0.99
    (check,) = checks_failing_most_equal_changes(evaluation)
    message = (
        f"bvtest.yaml: the 12 gates against production together fail {rate:.1%} of equal-quality changes (1,000 "
        "swaps with production): most pull requests that change nothing would fail this check; calibrate the gates "
        "(`false_alarm: 0.05` holds them to 5% together), or loosen or drop bounds (`bvtest calibrate bvtest.yaml` "
        "prints each gate's rate)"
    )
    assert (check.gate_id, check.message, check.line) == ("bvtest.yaml::nDCG@10::mean", message, gates_line)
    assert main(["check", str(spec), "--no-cache"]) == 1
    assert f"bvtest: warning: {message}\n" in capsys.readouterr().err
    for workers in ([], ["-n", "2"]):  # shown once, by the group's first gate, however many processes evaluate
        result = pytester.runpytest_subprocess("bvtest.yaml", "-p", "no:cacheprovider", "--bvtest-no-cache", *workers)
        result.stdout.fnmatch_lines([f"*/bvtest.yaml:{gates_line}: SpecWarning: {message}"])
        assert result.stdout.str().count("SpecWarning") == 1
    # the example's own calibrated gates together fail 4.99%: no warning
    example = evaluate_spec(load_spec(Path(__file__).resolve().parents[1] / "example_project" / "bvtest.yaml"))
    assert checks_failing_most_equal_changes(example) == []
