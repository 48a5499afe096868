"""Opening user files (``.gz`` transparently) and writing files atomically."""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pytest_bvtest.errors import InputError

_HASH_CHUNK = 1 << 20


def open_text(path: str | os.PathLike[str], *, errors: str = "strict") -> IO[str]:
    """Open ``path`` for reading as UTF-8 text, decompressing it when the name ends in ``.gz``.

    A missing or unreadable file raises :class:`InputError` naming it.
    """
    path = Path(path)
    try:
        if path.name.endswith(".gz"):
            return gzip.open(path, "rt", encoding="utf-8", errors=errors, newline=None)
        return open(path, encoding="utf-8", errors=errors, newline=None)
    except FileNotFoundError:
        raise InputError("file not found", path=path, hint="check the path (relative paths resolve against the spec's folder)") from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None


def numbered_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for every line of ``path`` (1-based, newline stripped).

    Bytes that are not UTF-8 (a binary file) and a corrupt ``.gz`` become :class:`InputError` at the
    line they are on: undecodable bytes are kept as surrogates while reading so the line is known.
    """
    line_number = 0
    try:
        with open_text(path, errors="surrogateescape") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.isascii():
                    try:
                        line.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InputError("not UTF-8 text (a binary or wrongly encoded file?)", path=path, line=line_number) from None
                yield line_number, line.rstrip("\r\n")
    except (OSError, EOFError) as error:
        raise InputError(f"cannot read file ({error})", path=path, line=line_number + 1) from None


def data_fields(path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """``(line_number, fields)`` of every line that is neither blank nor a whole-line ``#`` comment.

    Only a line whose first field starts with ``#`` is a comment: a ``#`` inside an id (MS MARCO
    document ids have them) is data.
    """
    for number, line in numbered_lines(path):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            yield number, fields


def finite_number(text: str, role: str, *, path: str | os.PathLike[str], line: int, hint: str) -> float:
    """``text`` as a float; a non-number, NaN or infinity is an :class:`InputError` at ``path:line``."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{role} {text!r} is not a number", path=path, line=line, hint=hint) from None
    if not math.isfinite(value):
        raise InputError(f"{role} {text!r} is not a finite number", path=path, line=line, hint=hint)
    return value


def file_digest(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 digest of the file's bytes (as stored, compressed or not); hardware-accelerated on most CPUs."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
                digest.update(chunk)
    except FileNotFoundError:
        raise InputError("file not found", path=path, hint="check the path (relative paths resolve against the spec's folder)") from None
    except OSError as error:
        raise InputError(f"cannot read file ({error.strerror or error})", path=path) from None
    return digest.hexdigest()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Readers never see a half-written file, and concurrent writers of the same content both succeed
    (the last rename wins).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError(f"cannot write this file ({error.strerror or error})", path=path,
                         hint="check that its folder exists or can be created, and is writable") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def _mode_for(path: Path) -> int:
    """The replaced file's permissions, or what a plain ``open`` would give a new file (mkstemp's are 0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))
