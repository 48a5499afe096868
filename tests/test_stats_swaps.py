"""The shared swaps (docs/mathematics.md §7): drawn once per evaluation, read by every gate's null and the
comparisons' randomization tests, each getting what it would get drawing them alone."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml
from test_stats_registry import web14

from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats import swaps
from pytest_bvtest.stats.calibration import pending_null, swap_null
from pytest_bvtest.stats.inference import RandomizationTests, randomization_tests
from pytest_bvtest.stats.swaps import Draws, read_swaps, topic_assignments


def test_signs_from_raw_draws_equal_uniform_draws_below_one_half() -> None:
    raw = swaps._negated_topics(np.random.default_rng(5), (300, 77))
    uniform = (np.random.default_rng(5).random((300, 77)) < 0.5).astype(np.float64)
    assert np.array_equal(raw, uniform) and 0.45 < raw.mean() < 0.55


class Recorder:
    """A reader that keeps every block it reads and its products."""

    def __init__(self, draws: Draws, columns: np.ndarray | None) -> None:
        self.draws, self.columns = draws, columns
        self.swapped: list[np.ndarray] = []
        self.products: list[np.ndarray] = []

    def read(self, first: int, swapped: np.ndarray, products: np.ndarray | None) -> None:
        assert first == sum(len(block) for block in self.swapped)
        self.swapped.append(swapped.copy())
        if products is not None:
            self.products.append(products.copy())


def test_readers_of_one_stream_read_the_same_swaps_and_their_own_products(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swaps, "_BLOCK_CELLS", 37 * 50)  # several blocks, the last one short
    rng = np.random.default_rng(1)
    long, short = Draws(50, 300, 4, False), Draws(50, 120, 4, False)
    readers = [
        Recorder(long, rng.random((50, 3))),
        Recorder(short, rng.random((50, 1))),
        Recorder(long, None),
        Recorder(Draws(50, 200, 5, False), rng.random((50, 2))),  # another seed: another stream
        Recorder(Draws(6, 64, 4, True), rng.random((6, 2))),  # every assignment of 6 topics
    ]
    read_swaps(readers)
    for reader in readers:
        drawn = np.vstack(
            list(
                topic_assignments(
                    50 if not reader.draws.exact else 6,
                    reader.draws.count,
                    reader.draws.seed,
                    exact=reader.draws.exact,
                    block=1000,
                )
            )
        )
        expected = (np.random.default_rng(reader.draws.seed).random((reader.draws.count, 50)) < 0.5).astype(float)
        read = np.vstack(reader.swapped)
        assert read.shape == (reader.draws.count, reader.draws.topics)
        np.testing.assert_array_equal(read, drawn)
        if not reader.draws.exact:
            np.testing.assert_array_equal(read, expected)  # row b of default_rng(seed).random((count, n)) < 0.5
        if reader.columns is not None:  # the block times its own columns, side by side with the others'
            np.testing.assert_allclose(np.vstack(reader.products), read @ reader.columns, rtol=1e-14, atol=1e-14)
    # the shorter reader read the first rows of the longer one's stream
    np.testing.assert_array_equal(np.vstack(readers[1].swapped), np.vstack(readers[0].swapped)[:120])


def test_a_mean_null_and_a_randomization_test_read_the_same_swaps() -> None:
    # the mean's null value of swap b is the mean difference with the swapped topics negated: the randomization
    # test's flipped sum over n; with the same seed its p-value can be counted from the null alone
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("CiirAll1")
    null = pending_null(scores, "mean", candidate, reference, swaps=2000, seed=3)
    tests = RandomizationTests(scores[candidate], scores[reference][np.newaxis], 2000, 3)
    read_swaps([null, tests])
    (test,) = tests.results()
    difference = scores[candidate] - scores[reference]
    flipped = null.null().by_swap * len(difference)
    threshold = abs(difference.sum()) - 1e-12 * np.abs(difference).sum()
    assert test.p_value == (1 + np.count_nonzero(np.abs(flipped) >= threshold)) / 2001
    assert test == randomization_tests(scores[candidate], scores[reference][np.newaxis], 2000, 3)[0]


GATES = [
    ("mean", {}),
    ("var", {}),
    ("bias2_plus_var", {}),
    ("trisk", {"risk_alpha": 5}),
    ("georisk", {}),  # reads the swaps themselves (groups by its own total)
    ("gawm", {}),  # stacks of swapped matrices
    ("var", {"normalize": "max-min"}),
]


def test_nulls_read_together_with_comparisons_equal_each_drawn_alone() -> None:
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("CiirAll1")
    pending = []
    for statistic, setting in GATES:
        settings = AnalysisSettings(**setting)
        count = 300 if statistic == "gawm" else 2000
        pending.append(
            (statistic, settings, count, pending_null(scores, statistic, candidate, reference, settings, swaps=count))
        )
    segment = np.arange(0, scores.shape[1], 3)
    in_segment = pending_null(scores, "trisk", candidate, reference, swaps=2000, columns=segment)
    others = np.delete(scores, candidate, axis=0)
    tests = RandomizationTests(scores[candidate], others, 2000, 0)
    read_swaps([tests, *(null for *_, null in pending), in_segment])
    for statistic, settings, count, null in pending:
        alone = swap_null(scores, statistic, candidate, reference, settings, swaps=count)
        np.testing.assert_allclose(null.null().by_swap, alone.by_swap, rtol=1e-12, atol=1e-12)
        assert null.null().limit(0.05) == pytest.approx(alone.limit(0.05), rel=1e-12, abs=1e-12)
    alone = swap_null(scores, "trisk", candidate, reference, swaps=2000, columns=segment)
    np.testing.assert_allclose(in_segment.null().by_swap, alone.by_swap, rtol=1e-12, atol=1e-12)
    assert tests.results() == randomization_tests(scores[candidate], others, 2000, 0)


def test_an_evaluation_draws_its_swaps_once_and_gives_what_each_call_alone_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a spec's gates (calibrated, plain bounds with their reported rate, another reference, a measure each) and
    # its comparisons: every null and p-value equal to the ones swap_null and randomization_tests give alone
    names, scores = web14()
    systems = ["uogTrDwl", "CiirAll1", "udel_itu", "Terran"]
    rows = [names.index(name) for name in systems]
    lines = ["system,topic,measure,value"]
    for measure, shift in (("nDCG@20", 0.0), ("P@10", 0.05)):
        for name, row in zip(systems, rows):
            lines += [f"{name},{j + 1},{measure},{min(1.0, v + shift)}" for j, v in enumerate(scores[row])]
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n")
    spec = {
        "measures": ["nDCG@20", "P@10"],
        "baselines": {name: {"scores": "scores.csv", "system": name} for name in systems[1:]},
        "candidate": {"scores": "scores.csv", "system": systems[0]},
        "reference": systems[1],
        "cache": False,
        "gates": [
            {"statistic": "trisk", "measure": "nDCG@20", "false_alarm": 0.05},
            {"statistic": "var", "measure": "nDCG@20", "max_increase": "5%", "false_alarm": 0.05},
            {"statistic": "mean", "max_decrease": 0.01, "false_alarm": 0.05},
            {"statistic": "mean", "measure": "P@10", "max_decrease": 0.02, "name": "plain"},
            {"statistic": "georisk", "measure": "P@10", "false_alarm": 0.1, "reference": systems[2]},
        ],
    }
    (tmp_path / "bvtest.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    passes = []
    drawing = swaps.topic_assignments
    monkeypatch.setattr(
        swaps, "topic_assignments", lambda *args, **kwargs: passes.append(args) or drawing(*args, **kwargs)
    )
    evaluation = evaluate_spec(load_spec(tmp_path / "bvtest.yaml"))
    monkeypatch.undo()
    assert passes == [(50, 10_000, 0)]  # one pass over the swaps: seed 0, as many as the longest reader reads
    calibration = load_spec(tmp_path / "bvtest.yaml").analysis.calibration
    assert len(evaluation.gates) == 6
    for verdict in evaluation.gates:
        measure = next(each for each in evaluation.measures if each.measure == verdict.inputs.measure)
        matrix = measure.matrix
        swaps_asked = None if verdict.gate.false_alarm is not None else calibration.plain_bound_swaps
        alone = swap_null(
            matrix.scores,
            verdict.statistic,
            matrix.index(evaluation.spec.candidate_name),
            matrix.index(verdict.inputs.null.partner),
            measure.settings,
            swaps=swaps_asked,
        )
        drawn = verdict.inputs.null.distribution
        assert drawn.swaps == alone.swaps
        np.testing.assert_allclose(drawn.by_swap, alone.by_swap, rtol=1e-12, atol=1e-12)
    for measure in evaluation.measures:
        matrix = measure.matrix
        candidate = matrix.index(evaluation.spec.candidate_name)
        others = [i for i in range(len(matrix.systems)) if i != candidate]
        alone = randomization_tests(matrix.scores[candidate], matrix.scores[others], 10_000, 0)
        assert [c.p_randomization for c in measure.comparisons] == [test.p_value for test in alone]
        assert [c.baseline for c in measure.comparisons] == [matrix.systems[i] for i in others]


class DictStore:
    """A :class:`~pytest_bvtest.stats.swaps.SwapStore` in memory, counting what is saved."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.saved = 0

    def load_swaps(self, name: str) -> bytes | None:
        return self.data.get(name)

    def save_swaps(self, name: str, data: bytes) -> None:
        self.data[name] = data
        self.saved += 1


