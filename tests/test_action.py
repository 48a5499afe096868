"""The GitHub Action (action.yml) run locally, step by step, as a runner runs it, against the example project.

The action installs pytest-bvtest from a copy of this checkout into a fresh environment, gates the example
project, keeps the reports and posts the sticky comment through a fake ``gh`` that records its arguments and
answers as GitHub's API does (its ``--jq`` filters are applied with the real ``jq``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from actionrunner import ActionResult, job_environment, run_action
from freshenv import fresh_environment, tracked_copy

from pytest_bvtest.report.markdown import MARKER

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.skipif(shutil.which("jq") is None, reason="the fake gh applies --jq with jq, which is not installed"),
]

REPOSITORY = "octo-org/search"
PULL_REQUEST = 7
ARTIFACT_URL = "https://github.com/octo-org/search/actions/runs/1/artifacts/2"
#: The job's id (GITHUB_JOB) the runner gives every step.
JOB = "search-quality"
BOT = {"login": "github-actions[bot]", "type": "Bot"}
UPLOAD_OUTPUTS = {"upload": {"artifact-url": ARTIFACT_URL, "artifact-id": "2"}}

FAKE_GH = '''#!{python}
"""A stand-in for the GitHub CLI: records its arguments (and the body it was given) and answers as the API does."""
import json, os, subprocess, sys

args = sys.argv[1:]
record = {{"args": args}}
for arg in args:
    if arg.startswith("body=@"):
        with open(arg[len("body=@"):], encoding="utf-8") as handle:
            record["body"] = handle.read()
with open(os.environ["FAKE_GH_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\\n")
method = args[args.index("--method") + 1] if "--method" in args else "GET"
if args[1] == "user":  # an installation token (the workflow's) cannot read /user; a personal token's user can
    login = os.environ.get("FAKE_GH_LOGIN")
    if not login:
        print("gh: Resource not accessible by integration (HTTP 403)", file=sys.stderr)
        sys.exit(1)
    print(login if "--jq" in args else json.dumps({{"login": login}}))
    sys.exit(0)
endpoint = next(arg for arg in args[1:] if arg.startswith("repos/"))
if method != "GET" and os.environ.get("FAKE_GH_READ_ONLY"):
    print("gh: Resource not accessible by integration (HTTP 403)", file=sys.stderr)
    sys.exit(1)
if method == "GET":
    response = json.loads(os.environ.get("FAKE_GH_COMMENTS", "[]"))
else:
    number = endpoint.rsplit("/", 1)[1] if method == "PATCH" else "101"
    response = {{"id": int(number), "html_url": "https://github.com/{repository}/pull/{pull}#issuecomment-" + number}}
if "--jq" in args:
    jq = args[args.index("--jq") + 1]
    sys.exit(subprocess.run(["jq", "-r", jq], input=json.dumps(response), text=True).returncode)
print(json.dumps(response))
'''


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A checkout of this repository (the action's path), a fresh environment and a fake gh on the PATH."""
    root = tmp_path_factory.mktemp("action")
    checkout = tracked_copy(root / "pytest-bvtest")
    tools = root / "tools"
    tools.mkdir()
    fake = tools / "gh"
    fake.write_text(FAKE_GH.format(python=sys.executable, repository=REPOSITORY, pull=PULL_REQUEST), encoding="utf-8")
    fake.chmod(0o755)
    return {"root": root, "checkout": checkout, "python": fresh_environment(root / "env"), "tools": tools}


def pull_request_event() -> dict:
    return {
        "action": "synchronize",
        "number": PULL_REQUEST,
        "pull_request": {"number": PULL_REQUEST, "head": {"ref": "better-ranker"}, "base": {"ref": "main"}},
        "repository": {"full_name": REPOSITORY},
    }


