"""ScoreCache through MatrixBuilder: hits skip parsing, content changes miss, broken entries never fail.

``read_run_columns`` and ``evaluate_run`` are counted where the matrix module calls them, so a hit is seen
to parse nothing. Cache entries are JSON files below ``<folder>/v1/``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import multiprocessing
import os
import shutil
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import pytest_bvtest.io.runs
import pytest_bvtest.scoring.cache
import pytest_bvtest.scoring.matrix
from pytest_bvtest import DEFAULT_CACHE_DIR
from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.scoring.cache import CachedScores, CacheWriteWarning, ScoreCache
from pytest_bvtest.scoring.matrix import MatrixBuilder, ScoreMatrix
from pytest_bvtest.scoring.measures import evaluate_run
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.spec.model import RunFile
from tests.conftest import shared_path
from tests.test_matrix import QRELS, RUN, write

AP, NDCG10 = parse_measure("AP"), parse_measure("nDCG@10")
CONCURRENT_SEED = 20240611


@pytest.fixture
def parsed(monkeypatch) -> list[Path]:
    """The run files the matrix module parses, in call order."""
    calls: list[Path] = []
    real_read_run_columns = pytest_bvtest.scoring.matrix.read_run_columns
    real_read_run_column_chunks = pytest_bvtest.scoring.matrix.read_run_column_chunks

    def counting_read_run_columns(path, **options):
        calls.append(Path(path))
        return real_read_run_columns(path, **options)

    def counting_read_run_column_chunks(path, **options):  # a regular run grouped by topic, read in chunks
        yield from real_read_run_column_chunks(path, **options)
        calls.append(Path(path))  # read through (one that is not is read again whole, and counted there)

    monkeypatch.setattr(pytest_bvtest.scoring.matrix, "read_run_columns", counting_read_run_columns)
    monkeypatch.setattr(pytest_bvtest.scoring.matrix, "read_run_column_chunks", counting_read_run_column_chunks)
    return calls


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Synthetic qrels and a run with a missing topic (C) and two ignored ones (Z, X)."""
    return write(tmp_path / "qrels.txt", QRELS), write(tmp_path / "sys.run", RUN)


def entries(folder: Path) -> list[Path]:
    """The score entries and any temporary file below ``folder``, not the files' stat records and seen marks nor the
    stored swaps and their products."""
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file()
        and not is_stat_record(path)
        and not is_seen_mark(path)
        and not path.name.endswith((".bits", ".f8"))
    )


def is_seen_mark(path: Path) -> bool:
    return path.parent.name == "seen" and not path.name.startswith(".") and path.stat().st_size == 0


def is_stat_record(path: Path) -> bool:
    return path.parent.name == "stat" and path.name.endswith(".json") and not path.name.startswith(".")


def build(qrels: Path, run: RunFile, folder: Path | None, measures=(AP,)) -> tuple[dict, ScoreCache]:
    """Evaluate as a fresh process would: a new builder and a new cache object on ``folder``."""
    cache = ScoreCache(folder)
    return MatrixBuilder.from_qrels_file(qrels, cache).build(list(measures), [run]), cache


def assert_same_matrix(first: ScoreMatrix, second: ScoreMatrix) -> None:
    assert (first.measure, first.systems, first.topics) == (second.measure, second.systems, second.topics)
    assert np.array_equal(first.scores, second.scores)
    assert np.array_equal(first.imputed, second.imputed)
    assert first.ignored_topics == second.ignored_topics


def test_second_evaluation_hits_and_does_not_parse_the_run(tmp_path, parsed):
    """trec_eval's results.test: the cached per-topic map is out.test.aq's (0.0324, 0.4175, 0.0858)."""
    folder = shared_path("trec_eval_test")
    run = RunFile(folder / "results.test")
    first, cold = build(folder / "qrels.test", run, tmp_path / "cache", (AP, NDCG10))
    assert (cold.hits, cold.misses, len(parsed)) == (0, 2, 1)
    assert len(entries(tmp_path / "cache")) == 2

    second, warm = build(folder / "qrels.test", run, tmp_path / "cache", (AP, NDCG10))
    assert (warm.hits, warm.misses, len(parsed)) == (2, 0, 1)
    for measure in (AP, NDCG10):
        assert_same_matrix(first[measure], second[measure])
    assert second[AP].systems == ("STANDARD",)
    assert np.abs(second[AP].scores[0] - [0.0324, 0.4175, 0.0858]).max() <= 0.5e-4