def drawn_alone(draws: Draws) -> np.ndarray:
    return np.vstack(list(topic_assignments(draws.topics, draws.count, draws.seed, exact=draws.exact, block=64)))


def test_stored_swaps_are_the_drawn_ones_and_are_read_instead_of_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swaps, "_BLOCK_CELLS", 37 * 50)  # several blocks, the last one short
    draws, columns = Draws(53, 300, 4, False), np.random.default_rng(2).random((53, 3))  # 53: not whole bytes
    store = DictStore()
    first = Recorder(draws, columns)
    read_swaps([first], store)
    assert store.saved == 4 and f"53x300-seed4-numpy{np.__version__}.bits" in store.data  # the swaps, 3 columns'
    drawing = []
    monkeypatch.setattr(swaps, "topic_assignments", lambda *args, **kwargs: drawing.append(args))
    again = Recorder(draws, columns)
    read_swaps([again], store)
    assert drawing == [(53, 300, 4)] and store.saved == 4  # asked for, never iterated: nothing was drawn
    monkeypatch.undo()
    assert np.array_equal(np.vstack(again.swapped), drawn_alone(draws))
    assert np.array_equal(np.vstack(first.swapped), np.vstack(again.swapped))
    assert np.array_equal(np.vstack(first.products), np.vstack(again.products))  # bit for bit


