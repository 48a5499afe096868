"""Gates per segment: head and tail queries, locales, verticals (docs/mathematics.md §7, "Gates per segment").

A topic file may give each topic a segment and a traffic weight; a gate with ``per_segment: true`` (or
``segment: NAME``) is one gate per segment, on that segment's topics, with its own test id; the calibrated gates of
every segment form one family per rate, their nulls sharing the swaps (each drawn over every topic).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.topicfiles import TopicFile, read_topic_file
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.calibration import swap_null
from tests.conftest import dl_hard_segments, shared_path, words

TOPICS = [f"q{j}" for j in range(1, 9)]
SEGMENTS = ["head"] * 4 + ["tail"] * 4
WEIGHTS = [8, 4, 2, 1, 1, 1, 1, 1]
SCORES = {
    "new": [0.9, 0.6, 0.4, 0.7, 0.1, 0.3, 0.2, 0.5],
    "production": [0.8, 0.7, 0.5, 0.6, 0.4, 0.35, 0.3, 0.6],
    "bm25": [0.5, 0.5, 0.3, 0.4, 0.2, 0.2, 0.3, 0.3],
}


def project(folder: Path, gates: list[dict], *, topic_lines: list[str] | None = None, **spec: object) -> Path:
    """A table of 3 systems on 8 topics, a topic file with segments and weights, and a spec with ``gates``."""
    (folder / "scores.csv").write_text(
        "system,topic,value\n"
        + "".join(f"{system},{topic},{value}\n" for system, row in SCORES.items() for topic, value in zip(TOPICS, row))
    )
    lines = topic_lines or [
        "topic\tquery\tsegment\tweight",
        *(f"{t}\tquery {t}\t{s}\t{w}" for t, s, w in zip(TOPICS, SEGMENTS, WEIGHTS)),
    ]
    (folder / "topics.tsv").write_text("\n".join(lines) + "\n")
    document = {
        "measures": ["P@5"],
        "topics": "topics.tsv",
        "baselines": {
            "production": {"scores": "scores.csv", "system": "production"},
            "bm25": {"scores": "scores.csv", "system": "bm25"},
        },
        "candidate": {"scores": "scores.csv", "system": "new"},
        "cache": False,
        "gates": gates,
        **spec,
    }
    path = folder / "bvtest.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def path_lines(path: Path) -> list[str]:
    """The spec's lines, stripped (to find the line a key is on)."""
    return [line.strip() for line in path.read_text().splitlines()]


# --- the topic file -----------------------------------------------------------------------------------------


def test_a_topic_file_with_a_header_gives_segments_and_weights_in_any_column_order(tmp_path: Path) -> None:
    path = tmp_path / "topics.tsv"
    path.write_text("# traffic of last week\nqid\tweight\tsegment\n7\t120\thead\n9\t3.5\ttail\n8\t0\ttail\n")
    assert read_topic_file(path) == TopicFile({}, {"7": "head", "9": "tail", "8": "tail"}, {"7": 120, "9": 3.5, "8": 0})
    assert read_topic_file(path).segment_names == ("head", "tail")
    # without a header it is MS MARCO's topic<TAB>query text, blanks in the text kept
    path.write_text("7\twhat is a topic\n9 a query without a tab\n")
    assert read_topic_file(path) == TopicFile({"7": "what is a topic", "9": "a query without a tab"}, {}, {})


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (["topic\tsegment", "1\thead\textra"], 2, "found 3 tab-separated columns, but the header (line 1) names 2"),
        (["topic\tsegment", "1\t"], 2, "topic '1' has an empty segment cell"),
        (["topic\tsegment", "1\thead tail"], 2, "segment 'head tail' has a character a test id cannot carry"),
        (["topic\tsegment", "1\tx[1]"], 2, "segment 'x[1]' has a character a test id cannot carry"),
        (["topic\tweight", "1\t-2"], 2, "weight '-2' is negative"),
        (["topic\tweight", "1\tmany"], 2, "weight 'many' is not a number"),
        (["topic\tsegment\tsegment", "1\ta\tb"], 1, "the header names the segment column twice"),
        (["topic\tsegment", "1\thead", "1\ttail"], 3, "topic '1' is listed twice (first on line 2)"),
    ],
)
def test_a_broken_topic_file_is_an_error_at_its_line(tmp_path: Path, lines: list[str], line: int, message: str) -> None:
    path = tmp_path / "topics.tsv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        read_topic_file(path)
    assert caught.value.line == line and caught.value.message.startswith(message), str(caught.value)


