"""The report renderers (terminal, Markdown, GitHub annotations, plots) and the JSON Schema.

Every renderer reads the session document of ``pytest_bvtest.report.jsonreport``. The sample
document below is written by hand in that shape: 3 systems (production the reference, bm25 a
baseline, candidate the candidate), 2 measures, a failing gate with worst topics, an OK* gate with a
warning and a bootstrap interval, and nulls where statistics are not computed. Its nDCG@10 numbers
are those of the matrix in ``NDCG_SCORES`` (virtual target, Bias²/Var, URisk with alpha = 1).
"""

from __future__ import annotations

import copy
import io
import json
import re
import struct
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import shared_path, words

from pytest_bvtest.errors import InputError
from pytest_bvtest.report import github, markdown, terminal, wording
from pytest_bvtest.stats.biasvar import bias_variance_analysis
from pytest_bvtest.stats.registry import STATISTICS

jsonschema = pytest.importorskip("jsonschema")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TOPICS = ["301", "302", "303", "304", "305"]
#: production, bm25, candidate on five topics; bm25 has no ranking for 304 and 305 (scored 0).
NDCG_SCORES = np.array(
    [
        [0.62, 0.70, 0.35, 0.48, 0.55],
        [0.50, 0.41, 0.30, 0.00, 0.00],
        [0.66, 0.20, 0.40, 0.52, 0.61],
    ]
)
FAIL_ID = "bvtest.yaml::nDCG@10::bias2_plus_var"
WARN_ID = "bvtest.yaml::nDCG@10::urisk"


def system(name: str, role: str, **values: Any) -> dict[str, Any]:
    statistics = dict.fromkeys(
        ("mean", "bias2", "var", "bias2_plus_var", "urisk", "trisk", "trisk_p", "zrisk", "georisk", "mve", "gawm")
    )
    statistics.update(values)
    gap = dict.fromkeys(("bias", "var", "mse", "var_target", "var_system", "cov"), 0.0)
    return {"name": name, "role": role, **statistics, "gap": gap, "missing_topics": [], "ignored_topics": []}


def gate(
    gate_id: str,
    statistic: str,
    value: float,
    limit: float,
    bound: dict[str, Any],
    *,
    passed: bool = True,
    reference_value: float | None = None,
    warning: str | None = None,
    interval: dict[str, Any] | None = None,
    worst_topics: tuple[tuple[str, float, float, float], ...] = (),
    message: str,
    sentence: str = "",
    spec_line: int | None = None,
) -> dict[str, Any]:
    definition = STATISTICS[statistic]
    return {
        "id": gate_id,
        "statistic": statistic,
        "measure": gate_id.split("::")[1],
        "system": "candidate",
        "reference": None if reference_value is None else "production",
        "value": value,
        "reference_value": reference_value,
        "bound": {**bound, "limit": limit},
        "limit": limit,
        "rule": bound["text"],
        "calibration": None,
        # past an upper limit (max, max_increase) by value - limit, past a lower one (min, max_decrease) by limit - v
        "excess": value - limit if bound["kind"] in ("max", "max_increase") else limit - value,
        "interval": interval,
        "passed": passed,
        "outcome": "FAIL" if not passed else ("OK*" if warning else "OK"),
        "warning": warning,
        "headline": message.split("\n", 1)[0],
        "message": message,
        "sentence": sentence,
        "label": definition.label,
        "higher_is_better": definition.higher_is_better,
        "compared_value": reference_value,
        "delta": None if reference_value is None else value - reference_value,
        "spec_line": spec_line,
        "docs": definition.wording.docs,
        "power": None,
        "missed_aim": False,
        "blame_by": "term difference"
        if definition.from_simulation is not None
        else "score difference"
        if definition.mean_like
        else "contribution",
        "worst_topics": [
            {"topic": t, "candidate": c, "compared": r, "delta": c - r, "contribution": share}
            for t, c, r, share in worst_topics
        ],
        "worst_against": "production",
    }


def sample_document() -> dict[str, Any]:
    warning = (
        "point estimate past the bound by 0.112, but the 95% interval [-0.41, 0.02] reaches the safe side: "
        "within noise (OK*)"
    )
    ndcg_gates = [
        gate(
            FAIL_ID,
            "bias2_plus_var",
            0.037136,
            0.0173844,
            {"kind": "max_increase", "amount": 0.1, "relative": True, "text": "max_increase 10%"},
            passed=False,
            reference_value=0.015804,
            worst_topics=(("302", 0.20, 0.70, 0.0286), ("301", 0.60, 0.62, 0.0009)),
            spec_line=12,
            sentence="Quality varies more from query to query or sits further below the best achievable than in "
            "production "
            "(Bias²+Var 0.0371 vs 0.0158, limit 0.0174).",
            message="nDCG@10 Bias²+Var FAILED: candidate 0.037136 vs production 0.015804; bound max_increase 10% "
            "requires <= 0.0173844; "
            "past the limit by 0.0197516\n  topics that lost most against production:\n    302: 0.2000 vs 0.7000 "
            "(-0.5000)",
        ),
        gate(
            "bvtest.yaml::nDCG@10::mean",
            "mean",
            0.478,
            0.4,
            {"kind": "min", "amount": 0.4, "relative": False, "text": "min 0.4"},
            message="nDCG@10 mean passed: candidate 0.478; bound min 0.4 requires >= 0.4; headroom 0.078",
        ),
        gate(
            WARN_ID,
            "urisk",
            -0.162,
            -0.05,
            {"kind": "max_decrease", "amount": 0.05, "relative": False, "text": "max_decrease 0.05"},
            reference_value=0.0,
            warning=warning,
            interval={"low": -0.41, "high": 0.02, "confidence": 0.95, "seed": 0},
            spec_line=14,
            message="nDCG@10 URisk passed within noise: candidate -0.162 vs production 0; bound max_decrease 0.05 "
            "requires >= -0.05; "
            "past the limit by 0.112\n  95% bootstrap interval of candidate - reference: [-0.41, 0.02] (seed 0)\n"
            f"  warning: {warning}",
        ),
    ]
    ndcg_gates[0]["calibration"] = {
        "false_alarm": None,
        "limit": None,
        "rate": 0.469,
        "swaps": 10_000,
        "exact": False,
        "seed": 0,
        "reference": "production",
        "family": None,
    }
    ndcg_gates[2]["calibration"] = {
        "false_alarm": None,
        "limit": None,
        "rate": 0.0625,
        "swaps": 32,
        "exact": True,
        "seed": 0,
        "reference": "production",
        "family": None,
    }
    bm25 = system(
        "bm25",
        "baseline",
        mean=0.242,
        bias2=0.112896,
        var=0.043056,
        bias2_plus_var=0.155952,
        urisk=-0.596,
        trisk=-3.05838145,
        trisk_p=0.03771805,
        zrisk=-1.01532748,
        georisk=0.31863638,
        mve=0.155888,
        gawm=0.2,
    )
    bm25["missing_topics"] = ["304", "305"]
    candidate = system(
        "candidate",
        "candidate",
        mean=0.478,
        bias2=0.01,
        var=0.027136,
        bias2_plus_var=0.037136,
        urisk=-0.162,
        trisk=-0.77314859,
        trisk_p=0.48258367,
        zrisk=-0.39253354,
        georisk=0.47333347,
        mve=0.423728,
        gawm=0.5,
    )
    candidate["ignored_topics"] = ["999"]
    ndcg = {
        "spec": "bvtest.yaml",
        "measure": "nDCG@10",
        "topics": TOPICS,
        "target": {"c": 0.578, "per_topic": [0.66, 0.70, 0.40, 0.52, 0.61], "constant_topics": 0},
        "settings": {
            "target": "mean",
            "normalize": "none",
            "grouping": None,
            "risk_alpha": 1.0,
            "mve_alpha": 2.0,
            "gawm_q": 1.0,
        },
        "candidate": "candidate",
        "reference": "production",
        "systems": [
            system(
                "production",
                "reference",
                mean=0.54,
                bias2=0.001444,
                var=0.01436,
                bias2_plus_var=0.015804,
                urisk=0.0,
                trisk=0.0,
                trisk_p=1.0,
                zrisk=-0.2868025,
                georisk=0.50759203,
                mve=0.51128,
                gawm=0.6,
            ),
            bm25,
            candidate,
        ],
        "tradeoff": {"pearson": 0.9243759936176588, "spearman": 1.0},
        "gates": ndcg_gates,
    }
    ap = copy.deepcopy(ndcg)
    ap["measure"] = "AP"
    ap["tradeoff"] = {"pearson": None, "spearman": None}
    for entry in ap["systems"]:
        entry["gawm"] = None
    ap["gates"] = [
        gate(
            "bvtest.yaml::AP::bias2",
            "bias2",
            0.01,
            0.05,
            {"kind": "max", "amount": 0.05, "relative": False, "text": "max 0.05"},
            message="AP Bias² passed: candidate 0.01; bound max 0.05 requires <= 0.05; headroom 0.04",
        ),
    ]
    return {
        "schema_version": 1,
        "tool": {"name": "pytest-bvtest", "version": "0.1.0"},
        "passed": False,
        "summary": {"gates": 4, "failed": 1, "warnings": 1},
        "evaluations": [ndcg, ap],
    }


