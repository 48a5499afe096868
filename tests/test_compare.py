"""``bvtest compare``: every system against every other, checked against scipy.stats and textbook corrections.

On the example project's runs (4 systems, 56 topics, nDCG@10 and AP): the t-test equals ``scipy.stats.ttest_rel``,
the signed-rank test ``scipy.stats.wilcoxon`` (its defaults), the randomization test ``scipy.stats.permutation_test``
within Monte-Carlo error (and an exact enumeration on 12 topics); Holm, Bonferroni and Benjamini-Hochberg are computed
here from the raw p-values by their textbook formulas (and BH by ``scipy.stats.false_discovery_control``).
"""

from __future__ import annotations

import itertools
import re
import shutil
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from pytest_bvtest.cli import main
from pytest_bvtest.errors import InputError
from pytest_bvtest.judging.comparisons import pairwise_comparisons
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.report.jsonreport import pairwise_document
from pytest_bvtest.report.outputs import evaluation_document
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.model import CompareSpec
from pytest_bvtest.spec.reader import load_spec

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


@pytest.fixture(scope="module")
def example_matrices() -> list[ScoreMatrix]:
    return [measure.matrix for measure in evaluate_spec(load_spec(EXAMPLE / "bvtest.yaml"), use_cache=False).measures]


def holm_by_hand(p: list[float]) -> list[float]:
    """Holm (1979): the i-th smallest (from 0) times k - i, the running maximum from the smallest up, capped at 1."""
    k = len(p)
    order = sorted(range(k), key=lambda i: p[i])
    adjusted, running = [0.0] * k, 0.0
    for rank, i in enumerate(order):
        running = max(running, (k - rank) * p[i])
        adjusted[i] = min(1.0, running)
    return adjusted


def bh_by_hand(p: list[float]) -> list[float]:
    """Benjamini & Hochberg (1995): the i-th smallest (from 1) times k / i, the running minimum from the largest."""
    k = len(p)
    order = sorted(range(k), key=lambda i: p[i])
    adjusted, running = [0.0] * k, 1.0
    for rank in range(k, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * k / rank)
        adjusted[i] = running
    return adjusted


def test_every_pair_on_the_example_matches_scipy(example_matrices):
    for matrix in example_matrices:
        (table,) = pairwise_comparisons([matrix], CompareSpec())
        assert len(table.pairs) == 6
        for pair in table.pairs:
            ours, theirs = matrix.row(pair.first), matrix.row(pair.second)
            assert pair.p["t"] == pytest.approx(scipy.stats.ttest_rel(ours, theirs).pvalue, abs=1e-12)
            assert pair.p["wilcoxon"] == pytest.approx(scipy.stats.wilcoxon(ours, theirs).pvalue, abs=1e-12)
            permuted = scipy.stats.permutation_test(
                (ours - theirs,),
                np.mean,
                permutation_type="samples",
                n_resamples=10_000,
                alternative="two-sided",
                rng=np.random.default_rng(7),
            )
            # two estimates of one p-value from 10,000 draws each: within 4.5 of their joint standard errors
            spread = np.sqrt(2 * max(permuted.pvalue, 1e-3) * (1 - permuted.pvalue) / 10_000)
            assert abs(pair.p["randomization"] - permuted.pvalue) <= 4.5 * spread + 2e-4, (matrix.measure, pair)
            difference = ours - theirs
            assert pair.difference == pytest.approx(difference.mean(), abs=1e-15)
            assert (pair.wins, pair.ties, pair.losses) == (
                int((difference > 0).sum()),
                int((difference == 0).sum()),
                int((difference < 0).sum()),
            )


def test_the_randomization_test_enumerates_every_sign_flip_on_few_topics(example_matrices):
    matrix = example_matrices[0].restricted(list(range(12)))  # 2^12 = 4,096 flips <= 10,000: every one
    (table,) = pairwise_comparisons([matrix], CompareSpec())
    for pair in table.pairs:
        difference = matrix.row(pair.first) - matrix.row(pair.second)
        observed = abs(difference.sum())
        flips = [abs(sum(s * d for s, d in zip(signs, difference))) for signs in itertools.product((1, -1), repeat=12)]
        expected = sum(flipped >= observed - 1e-12 for flipped in flips) / len(flips)
        assert pair.p["randomization"] == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "fdr_bh", "none"])
def test_each_correction_is_the_textbook_formula_over_the_pairs_of_a_measure(example_matrices, correction):
    for table in pairwise_comparisons(example_matrices, CompareSpec(correction=correction)):
        for test in ("t", "wilcoxon", "randomization"):
            raw = [pair.p[test] for pair in table.pairs]
            adjusted = [pair.adjusted[test] for pair in table.pairs]
            expected = {
                "holm": holm_by_hand(raw),
                "bonferroni": [min(1.0, p * len(raw)) for p in raw],
                "fdr_bh": bh_by_hand(raw),
                "none": raw,
            }[correction]
            assert adjusted == pytest.approx(expected, abs=1e-15)
            if correction == "fdr_bh":
                assert adjusted == pytest.approx(list(scipy.stats.false_discovery_control(raw)), abs=1e-15)