# --- the spec -------------------------------------------------------------------------------------------------


def test_per_segment_makes_one_gate_per_segment_named_after_it(tmp_path: Path) -> None:
    spec = load_spec(
        project(
            tmp_path,
            [
                {"statistic": "mean", "false_alarm": 0.25, "per_segment": True},
                {"statistic": "mean", "false_alarm": 0.25},
                {"statistic": "var", "max_increase": 0.01, "segment": "tail"},
            ],
        )
    )
    assert [(gate.name, gate.segment) for gate in spec.gates] == [
        ("mean[head]", "head"),
        ("mean[tail]", "tail"),
        ("mean", None),
        ("var[tail]", "tail"),
    ]
    gate_line = path_lines(tmp_path / "bvtest.yaml").index("- statistic: mean") + 1
    assert spec.gates[0].line == spec.gates[1].line == gate_line  # both report the line of the gate that made them


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ({"statistic": "mean", "min": 0, "segment": "tial"}, "gates[0].segment: 'tial' is not a segment"),
        (
            {"statistic": "mean", "min": 0, "segment": "tail", "per_segment": True},
            "gates[0].segment: give `per_segment: true` or `segment: NAME`, not both",
        ),
        ({"statistic": "mean", "min": 0, "per_segment": "yes"}, "gates[0].per_segment: expected true or false"),
    ],
)
def test_a_segment_the_topic_file_does_not_have_is_an_error_at_the_gate(tmp_path: Path, gate: dict, message: str):
    with pytest.raises(InputError) as caught:
        load_spec(project(tmp_path, [gate]))
    gate_line = path_lines(tmp_path / "bvtest.yaml").index("- statistic: mean") + 1
    # at the key's line: the third of the gate's (statistic, min, then segment or per_segment)
    assert caught.value.message.startswith(message) and caught.value.line == gate_line + 2, str(caught.value)
    if "tial" in message:
        assert caught.value.hint == "did you mean 'tail'?"


def test_a_gate_per_segment_needs_a_topic_file_with_segments(tmp_path: Path) -> None:
    path = project(
        tmp_path, [{"statistic": "mean", "min": 0, "per_segment": True}], topic_lines=["q1\tquery one", "q2\tquery two"]
    )
    with pytest.raises(InputError, match="a gate per segment needs segments: a topic file .* with a segment column"):
        load_spec(path)


def test_every_evaluated_topic_needs_a_segment_and_every_segment_an_evaluated_topic(tmp_path: Path) -> None:
    lines = ["topic\tsegment", *(f"{t}\t{s}" for t, s in zip(TOPICS[:-1], SEGMENTS))]
    path = project(tmp_path, [{"statistic": "mean", "min": 0, "per_segment": True}], topic_lines=lines)
    with pytest.raises(InputError, match=r"no segment for 1 evaluated topic\(s\): q8"):
        evaluate_spec(load_spec(path))
    lines = ["topic\tsegment", *(f"{t}\t{s}" for t, s in zip(TOPICS, SEGMENTS)), "q99\tnews"]
    path = project(tmp_path, [{"statistic": "mean", "min": 0, "segment": "news"}], topic_lines=lines)
    with pytest.raises(InputError, match="gate mean\\[news\\]: segment 'news' has no evaluated topic"):
        evaluate_spec(load_spec(path))


def test_topic_weights_come_from_the_topic_file_or_analysis_mve_weights_not_both(tmp_path: Path) -> None:
    (tmp_path / "weights.txt").write_text("".join(f"{t} 1\n" for t in TOPICS))
    path = project(tmp_path, [], analysis={"mve": {"weights": "weights.txt"}})
    with pytest.raises(InputError, match="the topic file .* has a weight column too"):
        load_spec(path)


# --- the gates -------------------------------------------------------------------------------------------------


