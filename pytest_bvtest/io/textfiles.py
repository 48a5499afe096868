"""Opening user files (``.gz`` transparently) and writing files atomically.

Every reader goes through here, so the promises about awkward files hold for all of them: a UTF-8
byte-order mark is the encoding marker it is (``utf-8-sig``), any line ending is read, a NUL byte
or bytes that are not UTF-8 are an error at their line, and a path that is not a regular file (a
folder, a FIFO, ``/dev/zero``, a symbolic-link loop) is refused before anything is read from it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import hashlib
import io
import math
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from pytest_bvtest.errors import InputError, excerpt

_HASH_CHUNK = 1 << 20
#: The longest line an input file may hold: far above a run's, a qrels' or a topic's line, and above the header of a
#: wide table of a million topics. A file that is not text (a disk image, a sparse file, 2 GB of NUL bytes) has no
#: line break for gigabytes; it is refused here instead of being read into memory as one line.
MAX_LINE_BYTES = 32 << 20
_BOM = "\ufeff"
_GZIP_MAGIC = b"\x1f\x8b"
# Decimal numbers as trec_eval writes them, ASCII digits only: Python's float() also takes `1_0` and
# full-width digits, which trec_eval's atof reads as something else (1, 0).
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


class Hasher(Protocol):
    """What :mod:`hashlib` objects offer: ``update`` with bytes read, ``hexdigest`` at the end."""

    def update(self, data: Any, /) -> None: ...

    def hexdigest(self) -> str: ...


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def require_regular_file(path: str | os.PathLike[str]) -> int:
    """The size of ``path``, which must be a regular file (symbolic links followed); else an InputError.

    Checked before reading, so a FIFO, ``/dev/zero`` or ``/dev/urandom`` never blocks or reads forever.
    """
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise InputError(
            "file not found", path=path, hint="check the path (relative paths resolve against the spec's folder)"
        ) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(
                "is a symbolic link loop, not a file", path=path, hint="point the link at a file"
            ) from None
        raise InputError(f"cannot read file ({error.strerror or error})", path=path) from None
    if not stat.S_ISREG(status.st_mode):
        raise InputError(f"is {_file_kind(status.st_mode)}, not a file", path=path, hint="name a regular file")
    return status.st_size


class _HashingReader(io.RawIOBase):
    """A file's bytes as they are read, each also fed to ``hasher``: its digest is that of exactly what was read,
    even when the file is replaced on disk meanwhile (hashing the path afterwards would hash the new file)."""

    def __init__(self, raw: BinaryIO, hasher: Hasher) -> None:
        super().__init__()
        self._raw = raw
        self._hasher = hasher

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if count:
            self._hasher.update(memoryview(buffer)[:count])
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


class _GzipReader(gzip.GzipFile):
    """A gzip stream that closes the file it decompresses (``GzipFile(fileobj=...)`` leaves it open)."""

    def __init__(self, source: BinaryIO) -> None:
        super().__init__(fileobj=source, mode="rb")
        self._source = source

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


class _TextBytes(io.RawIOBase):
    """The bytes of a text file as they are read (decompressed), refused at the first NUL byte and at a line
    longer than :data:`MAX_LINE_BYTES`: a file of NUL bytes is an error in its first block, and no line is read
    into memory whole before it is known to end."""

    def __init__(self, source: BinaryIO, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self._source = source
        self._path = path
        self._offset = 0  # bytes read before this block
        self._open_line = 0  # bytes of the line still open at the end of what was read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._source.readinto(buffer)  # type: ignore[attr-defined]
        if not count:
            return count
        block = bytes(memoryview(buffer)[:count])
        nul = block.find(b"\x00")
        if nul >= 0:
            raise nul_byte_error(self._path, line_at(self._path, self._offset + nul), at_start=self._offset + nul == 0)
        first = block.find(b"\n")
        longest = self._open_line + (count if first < 0 else first)
        if longest > MAX_LINE_BYTES:
            raise InputError(
                f"a line longer than {MAX_LINE_BYTES:,} bytes (a binary file, or one without line breaks?)",
                path=self._path,
                line=line_at(self._path, self._offset),
                hint="name the text file the spec means; a wide table that long is read in the long format "
                "(topic, system, value per line)",
            )
        self._open_line = longest if first < 0 else count - block.rfind(b"\n") - 1
        self._offset += count
        return count

    def close(self) -> None:
        self._source.close()
        super().close()


def line_at(path: str | os.PathLike[str], offset: int) -> int:
    """The 1-based line of ``path`` (decompressed) that holds byte ``offset``: read again up to it, only for an
    error's message."""
    line = 1
    with _open_source(Path(path), None) as handle:
        while offset > 0 and (chunk := handle.read(min(offset, _HASH_CHUNK))):
            line += chunk.count(b"\n")
            offset -= len(chunk)
    return line


