"""Per-topic scores of a run, cached by content.

An entry is keyed by (run file digest, qrels file digest, measure, tag selection, package version),
so editing either file, upgrading the package or asking for another measure misses the cache. Entries
are small JSON files, their scores one base64 string of little-endian float64 (exact, and read at C
speed: a cached gate reads 66 entries of 7,000 topics, whose scores as JSON numbers cost 0.16 s to
parse), written atomically (temporary file + rename): pytest-xdist workers that evaluate the same run
at once both succeed, and a reader never sees half an entry. A corrupt, truncated or
implausible entry (no scores, a score that is NaN or infinite) is treated as a miss and rewritten; the
cache never makes an evaluation fail: a folder that cannot be written (full disk, read-only checkout)
gives one :class:`CacheWriteWarning` naming it, and the evaluation goes on without storing. Beside a run's
scores, one entry keeps its ranked documents (those with a gain and the unjudged ones of its top d, found in the
same pass): what the corners of a gate read (docs/mathematics.md §10), so that no run is read again for them.

Finding a run's entries needs its digest, and hashing a 250 MB run on every lookup costs about a
second. :meth:`ScoreCache.file_digest` therefore keeps, beside the entries, one small stat record per
file: the digest with the file's size, modification and status-change times (nanoseconds), inode
and device when it was hashed. While all of those are unchanged the recorded digest is used without
reading the file. A write changes the modification time, and ``os.utime`` (which can put the old
modification time back) changes the status-change time, which no user call can set; so an edited
file never matches its old record. One race remains, the one git calls "racy": a write in the same
timestamp tick as the hashing leaves every field unchanged. A record is therefore trusted only when
the file's times lie at least :data:`RACY_WINDOW_NS` (2 s, the coarsest timestamp resolution of
common file systems) before the hashing began; a younger file is hashed again on every lookup until
it has aged.

A file without a trusted record is hashed only when the cache may hold it: when a file of the same size, first and
last 64 KiB was hashed or read here before (an empty mark in ``seen/`` per such file). Any other file, such as a
candidate run new to the cache, cannot be in it: it is read once, hashed as it is read, instead of being hashed and
then read (:meth:`ScoreCache.known_digest`, :meth:`ScoreCache.remember_digest`). The marks only save that pass;
which entries a file has is still decided by its whole digest. A folder of entries without ``seen/`` (written
before the marks) hashes every file, as it did then, and gains its marks as it goes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any

import numpy as np

from pytest_bvtest import __version__
from pytest_bvtest.errors import InputError
from pytest_bvtest.io.tables import TopicScores
from pytest_bvtest.io.textfiles import atomic_write_bytes, atomic_write_text, file_digest

_LAYOUT = "v3"
_STAT_FOLDER = "stat"
_SWAPS_FOLDER = "swaps"
#: One empty file per file whose digest this cache learnt, named by :func:`_seen_name`.
_SEEN_FOLDER = "seen"
_SEEN_SPAN = 1 << 16

#: A stat record is trusted only for files whose times are this much older than its hashing (git's racy rule).
RACY_WINDOW_NS = 2_000_000_000


def encoded_array(values: np.ndarray, dtype: str = "<f8") -> str:
    """``values`` as the base64 of their bytes as ``dtype`` (little-endian): a JSON payload's array, read back exactly
    and at C speed by :func:`decoded_array` (a list of 700,000 JSON numbers took 0.2 s to parse)."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def decoded_array(text: str, dtype: str = "<f8", count: int | None = None) -> np.ndarray:
    """:func:`encoded_array`'s values read back (``count`` of them when given); a ``ValueError`` for anything else."""
    values = np.frombuffer(base64.b64decode(text, validate=True), dtype=dtype)
    if count is not None and len(values) != count:
        raise ValueError(f"{len(values)} values where {count} were stored")
    return values


class CacheWriteWarning(UserWarning):
    """The score cache could not be written; the evaluation goes on without it."""


