"""No false green, through pytester: the fixture judges the gates' candidate, team tests count in the
reports, guards warn where a green verdict would mislead, and test ids select gates like pytest's."""

from __future__ import annotations

import json

import jsonschema
import pytest

from pytest_bvtest.report.jsonreport import schema
from tests.test_plugin import project  # noqa: F401  (the pytester project: qrels, five runs, bvtest.yaml)

# AP of the RISKY run in tests/test_plugin.py: 1 / rank of the relevant document on t1..t6
RISKY_AP_MEAN = (1 + 1 + 1 / 5 + 1 + 1 / 4 + 1) / 6
STABLE_AP_MEAN = (1 + 1 + 1 + 1 / 2 + 1 + 1 / 2) / 6

TEAM_TESTS = f"""
    import pytest

    @pytest.mark.bvtest
    def test_fixture_sees_the_pull_requests_run(bvtest):
        assert bvtest.evaluate("bvtest.yaml").statistic("mean", measure="AP") == pytest.approx({RISKY_AP_MEAN!r})

    def test_without_a_spec_the_sessions_only_spec(bvtest):
        assert bvtest.evaluate().statistic("mean", measure="AP") == pytest.approx({RISKY_AP_MEAN!r})

    def test_an_explicit_run_still_wins(bvtest):
        evaluation = bvtest.evaluate("bvtest.yaml", "runs/stable.run")
        assert evaluation.statistic("mean", measure="AP") == pytest.approx({STABLE_AP_MEAN!r})
"""


@pytest.mark.parametrize("how", ["command line", "ini"])
def test_the_fixture_evaluates_the_candidate_the_gates_judge(project: pytest.Pytester, how: str) -> None:  # noqa: F811
    project.makepyfile(test_team=TEAM_TESTS)
    if how == "ini":
        project.makeini("[pytest]\nbvtest_run = runs/risky.run\n")
        result = project.runpytest("-v")
    else:
        result = project.runpytest("-v", "--bvtest-run", "runs/risky.run")
    result.stdout.fnmatch_lines(["*test_fixture_sees_the_pull_requests_run PASSED*",
                                 "*test_without_a_spec_the_sessions_only_spec PASSED*",
                                 "*test_an_explicit_run_still_wins PASSED*"])
    # the gates judged the same run: the risky candidate fails URisk
    result.stdout.fnmatch_lines(["FAILED bvtest.yaml::AP::urisk*"])


def test_the_fixture_follows_the_spec_option_and_needs_one_spec(project: pytest.Pytester) -> None:  # noqa: F811
    (project.path / "bvtest.yaml").rename(project.path / "quality.yaml")
    project.makepyfile(test_team=f"""
        import pytest

        def test_the_named_spec(bvtest):
            assert bvtest.evaluate().statistic("mean", measure="AP") == pytest.approx({RISKY_AP_MEAN!r})
    """)
    result = project.runpytest("-v", "--bvtest-spec", "quality.yaml", "--bvtest-run", "runs/risky.run", "test_team.py")
    result.stdout.fnmatch_lines(["*test_the_named_spec PASSED*"])
    # without a spec in the session, evaluate() says what to do
    alone = project.runpytest("test_team.py")
    alone.assert_outcomes(failed=1)
    alone.stdout.fnmatch_lines(["*evaluate() without a spec needs exactly one spec in the session*"])
