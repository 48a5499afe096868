"""The per-topic simulation of a spec's runs (docs/mathematics.md §3e): reads the runs, simulates, reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.scoring.matrix import ScoreMatrix, retrieved_lists
from pytest_bvtest.spec.model import Spec
from pytest_bvtest.spec.reader import simulated_form
from pytest_bvtest.stats.registry import STATISTICS
from pytest_bvtest.stats.simulation import SimulationResult, simulate_topic_bias_variance


def simulate_spec(
    spec: Spec, qrels: Qrels, topics: Sequence[str], systems: Sequence[str]
) -> dict[str, SimulationResult]:
    """Per-topic bias-variance over simulated collections (docs/mathematics.md §3e) for every system, by measure."""
    settings = spec.analysis.simulation
    assert settings is not None
    # every source is a run (reader.check_combinations refuses tables with a simulation)
    runs = [
        source if isinstance(source, Run) else read_run(source.path, tag=source.tag)  # type: ignore[union-attr]
        for source in spec.sources()
    ]
    lists = [retrieved_lists(run, qrels, topics) for run in runs]
    results = {}
    for measure in settings.measures:
        form = simulated_form(measure)
        assert form is not None  # the spec admits simulable measures only
        results[str(measure)] = simulate_topic_bias_variance(
            lists, systems, topics, samples=settings.samples, seed=settings.seed, measure=form[0], cutoff=form[1]
        )
    return results


def simulation_matrix(matrix: ScoreMatrix, simulations: Mapping[str, SimulationResult], statistic: str) -> ScoreMatrix:
    """The matrix a gate on ``statistic`` reads: the scores, or for a simulation statistic each system's
    per-topic term of the measure's simulation (docs/mathematics.md §3e), in the matrix's system and topic order."""
    source = STATISTICS[statistic].from_simulation
    if source is None:
        return matrix
    result = simulations[matrix.measure]  # the spec refuses a simulation gate on a measure not simulated
    rows = [result.system_names.index(name) for name in matrix.systems]
    columns = [result.topic_ids.index(topic) for topic in matrix.topics]
    return replace(matrix, scores=np.asarray(source(result), dtype=float)[np.ix_(rows, columns)], runs={})
