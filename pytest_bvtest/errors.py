"""User-facing errors.

Every mistake a user can make in an input file (a run, qrels, a per-topic table, a spec) raises
:class:`InputError`. Its string form is one line, ``FILE:LINE: what is wrong; what to do``, which
the command line prints on stderr (exit 2) and the pytest plugin shows as a failing item, never as
a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from os import PathLike

#: How much of a user's text an error message quotes: a bad 1 MB field must not become a 1 MB line.
EXCERPT_CHARS = 40
#: How many names (topics, systems, query ids) a message lists before "and N more".
LISTED_ITEMS = 10


#: A character no name of a spec may hold and no report shows as it is: the C0 and C1 controls and DEL (a newline
#: starts a line that GitHub Actions reads as a workflow command, ESC recolours a terminal), the line and paragraph
#: separators (a new line to some readers) and the bidirectional controls (they reorder what a reader sees).
CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

#: A mark that a CI runner reads as a command wherever it stands in a line of a job's log: GitHub Actions' first
#: syntax ``##[error]...``, Azure Pipelines' ``##vso[``, TeamCity's ``##teamcity[``. A gate's name is part of its
#: test id, which pytest prints as it is, so a spec's names may not hold one.
RUNNER_COMMAND_MARK = re.compile(r"##(?:vso|teamcity)?\[", flags=re.IGNORECASE)


def visible_controls(text: str, keep: str = "") -> str:
    """``text`` with each :data:`CONTROL_CHARACTER` but those in ``keep`` written as its escape, as ``repr`` writes
    it: ESC as ``\\x1b``, a newline as ``\\n``, a right-to-left override as ``\\u202e``."""
    return CONTROL_CHARACTER.sub(
        lambda match: (
            match.group() if match.group() in keep else match.group().encode("unicode_escape").decode("ascii")
        ),
        text,
    )


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)``, shortened to its first ``limit`` characters (and its length) when longer."""
    if not isinstance(value, str):
        shown = repr(value)
        return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(shown):,} characters)"
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def short_list(items: Sequence[str], limit: int = LISTED_ITEMS, rest: str = " and {} more") -> str:
    """The first ``limit`` items joined by ", ", then ``rest`` naming how many were left out (if any).

    Every message that names topics, systems or query ids lists them through this, so 10,000 missing
    topics make one readable line.
    """
    shown = ", ".join(items[:limit])
    left_out = len(items) - limit
    return shown + rest.format(left_out) if left_out > 0 else shown


class BvtestError(Exception):
    """Base class of every error pytest-bvtest reports to a user without a traceback."""


class InputError(BvtestError):
    """A problem in something the user supplied: a file, a spec key, a measure name, an option.

    Parameters
    ----------
    message:
        What is wrong, in the user's terms.
    path:
        The file it is in, if any.
    line:
        The 1-based line number within ``path``, if known.
    hint:
        What to do about it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.hint = hint
        super().__init__(str(self))

    @property
    def location(self) -> str:
        if self.path is None:
            return ""
        return self.path if self.line is None else f"{self.path}:{self.line}"

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}; {self.hint}" if self.hint else text


class StatisticError(BvtestError):
    """A statistic is undefined for the data given (for example GAWM with a single system)."""
