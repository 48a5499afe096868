"""The spec loader: valid specs, and one test per class of mistake naming file, line and key."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest
from conftest import shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.spec.model import Bound, DifficultyGrouping, RandomGrouping, RunFile, SampledGrouping, ScoreTableFile
from pytest_bvtest.spec.reader import SpecWarning, load_spec, with_candidate_run

RUN = "1 Q0 d1 1 2.0 tag\n1 Q0 d2 2 1.0 tag\n"
QRELS = "1 0 d1 1\n1 0 d2 0\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir()
    for name in ("prod", "bm25", "new"):
        (tmp_path / "runs" / f"{name}.run").write_text(RUN)
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "table.csv").write_text("AP,1,2\nsysA,0.5,0.25\nsysB,0.1,0.2\nsysC,0.3,0.3\n")
    return tmp_path


def write_spec(folder: Path, text: str) -> Path:
    path = folder / "bvtest.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def load_error(folder: Path, text: str) -> InputError:
    path = write_spec(folder, text)
    with pytest.raises(InputError) as caught:
        load_spec(path)
    return caught.value


FULL = """
qrels: qrels.txt
measures: [AP, ndcg_cut_10]
baselines:
  production: runs/prod.run
  bm25: {run: runs/bm25.run, tag: tag}
candidate: runs/new.run
reference: production
analysis:
  target: 1
  normalize: max-min
  grouping: {by: random, size: 10, repeats: 50, seed: 3}
  risk_alpha: 2
  mve: {alpha: -1}
  gawm: {q: 2}
  simulation: {samples: 20, seed: 4}
  bootstrap: {resamples: 200, seed: 9}
gates:
  - {statistic: bias2_plus_var, max_increase: 5%}
  - {statistic: var, max_increase: 0.002}
  - {statistic: urisk, min: -0.01}
  - {statistic: georisk, max_decrease: 1%, confidence: 0.9, measure: AP}
  - {statistic: var, max: 0.5}
