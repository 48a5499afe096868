"""The all-pairs comparison table (``bvtest compare``, the HTML report): its JSON form and its words as text, Markdown
and LaTeX (the HTML report lays out :func:`cells` itself).

ranx's table, which IR papers print: one row per system, one column per measure, each mean marked with the letters of
the systems it is significantly better than under the chosen paired test, corrected over the pairs of the measure.
Below it, every pair with its difference, wins/ties/losses and the p-values of each test (raw and corrected). Every
renderer reads the JSON form (:func:`~pytest_bvtest.report.jsonreport.pairwise_document`), as the other reports read
the session document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_bvtest.report.markdown import cell
from pytest_bvtest.spec.model import COMPARISON_TESTS

#: How each test and correction is named in the words.
TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test", "randomization": "randomization test"}
CORRECTION_NAMES = {
    "holm": "Holm's correction",
    "bonferroni": "Bonferroni's correction",
    "fdr_bh": "Benjamini-Hochberg's false discovery rate",
    "none": "no correction",
}
_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def letter(index: int) -> str:
    """The label of the ``index``-th system: a, b, ..., z, then aa, ab, ..."""
    return chr(ord("a") + index) if index < 26 else letter(index // 26 - 1) + chr(ord("a") + index % 26)


def _beaten(document: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per system, the letters of the systems it is significantly better than."""
    labels = {system: letter(i) for i, system in enumerate(document["systems"])}
    beaten: dict[str, list[str]] = {system: [] for system in document["systems"]}
    for pair in document["pairs"]:
        if pair["significant"] and pair["difference"] != 0:
            winner, loser = (
                (pair["first"], pair["second"]) if pair["difference"] > 0 else (pair["second"], pair["first"])
            )
            beaten[winner].append(labels[loser])
    return {system: sorted(letters, key=lambda label: (len(label), label)) for system, letters in beaten.items()}


def legend(documents: Sequence[Mapping[str, Any]]) -> str:
    """What the letters mean: the test, the correction and the level of the table."""
    first = documents[0]
    pairs = len(first["pairs"])
    corrected = (
        "uncorrected"
        if first["correction"] == "none"
        else f"{CORRECTION_NAMES[first['correction']]} over the {pairs} pair{'' if pairs == 1 else 's'} of each measure"
    )
    return (
        f"A letter marks a system significantly better than the system of that letter: {TEST_NAMES[first['test']]} "
        f"over topics, {corrected}, at level {first['alpha']:g}."
    )


def _systems(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(documents[0]["systems"])


def cells(documents: Sequence[Mapping[str, Any]], mark: Callable[[list[str]], str]) -> list[list[str]]:
    """One row per system: its letter, its name, and per measure its mean with the marks of the systems it beats."""
    rows = []
    beaten = [_beaten(document) for document in documents]
    for i, system in enumerate(_systems(documents)):
        cells = [letter(i), system]
        for document, marks in zip(documents, beaten):
            mean = document["means"][document["systems"].index(system)]
            cells.append(f"{mean:.4f}{mark(marks[system])}")
        rows.append(cells)
    return rows


def text_table(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table as aligned text lines, with its legend."""
    header = ["", "system", *(document["measure"] for document in documents)]
    rows = cells(documents, lambda letters: f" {''.join(letters)}" if letters else "")
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in (header, *rows)]
    return [*lines, "", legend(documents)]


def pair_lines(document: Mapping[str, Any]) -> list[str]:
    """Every pair of one measure: difference, wins/ties/losses, and each test's p-value, raw and corrected."""
    correction = document["correction"]
    header = ["pair", "difference", "W/T/L", *(f"p {name}" for name in COMPARISON_TESTS)]
    rows = []
    for pair in document["pairs"]:
        rows.append(
            [
                f"{pair['first']} - {pair['second']}",
                f"{pair['difference']:+.4f}",
                f"{pair['wins']}/{pair['ties']}/{pair['losses']}",
                *(
                    _p_cell(pair["p"][name], pair["adjusted"][name], correction)
                    + ("*" if name == document["test"] and pair["significant"] else "")
                    for name in COMPARISON_TESTS
                ),
            ]
        )
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header))]
    lines = [f"{document['measure']}: every pair, first minus second"]
    lines += [
        "  " + "  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in (header, *rows)
    ]
    shown = "" if correction == "none" else f" (raw, then corrected: {correction})"
    lines.append(
        f"  p: two-sided{shown}; randomization: {document['permutations']:,} sign flips, seed {document['seed']}; "
        f"* significant under the {TEST_NAMES[document['test']]}"
    )
    return lines


def _p_cell(raw: float, adjusted: float, correction: str) -> str:
    return f"{raw:.4f}" if correction == "none" else f"{raw:.4f} / {adjusted:.4f}"


def markdown_table(documents: Sequence[Mapping[str, Any]]) -> str:
    """The table in GitHub Markdown (names escaped as every table cell: they come from run files and specs)."""
    header = ["", "system", *(cell(document["measure"]) for document in documents)]
    rows = [
        [row[0], cell(row[1]), *row[2:]]
        for row in cells(documents, lambda letters: f"<sup>{''.join(letters)}</sup>" if letters else "")
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---", "---", *("---:" for _ in documents)]) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*lines, "", legend(documents)]) + "\n"


def latex_table(documents: Sequence[Mapping[str, Any]]) -> str:
    """The table as a LaTeX ``tabular`` (booktabs rules), marks as superscripts, as ranx writes it."""
    columns = "ll" + "r" * len(documents)
    lines = [
        "% " + legend(documents),
        f"\\begin{{tabular}}{{{columns}}}",
        "\\toprule",
        " & ".join(["", "System", *(_latex_text(document["measure"]) for document in documents)]) + " \\\\",
        "\\midrule",
    ]
    for row in cells(documents, lambda letters: f"$^{{{''.join(letters)}}}$" if letters else ""):
        lines.append(" & ".join([f"({row[0]})", _latex_text(row[1]), *row[2:]]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def _latex_text(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(character, character) for character in text)
