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


@pytest.fixture(autouse=True)
def _outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test as on a developer's machine, also when the suite itself runs in CI.

    pytest prints whole failure messages in its short summary when ``CI`` or ``BUILD_NUMBER`` is set,
    and the plugin writes GitHub annotations and step summaries under GitHub Actions; tests that
    pin terminal output or need those variables set them themselves.
    """
    for variable in ("CI", "BUILD_NUMBER", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(variable, raising=False)
