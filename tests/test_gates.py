"""Gate verdicts (docs/mathematics.md §7): limits, directions, relative bounds and noise-awareness.

Each gate is built from its inputs, its limit is set and it is decided once (:mod:`pytest_bvtest.judging`);
its words come from :mod:`pytest_bvtest.report.wording` through the gate's document.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from pytest_bvtest.judging.decision import Verdict, decide
from pytest_bvtest.judging.gate_inputs import GateInputs, GateNull, TopicImpact
from pytest_bvtest.judging.guards import Guard
from pytest_bvtest.judging.limits import gate_limit, limit_and_excess
from pytest_bvtest.report.jsonreport import gate_document
from pytest_bvtest.spec.model import Bound, GateSpec
from pytest_bvtest.stats.calibration import SwapNull
from pytest_bvtest.stats.inference import BootstrapInterval


@dataclass(frozen=True)
class Judged:
    """A decided gate and its document, read the way the reports read them."""

    verdict: Verdict
    document: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.verdict, name)

    @property
    def message(self) -> str:
        return self.document["message"]

    @property
    def sentence(self) -> str:
        return self.document["sentence"]

    @property
    def warning(self) -> str | None:
        return self.document["warning"]

    @property
    def guards(self) -> tuple[str, ...]:
        return tuple(self.document["guards"])

    @property
    def rule(self) -> str:
        return self.document["rule"]

    @property
    def rate(self) -> float | None:
        return self.verdict.limits.rate


def judged(
    statistic: str,
    value: float,
    *,
    bound: Bound | None = None,
    false_alarm: float | None = None,
    reference: str | None = None,
    reference_value: float | None = None,
    interval: tuple[float, float] | None = None,
    null: SwapNull | None = None,
    null_offset: float = 0.0,
    guards: tuple[Guard, ...] = (),
    worst_topics: tuple[TopicImpact, ...] = (),
) -> Judged:
    """One gate judged the way the pipeline judges it: inputs, limit, one decision, its document."""
    gate = GateSpec(statistic, bound, statistic, 1, confidence=0.95 if interval else None, false_alarm=false_alarm)
    inputs = GateInputs(
        gate=gate,
        id=f"bvtest.yaml::AP::{statistic}",
        measure="AP",
        system="candidate",
        reference=reference,
        value=value,
        reference_value=reference_value,
        compared_value=None,
        interval=None
        if interval is None
        else BootstrapInterval(statistic, 0.0, interval[0], interval[1], 0.95, 1000, 0, 0.0, 0.0, np.zeros(0)),
        null=None if null is None else GateNull(null, null_offset, "production", ("1",)),
        worst_topics=worst_topics,
        worst_against="production",
    )
    verdict = decide(inputs, gate_limit(inputs), guards)
    return Judged(verdict, gate_document(verdict))


def verdict(bound: Bound, value: float, reference_value: float | None = None, interval=None) -> Judged:
    return judged(
        "var",
        value,
        bound=bound,
        reference="production" if reference_value is not None else None,
        reference_value=reference_value,
        interval=interval,
        worst_topics=(TopicImpact("401", 0.1, 0.6), TopicImpact("402", 0.2, 0.3)),
    )


@pytest.mark.parametrize(
    ("bound", "value", "reference", "limit", "excess"),
    [
        (Bound("max", 0.5, False), 0.6, None, 0.5, 0.1),
        (Bound("min", -0.01, False), 0.0, None, -0.01, -0.01),
        (Bound("max_increase", 0.05, True), 0.0825, 0.08, 0.084, -0.0015),
        (Bound("max_increase", 0.002, False), 0.0825, 0.08, 0.082, 0.0005),
        (Bound("max_decrease", 0.01, True), 0.297, 0.30, 0.297, 0.0),
        (Bound("max_decrease", 0.005, False), 0.29, 0.30, 0.295, 0.005),
        # a relative tolerance scales with the magnitude of a negative reference value too
        (Bound("max_decrease", 0.10, True), -0.22, -0.2, -0.22, 0.0),
    ],
)
def test_limit_and_excess(bound: Bound, value: float, reference: float | None, limit: float, excess: float) -> None:
    got_limit, got_excess = limit_and_excess(bound, value, reference)
    assert got_limit == pytest.approx(limit, abs=1e-12)
    assert got_excess == pytest.approx(excess, abs=1e-12)


def test_failing_gate_message_names_values_bound_margin_and_topics() -> None:
    outcome = verdict(Bound("max_increase", 0.002, False), 0.0825, 0.08)
    assert not outcome.passed and outcome.outcome == "FAIL"
    first_line = outcome.message.splitlines()[0]
    assert "AP Var FAILED: candidate 0.0825 vs production 0.08" in first_line
    assert "bound max_increase 0.002 requires <= 0.082" in first_line
    assert "past the limit by 0.0005" in first_line
    assert "401: 0.1000 vs 0.6000 (-0.5000)" in outcome.message


def test_value_exactly_on_the_limit_passes() -> None:
    assert verdict(Bound("max_decrease", 0.01, True), 0.297, 0.30).passed


def test_noise_aware_gate_fails_only_when_the_whole_interval_is_past_the_bound() -> None:
    bound = Bound("max_increase", 0.002, False)
    # point past the limit, interval of (candidate - reference) straddles the allowed increase
    within_noise = verdict(bound, 0.0825, 0.08, interval=(-0.001, 0.004))
    assert within_noise.passed and within_noise.outcome == "OK*"
    assert "within noise" in within_noise.warning and "[-0.001, 0.004]" in within_noise.message
    # the whole interval past the allowed increase of 0.002
    assert not verdict(bound, 0.0825, 0.08, interval=(0.0021, 0.004)).passed
    # a passing point estimate is never turned into a failure by its interval
    assert verdict(bound, 0.081, 0.08, interval=(0.0, 0.005)).outcome == "OK"


def test_absolute_noise_aware_gate_uses_the_interval_of_the_value() -> None:
    bound = Bound("min", -0.01, False)
    assert verdict(bound, -0.02, interval=(-0.03, 0.0)).outcome == "OK*"
    assert verdict(bound, -0.02, interval=(-0.03, -0.011)).outcome == "FAIL"


# --- calibrated limits and NaN (docs/mathematics.md §7) ---------------------------------------------

import math  # noqa: E402


def null_of(values: list[float], higher_is_better: bool, statistic: str = "var") -> SwapNull:
    """A null of 20 known values (what swap_null returns, without the swaps)."""
    ordered = np.sort(np.array(values, dtype=float))
    return SwapNull(statistic, higher_is_better, False, ordered, exact=False, seed=4, by_swap=ordered)


TWENTY = [i / 1000 for i in range(20)]  # 0.000 ... 0.019: the 5% limit of "lower is better" is the 19th value


def calibrated(
    value: float,
    bound: Bound | None,
    false_alarm: float | None = 0.05,
    reference_value: float = 0.08,
    null: SwapNull | None = None,
) -> Judged:
    return judged(
        "var",
        value,
        bound=bound,
        false_alarm=false_alarm,
        reference="production",
        reference_value=reference_value if bound else None,
        null=null or null_of(TWENTY, False),
        null_offset=reference_value,
    )


def test_false_alarm_alone_takes_the_nulls_quantile_on_the_bad_side_as_its_limit() -> None:
    # 20 values, P = 0.05: k = 1, the limit is the second largest (0.018); one value (0.019) lies past it
    passing, failing = calibrated(0.08 + 0.018, None), calibrated(0.08 + 0.0185, None)
    assert passing.limit == pytest.approx(0.098) and passing.passed and passing.gate.bound is None
    assert not failing.passed and failing.excess == pytest.approx(0.0005)
    assert passing.rate == pytest.approx(0.05) and passing.limits.calibrated == pytest.approx(0.098)
    assert passing.rule == "false_alarm 5%"
    assert (
        "false_alarm 5% requires <= 0.098; headroom 0; false-alarm rate 5% (20 swaps with production, seed 4)"
        in passing.message
    )


def test_a_bound_and_false_alarm_fail_only_when_both_are_crossed() -> None:
    loose_bound = Bound("max_increase", 0.5, True)  # 0.08 * 1.5 = 0.12, looser than the calibrated 0.098
    tight_bound = Bound("max_increase", 0.05, True)  # 0.084, tighter
    assert calibrated(0.11, loose_bound).passed and calibrated(0.11, loose_bound).limit == pytest.approx(0.12)
    assert not calibrated(0.121, loose_bound).passed
    assert calibrated(0.09, tight_bound).passed and calibrated(0.09, tight_bound).limit == pytest.approx(0.098)
    outcome = calibrated(0.099, tight_bound)
    assert not outcome.passed and outcome.rule == "max_increase 5% + false_alarm 5%"
    assert outcome.rate == pytest.approx(0.05)


def test_a_plain_bound_reports_the_false_alarm_rate_of_its_limit() -> None:
    outcome = calibrated(0.09, Bound("max_increase", 0.005, False), false_alarm=None)  # limit 0.085: offset 0.005
    assert outcome.passed is False and outcome.limit == pytest.approx(0.085)
    # null values past 0.005 on the bad side: 0.006 ... 0.019, 14 of 20
    assert outcome.rate == pytest.approx(0.7) and outcome.gate.false_alarm is None
    assert "false-alarm rate 70% (20 swaps with production, seed 4)" in outcome.message


def test_higher_is_better_puts_the_calibrated_limit_below() -> None:
    null = SwapNull("trisk", True, True, np.sort(np.array([-3.0 + i / 10 for i in range(20)])), exact=True, seed=0)
    outcome = judged("trisk", -2.85, reference="production", null=null, false_alarm=0.05)
    assert outcome.limit == pytest.approx(-2.9) and outcome.passed and not outcome.upper
    assert "requires >= -2.9" in outcome.message and "all 20 swaps with production" in outcome.message
    assert not judged("trisk", -2.95, reference="production", null=null, false_alarm=0.05).passed


@pytest.mark.parametrize("bound", [Bound("max", 0.5, False), Bound("min", -1.0, False)])
def test_a_nan_value_never_passes_and_says_which_statistic_is_undefined(bound: Bound) -> None:
    outcome = verdict(bound, float("nan"))
    assert not outcome.passed and outcome.outcome == "FAIL" and math.isnan(outcome.excess)
    assert outcome.message.startswith("AP Var FAILED: undefined: candidate's Var is NaN")
    assert "never passes on NaN" in outcome.message


def test_a_nan_reference_value_or_calibrated_limit_never_passes() -> None:
    relative = verdict(Bound("max_increase", 0.05, True), 0.01, reference_value=float("nan"))
    assert (
        not relative.passed and "production's Var is NaN, so the limit relative to it is undefined" in relative.message
    )
    nan_null = null_of([*TWENTY[:19], float("nan")], False)
    limit_nan = calibrated(0.0, None, null=nan_null)
    assert not limit_nan.passed and "NaN on some swaps of the null" in limit_nan.message


@pytest.mark.parametrize(("value", "passed"), [(float("inf"), True), (float("-inf"), False)])
def test_infinity_compares_as_a_number(value: float, passed: bool) -> None:
    outcome = verdict(Bound("min", -2.0, False), value)
    assert outcome.passed is passed and outcome.excess == (-math.inf if passed else math.inf)
    assert verdict(Bound("min", -math.inf, False), -math.inf).passed  # on the limit, not NaN


# --- a calibrated limit that no swap crosses is no evidence (OK*, never OK) -------------------------

SIXTEEN = [i / 1000 for i in range(16)]  # 4 topics: all 16 swaps, no two alike


def test_a_null_too_coarse_for_its_rate_makes_a_pass_ok_star_and_names_the_smallest_rate_that_works() -> None:
    # 16 swaps at P = 5%: k = floor(0.8) = 0, the limit is the worst swap, which the candidate sits on
    coarse = calibrated(0.08 + 0.015, None, null=null_of(SIXTEEN, False))
    assert coarse.passed and coarse.outcome == "OK*" and coarse.rate == 0.0
    assert coarse.excess == 0.0 and coarse.limit == pytest.approx(0.095)
    assert coarse.guards == (
        "the null of no change is too coarse for false_alarm 5%: its most extreme Var already "
        "holds 6.25% of 16 swaps with production (too few topics, or too few that differ), so the "
        "limit sits on it and this gate cannot fail; add topics, or raise false_alarm to at least "
        "6.25%",
    )
    # the sentence points to the warning instead of repeating it; the warning line follows it in the message
    assert coarse.sentence == (
        "Holds on paper, but do not trust it: a warning says why (Var 0.095, no limit that can fail)."
    )
    assert f"  warning: {coarse.guards[0]}" in coarse.message
    # at the rate it names, the same candidate fails: it is the worst of the 16 equal changes
    assert not calibrated(0.08 + 0.015, None, false_alarm=0.0625, null=null_of(SIXTEEN, False)).passed
    # a null fine enough for its rate keeps a plain OK
    assert calibrated(0.08 + 0.018, None).outcome == "OK"


def test_a_null_of_one_value_is_no_change_and_a_plain_pass() -> None:
    """A candidate identical to the reference: every swap gives the same value, the limit is that value. Nothing
    changed, so there is nothing to fail: a plain OK (right after --bvtest-update every build of main sees this; it
    was OK* with a warning on every gate, issue 21)."""
    same = null_of([0.0] * 20, True, "trisk")
    outcome = judged("trisk", 0.0, reference="production", null=same, false_alarm=0.05)
    assert outcome.passed and outcome.outcome == "OK" and outcome.excess == 0.0
    assert outcome.guards == () and outcome.verdict.cannot_fail is None
    # one swap that differs is a coarse null again: a limit that cannot fail is a reason not to trust the pass
    coarse = judged(
        "trisk", 0.0, reference="production", null=null_of([0.0] * 19 + [-1.0], True, "trisk"), false_alarm=0.01
    )
    assert coarse.outcome == "OK*" and coarse.verdict.cannot_fail is not None


def test_a_coarse_null_joins_the_measures_guards_after_them() -> None:
    coarse = calibrated(0.08 + 0.015, None, null=null_of(SIXTEEN, False))
    guard = Guard("identical", True, {"candidate": "candidate", "measure": "AP", "same": ("production",), "topics": 4})
    guarded = judged(
        "var",
        0.08 + 0.015,
        false_alarm=0.05,
        reference="production",
        null=null_of(SIXTEEN, False),
        null_offset=0.08,
        guards=(guard,),
    )
    said = "identical: candidate's per-topic AP scores are identical to production's on all 4 topics"
    assert guarded.guards[0].startswith(said) and guarded.guards[1:] == coarse.guards and guarded.outcome == "OK*"


def test_a_value_past_its_calibrated_limit_by_rounding_only_passes_with_headroom_0() -> None:
    """DL-HARD's cut run once put its mean 5.55e-17 past a limit that sat on it (a stacked null's rounding); the
    passing gate said "past the limit by 5.55112e-17". Within 1e-12 a value is on its limit."""
    limit = calibrated(0.08 + 0.018, None).limit
    outcome = calibrated(float(np.nextafter(limit, 1.0)), None)
    assert outcome.passed and 0 < outcome.excess <= 1e-12
    assert "headroom 0;" in outcome.message and "past the limit" not in outcome.message


def test_a_gawm_gate_on_a_fixed_point_that_never_converged_fails_as_on_nan(tmp_path) -> None:
    """Four systems on four topics with q = 20: GAWM's iteration stops after 1,000 steps without reaching its fixed
    point, and the gate passed on that value (`GAWM (q = 20, NOT converged after 1000 iterations)` then `[OK]`)."""
    from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
    from pytest_bvtest.stats.gawm import gawm

    rows = [[0.3, 0.4, 0.9, 0.2], [0.6, 0.1, 0.8, 0.8], [0.2, 0.9, 0.1, 0.3], [0.2, 0.5, 0.8, 0.2]]
    assert not gawm(np.array(rows), q=20.0).converged
    names = ("production", "bm25", "steady", "new")
    table = tmp_path / "scores.csv"
    table.write_text(
        "topic,"
        + ",".join(names)
        + "\n"
        + "".join(f"{j + 1}," + ",".join(str(row[j]) for row in rows) + "\n" for j in range(4))
    )
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        "measures: [AP]\nbaselines: scores.csv\ntable_format: wide-topics\ncandidate: new\nreference: production\n"
        "analysis: {gawm: {q: 20}}\ngates:\n  - {statistic: gawm, min: 0}\n"
    )
    evaluation = evaluate_spec(spec_under_test(spec), use_cache=False)
    verdict = evaluation.gate("AP", "gawm")
    document = gate_document(verdict)
    assert verdict.outcome == "FAIL" and verdict.undefined == "unconverged" and verdict.value > 0
    assert document["headline"].startswith("AP GAWM E_s FAILED: undefined: GAWM E_s's fixed point was not reached")
    assert document["headline"].endswith("is not a value to judge; a gate never passes on it")
    # with q = 1 the same scores converge, and the same gate passes
    spec.write_text(spec.read_text().replace("q: 20", "q: 1"))
    assert evaluate_spec(spec_under_test(spec), use_cache=False).gate("AP", "gawm").outcome == "OK"


@pytest.mark.parametrize(
    "values",
    [
        [-1.0, 0.5, 2.0],
        [-1.0, 0.5, 2.0, 7.0],
        [3.0],
        [0.1, 0.2, np.nan],
        [],
        np.random.default_rng(3).normal(size=1001),
    ],
)
def test_what_an_equal_change_typically_gets_is_the_nulls_median(values) -> None:
    # read from the sorted values directly (np.median sorted 10,000 gates' nulls again): numpy's median, NaN with a NaN
    ordered = np.sort(np.asarray(values, dtype=float))
    null = GateNull(SwapNull("trisk", True, False, ordered, exact=False, seed=0), -2.5, "production", ("1",))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # np.median of no values warns
        expected = float(np.median(ordered)) - 2.5
    assert null.typical == pytest.approx(expected, nan_ok=True, abs=0.0, rel=0.0)