"""


def test_full_spec_is_read_with_paths_relative_to_its_folder(project: Path) -> None:
    spec = load_spec(write_spec(project, FULL))
    assert [str(m) for m in spec.measures] == ["AP", "nDCG@10"]
    assert spec.qrels == (project / "qrels.txt").resolve()
    assert spec.baselines["production"] == RunFile((project / "runs/prod.run").resolve(), name="production")
    assert spec.baselines["bm25"].tag == "tag"
    assert spec.candidate == RunFile((project / "runs/new.run").resolve(), name="candidate")
    assert spec.reference == "production"
    assert spec.analysis.target == 1.0
    assert spec.analysis.normalize == "max-min"
    assert spec.analysis.grouping == RandomGrouping(10, 50, 3)
    assert spec.analysis.risk_alpha == 2.0
    assert spec.analysis.mve.alpha == -1.0
    assert spec.analysis.gawm_q == 2.0
    assert (spec.analysis.simulation.samples, spec.analysis.simulation.seed) == (20, 4)
    assert (spec.analysis.bootstrap.resamples, spec.analysis.bootstrap.seed) == (200, 9)
    first, second, third, fourth, fifth = spec.gates
    assert first.bound == Bound("max_increase", 0.05, relative=True)
    assert second.bound == Bound("max_increase", 0.002, relative=False)
    assert third.bound == Bound("min", -0.01, relative=False)
    assert fourth.confidence == 0.9 and str(fourth.measure) == "AP"
    # two gates on `var` get distinct names, so their test ids differ
    assert (second.name, fifth.name) == ("var[max_increase]", "var[max]")
    assert first.line == 18


def test_defaults_and_first_baseline_as_reference(project: Path) -> None:
    spec = load_spec(
        write_spec(
            project,
            """
        qrels: qrels.txt
        measures: AP
        baselines: {bm25: runs/bm25.run, production: runs/prod.run}
        candidate: runs/new.run
    """,
        )
    )
    assert spec.reference == "bm25"
    assert spec.analysis.target == "mean" and spec.analysis.normalize == "none" and spec.analysis.grouping is None
    assert spec.analysis.risk_alpha == 5.0 and spec.analysis.simulation is None
    assert spec.gates == ()
    assert spec.cache == project.resolve() / ".bvtest_cache"


def test_table_of_baselines_and_candidate_naming_one_of_its_systems(project: Path) -> None:
    spec = load_spec(
        write_spec(
            project,
            """
        measures: [AP]
        baselines: table.csv
        candidate: sysC
        reference: sysA
        analysis: {grouping: {by: difficulty, size: 1}}
        gates: [{statistic: mean, max_decrease: 0.1}]
    """,
        )
    )
    assert list(spec.baselines) == ["sysA", "sysB"]
    assert isinstance(spec.candidate, ScoreTableFile) and spec.candidate.systems == ("sysC",)
    assert spec.analysis.grouping == DifficultyGrouping(1)
    assert spec.qrels is None


def test_analysis_only_spec_is_valid(project: Path) -> None:
    spec = load_spec(write_spec(project, "measures: [AP]\nbaselines: table.csv\n"))
    assert spec.candidate is None and spec.gates == ()


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (
            "measures: [AP]\nbaselines: {a: runs/prod.run}\nqrels: qrels.txt\ncandidate: runs/new.run\ngatez: []\n",
            5,
            "gatez: unknown top-level key; did you mean `gates`?",
        ),
        ("qrels: qrels.txt\nmeasures: [AP, nDGC@10]\n", 2, "measures[1]"),
        ("qrels: missing.txt\nmeasures: [AP]\n", 1, "file not found"),
        ("qrels: qrels.txt\nmeasures: [AP]\nbaselines:\n  prod: runs/nope.run\n", 4, "baselines.prod"),
        ("qrels: qrels.txt\nmeasures: [AP]\nbaselines:\n  prod: runs\n", 4, "is a folder, not a file"),
        (
            "qrels: qrels.txt\nmeasures: [AP]\nbaselines: {prod: runs/prod.run}\nreference: prdo\n",
            4,
            "did you mean 'prod'",
        ),
        ("measures: [AP]\nanalysis:\n  normalize: minmax\n", 3, "unknown normalisation 'minmax'"),
        ("measures: [AP]\nanalysis:\n  grouping: {by: topics, size: 3}\n", 3, "unknown grouping 'topics'"),
        ("measures: [AP]\nanalysis:\n  risk_alpha: -1\n", 3, "must be at least 0"),
        ("measures: [AP]\nanalysis:\n  risk_alpha: five\n", 3, "expected a number"),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n  - "
            "{statistic: bias2_plus_vra, max: 1}\n",
            6,
            "did you mean 'bias2_plus_var'",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n  - "
            "{statistic: var}\n",
            6,
            "exactly one bound",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n  - "
            "{statistic: mean, max_increase: 1%}\n",
            6,
            "use `max_decrease`",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n  - "
            "{statistic: var, max: 5%}\n",
            6,
            "percentage is relative",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n  - "
            "{statistic: var, max_increase: lots}\n",
            6,
            "expected a number or a percentage",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n  - "
            "{statistic: var, max: 1, confidence: 95}\n",
            6,
            "between 0 and 1",
        ),
        ("measures: [AP]\nmeasures: [P@10]\n", 2, "appears twice"),
        ("measures: [AP\nqrels: x\n", 2, "invalid YAML"),
        ("measures: [AP]\nbaselines: {p: runs/prod.run}\n", 2, "need relevance judgments"),
        ("", None, "the spec is empty"),
        (
            "qrels: qrels.txt\nmeasures: [AP]\nbaselines:\n  prod: runs/prod.run\n  bm25: runs/./prod.run\n",
            5,
            "'bm25' names the same run as 'prod' (prod.run)",
        ),
    ],
    ids=[
        "typo-top-key",
        "unknown-measure",
        "missing-qrels",
        "missing-run",
        "folder-as-run",
        "unknown-reference",
        "bad-normalize",
        "bad-grouping",
        "negative-alpha",
        "non-number",
        "unknown-statistic",
        "no-bound",
        "wrong-direction",
        "percent-on-absolute",
        "bad-amount",
        "bad-confidence",
        "duplicate-key",
        "yaml-syntax",
        "runs-without-qrels",
        "empty",
        "one-run-under-two-names",
    ],
)
def test_each_mistake_names_file_line_and_key(project: Path, text: str, line: int | None, fragment: str) -> None:
    error = load_error(project, text)
    location = f"{project.resolve() / 'bvtest.yaml'}" + (f":{line}:" if line else ":")
    assert str(error).startswith(location), str(error)
    assert fragment in str(error)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (
            "measures: [AP]\nbaselines: {p: {scores: table.csv, system: sysA}}\ncandidate: runs/new.run\nqrels: "
            "qrels.txt\n"
            "analysis:\n  simulation: {samples: 5}\n",
            6,
            "the per-topic simulation needs run files: per-topic tables",
        ),
        (
            "measures: [AP]\nbaselines: table.csv\nanalysis:\n  simulation: {samples: 5}\n",
            4,
            "the per-topic simulation needs run files and qrels, without query variations",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\nanalysis:\n  mve:\n"
            "    variations: variations.tsv\n  simulation: {samples: 5}\n",
            7,
            "the per-topic simulation needs run files and qrels, without query variations",
        ),
        (
            "measures: [AP]\ncandidate: {scores: table.csv, system: sysA}\nanalysis:\n"
            "  rankings: {statistics: [urisk]}\n",
            4,
            "systems cannot be ranked by urisk: it needs a reference system",
        ),
        (
            "measures: [AP]\nqrels: qrels.txt\ncandidate: runs/new.run\nanalysis:\n  rankings: {}\n",
            5,
            "rankings need at least 2 systems",
        ),
    ],
    ids=[
        "simulation-on-tables",
        "simulation-without-qrels",
        "simulation-with-variations",
        "ranking-by-a-comparison-without-reference",
        "ranking-one-run",
    ],
)
def test_sections_that_cannot_work_together_fail_at_load_with_their_line(
    project: Path, text: str, line: int, fragment: str
) -> None:
    """Checks that read only the spec, across sections, fail when it is read, not when it is evaluated."""
    (project / "variations.tsv").write_text("1\t1\tfirst query\n2\t2\tsecond query\n")
    error = load_error(project, text)
    assert str(error).startswith(f"{project.resolve() / 'bvtest.yaml'}:{line}:"), str(error)
    assert fragment in str(error)


def test_a_candidate_override_is_checked_against_the_spec_again(project: Path) -> None:
    """Per-query tables may give variations without qrels; a run file as the candidate may not."""
    (project / "variations.tsv").write_text("1\t1\tfirst query\n2\t2\tsecond query\n")
    spec = load_spec(
        write_spec(project, "measures: [AP]\nbaselines: table.csv\nanalysis:\n  mve:\n    variations: variations.tsv\n")
    )
    with pytest.raises(InputError) as caught:
        with_candidate_run(spec, project / "runs" / "new.run")
    assert str(caught.value).startswith(f"{project.resolve() / 'bvtest.yaml'}:5: query variations from run files")


def test_unknown_measure_suggests_a_close_name(project: Path) -> None:
    error = load_error(project, "measures: [nDGC@10]\n")
    assert "nDCG@10" in str(error)


def test_with_candidate_run_replaces_the_candidate(project: Path) -> None:
    spec = load_spec(write_spec(project, FULL))
    swapped = with_candidate_run(spec, project / "runs" / "bm25.run")
    assert swapped.candidate.path == (project / "runs" / "bm25.run").resolve()
    with pytest.raises(InputError, match="candidate run not found"):
        with_candidate_run(spec, project / "runs" / "absent.run")


def test_gates_that_would_share_a_test_id_on_some_measure_get_distinct_names(project: Path) -> None:
    spec = load_spec(
        write_spec(
            project,
            """
        qrels: qrels.txt
        measures: [AP, P@10]
        baselines: {p: runs/prod.run}
        candidate: runs/new.run
        gates:
          - {statistic: mean, max_decrease: 0.01}
          - {statistic: mean, measure: AP, min: 0.9}
          - {statistic: mean, measure: P@10, min: 0.1}
          - {statistic: var, max: 0.1}
          - {statistic: var, max: 0.2}
          - {statistic: var, max: 0.3}
    """,
        )
    )
    names = [gate.name for gate in spec.gates]
    assert names == ["mean[max_decrease]", "mean[min]", "mean[min]", "var[max]", "var[max]#2", "var[max]#3"]
    for measure in spec.measures:
        ids = [gate.name for gate in spec.gates if gate.measure in (None, measure)]
        assert len(ids) == len(set(ids)), (measure, ids)


def test_table_format_is_stated_for_a_whole_table_of_baselines(project: Path) -> None:
    # topics as rows with no topic column: auto-detection could read it either way
    (project / "urbano.csv").write_text("sysA,sysB,sysC\n0.5,0.1,0.3\n0.25,0.2,0.3\n")
    spec = load_spec(
        write_spec(project, "measures: [AP]\ntable_format: wide-topics\nbaselines: urbano.csv\ncandidate: sysC\n")
    )
    assert list(spec.baselines) == ["sysA", "sysB"]
    assert spec.candidate.format == "wide-topics"
    error = load_error(project, "measures: [AP]\ntable_format: sideways\nbaselines: urbano.csv\n")
    assert str(error).endswith(
        "bvtest.yaml:2: table_format: unknown table format 'sideways'; use one of auto, trec_eval, long, wide, "
        "wide-topics, parquet"
    )


_GATED = "measures: [AP]\nqrels: qrels.txt\nbaselines: {p: runs/prod.run}\ncandidate: runs/new.run\ngates:\n"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (
            _GATED + "  - {statistic: var, false_alarm: 0.5}\n",
            6,
            "gates[0].false_alarm: must lie strictly between 0 and 0.5",
        ),
        (_GATED + "  - {statistic: var, false_alarm: 0}\n", 6, "must lie strictly between 0 and 0.5"),
        (_GATED + "  - {statistic: var, false_alarm: five}\n", 6, "gates[0].false_alarm: expected a number"),
        # a rate written as a percentage: the number to write (a percentage in a bound means relative to the reference)
        (
            _GATED + "  - {statistic: var, false_alarm: 5%}\n",
            6,
            "gates[0].false_alarm: got the percentage '5%'; write 0.05, a number between 0 and 0.5; "
            "a percentage such as 5% is for max_increase / max_decrease, where it is relative to the reference",
        ),
        (
            _GATED + "  - {statistic: var, false_alarm: 5}\n",
            6,
            "gates[0].false_alarm: must lie strictly between 0 and 0.5 (e.g. 0.05), got 5; for 5% write 0.05",
        ),
        (_GATED + "  - {statistic: var, false_alarm: 2.5 %}\n", 6, "got the percentage '2.5 %'; write 0.025,"),
        (
            _GATED + "  - {statistic: var, max: 1, confidence: 95%}\n",
            6,
            "gates[0].confidence: got the percentage '95%'; write 0.95, a number between 0 and 1",
        ),
        (_GATED + "  - {statistic: var, max: 1, confidence: 95}\n", 6, "got 95; for 95% write 0.95"),
        (
            _GATED + "  - {statistic: mean, false_alarm: 0.05, confidence: 0.95}\n",
            6,
            "already calibrated against noise",
        ),
        (_GATED + "  - {statistic: mean, false_alarm: 0.05, max: 0.9}\n", 6, "`max` bounds the other side"),
        (_GATED + "  - {statistic: var, false_alarm: 0.05, min: 0.01}\n", 6, "`min` bounds the other side"),
        (
            "measures: [AP]\nqrels: qrels.txt\ncandidate: runs/new.run\ngates:\n"
            "  - {statistic: mean, min: 0.1}\n  - {statistic: var, false_alarm: 0.05}\n",
            6,
            "gates[1]: gate on var (false_alarm: its null swaps topics with the reference) needs a reference system",
        ),
        (
            "measures: [AP]\nanalysis:\n  calibration: {swaps: 10}\n",
            3,
            "analysis.calibration.swaps: must be at least 100",
        ),
        ("measures: [AP]\nanalysis:\n  calibration: {sweeps: 1000}\n", 3, "did you mean `swaps`?"),
    ],
    ids=[
        "rate-half",
        "rate-zero",
        "rate-word",
        "rate-percentage",
        "rate-percent-number",
        "rate-percentage-spaced",
        "confidence-percentage",
        "confidence-percent-number",
        "with-confidence",
        "max-on-higher-better",
        "min-on-lower-better",
        "no-reference",
        "too-few-swaps",
        "calibration-typo",
    ],
)
def test_each_calibration_mistake_names_file_line_and_key(project: Path, text: str, line: int, fragment: str) -> None:
    error = load_error(project, text)
    assert str(error).startswith(f"{project.resolve() / 'bvtest.yaml'}:{line}:"), str(error)
    assert fragment in str(error)


def test_false_alarm_alone_or_beside_a_bound_is_a_valid_gate(project: Path) -> None:
    spec = load_spec(
        write_spec(
            project,
            _GATED + "  - {statistic: trisk, false_alarm: 0.05}\n"
            "  - {statistic: var, max_increase: 5%, false_alarm: 0.01}\n"
            "analysis:\n  calibration: {swaps: 2000, seed: 7}\n",
        )
    )
    alone, both = spec.gates
    assert (alone.bound, alone.false_alarm, alone.reference) == (None, 0.05, "p")
    assert (both.bound, both.false_alarm) == (Bound("max_increase", 0.05, True), 0.01)
    assert (spec.analysis.calibration.swaps, spec.analysis.calibration.seed) == (2000, 7)


def test_grouping_by_mean_difficulty_sampled_groups_and_zrisk_against_target(tmp_path):
    (tmp_path / "scores.csv").write_text("topic,a,b\n1,0.1,0.2\n2,0.3,0.4\n")
    base = "measures: [AP]\nbaselines: scores.csv\ntable_format: wide-topics\nanalysis:\n  "
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(base + "grouping: {by: difficulty, size: 2, difficulty: mean}\n  zrisk_against: target\n")
    loaded = load_spec(spec)
    assert loaded.analysis.grouping == DifficultyGrouping(2, "mean") and loaded.analysis.zrisk_against == "target"
    spec.write_text(base + "grouping: {by: sampled, seed: 4}\n")
    assert load_spec(spec).analysis.grouping == SampledGrouping(10, 50, 1000, 4)
    for wrong, message in (
        ("grouping: {by: random, difficulty: mean}", "difficulty"),
        ("grouping: {by: difficulty, groups: 3}", "groups"),
        ("zrisk_against: everyone", "ZRisk baseline"),
    ):
        spec.write_text(base + wrong + "\n")
        with pytest.raises(InputError, match=message):
            load_spec(spec)


def test_a_mistyped_table_system_as_the_candidate_says_so_not_file_not_found(tmp_path: Path) -> None:
    """Benham's Robust04 table (45 named runs): `candidate: Champoin` was reported as a missing run file."""
    table = shared_path("benham_bayesian_risk", "rb04_data.csv")
    text = f"""
        measures: [AP]
        baselines: {table}
        table_format: long
        candidate: CANDIDATE
        reference: Chal. 1
        gates: [{{statistic: mean, max_decrease: 0.01}}]
    """
    error = load_error(tmp_path, text.replace("CANDIDATE", "Champoin"))
    assert error.line == 4 and "file not found" not in str(error)
    assert str(error).startswith(
        f"{tmp_path / 'bvtest.yaml'}:4: candidate: 'Champoin' is neither a file nor a system of the baselines' tables "
        "(Chal. 1, Chal. 2, Chal. 3, Chal. 4, Champion,"
    )
    assert str(error).endswith("did you mean `Champion`?")
    assert load_spec(write_spec(tmp_path, text.replace("CANDIDATE", "Champion"))).candidate_name == "Champion"