def analysis_only_document() -> dict[str, Any]:
    """No reference and no candidate: URisk, TRisk and its p-value are null, and there are no gates."""
    document = sample_document()
    document["evaluations"] = document["evaluations"][:1]
    evaluation = document["evaluations"][0]
    evaluation.update(spec="analysis.yaml", candidate=None, reference=None, gates=[])
    for entry in evaluation["systems"]:
        entry.update(role="baseline", urisk=None, trisk=None, trisk_p=None)
    document.update(passed=True, summary={"gates": 0, "failed": 0, "warnings": 0})
    return document


def texts(lines: list[tuple[str, dict[str, bool]]]) -> list[str]:
    return [text for text, _ in lines]


# --- JSON Schema ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads(resources.files("pytest_bvtest.report").joinpath("schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("build", [sample_document, analysis_only_document])
def test_schema_accepts_sample_documents(validator: Any, build: Any) -> None:
    document = build()
    # The document is JSON-ready (no NaN) and validates after a round trip through JSON text.
    validator.validate(json.loads(json.dumps(document, allow_nan=False)))


def test_schema_allows_extra_keys(validator: Any) -> None:
    document = sample_document()
    document["extra"] = {"anything": [1, 2]}
    document["evaluations"][0]["systems"][0]["new_statistic"] = 0.5
    document["evaluations"][0]["gates"][0]["bound"]["note"] = "added later"
    validator.validate(document)


@pytest.mark.parametrize(
    "path",
    [
        ("schema_version",),
        ("evaluations", 0, "measure"),
        ("evaluations", 0, "topics"),
        ("evaluations", 0, "target", "c"),
        ("evaluations", 0, "target", "per_topic"),
        ("evaluations", 0, "systems", 1, "bias2_plus_var"),
        ("evaluations", 0, "systems", 1, "georisk"),
        ("evaluations", 0, "systems", 2, "gap", "cov"),
        ("evaluations", 0, "systems", 2, "trisk_p"),
        ("evaluations", 0, "tradeoff", "spearman"),
        ("evaluations", 1, "gates", 0, "interval"),
        ("evaluations", 0, "gates", 2, "warning"),
        ("evaluations", 0, "gates", 0, "bound", "limit"),
    ],
)
def test_schema_rejects_a_missing_promised_key(validator: Any, path: tuple[Any, ...]) -> None:
    document = sample_document()
    *parents, key = path
    container = document
    for part in parents:
        container = container[part]
    del container[key]
    errors = list(validator.iter_errors(document))
    assert errors and any(f"'{key}' is a required property" in error.message for error in errors)


@pytest.mark.parametrize(
    "path, value",
    [
        (("evaluations", 0, "systems", 0, "bias2"), "0.001444"),
        (("evaluations", 0, "target", "per_topic", 3), "0.52"),
        (("evaluations", 0, "gates", 0, "value"), "0.037136"),
        (("evaluations", 0, "gates", 2, "interval", "low"), "-0.41"),
        (("evaluations", 0, "systems", 0, "role"), "champion"),
        (("evaluations", 0, "gates", 0, "passed"), "false"),
        (("schema_version",), 2),
    ],
)
def test_schema_rejects_wrong_types(validator: Any, path: tuple[Any, ...], value: Any) -> None:
    document = sample_document()
    *parents, key = path
    container = document
    for part in parents:
        container = container[part]
    container[key] = value
    assert not validator.is_valid(document)


DOCS = Path(__file__).resolve().parents[1] / "docs" / "json-schema.md"


def schema_keys(node: Any) -> set[str]:
    """Every property name the schema declares, at any depth."""
    keys: set[str] = set()
    if isinstance(node, dict):
        keys.update(node.get("properties", {}))
        for child in node.values():
            keys |= schema_keys(child)
    elif isinstance(node, list):
        for child in node:
            keys |= schema_keys(child)
    return keys


def test_documentation_names_every_schema_key_and_its_example_validates(validator: Any) -> None:
    text = DOCS.read_text(encoding="utf-8")
    # A key is documented when it is a word of some code span, e.g. `gap.{bias, var}` documents gap, bias and var.
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    documented = {word for span in re.findall(r"`([^`]+)`", prose) for word in re.findall(r"\w+", span)}
    assert sorted(schema_keys(validator.schema) - documented) == []
    example = json.loads(re.search(r"```json\n(.*?)```", text, re.S).group(1))
    validator.validate(example)


