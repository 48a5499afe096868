"""The pytest plugin, driven through pytester: collection, ids, messages, options, reports, xdist."""

from __future__ import annotations

import hashlib
import json
import os
import re
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest

from pytest_bvtest.report.jsonreport import schema

TOPICS = ("t1", "t2", "t3", "t4", "t5", "t6")
# every document the runs retrieve is judged (d1-d5 not relevant), so the gates' verdicts rest on no unjudged
# document (docs/judgments.md) and the tests below see the plain ones
QRELS = "".join(
    f"{t} 0 {t}-rel 1\n{t} 0 {t}-other 0\n" + "".join(f"{t} 0 {t}-d{k} 0\n" for k in range(1, 6)) for t in TOPICS
)


def run_text(tag: str, relevant_rank: dict[str, int]) -> str:
    """A run putting each topic's relevant document at the given rank (AP = 1/rank)."""
    lines = []
    for topic in TOPICS:
        rank = relevant_rank.get(topic, 1)
        docs = [f"{topic}-d{k}" for k in range(1, 6)]
        docs.insert(rank - 1, f"{topic}-rel")
        lines += [f"{topic} Q0 {doc} {r} {10 - r} {tag}" for r, doc in enumerate(docs, start=1)]
    return "\n".join(lines) + "\n"


PRODUCTION = {"t1": 1, "t2": 2, "t3": 1, "t4": 2, "t5": 1, "t6": 3}
BM25 = {"t1": 2, "t2": 2, "t3": 3, "t4": 2, "t5": 2, "t6": 3}
STABLE = {"t1": 1, "t2": 1, "t3": 1, "t4": 2, "t5": 1, "t6": 2}  # never worse than production
RISKY = {"t1": 1, "t2": 1, "t3": 5, "t4": 1, "t5": 4, "t6": 1}  # wins some, loses t3 and t5 badly
SLIGHTLY_WORSE = {"t1": 1, "t2": 2, "t3": 2, "t4": 2, "t5": 1, "t6": 3}  # production but for t3

