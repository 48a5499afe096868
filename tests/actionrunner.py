"""Run a composite GitHub Action's steps on this machine, as a runner would (for tests/test_action.py).

Each ``run:`` step runs in ``bash --noprofile --norc -eo pipefail`` (what ``shell: bash`` means on a runner) with
the variables and files a runner sets: ``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_STEP_SUMMARY`` (a fresh file per
step, collected like the job's summary), ``GITHUB_ACTION_PATH``, ``GITHUB_WORKSPACE``, ``GITHUB_EVENT_PATH`` and
``GITHUB_EVENT_NAME``. ``${{ }}`` expressions and ``if:`` conditions are evaluated over the contexts the action
uses (``inputs``, ``github``, ``steps``): literals, property paths, ``==``, ``!=``, ``!``, ``&&``, ``||`` and
``always()``/``success()``/``failure()``, with GitHub's comparison (strings case-insensitively) and truthiness.
A ``uses:`` step does not run: its evaluated ``with:`` is recorded and the outputs the caller gives stand for it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(&&|\|\||==|!=|!|\(|\))|([A-Za-z_][\w.-]*(?:\(\))?))")
_TEMPLATE = re.compile(r"\$\{\{(.*?)\}\}")


@dataclass
class StepResult:
    name: str
    ran: bool
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    with_: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionResult:
    steps: list[StepResult]
    outputs: dict[str, str]

    @property
    def failed(self) -> bool:
        return any(step.exit_code for step in self.steps)

    @property
    def summary(self) -> str:
        """The job's summary: every step's, in order."""
        return "".join(step.summary for step in self.steps)

    def step(self, name: str) -> StepResult:
        return next(step for step in self.steps if step.name == name)


def _truthy(value: Any) -> bool:
    return value not in ("", None, False, 0)


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()
    return left == right


class _Expression:
    """One expression: a recursive-descent parser over the tokens, evaluating as it goes."""

    def __init__(self, text: str, contexts: Mapping[str, Any], failed: bool) -> None:
        self.tokens = self._tokens(text)
        self.contexts = contexts
        self.failed = failed

    @staticmethod
    def _tokens(text: str) -> list[tuple[str, str]]:
        tokens, position, text = [], 0, text.strip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"cannot read the expression {text!r} at {text[position:]!r}")
            string, operator, name = match.groups()
            tokens.append(("string", string[1:-1].replace("''", "'")) if string else ("op", operator or name))
            position = match.end()
        return tokens

    def value(self) -> Any:
        result = self._or()
        if self.tokens:
            raise ValueError(f"unexpected {self.tokens[0][1]!r}")
        return result

    def _take(self, operator: str) -> bool:
        if self.tokens and self.tokens[0] == ("op", operator):
            self.tokens.pop(0)
            return True
        return False

    def _or(self) -> Any:
        left = self._and()
        while self._take("||"):
            right = self._and()
            left = left if _truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._comparison()
        while self._take("&&"):
            right = self._comparison()
            left = right if _truthy(left) else left
        return left

    def _comparison(self) -> Any:
        left = self._unary()
        if self._take("=="):
            return _equal(left, self._unary())
        if self._take("!="):
            return not _equal(left, self._unary())
        return left

    def _unary(self) -> Any:
        if self._take("!"):
            return not _truthy(self._unary())
        if self._take("("):
            inner = self._or()
            assert self._take(")"), "unbalanced parentheses"
            return inner
        kind, text = self.tokens.pop(0)
        if kind == "string":
            return text
        functions = {"always()": True, "success()": not self.failed, "failure()": self.failed}
        if text in functions:
            return functions[text]
        if text in ("true", "false"):
            return text == "true"
        value: Any = self.contexts
        for part in text.split("."):
            value = value.get(part, "") if isinstance(value, Mapping) else ""
        return value


def evaluate(text: str, contexts: Mapping[str, Any], failed: bool = False) -> Any:
    """The value of one expression (without ``${{ }}``)."""
    return _Expression(text, contexts, failed).value()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def substitute(text: str, contexts: Mapping[str, Any]) -> str:
    """``text`` with each ``${{ expression }}`` replaced by its value."""
    return _TEMPLATE.sub(lambda match: _text(evaluate(match.group(1), contexts)), str(text))


def condition(text: str | None, contexts: Mapping[str, Any], failed: bool) -> bool:
    """Whether a step runs: its ``if:`` (``success()`` when absent, and implied unless a status function is named)."""
    if text is None:
        return not failed
    text = str(text).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    named_status = re.search(r"\b(always|success|failure|cancelled)\(\)", text)
    return _truthy(evaluate(text, contexts, failed)) and (named_status is not None or not failed)


def read_command_file(path: Path) -> dict[str, str]:
    """A ``GITHUB_OUTPUT``/``GITHUB_ENV`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index + 1)
            values[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
            continue
        if line:
            name, value = line.split("=", 1)
            values[name] = value
        index += 1
    return values


def run_action(
    action_path: Path,
    *,
    inputs: Mapping[str, str],
    workspace: Path,
    event_name: str,
    event: Mapping[str, Any],
    scratch: Path,
    env: Mapping[str, str],
    uses_outputs: Mapping[str, Mapping[str, str]] = (),
    repository: str = "octo-org/search",
) -> ActionResult:
    """Run the composite action in ``action_path`` with ``inputs`` over ``workspace``.

    ``env`` is the job's environment (PATH with the fake tools, ...); ``uses_outputs`` the outputs of each
    ``uses:`` step by id; ``scratch`` holds the runner's files.
    """
    action = yaml.safe_load((action_path / "action.yml").read_text(encoding="utf-8"))
    scratch.mkdir(parents=True, exist_ok=True)
    event_path = scratch / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    github = {
        "action_path": str(action_path),
        "workspace": str(workspace),
        "event_name": event_name,
        "event": event,
        "repository": repository,
        "token": "ghs_fake_token",
    }
    contexts: dict[str, Any] = {"github": github, "steps": {}}
    contexts["inputs"] = {
        name: substitute(spec.get("default", ""), contexts) for name, spec in (action.get("inputs") or {}).items()
    }
    unknown = set(inputs) - set(contexts["inputs"])
    assert not unknown, f"the action has no inputs {sorted(unknown)}"
    contexts["inputs"].update(inputs)
    job_env = {
        **env,
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_REPOSITORY": repository,
        "RUNNER_TEMP": str(scratch),
    }
    github_env = scratch / "env"
    github_env.touch()
    results: list[StepResult] = []
    failed = False
    for number, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {number}")
        if not condition(step.get("if"), contexts, failed):
            results.append(StepResult(name, ran=False))
            continue
        if "uses" in step:
            result = StepResult(name, ran=True, exit_code=0)
            result.with_ = {key: substitute(value, contexts) for key, value in (step.get("with") or {}).items()}
            result.outputs = dict(dict(uses_outputs).get(step.get("id", ""), {}))
        else:
            result = _run_step(step, name, number, contexts, job_env, github_env, scratch, workspace)
        failed = failed or bool(result.exit_code)
        if "id" in step:
            contexts["steps"][step["id"]] = {
                "outputs": result.outputs,
                "outcome": "failure" if result.exit_code else "success",
            }
        results.append(result)
    outputs = {name: substitute(spec["value"], contexts) for name, spec in (action.get("outputs") or {}).items()}
    return ActionResult(results, outputs)


def _run_step(
    step: Mapping[str, Any],
    name: str,
    number: int,
    contexts: Mapping[str, Any],
    job_env: Mapping[str, str],
    github_env: Path,
    scratch: Path,
    workspace: Path,
) -> StepResult:
    assert step.get("shell") == "bash", f"step {name!r}: only shell: bash is run here"
    files = {kind: scratch / f"{kind}-{number}" for kind in ("output", "summary")}
    for path in files.values():
        path.touch()
    script = scratch / f"step-{number}.sh"
    script.write_text(step["run"], encoding="utf-8")
    environment = {
        **job_env,
        **read_command_file(github_env),
        **{key: substitute(value, contexts) for key, value in (step.get("env") or {}).items()},
        "GITHUB_OUTPUT": str(files["output"]),
        "GITHUB_ENV": str(github_env),
        "GITHUB_STEP_SUMMARY": str(files["summary"]),
    }
    folder = workspace / substitute(step.get("working-directory", "."), contexts)
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return StepResult(
        name,
        ran=True,
        exit_code=completed.returncode,
        stdout=completed.stdout,
        stderr=completed.stderr,
        outputs=read_command_file(files["output"]),
        summary=files["summary"].read_text(encoding="utf-8"),
    )


def job_environment(path_first: list[Path]) -> dict[str, str]:
    """This process's environment without what would make the runs below differ from a runner's (pytest's own
    variables) and with ``path_first`` at the head of PATH."""
    keep = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "GITHUB_", "COV_")) and key not in ("CI", "BUILD_NUMBER")
    }
    keep["PATH"] = os.pathsep.join([*map(str, path_first), os.environ.get("PATH", "")])
    return keep
