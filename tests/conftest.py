"""Shared test fixtures.

Real data lives in ``../shared/data`` beside the repository; tests that need it use the
``shared_data`` fixture, which skips cleanly when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """Path below ``../shared/data``; skips the calling test when it does not exist."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


@pytest.fixture
def shared_data() -> Path:
    """The ``../shared/data`` folder; the test is skipped when it is absent."""
    return shared_path()
