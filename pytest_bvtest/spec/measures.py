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
    # trec_eval's gm_map; not an ir_measures family (ir_measures knows the label but computes nothing for it)
    "GMAP": _Family("gm_map", None, True),
    "RBP": _Family(None, None, True),
    "IPrec": _Family(None, "iprec_at_recall", True),
    "Compat": _Family(None, None, False),
}

#: GMAP and trec_eval's label for it: ``GMAP``, ``GMAP(rel=2)``, ``gm_map`` (ir_measures has no such measure).
_GMAP = re.compile(r"^(?:GMAP(?:\(\s*rel\s*=\s*(?P<rel>[^)]*)\))?|gm_map)$")
#: trec_eval's floor of AP before its logarithm in gm_map (MIN_GEO_MEAN in trec_eval's m_gm_map.c).
GMAP_FLOOR = 1e-5

_NEEDS_SUBTOPICS = "it needs subtopic (intent) qrels, which this project does not read"
_NEEDS_CWL = (
    "it is a C/W/L measure, which ir_measures computes with the cwl_eval package and a grade scale (max_rel=); "
    "this project has no implementation checked against it: use RBP, nDCG or ERR"
)
_UNSUPPORTED_REASONS = {
    "NumQ": "it counts topics, it is not a per-topic value",
    **dict.fromkeys(
        ("alpha_nDCG", "alpha_DCG", "ERR_IA", "nERR_IA", "AP_IA", "P_IA", "NRBP", "nNRBP", "StRecall"), _NEEDS_SUBTOPICS
    ),
    **dict.fromkeys(("BPM", "SDCG", "NERR8", "NERR9", "NERR10", "NERR11", "INST", "INSQ"), _NEEDS_CWL),
    "Accuracy": "it scores a run against pairs of documents (ir_measures' accuracy provider), not against qrels",
}

_SUPPORTED_SUMMARY = (
    "supported: AP, AP@k, GMAP, P@k, R@k, RR, RR@k, nDCG(@k) (trec_eval's linear gain, or gains={...}), "
    "nDCG(dcg='exp-log2')@k and ERR@k (gdeval), RBP, IPrec@r, Rprec, Bpref, infAP, Success@k, NumRet, NumRel, SetP, "
    "SetR, SetF, SetAP, Compat, Judged@k, with (rel=N) or (judged_only=True) where they apply; "
    "trec_eval's names too (map, gm_map, ndcg_cut_10, P_10)"
)


