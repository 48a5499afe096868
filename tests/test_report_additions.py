"""The gap decomposition, the tau-against-alpha curve, MVE's note and the all-pairs table in the reports.

Each number a report shows is the JSON's, recomputed here independently: the gap terms from their definitions
(SIGIR 2013 Table 2's golden values), Kendall's tau from scipy and tau_AP from the naive loop of
tests/test_stats_rankings.py at each alpha of the sweep, and the alpha at which MVE first reorders two systems from
a brute-force scan.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats
from test_api import four_system_tables, write
from test_stats_rankings import naive_tau_ap

from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.report import html, markdown, terminal
from pytest_bvtest.report.outputs import evaluation_document
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.meanvar import first_reordering, mve_inter_topic

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def sigir2013_tables(tmp_path: Path) -> Path:
    """SIGIR 2013 Table 1's systems A, B, C over two topics, targets [0.7, 0.2] (the max over A, B, C and T)."""
    write(tmp_path, "scores.csv", "topic,A,B,C,T\n1,0.3,0.6,0.65,0.7\n2,0.1,0.08,0.03,0.2\n")
    return write(tmp_path, "bvtest.yaml", "measures: [AP]\nbaselines: scores.csv\ntable_format: wide-topics\n")


def test_the_gap_table_shows_sigir_2013_table_2_in_every_report(tmp_path):
    document = evaluation_document(evaluate_spec(load_spec(sigir2013_tables(tmp_path)), use_cache=False))
    evaluation = document["evaluations"][0]
    golden = {"A": (0.0225, 0.085), "B": (0.0001, 0.0122), "C": (0.0036, 0.0157)}  # Var(rho), E[rho²]
    for system in evaluation["systems"][:3]:
        gap = system["gap"]
        assert (gap["var"], gap["mse"]) == pytest.approx(golden[system["name"]], abs=1e-12)
        assert gap["var"] == pytest.approx(gap["var_target"] + gap["var_system"] - 2 * gap["cov"], abs=1e-15)
    lines = [text for text, _ in terminal.summary_lines(document, verbosity=1)]
    start = next(i for i, line in enumerate(lines) if line.startswith("Gap to the target"))
    assert lines[start + 1].split() == [
        "system",
        "Bias(rho)",
        "Var(rho)",
        "E[rho²]",
        "Var(x_T)",
        "Var(x)",
        "Cov(x_T,",
        "x)",
    ]
    assert lines[start + 2].split()[:4] == ["A", "0.2500", "0.0225", "0.0850"]  # Bias(rho) = mean(0.4, 0.1)
    rendered = markdown.render(document)
    assert "| A | 0.2500 | 0.0225 | 0.0850 |" in rendered
    page = html.render(document)
    assert re.search(r"<td>A</td><td[^>]*>0\.2500</td><td[^>]*>0\.0225</td>", page)


def test_tau_against_alpha_is_scipy_s_and_the_naive_tau_ap_at_every_alpha(tmp_path):
    evaluation = evaluate_spec(load_spec(four_system_tables(tmp_path)), use_cache=False)
    measure = evaluation.measure()
    scores = measure.matrix.scores
    sweep = measure.mve.sweep
    means = scores.mean(axis=1)
    for k, alpha in enumerate(sweep.alphas):
        values = np.array([mve_inter_topic(row, alpha).value for row in scores])
        assert sweep.kendall_tau[k] == pytest.approx(scipy_stats.kendalltau(means, values).statistic, abs=1e-12)
        assert sweep.tau_ap[k] == pytest.approx(naive_tau_ap(means, values), abs=1e-12)
    assert sweep.kendall_tau[list(sweep.alphas).index(0.0)] == 1.0 and min(sweep.kendall_tau) < 1.0
    page = html.render(evaluation_document(evaluation))
    assert "MVE&#x27;s ranking against the mean term&#x27;s as alpha grows" in page and "<polyline" in page
    rows = re.findall(r"<tr><td class=\"num\"[^>]*>(-?[\d.]+)</td><td class=\"num\"[^>]*>(-?[\d.]+)</td>", page)
    assert [float(alpha) for alpha, _ in rows[:9]] == sweep.alphas.tolist()