# --- issue 22: numbers YAML 1.1 reads as text, huge percentages, deep nesting, labels, duplicate systems ---------

GATED = "qrels: qrels.txt\nmeasures: [AP]\nbaselines: {prod: runs/prod.run}\ncandidate: runs/new.run\n"


def test_exponent_numbers_are_numbers_as_yaml_1_2_reads_them(project: Path) -> None:
    """`max_decrease: 1e-3` and `false_alarm: 5e-2` were refused: "expected a number, got str '5e-2'"."""
    spec = load_spec(
        write_spec(
            project,
            GATED
            + "analysis:\n  calibration: {swaps: 2e4}\n  mve: {alpha: 1.5e1}\n"
            + "gates:\n  - {statistic: mean, max_decrease: 1e-3, false_alarm: 5e-2}\n"
            + "  - {statistic: var, max: .5E-1}\n",
        )
    )
    assert (spec.gates[0].bound, spec.gates[0].false_alarm) == (Bound("max_decrease", 0.001, relative=False), 0.05)
    assert spec.gates[1].bound == Bound("max", 0.05, relative=False)
    assert (spec.analysis.calibration.swaps, spec.analysis.mve.alpha) == (20000, 15.0)
    # quoted, a value stays the text it is; a run tag or a name is never turned into a number
    error = load_error(project, GATED + "gates:\n  - {statistic: mean, max_decrease: '1e-3'}\n")
    assert "max_decrease: expected a number or a percentage such as 5%, got '1e-3'" in str(error)
    tagged = load_spec(write_spec(project, GATED.replace("prod: runs/prod.run", "1e3: {run: runs/prod.run}")))
    assert list(tagged.baselines) == ["1e3"]


