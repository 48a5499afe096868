"""Effectiveness measures: names in ir_measures' syntax, per-topic values from pytrec_eval and gdeval.

Users name measures as in ir_measures (``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RR(rel=2)``,
``nDCG(dcg='exp-log2')@20``, ``ERR@20``) or as trec_eval does (``map``, ``ndcg_cut_10``, ``P_10``,
``recip_rank``, ``recall_1000``); both parse to one :class:`Measure` whose ``str`` is the canonical
ir_measures form. The syntax is ir_measures' own parser; this module decides what is supported.

Who computes what (docs/mathematics.md §1):

- AP, nDCG, nDCG@k, P@k, R@k, RR and RR@k (any ``rel=``, not judged-only) come from
  :mod:`pytest_bvtest.columnar`: trec_eval's definitions on numpy arrays, every topic in one pass,
  equal to pytrec_eval (tests/test_columnar.py checks every run of the shared data).
- The other trec_eval measures come from pytrec_eval, a fresh evaluator per call and one evaluator per
  (relevance level, judged-only) pair, so ``AP`` and ``AP(rel=2)`` in one call cost two passes and
  ``AP``, ``P@10`` and ``nDCG@10`` one. ``rel=N`` is trec_eval's ``-l N`` (grade >= N is relevant
  for binary measures); nDCG is graded and ignores it, as trec_eval does. ``judged_only=True`` is
  trec_eval's ``-J`` (it also drops documents graded below 0). ``nDCG`` is trec_eval's linear-gain
  ``ndcg``/``ndcg_cut``.
- ``RR@k`` is trec_eval's ``recip_rank`` set to 0 when the first relevant document is below rank k
  (trec_eval has no cut-off reciprocal rank; recip_rank is exactly 1/rank, so this is exact).
- ``ERR@k`` and ``nDCG(dcg='exp-log2')@k`` come from :mod:`pytest_bvtest.gdeval` (gdeval.pl).
- Not supported, with a message saying why: interpolated precision (``IPrec``, ``11pt_avg``;
  pytrec_eval's bundled trec_eval rounds recall points differently from trec_eval 10.0 and
  disagrees with trec_eval's own expected outputs), custom ``gains=``, ``SetF`` with ``beta`` other
  than 1, aggregate-only values (``NumQ``, ``gm_map``) and every measure pytrec_eval lacks.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from os import PathLike
from typing import Any

import ir_measures

from pytest_bvtest import columnar, gdeval
from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.qrels import Qrels, check_top_grade
from pytest_bvtest.io.runs import Run, RunColumns

_EXPONENTIAL_DCG = "exp-log2"
_C_INT_MAX = 2**31 - 1
_LONGEST_MEASURE_NAME = 100

#: The largest grade nDCG (either gain) accepts: trec_eval's nDCG allocates and walks an array per
#: grade level (grade 3e9 took 23 GB), and gdeval's gain 2^g - 1 overflows a float near g = 1024.
NDCG_TOP_GRADE = 512


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
}

_UNSUPPORTED_REASONS = {
    "IPrec": "pytrec_eval's interpolated precision disagrees with trec_eval 10.0's expected outputs",
    "NumQ": "it counts topics, it is not a per-topic value",
}

_SUPPORTED_SUMMARY = (
    "supported: AP, AP@k, P@k, R@k, RR, RR@k, nDCG, nDCG@k (linear gain, trec_eval), "
    "nDCG(dcg='exp-log2')@k and ERR@k (gdeval), Rprec, Bpref, infAP, Success@k, NumRet, NumRel, "
    "SetP, SetR, SetF, SetAP; binary measures take (rel=N), most take (judged_only=True); "
    "trec_eval names such as map, ndcg_cut_10, P_10, recip_rank, recall_1000 are accepted too"
)


@dataclass(frozen=True)
class Measure:
    """One effectiveness measure, as ir_measures names it.

    Build it with :func:`parse_measure` (or :meth:`from_trec_eval_name`); ``str(measure)`` is the
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

    @classmethod
    def from_trec_eval_name(cls, label: str, relevance_level: int = 1) -> Measure:
        """The measure behind a trec_eval output label, e.g. ``ndcg_cut_10`` -> ``nDCG@10``.

        Parameters
        ----------
        label:
            A measure name as trec_eval prints it in its first column.
        relevance_level:
            The ``-l`` the table was made with; it becomes ``rel`` of binary measures
            (``map`` from ``trec_eval -l 2`` is ``AP(rel=2)``).

        Raises
        ------
        InputError
            For a label that names no supported measure (``gm_map``, ``relstring``, ...).
        """
        measure = _from_trec_eval(label.strip(), label, None, None)
        if measure is None:
            raise _unknown(label, None, None, None)
        return measure if measure.rel is None else replace(measure, rel=relevance_level)


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


