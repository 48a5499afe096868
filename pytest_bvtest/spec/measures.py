"""Measure names: ir_measures' syntax (and trec_eval's labels) parsed into :class:`Measure`.

Users name measures as in ir_measures (``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RR(rel=2)``,
``nDCG(dcg='exp-log2')@20``, ``ERR@20``) or as trec_eval does (``map``, ``ndcg_cut_10``, ``P_10``,
``recip_rank``, ``recall_1000``); both parse to one :class:`Measure` whose ``str`` is the canonical
ir_measures form. The syntax is ir_measures' own parser; this module decides what is supported, and
:mod:`pytest_bvtest.scoring.measures` computes it. A value type of the spec: it imports nothing of the
pipeline.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from os import PathLike
from typing import Any

import ir_measures

from pytest_bvtest.errors import InputError, excerpt

_EXPONENTIAL_DCG = "exp-log2"
_C_INT_MAX = 2**31 - 1
_LONGEST_MEASURE_NAME = 100
#: ``nDCG@10(judged_only=True)``: parameters after the cutoff, where ir_measures wants ``nDCG(judged_only=True)@10``.
_CUTOFF_BEFORE_PARAMETERS = re.compile(r"^(?P<family>[A-Za-z_]\w*)\s*@\s*(?P<cutoff>\d+)\s*(?P<parameters>\(.*\))$")


@dataclass(frozen=True)
class _Family:
    """How one ir_measures family maps onto trec_eval's labels.

    ``label`` is the trec_eval name without a cutoff (``map``), ``cut_label`` the prefix of the
    name with one (``map_cut`` gives ``map_cut_10``); ``None`` where trec_eval has no such form.
    ``binary`` families take a relevance threshold ``rel`` (default 1).
    """

    label: str | None
    cut_label: str | None
    binary: bool


_FAMILIES: dict[str, _Family] = {
    "AP": _Family("map", "map_cut", True),
    "P": _Family(None, "P", True),
    "R": _Family(None, "recall", True),
    "RR": _Family("recip_rank", None, True),
    "nDCG": _Family("ndcg", "ndcg_cut", False),
    "ERR": _Family(None, None, False),
    "Rprec": _Family("Rprec", None, True),
    "Bpref": _Family("bpref", None, True),
    "infAP": _Family("infAP", None, True),
    "Success": _Family(None, "success", True),
    "NumRet": _Family("num_ret", None, False),
    "NumRel": _Family("num_rel", None, True),
    "SetP": _Family("set_P", None, True),
    "SetR": _Family("set_recall", None, True),
    "SetF": _Family("set_F", None, True),
    "SetAP": _Family("set_map", None, True),
    "Judged": _Family(None, None, False),
}

_UNSUPPORTED_REASONS = {
    "IPrec": "pytrec_eval's interpolated precision disagrees with trec_eval 10.0's expected outputs",
    "NumQ": "it counts topics, it is not a per-topic value",
}

_SUPPORTED_SUMMARY = (
    "supported: AP, AP@k, P@k, R@k, RR, RR@k, nDCG, nDCG@k (linear gain, trec_eval), "
    "nDCG(dcg='exp-log2')@k and ERR@k (gdeval), Rprec, Bpref, infAP, Success@k, NumRet, NumRel, "
    "SetP, SetR, SetF, SetAP, Judged@k; binary measures take (rel=N), most take (judged_only=True); "
    "trec_eval names such as map, ndcg_cut_10, P_10, recip_rank, recall_1000 are accepted too"
)


@dataclass(frozen=True)
class Measure:
    """One effectiveness measure, as ir_measures names it.

    Build it with :func:`parse_measure`; ``str(measure)`` is the
    canonical ir_measures form (``parse_measure("ndcg_cut_10")`` prints as ``nDCG@10``), and equal
    measures compare and hash equal however they were written (``AP(rel=1)`` is ``AP``).

    Attributes
    ----------
    name:
        The ir_measures family: ``AP``, ``P``, ``R``, ``RR``, ``nDCG``, ``ERR``, ``Rprec``, ...
    cutoff:
        The ``@k`` rank cutoff, ``None`` for the whole ranking.
    rel:
        Binary relevance threshold (grade >= rel is relevant; pytrec_eval's ``relevance_level``).
        ``None`` for graded measures (nDCG, ERR) and for ``NumRet`` counting every document.
    judged_only:
        Score only judged documents (trec_eval ``-J``): documents without a judgment, and those
        judged below 0 (trec_eval marks unjudged documents with a negative grade), are removed
        from the ranking first.
    exponential_gain:
        nDCG with gain 2^g - 1 as gdeval.pl (``nDCG(dcg='exp-log2')``) instead of trec_eval's linear gain.
    relative:
        ``SetP(relative=True)``: set precision relative to the best possible for the set's size.
    """

    name: str
    cutoff: int | None = None
    rel: int | None = None
    judged_only: bool = False
    exponential_gain: bool = False
    relative: bool = False

    def __post_init__(self) -> None:
        if self.name not in _FAMILIES:
            raise ValueError(f"unsupported measure family {self.name!r}; use parse_measure for user input")
        # Binary measures default to rel=1 however they are built, so Measure("AP") == parse_measure("AP").
        if self.rel is None and _FAMILIES[self.name].binary:
            object.__setattr__(self, "rel", 1)

    def __str__(self) -> str:
        return repr(self._as_ir_measure())

    def _as_ir_measure(self) -> Any:
        params: dict[str, Any] = {}
        if self.exponential_gain:
            params["dcg"] = _EXPONENTIAL_DCG
        if self.rel is not None:
            params["rel"] = self.rel
        if self.relative:
            params["relative"] = True
        if self.judged_only:
            params["judged_only"] = True
        if self.cutoff is not None:
            params["cutoff"] = self.cutoff
        return ir_measures.measures.registry[self.name](**params)

    @property
    def uses_gdeval(self) -> bool:
        """True for ERR and exponential-gain nDCG, which the project computes as gdeval.pl does."""
        return self.name == "ERR" or self.exponential_gain

    @property
    def trec_eval_family(self) -> str | None:
        """trec_eval's label of the measure's family without a cut-off (``map``, ``recip_rank``); ``None``
        where it has none (``P``, ``R``, which trec_eval only computes at a cut-off)."""
        return _FAMILIES[self.name].label

    @property
    def trec_eval_name(self) -> str | None:
        """The label of this measure in trec_eval's output (``map``, ``ndcg_cut_10``, ``recip_rank``).

        ``None`` where trec_eval has no such measure (ERR, exponential-gain nDCG, RR@k). The label
        does not carry ``rel`` or ``judged_only``: a ``-q`` table matches ``AP(rel=2)`` only when it
        was made with ``trec_eval -l 2``.
        """
        if self.uses_gdeval:
            return None
        if self.name == "NumRet" and self.rel is not None:
            return "num_rel_ret"
        if self.name == "SetP" and self.relative:
            return "set_relative_P"
        family = _FAMILIES[self.name]
        if self.cutoff is None:
            return family.label
        return None if family.cut_label is None else f"{family.cut_label}_{self.cutoff}"

    def depth(self, judging_depth: int) -> int:
        """How deep the measure looks into a ranking for the judgments it needs (docs/mathematics.md §8): its
        cut-off, or ``judging_depth`` for a measure without one (AP, RR, nDCG)."""
        return self.cutoff if self.cutoff is not None else judging_depth

    @property
    def has_corners(self) -> bool:
        """Whether the optimistic value M+ of docs/mathematics.md §8 is computed for this measure: AP, nDCG(@k),
        P@k, R@k, RR(@k), ERR@k and gdeval's nDCG@k, as judged with unjudged documents non-relevant (not
        ``judged_only``, which drops them)."""
        if self.judged_only:
            return False
        if self.name == "AP":
            return self.cutoff is None
        if self.name in ("P", "R", "ERR"):
            return self.cutoff is not None
        return self.name in ("nDCG", "RR")


@dataclass(frozen=True)
class UnjudgedCount:
    """Per topic, how many of a run's first ``depth`` documents the qrels do not judge (docs/mathematics.md §8):
    what a verdict's corners rest on. Computed beside a measure, never named in a spec."""

    depth: int

    def __str__(self) -> str:
        return f"unjudged@{self.depth}"


