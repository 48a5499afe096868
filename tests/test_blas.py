"""The BLAS's threads under pytest (docs/benchmarks.md): a session of gates alone never starts a BLAS worker (each
spun about 0.1 s of CPU when it started, numpy's and scipy's: 0.22 s of a cached gate's 1.8 s), and the team's own
tests of a session get the thread count they would have had without the plugin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_bvtest import blas

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

# each BLAS library's threads and the process's threads (numpy and scipy loaded when asked, not before)
PROBE = (
    "import json, os\n"
    "def blas_threads():\n"
    "    import numpy, scipy.special\n"
    "    from threadpoolctl import threadpool_info\n"
    "    blas = [info['num_threads'] for info in threadpool_info() if info['user_api'] == 'blas']\n"
    "    return {'blas': sorted(blas), 'threads': len(os.listdir('/proc/self/task'))}\n"
)


def environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in blas.THREAD_VARIABLES}


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__", "tests", "reports"))
    (folder / "probe.py").write_text(
        PROBE + "def pytest_unconfigure(config):\n    print('PROBE', json.dumps(blas_threads()))\n"
    )
    return folder


def pytest_session(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "probe", "-s", *arguments],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**environment(), "PYTHONPATH": str(folder)},
    )


def probed(finished: subprocess.CompletedProcess[str]) -> dict[str, object]:
    (line,) = [line for line in finished.stdout.splitlines() if line.startswith("PROBE ")]
    return json.loads(line.removeprefix("PROBE "))


def fresh_threads() -> dict[str, object]:
    finished = subprocess.run(
        [sys.executable, "-c", PROBE + "print(json.dumps(blas_threads()))"],
        capture_output=True,
        text=True,
        env=environment(),
        check=True,
    )
    return json.loads(finished.stdout)


def test_a_session_of_gates_alone_runs_the_blas_on_one_thread_and_starts_no_worker(tmp_path: Path) -> None:
    finished = pytest_session(project(tmp_path), "bvtest.yaml")
    assert finished.returncode == 0, finished.stdout[-2000:]
    assert probed(finished) == {"blas": [1, 1], "threads": 1}  # numpy's and scipy's BLAS


def test_the_teams_own_tests_of_a_session_keep_the_blas_threads_they_would_have(tmp_path: Path) -> None:
    folder = project(tmp_path)
    expected = fresh_threads()["blas"]
    (folder / "test_team.py").write_text(
        PROBE + f"def test_the_blas_has_its_threads():\n    assert blas_threads()['blas'] == {expected!r}\n"
    )
    finished = pytest_session(folder, "bvtest.yaml", "test_team.py")
    assert finished.returncode == 0, finished.stdout[-2000:]
    assert probed(finished)["blas"] == expected


def test_the_environments_thread_count_is_left_alone(tmp_path: Path) -> None:
    folder = project(tmp_path)
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "probe", "-s", "bvtest.yaml"],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**environment(), "PYTHONPATH": str(folder), "OPENBLAS_NUM_THREADS": "2"},
    )
    assert finished.returncode == 0, finished.stdout[-2000:]
    assert probed(finished)["blas"] == [2, 2]


def test_a_library_call_evaluates_on_one_blas_thread_and_gives_the_threads_back(monkeypatch) -> None:
    """``evaluate_spec`` called from Python (a notebook, the team's own code) after numpy
    loaded on every core: the power's small products on two threads took 8 times the CPU on the example."""
    if blas.chosen_by_environment():
        import pytest

        pytest.skip("the environment chooses the BLAS's thread count")
    from threadpoolctl import threadpool_info, threadpool_limits

    from pytest_bvtest.judging import pipeline

    def blas_threads() -> list[int]:
        return sorted(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")

    seen: list[list[int]] = []
    evaluated = pipeline._evaluated

    def watched(*arguments):
        seen.append(blas_threads())
        return evaluated(*arguments)

    monkeypatch.setattr(pipeline, "_evaluated", watched)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        evaluation = pipeline.evaluate_spec(
            pipeline.spec_under_test(EXAMPLE / "bvtest.yaml", EXAMPLE / "runs" / "candidate-risky.run"),
            use_cache=False,
        )
        assert blas_threads() == before
    assert before and set(before) == {2}
    assert seen == [[1] * len(before)]
    assert [gate.outcome for gate in evaluation.gates] == ["OK"] * 5
