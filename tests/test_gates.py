"""Gate verdicts (MATH.md section 7): limits, directions, relative bounds and noise-awareness."""

from __future__ import annotations

import pytest

from pytest_bvtest.gates import TopicImpact, judge, limit_and_excess
from pytest_bvtest.spec import Bound


def verdict(bound: Bound, value: float, reference_value: float | None = None, interval=None):
    return judge(
        gate_id="bvtest.yaml::AP::g", statistic="var", label="Var", measure="AP", system="candidate",
        reference="production" if reference_value is not None else None, value=value,
        reference_value=reference_value, bound=bound, interval=interval,
        confidence=0.95 if interval else None, seed=0 if interval else None,
        worst_topics=[TopicImpact("401", 0.1, 0.6), TopicImpact("402", 0.2, 0.3)], worst_against="production",
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