def test_each_columns_products_are_stored_and_read_instead_of_multiplied_while_it_stays_the_same() -> None:
    draws, columns = Draws(30, 200, 5, False), np.random.default_rng(3).random((30, 2))
    store = DictStore()
    first = Recorder(draws, columns)
    read_swaps([first], store)
    named = [name for name in store.data if name.startswith("products-")]
    assert len(named) == 2  # one per column
    products = np.vstack(first.products)
    np.testing.assert_allclose(products, drawn_alone(draws) @ columns, rtol=1e-12)

    def plant(name: str, values: np.ndarray, cut: int = 0) -> None:
        data = values.tobytes()
        store.data[name] = data[: len(data) - cut] + hashlib.blake2b(data, digest_size=32).digest()

    # what the store holds is what a reader of the same draws and column reads: here, planted products
    for name, column in zip(named, products.T):
        plant(name, column + 1.0)
    again = Recorder(draws, columns.copy())
    read_swaps([again], store)
    assert np.array_equal(np.vstack(again.products), products + 1.0)
    # a reader whose second column changed: its first column read, its second multiplied (and so for a new
    # candidate's comparisons beside two baselines' unchanged one)
    changed = columns.copy()
    changed[4, 1] += 1e-9
    other = Recorder(draws, changed)
    read_swaps([other], store)
    assert np.array_equal(np.vstack(other.products)[:, 0], products[:, 0] + 1.0)
    np.testing.assert_allclose(np.vstack(other.products)[:, 1], drawn_alone(draws) @ changed[:, 1], rtol=1e-12)
    # damaged products are multiplied again
    plant(named[0], products[:, 0] + 1.0, cut=8)
    damaged = Recorder(draws, columns)
    read_swaps([damaged], store)
    np.testing.assert_allclose(np.vstack(damaged.products)[:, 0], products[:, 0], rtol=1e-12)
    assert np.array_equal(np.vstack(damaged.products)[:, 1], products[:, 1] + 1.0)


