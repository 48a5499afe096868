"""The history file: one JSON line per evaluated spec, appended by every session that asks for it.

A dashboard or ``bvtest history PATH --plot DIR`` reads it back to draw each gated statistic over
time against its limit. The record's keys are documented in ``docs/json-schema.md`` (section
"History file"). Appends are single ``write`` calls on a file opened for appending, under an
exclusive lock where the platform has one, so concurrent sessions never interleave records; under
pytest-xdist only the controller writes; each write starts on a line of its own. A line that is not a
record (torn by a full disk, edited by hand) is reported with its line number and skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.textfiles import require_regular_file
from pytest_bvtest.stats.registry import PROMISED_KEYS

HISTORY_VERSION = 1

try:  # POSIX only; Windows appends are still single writes
    import fcntl
except ImportError:  # pragma: no cover - not on the CI platforms
    fcntl = None  # type: ignore[assignment]


def _git(folder: Path, *arguments: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(folder), *arguments], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = result.stdout.strip()
    return text if result.returncode == 0 and text else None


def run_context(folder: str | os.PathLike[str]) -> dict[str, str | None]:
    """When and on which commit: ``timestamp`` (UTC, ISO 8601), ``commit`` and ``branch`` (null when unknown).

    CI variables (GitHub Actions, GitLab CI) win over asking git, whose checkout is often detached there.
    """
    environment = os.environ
    commit = (
        environment.get("GITHUB_SHA") or environment.get("CI_COMMIT_SHA") or _git(Path(folder), "rev-parse", "HEAD")
    )
    branch = (
        environment.get("GITHUB_HEAD_REF")
        or environment.get("GITHUB_REF_NAME")
        or environment.get("CI_COMMIT_REF_NAME")
        or _git(Path(folder), "rev-parse", "--abbrev-ref", "HEAD")
    )
    return {
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "branch": None if branch == "HEAD" else branch,
    }


def history_records(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One record per spec of a session document: inputs with hashes, every gate, every system's statistics."""
    records: dict[str, dict[str, Any]] = {}
    for evaluation in document["evaluations"]:
        record = records.setdefault(
            evaluation["spec"],
            {
                "history_version": HISTORY_VERSION,
                "timestamp": document.get("timestamp"),
                "commit": document.get("commit"),
                "branch": document.get("branch"),
                "tool_version": (document.get("tool") or {}).get("version"),
                "spec": evaluation["spec"],
                "inputs": evaluation.get("inputs") or [],
                "passed": True,
                "gates": [],
                "systems": {},
            },
        )
        for gate in evaluation["gates"]:
            record["gates"].append(
                {
                    "id": gate["id"],
                    "statistic": gate["statistic"],
                    "measure": gate["measure"],
                    "value": gate["value"],
                    "limit": gate.get("limit"),
                    "rule": gate.get("rule"),
                    "outcome": gate["outcome"],
                    "higher_is_better": gate.get("higher_is_better"),
                    "false_alarm_rate": (gate.get("calibration") or {}).get("rate"),
                    # how many predicted grades the verdict rested on (docs/predictions.md): kept apart from the qrels
                    "predicted": _predicted_grades(gate),
                }
            )
            record["passed"] = record["passed"] and gate["passed"]
        record["systems"][evaluation["measure"]] = {
            system["name"]: {"role": system["role"], **{key: system[key] for key in PROMISED_KEYS if key in system}}
            for system in evaluation["systems"]
        }
    return list(records.values())


def _predicted_grades(gate: Mapping[str, Any]) -> int | None:
    """How many predicted grades refined a gate's plausible gradings; ``None`` where none did."""
    predicted = (((gate.get("judgments") or {}).get("plausible") or {}).get("predicted")) or {}
    return predicted.get("documents") if predicted.get("used") else None


