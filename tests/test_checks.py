"""The argument checks the statistics share (pytest_bvtest.checks): what passes, and the message
of what does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_bvtest.checks import checked_seed, finite_number, open_interval, positive_number, whole_number
from pytest_bvtest.errors import StatisticError


def test_accepted_values_come_back_in_the_type_the_statistics_compute_with() -> None:
    assert whole_number(np.int64(3), "size") == 3 and type(whole_number(np.int64(3), "size")) is int
    assert checked_seed(0) == 0
    assert finite_number(np.float32(0.5), "alpha", minimum=0) == 0.5
    assert positive_number(1e-12, "tolerance") == 1e-12
    assert open_interval(0.95, "confidence", 0, 1) == 0.95


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: whole_number(0, "swaps"), "swaps must be a positive whole number, got 0"),
        (lambda: whole_number(2.0, "swaps"), "swaps must be a positive whole number, got 2.0"),
        (lambda: whole_number(True, "swaps"), "swaps must be a positive whole number, got True"),
        (lambda: checked_seed(-1), "seed must be a whole number >= 0, got -1"),
        (
            lambda: finite_number(-0.5, "risk weight alpha", minimum=0),
            "risk weight alpha must be a finite number >= 0, got -0.5",
        ),
        (lambda: finite_number(math.nan, "alpha"), "alpha must be a finite number, got nan"),
        (lambda: finite_number(True, "alpha"), "alpha must be a finite number, got True"),
        (lambda: finite_number("1", "alpha"), "alpha must be a finite number, got '1'"),
        (lambda: positive_number(0.0, "GAWM tolerance"), "GAWM tolerance must be a positive number, got 0.0"),
        (lambda: positive_number(math.inf, "GAWM tolerance"), "GAWM tolerance must be a positive number, got inf"),
        (lambda: open_interval(1, "confidence", 0, 1), "confidence must lie strictly between 0 and 1, got 1"),
        (
            lambda: open_interval(math.nan, "a false-alarm rate", 0, 0.5),
            "a false-alarm rate must lie strictly between 0 and 0.5, got nan",
        ),
    ],
)
def test_rejected_values_raise_one_message_naming_the_argument_and_the_value(check, message: str) -> None:
    with pytest.raises(StatisticError) as raised:
        check()
    assert str(raised.value) == message