def test_the_first_reordering_alpha_is_where_a_scan_sees_the_ranking_change():
    rng = np.random.default_rng(5)
    reach, steps = 10.0, 20_000
    for _ in range(100):
        mu, sigma2 = rng.random(5), rng.random(5) * 0.1
        by_mean = tuple(np.argsort(-mu))
        for side in (1.0, -1.0):
            found = first_reordering(mu, sigma2, side)
            scan = side * np.linspace(0, reach, steps + 1)[1:]
            changed = next((a for a in scan if tuple(np.argsort(-(mu - a * sigma2))) != by_mean), None)
            if found is None or abs(found[0]) > reach:
                assert changed is None
            else:
                assert changed is not None and abs(changed - found[0]) <= 2 * reach / steps
                assert np.sign(found[0]) == side


def test_mve_says_when_its_variance_term_cannot_move_the_ranking(tmp_path):
    """At alpha 0.5 the four systems' MVE ranks as their means (the first crossing is at 1.16); at 2 it does not."""
    path = four_system_tables(tmp_path)
    path.write_text(path.read_text().replace("mve: {alpha: 2,", "mve: {alpha: 0.5,"))
    document = evaluation_document(evaluate_spec(load_spec(path), use_cache=False))
    evaluation = document["evaluations"][0]
    reordering = evaluation["mve"]["reordering"]
    assert reordering["alpha"] == pytest.approx(1.1561, abs=1e-4) and sorted(reordering["systems"]) == [
        "new",
        "production",
    ]
    note = (
        "MVE (inter-topic) at alpha 0.5 ranks the systems as their mean term does: its variance term reorders two of "
        "them first at alpha 1.1561 (production and new)"
    )
    assert note in markdown.render(document) and note in html.render(document).replace("&#x27;", "'")
    assert note in [text for text, _ in terminal.summary_lines(document, verbosity=1)]
    path.write_text(path.read_text().replace("mve: {alpha: 0.5,", "mve: {alpha: 2,"))
    stronger = evaluation_document(evaluate_spec(load_spec(path), use_cache=False))
    assert "ranks the systems as their mean term does" not in markdown.render(stronger)


def test_the_all_pairs_table_in_the_html_is_the_json_s(tmp_path):
    document = evaluation_document(evaluate_spec(load_spec(EXAMPLE / "bvtest.yaml"), use_cache=False))
    page = html.render(document)
    section = page[page.index('<section class="pairwise">') :]
    for evaluation in document["evaluations"]:
        table = evaluation["pairwise"]
        for system, mean in zip(table["systems"], table["means"]):
            beaten = sorted(
                "abcd"[table["systems"].index(pair["second"] if pair["difference"] > 0 else pair["first"])]
                for pair in table["pairs"]
                if pair["significant"] and system == (pair["first"] if pair["difference"] > 0 else pair["second"])
            )
            cell = f"{mean:.4f}" + (f"<sup>{''.join(beaten)}</sup>" if beaten else "")
            assert cell in section, (evaluation["measure"], system)


def test_over_query_variations_the_note_says_why_the_variance_term_is_weak():
    """Robust04's 249 topics with query variations (intra-topic form): sigma2_P sums w_t² var_t, so with equal weights
    the variance term is 249 times weaker than the mean term; the note says so."""
    from pytest_bvtest.report.wording import mve_reordering_lines

    evaluation = {
        "systems": [{"name": "ql"}, {"name": "rm3"}],
        "topics": [str(topic) for topic in range(249)],
        "mve": {
            "alpha": 2.0,
            "form": "intra-topic (covariance 0)",
            "reordering": {"alpha": 37.5, "systems": ["ql", "rm3"]},
        },
    }
    (line,) = mve_reordering_lines(evaluation)
    assert line == (
        "MVE (intra-topic (covariance 0)) at alpha 2 ranks the systems as their mean term does: its variance term "
        "reorders two of them first at alpha 37.5000 (ql and rm3); over query variations it sums w_t² var_t, with 249 "
        "equally weighted topics 249 times weaker than the mean term's w_t mu_t"
    )
    evaluation["mve"]["reordering"] = None
    assert "reorders two of them never, on that side of 0" in mve_reordering_lines(evaluation)[0]
    evaluation["mve"]["reordering"] = {"alpha": 1.5, "systems": ["ql", "rm3"]}
    assert mve_reordering_lines(evaluation) == []