# --- terminal ------------------------------------------------------------------------------------


def test_terminal_table_rows_and_alignment() -> None:
    lines = texts(terminal.summary_lines(sample_document()))
    assert lines[0] == "bvtest.yaml · nDCG@10 · 5 topics · target c = 0.5780"
    header = lines[1]
    assert header.split() == ["system", "role", "mean", "Bias²", "Var", "Bias²+Var", "URisk", "GeoRisk", "MVE", "gates"]
    assert lines[2].split() == [
        "production",
        "reference",
        "0.5400",
        "0.0014",
        "0.0144",
        "0.0158",
        "0.0000",
        "0.5076",
        "0.5113",
        "-",
    ]
    assert lines[3].split() == [
        "bm25",
        "baseline",
        "0.2420",
        "0.1129",
        "0.0431",
        "0.1560",
        "-0.5960",
        "0.3186",
        "0.1559",
        "-",
    ]
    assert lines[4].split() == [
        ">",
        "candidate",
        "candidate",
        "0.4780",
        "0.0100",
        "0.0271",
        "0.0371",
        "-0.1620",
        "0.4733",
        "0.4237",
        "1",
        "OK,",
        "1",
        "OK*,",
        "1",
        "FAIL",
    ]
    # Names and the gates column are left-aligned, numbers right-aligned under their headers.
    header_cells = list(re.finditer(r"\S+", header))
    for row in lines[2:5]:
        row_cells = [cell for cell in re.finditer(r"\S+", row) if cell.start() >= len(terminal.CANDIDATE_MARKER)]
        assert [cell.start() for cell in row_cells[:2]] == [cell.start() for cell in header_cells[:2]]
        assert [cell.end() for cell in row_cells[2:9]] == [cell.end() for cell in header_cells[2:9]]
        assert row_cells[9].start() == header_cells[9].start()
    assert lines[5] == "Bias²/Var tradeoff across 3 systems: Pearson 0.92, Spearman 1.00"


def test_terminal_marks_the_candidate_and_colours_outcomes() -> None:
    lines = terminal.summary_lines(sample_document())
    by_text = dict(lines)
    candidate_rows = [(text, markup) for text, markup in lines if text.startswith(terminal.CANDIDATE_MARKER)]
    assert len(candidate_rows) == 2 and all(markup == {"bold": True} for _, markup in candidate_rows)
    failing = next(text for text, _ in lines if text.startswith("[FAIL]"))
    assert failing == (
        f"[FAIL] {FAIL_ID}: nDCG@10 Bias²+Var FAILED: candidate 0.037136 vs production 0.015804; "
        "bound max_increase 10% requires <= 0.0173844; past the limit by 0.0197516"
    )
    assert by_text[failing] == {"red": True, "bold": True}
    warned = next(text for text, _ in lines if text.startswith("[OK*]"))
    assert warned.startswith(f"[OK*] {WARN_ID}: nDCG@10 URisk passed within noise") and by_text[warned] == {
        "yellow": True
    }
    passing = (
        "[OK] bvtest.yaml::AP::bias2: AP Bias² passed: candidate 0.01; bound max 0.05 requires <= 0.05; headroom 0.04"
    )
    assert by_text[passing] == {"green": True}
    assert lines[-1] == ("bvtest: 4 gates, 1 failed, 1 with a warning (OK*)", {"red": True, "bold": True})


def test_terminal_notes_missing_and_ignored_topics() -> None:
    lines = texts(terminal.summary_lines(sample_document()))
    assert "note: bm25 has no ranking for 2 of 5 topics (scored 0): 304, 305" in lines
    assert (
        "note: candidate ranked 1 topic outside the evaluated topics (unjudged, or no relevant document; ignored): 999"
        in lines
    )
    document = sample_document()
    document["evaluations"][0]["systems"][0]["ignored_topics"] = [str(topic) for topic in range(900, 908)]
    lines = texts(terminal.summary_lines(document))
    assert (
        "note: production ranked 8 topics outside the evaluated topics (unjudged, or no relevant document; "
        "ignored): 900, 901, 902, 903, 904, ... (+3 more)" in lines
    )


def test_terminal_final_line_of_a_passing_session() -> None:
    document = sample_document()
    document["evaluations"] = document["evaluations"][1:]
    document.update(passed=True, summary={"gates": 1, "failed": 0, "warnings": 0})
    assert terminal.summary_lines(document)[-1] == ("bvtest: 1 gate, 0 failed", {"green": True})


def test_terminal_nulls_and_no_gates() -> None:
    lines = texts(terminal.summary_lines(analysis_only_document()))
    assert lines[2].split() == [
        "production",
        "baseline",
        "0.5400",
        "0.0014",
        "0.0144",
        "0.0158",
        "-",
        "0.5076",
        "0.5113",
        "-",
    ]
    assert not any(line.startswith(("[OK", "[FAIL", "bvtest:")) for line in lines)


def test_write_summary_on_pytests_terminal_reporter(pytestconfig: pytest.Config) -> None:
    from _pytest.terminal import TerminalReporter

    stream = io.StringIO()
    document = sample_document()
    terminal.write_summary(document, TerminalReporter(pytestconfig, stream))
    written = stream.getvalue().splitlines()
    assert re.fullmatch(r"=+ bvtest summary =+", written[0])
    assert written[1:] == texts(terminal.summary_lines(document))


def test_display_path_is_relative_inside_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert wording.display_path(str(tmp_path / "specs" / "bvtest.yaml")) == "specs/bvtest.yaml"
    outside = str(tmp_path.parent / "elsewhere.yaml")
    assert wording.display_path(outside) == outside


# --- Markdown ------------------------------------------------------------------------------------