@dataclass(frozen=True)
class CachedScores:
    """What one cache entry holds: a run's name and its per-topic values for one measure (read back as
    :class:`~pytest_bvtest.io.tables.TopicScores`, in the order they were stored)."""

    run_name: str
    per_topic: Mapping[str, float]
    ignored_topics: tuple[str, ...]


class ScoreCache:
    """A folder of cache entries. ``ScoreCache(None)`` is a disabled cache that never hits."""

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.folder = None if folder is None else Path(folder)
        self.hits = 0
        self.misses = 0
        self.write_failure: str | None = None
        # the files hashed by this cache (one evaluation) or whose record it trusted, with their stat fields then: a
        # run written just before the gate is racy for two seconds, and was hashed three times (0.8 s for 321 MB)
        self._hashed: dict[Path, tuple[list[int], str]] = {}
        # a folder written before files were marked seen holds entries of files it has no mark of: it is looked up by
        # hashing, as it was then (a CI cache restored on an exact key is never saved again, so marks written now
        # would not be there next time); a new folder holds nothing unmarked. Decided before this cache writes a mark
        layout = None if self.folder is None else self.folder / _LAYOUT
        self._marks_kept = layout is not None and (not layout.exists() or (layout / _SEEN_FOLDER).is_dir())

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    @staticmethod
    def key(run_digest: str, qrels_digest: str, measure: str, tag: str | None) -> str:
        parts = [_LAYOUT, __version__, run_digest, qrels_digest, measure, tag or ""]
        return hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=20).hexdigest()

    def _entry_path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / _LAYOUT / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedScores | None:
        """The entry stored under ``key``, or ``None`` when absent, unreadable or corrupt."""
        if self.folder is None:
            return None
        try:
            payload = json.loads(self._entry_path(key).read_text(encoding="utf-8"))
            entry = _entry_from_payload(payload)
        except (OSError, ValueError, TypeError, KeyError):
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def get_documents(self, key: str) -> dict[str, Any] | None:
        """A run's ranked documents stored under ``key`` (:func:`~pytest_bvtest.scoring.columnar.documents_payload`,
        one per chunk of topics), or ``None`` when absent or unreadable; the reader checks the rest."""
        payload = self.get_entry(key)
        return payload if payload is not None and isinstance(payload.get("chunks"), list) else None

    def get_entry(self, key: str) -> dict[str, Any] | None:
        """A JSON object stored under ``key`` by :meth:`put_entry`, or ``None`` when absent or unreadable; the reader
        checks the rest."""
        if self.folder is None:
            return None
        try:
            payload = json.loads(self._entry_path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return payload if isinstance(payload, dict) else None

    def put_entry(self, key: str, payload: dict[str, Any]) -> None:
        """Store a JSON object (what the plausible verdicts found from cached inputs), as :meth:`put` stores scores."""
        self._write(key, payload)

    def file_digest(self, path: str | os.PathLike[str]) -> str:
        """SHA-256 of the file's bytes, taken from its stat record when the file is unchanged since it was hashed.

        Without a cache folder, or when the record is missing, stale or racy (see the module docstring),
        the file is hashed and the record (re)written; a file this cache hashed is not hashed again while its
        stat fields are unchanged. Equal to :func:`~pytest_bvtest.io.textfiles.file_digest`.
        """
        path = Path(path).absolute()
        try:
            stat = _stat_fields(path)
        except OSError:
            return file_digest(path)  # raises the InputError naming the file
        trusted = self._trusted_digest(path, stat)
        if trusted is not None:
            return trusted
        hashed_at_ns = time.time_ns()
        digest = file_digest(path)
        self.remember_digest(path, stat, hashed_at_ns, digest)
        return digest

    def known_digest(self, path: str | os.PathLike[str]) -> str | None:
        """:meth:`file_digest`, for a file whose scores this cache may hold; ``None``, without reading it whole, for a
        regular file it has never seen (no file of its size, first and last 64 KiB was hashed or read here): the
        caller reads it once, hashing what it reads (:meth:`remember_digest`), instead of hashing it first: a new run
        was read twice, once to hash it and once to evaluate it."""
        path = Path(path).absolute()
        if self.folder is None or not self._marks_kept:
            return self.file_digest(path)
        try:
            stat = _stat_fields(path)
            if self._trusted_digest(path, stat) is not None or not _regular(path):
                return self.file_digest(path)
            seen = (self.folder / _LAYOUT / _SEEN_FOLDER / _seen_name(path, stat[0])).exists()
        except OSError:
            return self.file_digest(path)  # raises the InputError naming the file
        return self.file_digest(path) if seen else None

    def remember_digest(self, path: str | os.PathLike[str], stat: list[int], hashed_at_ns: int, digest: str) -> None:
        """Keep ``digest`` as the file's, read whole from ``hashed_at_ns`` on while its stat fields were ``stat`` (from
        :meth:`stat_fields`, before the reading), if they still are: in memory, in its stat record and as a file of
        its size, first and last 64 KiB seen (:meth:`known_digest`)."""
        path = Path(path).absolute()
        try:
            if _stat_fields(path) != stat:  # changed while it was read
                return
            self._hashed[path] = stat, digest
            if self.folder is not None:
                record = {"path": str(path), "stat": stat, "hashed_at_ns": hashed_at_ns, "digest": digest}
                atomic_write_text(self._record_path(path), json.dumps(record))
                self._mark_seen(path, stat[0])
        except (OSError, InputError):
            pass

    def _mark_seen(self, path: Path, size: int) -> None:
        """Note that a file of ``path``'s size, head and tail was seen (:meth:`known_digest`); quietly not, when that
        cannot be written (the stat records are written so too)."""
        assert self.folder is not None
        with contextlib.suppress(OSError):
            seen = self.folder / _LAYOUT / _SEEN_FOLDER / _seen_name(path, size)
            if not seen.exists():  # an empty file is whole once it exists: nothing to write atomically
                seen.parent.mkdir(parents=True, exist_ok=True)
                seen.touch()

    @staticmethod
    def stat_fields(path: str | os.PathLike[str]) -> list[int] | None:
        """The file's stat fields as :meth:`remember_digest` compares them (``None`` when it cannot be read)."""
        try:
            return _stat_fields(Path(path).absolute())
        except OSError:
            return None

    def _trusted_digest(self, path: Path, stat: list[int]) -> str | None:
        """The file's digest from memory or from its stat record, when either is of this version of the file."""
        if path in self._hashed and self._hashed[path][0] == stat:
            return self._hashed[path][1]
        if self.folder is None:
            return None
        recorded = _recorded_digest(self._record_path(path), path, stat)
        if recorded is not None:
            self._hashed[path] = stat, recorded
            self._mark_seen(path, stat[0])  # a cache written before files were marked seen learns them here
        return recorded

    def _record_path(self, path: Path) -> Path:
        assert self.folder is not None
        name = f"{hashlib.blake2b(os.fsencode(path), digest_size=16).hexdigest()}.json"
        return self.folder / _LAYOUT / _STAT_FOLDER / name

    def hashed_digest(self, path: str | os.PathLike[str]) -> str | None:
        """The digest :meth:`file_digest` gave the file, if its stat fields are unchanged since (else ``None``)."""
        path = Path(path).absolute()
        try:
            stat = _stat_fields(path)
        except OSError:
            return None
        known = self._hashed.get(path)
        return known[1] if known is not None and known[0] == stat else None

    def put(self, key: str, entry: CachedScores) -> None:
        """Store ``entry``; a folder that cannot be written warns once (the cache is an optimisation)."""
        scores = np.fromiter(entry.per_topic.values(), dtype="<f8", count=len(entry.per_topic))
        payload = {
            "run_name": entry.run_name,
            "topics": list(entry.per_topic),
            "scores": encoded_array(scores),
            "ignored_topics": list(entry.ignored_topics),
        }
        self._write(key, payload)

    def put_documents(self, key: str, chunks: list[dict[str, Any]]) -> None:
        """Store a run's ranked documents (see :meth:`get_documents`), as :meth:`put` stores scores."""
        self._write(key, {"chunks": chunks})

    def load_swaps(self, name: str) -> bytes | None:
        """The drawn swaps stored under ``name`` (:class:`~pytest_bvtest.stats.swaps.SwapStore`), or ``None``."""
        if self.folder is None:
            return None
        try:
            return (self.folder / _LAYOUT / _SWAPS_FOLDER / name).read_bytes()
        except OSError:
            return None

    def save_swaps(self, name: str, data: bytes) -> None:
        """Store drawn swaps under ``name``, as :meth:`put` stores scores."""
        if self.folder is not None:
            self._write_bytes(self.folder / _LAYOUT / _SWAPS_FOLDER / name, data)

    def _write(self, key: str, payload: dict[str, Any]) -> None:
        if self.folder is not None:
            self._write_bytes(self._entry_path(key), json.dumps(payload).encode("utf-8"))

    def _write_bytes(self, path: Path, data: bytes) -> None:
        if self.write_failure is not None:
            return
        try:
            atomic_write_bytes(path, data)
        except InputError as error:
            self.write_failure = str(error)
            warnings.warn(
                f"bvtest: score cache not written, going on without it: {error}", CacheWriteWarning, stacklevel=3
            )


def _recorded_digest(record_path: Path, path: Path, stat: list[int]) -> str | None:
    """The digest the stat record at ``record_path`` keeps for ``path``, if it is of this version of the file and
    was taken after the racy window (see the module docstring)."""
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if record["path"] == str(path) and record["stat"] == stat and _aged(stat, record["hashed_at_ns"]):
            return str(record["digest"])
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None


def _seen_name(path: Path, size: int) -> str:
    """A name for a file of ``size`` bytes that starts and ends as ``path`` does (its first and last 64 KiB): files
    with another name were never seen; one with this name may have been (the whole file's digest then decides)."""
    with open(path, "rb") as handle:
        head = handle.read(_SEEN_SPAN)
        handle.seek(max(size - _SEEN_SPAN, len(head)))
        tail = handle.read(_SEEN_SPAN)
    return hashlib.blake2b(b"%d\0%b\0%b" % (size, head, tail), digest_size=16).hexdigest()


def _regular(path: Path) -> bool:
    return S_ISREG(os.stat(path).st_mode)


def _stat_fields(path: Path) -> list[int]:
    """What identifies one version of a file without reading it (``os.stat``, nanoseconds)."""
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def _aged(stat: list[int], hashed_at_ns: int) -> bool:
    """Whether the file's last change lies before the hashing by more than one timestamp tick."""
    _, mtime_ns, ctime_ns, _, _ = stat
    return max(mtime_ns, ctime_ns) < hashed_at_ns - RACY_WINDOW_NS


def _entry_from_payload(payload: Any) -> CachedScores:
    """The entry a payload holds; a ``ValueError`` for one no evaluation could have written.

    An evaluated run always scores at least one topic (a run sharing none with the qrels is an error),
    and every score is a finite number: an entry without scores (it would score the system 0 on every
    topic, and the warnings would blame the qrels), with NaN or infinity, or with another number of scores
    than topics is a miss.
    """
    topics = payload["topics"]
    scores = decoded_array(payload["scores"])
    if not isinstance(topics, list) or not topics or set(map(type, topics)) != {str}:  # at C speed
        raise ValueError("malformed cache entry")
    if not np.isfinite(scores).all():
        raise ValueError("a cache entry with a score that is not a finite number")
    return CachedScores(
        run_name=str(payload["run_name"]),
        per_topic=TopicScores(tuple(topics), scores.astype(float)),  # TopicScores checks the lengths agree
        ignored_topics=tuple(str(topic) for topic in payload["ignored_topics"]),
    )