def test_a_segments_gate_judges_the_segments_topics_and_its_weighted_mean_their_weights(tmp_path: Path) -> None:
    evaluation = evaluate_spec(
        load_spec(
            project(
                tmp_path,
                [
                    {"statistic": "mean", "max_decrease": 0.05, "per_segment": True},
                    {"statistic": "weighted_mean", "max_decrease": 0.05, "per_segment": True},
                    {"statistic": "weighted_mean", "max_decrease": 0.05},
                ],
            )
        )
    )
    gates = {gate.gate.name: gate for gate in evaluation.gates}
    new, production = np.array(SCORES["new"]), np.array(SCORES["production"])
    weights = np.array(WEIGHTS, dtype=float)
    assert gates["mean[head]"].value == pytest.approx(new[:4].mean())
    assert gates["mean[tail]"].reference_value == pytest.approx(production[4:].mean())
    assert gates["weighted_mean[head]"].value == pytest.approx(new[:4] @ weights[:4] / weights[:4].sum())
    assert gates["weighted_mean[tail]"].value == pytest.approx(new[4:].mean())  # equal weights in the tail
    assert gates["weighted_mean"].value == pytest.approx(new @ weights / weights.sum())
    # head: 0.7533 vs 0.7000 passes; tail: 0.275 vs 0.4125 fails; traffic-weighted on all topics 0.7 vs 0.67
    assert {name: gate.outcome for name, gate in gates.items()} == {
        "mean[head]": "OK",
        "mean[tail]": "FAIL",
        "weighted_mean[head]": "OK",
        "weighted_mean[tail]": "FAIL",
        "weighted_mean": "OK",
    }
    tail = gates["mean[tail]"]
    assert tail.inputs.topics == tuple(TOPICS[4:])
    assert [impact.topic for impact in tail.worst_topics] == ["q5", "q7", "q8", "q6"]  # -0.3, -0.1, -0.1, -0.05
    document = words(tail)
    assert document["segment"] == {"name": "tail", "topics": 4}
    assert document["id"] == "bvtest.yaml::P@5::mean[tail]"
    assert document["headline"].startswith("P@5 Mean on segment tail (4 topics) FAILED: candidate 0.275 vs production")
    # the null of a segment's gate: the swaps of all 8 topics, read on its 4
    assert tail.null.topics == tuple(TOPICS)
    scores = np.array([SCORES["new"], SCORES["production"], SCORES["bm25"]])
    alone = swap_null(scores[:, 4:], "mean", 0, 1, exact_topics=4)
    assert sorted(tail.null.distribution.values[::16]) == pytest.approx(sorted(alone.values))  # 2**4 patterns each x16


def test_the_weighted_mean_without_weights_is_an_error_at_the_gate(tmp_path: Path) -> None:
    lines = ["topic\tsegment", *(f"{t}\t{s}" for t, s in zip(TOPICS, SEGMENTS))]
    path = project(tmp_path, [{"statistic": "weighted_mean", "min": 0}], topic_lines=lines)
    with pytest.raises(InputError, match="gates: weighted_mean needs topic weights, and the spec gives none"):
        load_spec(path)


@pytest.mark.parametrize("gate", [{"per_segment": True}, {"segment": "tail"}])
def test_a_segment_whose_weights_sum_to_0_is_an_error_naming_the_topic_file_and_the_segment(
    tmp_path: Path, gate: dict
) -> None:
    """It was "topic weights sum to 0; at least one must be positive", naming neither the file nor the segment."""
    lines = [
        "topic\tsegment\tweight",
        *(f"{t}\t{s}\t{w if s == 'head' else 0}" for t, s, w in zip(TOPICS, SEGMENTS, WEIGHTS)),
    ]
    path = project(tmp_path, [{"statistic": "weighted_mean", "max_decrease": 0.05, **gate}], topic_lines=lines)
    with pytest.raises(InputError) as error:
        evaluate_spec(load_spec(path))
    assert str(error.value) == (
        f"{tmp_path / 'topics.tsv'}: segment 'tail': the weights of its 4 evaluated topics sum to 0, so the gate "
        f"weighted_mean[tail] (bvtest.yaml:{path_lines(path).index('- statistic: weighted_mean') + 1}) has nothing to "
        "weigh; give some of its topics a weight above 0, or name the segments to gate (`segment: NAME`) instead of "
        "`per_segment: true`"
    )
    # the unweighted mean of the same segment does not weigh its topics
    path = project(tmp_path, [{"statistic": "mean", "max_decrease": 0.05, **gate}], topic_lines=lines)
    assert evaluate_spec(load_spec(path)).gates


def brute_force_family(values: np.ndarray, false_alarm: float) -> tuple[int, np.ndarray, float]:
    """Westfall-Young by brute force: the largest per-gate count k <= floor(P N) at which the gates, each limited at
    its null's k-th value from the bad side (lower is bad), fail at most floor(P N) swaps together."""
    swaps = values.shape[1]
    allowed = int(np.floor(false_alarm * swaps + 1e-9))
    ordered = np.sort(values, axis=1)
    for k in range(allowed, -1, -1):
        limits = ordered[:, k]
        failing = (values < limits[:, np.newaxis] - 1e-12).any(axis=0)
        if failing.sum() <= allowed:
            return k, limits, float(failing.mean())
    raise AssertionError("no level")


