"""Numbers, shares, paths and names as every sentence of the reports writes them."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_bvtest import CANDIDATE_NAME

OUTCOMES = ("OK", "OK*", "UNDECIDED", "FAIL")


def format_number(value: float | str | None, decimals: int = 4) -> str:
    """``value`` with ``decimals`` decimals; ``-`` where a statistic is not computed (null); ``inf`` or
    ``-inf`` for the report's ``"Infinity"``/``"-Infinity"``."""
    return "-" if value is None else f"{float(value):.{decimals}f}"


def display_path(path: str) -> str:
    """``path`` relative to the current working directory when it lies inside it, else unchanged."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path


#: Up to this much past the limit is rounding, and the gate passes (as :data:`pytest_bvtest.judging.limits.TOLERANCE`).
_ROUNDING = 1e-12


def percent(rate: float | None) -> str:
    """``4.99%`` (three significant digits); ``undefined`` for a NaN or missing rate."""
    return "undefined" if rate is None or math.isnan(float(rate)) else f"{float(rate) * 100:.3g}%"


def short_number(value: float, other: float | None = None) -> str:
    """``value`` with 3 significant digits, more (up to 6) when needed to tell it from ``other``."""
    for digits in range(3, 7):
        text = f"{value:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return text


def _float(value: float | str | None) -> float | None:
    """A number of the document (``"Infinity"`` and ``"-Infinity"`` included) as a float; ``None`` stays."""
    return None if value is None else float(value)


def about(count: int) -> str:
    """``180`` for 183, ``1,200`` for 1,234: a count to two significant digits, for an estimate."""
    if count < 100:
        return str(count)
    digits = len(str(count)) - 2
    return f"{round(count, -digits):,}"


def _documents(count: int) -> str:
    return f"{count:,} unjudged document{'' if count == 1 else 's'}"


def _rounded_share(share: float) -> str:
    """A share of gradings as a percentage that never rounds to 100% or 0% unless it is: ``99.9%``, not ``100%``."""
    text = f"{share * 100:.0f}%"
    if text == "100%" and share < 1:
        text = f"{share * 100:.1f}%" if share < 0.9995 else ">99.9%"
    if text == "0%" and share > 0:
        text = f"{share * 100:.1f}%" if share >= 0.0005 else "<0.1%"
    return text


def _spec_path(gate: Mapping[str, Any]) -> str:
    """The path of a gate's spec from the working folder (the id names only its file, which a document without
    ``spec`` falls back to)."""
    return display_path(gate.get("spec") or gate["id"].split("::", 1)[0])


def _spec_of(gate: Mapping[str, Any]) -> str:
    """The spec of a gate as a command names it."""
    return shlex.quote(_spec_path(gate))


def figure(value: float | str | None, *others: float | str | None) -> str:
    """``value`` with 3 significant digits (trailing zeros kept: ``0.560``), more (up to 6) where needed to tell it
    from ``others``; ``-`` for a missing value."""
    if value is None:
        return "-"
    number = float(value)
    if not math.isfinite(number) or number == 0:
        return f"{number:g}"
    rest = [float(other) for other in others if other is not None and float(other) != number]
    for digits in range(3, 7):
        text = f"{number:#.{digits}g}".rstrip(".")
        if all(text != f"{other:#.{digits}g}".rstrip(".") for other in rest):
            return text
    return text


def _side(gate: Mapping[str, Any]) -> str:
    upper = gate["upper"] if "upper" in gate else (gate.get("bound") or {}).get("kind") in ("max", "max_increase")
    return "<=" if upper else ">="


def gate_name(document: Mapping[str, Any], gate: Mapping[str, Any]) -> str:
    """A gate's id without its spec file (``nDCG@10::trisk``) when the session has one spec, else whole."""
    specs = {evaluation["spec"] for evaluation in document["evaluations"]}
    return gate["id"].split("::", 1)[-1] if len(specs) <= 1 else gate["id"]


def _gates(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [gate for evaluation in document["evaluations"] for gate in evaluation["gates"]]


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def sentence_start(text: str, document: Mapping[str, Any]) -> str:
    """``text`` as a sentence on its own (the Markdown and HTML reports): its first letter raised, unless it starts
    with a system's name, which is written as the spec spells it (``bm25+rm3 against bm25``, not ``Bm25+rm3``); the
    default name of the run under test is a word and is raised."""
    names = {system["name"] for evaluation in document["evaluations"] for system in evaluation.get("systems") or []} - {
        CANDIDATE_NAME
    }
    if any(text.startswith(f"{name} ") for name in names):
        return text
    return text[:1].upper() + text[1:]


def _share_text(share: float) -> str:
    """A share as a whole percentage that says 99%, not 100%, for a gate that has not reached its limit."""
    return f"{min(share * 100, 99.0) if share < 1 else 100:.0f}%"


def _joined(texts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; repeated texts once."""
    unique = list(dict.fromkeys(texts))
    return unique[0] if len(unique) == 1 else f"{', '.join(unique[:-1])} and {unique[-1]}"