@pytest.mark.parametrize(
    ("bound", "fragment"),
    [
        ("max_decrease: '1e400%'", "max_decrease: '1e400%' is too large a percentage; write a percentage below 1e15%"),
        ("max_decrease: 1e400", "max_decrease: expected a finite number, got float inf"),
    ],
)
def test_a_bound_too_large_for_a_float_is_an_error_at_its_line(project: Path, bound: str, fragment: str) -> None:
    """`max_decrease: '1e400%'` became infinity, and the JSON report a traceback (JSON has no infinity)."""
    error = load_error(project, GATED + f"gates:\n  - {{statistic: mean, {bound}}}\n")
    assert str(error).startswith(f"{project.resolve() / 'bvtest.yaml'}:6: gates[0].{fragment}")


def test_lists_nested_thousands_deep_are_refused_at_their_line(project: Path) -> None:
    """A YAML list nested 5,000 deep raised RecursionError in the YAML composer."""
    error = load_error(project, "qrels: qrels.txt\nmeasures: " + "[" * 5000 + "AP" + "]" * 5000 + "\n")
    assert str(error) == (
        f"{project.resolve() / 'bvtest.yaml'}:2: lists and mappings nest more than 32 deep; a spec nests a few "
        "levels; is this the right file?"
    )


@pytest.mark.parametrize(
    ("written", "name", "label"),
    [
        ("bias2+var", "bias2_plus_var", "Bias²+Var"),
        ("Bias²+Var", "bias2_plus_var", "Bias²+Var"),
        ("Var(ρ)", "gap_var", "Var(ρ)"),
    ],
)
def test_a_statistic_written_as_its_report_label_suggests_its_name(
    project: Path, written: str, name: str, label: str
) -> None:
    """`bias2+var`, the report's own label, suggested `bias2`."""
    error = load_error(project, GATED + f"gates:\n  - {{statistic: '{written}', max: 1}}\n")
    assert str(error).endswith(f"unknown statistic {written!r}; did you mean {name!r}? (the reports label it {label})")