def test_the_family_spans_the_segments_and_its_joint_rate_is_that_of_the_shared_swaps_by_brute_force(
    tmp_path: Path,
) -> None:
    """8 topics: every one of the 256 swaps enumerated. Swap k exchanges new and production on topic j when bit j of
    k is set; the head's gates read bits 0-3 of it, the tail's bits 4-7; the four calibrated gates are one family."""
    gates = [
        {"statistic": "mean", "false_alarm": 0.25, "per_segment": True},
        {"statistic": "var", "false_alarm": 0.25, "per_segment": True},
    ]
    evaluation = evaluate_spec(load_spec(project(tmp_path, gates)))
    verdicts = {gate.gate.name: gate for gate in evaluation.gates}
    new, production = np.array(SCORES["new"]), np.array(SCORES["production"])
    null_values = {name: [] for name in verdicts}
    for k in range(256):
        swapped = np.array([(k >> j) & 1 for j in range(8)], dtype=bool)
        candidate, reference = np.where(swapped, production, new), np.where(swapped, new, production)
        for name in verdicts:
            topics = slice(0, 4) if name.endswith("[head]") else slice(4, 8)
            if name.startswith("mean"):
                null_values[name].append(candidate[topics].mean() - reference[topics].mean())
            else:  # lower Var is better: negated, so that low values are bad for every row
                null_values[name].append(-(np.var(candidate[topics]) - np.var(reference[topics])))
    names = list(verdicts)
    values = np.array([null_values[name] for name in names])
    count, limits, rate = brute_force_family(values, 0.25)
    for name, limit in zip(names, limits):
        verdict = verdicts[name]
        assert verdict.limits.family.count == count and verdict.limits.family.swaps == 256
        assert verdict.limits.null.exact
        expected = limit if name.startswith("mean") else -limit
        assert verdict.limits.calibrated - verdict.null.offset == pytest.approx(expected, abs=1e-12)
        assert verdict.limits.family.rate == pytest.approx(rate)
        assert verdict.together.rate == pytest.approx(rate) and verdict.together.swaps == 256
        assert len(verdict.together.gates) == 4
    # each segment's two gates alone would fail more of the swaps than the family allows
    head_only = brute_force_family(values[[0, 2]], 0.25)
    assert head_only[0] > count


def test_pytest_gives_each_segment_its_own_test_that_k_and_lf_select(pytester: pytest.Pytester) -> None:
    project(
        pytester.path,
        [
            {"statistic": "mean", "max_decrease": 0.05, "per_segment": True},
            {"statistic": "mean", "min": 0},
            {"statistic": "mean", "min": 0.5},  # two gates named mean[min]: the second is mean[min]#2
        ],
    )
    collected = pytester.runpytest("--collect-only", "-q")
    ids = ["bvtest.yaml::P@5::mean[head]", "bvtest.yaml::P@5::mean[tail]", "bvtest.yaml::P@5::mean[min]"]
    collected.stdout.fnmatch_lines([*ids, "bvtest.yaml::P@5::mean[min]#2"])
    tail = pytester.runpytest("-k", "tail")
    tail.assert_outcomes(failed=1, deselected=3)
    tail.stdout.fnmatch_lines(["FAILED bvtest.yaml::P@5::mean[[]tail]*"])
    everything = pytester.runpytest("--bvtest-json", "report.json")
    everything.assert_outcomes(passed=2, failed=2)
    report = json.loads((pytester.path / "report.json").read_text())
    assert [gate["segment"] for gate in report["evaluations"][0]["gates"]] == [
        {"name": "head", "topics": 4},
        {"name": "tail", "topics": 4},
        None,
        None,
    ]
    last_failed = pytester.runpytest("--lf", "-v")
    last_failed.assert_outcomes(failed=2, deselected=2)
    last_failed.stdout.fnmatch_lines(
        ["bvtest.yaml::P@5::mean[[]tail] FAILED*", "bvtest.yaml::P@5::mean[[]min]#2 FAILED*"]
    )


