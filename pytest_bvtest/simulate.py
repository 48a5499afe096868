"""The per-topic simulation of a spec's runs (MATH.md section 3e): reads the runs, simulates, reports."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.matrix import retrieved_lists
from pytest_bvtest.spec import Spec
from pytest_bvtest.stats.simulation import SimulationResult, simulate_topic_bias_variance


def simulate_spec(spec: Spec, qrels: Qrels, topics: Sequence[str], systems: Sequence[str]) -> SimulationResult:
    """Per-topic bias-variance over simulated collections (MATH.md section 3e) for every system."""
    settings = spec.analysis.simulation
    assert settings is not None
    # every source is a run (Spec.check_combinations refuses tables with a simulation)
    runs = [source if isinstance(source, Run) else read_run(source.path, tag=source.tag)  # type: ignore[union-attr]
            for source in spec.sources()]
    lists = [retrieved_lists(run, qrels, topics) for run in runs]
    return simulate_topic_bias_variance(lists, systems, topics, samples=settings.samples, seed=settings.seed)