def open_bytes(path: str | os.PathLike[str], *, hasher: Hasher | None = None, text: bool = True) -> BinaryIO:
    """Open ``path`` for reading bytes, decompressed when the name ends in ``.gz``.

    ``hasher`` (a :mod:`hashlib` object), when given, is fed every byte read from the file as stored
    (compressed or not), so after reading to the end its digest equals :func:`file_digest` of what was
    read. A missing, unreadable or non-regular file raises :class:`InputError` naming it. With ``text`` (every
    input but a run's fast path, which bounds its own blocks) a NUL byte or a line longer than
    :data:`MAX_LINE_BYTES` raises an :class:`InputError` at its line as soon as it is read.
    """
    source = _open_source(Path(path), hasher)
    return io.BufferedReader(_TextBytes(source, path)) if text else source  # type: ignore[return-value]


def _open_source(path: Path, hasher: Hasher | None) -> BinaryIO:
    """``path``'s bytes as stored (``hasher`` fed with them), decompressed by name."""
    path = Path(path)
    require_regular_file(path)
    try:
        raw: BinaryIO = open(path, "rb", buffering=0)  # noqa: SIM115 - returned open, closed by the caller
    except FileNotFoundError:
        raise InputError(
            "file not found", path=path, hint="check the path (relative paths resolve against the spec's folder)"
        ) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None
    if hasher is not None:
        raw = _HashingReader(raw, hasher)  # type: ignore[assignment]
    if path.name.endswith(".gz"):
        return _GzipReader(raw)
    return io.BufferedReader(raw)  # type: ignore[arg-type]


def open_text(path: str | os.PathLike[str], *, errors: str = "strict", hasher: Hasher | None = None) -> IO[str]:
    """Open ``path`` for reading as UTF-8 text (a leading byte-order mark dropped, any line ending read as
    ``\\n``), decompressing it when the name ends in ``.gz``; ``hasher`` as in :func:`open_bytes`.

    A missing, unreadable or non-regular file raises :class:`InputError` naming it.
    """
    return io.TextIOWrapper(open_bytes(path, hasher=hasher), encoding="utf-8-sig", errors=errors, newline=None)


