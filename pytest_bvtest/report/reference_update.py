"""``--bvtest-update``: the candidate run becomes the stored reference run, atomically."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

from pytest_bvtest.errors import InputError, short_list
from pytest_bvtest.io.textfiles import (
    ALLOW_OUTSIDE_OPTIONS,
    atomic_write_bytes,
    numbered_lines,
    project_root,
    require_inside,
)
from pytest_bvtest.judging.evaluation import Evaluation
from pytest_bvtest.report.wording import display_path
from pytest_bvtest.spec.model import RepeatedRuns, RunFile


def update_reference(
    evaluation: Evaluation,
    *,
    force: bool = False,
    allow_outside: bool = False,
    keep_folder: str | os.PathLike[str] | None = None,
) -> list[str]:
    """Make the candidate run the stored reference run (``--bvtest-update``); say what changed.

    Parameters
    ----------
    evaluation:
        The spec's evaluation; when one of its gates failed the update is refused unless ``force``.
    force:
        Update even though a gate failed (``--bvtest-update-force``).
    allow_outside:
        Allow a reference file outside the project (after following symbolic links).
    keep_folder:
        Where the previous reference is kept (``previous/NAME.previous-HASH``); by default the
        spec's cache folder. With neither, the previous version is left to version control.

    The reference keeps its format: a ``.gz`` file stays gzip, and a reference that is one tag of a
    multi-system run file has only its own lines replaced (the candidate's lines, tagged with the
    reference's tag). Every write is atomic: killed at any moment, each file is complete-old or
    complete-new.
    """
    spec = evaluation.spec
    if spec.candidate is None or spec.reference is None:
        return [f"bvtest: {spec.path.name}: nothing to update (the spec has no candidate or no reference)"]
    stored = spec.baselines[spec.reference]
    repeated = [
        name
        for name, source in ((spec.reference, stored), ("the candidate", spec.candidate))
        if isinstance(source, RepeatedRuns)
    ]
    if repeated:
        raise InputError(
            f"--bvtest-update stores one run as the reference, but {repeated[0]} is given as several runs",
            path=spec.path,
            line=spec.line_of("reference"),
            hint="list the candidate's runs as the reference's in the spec (or store one of them by hand)",
        )
    if not isinstance(stored, RunFile) or not isinstance(spec.candidate, RunFile):
        raise InputError(
            "--bvtest-update needs the reference and the candidate to be run files",
            path=spec.path,
            line=spec.line_of("reference"),
            hint="per-topic tables are not rewritten; update the table in your own pipeline",
        )
    failed = [outcome.id for outcome in evaluation.gates if not outcome.passed]
    if failed and not force:
        raise InputError(
            f"reference {spec.reference!r} not updated: {len(failed)} gate(s) failed: {', '.join(failed)}",
            path=spec.path,
            hint="update after the gates pass, or on purpose with --bvtest-update-force (bvtest check --update-force)",
        )
    # a candidate run without a ranking for topics other systems rank passes as OK* at most; stored as the
    # reference, it would make every later gate lenient on those topics (free wins, reference_missing)
    lacking = {
        topic
        for measure in evaluation.measures
        for guard in measure.guards
        if guard.kind == "candidate_missing"
        for topic in guard.topics
    }
    if lacking and not force:
        raise InputError(
            f"reference {spec.reference!r} not updated: the candidate has no ranking for {len(lacking)} topic(s) "
            f"that other systems rank: {short_list(sorted(lacking))}",
            path=spec.path,
            hint="update with a run that ranks every topic, or on purpose with --bvtest-update-force "
            "(bvtest check --update-force)",
        )
    # a candidate scoring 0 everywhere (document ids the qrels do not know) as the reference: every later
    # candidate would beat it on every topic, and each gate against it would pass
    zero = [
        measure.measure for measure in evaluation.measures if any(g.kind == "candidate_zero" for g in measure.guards)
    ]
    if zero and not force:
        raise InputError(
            f"reference {spec.reference!r} not updated: the candidate scores 0 on every topic ({', '.join(zero)})",
            path=spec.path,
            hint="check that its document ids are the qrels' form; update on purpose with --bvtest-update-force "
            "(bvtest check --update-force)",
        )
    if not allow_outside:
        try:
            require_inside(
                stored.path, project_root(spec.folder), "the reference run", allow_option=ALLOW_OUTSIDE_OPTIONS
            )
        except InputError as error:
            raise InputError(
                f"not updated: {error.message}",
                path=spec.path,
                line=spec.line_of("baselines", spec.reference),
                hint=error.hint,
            ) from None
    old_text = "".join(f"{line}\n" for _, line in numbered_lines(stored.path))
    new_text = _replaced_run_text(stored, spec.candidate)
    if new_text == old_text:
        return [
            f"bvtest: reference {spec.reference!r} ({stored.path}) already holds the candidate run; nothing changed"
        ]
    lines = []
    folder = keep_folder if keep_folder is not None else spec.cache
    if folder is not None:
        old = stored.path.read_bytes()
        kept = (
            Path(folder) / "previous" / f"{stored.path.name}.previous-{hashlib.blake2b(old, digest_size=6).hexdigest()}"
        )
        if not kept.exists():
            atomic_write_bytes(kept, old)
        kept_line = f"bvtest: previous reference kept as {display_path(str(kept))}"
    else:
        kept_line = (
            "bvtest: previous reference not kept (no cache folder): "
            f"restore it from version control (git checkout -- {stored.path.name})"
        )
    data = new_text.encode("utf-8")
    atomic_write_bytes(stored.path, gzip.compress(data, mtime=0) if stored.path.name.endswith(".gz") else data)
    lines += [
        f"bvtest: reference {spec.reference!r} updated: {display_path(str(stored.path))} now holds the candidate "
        f"{display_path(str(spec.candidate.path))}"
        + (f" (tag {stored.tag!r}, the file's other systems kept)" if stored.tag is not None else ""),
        kept_line,
    ]
    if failed:
        lines.append(f"bvtest: note: updated as forced although {len(failed)} gate(s) failed: {', '.join(failed)}")
    if lacking:
        lines.append(
            f"bvtest: note: updated as forced although the candidate has no ranking for {len(lacking)} topic(s): "
            f"{short_list(sorted(lacking))}"
        )
    if zero:
        lines.append(
            f"bvtest: note: updated as forced although the candidate scores 0 on every topic ({', '.join(zero)})"
        )
    for measure in evaluation.measures:
        before = measure.system(spec.reference).values["mean"]
        after = measure.system(measure.candidate).values["mean"] if measure.candidate else None
        if before is not None and after is not None:
            lines.append(f"bvtest:   {measure.measure} mean {before:.4f} -> {after:.4f} ({after - before:+.4f})")
    return lines


def _replaced_run_text(stored: RunFile, candidate: RunFile) -> str:
    """The reference file's new text: the candidate's run lines (its selected tag only), in place of the
    whole file, or of the reference tag's lines (re-tagged) when the reference is one system of several."""
    new_lines = [
        line for _, line in numbered_lines(candidate.path) if candidate.tag is None or _run_tag(line) == candidate.tag
    ]
    if stored.tag is None:
        return "".join(f"{line}\n" for line in new_lines)
    retagged = [" ".join([*line.split()[:5], stored.tag]) for line in new_lines if _run_tag(line) is not None]
    text: list[str] = []
    for _, line in numbered_lines(stored.path):
        if _run_tag(line) != stored.tag:
            text.append(line)
        elif retagged:
            text += retagged
            retagged = []
    return "".join(f"{line}\n" for line in text)


def _run_tag(line: str) -> str | None:
    """The tag of a run line; ``None`` for a comment, a blank line or anything else."""
    fields = line.split()
    return fields[5] if len(fields) == 6 and not fields[0].startswith("#") else None