def test_the_table_marks_exactly_the_significant_pairs_in_every_format(example_matrices):
    """The letters of the text, Markdown and LaTeX tables are those of the pairs whose chosen test, corrected, is at or
    below alpha, given to the system with the higher mean."""
    settings = CompareSpec(test="wilcoxon", correction="bonferroni", alpha=0.05)
    tables = pairwise_comparisons(example_matrices, settings)
    expected: dict[tuple[str, str], set[str]] = {}
    for table in tables:
        letters = {system: "abcd"[i] for i, system in enumerate(table.systems)}
        for system in table.systems:
            expected[table.measure, system] = set()
        for pair in table.pairs:
            if pair.adjusted["wilcoxon"] <= 0.05:
                winner, loser = (pair.first, pair.second) if pair.difference > 0 else (pair.second, pair.first)
                expected[table.measure, winner].add(letters[loser])
    assert any(expected.values()) and not all(expected.values())
    out = StringIO()
    arguments = ["compare", "--spec", str(EXAMPLE / "bvtest.yaml"), "--no-cache", "--test", "wilcoxon"]
    for form in ("markdown", "latex", "text"):
        out = StringIO()
        assert main([*arguments, "--correction", "bonferroni", "--format", form], out) == 0
        text = out.getvalue()
        assert "Wilcoxon signed-rank test over topics, Bonferroni's correction over the 6 pairs" in text
        for table in tables:
            column = [document["measure"] for document in map(pairwise_document, tables)].index(table.measure)
            for system in table.systems:
                mean = table.means[table.systems.index(system)]
                if form == "markdown":
                    row = next(line for line in text.splitlines() if f"| {system} |" in line)
                    cell = row.split(" | ")[2 + column]
                    found = set(re.findall(r"<sup>(\w+)</sup>", cell)[0]) if "<sup>" in cell else set()
                elif form == "latex":
                    row = next(line for line in text.splitlines() if f"& {system} &" in line)
                    cell = row.split(" & ")[2 + column]
                    found = set(re.findall(r"\$\^\{(\w+)\}\$", cell)[0]) if "$^" in cell else set()
                else:
                    row = next(line for line in text.splitlines() if f" {system} " in line)
                    values = re.findall(r"(-?\d\.\d{4})( [a-z]+)?", row)
                    found = set(values[column][1].strip())
                assert f"{mean:.4f}" in cell if form != "text" else True
                assert found == expected[table.measure, system], (form, table.measure, system)


def test_the_spec_chooses_the_test_and_the_correction_and_the_report_carries_the_table(tmp_path):
    spec_text = (EXAMPLE / "bvtest.yaml").read_text()
    chosen = spec_text.replace(
        "analysis:\n", "analysis:\n  compare: {test: randomization, correction: fdr_bh, alpha: 0.1}\n"
    )
    assert chosen != spec_text
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))
    (project / "bvtest.yaml").write_text(chosen)
    document = evaluation_document(evaluate_spec(load_spec(project / "bvtest.yaml"), use_cache=False))
    table = document["evaluations"][0]["pairwise"]
    assert (table["test"], table["correction"], table["alpha"]) == ("randomization", "fdr_bh", 0.1)
    raw = [pair["p"]["randomization"] for pair in table["pairs"]]
    assert [pair["adjusted"]["randomization"] for pair in table["pairs"]] == pytest.approx(bh_by_hand(raw), abs=1e-15)
    assert [pair["significant"] for pair in table["pairs"]] == [p <= 0.1 for p in bh_by_hand(raw)]


@pytest.mark.parametrize(
    ("compare", "message"),
    [
        ("{test: sign}", "unknown test 'sign'"),
        ("{correction: fdr_by}", "unknown correction 'fdr_by'"),
        ("{alpha: 1.5}", "must lie between 0 and 1"),
        ("{tests: t}", "unknown compare key; did you mean `test`"),
    ],
)
def test_a_wrong_compare_setting_is_refused_at_its_line(tmp_path, compare, message):
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(f"measures: [AP]\nbaselines: {{a: {{scores: s.csv}}}}\nanalysis:\n  compare: {compare}\n")
    (tmp_path / "s.csv").write_text("system,topic,value\na,1,0.5\n")
    with pytest.raises(InputError, match=message):
        load_spec(spec)


def test_compare_from_runs_names_them_and_refuses_mixing_a_spec(capsys):
    runs = [f"{name}={EXAMPLE / 'runs' / f'{name}.run'}" for name in ("production", "candidate-pass")]
    qrels = str(EXAMPLE / "eval" / "qrels.txt")
    assert main(["compare", "--qrels", qrels, "-m", "AP", "--correction", "none", *runs]) == 0
    out = capsys.readouterr().out
    assert "a  production" in out and "b  candidate-pass" in out and "uncorrected" in out
    assert main(["compare", "--spec", str(EXAMPLE / "bvtest.yaml"), *runs]) == 2
    assert "either --spec or runs" in capsys.readouterr().err
    assert main(["compare", "--qrels", qrels, "-m", "AP", runs[0]]) == 2
    assert "at least two systems" in capsys.readouterr().err
