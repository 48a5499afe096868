"""Text IO helpers: transparent gzip, numbered lines, atomic writes with ordinary permissions."""

from __future__ import annotations

import gzip
import hashlib
import os
import stat
from pathlib import Path

import pytest

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.textfiles import atomic_write_bytes, atomic_write_text, file_digest, numbered_lines


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
    with pytest.raises(InputError, match="cannot read file"):
        list(numbered_lines(tmp_path / "broken.gz"))


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