def test_one_table_system_under_two_baseline_names_is_an_error_at_its_line(project: Path) -> None:
    """Like one run file under two names: the system counted twice in ZRisk, GeoRisk, GAWM and Holm."""
    error = load_error(
        project,
        "measures: [AP]\nbaselines:\n  a: {scores: table.csv, system: sysA}\n  b: {scores: table.csv, system: sysB}\n"
        "  c: {scores: ./table.csv, system: sysA}\n",
    )
    assert str(error) == (
        f"{project.resolve() / 'bvtest.yaml'}:5: baselines.c: 'c' names the same table system 'sysA' as 'a' "
        "(table.csv): one system listed twice counts twice in ZRisk, GeoRisk, GAWM and the Holm correction; "
        "list each system once"
    )


def test_swaps_are_capped_like_the_other_repetition_counts(project: Path) -> None:
    """`calibration: {swaps: 1000000000}` ran for ever."""
    error = load_error(project, GATED + "analysis:\n  calibration: {swaps: 1000000000}\n")
    assert str(error).startswith(
        f"{project.resolve() / 'bvtest.yaml'}:6: analysis.calibration.swaps: must be at most 1,000,000, "
        "got 1,000,000,000; more repetitions cost time"
    )
    assert (
        load_spec(write_spec(project, GATED + "analysis:\n  calibration: {swaps: 1e6}\n")).analysis.calibration.swaps
        == 1_000_000
    )


