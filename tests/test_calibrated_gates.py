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
from conftest import shared_path
from test_plugin import PRODUCTION, QRELS, RISKY, run_text

from pytest_bvtest.api import evaluate_spec, spec_under_test
from pytest_bvtest.errors import InputError
from pytest_bvtest.report.jsonreport import gate_document
from pytest_bvtest.report.markdown import false_alarm_text
from pytest_bvtest.spec import load_spec

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
    assert "| false alarm |" in (calibrated_project.path / "report.md").read_text()
    assert f"{fixed['calibration']['rate']:.2%} (exact)" in (calibrated_project.path / "report.md").read_text()
    properties = {
        f"AP::{case.get('name')}": {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ElementTree.parse(calibrated_project.path / "junit.xml").iter("testcase")
    }
    assert float(properties["AP::urisk"]["bvtest_false_alarm"]) == 0.1
    assert float(properties["AP::urisk"]["bvtest_false_alarm_rate"]) == pytest.approx(calibrated["calibration"]["rate"])
    assert properties["AP::fixed"]["bvtest_null_swaps"] == "64" and "bvtest_false_alarm" not in properties["AP::fixed"]


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


def verdicts(spec: Path, gates: list[dict], candidate: Path | None = None) -> dict[str, tuple[str, float]]:
    document = yaml.safe_load(spec.read_text())
    document["gates"] = gates
    document["cache"] = False
    if candidate is not None:
        document["candidate"] = str(candidate)
    written = spec.with_name(f"gated-{spec.name}")
    written.write_text(yaml.safe_dump(document))
    evaluation = evaluate_spec(load_spec(written), use_cache=False)
    return {outcome.id.split("::", 1)[1]: (outcome.outcome, outcome.value) for outcome in evaluation.gates}


def example_spec(tmp_path: Path) -> Path:
    document = yaml.safe_load((EXAMPLE / "bvtest.yaml").read_text())
    for key in ("qrels", "topics", "candidate"):
        document[key] = str(EXAMPLE / document[key])
    document["baselines"] = {name: str(EXAMPLE / path) for name, path in document["baselines"].items()}
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(yaml.safe_dump(document))
    return spec


def test_the_examples_risky_candidate_fails_before_and_after_calibration_and_the_stable_one_passes(
    tmp_path: Path,
) -> None:
    spec = example_spec(tmp_path)
    risky = EXAMPLE / "runs" / "candidate-risky.run"
    before, after = verdicts(spec, BEFORE, risky), verdicts(spec, RECOMMENDED, risky)
    assert before["nDCG@10::trisk"] == ("FAIL", pytest.approx(-2.45917, abs=5e-6))
    assert after["nDCG@10::var"][0] == "FAIL"  # its spread grows past 95% of equal-quality changes
    assert after["nDCG@10::trisk"][0] == "OK"  # its wins outweigh its losses as an equal change's would
    assert {outcome for outcome, _ in verdicts(spec, RECOMMENDED).values()} == {"OK"}


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
    assert (plain.null.swaps, calibrated.null.swaps) == (1_000, 10_000)
    assert plain.null.rate > 0.5  # TRisk >= -2 at alpha 5 fails most equal-quality changes of this candidate


# --- family-wise limits (analysis.calibration.family) ------------------------------------------------


def joint_rate(outcomes: list) -> float:
    """Share of the shared swaps on which at least one gate's null lies strictly past its calibrated limit."""
    shared = min(outcome.null.swaps for outcome in outcomes)
    failing = np.zeros(shared, dtype=bool)
    for outcome in outcomes:
        values = outcome.null.distribution.by_swap[:shared] + outcome.null.offset
        limit = outcome.null.calibrated_limit
        failing |= values < limit - 1e-12 if outcome.higher_is_better else values > limit + 1e-12
    return float(failing.mean())


def test_family_wise_limits_hold_the_examples_recommended_gates_to_five_percent_together(tmp_path: Path) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document.update(candidate=str(EXAMPLE / "runs" / "candidate-risky.run"), cache=False)
    spec.write_text(yaml.safe_dump(document))
    alone = [gate for measure in evaluate_spec(load_spec(spec), use_cache=False).measures for gate in measure.gates]
    document["analysis"]["calibration"] = {"family": True}
    spec.write_text(yaml.safe_dump(document))
    together = [gate for measure in evaluate_spec(load_spec(spec), use_cache=False).measures for gate in measure.gates]
    assert len(together) == 5 and all(gate.null.family is not None for gate in together)
    family = together[0].null.family
    assert len(family.limits) == 5 and family.swaps == 10_000
    # the five gates, calibrated one by one, fail an equal change far more often than 5% together
    assert joint_rate(alone) > 0.1
    assert joint_rate(together) == pytest.approx(family.rate) and family.rate <= 0.05
    assert family.rate > 0.045  # and not much less: the min-p level uses the family's dependence
    for gate in together:  # every limit is the gate's own null at the family's per-gate count
        assert gate.null.calibrated_limit == gate.null.distribution.limit_past(family.count) + gate.null.offset
        assert "for the 5 calibrated gates together" in gate.message
        document = gate_document(gate)["calibration"]
        assert document["family"] == {
            "false_alarm": 0.05,
            "gates": 5,
            "level": family.level,
            "rate": family.rate,
            "swaps": 10_000,
        }
        assert false_alarm_text(document).endswith(f"seed 0; {family.rate:.2%} for 5 gates together)")
    # Var's 19% growth on the risky candidate is past 95% of equal changes for Var alone, not for the five
    verdict = {
        gate.id.split("::", 1)[1]: (alone_gate.outcome, gate.outcome) for alone_gate, gate in zip(alone, together)
    }
    assert verdict["nDCG@10::var"] == ("FAIL", "OK")


def test_family_wise_calibration_needs_one_false_alarm_rate_and_a_boolean(tmp_path: Path) -> None:
    spec = example_spec(tmp_path)
    document = yaml.safe_load(spec.read_text())
    document["analysis"]["calibration"] = {"family": True}
    document["gates"] = [{"statistic": "trisk", "false_alarm": 0.05}, {"statistic": "mean", "false_alarm": 0.1}]
    spec.write_text(yaml.safe_dump(document))
    with pytest.raises(InputError, match=r"gates\[1\]\.false_alarm: false_alarm 0.1 differs from 0.05") as raised:
        load_spec(spec)
    assert raised.value.line is not None and "family: false" in raised.value.hint
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
    assert all(gate.null.exact and gate.null.swaps == 16 and gate.null.rate == 0 for gate in gates)
    assert all("raise false_alarm to at least 6.25%" in gate.guards[0] for gate in gates)
    document["gates"] = [{"statistic": "mean", "false_alarm": 0.0625}]
    spec.write_text(yaml.safe_dump(document))
    assert [gate.outcome for gate in evaluate_spec(load_spec(spec), use_cache=False).gates] == ["FAIL"]


def test_the_dl_hard_examples_calibrated_family_passes_rm3_against_bm25(tmp_path: Path) -> None:
    """BM25+RM3 vs BM25 on DL-HARD: nDCG@10 +0.0077, AP(rel=2) -0.0002, RR(rel=2) -0.0023 (upstream
    trec_eval means): no harm beyond noise. The twelve calibrated gates (four on each of three measures)
    keep 5% together; the fixed TRisk >= -2 they replace failed 29.6% of equal changes on nDCG@10."""
    shared_path("dl_hard", "dataset")
    document = yaml.safe_load((EXAMPLE / "trec" / "bvtest-dl-hard.yaml").read_text())
    assert document["analysis"]["calibration"] == {"family": True}
    evaluation = evaluate_spec(load_spec(EXAMPLE / "trec" / "bvtest-dl-hard.yaml"), use_cache=False)
    assert len(evaluation.gates) == 12 and {gate.outcome for gate in evaluation.gates} == {"OK"}
    families = {(len(gate.null.family.limits), gate.null.family.rate) for gate in evaluation.gates}
    assert len(families) == 1
    ((members, rate),) = families
    assert members == 12 and 0.045 < rate <= 0.05
    assert joint_rate(list(evaluation.gates)) == pytest.approx(rate)


def test_real_pass_on_a_limit_that_sits_on_the_candidate_says_headroom_0_not_past_the_limit(tmp_path: Path) -> None:
    """DL-HARD: BM25+ELECTRA cut by two topics against itself. Only 4 swaps differ, the calibrated limit sits on the
    candidate's mean, and rounding put it 5.55e-17 past: the passing gate said "past the limit by 5.55112e-17"."""
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
    assert gate.passed and gate.outcome == "OK*" and 0 < gate.excess <= 1e-12
    assert gate.value == pytest.approx(0.373404, abs=1e-6) and gate.limit == pytest.approx(gate.value, abs=1e-12)
    assert "; headroom 0; false-alarm rate 0%" in gate.message.split("\n")[0]
    assert "past the limit" not in gate.message


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
        assert gate.null is not None and gate.null.reference == partner
        assert f"(1,000 swaps with {partner}, seed 0)" in gate.message.split("\n")[0]
        assert gate_document(gate)["calibration"]["reference"] == partner