def test_the_segments_of_every_measure_share_the_swaps_of_all_topics() -> None:
    """The nulls of disjoint segments, read on one draw of every topic, are the segments' own nulls (the swaps
    restricted to their topics) and swap b of each is the same draw: their joint rate is over those draws."""
    rng = np.random.default_rng(3)
    scores = rng.uniform(0, 1, (3, 40))
    head, tail = np.arange(0, 15), np.arange(15, 40)
    first = swap_null(scores, "mean", 0, 1, swaps=2000, seed=5, columns=head)
    second = swap_null(scores, "mean", 0, 1, swaps=2000, seed=5, columns=tail)
    draws = np.random.default_rng(5).random((2000, 40)) < 0.5
    differences = scores[0] - scores[1]
    for columns, null in ((head, first), (tail, second)):
        expected = (np.where(draws[:, columns], -differences[columns], differences[columns])).mean(axis=1)
        np.testing.assert_allclose(null.by_swap, expected, atol=1e-12)
    # independent segments: the share of draws past both 5% limits is near 5% x 5%
    both = (first.by_swap < first.limit(0.05)) & (second.by_swap < second.limit(0.05))
    assert both.mean() == pytest.approx(0.05 * 0.05, abs=0.003)
    assert list(itertools.islice(first.by_swap, 3)) != list(itertools.islice(second.by_swap, 3))


def test_the_recipes_dl_hard_example(tmp_path: Path) -> None:
    """docs/recipes/segments.md and docs/mathematics.md §7: BM25+RM3 against BM25 on DL-HARD, queries of at most
    four words "short" (13), the others "long" (37)."""
    data = shared_path("dl_hard", "dataset")
    dl_hard_segments(data, tmp_path / "topics.tsv")
    runs = data / "baselines" / "doc"
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "qrels": str(data / "dl_hard-doc.qrels"),
                "topics": "topics.tsv",
                "measures": ["nDCG@10"],
                "baselines": {"bm25": str(runs / "bm25.run.gz"), "bm25+bert-mp": str(runs / "bm25+bert-mp.run.gz")},
                "candidate": {"run": str(runs / "bm25+rm3.run.gz"), "name": "bm25+rm3"},
                "reference": "bm25",
                "analysis": {"risk_alpha": 1},
                "cache": False,
                "gates": [
                    {"statistic": "mean", "false_alarm": 0.05},
                    {"statistic": "mean", "false_alarm": 0.05, "per_segment": True},
                    {"statistic": "trisk", "false_alarm": 0.05, "per_segment": True},
                    {"statistic": "mean", "max_decrease": 0.01, "per_segment": True, "name": "tolerance"},
                ],
            },
            sort_keys=False,
        )
    )
    gates = {gate.gate.name: gate for gate in evaluate_spec(load_spec(spec)).gates}
    assert list(gates) == [
        "mean",
        "mean[long]",
        "mean[short]",
        "trisk[long]",
        "trisk[short]",
        "tolerance[long]",
        "tolerance[short]",
    ]
    assert len(gates["mean[short]"].inputs.topics) == 13 and len(gates["mean[long]"].inputs.topics) == 37
    # DL-HARD judges about half of each top 10 (docs/judgments.md): on the whole set and the long queries the gates
    # pass as judged and fail if BM25's unjudged documents are relevant (but for those RM3 ranks higher), and pass in
    # every plausible grading of them; on the 13 short queries the calibrated gates hold at both corners; the
    # tolerances, whose limits sit close, pass in 90% (long) and 57% (short) of the gradings: undecided
    outcomes = [gate.outcome for gate in gates.values()]
    assert outcomes == ["OK", "OK", "OK", "OK", "OK", "UNDECIDED", "UNDECIDED"]
    weighed = [None if gate.plausible is None else gate.plausible.passing for gate in gates.values()]
    assert weighed == [300, 300, None, 300, None, 270, 171]
    assert [gate.passed_as_judged for gate in gates.values()] == [True] * 6 + [False]
    short = gates["tolerance[short]"]
    assert short.corners.unjudged == 47 and (short.corners.optimistic.graded, short.corners.pessimistic.graded) == (
        24,
        19,
    )
    assert short.corners.optimistic.passed and not short.corners.pessimistic.passed
    assert (short.value, short.reference_value) == (pytest.approx(0.274318, abs=5e-7), pytest.approx(0.29426, abs=5e-6))
    assert short.false_alarm_rate == pytest.approx(0.432)
    calibrated = [gate for name, gate in gates.items() if not name.startswith("tolerance")]
    family = calibrated[0].limits.family
    assert all(gate.limits.family == family for gate in calibrated) and len(family.limits) == 5
    assert family.level == pytest.approx(0.0204) and family.rate == pytest.approx(0.0499)
    assert gates["mean[short]"].limit == pytest.approx(0.221837, abs=5e-7)
    assert gates["mean[short]"].together.rate == pytest.approx(0.59) and len(gates["mean"].together.gates) == 7