def test_an_mve_gate_over_variations_at_the_default_alpha_is_a_warning_at_its_line(project: Path) -> None:
    (project / "variations.tsv").write_text("1 1\n")
    text = GATED + "analysis:\n  mve: {variations: variations.tsv}\ngates:\n  - {statistic: mve, max_decrease: 0.01}\n"
    with pytest.warns(SpecWarning) as caught:
        load_spec(write_spec(project, text))
    (warning,) = caught
    assert (warning.filename, warning.lineno) == (str(project.resolve() / "bvtest.yaml"), 8)
    assert str(warning.message).startswith(
        "bvtest.yaml: an mve gate over query variations at the default alpha 2 judges the mean"
    )
    stated = text.replace("{variations:", "{alpha: 500, variations:")
    without_gate = text.replace("gates:\n  - {statistic: mve, max_decrease: 0.01}\n", "")
    for quiet in (stated, without_gate):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            load_spec(write_spec(project, quiet))


@pytest.mark.parametrize(
    ("gate", "expected"),
    [
        ("{statistic: mean, max_decrease: 1e-3}", None),
        (
            "{statistic: mean, max_decrease: '1e400%'}",
            "bvtest.yaml:6: gates[0].max_decrease: '1e400%' is too large a percentage; write a percentage below 1e15%",
        ),
        ("{statistic: bias2+var, max: 1}", "did you mean 'bias2_plus_var'? (the reports label it Bias²+Var)"),
    ],
    ids=["exponent", "huge-percentage", "label"],
)
def test_the_same_spec_through_bvtest_check_and_pytest(
    project: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], gate: str, expected: str | None
) -> None:
    from pytest_bvtest.cli import main

    path = write_spec(project, GATED + f"gates:\n  - {gate}\n")
    code = main(["check", str(path), "--no-cache"])
    error = capsys.readouterr().err
    for name in ("qrels.txt", "table.csv"):
        (pytester.path / name).write_text((project / name).read_text())
    (pytester.path / "runs").mkdir()
    for run in (project / "runs").iterdir():
        (pytester.path / "runs" / run.name).write_text(run.read_text())
    write_spec(pytester.path, path.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider", "bvtest.yaml")
    if expected is None:
        assert (code, result.ret) == (0, 0)
        return
    assert code == 2 and error.startswith("bvtest: error: ") and expected in error
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*{expected.replace('[', '[[]')}*"])  # [ opens a class in fnmatch


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ("judgments: {depth: 0}", "judgments.depth: must be at least 1, got 0"),
        ("judgments: {depth: 2.5}", "judgments.depth: expected a whole number, got 2.5"),
        ("judgments: {optimistic_grade: top}", "judgments.optimistic_grade: expected a number"),
        ("judgments: {optimistic_grade: 0}", "judgments.optimistic_grade: must be at least 1"),
        ("judgments: {dpeth: 5}", "judgments.dpeth: unknown judgments key; did you mean `depth`?"),
        ("judgments: deep", "judgments: expected a mapping of judgments settings"),
    ],
)
def test_each_judgments_mistake_names_file_line_and_key(project: Path, section: str, fragment: str) -> None:
    error = load_error(project, f"qrels: qrels.txt\nmeasures: [AP]\n{section}\n")
    assert str(error).startswith(f"{project.resolve() / 'bvtest.yaml'}:3:"), str(error)
    assert fragment in str(error)


