"""The message helpers every module shares (pytest_bvtest.errors)."""

from __future__ import annotations

from pytest_bvtest.errors import LISTED_ITEMS, short_list


def test_short_list_names_the_first_items_and_counts_the_rest() -> None:
    topics = [str(topic) for topic in range(301, 351)]
    assert LISTED_ITEMS == 10
    assert short_list(topics) == "301, 302, 303, 304, 305, 306, 307, 308, 309, 310 and 40 more"
    assert short_list(topics[:10]) == ", ".join(topics[:10])  # all shown: nothing "more"
    assert short_list(topics[:3], limit=2) == "301, 302 and 1 more"
    assert short_list(tuple(topics), 5, rest=", ... (+{} more)") == "301, 302, 303, 304, 305, ... (+45 more)"
    assert short_list([]) == ""