def append_history(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> None:
    """Append ``records`` to the history file, one JSON line each, in one locked write.

    The write starts on a line of its own: a last line left without its newline (a disk that filled
    up, a machine that lost power mid-write) stays one bad line, skipped when read, instead of taking
    the new record with it. A path that exists and is not a regular file (a folder, a FIFO, a device)
    is refused before anything is written.
    """
    text = "".join(json.dumps(record, allow_nan=False, ensure_ascii=False) + "\n" for record in records)
    if not text:
        return
    path = Path(path)
    if path.parent and not path.parent.is_dir():
        raise InputError(
            "the history file's folder does not exist", path=path, hint="create the folder or fix --bvtest-history"
        )
    _require_regular_history(path, missing_ok=True)
    try:
        # O_NONBLOCK: a FIFO created since the check above fails at once instead of waiting for a reader
        descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except OSError as error:
        raise InputError(f"cannot write the history file ({error.strerror or error})", path=path) from None
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            text = "\n" + text
        data = text.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(descriptor, data[written:])
    except OSError as error:
        raise InputError(f"cannot write the history file ({error.strerror or error})", path=path) from None
    finally:
        os.close(descriptor)  # closing releases the lock


def _require_regular_history(path: Path, *, missing_ok: bool) -> None:
    """Refuse a history path that is a folder, a FIFO (nobody reading it would hang the session) or a device."""
    try:
        require_regular_file(path)
    except InputError as error:
        if missing_ok and not os.path.lexists(path):
            return
        if error.message == "file not found":
            raise InputError(
                "history file not found", path=path, hint="run pytest with --bvtest-history PATH first"
            ) from None
        raise InputError(
            f"the history file {error.message}", path=path, hint="name a regular file for --bvtest-history"
        ) from None


class HistoryWarning(UserWarning):
    """A line of the history file that is not a record was skipped (reading it goes on)."""


@dataclass(frozen=True)
class History:
    """The records of a history file in file order, and one message per line that was skipped."""

    records: tuple[dict[str, Any], ...]
    skipped: tuple[str, ...]


def read_history(path: str | os.PathLike[str]) -> History:
    """Every record of the history file; a line that is not a record is reported in ``skipped``, never fatal.

    A record is a JSON object with a ``spec`` and a list of ``gates``, each with a text ``id`` and a
    ``value`` and ``limit`` that are numbers or null: a record written by hand or by another tool
    with a value such as ``"n/a"`` would otherwise stop every reader of the file.
    """
    path = Path(path)
    _require_regular_history(path, missing_ok=False)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise InputError(f"cannot read the history file ({error.strerror or error})", path=path) from None
    records, skipped = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            skipped.append(f"{path}:{number}: not a JSON record ({error.msg}); skipped")
            continue
        problem = _record_problem(record)
        if problem is not None:
            skipped.append(f"{path}:{number}: not a bvtest history record ({problem}); skipped")
            continue
        records.append(record)
    return History(tuple(records), tuple(skipped))


def _record_problem(record: Any) -> str | None:
    """What makes ``record`` unreadable as a history record, or ``None``."""
    if not isinstance(record, dict) or not isinstance(record.get("gates"), list) or "spec" not in record:
        return "no spec or gates"
    for position, gate in enumerate(record["gates"], start=1):
        if not isinstance(gate, dict) or not isinstance(gate.get("id"), str):
            return f"gate {position} has no id"
        for key in ("value", "limit"):
            value = gate.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                return f"gate {gate['id']}: {key} {excerpt(value)} is not a number"
    return None


def judgments_of(record: Mapping[str, Any]) -> str | None:
    """Which relevance judgments a record was evaluated with: the content hashes of its qrels files, joined
    (a short digest); ``None`` for a record that names no qrels (per-topic tables only, or written by hand)."""
    digests = sorted(str(entry.get("sha256")) for entry in record.get("inputs") or [] if entry.get("role") == "qrels")
    if not digests:
        return None
    return hashlib.sha256("+".join(digests).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class GateSeries:
    """One gate over time: the record times, values, limits, outcomes and commits, oldest first, and the
    judgments each record was evaluated with (:func:`judgments_of`)."""

    id: str
    label: str
    times: tuple[str, ...]
    values: tuple[float | None, ...]
    limits: tuple[float | None, ...]
    outcomes: tuple[str, ...]
    commits: tuple[str | None, ...]
    judgments: tuple[str | None, ...]

    @property
    def judgment_changes(self) -> tuple[int, ...]:
        """The records at which the qrels changed from the record before: a value there is not comparable with
        the ones before it (dropping 500 judgments moved a TRisk from -1.107 to -0.335 with no change of run)."""
        return tuple(
            index
            for index in range(1, len(self.judgments))
            if None not in (self.judgments[index - 1], self.judgments[index])
            and self.judgments[index] != self.judgments[index - 1]
        )


def gate_series(records: Iterable[Mapping[str, Any]]) -> list[GateSeries]:
    """Each gate id's values and limits across the records (as :func:`read_history` returns them), in order of first
    appearance."""
    points: dict[str, list[tuple[str, float | None, float | None, str, str | None, str | None]]] = {}
    labels: dict[str, str] = {}
    for record in records:
        for gate in record["gates"]:
            labels.setdefault(gate["id"], f"{gate.get('measure', '')} {gate.get('statistic', '')}".strip())
            points.setdefault(gate["id"], []).append(
                (
                    str(record.get("timestamp") or ""),
                    gate.get("value"),
                    gate.get("limit"),
                    str(gate.get("outcome", "")),
                    record.get("commit"),
                    judgments_of(record),
                )
            )
    return [
        GateSeries(gate_id, labels[gate_id], *(tuple(column) for column in zip(*rows)))  # type: ignore[arg-type]
        for gate_id, rows in points.items()
    ]