SPEC = """
qrels: qrels.txt
measures: [AP, RR]
baselines:
  production: runs/production.run
  bm25: runs/bm25.run
candidate: runs/stable.run
reference: production
gates:
  - {statistic: mean, max_decrease: 0.01}
  - {statistic: urisk, min: -0.05}
  - {statistic: bias2_plus_var, max_increase: 10%}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".txt", qrels=QRELS)
    runs = pytester.mkdir("runs")
    for name, ranks in (
        ("production", PRODUCTION),
        ("bm25", BM25),
        ("stable", STABLE),
        ("risky", RISKY),
        ("slightly-worse", SLIGHTLY_WORSE),
    ):
        (runs / f"{name}.run").write_text(run_text(name, ranks))
    (pytester.path / "bvtest.yaml").write_text(textwrap.dedent(SPEC).lstrip())
    return pytester


def test_one_item_per_measure_and_gate_with_readable_ids(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "bvtest.yaml::AP::mean",
            "bvtest.yaml::AP::urisk",
            "bvtest.yaml::AP::bias2_plus_var",
            "bvtest.yaml::RR::mean",
            "bvtest.yaml::RR::urisk",
            "bvtest.yaml::RR::bias2_plus_var",
        ]
    )


def test_stable_candidate_passes_and_summary_shows_the_table(project: pytest.Pytester) -> None:
    result = project.runpytest("-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            "*bvtest summary*",
            "*bvtest.yaml*AP*6 topics*",
            "*system*role*mean*Bias²*Var*Bias²+Var*URisk*GeoRisk*MVE*gates*",
            "*production*reference*",
            "> candidate*candidate*3 OK*",
            "[[]OK[]] bvtest.yaml::AP::mean*",
        ]
    )


def test_failing_gate_says_what_regressed_by_how_much_and_where(project: pytest.Pytester) -> None:
    result = project.runpytest("--bvtest-run", "runs/risky.run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # AP of production: [1, .5, 1, .5, 1, 1/3]; risky: [1, 1, .2, 1, .25, 1]; deltas [0, .5, -.8, .5, -.75, 2/3]
    # URisk at alpha 5 = (0.5 + 0.5 + 2/3 - 6 * 0.8 - 6 * 0.75) / 6 = -1.27222
    result.stdout.fnmatch_lines(
        [
            "*AP URisk FAILED: candidate -1.27222 against production (an equal-quality change: -1.34028); bound min "
            "-0.05 requires >= -0.05; past the limit by 1.22222; false-alarm rate 90.6% (all 64 swaps with production)",
            "  The risk-weighted change against production (losses count extra) is lower than allowed "
            "(URisk -1.27, limit -0.05 at a 90.6% false-alarm rate).",
            "*topics that moved URisk most the wrong way (scores vs production):",
            # each topic's risk-weighted delta over 6 topics: -6 * 0.8 / 6 and -6 * 0.75 / 6
            "*t3: 0.2000 vs 1.0000 (-0.8000; moves URisk by -0.8)",
            "*t5: 0.2500 vs 1.0000 (-0.7500; moves URisk by -0.75)",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED bvtest.yaml::AP::urisk*"])


def test_invalid_spec_is_one_failing_item_not_a_crashed_session(project: pytest.Pytester) -> None:
    (project.path / "bvtest_broken.yaml").write_text(
        "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/nope.run}\n"
    )
    project.makepyfile(test_other="def test_other():\n    pass\n")
    result = project.runpytest()
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines(
        ["*bvtest_broken.yaml:3: baselines.p: file not found*", "FAILED bvtest_broken.yaml::spec*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_sections_that_cannot_work_together_are_one_spec_item_failing_at_collection(project: pytest.Pytester) -> None:
    (project.path / "variations.tsv").write_text("t1\tt1\tfirst query\n")
    (project.path / "bvtest_sim.yaml").write_text(
        "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/production.run}\ncandidate: runs/stable.run\n"
        "gates:\n  - {statistic: mean, min: 0}\nanalysis:\n  mve: {variations: variations.tsv}\n"
        "  simulation: {samples: 5}\n"
    )
    result = project.runpytest("--collect-only", "-q", "bvtest_sim.yaml")
    result.stdout.fnmatch_lines(["bvtest_sim.yaml::spec"])
    result = project.runpytest("bvtest_sim.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*bvtest_sim.yaml:9: the per-topic simulation needs run files and qrels*", "FAILED bvtest_sim.yaml::spec*"]
    )


def test_input_error_in_a_run_fails_its_items_with_file_and_line(project: pytest.Pytester) -> None:
    (project.path / "runs" / "production.run").write_text("t1 Q0 d1 1 not-a-number production\n")
    result = project.runpytest()
    result.assert_outcomes(failed=6)
    result.stdout.fnmatch_lines(["*runs/production.run:1:*score*"])
    assert "Traceback" not in result.stdout.str()


def test_json_report_follows_its_schema_and_ini_mirror_works(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nbvtest_json = reports/from-ini.json\n")
    result = project.runpytest("--bvtest-run", "runs/risky.run")
    document = json.loads((project.path / "reports" / "from-ini.json").read_text())
    jsonschema.validate(document, schema())
    assert document["schema_version"] == 1 and document["passed"] is False
    ap = next(e for e in document["evaluations"] if e["measure"] == "AP")
    assert ap["topics"] == list(TOPICS)
    assert ap["target"]["per_topic"] == pytest.approx([1, 1, 1, 1, 1, 1])
    candidate = next(s for s in ap["systems"] if s["role"] == "candidate")
    assert candidate["mean"] == pytest.approx((1 + 1 + 0.2 + 1 + 0.25 + 1) / 6)
    assert candidate["per_topic"] == pytest.approx([1, 1, 0.2, 1, 0.25, 1])  # AP = 1 / rank of the relevant doc
    assert {gate["id"] for gate in ap["gates"]} == {
        "bvtest.yaml::AP::mean",
        "bvtest.yaml::AP::urisk",
        "bvtest.yaml::AP::bias2_plus_var",
    }
    assert result.ret == 1
    # the command line wins over the ini file
    project.runpytest("--bvtest-json", "cli.json")
    assert (project.path / "cli.json").exists()


def test_markdown_step_summary_and_github_annotations(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    step_summary = project.path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = project.runpytest("--bvtest-run", "runs/risky.run", "--bvtest-markdown", "pr.md")
    markdown = (project.path / "pr.md").read_text()
    assert markdown.startswith("<!-- pytest-bvtest -->")
    assert "`AP::urisk`" in markdown and "| t3 |" in markdown
    assert step_summary.read_text() == "earlier step\n" + markdown
    result.stdout.fnmatch_lines(
        ["::error file=bvtest.yaml,line=10,title=bvtest FAIL bvtest.yaml%3A%3AAP%3A%3Aurisk::*"]
    )


def test_a_step_summary_that_is_an_input_is_refused_before_anything_runs(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GITHUB_STEP_SUMMARY`` pointing at the qrels appended 87 lines of Markdown to them; every report path was
    already checked against the inputs, and now the job summary is too."""
    qrels = (project.path / "qrels.txt").read_text()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "qrels.txt"))
    result = project.runpytest("--bvtest-run", "runs/risky.run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (project.path / "qrels.txt").read_text() == qrels
    result.stderr.fnmatch_lines(
        [f"*bvtest: GITHUB_STEP_SUMMARY {project.path / 'qrels.txt'} is the qrels (*): the session would write over*"]
    )


def test_a_step_summary_on_a_fifo_nobody_reads_fails_the_session_instead_of_hanging_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = project.path / "summary.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    result = project.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [f"bvtest: could not write the reports: {fifo}: is a named pipe (FIFO), not a file to append to; *"]
    )