@dataclass(frozen=True)
class OptimisticMeasure:
    """``M+`` of docs/mathematics.md §8 (PIN): ``measure`` with every unjudged document of a run's first ``depth``
    ranks given the grade ``grade``, normalised by the judged qrels and capped at the measure's maximum.
    Computed beside the measure when a spec's gates are judged at their corners, never named in a spec."""

    measure: Measure
    grade: int
    depth: int

    def __str__(self) -> str:
        return f"{self.measure}+(unjudged@{self.depth}={self.grade})"


#: What a run is scored by: a measure, or what the corners of docs/mathematics.md §8 read beside it.
RunMeasure = Measure | UnjudgedCount | OptimisticMeasure


@dataclass(frozen=True)
class TableMeasure:
    """A measure the project cannot compute, named freely in the spec (``RBP(p=0.5)``, an in-house metric).

    Allowed when every system comes from per-topic score tables: the tables give the numbers and the
    label only selects them (a table's measure written exactly as ``label``, or a table with a single
    measure). ``str`` is the label; there is no trec_eval label.
    """

    label: str
    trec_eval_name = None

    def __str__(self) -> str:
        return self.label


def parse_measure(text: str, *, path: str | PathLike[str] | None = None, line: int | None = None) -> Measure:
    """Parse a measure name written in ir_measures' syntax or as a trec_eval label.

    Parameters
    ----------
    text:
        ``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RR(rel=2)``, ``nDCG(dcg='exp-log2')@20``, ``ERR@20``,
        ``map``, ``ndcg_cut_10``, ``P_10``, ``recip_rank``, ``recall_1000``, ``ndcg``, ...
    path, line:
        Where the name was written (a spec file), for the error message.

    Returns
    -------
    Measure
        The measure; ``str`` of it is the canonical ir_measures form.

    Raises
    ------
    InputError
        For an unknown or unsupported measure, listing close supported names and what is supported.
    """
    name = text.strip()
    if not name:
        raise InputError("empty measure name", path=path, line=line, hint=_SUPPORTED_SUMMARY)
    if len(name) > _LONGEST_MEASURE_NAME:
        raise InputError(
            f"measure {excerpt(name)} is not a measure name (too long)", path=path, line=line, hint=_SUPPORTED_SUMMARY
        )
    misplaced = _CUTOFF_BEFORE_PARAMETERS.match(name)
    if misplaced is not None:
        written = f"{misplaced['family']}{misplaced['parameters']}@{misplaced['cutoff']}"
        # the reordered name may be wrong in its own way (an unknown family, a parameter the family does not take):
        # its own error then says what, for the name to write
        parse_measure(written, path=path, line=line)
        raise InputError(
            f"measure '{text}' puts its parameters after the cutoff; ir_measures writes them before it",
            path=path,
            line=line,
            hint=f"write {written}",
        )
    measure, syntax_problem = _parse(name, text, path, line)
    if measure is None:
        raise _unknown(text, syntax_problem, path, line)
    return measure


