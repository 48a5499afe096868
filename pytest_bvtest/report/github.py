"""GitHub Actions workflow commands: an error annotation per failed gate and per spec that could not be
evaluated, a warning per ``OK*`` gate and per ``UNDECIDED`` one that passes (an error where it fails CI).

A workflow command is one line, ``::error file=SPEC,line=N,title=TITLE::MESSAGE`` (``line`` is the
gate's line in the spec, so the annotation sits on it in the pull request's diff); GitHub decodes ``%25``,
``%0D`` and ``%0A`` in the message, and additionally ``%3A`` and ``%2C`` in property values, where a
raw ``:`` or ``,`` would end the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_bvtest.errors import visible_controls
from pytest_bvtest.report.wording import display_path, error_groups

#: The workflow command for each gate outcome that deserves an annotation.
COMMANDS = {"FAIL": "error", "OK*": "warning", "UNDECIDED": "warning"}


def escape_data(text: str) -> str:
    """A workflow command's message, encoded so that it stays on one line; the control characters of the inputs
    (an ESC) visible as their escapes; line breaks are encoded."""
    return visible_controls(text, keep="\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``), encoded."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(document: Mapping[str, Any], workspace: str | None = None) -> list[str]:
    """One workflow command per failed or ``OK*`` gate, in document order, then one per spec (and error) that
    could not be evaluated, on the spec file.

    ``workspace`` is the repository's root (``GITHUB_WORKSPACE``): GitHub places an annotation by its path from
    there, which differs from the path shown to the user when pytest runs in a subfolder."""
    commands = []
    for evaluation in document["evaluations"]:
        spec = annotation_path(display_path(evaluation["spec"]), workspace)
        for gate in evaluation["gates"]:
            command = COMMANDS.get(gate["outcome"])
            if command is None:
                continue
            if not gate["passed"]:  # an UNDECIDED gate under judgments: {undecided: fail} fails CI
                command = "error"
            title = f"bvtest {gate['outcome']} {gate['id']}"
            line = f",line={gate['spec_line']}" if gate.get("spec_line") else ""
            message = "\n".join(filter(None, (gate.get("sentence"), gate["message"])))
            commands.append(
                f"::{command} file={escape_property(spec)}{line},title={escape_property(title)}::{escape_data(message)}"
            )
    for spec, count, message in error_groups(document):
        title = f"bvtest could not evaluate {spec} ({count} item{'' if count == 1 else 's'})"
        where = escape_property(annotation_path(spec, workspace))
        commands.append(f"::error file={where},title={escape_property(title)}::{escape_data(message)}")
    return commands


def annotation_path(path: str, workspace: str | None) -> str:
    """``path`` (as displayed: relative to the working directory, or absolute) relative to ``workspace`` when it
    lies inside it; else unchanged."""
    if not workspace:
        return path
    try:
        return Path(path).resolve().relative_to(Path(workspace).resolve()).as_posix()
    except (ValueError, OSError):
        return path
