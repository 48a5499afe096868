"""GitHub Actions workflow commands: an error annotation per failed gate and per spec that could not be
evaluated, a warning per ``OK*`` gate.

A workflow command is one line, ``::error file=SPEC,line=N,title=TITLE::MESSAGE`` (``line`` is the
gate's line in the spec, so the annotation sits on it in the pull request's diff); GitHub decodes ``%25``,
``%0D`` and ``%0A`` in the message, and additionally ``%3A`` and ``%2C`` in property values, where a
raw ``:`` or ``,`` would end the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_bvtest.report.terminal import display_path, error_groups

#: The workflow command for each gate outcome that deserves an annotation.
COMMANDS = {"FAIL": "error", "OK*": "warning"}


def escape_data(text: str) -> str:
    """A workflow command's message, encoded so that it stays on one line."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``), encoded."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(document: Mapping[str, Any]) -> list[str]:
    """One workflow command per failed or ``OK*`` gate, in document order, then one per spec (and error) that
    could not be evaluated, on the spec file."""
    commands = []
    for evaluation in document["evaluations"]:
        spec = display_path(evaluation["spec"])
        for gate in evaluation["gates"]:
            command = COMMANDS.get(gate["outcome"])
            if command is None:
                continue
            title = f"bvtest {gate['outcome']} {gate['id']}"
            line = f",line={gate['spec_line']}" if gate.get("spec_line") else ""
            message = "\n".join(filter(None, (gate.get("sentence"), gate["message"])))
            commands.append(
                f"::{command} file={escape_property(spec)}{line},title={escape_property(title)}::{escape_data(message)}"
            )
    for spec, count, message in error_groups(document):
        title = f"bvtest could not evaluate {spec} ({count} item{'' if count == 1 else 's'})"
        commands.append(f"::error file={escape_property(spec)},title={escape_property(title)}::{escape_data(message)}")
    return commands