def check_relevance_levels(qrels: Qrels, measures: Sequence[Measure | TableMeasure]) -> None:
    """Refuse a ``rel=N`` that no judgment reaches: no document would be relevant, every system would score 0
    on every topic, and the gates would pass on a matrix of zeros.

    Checked where runs are scored for a spec or ``bvtest evaluate`` (:class:`~pytest_bvtest.matrix.MatrixBuilder`),
    not by :func:`evaluate_run`, which computes any level as trec_eval does (0 where nothing is relevant).
    """
    levels = [measure for measure in measures if isinstance(measure, Measure) and (measure.rel or 0) > 1]
    if not levels:
        return
    top = max(max(docs.values()) for docs in qrels.judgments.values())
    above = next((measure for measure in levels if measure.rel > top), None)
    if above is not None:
        raise InputError(
            f"{above} counts a grade of {above.rel} or more as relevant, but no judgment reaches {above.rel} "
            f"(the top grade is {top}): every system would score 0 on every topic",
            path=qrels.path,
            hint=f"use a level the qrels hold, e.g. {replace(above, rel=top)}",
        )


def evaluate_run(qrels: Qrels, run: Run | RunColumns, measures: Sequence[Measure]) -> dict[Measure, dict[str, float]]:
    """Per-topic values of each measure for one run.

    Parameters
    ----------
    qrels:
        The judgments; its topic universe is :meth:`Qrels.evaluated_topics` (docs/mathematics.md §1 PIN:
        topics with at least one positive grade).
    run:
        The rankings (a :class:`Run` or, read by :func:`~pytest_bvtest.io.runs.read_run_columns`, its
        columns); order is score descending, ties by docno descending (docs/mathematics.md §1).
    measures:
        What to compute.

    Returns
    -------
    dict[Measure, dict[str, float]]
        ``values[measure][qid]`` for every topic of the universe that the run ranks at least one
        document for, in the qrels' topic order. Topics the run misses are absent (the score matrix
        zero-fills them); topics outside the universe are ignored.

    Raises
    ------
    InputError
        For ERR when a grade exceeds 4 (docs/mathematics.md §1 PIN), for nDCG when a grade exceeds
        :data:`NDCG_TOP_GRADE`, naming the judgment's file and line.
    """
    if any(measure.name == "ERR" for measure in measures):
        gdeval.check_err_grades(qrels)
    if any(measure.name == "nDCG" for measure in measures):
        check_top_grade(
            qrels,
            NDCG_TOP_GRADE,
            "the largest grade nDCG accepts",
            hint=f"trec_eval's nDCG takes time and memory per grade level and the gain 2^g overflows: "
            f"map the grades onto 0..{NDCG_TOP_GRADE} (binary measures such as AP accept any grade)",
        )
    if isinstance(run, RunColumns):
        ranked_topics = set(run.topics)  # every topic of the columns has a document
        topics = [qid for qid in qrels.evaluated_topics() if qid in ranked_topics]
    else:
        topics = [qid for qid in qrels.evaluated_topics() if run.scores.get(qid)]
    if not topics:
        return {measure: {} for measure in measures}
    judgments = {qid: qrels.judgments[qid] for qid in topics}
    values: dict[Measure, dict[str, float]] = {}
    columnar_measures = [measure for measure in measures if columnar.computes(measure)]
    trec_eval_measures = [measure for measure in measures if not measure.uses_gdeval and not columnar.computes(measure)]
    gdeval_measures = [measure for measure in measures if measure.uses_gdeval]
    if columnar_measures:
        if isinstance(run, RunColumns):
            ranked = columnar.ranked_gains_from_columns(judgments, run, topics)
        else:
            ranked = columnar.ranked_gains_from_rankings(judgments, {qid: run.scores[qid] for qid in topics}, topics)
        values.update(columnar.evaluate(ranked, columnar_measures))
    if len(columnar_measures) == len(measures):
        return values
    rankings = run.rankings(topics) if isinstance(run, RunColumns) else {qid: run.scores[qid] for qid in topics}
    if trec_eval_measures:
        values.update(_evaluate_with_pytrec_eval(judgments, rankings, trec_eval_measures))
    if gdeval_measures:
        values.update(_evaluate_with_gdeval(judgments, rankings, topics, gdeval_measures))
    return {measure: values[measure] for measure in measures}