def test_a_hit_keeps_missing_and_ignored_topics(tmp_path, files, parsed):
    qrels, run_file = files
    first, _ = build(qrels, RunFile(run_file, name="renamed"), tmp_path / "cache")
    second, warm = build(qrels, RunFile(run_file, name="renamed"), tmp_path / "cache")
    assert (warm.hits, len(parsed)) == (1, 1)
    assert_same_matrix(first[AP], second[AP])
    assert second[AP].systems == ("renamed",)
    assert second[AP].missing_topics("renamed") == ("C",)
    assert second[AP].ignored_topics == {"renamed": ("Z", "X")}


def test_an_edited_run_file_is_evaluated_again(tmp_path, files, parsed):
    qrels, run_file = files
    before, _ = build(qrels, RunFile(run_file), tmp_path / "cache")
    # Same path and size, scores swapped: a1 now ranks first in topic A.
    run_file.write_text(RUN.replace("a2 1 3.0", "a2 1 2.0").replace("a1 2 2.0", "a1 2 3.0"))
    after, cache = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert (cache.hits, len(parsed)) == (0, 2)
    assert before[AP].scores.tolist() == [[1.0, 0.5, 0.0]]
    assert after[AP].scores.tolist() == [[1.0, 1.0, 0.0]]
    # The first content is still cached under its own digest.
    run_file.write_text(RUN)
    again, cache = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert (cache.hits, len(parsed)) == (1, 2)
    assert_same_matrix(before[AP], again[AP])


def test_only_the_measures_not_cached_are_evaluated(tmp_path, files, monkeypatch):
    qrels, run_file = files
    evaluated: list[list[str]] = []
    real_evaluate_run = pytest_bvtest.scoring.matrix.evaluate_run_documents

    def recording_evaluate_run(qrels_, run_, measures, depth=0):
        evaluated.append([str(measure) for measure in measures])
        return real_evaluate_run(qrels_, run_, measures, depth)

    monkeypatch.setattr(pytest_bvtest.scoring.matrix, "evaluate_run_documents", recording_evaluate_run)
    build(qrels, RunFile(run_file), tmp_path / "cache", (AP,))
    both, cache = build(qrels, RunFile(run_file), tmp_path / "cache", (AP, NDCG10))
    assert evaluated == [["AP"], ["nDCG@10"]]
    assert (cache.hits, cache.misses) == (1, 1)
    assert list(both) == [AP, NDCG10]


def rewritten(data: bytes, **fields: object) -> bytes:
    return json.dumps({**json.loads(data), **fields}).encode()


def first_score(data: bytes, value: float) -> bytes:
    """The entry with its first score replaced by ``value`` (the scores are base64 float64)."""
    scores = np.frombuffer(base64.b64decode(json.loads(data)["scores"]), dtype="<f8").copy()
    scores[0] = value
    return rewritten(data, scores=base64.b64encode(scores.tobytes()).decode())


CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "not UTF-8": lambda data: b"\xff\xfe\x00\x81" + data,
    "a list": lambda data: b"[]",
    "null": lambda data: b"null",
    "text scores": lambda data: rewritten(data, scores="high"),
    "scores not base64": lambda data: rewritten(data, scores="*" * 16),
    "numbers as scores": lambda data: rewritten(data, scores=[1.0, 2.0]),
    # before: a NaN stopped the run naming no file; an entry without scores scored the system 0 everywhere
    "a NaN score": lambda data: first_score(data, float("nan")),
    "an infinite score": lambda data: first_score(data, float("-inf")),
    "no scores": lambda data: rewritten(data, topics=[], scores=""),
    "a topic more than scores": lambda data: rewritten(data, topics=[*json.loads(data)["topics"], "9999"]),
    "a topic that is a number": lambda data: rewritten(data, topics=[7, *json.loads(data)["topics"][1:]]),
    "missing key": lambda data: json.dumps(
        {k: v for k, v in json.loads(data).items() if k != "ignored_topics"}
    ).encode(),
}


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path, files, parsed, corruption):
    qrels, run_file = files
    expected, _ = build(qrels, RunFile(run_file), tmp_path / "cache")
    (entry,) = entries(tmp_path / "cache")
    original = entry.read_bytes()
    entry.write_bytes(CORRUPTIONS[corruption](original))
    assert entry.read_bytes() != original

    recovered, cache = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert (cache.hits, cache.misses, len(parsed)) == (0, 1, 2)
    assert_same_matrix(expected[AP], recovered[AP])
    assert entry.read_bytes() == original
    _, cache = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert (cache.hits, len(parsed)) == (1, 2)


