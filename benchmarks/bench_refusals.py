"""How fast, and in how much memory, hostile or mistaken inputs are refused.

A refusal that takes minutes or gigabytes is a hang or a crash to the user. The unit tests check *that*
each of these is refused with its one-line message (tests/test_awkward_inputs.py); this script measures
*how fast* and in how much memory, as wall time and the peak of Python's allocations (``tracemalloc``):

- a YAML alias bomb (nine levels of nine aliases: 387 million values if expanded) as a spec;
- a spec, a run and qrels that are devices (``/dev/zero``, ``/dev/urandom``), a FIFO nobody writes, or a
  folder.

Run it as a module from the repository root::

    python -m benchmarks.bench_refusals
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run_columns
from pytest_bvtest.spec.reader import load_spec


def alias_bomb(folder: Path) -> Path:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    levels += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)]
    path = folder / "bvtest.yaml"
    path.write_text("\n".join(levels) + "\n")
    return path


def special_paths(folder: Path) -> dict[str, Path]:
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    (folder / "folder").mkdir()
    return {
        "/dev/zero": Path("/dev/zero"),
        "/dev/urandom": Path("/dev/urandom"),
        "FIFO": fifo,
        "folder": folder / "folder",
    }


READERS: dict[str, Callable[[Path], object]] = {"spec": load_spec, "run": read_run_columns, "qrels": read_qrels}
#: A refusal slower than this is reported as a hang (the case runs in its own process, which is killed).
HANG_SECONDS = 30


def child(reader: str, path: str) -> None:
    """Refuse one input in this (fresh) process: print seconds, peak MB and the refusal's first words."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        READERS[reader](Path(path))
        said = "NOT REFUSED"
    except InputError as error:
        said = error.message[:60]
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    print(f"{elapsed:.3f}\t{peak:.1f}\t{said}")


def refusal(reader: str, path: Path) -> tuple[str, str, str]:
    command = [sys.executable, "-m", "benchmarks.bench_refusals", "--child", reader, str(path)]
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        return f">{HANG_SECONDS}", "-", "HANGS (killed)"
    seconds, peak, said = (finished.stdout.strip() or "-\t-\t" + finished.stderr.strip()[-60:]).split("\t", 2)
    return seconds, peak, said


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        rows = [("spec: YAML alias bomb", *refusal("spec", alias_bomb(folder)))]
        for kind, path in special_paths(folder).items():
            rows += [(f"{reader}: {kind}", *refusal(reader, path)) for reader in READERS]
    print(f"{'input':<24} {'seconds':>8} {'peak MB':>8}  refusal")
    for name, seconds, peak, said in rows:
        print(f"{name:<24} {seconds:>8} {peak:>8}  {said}")


if __name__ == "__main__":
    main()