@contextlib.contextmanager
def read_once(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The path to read ``path`` from, as often as a reader needs to (a second pass names an error's line).

    A regular file is its own path. A pipe (``<(zcat run.gz)``, a named FIFO) can be read only once: what
    it holds is copied to a temporary file, removed afterwards, whose name keeps the pipe's and ends in
    ``.gz`` when the bytes are gzip's (``<(cat run.gz)`` is decompressed too), and an :class:`InputError`
    naming the copy names ``path`` instead. A FIFO nobody writes to gives nothing and is refused, never
    waited for. Anything else (a folder, a device such as ``/dev/zero``) is refused as by
    :func:`require_regular_file`.
    """
    try:
        is_pipe = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        is_pipe = False
    if not is_pipe:
        require_regular_file(path)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="bvtest-pipe-") as folder:
        copy = Path(folder) / (Path(path).name or "pipe")
        if _copy_pipe(path, copy) == 0:
            raise InputError(
                "the pipe gave nothing to read (no process writes to it, or the command feeding it failed)",
                path=path,
                hint="check the command that writes to it, or name a file",
            )
        if not copy.name.endswith(".gz"):
            with open(copy, "rb") as handle:
                if handle.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC:
                    copy = copy.rename(copy.with_name(f"{copy.name}.gz"))
        try:
            yield copy
        except InputError as error:
            if error.path != str(copy):
                raise
            raise InputError(error.message, path=path, line=error.line, hint=error.hint) from None


def _copy_pipe(path: str | os.PathLike[str], copy: Path) -> int:
    """Copy what the pipe ``path`` holds to ``copy``; the byte count. Opened without waiting for a writer, so a
    FIFO nobody writes to reads as empty instead of blocking."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except OSError as error:
        raise InputError(f"cannot read the pipe ({error.strerror or error})", path=path) from None
    copied = 0
    with os.fdopen(descriptor, "rb", buffering=0) as source:
        try:
            with open(copy, "wb") as target:
                while chunk := source.read(_HASH_CHUNK):
                    target.write(chunk)
                    copied += len(chunk)
        except OSError as error:
            raise InputError(
                f"cannot copy what the pipe holds to a temporary file ({error.strerror or error})", path=path
            ) from None
    return copied


def numbered_lines(path: str | os.PathLike[str], *, hasher: Hasher | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for every line of ``path`` (1-based, newline stripped); ``hasher`` as in
    :func:`open_bytes`.

    Bytes that are not UTF-8 (a binary file) are an :class:`InputError` at the line they are on:
    undecodable bytes are kept as surrogates while reading so the line is known. A damaged ``.gz`` is an
    :class:`InputError` naming the file.
    """
    line_number = 0
    try:
        with open_text(path, errors="surrogateescape", hasher=hasher) as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.isascii():
                    try:
                        line.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InputError(
                            "not UTF-8 text (a binary or wrongly encoded file?)",
                            path=path,
                            line=line_number,
                            hint="save the file as UTF-8",
                        ) from None
                    if _BOM in line:
                        raise inner_bom_error(path, line_number)
                if "\x00" in line:
                    raise nul_byte_error(path, line_number)
                yield line_number, line.rstrip("\r\n")
    except (OSError, EOFError, zlib.error) as error:
        raise _read_error(path, line_number + 1, error) from None


def _read_error(path: str | os.PathLike[str], line: int, error: Exception) -> InputError:
    """A failure while reading: a damaged ``.gz`` (a flipped byte, a cut-off download) says so, at no line (the
    decompressor reads ahead of the lines)."""
    if isinstance(error, gzip.BadGzipFile) and str(error).startswith("Not a gzipped file"):
        return InputError(
            "not gzip-compressed, although its name ends in .gz", path=path, hint="compress it, or drop the .gz"
        )
    if str(path).endswith(".gz") and isinstance(error, zlib.error | EOFError | gzip.BadGzipFile):
        return InputError(
            f"the .gz file is damaged ({error})",
            path=path,
            hint="compress the file again, or download it again (`gzip -t FILE` tests a .gz file)",
        )
    return InputError(f"cannot read file ({error})", path=path, line=line)


def nul_byte_error(path: str | os.PathLike[str], line: int, *, at_start: bool = False) -> InputError:
    """A NUL byte: C code (trec_eval, pytrec_eval) would end the id there and merge two documents. A file that
    starts with one is no text file at all (``truncate -s 2G`` makes one of NUL bytes only)."""
    if at_start:
        return InputError(
            "the file starts with a NUL byte: not a text file (a sparse or preallocated file never written, a disk "
            "image, a binary file?)",
            path=path,
            line=line,
            hint="check that the file was written completely, and that the spec names the text file it means",
        )
    return InputError(
        "a NUL byte in this line (a binary or corrupt file?)",
        path=path,
        line=line,
        hint="ids end at a NUL byte in trec_eval, so two different ids could become one; remove it",
    )


def inner_bom_error(path: str | os.PathLike[str], line: int) -> InputError:
    """A byte-order mark after the start: files concatenated (``cat a b``); it would become part of an id."""
    return InputError(
        "a byte-order mark inside the file (were files with byte-order marks concatenated?)",
        path=path,
        line=line,
        hint="remove the invisible U+FEFF character at this line; only a file's first bytes may hold one",
    )


def data_fields(path: str | os.PathLike[str], *, hasher: Hasher | None = None) -> Iterator[tuple[int, list[str]]]:
    """``(line_number, fields)`` of every line that is neither blank nor a whole-line ``#`` comment; ``hasher``
    as in :func:`open_bytes`.

    Only a line whose first field starts with ``#`` is a comment: a ``#`` inside an id (MS MARCO
    document ids have them) is data.
    """
    for number, line in numbered_lines(path, hasher=hasher):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            yield number, fields


def is_decimal(text: str) -> bool:
    """Whether ``text`` is a plain decimal number (``3``, ``-0.5``, ``1e-3``): ASCII digits, no ``_``."""
    return _DECIMAL.fullmatch(text) is not None


def finite_number(text: str, role: str, *, path: str | os.PathLike[str], line: int, hint: str) -> float:
    """``text`` as a float; a non-number, NaN or infinity is an :class:`InputError` at ``path:line``.

    Only plain decimal numbers are numbers: ``1_0``, full-width digits and hexadecimal, which
    Python or C would read as something else, are errors.
    """
    if not is_decimal(text) and not _NON_FINITE.fullmatch(text):
        raise InputError(
            f"{role} {excerpt(text)} is not a number (plain decimal digits 0-9 only)", path=path, line=line, hint=hint
        )
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"{role} {excerpt(text)} is not a finite number", path=path, line=line, hint=hint)
    return value


def file_digest(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 digest of the file's bytes (as stored, compressed or not); hardware-accelerated on most CPUs.

    An input file that starts with a NUL byte is refused in its first block, before the rest is hashed: no input
    starts so (text does not, gzip starts with 1f 8b, Parquet with ``PAR1``), and ``truncate -s 2G`` makes such a
    file of 2 GB."""
    digest = hashlib.sha256()
    require_regular_file(path)
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
                if handle.tell() == len(chunk) and chunk.startswith(b"\x00"):
                    raise nul_byte_error(path, 1, at_start=True)
                digest.update(chunk)
    except FileNotFoundError:
        raise InputError(
            "file not found", path=path, hint="check the path (relative paths resolve against the spec's folder)"
        ) from None
    except OSError as error:
        raise InputError(f"cannot read file ({error.strerror or error})", path=path) from None
    return digest.hexdigest()


def project_root(folder: str | os.PathLike[str]) -> Path:
    """The project that holds ``folder``: its nearest ancestor with a ``.git``, else ``folder`` itself."""
    folder = Path(os.path.realpath(folder))
    return next((candidate for candidate in (folder, *folder.parents) if (candidate / ".git").exists()), folder)


#: How a user allows writes outside the project (the spec's ``cache:``, ``--bvtest-update``, ini report paths).
ALLOW_OUTSIDE_OPTIONS = "--bvtest-allow-outside-project (pytest) or --allow-outside-project (bvtest check)"


def require_inside(path: str | os.PathLike[str], root: Path, what: str, *, allow_option: str) -> None:
    """Refuse a write to ``path`` (symbolic links followed) outside ``root``: a spec or ini file from an
    untrusted pull request must not make CI write anywhere else unless the command line allows it."""
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        shown = str(path) if str(path) == str(real) else f"{path} (which is {real})"
        raise InputError(
            f"{what} {shown} is outside the project {root}",
            hint=f"keep it inside the project, or allow it on the command line with {allow_option}",
        )


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Readers never see a half-written file: a process killed at any moment leaves the old file or the
    new one. Concurrent writers of the same content both succeed (the last rename wins). A symbolic
    link keeps its link (the file it points at is replaced); a character device or a pipe that
    exists (``/dev/null``, ``/dev/stdout``) is written to as the stream it is, never replaced by a
    file. Any failure (a folder in the way, a full disk, no permission) is an :class:`InputError`
    naming ``path``.
    """
    path = Path(path)
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise _write_error(path, error) from None
    if status is not None and not stat.S_ISREG(status.st_mode):
        if stat.S_ISCHR(status.st_mode) or stat.S_ISFIFO(status.st_mode):
            _write_to_stream(path, data)
            return
        raise InputError(
            f"cannot write this file: it is {_file_kind(status.st_mode)}",
            path=path,
            hint="name a file (inside an existing folder), not a folder",
        )
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise _write_error(path, error) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _mode_for(target))
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise _write_error(path, error) from None
        raise


def append_text(path: str | os.PathLike[str], text: str) -> None:
    """Append UTF-8 ``text`` to ``path`` in one write (a log such as ``$GITHUB_STEP_SUMMARY``), a regular file or
    a new one; a failure is an :class:`InputError` naming ``path``.

    Opened without blocking and checked once open: a FIFO that nobody reads hung the session (a plain ``open``
    waits for a reader), and a device or a pipe is no log to append to."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY
    try:
        descriptor = os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO without a reader
            raise InputError(
                f"is {_file_kind(stat.S_IFIFO)}, not a file to append to", path=path, hint="name a regular file"
            ) from None
        raise _write_error(Path(path), error) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"is {_file_kind(mode)}, not a file to append to", path=path, hint="name a regular file")
        with os.fdopen(descriptor, "ab", closefd=False) as stream:
            stream.write(text.encode("utf-8"))
    except OSError as error:
        raise _write_error(Path(path), error) from None
    finally:
        os.close(descriptor)


def _write_to_stream(path: Path, data: bytes) -> None:
    """Write to an existing device or pipe; a pipe nobody reads is an error, not a wait forever."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise InputError("cannot write to this pipe: no process is reading it", path=path) from None
        raise _write_error(path, error) from None
    try:
        flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
        fcntl.fcntl(descriptor, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        with os.fdopen(descriptor, "wb", closefd=True) as stream:
            stream.write(data)
    except OSError as error:
        raise _write_error(path, error) from None


def _write_error(path: Path, error: OSError) -> InputError:
    if error.errno == errno.ELOOP:
        return InputError("cannot write this file: a symbolic link loop", path=path)
    hint = (
        "free some space"
        if error.errno == errno.ENOSPC
        else "check that its folder exists or can be created, and is writable"
    )
    return InputError(f"cannot write this file ({error.strerror or error})", path=path, hint=hint)


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