def test_an_entry_that_is_a_folder_is_a_miss_and_not_fatal(tmp_path, files, parsed):
    qrels, run_file = files
    expected, _ = build(qrels, RunFile(run_file), tmp_path / "cache")
    (entry,) = entries(tmp_path / "cache")
    entry.unlink()
    entry.mkdir()
    for _ in range(2):
        with pytest.warns(CacheWriteWarning, match="cannot write this file: it is a folder"):
            recovered, cache = build(qrels, RunFile(run_file), tmp_path / "cache")
        assert (cache.hits, cache.misses) == (0, 1)
        assert_same_matrix(expected[AP], recovered[AP])
    assert len(parsed) == 3


@pytest.mark.parametrize("blocked", ["a file", "a file below", "read-only"])
def test_an_unwritable_cache_folder_does_not_fail_the_evaluation(tmp_path, files, parsed, blocked):
    qrels, run_file = files
    folder = tmp_path / "cache"
    if blocked == "a file":
        folder.write_text("not a folder")
    elif blocked == "a file below":
        folder.mkdir()
        (folder / "v3").write_text("not a folder")  # the layout folder of cache entries
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        folder.mkdir()
        folder.chmod(0o500)
    try:
        for _ in range(2):
            with pytest.warns(CacheWriteWarning, match=f"score cache not written, going on without it: {folder}"):
                matrices, cache = build(qrels, RunFile(run_file), folder)
            assert (cache.hits, cache.misses) == (0, 1)
            assert matrices[AP].scores.tolist() == [[1.0, 0.5, 0.0]]
    finally:
        if folder.is_dir():
            folder.chmod(0o700)
    assert len(parsed) == 2


def test_another_measure_qrels_or_tag_misses(tmp_path, files, parsed):
    qrels, run_file = files
    folder = tmp_path / "cache"
    build(qrels, RunFile(run_file), folder, (AP,))
    _, cache = build(qrels, RunFile(run_file), folder, (parse_measure("AP(rel=2)"),))
    assert (cache.hits, len(parsed)) == (0, 2)

    # Same judgments under another name: keyed by content, a hit.
    renamed = tmp_path / "copy" / "qrels.txt"
    renamed.parent.mkdir()
    shutil.copy(qrels, renamed)
    _, cache = build(renamed, RunFile(run_file), folder, (AP,))
    assert (cache.hits, len(parsed)) == (1, 2)

    # One grade changed: a1 is no longer relevant, topic A leaves the universe.
    edited = write(tmp_path / "edited.txt", QRELS.replace("A 0 a1 2", "A 0 a1 0"))
    matrices, cache = build(edited, RunFile(run_file), folder, (AP,))
    assert (cache.hits, len(parsed)) == (0, 3)
    assert matrices[AP].topics == ("B", "C")

    two_tags = write(tmp_path / "two_tags.run", RUN + RUN.replace("a2 1 3.0", "a2 1 1.0").replace(" sys", " other"))
    by_tag = {}
    for tag in ("sys", "other", "sys"):
        matrices, cache = build(qrels, RunFile(two_tags, tag=tag), folder, (AP,))
        by_tag.setdefault(tag, []).append((cache.hits, matrices[AP].row(tag).tolist()))
    assert by_tag == {"sys": [(0, [1.0, 0.5, 0.0]), (1, [1.0, 0.5, 0.0])], "other": [(0, [1.0, 1.0, 0.0])]}
    assert len(parsed) == 5


def test_the_key_changes_with_every_part():
    parts = ("run-digest", "qrels-digest", "AP", None)
    key = ScoreCache.key(*parts)
    assert key == ScoreCache.key(*parts)
    variants = [
        ("other-run", "qrels-digest", "AP", None),
        ("run-digest", "other-qrels", "AP", None),
        ("run-digest", "qrels-digest", "AP(rel=2)", None),
        ("run-digest", "qrels-digest", "AP", "tag"),
    ]
    assert len({key, *(ScoreCache.key(*variant) for variant in variants)}) == 5