def test_junit_xml_carries_the_statistic_values(project: pytest.Pytester) -> None:
    project.runpytest("--junitxml=junit.xml")
    tree = ElementTree.parse(project.path / "junit.xml")
    case = next(c for c in tree.iter("testcase") if (c.get("classname"), c.get("name")) == ("bvtest.yaml.AP", "urisk"))
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["bvtest_statistic"] == "urisk"
    assert properties["bvtest_outcome"] == "OK"
    assert properties["bvtest_reference"] == "production"
    assert float(properties["bvtest_limit"]) == -0.05
    # URisk is measured against production and has no reference value: no property, not the text 'None'
    assert "bvtest_reference_value" not in properties and "None" not in properties.values()


def test_junit_xml_says_why_a_gate_passed_with_a_warning(project: pytest.Pytester) -> None:
    # an OK* gate was a bare pass in JUnit XML (outcome OK* in a property, no reason): CI test viewers
    # showed a candidate identical to a baseline (a run tested by mistake) as six green gates
    project.runpytest("--junitxml=junit.xml", "--bvtest-run", "runs/bm25.run")
    tree = ElementTree.parse(project.path / "junit.xml")
    case = next(
        c for c in tree.iter("testcase") if (c.get("classname"), c.get("name")) == ("bvtest.yaml.AP", "bias2_plus_var")
    )
    properties = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    assert ("bvtest_outcome", "OK*") in properties
    warnings = [value for name, value in properties if name == "bvtest_warning"]
    assert warnings == [
        "identical: candidate's per-topic AP scores are identical to bm25's on all 6 topics; is this the run "
        "you meant to test? (a CI step that did not write the new run tests an old one)"
    ]
    project.runpytest("--junitxml=plain.xml")  # the stable candidate: OK, no warning
    plain = next(
        c
        for c in ElementTree.parse(project.path / "plain.xml").iter("testcase")
        if (c.get("classname"), c.get("name")) == ("bvtest.yaml.AP", "urisk")
    )
    assert "bvtest_warning" not in {p.get("name") for p in plain.iter("property")}


def test_spec_given_on_the_command_line_is_collected(project: pytest.Pytester) -> None:
    (project.path / "bvtest.yaml").rename(project.path / "quality.yaml")
    result = project.runpytest("--bvtest-spec", "quality.yaml")
    result.assert_outcomes(passed=6)