def table_cells(line: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def assert_tables_well_formed(text: str) -> None:
    """Every table row has as many cells (split on unescaped ``|``) as its header."""
    width = None
    for line in text.splitlines():
        if not line.startswith("|"):
            width = None
            continue
        cells = table_cells(line)
        if width is None:
            width = len(cells)
        assert len(cells) == width, line


def test_markdown_summary() -> None:
    text = markdown.render(sample_document())
    lines = text.splitlines()
    assert lines[0] == "<!-- pytest-bvtest -->"
    # the first screen: the verdict, what changed, the cause (its queries, the gate they break), the warning, the
    # commands; the details are folded below it
    assert lines[1] == "## ❌ pytest-bvtest: 1 of 4 gates fails, for 2 queries"
    assert lines[3] == (
        "Candidate against production, mean over 5 queries: nDCG@10 0.5400 → 0.4780 (-0.0620), AP 0.5400 → 0.4780 "
        "(-0.0620)"
    )
    assert lines[5] == "**❌ 2 queries got worse (production → candidate) and break 1 gate**"
    assert lines[7:11] == [
        "| topic | nDCG@10 |",
        "| --- | ---: |",
        "| 302 | 0.7000 → 0.2000 (-0.5000) |",
        "| 301 | 0.6200 → 0.6000 (-0.0200) |",
    ]
    assert lines[12] == (
        "- ❌ nDCG@10 Bias²+Var 0.0371 vs 0.0158, limit &lt;= 0.0174: quality varies more from query to query or sits "
        "further below the best achievable than in production"
    )
    assert lines[14] == (
        "> ⚠️ **Warning** (`nDCG@10::urisk`): point estimate past the bound by 0.112, but the 95% interval "
        "[-0.41, 0.02] reaches the safe side: within noise (OK*)"
    )
    assert lines[16] == (
        "**Reproduce:** `pytest bvtest.yaml` · **Accept it on purpose:** `pytest bvtest.yaml --bvtest-update-force`, "
        "then commit the reference run it writes"
    )
    assert lines[18] == "<details><summary>All 4 gates: values, limits, false-alarm rates</summary>"
    rows = {table_cells(line)[1]: table_cells(line) for line in lines if line.startswith("| ") and "::" in line}
    header = next(line for line in lines if line.startswith("| outcome"))
    assert table_cells(header) == [
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
    assert rows["`nDCG@10::bias2_plus_var`"] == [
        "❌ FAIL",
        "`nDCG@10::bias2_plus_var`",
        "0.0371",
        "0.0158 production",
        "+0.02133 (worse)",
        "&lt;= 0.0174",
        "max_increase 10%",
        "46.9%",
        "-",
        "-",
    ]
    assert rows["`nDCG@10::urisk`"][0] == "⚠️ OK*"
    assert rows["`nDCG@10::urisk`"][3:5] == ["0 production", "-0.162 (worse)"]
    assert rows["`nDCG@10::urisk`"][7:] == ["6.25%", "-", "candidate - reference [-0.410, 0.0200] 95%, seed 0"]
    assert rows["`AP::bias2`"][3:8] == ["-", "-", "&lt;= 0.0500", "max 0.05", "-"]
    # each gate's sentence, in document order, folded with the table; a gate whose document has none shows its
    # headline
    assert (
        "- ❌ `nDCG@10::bias2_plus_var` Quality varies more from query to query or sits further below the best "
        "achievable than in production (Bias²+Var 0.0371 vs 0.0158, limit 0.0174)." in lines
    )
    assert (
        "- ✅ `nDCG@10::mean` nDCG@10 mean passed: candidate 0.478; bound min 0.4 requires &gt;= 0.4; headroom 0.078"
        in lines
    )
    # the blamed topics with each one's share of the change of Bias²+Var, once, folded
    assert (
        "Topics that moved Bias²+Var most the wrong way (each topic's share of the change against production):" in lines
    )
    assert "| topic | candidate | production | score Δ | moves Bias²+Var by |" in lines
    assert "| 302 | 0.2000 | 0.7000 | -0.5000 | +0.0286 |" in lines
    assert "| 301 | 0.6000 | 0.6200 | -0.0200 | +0.0009 |" in lines
    # folded: every gate, the failing gate's topics, the two system tables, what else to do
    assert text.count("<details>") == 5 and text.count("</details>") == 5
    assert (
        "| **candidate** | candidate | 0.4780 | 0.0100 | 0.0271 | 0.0371 | -0.1620 | 0.4733 | 0.4237 | 1 OK, 1 OK*, "
        "1 FAIL |" in lines
    )
    assert "- bm25 has no ranking for 2 of 5 topics (scored 0): 304, 305" in lines
    assert_tables_well_formed(text)


def test_markdown_escapes_pipes_in_cells() -> None:
    document = sample_document()
    document["evaluations"][0]["systems"][1]["name"] = "bm25|rm3"
    document["evaluations"][0]["gates"][0]["id"] = "bvtest.yaml::nDCG|x@10::bias2_plus_var"
    text = markdown.render(document)
    assert "| bm25\\|rm3 | baseline |" in text
    assert "`nDCG\\|x@10::bias2_plus_var`" in text
    assert_tables_well_formed(text)


def test_markdown_code_spans_survive_backticks() -> None:
    assert markdown.code("a`b") == "``a`b``"
    assert markdown.code("`x`") == "`` `x` ``"


def test_markdown_passing_and_analysis_only() -> None:
    text = markdown.render(analysis_only_document())
    assert text.splitlines()[1] == "## ✅ pytest-bvtest: analysis only, no gates"
    assert "No gates: analysis only." in text
    assert "| production | baseline | 0.5400 | 0.0014 | 0.0144 | 0.0158 | - | 0.5076 | 0.5113 | - |" in text


def test_an_undecided_gate_past_its_limit_within_noise_says_so_not_headroom() -> None:
    """As judged the URisk gate is 0.112 past its limit and passes within noise; its corners disagree and the
    gradings leave it undecided: the headline says how far past the limit it is, as the JSON's ``excess`` does."""
    gate = copy.deepcopy(sample_document()["evaluations"][0]["gates"][2])
    assert gate["id"] == WARN_ID and gate["interval"] and gate["excess"] == pytest.approx(0.112)
    gate.update(outcome="UNDECIDED", within_noise=True, upper=False)
    gate["judgments"] = {
        "as_judged": True,
        "optimistic": {"passed": True},
        "pessimistic": {"passed": False},
        "undecided": "warn",
        "unjudged": 84,
        "candidate": "candidate",
        "candidate_unjudged": 66,
        "reference": "production",
        "reference_unjudged": 21,
        "shared": 3,
        "depth": 10,
        "plausible": {"probability": 0.76, "draws": 200, "documents": 84},
    }
    said = wording.headline(gate)
    assert "past the limit by 0.112 as judged; 84 unjudged documents decide it" in said
    assert "headroom" not in said


def test_a_near_miss_is_on_the_first_screen_of_every_report() -> None:
    """The example's risky candidate: Var 0.0840177 against a limit of 0.0841434 from production's 0.0706269 (a
    gate that passes with 0.000126 to spare, 99% of the way to its limit), beside gates with room left."""
    document = sample_document()
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            gate.update(passed=True, outcome="OK", excess=-1.0, reference_value=None, calibration=None)
    near = document["evaluations"][0]["gates"][1]
    near.update(
        value=0.0840177,
        reference="production",
        reference_value=0.0706269,
        limit=0.0841434,
        excess=0.0840177 - 0.0841434,
    )
    said = (
        "nDCG@10::mean passes by 0.000126: nDCG@10 Mean 0.084 against a limit of 0.0841, 99% of the way from "
        "production's 0.0706"
    )
    assert wording.closest(document) == wording.Closest(True, said)
    assert f"\n\n⚠️ **Near miss:** {said}\n" in markdown.render(document)
    assert (f"near miss: {said}", {"yellow": True, "bold": True}) in terminal.page_lines(document)
    # a gate with most of its room left is named as the closest, without alarm
    near.update(value=0.08, excess=0.08 - 0.0841434)
    assert wording.closest(document) == wording.Closest(
        False,
        "nDCG@10::mean, nDCG@10 Mean 0.08 against a limit of 0.0841, 69% of the way from production's 0.0706",
    )


def test_a_failed_test_of_the_session_turns_every_headline_red() -> None:
    """Every gate passes and no team test failed, but another test of the session did (pytest exits 1)."""
    document = sample_document()
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            gate.update(passed=True, outcome="OK")
    document.update(passed=True)
    document["summary"].update(failed=0, warnings=0, other_tests_failed=2)
    said = "4 gates pass; 2 other tests of the session fail (pytest's log names them)"
    assert markdown.render(document).splitlines()[1] == f"## ❌ pytest-bvtest: {said}"
    lines = terminal.summary_lines(document)
    assert (said, {"red": True, "bold": True}) in lines
    assert lines[-1] == (
        "bvtest: 4 gates, 0 failed; 2 other tests of the session fail (pytest's log names them)",
        {"red": True, "bold": True},
    )


def test_markdown_stays_under_githubs_comment_limit_with_many_systems() -> None:
    document = sample_document()
    for evaluation in document["evaluations"]:
        template = evaluation["systems"][1]
        evaluation["systems"] += [{**template, "name": f"baseline-run-with-a-long-name-{i:04d}"} for i in range(400)]
    text = markdown.render(document)
    assert len(text) <= markdown.COMMENT_BUDGET
    assert text.count("401 baseline systems and their notes are not shown") == 2
    assert "baseline-run-with-a-long-name-0000" not in text
    assert "| **candidate** |" in text and "| production | reference |" in text


def many_specs(count: int) -> dict[str, Any]:
    """The sample document's two measures under ``count`` specs (4 gates each, one failing in the first spec), each
    with 100 baselines."""
    document = sample_document()
    evaluations = []
    for number in range(count):
        for evaluation in copy.deepcopy(document["evaluations"]):
            spec = f"specs/bvtest-{number:02d}.yaml"
            evaluation["spec"] = spec
            evaluation["systems"] += [
                {**evaluation["systems"][1], "name": f"baseline-{i:03d}", "role": "baseline"} for i in range(100)
            ]
            for gate in evaluation["gates"]:
                gate["id"] = gate["id"].replace("bvtest.yaml", spec)
                if number:  # one failing spec; the others pass
                    gate.update(passed=True, outcome="OK", worst_topics=[])
            evaluations.append(evaluation)
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    document["evaluations"] = evaluations
    document["summary"].update(gates=len(gates), failed=sum(not gate["passed"] for gate in gates))
    return document


def test_a_comment_of_many_specs_and_gates_fits_and_says_what_it_left_out() -> None:
    """40 specs, 160 gates, 100 baselines each (3 MB of tables): the comment keeps the verdict, the cause and the
    failing gate's topics, spends what is left on the gates' table, and names what it left to the HTML report."""
    document = many_specs(40)
    whole = markdown.render(document, budget=10**8)
    assert len(whole) > 1_000_000
    text = markdown.render(document)
    assert len(text) <= markdown.COMMENT_BUDGET < markdown.GITHUB_COMMENT_LIMIT
    assert_tables_well_formed(text)
    assert text.count("<details>") == text.count("</details>")
    lines = text.splitlines()
    assert (
        lines[:2]
        == whole.splitlines()[:2]
        == [markdown.MARKER, "## ❌ pytest-bvtest: 1 of 160 gates fails, for 2 queries"]
    )
    # the failing gate's topics are kept whole; the passing gates' rows go before the systems' tables
    assert "Each failing gate: its headline and each topic's share of the change" in text
    note = next(line for line in lines if line.startswith("Left out to keep this comment under GitHub's limit"))
    assert note.startswith(
        "Left out to keep this comment under GitHub's limit of 65,536 characters: the table of every gate in full, "
    )
    assert note.endswith(" and 75 more; the HTML report and the JSON report have everything.")
    assert lines[-1].startswith("<sub>pytest-bvtest ")


def test_a_first_screen_longer_than_the_budget_is_cut_between_paragraphs() -> None:
    document = many_specs(40)
    text = markdown.render(document, budget=3_000)
    assert len(text) <= 3_000 and text.count("<details>") == text.count("</details>")
    assert_tables_well_formed(text)
    assert text.splitlines()[1] == "## ❌ pytest-bvtest: 1 of 160 gates fails, for 2 queries"
    assert (
        "Left out to keep this comment under GitHub's limit of 65,536 characters: the rest of the first screen, "
        in text
    )


def test_a_comment_that_fits_leaves_nothing_out() -> None:
    document = many_specs(1)
    assert markdown.render(document) == markdown.render(document, budget=10**8)
    assert "Left out" not in markdown.render(document)


# --- GitHub annotations --------------------------------------------------------------------------


def decode(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_annotations_for_failed_and_warned_gates() -> None:
    document = sample_document()
    commands = github.annotations(document)
    assert len(commands) == 2
    error, warning = commands
    assert error.startswith(
        "::error file=bvtest.yaml,line=12,title=bvtest FAIL bvtest.yaml%3A%3AnDCG@10%3A%3Abias2_plus_var::"
    )
    assert warning.startswith(
        "::warning file=bvtest.yaml,line=14,title=bvtest OK* bvtest.yaml%3A%3AnDCG@10%3A%3Aurisk::"
    )
    for command, gate_index in ((error, 0), (warning, 2)):
        assert "\n" not in command and "%0A" in command
        message = command.split("::", 2)[2]
        gate = document["evaluations"][0]["gates"][gate_index]
        assert decode(message) == "\n".join(filter(None, (gate["sentence"], gate["message"])))


def test_annotation_encoding_of_special_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    document = sample_document()
    document["evaluations"][0]["spec"] = str(tmp_path / "a,b" / "bvtest.yaml")
    document["evaluations"][0]["gates"][0].update(message="100% worse,\r\nsee: topic 302", sentence="", spec_line=None)
    error = github.annotations(document)[0]
    assert error == (
        "::error file=a%2Cb/bvtest.yaml,title=bvtest FAIL bvtest.yaml%3A%3AnDCG@10%3A%3Abias2_plus_var"
        "::100%25 worse,%0D%0Asee: topic 302"
    )
    assert github.escape_property("x:y,z%\n") == "x%3Ay%2Cz%25%0A"


def test_a_spec_that_could_not_be_evaluated_is_an_error_annotation_on_the_spec() -> None:
    document = analysis_only_document()
    document["errors"] = [
        {"id": f"bvtest-b.yaml::AP::{gate}", "spec": "bvtest-b.yaml", "message": "runs/b.run:1: found 4 columns"}
        for gate in ("mean", "var")
    ]
    assert github.annotations(document) == [
        "::error file=bvtest-b.yaml,title=bvtest could not evaluate bvtest-b.yaml (2 items)"
        "::runs/b.run:1: found 4 columns"
    ]


def test_annotations_name_the_spec_from_the_repository_root_when_pytest_runs_in_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "search-quality"
    project.mkdir()
    monkeypatch.chdir(project)
    document = sample_document()
    document["evaluations"][0]["spec"] = str(project / "bvtest.yaml")
    document["errors"] = [{"id": "bvtest-b.yaml::AP::mean", "spec": str(project / "bvtest-b.yaml"), "message": "x"}]
    files = [command.split(",", 1)[0] for command in github.annotations(document, workspace=str(tmp_path))]
    assert files == ["::error file=search-quality/bvtest.yaml", "::warning file=search-quality/bvtest.yaml"] + [
        "::error file=search-quality/bvtest-b.yaml"
    ]
    # outside a workspace (or outside this one) the path stays as the user sees it
    assert github.annotations(document)[0].startswith("::error file=bvtest.yaml,")
    assert github.annotations(document, workspace=str(tmp_path / "other"))[0].startswith("::error file=bvtest.yaml,")


def test_no_annotations_when_every_gate_passes_cleanly() -> None:
    assert github.annotations(analysis_only_document()) == []


# --- plots ---------------------------------------------------------------------------------------


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plots_are_written_as_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pytest_bvtest.report import plots

    written = plots.write_plots(sample_document(), tmp_path / "plots")
    assert [path.name for path in written] == [
        "bvtest-nDCG-10-bias-variance.png",
        "bvtest-nDCG-10-scatter.png",
        "bvtest-AP-bias-variance.png",
        "bvtest-AP-scatter.png",
    ]
    for path in written:
        width, height = png_size(path)
        assert width >= 600 and height >= 450 and path.stat().st_size > 10_000
    assert sorted(path.name for path in (tmp_path / "plots").iterdir()) == sorted(path.name for path in written)
    # Same document, same bytes.
    again = plots.write_plots(sample_document(), tmp_path / "again")
    assert [path.read_bytes() for path in again] == [path.read_bytes() for path in written]


def test_plot_file_names_disambiguate_specs_with_one_stem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    from pytest_bvtest.report import plots

    monkeypatch.chdir(tmp_path)
    assert plots.file_prefixes(
        [str(tmp_path / "a" / "bvtest.yaml"), str(tmp_path / "b" / "bvtest.yaml"), "other.yml"]
    ) == {
        str(tmp_path / "a" / "bvtest.yaml"): "a-bvtest",
        str(tmp_path / "b" / "bvtest.yaml"): "b-bvtest",
        "other.yml": "other",
    }


def test_plots_without_matplotlib_raise_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_bvtest.report import plots

    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(InputError, match=r"pip install matplotlib \(the plots extra of pytest-bvtest\)"):
        plots.write_plots(sample_document(), tmp_path)
    assert not any(tmp_path.iterdir())


def real_trec8_document() -> dict[str, Any]:
    """A session document of the 129 TREC-8 ad hoc runs (AP), bias-variance from the stats module."""
    path = shared_path("newbestsub_named_matrices", "AH99.csv")
    names = [line.split(",", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    scores = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    analysis = bias_variance_analysis(scores)
    terms = analysis.bias_variance
    candidate, reference = names.index("READWARE2"), names.index("pir9Aatd")
    systems = []
    for i, name in enumerate(names):
        role = "candidate" if i == candidate else "reference" if i == reference else "baseline"
        systems.append(
            system(
                name,
                role,
                mean=float(terms.mean[i]),
                bias2=float(terms.bias2[i]),
                var=float(terms.var[i]),
                bias2_plus_var=float(terms.error[i]),
            )
        )
    document = sample_document()
    evaluation = document["evaluations"][1]
    evaluation.update(
        spec=str(path),
        topics=[str(topic) for topic in range(401, 451)],
        systems=systems,
        gates=[],
        target={"c": analysis.c, "per_topic": analysis.target_scores.tolist(), "constant_topics": 0},
        tradeoff={"pearson": analysis.tradeoff.pearson, "spearman": analysis.tradeoff.spearman},
        candidate=names[candidate],
        reference=names[reference],
    )
    document.update(evaluations=[evaluation], passed=True, summary={"gates": 0, "failed": 0, "warnings": 0})
    return document


def test_reports_on_129_real_trec8_runs(tmp_path: Path, validator: Any) -> None:
    document = real_trec8_document()
    validator.validate(document)
    lines = texts(terminal.summary_lines(document))
    # title, header, systems, tradeoff, the gap table's title, header, candidate and reference; a blank line, verdict,
    # the change
    assert len(lines) == 1 + 1 + 129 + 1 + 4 + 3
    assert lines[-2:] == [
        "analysis only, no gates",
        "READWARE2 against pir9Aatd, mean over 50 queries: AP 0.3303 → 0.4692 (+0.1389)",
    ]
    assert sum(line.startswith(terminal.CANDIDATE_MARKER) for line in lines) == 1
    assert_tables_well_formed(markdown.render(document))
    pytest.importorskip("matplotlib")
    from pytest_bvtest.report import plots

    written = plots.write_plots(document, tmp_path)
    assert [path.name for path in written] == ["AH99-AP-bias-variance.png", "AH99-AP-scatter.png"]
    width, _ = png_size(written[0])
    # The bias-variance figure widens with the number of systems (16 inches at 100 dpi at most).
    assert width == 1600


# --- a document from the real pipeline -----------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def read_qrels_dict(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        topic, _, docno, grade = line.split()
        qrels.setdefault(topic, {})[docno] = int(grade)
    return qrels


def read_run_dict(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        topic, _, docno, _, score, _ = line.split()
        run.setdefault(topic, {})[docno] = float(score)
    return run


def test_reports_of_a_real_evaluation_of_the_example_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, validator: Any
) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from pytest_bvtest.judging.pipeline import evaluate_spec
    from pytest_bvtest.report import outputs
    from pytest_bvtest.report.jsonreport import dumps
    from pytest_bvtest.spec.reader import load_spec

    runs = {
        name: EXAMPLE / "runs" / f"{name}.run" for name in ("production", "bm25-alt", "past-release", "candidate-risky")
    }
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {EXAMPLE / 'eval' / 'qrels.txt'}\n"
        "measures: [nDCG@10]\n"
        "baselines:\n"
        + "".join(f"  {name}: {runs[name]}\n" for name in ("production", "bm25-alt", "past-release"))
        + f"candidate: {runs['candidate-risky']}\n"
        "reference: production\n"
        "analysis:\n  risk_alpha: 5\n"
        "gates:\n"
        "  - statistic: trisk\n    min: -2\n"
        "  - statistic: mean\n    max_decrease: 0.01\n    confidence: 0.95\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    document = outputs.evaluation_document(evaluate_spec(load_spec(spec), use_cache=False))
    validator.validate(json.loads(dumps(document)))

    # Independent per-topic nDCG@10 from pytrec_eval.
    qrels = read_qrels_dict(EXAMPLE / "eval" / "qrels.txt")
    per_topic = {}
    for name, path in runs.items():
        results = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(read_run_dict(path))
        per_topic[name] = {topic: values["ndcg_cut_10"] for topic, values in results.items()}
    means = {name: float(np.mean(list(scores.values()))) for name, scores in per_topic.items()}

    lines = texts(terminal.summary_lines(document))
    rows = {line.split()[0]: line.split() for line in lines[2:6]}
    assert rows[">"][1] == "candidate" and rows[">"][3] == f"{means['candidate-risky']:.4f}"
    for name in ("production", "bm25-alt", "past-release"):
        assert rows[name][2] == f"{means[name]:.4f}"
    assert any(line.startswith("[FAIL] bvtest.yaml::nDCG@10::trisk: nDCG@10 TRisk FAILED") for line in lines)

    deltas = {
        topic: per_topic["candidate-risky"][topic] - per_topic["production"][topic] for topic in per_topic["production"]
    }
    worst = min(deltas, key=deltas.get)
    text = markdown.render(document)
    assert_tables_well_formed(text)
    assert (
        f"| {worst} | {per_topic['candidate-risky'][worst]:.4f} | {per_topic['production'][worst]:.4f} | "
        f"{deltas[worst]:+.4f} |"
    ) in text
    errors = [command for command in github.annotations(document) if command.startswith("::error file=bvtest.yaml,")]
    assert len(errors) == 1 and "trisk" in errors[0]

    pytest.importorskip("matplotlib")
    from pytest_bvtest.report import plots

    for path in plots.write_plots(document, tmp_path / "plots"):
        assert png_size(path)[0] >= 600 and path.stat().st_size > 10_000


def test_markdown_what_to_do_footer_and_folded_comparisons() -> None:
    document = sample_document()
    evaluation = document["evaluations"][0]
    evaluation["candidate_given"] = ["runs/new run.txt"]  # as CI named it: --bvtest-run "runs/new run.txt"
    evaluation["comparisons"] = [
        {
            "baseline": "production",
            "difference": -0.062,
            "wins": 2,
            "ties": 0,
            "losses": 3,
            "t": -0.9,
            "p_t": 0.41,
            "p_t_holm": 0.41,
            "p_randomization": 0.44,
            "p_randomization_holm": 0.44,
            "permutations": 10000,
            "seed": 0,
        }
    ]
    text = markdown.render(document)
    lines = text.splitlines()
    folded = lines.index("<details><summary>Comparisons on the mean: wins/ties/losses and paired tests</summary>")
    assert lines[folded + 2 : folded + 7] == [
        "**nDCG@10**",
        "",
        "```text",
        "candidate vs baselines on the mean (paired over topics; Holm over 1; randomization: 10,000 sign flips, "
        "seed 0):",
        "  production  -0.0620  W/T/L 2/0/3  t-test p 0.4100 (Holm 0.4100)  randomization p 0.4400 (Holm 0.4400)",
    ]
    # the commands on the first screen: reproduce, and accept the failing change on purpose
    assert (
        "**Reproduce:** `pytest bvtest.yaml --bvtest-run 'runs/new run.txt'` · **Accept it on purpose:** "
        "`pytest bvtest.yaml --bvtest-run 'runs/new run.txt' --bvtest-update-force`, then commit the reference run it "
        "writes" in lines
    )
    folded = lines.index("<details><summary>What else to do: adjust a gate, read what a statistic means</summary>")
    footer = lines[folded:]
    # the failing and the OK* gate, each at its line in the spec
    assert "`nDCG@10::bias2_plus_var` at `bvtest.yaml:12`, `nDCG@10::urisk` at `bvtest.yaml:14`" in footer[2]
    assert footer[3].startswith("- **What the statistics mean:** Bias²+Var")
    assert (
        "concepts.md#bias-and-variance" in footer[3] and "concepts.md#risk-harm-compared-with-a-baseline" in footer[3]
    )
    assert "What else to do" not in markdown.render(analysis_only_document())
    # with no failed gate, the only command is the one that reproduces the verdict
    for gate in evaluation["gates"]:
        gate.update(passed=True, outcome="OK*" if gate["outcome"] == "FAIL" else gate["outcome"])
    assert wording.commands(document) == [("Reproduce", ["pytest bvtest.yaml --bvtest-run 'runs/new run.txt'"], "")]


def test_the_commands_name_the_candidate_as_the_user_did_in_the_shell_they_ran() -> None:
    """The spec's own candidate (a run through a symbolic link, a table): the spec alone reproduces it, and no
    resolved path leads outside the project; ``bvtest check``'s verdict is reproduced and accepted with its own
    options."""
    document = sample_document()
    assert [commands for _, commands, _ in wording.commands(document)] == [
        ["pytest bvtest.yaml"],
        ["pytest bvtest.yaml --bvtest-update-force"],
    ]
    document["shell"] = "bvtest check"
    document["evaluations"][0]["candidate_given"] = ["../runs/new.run"]
    assert [commands for _, commands, _ in wording.commands(document)] == [
        ["bvtest check bvtest.yaml --run ../runs/new.run"],
        ["bvtest check bvtest.yaml --run ../runs/new.run --update-force"],
    ]


def test_terminal_quiet_and_compact_summaries() -> None:
    document = sample_document()
    quiet = terminal.summary_lines(document, verbosity=-1)
    # the OK* gate says why at every verbosity (its own warning: within noise), wrapped at the terminal's width
    within_noise = [
        "WARNING (nDCG@10::urisk): point estimate past the bound by 0.112, but the 95% interval [-0.41, 0.02] reaches "
        "the safe",
        "    side: within noise (OK*)",
    ]
    assert texts(quiet) == [
        *within_noise,
        "[FAIL] nDCG@10::bias2_plus_var: nDCG@10 Bias²+Var 0.0371 vs 0.0158, limit <= 0.0174: quality varies more "
        "from query to",
        "    query or sits further below the best achievable than in production",
        "[OK] nDCG@10::mean: nDCG@10 Mean 0.478, limit >= 0.400",
        "[OK*] nDCG@10::urisk: nDCG@10 URisk -0.162 vs 0, limit >= -0.0500",
        "[OK] AP::bias2: AP Bias² 0.0100, limit <= 0.0500",
        "bvtest: 4 gates, 1 failed, 1 with a warning (OK*)",
    ]
    assert quiet[2][1] == quiet[3][1] == {"red": True, "bold": True}
    compact = texts(terminal.summary_lines(document, verbosity=0))
    assert compact[0].split() == ["outcome", "gate", "value", "compared", "with", "change", "limit", "false", "alarm"]
    assert compact[1].split() == [
        "FAIL",
        "nDCG@10::bias2_plus_var",
        "0.0371",
        "0.0158",
        "production",
        "+0.02133",
        "(worse)",
        "<=",
        "0.0174",
        "46.9%",
    ]
    assert compact[3].split()[:3] == ["OK*", "nDCG@10::urisk", "-0.162"]
    # then the page: the verdict, what changed, the cause, the warning, the commands
    assert compact[6:15] == [
        "1 of 4 gates fails, for 2 queries",
        "candidate against production, mean over 5 queries: nDCG@10 0.5400 → 0.4780 (-0.0620), AP 0.5400 → 0.4780 "
        "(-0.0620)",
        "2 queries got worse (production → candidate) and break 1 gate:",
        "  topic  nDCG@10",
        "  302    0.7000 → 0.2000 (-0.5000)",
        "  301    0.6200 → 0.6000 (-0.0200)",
        "  breaks nDCG@10::bias2_plus_var",
        *within_noise,
    ]
    assert compact[-5:] == [
        "Reproduce: pytest bvtest.yaml",
        "Accept it on purpose: pytest bvtest.yaml --bvtest-update-force, then commit the reference run it writes",
        "(-v adds the system tables, comparisons and notes)",
        "",
        "bvtest: 4 gates, 1 failed, 1 with a warning (OK*)",
    ]
    assert all(len(line) <= 120 for line in compact + texts(quiet))


def test_progress_line_appears_only_after_the_delay() -> None:
    from pytest_bvtest.scoring.progress import EvaluationProgress, ProgressLine

    quick, slow = io.StringIO(), io.StringIO()
    with ProgressLine("bvtest.yaml", EvaluationProgress(runs_total=3), quick, delay=5.0):
        pass
    assert quick.getvalue() == ""
    progress = EvaluationProgress(runs_total=3)
    with ProgressLine("bvtest.yaml", progress, slow, delay=0.0, interval=60.0):
        time.sleep(0.3)  # the first line is written at once, before the evaluation below moves on
        progress.runs_done, progress.cache_hits = 3, 2
    lines = slow.getvalue().splitlines()
    assert lines[0].startswith("bvtest: bvtest.yaml: evaluating runs: 0/3 runs evaluated, 0 cache hits")
    assert re.fullmatch(r"bvtest: bvtest.yaml: 3 runs evaluated, 2 cache hits, done in \d+\.\d s", lines[-1])


def test_markdown_escapes_every_sentence_and_the_ok_star_sentence_points_to_the_warning(tmp_path: Path) -> None:
    """The example project's candidate run listed as a baseline too (every gate OK*, identical guard), with a
    hurt-topics gate, whose label `<Init` GitHub would read as an HTML tag in a bullet, and a risky candidate's
    failing gate. Every `<` outside code spans is escaped by one helper, and the OK* sentence no longer repeats the
    guard's warning (which the Markdown shows once, under the headline)."""
    from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
    from pytest_bvtest.report import outputs

    example = Path(__file__).resolve().parent.parent / "example_project"
    spec = tmp_path / "bvtest.yaml"
    previous = tmp_path / "previous.run"  # a baseline's run as the candidate: tested by mistake
    previous.write_bytes((example / "runs" / "candidate-pass.run").read_bytes())
    spec.write_text(
        f"qrels: {example / 'eval' / 'qrels.txt'}\n"
        f"topics: {example / 'eval' / 'topics.tsv'}\n"
        "measures: [nDCG@10]\n"
        f"baselines: {{production: {example / 'runs' / 'production.run'}, previous: {previous}}}\n"
        f"candidate: {example / 'runs' / 'candidate-pass.run'}\n"
        "reference: production\n"
        "cache: false\n"
        "gates:\n"
        "  - {statistic: hurt_topics, max: 20}\n"
        "  - {statistic: mean, max_decrease: 0.01}\n"
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False)
    hurt, mean = evaluation.measure().gates
    said = words(hurt)
    assert hurt.outcome == mean.outcome == "OK*" and said["guards"][0].startswith("identical: candidate's per-topic")
    assert (
        said["sentence"]
        == "Holds on paper, but do not trust it: a warning says why (<Init 17, limit 20 at a 49.6% false-alarm rate)."
    )
    assert said["guards"][0] not in said["sentence"] and f"  warning: {said['guards'][0]}" in said["message"]
    rendered = markdown.render(outputs.evaluation_document(evaluation))
    assert (
        "- ⚠️ `nDCG@10::hurt_topics` Holds on paper, but do not trust it: a warning says why (&lt;Init 17, limit 20 at "
        "a 49.6% false-alarm rate)." in rendered
    )
    assert rendered.count(said["guards"][0].split(";")[0]) == 1  # the warning once, on the first screen
    without_code = re.sub(r"`[^`\n]*`", "", rendered)
    tags = {"details", "/details", "summary", "/summary", "sub", "/sub", "!--"}
    assert {tag for tag in re.findall(r"<(!--|/?[A-Za-z]+)", without_code)} <= tags

    spec.write_text(spec.read_text().replace("max: 20", "max: 5"))
    risky = spec_under_test(spec, example / "runs" / "candidate-risky.run")
    failing = evaluate_spec(risky, use_cache=False)
    document = outputs.evaluation_document(failing)
    assert document["evaluations"][0]["gates"][0]["outcome"] == "FAIL"  # 14 topics hurt: past max 5
    rendered = markdown.render(document)
    assert "&lt;Init" in rendered and "Topics that moved &lt;Init most the wrong way" in rendered
    without_code = re.sub(r"`[^`\n]*`", "", rendered)
    assert {tag for tag in re.findall(r"<(!--|/?[A-Za-z]+)", without_code)} <= tags


def test_real_ok_star_from_a_gates_own_warning_says_why_at_every_verbosity(tmp_path: Path) -> None:
    """DL-HARD: BM25+ELECTRA cut by two topics against itself. Its calibrated limit cannot fail (only 4 swaps
    differ), which is the gate's own warning, not a measure guard: the terminal summary showed `OK*` without
    any reason (`bvtest check` has no pytest warnings summary to fall back on)."""
    import gzip

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
    own = [message for message in words(gate)["guards"] if message.startswith("the null of no change is too coarse")]
    assert gate.outcome == "OK*" and len(own) == 1
    document = outputs.evaluation_document(evaluation)
    for verbosity in (-1, 0):  # wrapped at the terminal's width
        text = " ".join(line.strip() for line, _ in terminal.summary_lines(document, verbosity))
        assert f"WARNING (nDCG@10::var): {own[0]}" in text
    verbose = [line for line, _ in terminal.summary_lines(document, 1)]
    assert f"WARNING (nDCG@10::var): {own[0]}" in verbose
    assert markdown.render(document).count(own[0].split(":")[0]) == 1