def _parse(
    name: str, text: str, path: str | PathLike[str] | None, line: int | None
) -> tuple[Measure | None, str | None]:
    """The measure ``name`` denotes, or ``None`` and ir_measures' syntax complaint when it names none.

    Raises :class:`InputError` for a known but unsupported or malformed measure.
    """
    syntax_problem = None
    try:
        parsed = ir_measures.parse_measure(name)
    except NameError:
        parsed = None
    except (ValueError, SyntaxError, TypeError) as error:
        parsed, syntax_problem = None, str(error)
    if parsed is not None:
        return _from_ir_measure(parsed, text, path, line), None
    return _from_trec_eval(name, text, path, line), syntax_problem


def _from_trec_eval(name: str, text: str, path: str | PathLike[str] | None, line: int | None) -> Measure | None:
    """The measure a trec_eval label names, ``None`` when trec_eval does not know the label."""
    import pytrec_eval  # here and below, not at the top: a cached gate never loads the C extension

    if name in pytrec_eval.supported_nicknames:
        raise InputError(
            f"'{text}' is trec_eval's name for a group of measures, not one measure",
            path=path,
            line=line,
            hint=f"list the measures one by one; {_SUPPORTED_SUMMARY}",
        )
    try:
        parsed = ir_measures.parse_trec_measure(name)
    except ValueError:
        if _is_trec_eval_measure(name):
            raise InputError(
                f"measure '{text}' is not supported: ir_measures has no name for it",
                path=path,
                line=line,
                hint=_SUPPORTED_SUMMARY,
            ) from None
        return None
    if len(parsed) != 1:
        examples = ", ".join(repr(measure) for measure in parsed[:3])
        raise InputError(
            f"'{text}' names {len(parsed)} measures ({examples}, ...), not one",
            path=path,
            line=line,
            hint=f"give one cutoff, e.g. {_trec_example(parsed[0])}",
        )
    return _from_ir_measure(parsed[0], text, path, line)


def _is_trec_eval_measure(name: str) -> bool:
    """Whether trec_eval computes ``name`` (``gm_map``, ``utility``, ``Rprec_mult_0.20``, ...)."""
    import pytrec_eval

    return any(
        name == measure or re.fullmatch(rf"{re.escape(measure)}[._][0-9.,]+", name)
        for measure in pytrec_eval.supported_measures
    )


def _trec_example(parsed: Any) -> str:
    measure = _from_ir_measure(parsed, repr(parsed), None, None)
    return measure.trec_eval_name or str(measure)