def test_a_plausible_verdicts_columns_are_not_stored() -> None:
    store = DictStore()
    read_swaps([Recorder(Draws(30, 200, 5, False), np.ones((30, 2)))], store, keep_products=False)
    assert [name for name in store.data if name.startswith("products-")] == []


@pytest.mark.parametrize("damage", ["a flipped bit", "truncated", "empty"])
def test_stored_swaps_that_do_not_match_their_digest_are_drawn_again(damage: str) -> None:
    draws = Draws(40, 100, 7, False)
    store = DictStore()
    read_swaps([Recorder(draws, None)], store)
    (name,) = store.data
    data = bytearray(store.data[name])
    if damage == "a flipped bit":
        data[17] ^= 0b100
    store.data[name] = bytes(data[: len(data) // 2] if damage == "truncated" else b"" if damage == "empty" else data)
    redrawn = Recorder(draws, None)
    read_swaps([redrawn], store)
    assert np.array_equal(np.vstack(redrawn.swapped), drawn_alone(draws)) and store.saved == 2


def test_enumerated_and_very_large_draws_are_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swaps, "_MOST_STORED_BYTES", 100 * 5 - 1)  # 100 swaps of 40 topics: 500 bytes
    store = DictStore()
    read_swaps([Recorder(Draws(6, 64, 0, True), None), Recorder(Draws(40, 100, 0, False), None)], store)
    assert store.saved == 0


def test_an_evaluation_with_a_cache_stores_its_swaps_and_gives_the_same_verdicts(tmp_path: Path) -> None:
    names, scores = web14()
    lines = ["system,topic,measure,value"]
    for name in ("uogTrDwl", "CiirAll1", "udel_itu"):
        lines += [f"{name},{j + 1},nDCG@20,{v}" for j, v in enumerate(scores[names.index(name)])]
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n")
    spec = {
        "measures": ["nDCG@20"],
        "baselines": {name: {"scores": "scores.csv", "system": name} for name in ("CiirAll1", "udel_itu")},
        "candidate": {"scores": "scores.csv", "system": "uogTrDwl"},
        "reference": "CiirAll1",
        "gates": [{"statistic": "trisk", "false_alarm": 0.05}, {"statistic": "mean", "max_decrease": 0.01}],
    }
    (tmp_path / "bvtest.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (tmp_path / "uncached.yaml").write_text(yaml.safe_dump({**spec, "cache": False}, sort_keys=False))
    uncached = evaluate_spec(load_spec(tmp_path / "uncached.yaml"))
    for _ in range(2):  # drawn and stored, then read
        cached = evaluate_spec(load_spec(tmp_path / "bvtest.yaml"))
        (stored,) = (tmp_path / ".bvtest_cache").rglob("*.bits")
        assert stored.stat().st_size == 10_000 * 7 + 32  # 50 topics in 7 bytes per swap, and the digest
        for ours, theirs in zip(cached.gates, uncached.gates):
            assert np.array_equal(ours.inputs.null.distribution.by_swap, theirs.inputs.null.distribution.by_swap)
            assert ours.outcome == theirs.outcome
