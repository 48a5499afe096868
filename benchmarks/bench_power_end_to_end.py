"""Is a gate's stated MDE caught by the check a team runs? Harmed candidates through ``bvtest check``'s own path.

docs/mathematics.md §9. For each gate of a spec with a finite minimum detectable effect (MDE) under a model, draw
harmed candidates as §9 defines them, independently of the draws that measured the MDE (another seed): the
candidate's and the reference's per-topic scores swapped on each topic with probability 1/2 (on every measure at
once: a topic's ranking belongs to one system), then the swapped candidate's score on the gate's measure lowered by
the MDE, clipped at 0, on every topic (``uniform``) or on a random 10% of them, at least one (``few``). Each harmed
candidate is written as a per-topic table with every other system of the evaluation and judged by
:func:`pytest_bvtest.judging.pipeline.evaluate_spec`, the function ``bvtest check`` runs, with the spec's own gates
and settings (``power: false``: the verdict does not read it). The share of harmed candidates the gate FAILs is the
power a team gets at the stated MDE; the aim is 0.8.

From the repository root (needs ``../shared/data`` for DL-HARD, or ``BVTEST_SHARED_DATA``)::

    python -m benchmarks.bench_power_end_to_end                  # the example project and DL-HARD, 200 draws
    python -m benchmarks.bench_power_end_to_end --draws 400 --held

``--held`` also prints the power at the stated MDE with the observed pair's limit held (the product's own draws),
the definition issue 29 replaced; ``held*`` is the share of the harmed candidates past the observed pair's limits.
``--never`` judges the gates that catch no drop 80% of the time at the largest drop (the one that takes every
harmed score to 0), whose reported power is then the most they catch.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from pytest_bvtest.judging.evaluation import Evaluation
from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
from pytest_bvtest.judging.power import crossings
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.power import failed as power_failed
from pytest_bvtest.stats.power import harmed_topics

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", REPOSITORY_ROOT.parent / "shared" / "data"))
#: The two specs of the issue: the example project's with the README's candidate, and DL-HARD's.
EXAMPLE = (
    REPOSITORY_ROOT / "example_project" / "bvtest.yaml",
    REPOSITORY_ROOT / "example_project" / "runs" / "candidate-risky.run",
)
DL_HARD = (REPOSITORY_ROOT / "example_project" / "trec" / "bvtest-dl-hard.yaml", None)
#: The harmed candidates' stream: apart from every stream the product draws (its power's are ``[seed, 20..22]``).
SEED = 20261129


@dataclass(frozen=True)
class StatedDrop:
    """A gate's stated MDE under one model, and the power its report gives for it."""

    gate: str
    measure: str
    model: str
    drop: float
    power: float


def stated_drops(evaluation: Evaluation, never: bool = False) -> list[StatedDrop]:
    """Every finite MDE the evaluation states, gate by gate and model by model; with ``never``, the gates that catch
    no drop 80% of the time instead, at the largest drop (their reported power is the most they catch)."""
    found = []
    for verdict in evaluation.gates:
        facts = verdict.power
        if facts is None or facts.result is None:
            continue
        for each in facts.result.detectable:
            drop = (each.largest if each.drop is None and each.moves else None) if never else each.drop
            if drop is not None and drop > 0:
                found.append(StatedDrop(verdict.id, verdict.inputs.measure, each.model, drop, each.power))
    return found


def _table_spec(evaluation: Evaluation, folder: Path) -> dict:
    """The evaluated spec's gates and settings over a per-topic table ``scores.csv`` in ``folder``."""
    spec = evaluation.spec
    document = yaml.safe_load(spec.path.read_text())
    analysis = dict(document.get("analysis") or {})
    analysis["power"] = False
    kept = {key: document[key] for key in ("reference", "table_format") if key in document}
    # `detect` turns a pass into OK* and reads power, which the harmed checks leave out: a FAIL stays a FAIL
    kept["gates"] = [{key: value for key, value in gate.items() if key != "detect"} for gate in document["gates"]]
    return {
        "measures": [measure.matrix.measure for measure in evaluation.measures],
        "baselines": str(folder / "scores.csv"),
        "table_format": "long",
        "candidate": evaluation.spec.candidate_name,
        **kept,
        "analysis": analysis,
    }