#: ir_measures' default persistence of the measures that take one.
_DEFAULT_PERSISTENCE = {"RBP": 0.8, "Compat": 0.95}


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
    gains:
        ``nDCG(gains={0:0,1:1,2:3,3:7})``: each grade's gain where it differs from the grade, as ``(grade, gain)``
        pairs in grade order; a grade not listed gains its own value (trec_eval's ``ndcg.1=3,2=9`` and
        ir_measures' mapping). ``None`` for trec_eval's linear gain.
    p:
        The persistence of ``RBP`` (default 0.8) and ``Compat`` (default 0.95).
    recall:
        ``IPrec@r``'s recall level, from 0 to 1.
    beta:
        ``SetF(beta=b)``: trec_eval's ``set_F.b``, (b + 1) P R / (b P + R); 1 is the harmonic mean.
    normalize:
        ``Compat(normalize=False)``: the rank-biased overlap with the ideal ranking, not divided by its best value.
    """

    name: str
    cutoff: int | None = None
    rel: int | None = None
    judged_only: bool = False
    exponential_gain: bool = False
    relative: bool = False
    gains: tuple[tuple[int, int | float], ...] | None = None
    p: float | None = None
    recall: float | None = None
    beta: float = 1.0
    normalize: bool = True

    def __post_init__(self) -> None:
        if self.name not in _FAMILIES:
            raise ValueError(f"unsupported measure family {self.name!r}; use parse_measure for user input")
        # Binary measures default to rel=1 however they are built, so Measure("AP") == parse_measure("AP").
        if self.rel is None and _FAMILIES[self.name].binary:
            object.__setattr__(self, "rel", 1)
        if self.p is None and self.name in _DEFAULT_PERSISTENCE:
            object.__setattr__(self, "p", _DEFAULT_PERSISTENCE[self.name])

    def __str__(self) -> str:
        if self.name == "GMAP":
            return "GMAP" if self.rel == 1 else f"GMAP(rel={self.rel})"
        return repr(self._as_ir_measure())

    def _as_ir_measure(self) -> Any:
        params: dict[str, Any] = {}
        if self.exponential_gain:
            params["dcg"] = _EXPONENTIAL_DCG
        if self.gains is not None:
            params["gains"] = dict(self.gains)
        if self.p is not None and self.p != _DEFAULT_PERSISTENCE[self.name]:
            params["p"] = self.p
        if self.recall is not None:
            params["recall"] = self.recall
        if self.beta != 1.0:
            params["beta"] = self.beta
        if not self.normalize:
            params["normalize"] = False
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
    def missing_value(self) -> float:
        """The per-topic value of a topic of the universe that a run does not rank (docs/mathematics.md §1): 0, and
        for GMAP log(1e-5), the floor trec_eval -c gives such a topic in gm_map."""
        import math

        return math.log(GMAP_FLOOR) if self.name == "GMAP" else 0.0

    def aggregate(self, per_topic: Any) -> float:
        """The measure over topics as trec_eval's summary gives it, from the per-topic values: their mean, and for
        GMAP, whose per-topic value is log(max(AP, 1e-5)) (trec_eval's ``gm_map`` per query), exp of their mean
        (the geometric mean of the floored APs)."""
        import math

        values = [float(value) for value in per_topic]
        mean = math.fsum(values) / len(values) if values else 0.0
        return math.exp(mean) if self.name == "GMAP" else mean

    @property
    def takes_judged_only(self) -> bool:
        """Whether the measure has a judged-only form (trec_eval's ``-J``): not Judged@k, RBP, Compat or GMAP."""
        family = ir_measures.measures.registry.get(self.name)
        return self.name != "Judged" and family is not None and "judged_only" in family.SUPPORTED_PARAMS

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
        if self.name == "IPrec":
            return f"iprec_at_recall_{self.recall:.2f}"
        if self.gains is not None or self.beta != 1.0 or self.name in ("RBP", "Compat"):
            return None  # trec_eval labels these by their parameters (ndcg_1=3,2=9) or does not compute them
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
        P@k, R@k, RR(@k), RBP (whose M+ is Moffat & Zobel's residual), ERR@k and gdeval's nDCG@k, as judged with
        unjudged documents non-relevant (not ``judged_only``, which drops them; not custom gains)."""
        if self.judged_only or self.gains is not None:
            return False
        if self.name == "RBP":
            return True
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


@dataclass(frozen=True)
class Residual:
    """RBP's residual (Moffat & Zobel, TOIS 2008, Sec. 4): per topic, the weight the unjudged documents of the ranking
    and the tail below it could still add, (1 - p) p^(i-1) summed over every unjudged rank i and p^L for the ranks
    after the ranking's end (to ``measure``'s cut-off, if it has one). RBP + residual is the exact largest value
    any grading of the unjudged documents could give. Computed beside an RBP measure, never named in a spec."""

    measure: Measure

    def __post_init__(self) -> None:
        if self.measure.name != "RBP":
            raise ValueError(f"only RBP has a residual, not {self.measure}")

    def __str__(self) -> str:
        return f"{self.measure} residual"


#: What a run is scored by: a measure, or what the corners of docs/mathematics.md §8 read beside it.
RunMeasure = Measure | UnjudgedCount | OptimisticMeasure | Residual


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
    gmap = _GMAP.match(name)
    if gmap is not None:
        return _gmap(gmap["rel"], text, path, line)
    measure, syntax_problem = _parse(name, text, path, line)
    if measure is None:
        raise _unknown(text, syntax_problem, path, line)
    return measure


def _gmap(rel_text: str | None, text: str, path: str | PathLike[str] | None, line: int | None) -> Measure:
    """GMAP, or ``GMAP(rel=N)``: trec_eval's ``gm_map`` (``-l N``)."""
    rel = 1 if rel_text is None else (int(rel_text.strip()) if rel_text.strip().isdigit() else None)
    if rel is None or not 1 <= rel <= _C_INT_MAX:
        raise InputError(
            f"measure '{text}': rel must be an integer grade from 1 to {_C_INT_MAX} (grade >= rel is relevant), "
            f"got {excerpt(str(rel_text))}",
            path=path,
            line=line,
            hint="e.g. GMAP(rel=2)",
        )
    return Measure("GMAP", rel=rel)


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
    whole = {
        key: float(value)
        for key, value in parsed.params.items()
        if key in parsed.SUPPORTED_PARAMS and parsed.SUPPORTED_PARAMS[key].dtype is float and type(value) is int
    }
    if whole:  # ir_measures refuses SetF(beta=2) for SetF(beta=2.0)
        parsed = ir_measures.measures.registry[family](**{**parsed.params, **whole})
    try:
        parsed.validate_params()
    except AssertionError as error:
        raise InputError(
            f"measure '{text}': {error}", path=path, line=line, hint=f"check the parameters; {_SUPPORTED_SUMMARY}"
        ) from None
    params = dict(parsed.params)
    exponential = params.get("dcg") == _EXPONENTIAL_DCG
    judged_only = params.get("judged_only", False)
    if exponential and judged_only:
        raise unsupported("judged_only=True with gdeval's measures; gdeval.pl scores unjudged documents as gain 0")
    gains = _gains(params.get("gains"), text, path, line)
    if gains is not None and (exponential or judged_only):
        raise unsupported("gains= with dcg='exp-log2' or judged_only=True; gains= maps trec_eval's linear gain")
    if family == "IPrec" and judged_only:
        raise unsupported(
            "IPrec with judged_only=True: only pytrec_eval has it, whose trec_eval 9 rounds the recall levels "
            "differently from trec_eval 10.0's expected outputs"
        )
    beta = params.get("beta", 1.0)
    if beta != 1.0 and judged_only:
        raise unsupported("SetF(beta=...) with judged_only=True")
    p = params.get("p")
    if p is not None and not 0 < p < 1:
        raise InputError(
            f"measure '{text}': the persistence p must lie strictly between 0 and 1, got {excerpt(str(p))}",
            path=path,
            line=line,
            hint="e.g. RBP(p=0.8): a user who goes on to the next document 80% of the time",
        )
    recall = params.get("recall")
    if family == "IPrec" and (recall is None or not 0 <= recall <= 1):
        raise InputError(
            f"measure '{text}' needs a recall level from 0 to 1",
            path=path,
            line=line,
            hint="e.g. IPrec@0.1 (trec_eval's iprec_at_recall_0.10)",
        )
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
        gains=gains,
        p=p,
        recall=recall,
        beta=float(beta),
        normalize=bool(params.get("normalize", True)),
    )


def _gains(
    gains: Any, text: str, path: str | PathLike[str] | None, line: int | None
) -> tuple[tuple[int, int | float], ...] | None:
    """``gains={0:0,1:1,2:3,3:7}`` as ``(grade, gain)`` pairs in grade order, those that map a grade onto itself left
    out; ``None`` when not given or when every grade gains itself.

    Only the documents with a positive grade gain anything in trec_eval's nDCG (unjudged documents have no grade
    to map), so a grade of 0 or below must gain 0, and a gain must be a finite number of at least 0.
    """
    if gains is None:
        return None
    problem = None
    if not isinstance(gains, dict) or not gains:
        problem = "gains= must map grades to gains, e.g. gains={0:0,1:1,2:3,3:7}"
    elif any(type(grade) is not int for grade in gains):
        problem = "the grades of gains= must be integers"
    elif any(type(gain) not in (int, float) or not 0 <= gain < float("inf") for gain in gains.values()):
        problem = "every gain of gains= must be a finite number of at least 0"
    elif any(grade <= 0 and gain != 0 for grade, gain in gains.items()):
        problem = "a grade of 0 or below must gain 0 (nDCG scores only documents judged relevant)"
    if problem is not None:
        raise InputError(
            f"measure '{text}': {problem}", path=path, line=line, hint="e.g. nDCG(gains={0:0,1:1,2:3,3:7})@10"
        )
    # a grade that gains itself is no mapping: nDCG(gains={1:1}) is nDCG, and gains print as they were written
    mapped = tuple(
        sorted((grade, int(gain) if float(gain).is_integer() else float(gain)) for grade, gain in gains.items())
    )
    return tuple((grade, gain) for grade, gain in mapped if gain != grade) or None


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
