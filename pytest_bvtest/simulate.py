"""The per-topic simulation of a spec's runs (MATH.md section 3e): reads the runs, simulates, reports."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.matrix import ScoreTableFile, retrieved_lists
from pytest_bvtest.spec import Spec
from pytest_bvtest.stats.simulation import SimulationResult, simulate_topic_bias_variance


def simulate_spec(spec: Spec, qrels: Qrels, topics: Sequence[str], systems: Sequence[str]) -> SimulationResult:
    """Per-topic bias-variance over simulated collections (MATH.md section 3e) for every system."""
    settings = spec.analysis.simulation
    assert settings is not None
    runs = []
    for source in spec.sources():
        if isinstance(source, ScoreTableFile):
            raise InputError("the per-topic simulation needs run files: per-topic tables have no rankings",
                             path=spec.path, line=spec.line_of("analysis", "simulation"))
        runs.append(source if isinstance(source, Run) else read_run(source.path, tag=source.tag))
    lists = [retrieved_lists(run, qrels, topics) for run in runs]
    return simulate_topic_bias_variance(lists, systems, topics, samples=settings.samples, seed=settings.seed)