def test_the_key_changes_with_the_package_version(monkeypatch):
    key = ScoreCache.key("run", "qrels", "AP", None)
    monkeypatch.setattr(pytest_bvtest.scoring.cache, "__version__", "0.0.0+other")
    assert ScoreCache.key("run", "qrels", "AP", None) != key


def test_a_disabled_cache_never_writes(tmp_path, files, parsed, monkeypatch):
    qrels, run_file = files
    monkeypatch.chdir(tmp_path)

    def no_writes(*_):
        raise AssertionError("a disabled cache wrote an entry")

    monkeypatch.setattr(pytest_bvtest.scoring.cache, "atomic_write_text", no_writes)
    before = entries(tmp_path)
    for cache in (ScoreCache(None), None):
        for _ in range(2):
            matrices = MatrixBuilder.from_qrels_file(qrels, cache).build([AP], [RunFile(run_file)])
            assert matrices[AP].scores.tolist() == [[1.0, 0.5, 0.0]]
    disabled = ScoreCache(None)
    disabled.put(ScoreCache.key("run", "qrels", "AP", None), CachedScores("x", {"B": 1.0}, ()))
    assert disabled.get(ScoreCache.key("run", "qrels", "AP", None)) is None
    assert not disabled.enabled and (disabled.hits, disabled.misses) == (0, 0)
    assert entries(tmp_path) == before
    assert not (tmp_path / DEFAULT_CACHE_DIR).exists()
    assert len(parsed) == 4


def test_in_memory_qrels_are_not_cached(tmp_path, files, parsed):
    """Without a qrels file there is no content digest to key on."""
    qrels, run_file = files
    judgments = read_qrels(qrels).judgments
    in_memory = Qrels(judgments=judgments)
    cache = ScoreCache(tmp_path / "cache")
    for _ in range(2):
        MatrixBuilder(in_memory, cache).build([AP], [RunFile(run_file)])
    assert (cache.hits, cache.misses, len(parsed)) == (0, 0, 2)
    assert not (tmp_path / "cache").exists()


def _write_concurrent_data(folder: Path) -> tuple[Path, Path]:
    """A seeded run of 300 topics x 200 documents and qrels of 1-5 judgments per topic."""
    rng = np.random.default_rng(CONCURRENT_SEED)
    run_lines, qrels_lines = [], []
    for topic in range(300):
        scores = rng.normal(size=200)
        run_lines += [
            f"q{topic} Q0 d{doc} {rank} {score:.6f} concurrent"
            for rank, (doc, score) in enumerate(zip(range(200), scores), 1)
        ]
        for doc in rng.choice(400, size=rng.integers(1, 6), replace=False):
            qrels_lines.append(f"q{topic} 0 d{doc} {rng.integers(0, 3)}")
    return write(folder / "qrels.txt", "\n".join(qrels_lines) + "\n"), write(
        folder / "run.txt", "\n".join(run_lines) + "\n"
    )


