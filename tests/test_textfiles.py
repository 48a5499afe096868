"""Text IO helpers: transparent gzip (a damaged one is an error), numbered lines, digests of what was read, pipes
read once, atomic writes with ordinary permissions."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import stat
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run, read_run_columns
from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.io.textfiles import append_text, atomic_write_bytes, atomic_write_text, file_digest, numbered_lines
from tests.conftest import shared_path


def test_gz_is_read_transparently_by_name(tmp_path: Path) -> None:
    plain, packed = tmp_path / "a.txt", tmp_path / "a.txt.gz"
    plain.write_text("x\r\ny\n")
    packed.write_bytes(gzip.compress(b"x\ny\n"))
    assert list(numbered_lines(plain)) == list(numbered_lines(packed)) == [(1, "x"), (2, "y")]


def test_missing_and_binary_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        list(numbered_lines(tmp_path / "absent"))
    (tmp_path / "binary").write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(InputError, match=r"binary:2: not UTF-8"):
        list(numbered_lines(tmp_path / "binary"))
    (tmp_path / "broken.gz").write_bytes(b"not gzip at all")
    with pytest.raises(InputError) as error:
        list(numbered_lines(tmp_path / "broken.gz"))
    assert str(error.value) == (
        f"{tmp_path / 'broken.gz'}: not gzip-compressed, although its name ends in .gz; compress it, or drop the .gz"
    )


def test_atomic_write_gives_new_files_the_umask_mode_and_keeps_an_existing_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "new" / "report.json", "{}")
        assert stat.S_IMODE((tmp_path / "new" / "report.json").stat().st_mode) == 0o644
        existing = tmp_path / "run.txt"
        existing.write_text("old")
        existing.chmod(0o640)
        atomic_write_bytes(existing, b"new")
        assert existing.read_bytes() == b"new"
        assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    finally:
        os.umask(umask)
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_file_digest_of_a_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder, not a file"):
        file_digest(tmp_path)


def test_file_digest_changes_with_content(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("a")
    first = file_digest(path)
    path.write_text("b")
    assert file_digest(path) != first and first == hashlib.sha256(b"a").hexdigest()


# --- damaged .gz files, digests of what was read, pipes ----------------------------------------------------------


def flipped(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1 :]


def first_flip_zlib_refuses(packed: bytes) -> bytes:
    """``packed`` with the first byte after the gzip header flipped that makes the deflate data invalid."""
    for position in range(10, len(packed)):
        damaged = flipped(packed, position)
        try:
            gzip.decompress(damaged)
        except zlib.error:
            return damaged
        except (OSError, EOFError):
            continue
    raise AssertionError("no flipped byte makes zlib fail")


@pytest.mark.parametrize(
    ("damage", "detail"),
    [
        (first_flip_zlib_refuses, "Error -3 while decompressing data: invalid "),
        (lambda packed: packed[: len(packed) // 2], "Compressed file ended before the end-of-stream marker"),
        (lambda packed: flipped(packed, len(packed) - 6), "CRC check failed"),
    ],
)
@pytest.mark.parametrize(
    "read",
    [read_qrels, read_run, read_run_columns, lambda path: read_score_table(path, format="trec_eval")],
    ids=["qrels", "run", "run columns", "table"],
)
def test_a_damaged_gz_is_one_input_error(tmp_path: Path, damage: Any, detail: str, read: Any) -> None:
    """A flipped byte or a cut-off download raised zlib.error, a traceback."""
    source = shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.gz")
    if read is read_qrels:
        source = shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")
    elif read not in (read_run, read_run_columns):
        source = shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.eval.gz")
    stored = source.read_bytes()
    packed = stored if source.name.endswith(".gz") else gzip.compress(stored, mtime=0)
    path = tmp_path / "damaged.gz"
    path.write_bytes(damage(packed))
    with pytest.raises(InputError) as error:
        read(path)
    message = str(error.value)
    assert message.startswith(f"{path}: the .gz file is damaged ({detail}")
    assert message.endswith("; compress the file again, or download it again (`gzip -t FILE` tests a .gz file)")


def test_what_was_read_is_hashed_not_what_the_path_holds_afterwards(tmp_path: Path) -> None:
    """Qrels replaced while a gate read them were hashed by path afterwards: old scores cached under the new hash."""
    for source in (
        shared_path("dl_hard", "dataset", "dl_hard-doc.qrels"),
        shared_path("trec_web2012_risk_baselines", "qrels.web.151-200.txt"),
    ):
        path = tmp_path / source.name
        path.write_bytes(source.read_bytes())
        qrels = read_qrels(path)
        assert qrels.sha256 == file_digest(path) == hashlib.sha256(source.read_bytes()).hexdigest()
        path.write_bytes(source.read_bytes().replace(b" 1\n", b" 2\n", 1))
        assert qrels.sha256 != file_digest(path)
    folder = shared_path("dl_hard", "dataset", "baselines", "doc")
    for name in ("bm25.run.gz", "bm25+bert-mp.run.gz"):
        packed = (folder / name).read_bytes()
        for path, data in ((tmp_path / name, packed), (tmp_path / name.removesuffix(".gz"), gzip.decompress(packed))):
            path.write_bytes(data)
            assert read_run_columns(path, digest=True).sha256 == hashlib.sha256(data).hexdigest()
            assert read_run_columns(path).sha256 is None
    # a file the fast path declines (a comment line) is hashed by the validated reader
    commented = tmp_path / "commented.run"
    commented.write_bytes(b"# a comment\n" + gzip.decompress((folder / "bm25.run.gz").read_bytes()))
    assert read_run_columns(commented, digest=True).sha256 == file_digest(commented)


def through_a_pipe(data: bytes) -> Iterator[str]:
    """``/dev/fd/N`` of a pipe a thread writes ``data`` into, as ``<(cat FILE)`` gives a command."""
    reading, writing = os.pipe()

    def write() -> None:
        with os.fdopen(writing, "wb") as stream:  # the reader copies the pipe whole: no broken pipe
            stream.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        yield f"/dev/fd/{reading}"
    finally:
        writer.join()
        os.close(reading)


@pytest.fixture
def pipe() -> Iterator[Any]:
    pipes: list[Iterator[str]] = []

    def open_pipe(data: bytes) -> str:
        pipes.append(through_a_pipe(data))
        return next(pipes[-1])

    yield open_pipe
    for opened in pipes:
        with contextlib.suppress(StopIteration):
            next(opened)


def test_a_run_through_a_pipe_is_read_once(tmp_path: Path, pipe: Any) -> None:
    """`<(zcat run.gz)`: the fast path read the pipe; on an error the validated reader opened it again and said
    'a named pipe, not a file'."""
    packed = shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.gz").read_bytes()
    text = gzip.decompress(packed)
    expected = read_run_columns(shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.gz"))
    for data in (text, packed):  # `<(zcat run.gz)` and `<(cat run.gz)`
        columns = read_run_columns(pipe(data), digest=True)
        assert columns.scores.tolist() == expected.scores.tolist() and columns.topics == expected.topics
        assert columns.sha256 == hashlib.sha256(data).hexdigest()
        assert (
            read_run(pipe(data)).scores
            == read_run(shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.gz")).scores
        )
    lines = text.splitlines(keepends=True)
    broken = b"".join(lines[:4]) + lines[4].replace(b" Q0 ", b" ") + b"".join(lines[5:])
    for read in (read_run, read_run_columns):
        path = pipe(broken)
        with pytest.raises(InputError) as error:
            read(path)
        assert str(error.value) == (
            f"{path}:5: found 5 columns, expected 6 (qid Q0 docno rank score tag); separate the columns by blanks; "
            "comment lines must start with '#'"
        )


def test_append_text_appends_to_a_regular_file_or_a_new_one_and_refuses_a_pipe_without_waiting(tmp_path: Path) -> None:
    """The job summary (``$GITHUB_STEP_SUMMARY``) is appended to; a FIFO there that nobody read hung the session."""
    log = tmp_path / "summary.md"
    append_text(log, "one\n")
    append_text(log, "two\n")
    assert log.read_text() == "one\ntwo\n"
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"is a named pipe \(FIFO\), not a file to append to; name a regular file"):
        append_text(fifo, "no reader\n")
    with pytest.raises(InputError, match="cannot write this file"):
        append_text(tmp_path, "a folder\n")
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    try:  # a pipe with a reader is still no log to append to (its reader would get half a report)
        with pytest.raises(InputError, match="not a file to append to"):
            append_text(fifo, "read\n")
    finally:
        # let the reader go if it still waits for a writer; a blocking open would wait forever for a reader that
        # already read (append_text's own open was its writer) and hung the suite under xdist
        while reader.is_alive():
            with contextlib.suppress(OSError):  # no reader yet: try again once the thread has opened the pipe
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(timeout=0.05)