def _from_ir_measure(parsed: Any, text: str, path: str | PathLike[str] | None, line: int | None) -> Measure:
    """Check an ir_measures measure against what the project computes exactly, and convert it."""

    def unsupported(reason: str) -> InputError:
        return InputError(f"measure '{text}' is not supported: {reason}", path=path, line=line, hint=_SUPPORTED_SUMMARY)

    family = parsed.NAME
    if family not in _FAMILIES:
        raise unsupported(_UNSUPPORTED_REASONS.get(family, "neither pytrec_eval nor gdeval computes it"))
    missing = [key for key, info in parsed.SUPPORTED_PARAMS.items() if info.required and key not in parsed.params]
    if missing:
        raise InputError(
            f"measure '{text}' needs a {' and a '.join(missing)}",
            path=path,
            line=line,
            hint=f"e.g. {family}@10" if missing == ["cutoff"] else _SUPPORTED_SUMMARY,
        )
    try:
        parsed.validate_params()
    except AssertionError as error:
        raise InputError(
            f"measure '{text}': {error}", path=path, line=line, hint=f"check the parameters; {_SUPPORTED_SUMMARY}"
        ) from None
    params = dict(parsed.params)
    if "gains" in params:
        raise unsupported("custom gains=; use nDCG (linear gain, trec_eval) or nDCG(dcg='exp-log2') (gdeval)")
    if params.get("beta", 1.0) != 1.0:
        raise unsupported("SetF only with beta=1 (trec_eval reports every beta under the one label set_F)")
    exponential = params.get("dcg") == _EXPONENTIAL_DCG
    judged_only = params.get("judged_only", False)
    if exponential and judged_only:
        raise unsupported("judged_only=True with gdeval's measures; gdeval.pl scores unjudged documents as gain 0")
    cutoff = params.get("cutoff")
    if family == "Judged" and cutoff is None:
        # ir_measures' Judged without a cut-off is the judged share of the whole ranking, which no gate reads
        raise InputError(f"measure '{text}' needs a cutoff", path=path, line=line, hint="e.g. Judged@10")
    # ir_measures checks isinstance(int), which lets booleans through; pytrec_eval holds both in a C int.
    if cutoff is not None and (type(cutoff) is not int or not 1 <= cutoff <= _C_INT_MAX):
        raise InputError(
            f"measure '{text}': the cutoff must be a positive integer up to {_C_INT_MAX}, got {excerpt(str(cutoff))}",
            path=path,
            line=line,
        )
    rel = params.get("rel", 1 if _FAMILIES[family].binary else None)
    if rel is not None and (type(rel) is not int or not 1 <= rel <= _C_INT_MAX):
        raise InputError(
            f"measure '{text}': rel must be an integer grade from 1 to {_C_INT_MAX} (grade >= rel is relevant), "
            f"got {excerpt(str(rel))}",
            path=path,
            line=line,
            hint="rel=1 counts every positive grade as relevant, as trec_eval does by default",
        )
    return Measure(
        name=family,
        cutoff=cutoff,
        rel=rel,
        judged_only=bool(judged_only),
        exponential_gain=exponential,
        relative=bool(params.get("relative", False)),
    )


def _unknown(text: str, syntax_problem: str | None, path: str | PathLike[str] | None, line: int | None) -> InputError:
    suggestions = _close_names(text.strip())
    what = f"unknown measure '{text}'" if syntax_problem is None else f"cannot read measure '{text}' ({syntax_problem})"
    hint = f"did you mean {' or '.join(suggestions)}? " if suggestions else ""
    return InputError(what, path=path, line=line, hint=hint + _SUPPORTED_SUMMARY)


def _family_vocabulary() -> dict[str, list[str]]:
    """Lower-cased family names, ir_measures' (with aliases) and trec_eval's, to their spellings."""
    names = [alias for alias, family in ir_measures.measures.registry.items() if family.NAME in _FAMILIES]
    for family in _FAMILIES.values():
        names += [label for label in (family.label, family.cut_label) if label is not None]
    names += ["num_rel_ret", "set_relative_P"]
    vocabulary: dict[str, list[str]] = {}
    for name in names:
        vocabulary.setdefault(name.lower(), []).append(name)
    return vocabulary


def _close_names(text: str) -> list[str]:
    """Supported measure names close to a mistyped one, each shown canonically (and as trec_eval names it).

    The leading name is matched against the families (case-insensitively) and the rest of the text
    (``@10``, ``_10``, ``(rel=2)``) is kept, so ``nDGC@10`` suggests ``nDCG@10``; only suggestions
    that parse are offered.
    """
    head = re.match(r"[A-Za-z_]*", text).group().rstrip("_")
    rest = text[len(head) :]
    vocabulary = _family_vocabulary()
    suggestions: list[str] = []
    for close in difflib.get_close_matches(head.lower(), list(vocabulary), n=4, cutoff=0.6):
        for spelling in vocabulary[close]:
            try:
                measure, _ = _parse(spelling + rest, spelling + rest, None, None)
            except InputError:
                continue
            if measure is None:
                continue
            shown = str(measure)
            label = measure.trec_eval_name
            if label is not None and label != shown:
                shown = f"{shown} (trec_eval: {label})"
            if shown not in suggestions:
                suggestions.append(shown)
    return suggestions