def _evaluate_after_barrier(barrier, results, qrels: Path, run: Path, folder: Path) -> None:
    """Report (pid, cache misses, values), or (pid, None, the traceback) so the test never waits for a dead worker."""
    try:
        barrier.wait(timeout=60)
        matrices, cache = build(qrels, RunFile(run), folder, (AP, NDCG10))
        results.put(
            (os.getpid(), cache.misses, {str(measure): matrix.scores.tolist() for measure, matrix in matrices.items()})
        )
    except BaseException:
        results.put((os.getpid(), None, traceback.format_exc()))


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_writing_the_same_entries_at_once_all_succeed(tmp_path, processes):
    """``processes`` workers released together evaluate one run into one empty cache folder, three
    times over with a fresh folder; every worker succeeds with the same values, and the entries left
    behind are complete JSON equal to an uncached evaluation."""
    context = multiprocessing.get_context("fork")
    qrels, run = _write_concurrent_data(tmp_path)
    judgments, rankings = read_qrels(qrels), read_run(run)
    expected = evaluate_run(judgments, rankings, [AP, NDCG10])
    ignored = [topic for topic in rankings.scores if topic not in judgments.evaluated_topics()]
    assert 0 < len(ignored) < 300
    concurrent_writers = []
    for round_number in range(3):
        folder = tmp_path / f"cache{round_number}"
        barrier, results = context.Barrier(processes), context.Queue()
        workers = [
            context.Process(target=_evaluate_after_barrier, args=(barrier, results, qrels, run, folder))
            for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        reported = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        assert [worker.exitcode for worker in workers] == [0] * processes
        assert [values for _, misses, values in reported if misses is None] == []
        assert len({pid for pid, _, _ in reported}) == processes
        concurrent_writers.append(sum(misses == 2 for _, misses, _ in reported))
        assert all(
            values == {str(measure): [list(expected[measure].values())] for measure in expected}
            for _, _, values in reported
        )
        written = entries(folder)
        assert len(written) == 2, written  # complete entries, no temporary file left behind
        stored = [json.loads(path.read_text()) for path in written]
        assert all(payload["run_name"] == "concurrent" and payload["ignored_topics"] == ignored for payload in stored)
        per_topic = [
            dict(zip(payload["topics"], np.frombuffer(base64.b64decode(payload["scores"]), dtype="<f8").tolist()))
            for payload in stored
        ]
        assert sorted(per_topic, key=str) == sorted(expected.values(), key=str)
    # Released together, the workers all looked the entries up before any was written, at least once.
    assert max(concurrent_writers) >= 2


@pytest.fixture
def hashed(monkeypatch) -> list[Path]:
    """The files the cache reads to hash them, in call order."""
    calls: list[Path] = []
    real_file_digest = pytest_bvtest.scoring.cache.file_digest

    def counting_file_digest(path):
        calls.append(Path(path))
        return real_file_digest(path)

    monkeypatch.setattr(pytest_bvtest.scoring.cache, "file_digest", counting_file_digest)
    return calls


def test_an_unchanged_aged_file_is_not_read_again(tmp_path, hashed, monkeypatch):
    monkeypatch.setattr(pytest_bvtest.scoring.cache, "RACY_WINDOW_NS", 0)  # the file counts as aged at once
    path = write(tmp_path / "sys.run", RUN)
    time.sleep(0.05)  # past the kernel's timestamp tick
    first = ScoreCache(tmp_path / "cache").file_digest(path)
    second = ScoreCache(tmp_path / "cache").file_digest(path)
    assert first == second == hashlib.sha256(RUN.encode()).hexdigest()
    assert hashed == [path.absolute()]
    assert [record.name.endswith(".json") for record in (tmp_path / "cache").rglob("*") if is_stat_record(record)] == [
        True
    ]


def test_an_edit_keeping_size_and_modification_time_is_seen(tmp_path, hashed, monkeypatch):
    """os.utime can restore the modification time, never the status-change time: the record is stale."""
    monkeypatch.setattr(pytest_bvtest.scoring.cache, "RACY_WINDOW_NS", 0)
    path = write(tmp_path / "sys.run", RUN)
    time.sleep(0.05)
    before = path.stat()
    assert ScoreCache(tmp_path / "cache").file_digest(path) == hashlib.sha256(RUN.encode()).hexdigest()
    time.sleep(0.05)
    edited = RUN.replace("a2 1 3.0", "a2 1 2.0").replace("a1 2 2.0", "a1 2 3.0")
    path.write_text(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert ScoreCache(tmp_path / "cache").file_digest(path) == hashlib.sha256(edited.encode()).hexdigest()
    assert len(hashed) == 2


def test_a_file_edited_within_the_racy_window_is_hashed_on_every_lookup(tmp_path, files, parsed, hashed):
    """With the default window a fresh file's record is never trusted, so no clock tick can hide an edit. The edited
    file (its 64 KiB head changed) was never seen: it is read again, hashed as it is read, and not hashed apart."""
    qrels, run_file = files
    before, _ = build(qrels, RunFile(run_file), tmp_path / "cache")
    status = run_file.stat()
    run_file.write_text(RUN.replace("a2 1 3.0", "a2 1 2.0").replace("a1 2 2.0", "a1 2 3.0"))
    os.utime(run_file, ns=(status.st_atime_ns, status.st_mtime_ns))
    after, cache = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert before[AP].scores.tolist() == [[1.0, 0.5, 0.0]]
    assert after[AP].scores.tolist() == [[1.0, 1.0, 0.0]]
    assert (cache.hits, len(parsed)) == (0, 2)
    assert hashed.count(run_file.absolute()) == 0


def test_a_new_run_is_read_once_and_hashed_as_it_is_read(tmp_path, files, parsed, hashed):
    """A run file the cache never saw was hashed, looked up (a miss) and then read: two passes over a 321 MB run. Now it
    is read once, hashed as it is read, and its digest is known afterwards (the report's inputs ask for it)."""
    qrels, run_file = files
    first, cold = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert (cold.hits, cold.misses, len(parsed), len(hashed)) == (0, 1, 1, 0)
    assert cold.file_digest(run_file) == hashlib.sha256(run_file.read_bytes()).hexdigest() and not hashed
    # the next check (its stat record still racy) hashes the file it has seen, and finds its scores
    second, warm = build(qrels, RunFile(run_file), tmp_path / "cache")
    assert (warm.hits, len(parsed), hashed) == (1, 1, [run_file.absolute()])
    assert_same_matrix(first[AP], second[AP])


def test_a_cache_written_before_the_seen_marks_is_looked_up_by_hashing(tmp_path, files, parsed, hashed):
    """A cache of entries without marks (an older version's, restored in CI on an exact key and never saved again)
    holds the scores of files it has no mark of: they are hashed and found, not read again on every run."""
    qrels, run_file = files
    first, _ = build(qrels, RunFile(run_file), tmp_path / "cache")
    shutil.rmtree(tmp_path / "cache" / "v3" / "seen")
    copy = tmp_path / "checkout" / "sys.run"  # a fresh runner's checkout: no stat record matches it
    copy.parent.mkdir()
    shutil.copyfile(run_file, copy)
    again, cache = build(qrels, RunFile(copy), tmp_path / "cache")
    assert (cache.hits, len(parsed), hashed) == (1, 1, [copy.absolute()])
    assert_same_matrix(first[AP], again[AP])
    assert (tmp_path / "cache" / "v3" / "seen").is_dir()  # marked from now on


def test_a_copy_of_a_cached_run_is_hashed_and_found_and_a_lookalike_is_read(tmp_path, files, parsed, hashed):
    """A cached run copied elsewhere (a fresh CI runner's checkout: no stat record matches it) is seen by its size,
    head and tail, hashed and found; a run of the same size, head and tail but another middle is hashed, missed and
    read, its own scores."""
    qrels, _ = files
    lines = [f"A Q0 filler{k:06d} {k + 3} {1 / (k + 3):.8f} sys\n" for k in range(6000)]  # about 270 KB
    head = "A Q0 a2 1 3.0 sys\nA Q0 a1 2 2.0 sys\n"
    run_file = write(tmp_path / "big.run", head + "".join(lines))
    first, _ = build(qrels, RunFile(run_file), tmp_path / "cache")
    copy = tmp_path / "elsewhere" / "big.run"
    copy.parent.mkdir()
    shutil.copyfile(run_file, copy)
    again, cache = build(qrels, RunFile(copy), tmp_path / "cache")
    assert (cache.hits, len(parsed), hashed) == (1, 1, [copy.absolute()])
    assert_same_matrix(first[AP], again[AP])
    middle = len(lines) // 2
    lines[middle] = lines[middle].replace(f"filler{middle:06d}", f"a1{'x' * 10}")  # the same length
    lookalike = write(tmp_path / "lookalike.run", head + "".join(lines))
    assert lookalike.stat().st_size == run_file.stat().st_size
    other, cache = build(qrels, RunFile(lookalike), tmp_path / "cache")
    assert (cache.hits, len(parsed), hashed[-1]) == (0, 2, lookalike.absolute())
    assert_same_matrix(other[AP], build(qrels, RunFile(lookalike), None)[0][AP])


@pytest.mark.parametrize("folder", ["cache", None])
def test_one_cache_hashes_a_young_file_once_while_its_stat_is_unchanged(tmp_path, hashed, folder):
    """A run written just before the gate is racy for two seconds: one evaluation looked its digest up three times
    and hashed it each time (0.8 s for a 321 MB run). An edit that changes its stat fields is hashed again."""
    path = write(tmp_path / "sys.run", RUN)
    cache = ScoreCache(None if folder is None else tmp_path / folder)
    digests = {cache.file_digest(path) for _ in range(3)}
    assert digests == {hashlib.sha256(RUN.encode()).hexdigest()} and hashed == [path.absolute()]
    path.write_text(RUN + "q9 Q0 extra 1 0.5 sys\n")
    assert cache.file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(hashed) == 2


def test_the_digest_without_a_cache_folder_is_the_file_digest(tmp_path, hashed):
    path = write(tmp_path / "sys.run", RUN)
    assert ScoreCache(None).file_digest(path) == hashlib.sha256(RUN.encode()).hexdigest()
    assert hashed == [path.absolute()] and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("damage", [b"NaN", b"Infinity", b"{}"], ids=["NaN", "infinite", "empty"])
def test_bvtest_check_reads_past_implausible_entries_to_the_same_verdict(tmp_path, damage, capsys):
    """The example project's gate, its cache entries damaged between two `bvtest check` runs."""
    from pytest_bvtest.cli import main

    project = tmp_path / "project"
    example = Path(__file__).resolve().parents[1] / "example_project"
    shutil.copytree(example, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))
    assert main(["check", str(project / "bvtest.yaml"), "--json", str(tmp_path / "first.json")]) == 0
    stored = entries(project / DEFAULT_CACHE_DIR)
    # 3 baselines and the candidate: 2 measures each, and beside them Judged@10, the unjudged count, nDCG@10+ and AP+;
    # each run's ranked documents, which the corners read, and the near ranks of the candidate's and the reference's
    # (the rank support's); and the gates' power
    held = {entry: json.loads(entry.read_text()) for entry in stored}
    documents = [entry for entry, payload in held.items() if "lengths" in payload.get("chunks", [{}])[0]]
    near = [entry for entry, payload in held.items() if "chunks" in payload and entry not in documents]
    power = [entry for entry, payload in held.items() if "facts" in payload]
    stored = [entry for entry in stored if entry not in {*documents, *near, *power}]
    assert (len(stored), len(documents), len(near), len(power)) == (4 * 6, 4, 2, 1)
    for entry in stored:
        data = entry.read_bytes()
        damaged = rewritten(data, topics=[], scores="") if damage == b"{}" else first_score(data, float(damage))
        entry.write_bytes(damaged)
    assert main(["check", str(project / "bvtest.yaml"), "--json", str(tmp_path / "second.json")]) == 0
    first, second = (json.loads((tmp_path / name).read_text()) for name in ("first.json", "second.json"))
    assert [evaluation["gates"] for evaluation in first["evaluations"]] == [
        evaluation["gates"] for evaluation in second["evaluations"]
    ]
    assert "warning" not in capsys.readouterr().err


def test_near_ranks_missing_from_the_cache_are_read_once_and_kept(tmp_path, monkeypatch):
    """The reference's near ranks (what the rank support of the plausible gradings reads) are cached when it is
    evaluated. A cache without them (written by an older layout, whose entries are not read) had every later check
    read the reference's run for them again, its scores being cached: now the first such check stores them."""
    from pytest_bvtest.cli import main
    from tests.test_plausible import harmed_run

    project = tmp_path / "project"
    example = Path(__file__).resolve().parents[1] / "example_project"
    shutil.copytree(example, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))
    monkeypatch.chdir(project)
    shuffled = harmed_run(project / "runs" / "production.run", tmp_path / "shuffled.run", "shuffle")
    spec, cache = str(project / "bvtest.yaml"), project / DEFAULT_CACHE_DIR

    def near_entries() -> list[Path]:
        held = {entry: json.loads(entry.read_text()) for entry in entries(cache)}
        return sorted(
            entry
            for entry, payload in held.items()
            if isinstance(payload.get("chunks"), list) and "lengths" not in payload["chunks"][0]
        )

    assert main(["check", spec, "--json", str(tmp_path / "first.json")]) == 0
    kept = near_entries()
    assert len(kept) == 2  # the candidate's and production's
    for entry in kept:
        entry.unlink()
    reads = []
    for reader in ("read_well_formed_run", "read_well_formed_chunks"):  # every reading of a run, whole or in chunks
        real = getattr(pytest_bvtest.io.runs, reader)
        monkeypatch.setattr(
            pytest_bvtest.io.runs,
            reader,
            lambda path, *args, real=real, **options: reads.append(Path(path).name) or real(path, *args, **options),
        )
    assert main(["check", spec, "--run", str(shuffled), "--json", str(tmp_path / "second.json")]) == 1
    assert reads == ["shuffled.run", "production.run"]  # the new candidate, and production's near ranks, once
    # production's kept again, under the name it had (the candidate-pass run's is not asked for)
    assert len({entry.name for entry in kept} & {entry.name for entry in near_entries()}) == 1
    reads.clear()
    shuffled.write_text(shuffled.read_text().replace(" shuffle\n", " shuffled\n"))  # another new candidate
    assert main(["check", spec, "--run", str(shuffled), "--json", str(tmp_path / "third.json")]) == 1
    assert reads == ["shuffled.run"]
    second, third = (json.loads((tmp_path / name).read_text()) for name in ("second.json", "third.json"))
    assert [evaluation["gates"] for evaluation in second["evaluations"]] == [
        evaluation["gates"] for evaluation in third["evaluations"]
    ]