TEAM_TEST_OF_THE_SESSION_RUN = """
import pytest

@pytest.mark.bvtest
def test_the_session_run(bvtest):
    assert bvtest.evaluate("bvtest.yaml").statistic("mean", measure="AP") > 0
"""


def scratch_spec(project: pytest.Pytester) -> None:
    """A second spec in the tree, as a scratch experiment would leave one: other qrels, its own candidate."""
    scratch = project.mkdir("scratch")
    (scratch / "qrels.txt").write_text("".join(f"{t} 0 {t}-d1 1\n" for t in TOPICS))
    (scratch / "bvtest-try.yaml").write_text(
        "qrels: qrels.txt\nmeasures: [AP]\nbaselines: {production: ../runs/production.run}\n"
        "candidate: ../runs/bm25.run\nreference: production\ngates:\n  - {statistic: mean, max_decrease: 0.5}\n"
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_among_several_specs_names_its_spec_or_judges_none(project: pytest.Pytester, workers) -> None:
    """--bvtest-run is scored against one spec's qrels: with several specs collected and none named, every
    gate, and the fixture's evaluate of the session's run, fail with the reason instead of judging it twice."""
    scratch_spec(project)
    project.makepyfile(test_team=TEAM_TEST_OF_THE_SESSION_RUN)
    result = project.runpytest_subprocess(
        "--bvtest-run", "runs/risky.run", "--bvtest-json", "report.json", "-p", "no:cacheprovider", *workers
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=8)  # 6 gates of bvtest.yaml, 1 of the scratch spec, the team test
    refusal = (
        "--bvtest-run runs/risky.run: pytest collected 2 specs, each with its own qrels "
        "(bvtest.yaml, scratch/bvtest-try.yaml); say which the run is for"
    )
    hint = "--bvtest-spec bvtest.yaml (or collect that spec alone: pytest bvtest.yaml --bvtest-run runs/risky.run)"
    result.stdout.fnmatch_lines(["*bvtest: *, run runs/risky.run for the one spec collected*"])
    document = json.loads((project.path / "report.json").read_text())
    assert document["evaluations"] == [] and document["passed"] is False
    assert {error["message"] for error in document["errors"]} == {f"{refusal}; {hint}"}
    assert len(document["errors"]) == 7
    assert [test["message"] for test in document["tests"]] == [f"pytest_bvtest.errors.InputError: {refusal}; {hint}"]


def test_a_spec_named_on_the_command_line_takes_the_run_though_another_spec_shares_its_folder(
    project: pytest.Pytester,
) -> None:
    """pytest offers every file of the folder to the plugin on its way to the named spec: only the named one is
    collected, so the run is its candidate, not an ambiguous one."""
    (project.path / "bvtest-try.yaml").write_text((project.path / "bvtest.yaml").read_text())
    result = project.runpytest("bvtest.yaml", "--bvtest-run", "runs/risky.run", "--bvtest-json", "report.json")
    result.assert_outcomes(passed=2, failed=4)  # the risky run judged by its gates, not refused as ambiguous
    document = json.loads((project.path / "report.json").read_text())
    assert document["errors"] == [] and document["summary"]["gates"] == 6
    assert [Path(evaluation["spec"]).name for evaluation in document["evaluations"]] == ["bvtest.yaml", "bvtest.yaml"]
    assert {
        Path(entry["path"]).name
        for evaluation in document["evaluations"]
        for entry in evaluation["inputs"]
        if entry["role"] == "candidate"
    } == {"risky.run"}


def test_a_run_judges_the_specs_it_names_and_the_others_their_own_candidates(project: pytest.Pytester) -> None:
    scratch_spec(project)
    project.makepyfile(test_team=TEAM_TEST_OF_THE_SESSION_RUN)
    result = project.runpytest(
        "--bvtest-run", "runs/risky.run", "--bvtest-spec", "bvtest.yaml", "--bvtest-json", "report.json"
    )
    result.stdout.fnmatch_lines(["*, specs bvtest.yaml, run runs/risky.run for these specs"])
    document = json.loads((project.path / "report.json").read_text())
    candidates = {
        Path(evaluation["spec"]).relative_to(project.path).as_posix(): next(
            Path(entry["path"]).name for entry in evaluation["inputs"] if entry["role"] == "candidate"
        )
        for evaluation in document["evaluations"]
    }
    assert candidates == {"bvtest.yaml": "risky.run", "scratch/bvtest-try.yaml": "bm25.run"}
    assert [test["outcome"] for test in document["tests"]] == ["passed"]
    # one spec collected: the run is its candidate without naming it
    (project.path / "scratch" / "bvtest-try.yaml").unlink()
    single = project.runpytest("--bvtest-run", "runs/risky.run")
    single.stdout.fnmatch_lines(["*run runs/risky.run for the one spec collected*"])
    assert single.ret == pytest.ExitCode.TESTS_FAILED  # the risky run is judged: it fails urisk and bias2_plus_var


def test_analysis_only_spec_reports_without_gate_items(project: pytest.Pytester) -> None:
    (project.path / "bvtest.yaml").write_text(
        "qrels: qrels.txt\nmeasures: [AP]\nbaselines: {production: runs/production.run, bm25: runs/bm25.run}\n"
    )
    result = project.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*bvtest.yaml::analysis PASSED*", "*bvtest summary*", "*production*reference*"])


def test_marker_is_registered_and_the_fixture_evaluates_in_memory_runs(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_team="""
        import pytest

        @pytest.mark.bvtest
        def test_perfect_run_beats_production(bvtest):
            spec = bvtest.load_spec("bvtest.yaml")
            perfect = {t: {f"{t}-rel": 2.0, f"{t}-d1": 1.0} for t in ("t1", "t2", "t3", "t4", "t5", "t6")}
            evaluation = bvtest.evaluate(spec, perfect)
            assert evaluation.statistic("mean", measure="AP") == 1.0
            assert evaluation.statistic("bias2", measure="AP") == 0.0
            assert evaluation.passed
    """
    )
    result = project.runpytest("--strict-markers", "test_team.py")
    result.assert_outcomes(passed=1)


def test_noise_aware_gate_passes_with_a_visible_warning(project: pytest.Pytester) -> None:
    spec = SPEC.replace(
        "{statistic: mean, max_decrease: 0.01}", "{statistic: mean, max_decrease: 0.01, confidence: 0.95}"
    )
    (project.path / "bvtest.yaml").write_text(textwrap.dedent(spec).lstrip())
    result = project.runpytest("--bvtest-run", "runs/slightly-worse.run", "-v")
    # AP mean drops by 0.5 / 6 = 0.083 > 0.01, all of it from t3; a resample without t3 (probability
    # (5/6)^6 = 0.33) shows no drop, so the 95% interval of the difference reaches 0: within noise
    result.stdout.fnmatch_lines(
        [
            "*bvtest.yaml:9: GateWithinNoiseWarning: point estimate past the bound by 0.07333*"
            "95% interval [[]-0.25, 0[]] reaches the safe side*",
            "*[[]OK[*][]] bvtest.yaml::AP::mean*passed within noise*",
        ]
    )
    # teams that want OK* to fail turn the warning into an error: a one-line failure, no traceback
    strict = project.runpytest(
        "--bvtest-run", "runs/slightly-worse.run", "-W", "error::pytest_bvtest.plugin.GateWithinNoiseWarning"
    )
    strict.stdout.fnmatch_lines(["point estimate past the bound*", "FAILED bvtest.yaml::AP::mean*"])
    assert "Traceback" not in strict.stdout.str()


def test_update_makes_the_candidate_the_stored_reference(project: pytest.Pytester) -> None:
    production = project.path / "runs" / "production.run"
    before = production.read_bytes()
    result = project.runpytest("--bvtest-update")
    assert production.read_bytes() == (project.path / "runs" / "stable.run").read_bytes()
    # the previous version is kept in the cache folder, not beside the reference (no litter in the repository)
    assert not list((project.path / "runs").glob("production.run.previous-*"))
    kept = list((project.path / ".bvtest_cache" / "previous").glob("production.run.previous-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == before
    result.stdout.fnmatch_lines(
        ["*reference 'production' updated*", "*previous reference kept as*", "*AP mean 0.7222 -> 0.8333 (+0.1111)*"]
    )
    # a second update has nothing to change
    again = project.runpytest("--bvtest-update")
    again.stdout.fnmatch_lines(["*already holds the candidate run; nothing changed*"])


def test_same_outcomes_under_xdist_and_without_cacheprovider(project: pytest.Pytester) -> None:
    serial = project.runpytest_subprocess(
        "--bvtest-run", "runs/risky.run", "--bvtest-json", "serial.json", "-p", "no:cacheprovider"
    )
    parallel = project.runpytest_subprocess(
        "--bvtest-run", "runs/risky.run", "--bvtest-json", "parallel.json", "-n", "2"
    )
    assert serial.ret == parallel.ret == 1
    assert serial.parseoutcomes() == {k: v for k, v in parallel.parseoutcomes().items() if k in serial.parseoutcomes()}

    def gates(name: str) -> dict[str, tuple[bool, float]]:
        document = json.loads((project.path / name).read_text())
        return {g["id"]: (g["passed"], g["value"]) for e in document["evaluations"] for g in e["gates"]}

    assert gates("serial.json") == gates("parallel.json")
    assert len(gates("parallel.json")) == 6


def test_cache_is_written_beside_the_spec_and_can_be_moved_or_disabled(project: pytest.Pytester) -> None:
    project.runpytest()
    assert any((project.path / ".bvtest_cache").rglob("*.json"))
    project.runpytest("--bvtest-cache-dir", "elsewhere")
    assert any((project.path / "elsewhere").rglob("*.json"))
    Path(project.path / "nocache").mkdir()
    result = project.runpytest("--bvtest-no-cache", "--bvtest-cache-dir", "nocache")
    result.assert_outcomes(passed=6)
    assert not any((project.path / "nocache").rglob("*.json"))


def test_a_report_that_cannot_be_written_is_a_usage_error_not_a_traceback(project: pytest.Pytester) -> None:
    (project.path / "blocked").write_text("a file where a folder is needed")
    result = project.runpytest("--bvtest-json", "blocked/report.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*bvtest: could not write the reports:*blocked*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_plots_without_matplotlib_is_a_clean_usage_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real_find_spec(name, *a)
    )
    result = project.runpytest("--bvtest-plots", "plots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bvtest-plots needs matplotlib*pip install*"])


def test_spec_listed_in_the_ini_file_resolves_against_the_ini_folder(project: pytest.Pytester) -> None:
    (project.path / "bvtest.yaml").rename(project.path / "quality.yaml")
    project.makeini("[pytest]\nbvtest_spec = quality.yaml\n")
    sub = project.mkdir("sub")
    result = project.runpytest("--rootdir", str(project.path), "-c", str(project.path / "tox.ini"), str(sub))
    result.assert_outcomes(passed=6)


def test_terminal_output_follows_pytests_verbosity(project: pytest.Pytester) -> None:
    quiet = project.runpytest("--bvtest-run", "runs/risky.run", "-q").stdout.lines
    summary = quiet[quiet.index(next(line for line in quiet if "bvtest summary" in line)) + 1 :]
    # -q: one line per gate (6), then the counts; the failure explanation is its one sentence
    # risky's AP mean (1 + 1 + .2 + 1 + .25 + 1) / 6 = 0.741667
    assert summary[:7] == [
        "[OK] AP::mean: AP Mean 0.742 vs 0.722, limit >= 0.712",
        # URisk is set beside what an equal-quality change gets: better than that, it fails its too strict bound
        "[FAIL] AP::urisk: AP URisk -1.27 vs -1.34 for an equal-quality change, limit >= -0.0500: the risk-weighted "
        "change against production (losses count extra) is lower than allowed",
        "[FAIL] AP::bias2_plus_var: AP Bias²+Var 0.200 vs 0.157, limit <= 0.173: quality varies more from query to "
        "query or sits further below the best achievable than in production",
        "[OK] RR::mean: RR Mean 0.742 vs 0.722, limit >= 0.712",
        "[FAIL] RR::urisk: RR URisk -1.27 vs -1.34 for an equal-quality change, limit >= -0.0500: the risk-weighted "
        "change against production (losses count extra) is lower than allowed",
        "[FAIL] RR::bias2_plus_var: RR Bias²+Var 0.200 vs 0.157, limit <= 0.173: quality varies more from query to "
        "query or sits further below the best achievable than in production",
        "bvtest: 6 gates, 4 failed",
    ]
    sentence = (
        "The risk-weighted change against production (losses count extra) is lower than allowed "
        "(URisk -1.27, limit -0.05 at a 90.6% false-alarm rate)."
    )
    assert quiet.count(sentence) == 2  # once per failing gate
    assert not any("topics that moved" in line or "Bias²/Var tradeoff" in line for line in quiet)
    # default: a compact table of the gates; each failure explained once (in pytest's failures section)
    default = project.runpytest("--bvtest-run", "runs/risky.run").stdout.lines
    assert sum(line.startswith("  The risk-weighted change against production") for line in default) == 2
    assert sum("AP URisk FAILED: candidate -1.27222" in line for line in default) == 2  # failure + short summary
    table = [line for line in default if line.startswith(("outcome", "OK ", "FAIL "))]
    assert len(table) == 7 and table[0].split()[:4] == ["outcome", "gate", "value", "compared"]
    assert table[2].split() == [
        "FAIL",
        "AP::urisk",
        "-1.27",
        "-1.34",
        "equal",
        "change",
        "+0.06806",
        "(better)",
        ">=",
        "-0.0500",
        "90.6%",
        "53.1%",
        # a limit that fails 90.6% of equal-quality changes catches any drop: its MDE is 0 under both models
        "0",
        "/",
        "0",
    ]
    # then the page: the verdict, the one cause (t3 and t5), how sure, the commands
    assert "4 of 6 gates fail, all for the same 2 queries" in default
    assert "  breaks AP::urisk, AP::bias2_plus_var, RR::urisk, RR::bias2_plus_var" in default
    assert not any("Bias²/Var tradeoff" in line for line in default)
    # -v: the full summary with the system tables
    verbose = project.runpytest("--bvtest-run", "runs/risky.run", "-v").stdout.str()
    assert "Bias²/Var tradeoff" in verbose and "[FAIL] bvtest.yaml::AP::urisk: AP URisk FAILED" in verbose


def test_history_appends_one_line_per_session_and_skips_a_corrupt_line(project: pytest.Pytester) -> None:
    from pytest_bvtest.report.history import gate_series, read_history

    project.runpytest("--bvtest-history", "history.jsonl")
    with open(project.path / "history.jsonl", "a", encoding="utf-8") as stream:
        stream.write("{not json\n")
    project.runpytest("--bvtest-history", "history.jsonl", "--bvtest-run", "runs/risky.run")
    history = read_history(project.path / "history.jsonl")
    assert len(history.records) == 2
    assert history.skipped == (
        f"{project.path / 'history.jsonl'}:2: not a JSON record "
        "(Expecting property name enclosed in double quotes); skipped",
    )
    first, second = history.records
    assert first["passed"] is True and second["passed"] is False
    assert first["timestamp"] and first["spec"].endswith("bvtest.yaml")
    roles = {item["role"]: item for item in first["inputs"]}
    assert roles["spec"]["sha256"] == hashlib.sha256((project.path / "bvtest.yaml").read_bytes()).hexdigest()
    assert roles["candidate"]["sha256"] != {item["role"]: item for item in second["inputs"]}["candidate"]["sha256"]
    assert first["systems"]["AP"]["production"]["mean"] == pytest.approx(0.722222, abs=1e-6)
    urisk = next(series for series in gate_series(history.records) if series.id.endswith("AP::urisk"))
    assert urisk.outcomes == ("OK", "FAIL") and urisk.values[1] == pytest.approx(-1.27222, abs=1e-5)
    assert urisk.limits == (-0.05, -0.05)


def test_jobs_evaluate_run_files_in_processes_with_the_serial_reports_and_a_shared_cache(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_bvtest.scoring import matrix

    pools: list[int] = []
    process_pool = matrix.ProcessPoolExecutor

    def counted_pool(*args: object, max_workers: int, **kwargs: object) -> object:
        pools.append(max_workers)
        return process_pool(*args, max_workers=max_workers, **kwargs)

    monkeypatch.setattr(matrix, "ProcessPoolExecutor", counted_pool)
    common = ("--bvtest-run", "runs/risky.run", "-p", "no:cacheprovider")
    serial = project.runpytest(
        *common, "--bvtest-jobs", "1", "--bvtest-cache-dir", "serial", "--bvtest-json", "serial.json"
    )
    assert pools == []
    parallel = project.runpytest(
        *common, "--bvtest-jobs", "3", "--bvtest-cache-dir", "shared", "--bvtest-json", "parallel.json"
    )
    assert pools == [3]  # production, bm25 and risky: three uncached run files in three processes
    assert serial.ret == parallel.ret == 1
    reports = [
        re.sub(rb'\n  "timestamp": "[^"]*",', b"", (project.path / name).read_bytes())
        for name in ("serial.json", "parallel.json")
    ]
    assert reports[0] == reports[1]

    def entries(folder: str) -> dict[str, bytes]:
        root = project.path / folder
        return {
            str(path.relative_to(root)): path.read_bytes()
            for path in root.rglob("*.json")
            if path.parent.name != "stat"
        }

    # 3 run files x (AP, RR, and beside them Judged@10, the unjudged documents of the top 10, AP+ and RR+, and the run's
    # ranked documents), the candidate's and the reference's unjudged documents' ranks down to 100 (the plausible
    # gradings' rank support), and the gates' power
    assert entries("serial") == entries("shared") and len(entries("shared")) == 3 * 7 + 2 + 1
    # the next session finds every score the workers stored: nothing left to evaluate
    again = project.runpytest(
        *common, "--bvtest-jobs", "3", "--bvtest-cache-dir", "shared", "--bvtest-json", "again.json"
    )
    assert pools == [3] and again.ret == 1
    assert re.sub(rb'\n  "timestamp": "[^"]*",', b"", (project.path / "again.json").read_bytes()) == reports[0]
    project.makeini("[pytest]\nbvtest_jobs = 2\n")  # the ini mirror, on a cold cache
    project.runpytest(*common, "--bvtest-cache-dir", "from-ini")
    assert pools == [3, 2] and entries("from-ini") == entries("serial")


@pytest.mark.parametrize("jobs", ["0", "two", "-1"])
def test_jobs_must_be_a_positive_whole_number(project: pytest.Pytester, jobs: str) -> None:
    result = project.runpytest(f"--bvtest-jobs={jobs}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"--bvtest-jobs (ini bvtest_jobs) needs a whole number of processes, at least 1, got '{jobs}'"
        in result.stderr.str()
    )


@pytest.mark.parametrize(
    ("conftest", "options"),
    [
        ('pytest_plugins = ["pytest_bvtest.plugin"]\n', []),  # the installed plugin named again in a conftest
        ("", ["-p", "pytest_bvtest.plugin"]),  # by its module's name on the command line
    ],
    ids=["conftest", "-p"],
)
def test_the_plugin_named_again_loads_once(project: pytest.Pytester, conftest: str, options: list[str]) -> None:
    """`pytest_plugins = ["pytest_bvtest.plugin"]` with the plugin installed was a ValueError traceback (pluggy:
    'Plugin already registered under a different name')."""
    project.makeconftest(conftest)
    result = project.runpytest_subprocess(*options, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=6)
    assert "ValueError" not in result.stderr.str() + result.stdout.str()
    result.stdout.fnmatch_lines(["bvtest: 6 gates, 0 failed"])
    # -p no:bvtest still turns the installed plugin off (its options unknown), unless a conftest names the module
    off = project.runpytest_subprocess("-p", "no:bvtest", "-p", "no:cacheprovider", "--bvtest-json", "r.json")
    assert off.ret == (pytest.ExitCode.OK if conftest else pytest.ExitCode.USAGE_ERROR)
