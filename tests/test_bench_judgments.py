"""benchmarks/bench_judgments.py: a change's truth is settled only when the fuller qrels settle it themselves, and the
table counts false greens both over every change and over the settled ones."""

from __future__ import annotations

from benchmarks.bench_judgments import Change, Outcome, summary_rows


def _outcome(
    ci_passed: bool, truth: dict[str, bool], truth_outcomes: dict[str, str], harm: str | None = None
) -> Outcome:
    return Outcome(
        Change("candidate", "reference", (), harm),
        ci_passed,
        all(truth.values()),
        len(truth),
        0,
        dict.fromkeys(truth, "OK" if ci_passed else "FAIL"),
        truth,
        0.0,
        dict(truth),
        dict.fromkeys(truth),
        truth_outcomes,
        dict.fromkeys(truth),
    )


def test_a_fail_is_settled_only_when_a_failing_gate_fails_on_the_fuller_qrels_whatever_their_holes() -> None:
    assert _outcome(True, {"mean": False, "var": True}, {"mean": "FAIL", "var": "OK"}).truth_settled
    # fails as trec_eval counts the fuller qrels' unjudged documents, but they leave it undecided
    assert not _outcome(True, {"mean": False, "var": True}, {"mean": "UNDECIDED", "var": "OK"}).truth_settled
    # a gate that fails only as judged, decided OK by the fuller qrels' own gradings, settles nothing either
    assert not _outcome(True, {"mean": False}, {"mean": "OK"}).truth_settled


def test_a_pass_is_settled_only_when_no_gate_is_undecided_on_the_fuller_qrels() -> None:
    assert _outcome(True, {"mean": True, "var": True}, {"mean": "OK", "var": "OK*"}).truth_settled
    assert not _outcome(True, {"mean": True, "var": True}, {"mean": "OK", "var": "UNDECIDED"}).truth_settled


def test_the_table_counts_false_greens_over_every_change_and_over_the_settled_ones() -> None:
    outcomes = [
        _outcome(True, {"mean": False}, {"mean": "UNDECIDED"}),  # a false green the fuller qrels cannot settle
        _outcome(True, {"mean": False}, {"mean": "FAIL"}),  # a settled false green
        _outcome(False, {"mean": False}, {"mean": "FAIL"}, harm="shuffle"),
        _outcome(True, {"mean": True}, {"mean": "OK"}),
    ]
    row, every = summary_rows({"hand-made": outcomes})
    headers = ["scenario", "changes", "fuller qrels fail", "false greens", "false reds", "fuller qrels undecided"]
    headers += ["false greens, settled", "false reds, settled", "gates undecided", "clearly worse red"]
    named = dict(zip(headers, row))
    assert named["false greens"] == "2/3 (67%)"
    assert named["fuller qrels undecided"] == 1
    assert named["false greens, settled"] == "1/2 (50%)"
    assert named["false reds, settled"] == "0/1 (0%)"
    assert named["clearly worse red"] == "1/1 (100%)"
    assert every[1:] == row[1:]