def test_qrels_replaced_after_they_were_read_file_their_scores_under_what_was_read(tmp_path, files):
    """The qrels were read first and hashed by path afterwards: replaced in between, the old qrels' scores were cached
    under the new file's hash, and every later run reported them (issue 22)."""
    qrels_path, run_file = files
    read_before = read_qrels(qrels_path)  # the gate has read the qrels...
    qrels_path.write_text(
        QRELS.replace("A 0 a1 2", "A 0 a1 0").replace("A 0 a2 0", "A 0 a2 1")
    )  # ...then CI replaced them
    stale = MatrixBuilder(read_before, ScoreCache(tmp_path / "cache")).build([AP], [RunFile(run_file)])
    assert stale[AP].scores.tolist() == [[1.0, 0.5, 0.0]]  # topics B, A, C; A as read: the relevant a1 at rank 2
    fresh, cache = build(qrels_path, RunFile(run_file), tmp_path / "cache")
    assert cache.hits == 0  # the new qrels miss: before, they hit the entry of the old ones
    assert fresh[AP].scores.tolist() == [[1.0, 1.0, 0.0]]  # now a2, at rank 1, is the relevant one


def test_a_run_replaced_between_its_lookup_and_its_reading_is_not_cached_under_the_digest_looked_up(
    tmp_path, files, monkeypatch
):
    """The bytes read are those hashed for the lookup only while the file's stat is unchanged: a run replaced in
    between is scored as read and not cached (not hashed again while it is read: 0.16 s for a 321 MB run)."""
    qrels_path, run_file = files
    original = run_file.read_text()
    swapped = original.replace("a2 1 3.0", "a2 1 2.0").replace("a1 2 2.0", "a1 2 3.0")  # a1 first in topic A
    real_read_run_column_chunks = pytest_bvtest.scoring.matrix.read_run_column_chunks

    def replaced_before_reading(path, **options):  # a regular run grouped by topic, read in chunks
        run_file.write_text(swapped)  # the run changes after its digest was looked up
        yield from real_read_run_column_chunks(path, **options)

    with monkeypatch.context() as patch:
        patch.setattr(pytest_bvtest.scoring.matrix, "read_run_column_chunks", replaced_before_reading)
        first, _ = build(qrels_path, RunFile(run_file), tmp_path / "cache")
    assert first[AP].scores.tolist() == [[1.0, 1.0, 0.0]]  # the swapped run's scores
    run_file.write_text(original)
    again, cache = build(qrels_path, RunFile(run_file), tmp_path / "cache")
    assert cache.hits == 0  # before: the swapped run's scores came back under the original's digest
    assert again[AP].scores.tolist() == [[1.0, 0.5, 0.0]]
    run_file.write_text(swapped)  # the first build stored nothing
    swapped_again, cache = build(qrels_path, RunFile(run_file), tmp_path / "cache")
    assert cache.hits == 0 and swapped_again[AP].scores.tolist() == [[1.0, 1.0, 0.0]]
    _, cache = build(qrels_path, RunFile(run_file), tmp_path / "cache")
    assert cache.hits == 1  # read unchanged this time: cached