def test_judgments_default_to_depth_10_and_the_qrels_top_grade(project: Path) -> None:
    from pytest_bvtest.spec.model import JudgmentSettings

    default = load_spec(write_spec(project, "qrels: qrels.txt\nmeasures: [AP]\n"))
    assert default.judgments == JudgmentSettings(depth=10, optimistic_grade=None)
    stated = load_spec(
        write_spec(project, "qrels: qrels.txt\nmeasures: [AP]\njudgments: {depth: 20, optimistic_grade: 1}")
    )
    assert stated.judgments == JudgmentSettings(depth=20, optimistic_grade=1)


@pytest.mark.parametrize(
    "body",
    [
        GATED + "gates:\n  - {statistic: mean, max_decrease: 1e-3, false_alarm: 5e-2}\n",
        GATED + "gates:\n  - {statistic: mean, max_decrease: '1e-3'}\n",  # an error: quoted, it is text
        GATED + "analysis: &settings\n  risk_alpha: 5\ngates:\n  - statistic: trisk\n    false_alarm: 0.05\n",
        GATED.replace("prod: runs/prod.run", '"prod": "runs/prod.run"') + "gates: [{statistic: var, max: .5E-1}]\n",
        GATED + "gates:\n  - {statistic: mean, max_decrease: 0.01\n",  # a YAML error: its words are PyYAML's
    ],
)
def test_libyaml_reads_a_spec_as_the_pure_python_parser_does(project: Path, body: str, monkeypatch) -> None:
    """The spec is composed by libyaml where PyYAML has it (a spec of 200 baselines took 0.2 s in Python): the same
    values, lines and errors as the pure-Python parser, which composes again a document libyaml refuses."""
    import yaml

    from pytest_bvtest.spec import reader

    def read() -> object:
        try:
            spec = load_spec(write_spec(project, body))
        except InputError as error:
            return str(error), error.line
        return spec, spec.line_of("gates", 0)

    assert issubclass(reader._FAST_LOADER, yaml.cyaml.CParser)
    fast = read()
    monkeypatch.setattr(reader, "_FAST_LOADER", reader._PythonLoader)
    assert fast == read()