def run_on_example(
    runner: dict[str, Path],
    name: str,
    inputs: dict[str, str],
    *,
    event_name: str = "pull_request",
    subfolder: str = "",
    gh: dict[str, str] | None = None,
) -> tuple[ActionResult, Path, list[dict]]:
    """The action on a fresh copy of the example project (at ``subfolder`` of the workspace); returns its
    result, the project folder and the fake gh's calls."""
    workspace = runner["root"] / name / "workspace"
    project = workspace / subfolder
    shutil.copytree(runner["checkout"] / "example_project", project, dirs_exist_ok=True)
    log = runner["root"] / name / "gh.jsonl"
    env = {**job_environment([runner["tools"]]), "GITHUB_JOB": JOB, "FAKE_GH_LOG": str(log), **(gh or {})}
    result = run_action(
        runner["checkout"],
        inputs={"python": str(runner["python"]), **inputs},
        workspace=workspace,
        event_name=event_name,
        event=pull_request_event() if event_name == "pull_request" else {"ref": "refs/heads/main"},
        scratch=runner["root"] / name / "runner",
        env=env,
        uses_outputs=UPLOAD_OUTPUTS,
        repository=REPOSITORY,
    )
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return result, project, calls


def describe(result: ActionResult) -> str:
    return "\n".join(
        f"--- {step.name}: ran={step.ran} exit={step.exit_code}\n{step.stdout[-3000:]}\n{step.stderr[-3000:]}"
        for step in result.steps
    )


@pytest.fixture(scope="module")
def passing(runner: dict[str, Path]) -> tuple[ActionResult, Path, list[dict]]:
    """The whole action on a pull request whose candidate passes; the plugin is installed from the checkout."""
    return run_on_example(runner, "passing", {"spec": "bvtest.yaml", "pytest-args": "-p no:cacheprovider"})


