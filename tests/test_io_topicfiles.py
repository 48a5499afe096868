"""Topic weights and query variations files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.topicfiles import Variation, read_topic_texts, read_topic_weights, read_variations


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


# --- topic weights -----------------------------------------------------------------------------


def test_weights_in_file_order_with_header_comments_and_zero_weights(tmp_path):
    path = write(tmp_path / "w.tsv", "topic\tweight\n# tail topics count less\n302\t2\n\n301 0.5\n303\t0\n")
    assert list(read_topic_weights(path).items()) == [("302", 2.0), ("301", 0.5), ("303", 0.0)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("302", "found 1 columns, expected 2"),
        ("302 1 x", "found 3 columns, expected 2"),
        ("302 heavy", "weight 'heavy' is not a number"),
        ("302 nan", "weight 'nan' is not a finite number"),
        ("302 -0.5", "weight '-0.5' is negative"),
        ("301 2", "topic '301' is listed twice (first on line 2)"),
    ],
)
def test_bad_weight_line_is_reported_with_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "w.tsv", f"# weights\n301 1\n{line}\n")
    with pytest.raises(InputError) as error:
        read_topic_weights(path)
    assert f"{path}:3: {message}" in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no topic weights"),
        ("topic weight\n# none\n", "no topic weights"),
        ("1 0\n2 0.0\n", "every topic weight is 0"),
    ],
)
def test_weights_file_without_usable_weights(tmp_path, text, message):
    path = write(tmp_path / "w.tsv", text)
    with pytest.raises(InputError) as error:
        read_topic_weights(path)
    assert str(error.value).startswith(f"{path}: {message}")


# --- query variations --------------------------------------------------------------------------


def test_variations_with_two_three_and_four_columns(tmp_path):
    two = write(tmp_path / "2.tsv", "q1\t301\nq2\t301\n")
    assert read_variations(two) == [Variation("q1", "301"), Variation("q2", "301")]
    three = write(tmp_path / "3.tsv", "query_id topic_id user\n# crowd workers\nq1 301 u7\n\nq2 302 u7\n")
    assert read_variations(three) == [Variation("q1", "301", "u7"), Variation("q2", "302", "u7")]
    four = write(tmp_path / "4.tsv", "q1\t301\tu1\t0.75\nq2\t301\tu2\t2.5e-1\n")
    assert read_variations(four) == [Variation("q1", "301", "u1", 0.75), Variation("q2", "301", "u2", 0.25)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q2 301", "found 2 columns, but line 2 has 3"),
        ("q2 301 u1 0.5", "found 4 columns, but line 2 has 3"),
        ("q1 302 u2", "query 'q1' is listed twice (first on line 2)"),
    ],
)
def test_bad_three_column_variation_line(tmp_path, line, message):
    path = write(tmp_path / "v.tsv", f"# variations\nq1 301 u1\n{line}\n")
    with pytest.raises(InputError) as error:
        read_variations(path)
    assert f"{path}:3: {message}" in str(error.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q2 301 u2 0", "popularity '0' is not positive"),
        ("q2 301 u2 -1", "popularity '-1' is not positive"),
        ("q2 301 u2 often", "popularity 'often' is not a number"),
        ("q2 301 u2 inf", "popularity 'inf' is not a finite number"),
    ],
)
def test_bad_popularity(tmp_path, line, message):
    path = write(tmp_path / "v.tsv", f"query_id topic_id user popularity\nq1 301 u1 0.5\n{line}\n")
    with pytest.raises(InputError) as error:
        read_variations(path)
    assert f"{path}:3: {message}" in str(error.value)


def test_variations_column_count_outside_two_to_four(tmp_path):
    path = write(tmp_path / "v.tsv", "# one column\nq1\n")
    with pytest.raises(InputError) as error:
        read_variations(path)
    assert f"{path}:2: found 1 columns, expected 2 to 4" in str(error.value)
    header_mismatch = write(tmp_path / "h.tsv", "query_id topic_id\nq1 301 u1\n")
    with pytest.raises(InputError, match=r"h.tsv:2: found 3 columns, but line 1 has 2"):
        read_variations(header_mismatch)


@pytest.mark.parametrize("text", ["", "query_id topic_id\n# nothing yet\n"])
def test_variations_file_without_variations(tmp_path, text):
    path = write(tmp_path / "v.tsv", text)
    with pytest.raises(InputError) as error:
        read_variations(path)
    assert str(error.value).startswith(f"{path}: no query variations")


# --- real query variations ---------------------------------------------------------------------


def _variant_ids(path: Path) -> list[str]:
    return [line.split(":", 1)[0] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_uqv100_variations_cover_the_per_variant_scores(tmp_path):
    """UQV100 ids ``topic-k`` as a two-column variations file; the ids are exactly the per-variant AP file's."""
    folder = shared_path("query_variations_uqv_zendel", "ClueWeb12B")
    ids = _variant_ids(folder / "onlyUQVqueries.txt")
    path = write(tmp_path / "uqv100.tsv", "".join(f"{query}\t{query.split('-')[0]}\n" for query in ids))
    variations = read_variations(path)
    assert len(variations) == 4611
    per_topic = Counter(variation.topic_id for variation in variations)
    assert (len(per_topic), min(per_topic.values()), max(per_topic.values())) == (100, 14, 94)
    scored = [
        line.split()[0]
        for line in (folder / "ap_QL_indri" / "raw" / "QLmap1000").read_text().splitlines()
        if line.strip()
    ]
    assert sorted(variation.query_id for variation in variations) == sorted(scored)


def test_robust04_variations_with_users(tmp_path):
    """Robust04 UQV ids ``topic-user-k`` as a three-column file (query, topic, user)."""
    ids = _variant_ids(shared_path("query_variations_uqv_zendel", "ROBUST04", "fullqueriesUQV.txt"))
    rows = "".join(f"{query}\t{query.split('-')[0]}\t{query.split('-')[1]}\n" for query in ids)
    variations = read_variations(write(tmp_path / "robust04.tsv", "query_id\ttopic_id\tuser\n" + rows))
    assert len(variations) == 3171
    assert len({variation.topic_id for variation in variations}) == 249
    assert variations[1] == Variation("301-2-1", "301", "2")


def test_topic_texts_are_read_by_topic(tmp_path):
    path = tmp_path / "topics.tsv"
    path.write_text("# id\tquery\n23\tcache function results\n18\tgenerate secure random token\n")
    assert read_topic_texts(path) == {"23": "cache function results", "18": "generate secure random token"}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1\tparse json\n1\tread json\n", 2, "topic '1' is listed twice (first on line 1)"),
        ("1\tparse json\n2\n", 2, "topic '2' has no query text"),
    ],
    ids=["duplicate", "no-text"],
)
def test_topic_text_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = tmp_path / "topics.tsv"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_topic_texts(path)
    assert str(caught.value).startswith(f"{path}:{line}: {fragment}")


def test_dl_hard_topics_file_has_every_judged_topic():
    texts = read_topic_texts(shared_path("dl_hard", "dataset", "topics.tsv"))
    qrels = read_qrels(shared_path("dl_hard", "dataset", "dl_hard-doc.qrels"))
    assert len(texts) == 50 and set(qrels.evaluated_topics()) <= set(texts)
    assert texts["915593"] == "what types of food can you cook sous vide"