@pytest.mark.parametrize("loader", ["libyaml", "python"])
def test_names_and_numbers_are_read_as_yaml_1_2_reads_them(project: Path, loader: str, monkeypatch) -> None:
    """PyYAML's resolver is YAML 1.1's: `name: 12:30` was the gate `750` (sexagesimal), `detect: 0b1` a drop of 1,
    `name: 2024-01-01` a date; docs/spec.md promises YAML 1.2, under libyaml and the pure-Python parser alike."""
    from pytest_bvtest.spec import reader

    if loader == "python":
        monkeypatch.setattr(reader, "_FAST_LOADER", reader._PythonLoader)
    gates = (
        "gates:\n  - {statistic: mean, max_decrease: 010, name: 12:30}\n"
        "  - {statistic: var, max: 1, name: 2024-01-01}\n"
    )
    spec = load_spec(write_spec(project, GATED + gates))
    assert [gate.name for gate in spec.gates] == ["12:30", "2024-01-01"]
    assert spec.gates[0].bound == Bound("max_decrease", 10.0, relative=False)  # ten, not YAML 1.1's octal eight
    assert load_spec(write_spec(project, GATED + "gates: [{statistic: mean, min: 0x10}]")).gates[0].bound.amount == 16
    refused = {
        "max_decrease: 0.01, detect: 0b1": "gates[0].detect: expected a number or a percentage such as 5%, got '0b1'",
        "max_decrease: 1_000": "gates[0].max_decrease: expected a number or a percentage such as 5%, got '1_000'",
        "max_decrease: 1:30": "gates[0].max_decrease: expected a number or a percentage such as 5%, got '1:30'",
        "min: 0, name: [a, b]": "gates[0].name: a gate's name is text, got a list",
        "min: 0, name: ''": "gates[0].name: a gate's name is empty; write a name, or leave the key out",
        "min: 0, name: 2024": "gates[0].name: a gate's name is text, got int 2024; quote it",
        "min: 0, name:": "gates[0].name: a gate's name is text, got nothing",
    }
    for written, message in refused.items():
        error = load_error(project, GATED + f"gates:\n  - {{statistic: mean, {written}}}\n")
        assert message in str(error) and error.line == 6, (written, str(error))
    # the words YAML 1.1 read as booleans are text in YAML 1.2, and a boolean key refuses them
    error = load_error(project, GATED + "gates:\n  - {statistic: mean, min: 0, per_segment: yes}\n")
    assert "per_segment: expected true or false, got str 'yes'" in str(error)
    error = load_error(project, GATED + "cache: off\n")
    assert "cache: 'off' is a folder's name in YAML 1.2" in str(error) and "write `cache: false`" in str(error)
    assert load_spec(write_spec(project, GATED + "cache: ./off\n")).cache == (project / "off").resolve()
    error = load_error(project, GATED.replace("candidate: runs/new.run", "candidate: {run: runs/new.run, name: ''}"))
    assert "candidate.name: the candidate's name is empty" in str(error) and error.line == 4
    # a key stays the text it is written as (a baseline named 2024, a topic 0301)
    assert list(load_spec(write_spec(project, GATED.replace("prod:", "2024:"))).baselines) == ["2024"]


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ('gates:\n  - {statistic: mean, min: 0, name: "floor\\n::add-mask::injected"}\n', 6),
        ('gates:\n  - {statistic: mean, min: 0, name: "\\e[31mred"}\n', 6),
        ('gates:\n  - {statistic: mean, min: 0, name: "mean\\u202eevil"}\n', 6),
        ('gates:\n  - {statistic: mean, min: 0, name: "del\\x7f"}\n', 6),
        ('gates:\n  - {statistic: mean, min: 0, name: "c1\\x9b31m"}\n', 6),
        ('gates:\n  - {statistic: mean, min: 0, name: "tab\\there"}\n', 6),
        ("gates:\n  - statistic: mean\n    min: 0\n    name: |\n      floor\n      ::error::forged\n", 8),
    ],
)
def test_a_control_character_in_a_name_is_refused_at_its_line(project: Path, where: str, line: int) -> None:
    """A gate named `"floor\\n::add-mask::injected"` reached pytest's output at the start of a line, where GitHub
    Actions ran it as a workflow command; an ESC recoloured the terminal, a right-to-left override reordered it."""
    error = load_error(project, GATED + where)
    assert "holds a control character" in str(error) and error.line == line, str(error)
    assert "\n" not in str(error) and "\x1b" not in str(error)


def test_a_control_character_in_a_system_name_or_a_path_is_refused_at_its_line(project: Path) -> None:
    baseline = (
        'qrels: qrels.txt\nmeasures: [AP]\nbaselines:\n  "p\\n::error file=README.md,line=1::forged": runs/prod.run\n'
    )
    error = load_error(project, baseline + "candidate: runs/new.run\n")
    assert "holds a control character ('\\n')" in str(error) and error.line == 4
    error = load_error(
        project, GATED.replace("candidate: runs/new.run", 'candidate: {run: runs/new.run, name: "@x\\r::y"}')
    )
    assert "holds a control character ('\\r')" in str(error) and error.line == 4
    error = load_error(project, GATED.replace("qrels: qrels.txt", 'qrels: "qrels.txt\\x1b"'))
    assert "holds a control character ('\\x1b')" in str(error) and error.line == 1


def test_a_mark_a_ci_log_reads_as_a_command_is_refused_in_a_test_id(project: Path) -> None:
    """A gate named `##[warning]var` is part of the test id pytest prints as it is (`-v`, the failures' header),
    and GitHub Actions reads `##[warning]` anywhere in a line as an annotation; Azure's `##vso[` likewise."""
    for name in ("'##[warning]var'", "'x ##vso[task.setvariable variable=a]1'"):
        error = load_error(project, GATED + f"gates:\n  - {{statistic: mean, min: 0, name: {name}}}\n")
        assert "a CI log reads as a command" in str(error) and error.line == 6, str(error)
    tables = "measures: ['##[error]AP']\nbaselines: table.csv\ncandidate: sysA\ngates: [{statistic: mean, min: 0}]\n"
    error = load_error(project, tables)
    assert "measures[0]: the measure '##[error]AP' holds '##['" in str(error) and error.line == 1, str(error)
    assert load_spec(write_spec(project, GATED + "gates:\n  - {statistic: mean, min: 0, name: '#1 [x]'}\n"))
