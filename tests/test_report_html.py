"""The HTML report: its content from the session document, its escaping, and a real headless browser.

The browser tests run Chromium (Debian's ``chromium`` package) and skip where it is not installed.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import shared_path, words
from test_report_render import (
    EXAMPLE,
    FAIL_ID,
    NDCG_SCORES,
    TOPICS,
    WARN_ID,
    read_qrels_dict,
    read_run_dict,
    sample_document,
)

from pytest_bvtest.report import html, svg
from pytest_bvtest.report.history import gate_series

HOSTILE = '<script>alert("x")</script> & "quotes"'


class Page(HTMLParser):
    """The parts of a report the tests read: every table's header and rows (cell texts and data-sort
    values, by the table's class), the difference plot's bars, the headline and the script count."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.bars: list[list[tuple[str, float]]] = []
        self.scripts = 0
        self.headline = ""
        self._table: dict[str, Any] | None = None
        self._row: list[str] | None = None
        self._sorts: list[str | None] = []
        self._row_class = ""
        self._cell: list[str] | None = None
        self._in_h1 = False
        self._in_difference = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script":
            self.scripts += 1
        elif tag == "h1":
            self._in_h1 = True
        elif tag == "figure" and attributes.get("class") == "difference":
            self._in_difference = True
            self.bars.append([])
        elif tag == "rect" and self._in_difference and "data-topic" in attributes:
            self.bars[-1].append((attributes["data-topic"], float(attributes["data-value"])))
        elif tag == "table":
            self._table = {"header": [], "rows": [], "sorts": []}
            self.tables.setdefault(attributes.get("class") or "", []).append(self._table)
        elif tag == "tr" and self._table is not None:
            self._row, self._sorts, self._row_class = [], [], attributes.get("class") or ""
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._sorts.append(attributes.get("data-sort"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._in_h1 = False
        elif tag == "figure":
            self._in_difference = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if not self._table["header"]:
                self._table["header"] = self._row
            elif self._row_class.startswith("sentence"):  # a gate's sentence, under its row
                self._table.setdefault("sentences", []).append(self._row[1])
            else:
                self._table["rows"].append(self._row)
                self._table["sorts"].append(self._sorts)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_h1:
            self.headline += data


def copy_example(folder: Path) -> None:
    shutil.copytree(EXAMPLE, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))


def with_per_topic(document: dict[str, Any]) -> dict[str, Any]:
    """The sample document with its nDCG@10 matrix per system and query texts, one of them hostile."""
    document = copy.deepcopy(document)
    evaluation = document["evaluations"][0]
    for entry, scores in zip(evaluation["systems"], NDCG_SCORES):
        entry["per_topic"] = scores.tolist()
    evaluation["topic_texts"] = ["apple pie", HOSTILE, None, "banana", "cherry"]
    return document


def test_gate_rows_and_headline() -> None:
    page = Page(html.render(sample_document()))
    assert page.headline == "✗ pytest-bvtest: 1 of 4 gates fails, for 2 queries"
    (gates,) = page.tables["gates"]
    assert gates["header"] == [
        "outcome",
        "gate",
        "value",
        "compared with",
        "change",
        "limit",
        "rule",
        "false alarm",
        "equal change as bad",
        "bootstrap interval",
    ]
    # one spec: the gates are named without it
    rows = {f"bvtest.yaml::{row[1]}": row for row in gates["rows"]}
    assert list(rows) == [FAIL_ID, "bvtest.yaml::nDCG@10::mean", WARN_ID, "bvtest.yaml::AP::bias2"]
    assert rows[FAIL_ID] == [
        "✗ FAIL",
        "nDCG@10::bias2_plus_var",
        "0.0371",
        "0.0158 production",
        "+0.02133 (worse)",
        "<= 0.0174",
        "max_increase 10%",
        "46.9%",
        "-",
        "-",
    ]
    assert rows[WARN_ID][0] == "⚠ OK*" and rows[WARN_ID][4] == "-0.162 (worse)"
    assert rows[WARN_ID][7:] == ["6.25%", "-", "candidate - reference [-0.410, 0.0200] 95%, seed 0"]
    # each gate's plain sentence under its row; a gate without one shows its message's first line
    assert gates["sentences"][0] == (
        "Quality varies more from query to query or sits further below the best "
        "achievable than in production (Bias²+Var 0.0371 vs 0.0158, limit 0.0174)."
    )
    assert gates["sentences"][1] == (
        "nDCG@10 mean passed: candidate 0.478; bound min 0.4 requires >= 0.4; headroom 0.078"
    )
    # the numeric cells sort by the exact value
    sorts = dict(zip(rows, gates["sorts"]))
    assert sorts[FAIL_ID][2:6] == ["0.037136", "0.015804", "", "0.0173844"]
    # two specs: every gate with its spec file
    document = sample_document()
    document["evaluations"][1]["spec"] = "other/bvtest.yaml"
    named = [row[1] for row in Page(html.render(document)).tables["gates"][0]["rows"]]
    assert named == [FAIL_ID, "bvtest.yaml::nDCG@10::mean", WARN_ID, "bvtest.yaml::AP::bias2"]
    # the first screen: the queries that got worse and the gate they break
    (harmed,) = page.tables["harmed"]
    assert harmed["header"] == ["topic", "nDCG@10"]
    assert harmed["rows"] == [["302", "0.7000 → 0.2000 (-0.5000)"], ["301", "0.6200 → 0.6000 (-0.0200)"]]
    # the failing gate's blamed topics, with each topic's share of the change (folded)
    blame = next(table for table in page.tables[""] if table["header"][0] == "topic")
    assert blame["header"] == ["topic", "candidate", "production", "score Δ", "moves Bias²+Var by"]
    assert blame["rows"] == [
        ["302", "0.2000", "0.7000", "-0.5000", "+0.0286"],
        ["301", "0.6000", "0.6200", "-0.0200", "+0.0009"],
    ]


def test_statistics_table_and_passing_headline() -> None:
    document = sample_document()
    page = Page(html.render(document))
    statistics = page.tables["statistics sortable"][0]
    assert statistics["header"] == [
        "system",
        "role",
        "mean",
        "Bias²",
        "Var",
        "Bias²+Var",
        "URisk",
        "GeoRisk",
        "MVE",
        "gates",
    ]
    assert statistics["rows"][2] == [
        "candidate",
        "candidate",
        "0.4780",
        "0.0100",
        "0.0271",
        "0.0371",
        "-0.1620",
        "0.4733",
        "0.4237",
        "1 OK, 1 OK*, 1 FAIL",
    ]
    assert statistics["sorts"][2][4] == "0.027136"
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            gate.update(passed=True, outcome="OK", warning=None)
    document.update(passed=True, summary={"gates": 4, "failed": 0, "warnings": 0})
    assert Page(html.render(document)).headline == "✓ pytest-bvtest: 4 gates pass"


def test_difference_plot_is_sorted_and_the_topic_table_holds_every_score() -> None:
    document = with_per_topic(sample_document())
    text = html.render(document)
    page = Page(text)
    # candidate − production on 301..305: +0.04, -0.50, +0.05, +0.04, +0.06, largest gain first
    (bars,) = page.bars
    assert [topic for topic, _ in bars] == ["305", "303", "301", "304", "302"]
    assert [round(value, 10) for _, value in bars] == [0.06, 0.05, 0.04, 0.04, -0.5]
    assert "topic 302 (&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;): -0.5000" in text
    topics = page.tables["topics sortable"][0]
    assert topics["header"] == ["topic", "query", "production", "bm25", "candidate", "Δ candidate − production"]
    assert [row[0] for row in topics["rows"]] == TOPICS
    assert topics["rows"][1] == ["302", HOSTILE, "0.7000", "0.4100", "0.2000", "-0.5000"]
    assert topics["rows"][2][1] == ""
    assert [float(row[5]) for row in topics["sorts"]] == pytest.approx((NDCG_SCORES[2] - NDCG_SCORES[0]).tolist())


def test_hostile_texts_are_escaped() -> None:
    document = with_per_topic(sample_document())
    evaluation = document["evaluations"][0]
    evaluation["systems"][1]["name"] = "<img src=x onerror=alert(1)>"
    evaluation["gates"][0]["sentence"] = HOSTILE
    evaluation["spec"] = "<b>spec</b>.yaml"
    text = html.render(document)
    page = Page(text)
    assert page.scripts == 1  # the sorting script, nothing from the inputs
    assert "<img" not in text and "<b>" not in text and "<script>alert" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert page.tables["gates"][0]["sentences"][0] == HOSTILE


def test_nothing_is_loaded_from_elsewhere() -> None:
    text = html.render(with_per_topic(sample_document()))
    assert "default-src 'none'" in text  # the browser refuses anything from elsewhere (checked in a browser below)
    assert "https://" not in text and text.count("http://") == text.count('xmlns="http://www.w3.org/2000/svg"') > 0
    assert "<link" not in text and " src=" not in text


def test_bias_variance_plot_draws_the_gates_limits() -> None:
    document = sample_document()
    text = html.render(document)
    # the failing Bias²+Var gate's limit is a dashed line labelled with its rule
    assert "Bias²+Var limit &lt;= 0.0174 (max_increase 10%)" in text
    # points, not lines: no polyline joins the systems
    bias_variance = text.split('<figure class="bias-variance">')[1].split("</figure>")[0]
    assert "<polyline" not in bias_variance
    # Bias² (circles) and Bias²+Var (triangles) of the 3 systems, each shape once more in the legend
    assert bias_variance.count("<circle") == 4 and bias_variance.count("<polygon") == 4
    assert "lower-left is better" in text


def test_history_section(tmp_path: Path) -> None:
    records = [
        {
            "timestamp": f"2026-11-2{day}T10:00:00+00:00",
            "commit": f"c{day}",
            "spec": "bvtest.yaml",
            "gates": [
                {
                    "id": FAIL_ID,
                    "statistic": "bias2_plus_var",
                    "measure": "nDCG@10",
                    "value": value,
                    "limit": 0.0174,
                    "outcome": outcome,
                }
            ],
        }
        for day, value, outcome in ((1, 0.015, "OK"), (2, 0.016, "OK"), (3, 0.0371, "FAIL"))
    ]
    series = gate_series(records)
    text = html.render(sample_document(), series)
    section = text.split('<section class="history">')[1]
    assert f"{FAIL_ID}: 3 records" in section
    assert "2026-11-23T10:00:00+00:00: 0.0371 (FAIL)" in section
    assert section.count("<polyline") == 1


def test_ticks_are_round_and_cover_the_range() -> None:
    assert svg.ticks(0.0, 0.0885) == pytest.approx([0.0, 0.02, 0.04, 0.06, 0.08, 0.1])
    assert svg.ticks(-0.5, 0.06) == pytest.approx([-0.6, -0.4, -0.2, 0.0, 0.2])
    assert svg.ticks(0.0, 0.0251) == pytest.approx([0.0, 0.01, 0.02, 0.03])


# --- written by the plugin and the command line, from a real evaluation ---------------------------


def test_plugin_and_cli_write_the_same_report_from_a_real_evaluation(tmp_path: Path, pytester: pytest.Pytester) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from pytest_bvtest.cli import main

    report = tmp_path / "cli.html"
    arguments = [
        "check",
        str(EXAMPLE / "bvtest.yaml"),
        "--run",
        str(EXAMPLE / "runs" / "candidate-risky.run"),
        "--no-cache",
        "--html",
        str(report),
    ]
    with open(tmp_path / "out.txt", "w", encoding="utf-8") as out:
        code = main(arguments, out=out)
    assert code == 0  # RM3's Var growth is within what the five gates together see (family-wise limits)
    page = Page(report.read_text(encoding="utf-8"))
    # AP's big improvement is a note said once, not a warning on the gate
    assert page.headline == "✓ pytest-bvtest: 5 gates pass"
    outcomes = {row[1]: row[0] for row in page.tables["gates"][0]["rows"]}
    assert set(outcomes.values()) == {"✓ OK"} and len(outcomes) == 5
    text = report.read_text(encoding="utf-8")
    assert '<p class="note">A big improvement over production: mean AP 0.4866 → 0.5574' in text
    # under the headline: how often the five gates together and each alone fail an equal-quality change
    assert (
        '<p class="sure"><strong>How sure:</strong></p><ul class="sure"><li>An equal-quality change fails at least '
        f"one of these 5 gates ({EXAMPLE / 'bvtest.yaml'}, against production) 4.99% of the time (10,000 swaps), "
        "each gate alone 1.55%; the spec allows 5% together (family-wise limits).</li><li>Power ("
    ) in text
    # the difference plot against pytrec_eval's per-topic nDCG@10, sorted
    qrels = read_qrels_dict(EXAMPLE / "eval" / "qrels.txt")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    scores = {
        name: evaluator.evaluate(read_run_dict(EXAMPLE / "runs" / f"{name}.run"))
        for name in ("candidate-risky", "production")
    }
    deltas = {
        topic: scores["candidate-risky"][topic]["ndcg_cut_10"] - scores["production"][topic]["ndcg_cut_10"]
        for topic in scores["production"]
    }
    bars = page.bars[0]
    assert {topic for topic, _ in bars} == set(deltas)
    assert [value for _, value in bars] == sorted((value for _, value in bars), reverse=True)
    assert dict(bars) == pytest.approx(deltas, abs=1e-12)
    # the command that reproduces the verdict: the one run, the run named as it was
    assert (
        f'<p class="command"><strong>Reproduce:</strong> <code>bvtest check {EXAMPLE / "bvtest.yaml"} --run '
        f"{EXAMPLE / 'runs' / 'candidate-risky.run'}</code></p>"
    ) in text
    # five gates pass, one by a hair: the first screen says so
    assert (
        '<p class="warning"><strong>Near miss:</strong> nDCG@10::var passes by 0.000126: nDCG@10 Var 0.084 against a '
        "limit of 0.0841, 99% of the way from production&#x27;s 0.0706</p>"
    ) in text
    # query texts come from the spec's topics file
    topics = page.tables["topics sortable"][0]
    assert topics["rows"][22][:2] == ["23", "cache function results"]

    copy_example(pytester.path)
    (pytester.path / "report").mkdir()
    result = pytester.runpytest_subprocess(
        "bvtest.yaml",
        "--bvtest-run",
        "runs/candidate-risky.run",
        "--bvtest-no-cache",
        "--bvtest-html",
        "report/out.html",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.OK
    plugin_page = Page((pytester.path / "report" / "out.html").read_text(encoding="utf-8"))
    assert plugin_page.tables["gates"] == page.tables["gates"]
    assert plugin_page.bars == page.bars


# --- a real browser ---------------------------------------------------------------------------------

CHROMIUM = next(filter(None, (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome"))), None)
needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)")


def browse(page: Path, *arguments: str) -> tuple[str, list[str]]:
    """Chromium's DOM after the page's scripts ran, and its console lines (errors, CSP violations)."""
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
        *arguments,
        page.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    return result.stdout, [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


@needs_browser
def test_the_browser_reports_console_errors_and_blocked_loads(tmp_path: Path) -> None:
    """The check below can fail: a page with a script error and an external image shows both."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>"
        '<img src="https://example.com/a.png">'
        "<script>undefinedFunction();</script></body></html>",
        encoding="utf-8",
    )
    _, console = browse(page, "--dump-dom")
    assert any("undefinedFunction is not defined" in line for line in console)
    assert any("violates the following Content Security Policy" in line for line in console)


@needs_browser
def test_the_report_loads_without_console_errors_and_shows_every_gate(tmp_path: Path) -> None:
    document = with_per_topic(sample_document())
    page = tmp_path / "report.html"
    page.write_text(html.render(document), encoding="utf-8")
    dom, console = browse(page, "--dump-dom")
    assert console == []
    rendered = Page(dom)
    assert rendered.headline == "✗ pytest-bvtest: 1 of 4 gates fails, moved by 2 queries"  # 301 gained here
    assert [f"bvtest.yaml::{row[1]}" for row in rendered.tables["gates"][0]["rows"]] == [
        gate["id"] for evaluation in document["evaluations"] for gate in evaluation["gates"]
    ]
    assert rendered.tables["topics sortable"][0]["rows"][1][1] == HOSTILE
    shot = tmp_path / "report.png"
    browse(page, f"--screenshot={shot}", "--window-size=1280,2000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@needs_browser
@pytest.mark.parametrize("clicks", [1, 2])
def test_clicking_a_column_sorts_the_topic_table(tmp_path: Path, clicks: int) -> None:
    document = with_per_topic(sample_document())
    text = html.render(document)
    # click the Δ header (the table's last column) as a reader would, before the DOM is dumped
    click = (
        "<script>var b = document.querySelector('table.topics thead th:last-child button');"
        + "b.click();" * clicks
        + "</script></body>"
    )
    page = tmp_path / "sorted.html"
    page.write_text(text.replace("</body>", click), encoding="utf-8")
    dom, console = browse(page, "--dump-dom")
    assert console == []
    rows = Page(dom).tables["topics sortable"][0]["rows"]
    deltas = dict(zip(TOPICS, (NDCG_SCORES[2] - NDCG_SCORES[0]).tolist()))
    expected = sorted(TOPICS, key=lambda topic: deltas[topic], reverse=clicks == 2)
    assert [row[0] for row in rows] == expected
    assert ('aria-sort="ascending"' if clicks == 1 else 'aria-sort="descending"') in dom


# --- the PNG plots draw the same pictures -------------------------------------------------------------


def test_png_plots_draw_points_limits_the_difference_plot_and_the_corner_cue(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from pytest_bvtest.report import plots

    document = with_per_topic(sample_document())
    evaluation = document["evaluations"][0]
    figure = plots._bias_variance_figure(Figure, evaluation)
    (axes,) = figure.axes
    markers = [line for line in axes.lines if line.get_marker() in ("o", "s", "^")]
    assert [line.get_linestyle() for line in markers] == ["None"] * 3  # systems are not joined
    # sorted by Bias²: candidate 0.01, production 0.001444 ... first production, then candidate, then bm25
    assert list(markers[0].get_ydata()) == [0.001444, 0.01, 0.112896]
    limits = [line for line in axes.lines if "limit" in line.get_label()]
    assert [(line.get_label(), list(line.get_ydata())) for line in limits] == [
        ("Bias²+Var limit <= 0.0174 (max_increase 10%)", [0.0173844, 0.0173844])
    ]
    assert limits[0].get_color() == plots.SERIES_COLORS[2] and limits[0].get_linestyle() == "--"
    scatter = plots._scatter_figure(Figure, evaluation).axes[0]
    assert [text.get_text() for text in scatter.texts if "better" in text.get_text()] == ["lower-left is better"]
    assert scatter.get_xlim()[0] == 0 and scatter.get_ylim()[0] == 0
    difference = plots._difference_figure(Figure, evaluation).axes[0]
    heights = [round(patch.get_height(), 10) for patch in difference.patches]
    assert heights == [0.06, 0.05, 0.04, 0.04, -0.5]
    assert [label.get_text() for label in difference.get_xticklabels()] == ["305", "303", "301", "304", "302"]
    written = plots.write_plots(document, tmp_path)
    assert [path.name for path in written] == [
        "bvtest-nDCG-10-bias-variance.png",
        "bvtest-nDCG-10-scatter.png",
        "bvtest-nDCG-10-difference.png",
        "bvtest-AP-bias-variance.png",
        "bvtest-AP-scatter.png",
    ]  # AP has no per-topic scores in this document


# --- history: the command and the HTML section -------------------------------------------------------


def history_records() -> list[dict[str, Any]]:
    return [
        {
            "timestamp": f"2026-11-2{day}T10:00:00+00:00",
            "commit": f"c{day}",
            "spec": "bvtest.yaml",
            "gates": [
                {
                    "id": FAIL_ID,
                    "statistic": "bias2_plus_var",
                    "measure": "nDCG@10",
                    "value": value,
                    "limit": limit,
                    "outcome": outcome,
                },
                {
                    "id": "bvtest.yaml::nDCG@10::mean",
                    "statistic": "mean",
                    "measure": "nDCG@10",
                    "value": 0.5 + day / 100,
                    "limit": 0.4,
                    "outcome": "OK",
                },
            ],
        }
        for day, value, limit, outcome in (
            (1, 0.015, 0.0174, "OK"),
            (2, 0.016, 0.0181, "OK"),
            (3, 0.0371, 0.0174, "FAIL"),
        )
    ]


def test_history_command_prints_each_gate_and_writes_one_chart_per_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import xml.etree.ElementTree as ElementTree

    from pytest_bvtest.cli import main
    from pytest_bvtest.report.history import append_history

    path = tmp_path / "history.jsonl"
    append_history(path, history_records()[:2])
    with open(path, "a", encoding="utf-8") as stream:
        stream.write("not a record\n")
    append_history(path, history_records()[2:])
    out = io.StringIO()
    assert main(["history", str(path), "--plot", str(tmp_path / "charts")], out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        "gate                                  records  latest  limit   outcomes, oldest first",
        "bvtest.yaml::nDCG@10::bias2_plus_var  3        0.0371  0.0174  OK OK FAIL",
        "bvtest.yaml::nDCG@10::mean            3        0.53    0.4     OK OK OK",
    ]
    assert lines[3:] == [
        f"wrote {tmp_path / 'charts' / 'bvtest.yaml-nDCG-10-bias2-plus-var.svg'}",
        f"wrote {tmp_path / 'charts' / 'bvtest.yaml-nDCG-10-mean.svg'}",
    ]
    assert capsys.readouterr().err == f"bvtest: warning: {path}:3: not a JSON record (Expecting value); skipped\n"
    chart = ElementTree.parse(tmp_path / "charts" / "bvtest.yaml-nDCG-10-bias2-plus-var.svg").getroot()
    namespace = "{http://www.w3.org/2000/svg}"
    assert chart.find(f"{namespace}style") is not None  # styled on its own, outside the HTML report
    tips = [element.findtext(f"{namespace}title") for element in chart.iter(f"{namespace}circle")]
    assert tips[:3] == [
        "2026-11-21T10:00:00+00:00: 0.015 (OK)",
        "2026-11-22T10:00:00+00:00: 0.016 (OK)",
        "2026-11-23T10:00:00+00:00: 0.0371 (FAIL)",
    ]
    # the limit steps from record to record: 0.0174, 0.0181, 0.0174
    (limit,) = [
        element for element in chart.iter(f"{namespace}path") if element.findtext(f"{namespace}title") == "limit"
    ]
    assert limit.get("d").count(" V") == 2

    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["history", str(empty)], out=io.StringIO()) == 2
    assert "the history file has no gate records" in capsys.readouterr().err


def test_the_plugins_html_report_draws_the_history(pytester: pytest.Pytester) -> None:
    copy_example(pytester.path)
    for run in ("candidate-pass", "past-release"):
        pytester.runpytest_subprocess(
            "bvtest.yaml",
            "--bvtest-run",
            f"runs/{run}.run",
            "--bvtest-history",
            "history.jsonl",
            "--bvtest-html",
            "report.html",
            "-p",
            "no:cacheprovider",
        )
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    section = text.split('<section class="history">')[1]
    # this session's record is drawn too: two records per gate, the second (last quarter's release) failing on the mean
    assert section.count(": 2 records</figcaption>") == 5
    mean = section.split("bvtest.yaml::nDCG@10::mean over time")[-1].split("</svg>")[0]
    assert [outcome for outcome in ("(OK)", "(FAIL)") if outcome in mean] == ["(OK)", "(FAIL)"]


# --- links to the documentation ----------------------------------------------------------------------


class FakeMetadata:
    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    def get_all(self, name: str) -> list[str] | None:
        return self.urls if name == "Project-URL" else None


@pytest.mark.parametrize("urls", [["Source, https://example.org/src"], []])
def test_the_footers_documentation_links_are_clickable_only_with_a_declared_url(
    monkeypatch: pytest.MonkeyPatch, urls: list[str]
) -> None:
    from pytest_bvtest.report import markdown

    declared = ["Documentation, https://example.org/bvtest/docs"] + urls
    monkeypatch.setattr(markdown, "metadata", lambda name: FakeMetadata(declared))
    assert markdown.documentation_url() == "https://example.org/bvtest/docs/"
    footer = markdown.what_to_do(sample_document())[-1]
    assert "[Bias²+Var](https://example.org/bvtest/docs/concepts.md#bias-and-variance)" in footer
    assert '<a href="https://example.org/bvtest/docs/concepts.md#bias-and-variance">Bias²+Var</a>' in html.render(
        sample_document()
    )
    # without one, the docs are named by their path in pytest-bvtest, not linked: a relative link would
    # point into the reader's repository, where they are not
    monkeypatch.setattr(markdown, "metadata", lambda name: FakeMetadata(urls))
    assert markdown.documentation_url() is None
    footer = markdown.what_to_do(sample_document())[-1]
    assert "Bias²+Var (`docs/concepts.md#bias-and-variance` in pytest-bvtest)" in footer and "](" not in footer
    rendered = html.render(sample_document())
    assert "Bias²+Var (<code>docs/concepts.md#bias-and-variance</code> in pytest-bvtest)" in rendered


def test_the_report_of_129_real_trec8_runs_names_only_the_marked_systems_on_the_axis(tmp_path: Path) -> None:
    from test_report_render import real_trec8_document

    document = real_trec8_document()
    path = shared_path("newbestsub_named_matrices", "AH99.csv")
    scores = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    for entry, row in zip(document["evaluations"][0]["systems"], scores):
        entry["per_topic"] = row.tolist()
    text = html.render(document)
    page = Page(text)
    (bars,) = page.bars
    names = [entry["name"] for entry in document["evaluations"][0]["systems"]]
    expected = scores[names.index("READWARE2")] - scores[names.index("pir9Aatd")]
    assert [value for _, value in bars] == pytest.approx(sorted(expected.tolist(), reverse=True), abs=1e-12)
    topics = page.tables["topics sortable"][0]
    assert len(topics["header"]) == 2 + 129 + 1 and len(topics["rows"]) == 50
    # past 40 systems only the candidate's and the reference's names label the bias-variance axis
    bias_variance = text.split('<figure class="bias-variance">')[1].split("</figure>")[0]
    assert bias_variance.count("rotate(-40)") == 2


def test_an_analysis_only_document_and_undefined_values() -> None:
    from test_report_render import analysis_only_document

    document = with_per_topic(analysis_only_document())
    document["evaluations"][0]["systems"][0].update(bias2=None, georisk="Infinity")
    page = Page(html.render(document))
    assert page.headline == "✓ pytest-bvtest: analysis only, no gates"
    assert "gates" not in page.tables and page.bars == []  # no candidate and reference: no difference plot
    statistics = page.tables["statistics sortable"][0]
    assert statistics["rows"][0][3] == "-" and statistics["sorts"][0][3] == ""
    assert statistics["rows"][0][7] == "inf" and statistics["sorts"][0][7] == "Infinity"  # JavaScript's Number reads it
    assert page.tables["topics sortable"][0]["header"] == ["topic", "query", "production", "bm25", "candidate"]


def test_the_ini_setting_writes_beside_the_ini_file_and_stays_inside_the_project(pytester: pytest.Pytester) -> None:
    copy_example(pytester.path)
    ini = pytester.path / "pytest.ini"
    ini.write_text("[pytest]\nbvtest_html = reports/page.html\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("bvtest.yaml", "--bvtest-no-cache", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert Page((pytester.path / "reports" / "page.html").read_text(encoding="utf-8")).headline.startswith("✓")
    ini.write_text("[pytest]\nbvtest_html = ../outside.html\n", encoding="utf-8")
    refused = pytester.runpytest_subprocess("bvtest.yaml", "--bvtest-no-cache", "-p", "no:cacheprovider")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR  # when pytest starts, before any gate runs
    refused.stderr.fnmatch_lines(["ERROR: bvtest: ini setting bvtest_html = *outside.html* is outside the project*"])
    assert not (pytester.path.parent / "outside.html").exists()


def test_real_ok_star_from_a_gates_own_warning_is_explained_on_the_html_page(tmp_path: Path) -> None:
    """DL-HARD: BM25+ELECTRA cut by two topics against itself. The gate's limit cannot fail (only 4 swaps differ);
    its sentence points to the warning, which the page showed only for passes within noise."""
    import gzip
    from html import escape

    from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
    from pytest_bvtest.report import outputs

    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    with gzip.open(runs / "bm25+electra-mp.run.gz", "rt") as full:
        cut = [line for line in full if line.split()[0] not in ("1056204", "1049519")]
    (tmp_path / "cut.run").write_text("".join(cut))
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {shared_path('dl_hard', 'dataset', 'dl_hard-doc.qrels')}\n"
        "measures: [nDCG@10]\n"
        f"baselines: {{production: {runs / 'bm25+electra-mp.run.gz'}}}\n"
        "candidate: cut.run\n"
        "cache: false\n"
        "gates: [{statistic: var, max_increase: 5%, false_alarm: 0.05}]\n"
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False)
    gate = evaluation.measure().gates[0]
    own = next(
        message for message in words(gate)["guards"] if message.startswith("the null of no change is too coarse")
    )
    page = html.render(outputs.evaluation_document(evaluation))
    assert f"<strong>Warning</strong> (<code>nDCG@10::var</code>): {escape(own)}</p>" in page
    assert escape(words(gate)["sentence"]) in page and words(gate)["sentence"].startswith(
        "Holds on paper, but do not trust it"
    )


# --- what the screenshots of docs/images/ showed (issue 21) ------------------------------------------------------


def test_a_tick_at_zero_is_never_minus_zero() -> None:
    # all losses: the top tick is zero, which rounding made "-0.0" on the failing example's difference plot
    chart = svg.bar_chart(["a", "b"], [-0.2918, -0.2330], ["a", "b"], title="t", y_label="y", x_label="x")
    ticks = re.findall(r'class="tick">([^<]*)</text>', chart)
    assert "0.0" in ticks and not any(tick.startswith("-") and float(tick) == 0 for tick in ticks), ticks


def test_two_close_limits_have_labels_that_do_not_overlap() -> None:
    # the failing example's Var and Bias²+Var limits, 0.0828 and 0.0858: one label was printed over the other
    levels = [svg.Level("Var limit <= 0.0828", 0.0828, "#f00"), svg.Level("Bias²+Var limit <= 0.0858", 0.0858, "#0f0")]
    chart = svg.point_chart(
        ["a", "b"], [svg.Series("Var", [0.0706, 0.09], "#00f")], title="t", y_label="y", x_label="x", levels=levels
    )
    labels = dict(
        (text, float(y))
        for y, text in re.findall(r'<text x="[\d.]+" y="([\d.]+)"[^>]*class="level"[^>]*>([^<]*)<', chart)
    )
    assert len(labels) == 2
    assert abs(labels["Var limit &lt;= 0.0828"] - labels["Bias²+Var limit &lt;= 0.0858"]) >= 13  # 11px text apart
    # the higher limit's label stays above its line, the lower one goes under its own
    assert labels["Bias²+Var limit &lt;= 0.0858"] < labels["Var limit &lt;= 0.0828"]


def test_a_point_label_at_the_right_edge_goes_left_of_its_point() -> None:
    # past-release, the largest Bias², was cut to "past-r" at the chart's right edge
    points = [svg.Point("production", 0.0015, 0.07, "#90f"), svg.Point("past-release", 0.0097, 0.062)]
    chart = svg.scatter_chart(points, title="t", x_label="Bias²", y_label="Var")
    x, anchor = re.search(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)"[^>]*>past-release<', chart).groups()
    assert anchor == "end" and float(x) <= svg.WIDTH
    assert re.search(r'text-anchor="start"[^>]*>production<', chart)


def test_a_command_in_a_warning_is_code_on_the_page_not_backticks() -> None:
    document = sample_document()
    gate = document["evaluations"][0]["gates"][2]
    gate["warning"] = "judge them: `bvtest judge bvtest.yaml -o judgments.tsv` lists them <to grade>"
    page = html.render(document)
    assert "judge them: <code>bvtest judge bvtest.yaml -o judgments.tsv</code> lists them &lt;to grade&gt;" in page
    assert "`" not in page.split('<p class="warning">', 1)[1].split("</p>", 1)[0]


def test_a_line_that_starts_with_a_systems_name_keeps_its_spelling() -> None:
    from pytest_bvtest.report.markdown import render

    document = sample_document()
    evaluation = document["evaluations"][0]
    # DL-HARD's candidate: the line read "Bm25+rm3 against bm25"
    for system in evaluation["systems"]:
        if system["name"] == "candidate":
            system["name"] = "bm25+rm3"
    evaluation["candidate"] = "bm25+rm3"
    assert "<br>bm25+rm3 against production, mean over" in html.render(document).replace('<p class="changes">', "<br>")
    assert "\n\nbm25+rm3 against production, mean over" in render(document)
    # the default name is a word, raised as any sentence's first
    assert "\n\nCandidate against production, mean over" in render(sample_document())


def test_history_charts_of_long_or_alike_gate_names_get_names_a_file_system_takes(tmp_path: Path) -> None:
    """A 287-character gate name made `bvtest history --plot` fail with "File name too long"; two gates whose ids
    differ only in characters a file name drops (`a b`, `a-b`) wrote one chart over the other."""
    import io

    from pytest_bvtest.cli import main
    from pytest_bvtest.report.history import append_history

    long_id = "bvtest.yaml::nDCG@10::" + "g" * 287
    ids = [long_id, long_id + "x", "bvtest.yaml::nDCG@10::a b", "bvtest.yaml::nDCG@10::a-b"]
    records = [
        {**record, "gates": [{**record["gates"][0], "id": gate} for gate in ids]} for record in history_records()
    ]
    path = tmp_path / "history.jsonl"
    append_history(path, records)
    out = io.StringIO()
    assert main(["history", str(path), "--plot", str(tmp_path / "charts")], out=out) == 0
    charts = sorted((tmp_path / "charts").iterdir())
    assert len(charts) == 4 and all(len(chart.name) <= 120 for chart in charts)
    names = [chart.name for chart in charts]
    assert sum(name.startswith("bvtest.yaml-nDCG-10-a-b-") for name in names) == 2  # each with its digest
    assert sum(name.startswith("bvtest.yaml-nDCG-10-ggg") for name in names) == 2
    assert all(f"wrote {chart}" in out.getvalue() for chart in charts)