def _evaluate_with_pytrec_eval(
    judgments: dict[str, dict[str, int]], rankings: dict[str, dict[str, float]], measures: Sequence[Measure]
) -> dict[Measure, dict[str, float]]:
    """trec_eval's measures, one fresh pytrec_eval evaluator per (relevance level, judged-only) pair."""
    import pytrec_eval

    groups: dict[tuple[int, bool], list[Measure]] = {}
    for measure in sorted(measures, key=lambda measure: measure.rel is None):
        # Measures without a relevance threshold join any evaluator with the same judged-only flag.
        key = (
            (measure.rel, measure.judged_only)
            if measure.rel is not None
            else next((key for key in groups if key[1] == measure.judged_only), (1, measure.judged_only))
        )
        groups.setdefault(key, []).append(measure)
    values: dict[Measure, dict[str, float]] = {}
    for (relevance_level, judged_only), group in groups.items():
        labels = {measure: measure.trec_eval_name or _FAMILIES[measure.name].label for measure in group}
        # A fresh evaluator per call: reused ones dropped cut-off measures in old pytrec_eval versions.
        evaluator = pytrec_eval.RelevanceEvaluator(
            judgments, set(labels.values()), relevance_level=relevance_level, judged_docs_only_flag=judged_only
        )
        results = evaluator.evaluate(rankings)
        for measure, label in labels.items():
            per_topic = {qid: results[qid][label] for qid in rankings}
            if measure.name == "RR" and measure.cutoff is not None:
                per_topic = {qid: _reciprocal_rank_at(value, measure.cutoff) for qid, value in per_topic.items()}
            values[measure] = per_topic
    return values


def _reciprocal_rank_at(reciprocal_rank: float, cutoff: int) -> float:
    """RR@k from trec_eval's recip_rank, which is exactly 1/rank of the first relevant document (0 if none)."""
    if reciprocal_rank <= 0:
        return 0.0
    return reciprocal_rank if round(1 / reciprocal_rank) <= cutoff else 0.0


def _evaluate_with_gdeval(
    judgments: dict[str, dict[str, int]],
    rankings: dict[str, dict[str, float]],
    topics: list[str],
    measures: Sequence[Measure],
) -> dict[Measure, dict[str, float]]:
    """ERR@k and exponential-gain nDCG@k for every topic and cutoff from one grade matrix."""
    depth = None if any(measure.cutoff is None for measure in measures) else max(measure.cutoff for measure in measures)
    grades = gdeval.ranked_grade_matrix(judgments, rankings, topics, depth)
    ideal = gdeval.ideal_grade_matrix(judgments, topics, depth)
    values: dict[Measure, dict[str, float]] = {}
    for measure in measures:
        ranks = slice(None, measure.cutoff)
        if measure.name == "ERR":
            scores = gdeval.expected_reciprocal_rank(grades[:, ranks])
        else:
            scores = gdeval.exponential_ndcg(grades[:, ranks], ideal[:, ranks])
        values[measure] = dict(zip(topics, scores.tolist()))
    return values