def harmed_candidates(
    evaluation: Evaluation, measure: str, model: str, drop: float, draws: int, seed: int = SEED
) -> Iterator[dict[str, np.ndarray]]:
    """Per draw, every measure's ``(systems, topics)`` scores with the candidate harmed as §9 says (module docstring).

    Draw ``b`` swaps topic ``j`` when ``keys[b, 0, j] < 0.5`` and harms the ``k`` topics with the smallest
    ``keys[b, 1]``, ``keys = default_rng(seed).random((draws, 2, n))``.
    """
    matrices = {each.matrix.measure: each.matrix for each in evaluation.measures}
    first = next(iter(matrices.values()))
    candidate, reference = first.index(evaluation.spec.candidate_name), first.index(evaluation.spec.reference)
    topics = len(first.topics)
    harmed = harmed_topics(topics, model)
    keys = np.random.default_rng(seed).random((draws, 2, topics))
    for b in range(draws):
        swapped = keys[b, 0] < 0.5
        hurt = np.zeros(topics, dtype=bool)
        hurt[np.argsort(keys[b, 1], kind="stable")[:harmed]] = True
        drawn = {}
        for name, matrix in matrices.items():
            scores = matrix.scores.copy()
            scores[candidate] = np.where(swapped, matrix.scores[reference], matrix.scores[candidate])
            scores[reference] = np.where(swapped, matrix.scores[candidate], matrix.scores[reference])
            if name == measure:
                row = scores[candidate]
                scores[candidate] = np.where(hurt & (row > 0), np.maximum(row - drop, 0.0), row)
            drawn[name] = scores
        yield drawn


def caught_share(evaluation: Evaluation, stated: StatedDrop, draws: int, seed: int = SEED) -> tuple[float, float]:
    """The share of harmed candidates at ``stated.drop`` that :func:`evaluate_spec` fails on ``stated.gate``, and the
    share that are past the observed pair's limits (the limit held, as the MDE was defined before issue 29)."""
    first = evaluation.measures[0].matrix
    observed = next(each for each in evaluation.gates if each.id == stated.gate)
    held_limits = crossings(observed.inputs, observed.limits)
    failed = past_held = 0
    with tempfile.TemporaryDirectory(prefix="bvtest-power-") as scratch:
        folder = Path(scratch)
        spec_path = folder / "bvtest.yaml"
        spec_path.write_text(yaml.safe_dump(_table_spec(evaluation, folder), sort_keys=False))
        for drawn in harmed_candidates(evaluation, stated.measure, stated.model, stated.drop, draws, seed):
            lines = ["system,topic,measure,value"]
            for name, scores in drawn.items():
                for i, system in enumerate(first.systems):
                    lines.extend(
                        f"{system},{topic},{name},{float(value)!r}" for topic, value in zip(first.topics, scores[i])
                    )
            (folder / "scores.csv").write_text("\n".join(lines) + "\n")
            judged = evaluate_spec(load_spec(spec_path), use_cache=False)
            verdict = next(each for each in judged.gates if each.id.split("::", 1)[1] == stated.gate.split("::", 1)[1])
            failed += verdict.outcome == "FAIL"
            own = np.array([verdict.value])
            difference = None if verdict.inputs.reference_value is None else own - verdict.inputs.reference_value
            if (
                difference is None
                and verdict.inputs.null is not None
                and not verdict.inputs.null.distribution.own_value
            ):
                difference = own - verdict.inputs.null.offset
            past_held += bool(power_failed(own, difference, held_limits)[0])
    return failed / draws, past_held / draws


def held_power(evaluation: Evaluation, stated: StatedDrop) -> float:
    """The product's power at the stated drop with the observed pair's limit (its own draws), for comparison."""
    verdict = next(each for each in evaluation.gates if each.id == stated.gate)
    problem = verdict.inputs.power
    assert problem is not None
    return problem.power(stated.drop, stated.model, crossings(verdict.inputs, verdict.limits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--held", action="store_true", help="also the power with the observed limit held")
    parser.add_argument("--spec", choices=("example", "dl-hard", "both"), default="both")
    parser.add_argument("--never", action="store_true", help="the gates that catch no drop 80%% of the time, instead")
    arguments = parser.parse_args()
    specs = {"example": [EXAMPLE], "dl-hard": [DL_HARD], "both": [EXAMPLE, DL_HARD]}[arguments.spec]
    print(
        "pytest-bvtest: stated MDE against harmed candidates judged by evaluate_spec "
        f"({arguments.draws} draws, seed {SEED})"
    )
    header = (
        f"{'gate':44} {'model':8} {'stated MDE':>10} {'reported':>8} {'held':>6} {'held*':>6} {'caught':>7} {'s':>6}"
    )
    print(header)
    print("-" * len(header))
    for path, run in specs:
        if not path.exists() or (path == DL_HARD[0] and not SHARED_DATA.exists()):
            continue
        evaluation = evaluate_spec(spec_under_test(path, run), allow_outside=True)
        for stated in stated_drops(evaluation, arguments.never):
            start = time.perf_counter()
            caught, past_held = caught_share(evaluation, stated, arguments.draws)
            held = f"{held_power(evaluation, stated):6.3f}" if arguments.held else "     -"
            elapsed = time.perf_counter() - start
            name = f"{path.stem}::{stated.gate.split('::', 1)[1]}"
            print(
                f"{name:44} {stated.model:8} {stated.drop:10.4g} {stated.power:8.3f} {held} {past_held:6.3f} "
                f"{caught:7.3f} {elapsed:6.1f}"
            )


if __name__ == "__main__":
    main()
