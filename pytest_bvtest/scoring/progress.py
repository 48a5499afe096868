"""A progress line on stderr for evaluations that take more than about a second.

The evaluation updates an :class:`EvaluationProgress` (runs evaluated, cache hits, the current
stage); :class:`ProgressLine` prints it from a background thread once ``delay`` seconds have passed:
rewritten in place on a terminal, a line every few seconds in a CI log, and a closing line with
the total time. A quick evaluation prints nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO


@dataclass
class EvaluationProgress:
    """What an evaluation has done so far; written by the evaluation, read by :class:`ProgressLine`."""

    runs_total: int = 0
    runs_done: int = 0
    cache_hits: int = 0
    stage: str = "evaluating runs"

    def text(self) -> str:
        return f"{self.stage}: {self.runs_done}/{self.runs_total} runs evaluated, {self.cache_hits} cache hits"


class ProgressLine:
    """Context manager: shows ``progress`` on ``stream`` while the block runs longer than ``delay`` seconds."""

    def __init__(
        self,
        label: str,
        progress: EvaluationProgress,
        stream: TextIO | None = None,
        *,
        delay: float = 1.0,
        interval: float | None = None,
    ) -> None:
        self.label = label
        self.progress = progress
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if interval is not None else (0.25 if self.interactive else 5.0)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bvtest-progress", daemon=True)
        self._shown = False
        self._start = 0.0

    def __enter__(self) -> ProgressLine:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()
        if self._shown:
            elapsed = time.monotonic() - self._start
            self._write(
                f"bvtest: {self.label}: {self.progress.runs_done} runs evaluated, "
                f"{self.progress.cache_hits} cache hits, done in {elapsed:.1f} s",
                final=True,
            )

    def _run(self) -> None:
        if self._done.wait(self.delay):
            return
        while True:
            self._shown = True
            elapsed = time.monotonic() - self._start
            self._write(f"bvtest: {self.label}: {self.progress.text()} ({elapsed:.0f} s)", final=False)
            if self._done.wait(self.interval):
                return

    def _write(self, text: str, *, final: bool) -> None:
        if self.interactive:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