def test_the_action_installs_the_plugin_from_its_own_checkout(passing, runner) -> None:
    result, _, _ = passing
    install = result.step("Install pytest-bvtest from the action's checkout")
    assert install.exit_code == 0, describe(result)
    assert "Successfully installed pytest-bvtest-" in install.stdout
    where = subprocess.run(
        [str(runner["python"]), "-c", "import pytest_bvtest; print(pytest_bvtest.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=runner["root"],
    ).stdout
    assert Path(where).is_relative_to(runner["root"] / "env" / "venv"), where


def test_a_passing_gate_writes_the_reports_the_step_summary_and_a_new_comment(passing) -> None:
    result, project, calls = passing
    assert not result.failed, describe(result)
    gate = result.step("Gate (pytest)")
    assert gate.outputs["exit-code"] == "0" and result.outputs["exit-code"] == "0"
    reports = {name: Path(gate.outputs[name]) for name in ("markdown", "json", "html", "junit")}
    assert reports == {
        "markdown": project / "reports" / "bvtest.md",
        "json": project / "reports" / "bvtest.json",
        "html": project / "reports" / "bvtest.html",
        "junit": project / "reports" / "junit.xml",
    }
    document = json.loads(reports["json"].read_text(encoding="utf-8"))
    assert document["passed"] is True
    assert [gate["outcome"] for evaluation in document["evaluations"] for gate in evaluation["gates"]] == ["OK"] * 5
    summary = reports["markdown"].read_text(encoding="utf-8")
    # the comment's marker names this use of the action: the job's id and the CRC of its inputs, as cksum prints it
    inputs = "\n".join((".", "bvtest.yaml", "", "-p no:cacheprovider")) + "\n"
    crc = subprocess.run(["cksum"], input=inputs, capture_output=True, text=True, check=True).stdout.split()[0]
    action_id = f"{JOB}-{crc}"
    assert result.outputs["id"] == action_id
    assert summary.startswith(f"<!-- pytest-bvtest id={action_id} -->\n## ✅ pytest-bvtest: 5 gates pass")
    # the plugin writes the job's summary itself (its marker unkeyed); the action adds nothing when it did
    assert result.summary.split("\n", 1) == [MARKER, summary.split("\n", 1)[1]]
    upload = result.step("Keep the reports")
    assert upload.ran and upload.with_["name"] == f"bvtest-reports-{action_id}"
    assert upload.with_["path"].splitlines() == [str(reports[name]) for name in ("markdown", "json", "html", "junit")]
    who, listing, post = calls
    assert who["args"][:2] == ["api", "user"]
    assert listing["args"][:3] == ["api", "--paginate", f"repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments"]
    assert post["args"][:4] == ["api", "--method", "POST", f"repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments"]
    artifact = f"bvtest-reports-{action_id}"
    link = f"\nThe HTML report, the JSON report and the JUnit XML: [artifact {artifact}]({ARTIFACT_URL}).\n"
    assert post["body"] == summary + link
    assert result.outputs["comment-url"] == f"https://github.com/{REPOSITORY}/pull/{PULL_REQUEST}#issuecomment-101"
    assert result.outputs["html"] == str(reports["html"])
    assert result.outputs["artifact-url"] == ARTIFACT_URL
    assert result.step("The gate's verdict").exit_code == 0


def test_a_failing_gate_updates_the_comment_then_fails_the_job(runner) -> None:
    """A candidate that fails gates, in a subfolder of the repository, on a pull request already commented on:
    the comment is updated in place (one comment per pull request), then the last step fails the job."""
    marker = "<!-- pytest-bvtest id=quality -->"
    comments = [
        {"id": 55, "body": "Looks good to me", "user": {"login": "octocat", "type": "User"}},
        {"id": 54, "body": f"{marker}\n## ✅ a copy someone pasted", "user": {"login": "octocat", "type": "User"}},
        {"id": 56, "body": f"{marker}\n## ✅ pytest-bvtest: an earlier push", "user": BOT},
    ]
    result, project, calls = run_on_example(
        runner,
        "failing",
        {
            "install": "false",
            "id": "quality",
            "working-directory": "search-quality",
            "run": "runs/past-release.run",
            "pytest-args": "bvtest.yaml -p no:cacheprovider",
            "junit": "",
        },
        subfolder="search-quality",
        gh={"FAKE_GH_COMMENTS": json.dumps(comments)},
    )
    assert [step.exit_code for step in result.steps] == [None, 0, 0, 0, 1], describe(result)
    assert result.outputs["exit-code"] == "1"
    document = json.loads((project / "reports" / "bvtest.json").read_text(encoding="utf-8"))
    failed = [
        gate["id"] for evaluation in document["evaluations"] for gate in evaluation["gates"] if not gate["passed"]
    ]
    assert len(failed) == 3 and document["passed"] is False
    gate_log = result.step("Gate (pytest)").stdout
    # GitHub annotations name the spec from the repository's root, where the pull request's diff shows it
    assert "::error file=search-quality/bvtest.yaml,line=" in gate_log
    assert "junit" not in result.step("Gate (pytest)").outputs
    assert not (project / "reports" / "junit.xml").exists()
    _, _, patch = calls
    assert patch["args"][:4] == ["api", "--method", "PATCH", f"repos/{REPOSITORY}/issues/comments/56"]
    assert patch["body"].startswith((project / "reports" / "bvtest.md").read_text(encoding="utf-8"))
    assert "a gate or a test failed (pytest exit code 1)" in result.steps[-1].stdout


def test_a_fork_without_write_permission_gets_a_warning_not_a_failure(runner) -> None:
    result, _, calls = run_on_example(
        runner,
        "fork",
        {"install": "false", "pytest-args": "bvtest.yaml -p no:cacheprovider", "artifact-name": ""},
        gh={"FAKE_GH_READ_ONLY": "1"},
    )
    assert not result.failed, describe(result)
    assert not result.step("Keep the reports").ran
    comment = result.step("Post or update the sticky pull-request comment")
    assert "::warning title=pytest-bvtest::could not post the pull-request comment" in comment.stdout
    assert "HTTP 403" in comment.stdout and "from a fork" in comment.stdout
    assert [call["args"][1] for call in calls] == ["user", "--paginate", "--method"]
    assert "artifact" not in calls[2]["body"]  # no artifact, no link to one
    assert result.outputs["comment-url"] == ""


def test_no_comment_outside_a_pull_request_or_when_turned_off(runner) -> None:
    push, _, push_calls = run_on_example(
        runner, "push", {"install": "false", "pytest-args": "bvtest.yaml -p no:cacheprovider"}, event_name="push"
    )
    assert not push.failed, describe(push)
    assert (
        "no pull-request comment on a push event" in push.step("Post or update the sticky pull-request comment").stdout
    )
    off, _, off_calls = run_on_example(
        runner, "off", {"install": "false", "pytest-args": "bvtest.yaml -p no:cacheprovider", "comment": "false"}
    )
    assert not off.failed, describe(off)
    assert push_calls == [] and off_calls == []


def test_a_session_that_stops_before_its_reports_posts_nothing_stale(runner) -> None:
    """A usage error (pytest exit code 4): a summary left by an earlier run is removed, not posted; the job's
    summary says the gate ended without one; the job fails with pytest's code."""
    workspace = runner["root"] / "usage" / "workspace"
    stale = workspace / "reports" / "bvtest.md"
    stale.parent.mkdir(parents=True)
    stale.write_text(f"{MARKER}\n## ✅ pytest-bvtest: a verdict from yesterday\n", encoding="utf-8")
    result, _, calls = run_on_example(runner, "usage", {"install": "false", "pytest-args": "--bvtest-jobs 0"})
    assert result.outputs["exit-code"] == "4", describe(result)
    assert not stale.exists()
    assert "the gate ended without a summary (pytest exit code 4)" in result.summary
    assert not result.step("Keep the reports").ran
    assert "wrote no Markdown summary" in result.step("Post or update the sticky pull-request comment").stdout
    assert calls == []
    assert result.steps[-1].exit_code == 4


def test_two_uses_in_one_workflow_keep_their_own_artifact_and_comment(runner) -> None:
    """A matrix of two candidates (one job id): the first use's id is made from its inputs, the second's given; each
    keeps its own artifact and comment: the second posts its own beside the first's, and leaves alone a comment with
    its marker that someone else wrote. A multi-line ``pytest-args`` gives every line's arguments
    (``-p no:cacheprovider`` on the second line: no .pytest_cache)."""
    first, first_project, first_calls = run_on_example(
        runner, "matrix-pass", {"install": "false", "pytest-args": "bvtest.yaml\n-p no:cacheprovider\n"}
    )
    assert not first.failed, describe(first)
    assert not (first_project / ".pytest_cache").exists()
    posted = first_calls[-1]["body"]
    second, _, second_calls = run_on_example(
        runner,
        "matrix-risky",
        {
            "install": "false",
            "id": "risky run",
            "run": "runs/candidate-risky.run",
            "pytest-args": "bvtest.yaml -p no:cacheprovider",
        },
        gh={
            "FAKE_GH_COMMENTS": json.dumps(
                [
                    {"id": 101, "body": posted, "user": BOT},
                    {"id": 102, "body": "<!-- pytest-bvtest id=risky-run -->\nquoted", "user": {"login": "octocat"}},
                ]
            )
        },
    )
    assert not second.failed, describe(second)
    ids = [result.outputs["id"] for result in (first, second)]
    assert ids[0].startswith(f"{JOB}-") and ids[1] == "risky-run"
    names = [result.step("Keep the reports").with_["name"] for result in (first, second)]
    assert names == [f"bvtest-reports-{action_id}" for action_id in ids]
    markers = [calls[-1]["body"].split("\n", 1)[0] for calls in (first_calls, second_calls)]
    assert markers == [f"<!-- pytest-bvtest id={action_id} -->" for action_id in ids]
    # the second use overwrites neither the first's comment nor one its marker begins that the bot did not write
    assert second_calls[-1]["args"][:4] == [
        "api",
        "--method",
        "POST",
        f"repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments",
    ]
