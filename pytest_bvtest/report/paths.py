"""Output paths checked before a session runs: a report never replaces an input, another report, or a folder.

A report path that names the spec, the qrels or a run would replace it (``bvtest check bvtest.yaml --json
new.run`` exited 0 having destroyed the candidate run); this module refuses such paths before anything is
evaluated, and the plugin asks again before it writes. Kept free of the pipeline's imports: the plugin
checks its options when pytest starts.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_bvtest.errors import InputError

if TYPE_CHECKING:
    from pytest_bvtest.spec.model import Spec


def check_output_paths(
    outputs: Mapping[str, str | None],
    specs: Iterable[Spec] = (),
    *,
    inputs: Iterable[tuple[str, str | os.PathLike[str]]] = (),
    cache_folders: Iterable[str | os.PathLike[str]] = (),
    folder_options: Iterable[str] = (),
) -> None:
    """Refuse output paths that would destroy an input, each other, or be no file at all; called before anything
    runs, and again before anything is written.

    Parameters
    ----------
    outputs:
        Each output option as the user wrote it (``--bvtest-json``, ``--json``) and its path (``None``:
        not asked for). Report files are replaced, the history is appended to.
    specs:
        The session's specs: each one's files (:meth:`~pytest_bvtest.spec.model.Spec.files`) and its cache
        folder are inputs.
    inputs:
        ``(role, path)`` of other files the session reads (``--bvtest-run``).
    cache_folders:
        The score cache folders the session uses besides the specs' own (``--bvtest-cache-dir``).
    folder_options:
        The options whose path is a folder (``--bvtest-plots``); the others name files.

    Raises
    ------
    InputError
        For ``-`` (reports are files; ``/dev/stdout`` writes to the terminal), a file path ending in
        ``/`` or naming an existing folder, two outputs on one file, and an output that is one of the
        inputs (symbolic and hard links followed) or lies in a cache folder.
    """
    folders = set(folder_options)
    chosen = {option: str(path) for option, path in outputs.items() if path is not None}
    for option, path in chosen.items():
        if path == "-":
            raise InputError(
                f"{option} -: reports are written to files, not to standard output",
                hint=f"name a file; {option} /dev/stdout writes the report to the terminal",
            )
        if option not in folders and (path.endswith(("/", os.sep)) or os.path.isdir(path)):
            raise InputError(
                f"{option} {path}: is a folder; a report is a file",
                hint=f"name a file in it, e.g. {option} {os.path.join(path, 'bvtest' + _SUFFIXES.get(option, ''))}",
            )
    seen: dict[object, str] = {}
    for option, path in chosen.items():
        key = _identity(path)
        if key in seen and not _is_stream(path):  # two reports may go to the terminal (/dev/stdout) in turn
            raise InputError(
                f"{seen[key]} and {option} both write {path}: one would replace the other",
                hint="give each report its own file",
            )
        seen[key] = option
    readable = [*((role, Path(path)) for role, path in inputs)]
    folders_read = [Path(os.path.realpath(folder)) for folder in cache_folders]
    for spec in specs:
        readable += [(_role(role, name), path) for role, name, path in spec.files()]
        folders_read += [Path(os.path.realpath(spec.cache))] if spec.cache is not None else []
    identities = [(role, path, _identity(path)) for role, path in readable]
    for option, path in chosen.items():
        key = _identity(path)
        for role, input_path, input_key in identities:
            if key == input_key:
                raise InputError(
                    f"{option} {path} is the {role} ({input_path}): the session would write over one of its inputs",
                    hint="write the report to another file (reports usually go to a reports/ folder)",
                )
        real = Path(os.path.realpath(path))
        for folder in folders_read:
            if real == folder or folder in real.parents:
                raise InputError(
                    f"{option} {path} is inside the score cache {folder}", hint="write the report outside that folder"
                )


def _role(role: str, name: str | None) -> str:
    """How a spec's file is named in a message: ``spec``, ``qrels``, ``baseline 'production'``, ``candidate``."""
    role = _ROLE_WORDS.get(role, role)
    return f"{role} {name!r}" if name is not None and name != role else role


_ROLE_WORDS = {"topics": "topic texts file", "weights": "topic weights file", "variations": "query variations file"}


def _is_stream(path: str) -> bool:
    """Whether ``path`` is a character device or a pipe (``/dev/stdout``), written in turn, never replaced."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


#: The file name each report option suggests when it was given a folder.
_SUFFIXES = {
    option: suffix
    for names, suffix in (
        (("--bvtest-json", "--json"), ".json"),
        (("--bvtest-markdown", "--markdown"), ".md"),
        (("--bvtest-html", "--html"), ".html"),
        (("--bvtest-history",), ".jsonl"),
    )
    for option in names
}


def _identity(path: str | os.PathLike[str]) -> str | tuple[int, int]:
    """What makes two paths one file: its device and inode when it exists (hard links too), else its real path."""
    try:
        status = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (status.st_dev, status.st_ino)
