"""What each gate's power costs now that every harmed draw is judged with its own limits (docs/mathematics.md §9).

In process, one BLAS thread (as ``bvtest check`` runs), every run's scores cached: the CPU time of
:func:`pytest_bvtest.judging.pipeline.evaluate_spec` with each spec as it is and with ``analysis: {power: false}``;
the difference is power's cost. Cases:

- ``example``: the example project's five gates (two measures, 56 topics, 4 systems), candidate-risky.run;
- ``dl-hard``: the example's DL-HARD spec (twelve gates on three measures, 50 topics, 6 systems; needs
  ``../shared/data``);
- ``synthetic N``: the README's four gates on nDCG@10 and AP, 11 systems from one per-topic table of seeded
  scores shaped like them, ``N`` topics: 999 is the most topics whose draws are simulated (each draw's null a
  product of its swaps with its topics' changes), 6,980 (MS MARCO dev) draws them from their Gaussian.

From the repository root::

    python -m benchmarks.bench_power_cost              # 3 repeats of every case
    python -m benchmarks.bench_power_cost --repeats 1
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as bvtest check: before numpy loads

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test  # noqa: E402
from pytest_bvtest.spec.model import PowerSpec, Spec  # noqa: E402

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", REPOSITORY_ROOT.parent / "shared" / "data"))
SEED = 20261129
GATES = [
    {"statistic": "trisk", "false_alarm": 0.05},
    {"statistic": "var", "max_increase": "5%", "false_alarm": 0.05},
    {"statistic": "bias2_plus_var", "max_increase": "5%", "false_alarm": 0.05},
    {"statistic": "mean", "max_decrease": 0.01, "false_alarm": 0.05},
]


def synthetic_spec(folder: Path, topics: int) -> Path:
    """A spec over one per-topic table of 11 systems on ``topics`` topics (nDCG@10- and AP-like scores, seeded)."""
    rng = np.random.default_rng([SEED, topics])
    ease = rng.beta(2, 3, topics)
    lines = ["system,topic,measure,value"]
    for measure, spread in (("nDCG@10", 0.25), ("AP", 0.2)):
        for system in range(11):
            scores = np.clip(ease + rng.normal(0.01 * system, spread, topics), 0, 1)
            lines.extend(f"s{system},{j},{measure},{value:.6f}" for j, value in enumerate(scores))
    (folder / "scores.csv").write_text("\n".join(lines) + "\n")
    spec = {
        "measures": ["nDCG@10", "AP"],
        "table_format": "long",
        "baselines": "scores.csv",
        "candidate": "s10",
        "reference": "s9",
        "gates": GATES,
    }
    path = folder / f"bvtest-{topics}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def cpu_seconds(spec: Spec, repeats: int) -> float:
    """The median CPU time of evaluating ``spec`` (after a warm-up that fills the caches)."""
    evaluate_spec(spec, allow_outside=True)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        evaluate_spec(spec, allow_outside=True)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bvtest-power-cost-") as scratch:
        folder = Path(scratch)
        cases = [("example, 5 gates, 56 topics", REPOSITORY_ROOT / "example_project" / "bvtest.yaml", "risky")]
        if (SHARED_DATA / "dl_hard").is_dir():
            dl_hard = REPOSITORY_ROOT / "example_project" / "trec" / "bvtest-dl-hard.yaml"
            cases.append(("DL-HARD, 12 gates, 50 topics", dl_hard, None))
        for topics in (999, 6980):
            cases.append((f"synthetic, 8 gates, {topics:,} topics", synthetic_spec(folder, topics), None))
        print(f"pytest-bvtest: what power costs, CPU seconds of evaluate_spec, cached, median of {arguments.repeats}")
        header = f"{'case':32} {'with power':>10} {'no power':>9} {'power':>7}"
        print(header)
        print("-" * len(header))
        for name, path, run in cases:
            candidate = REPOSITORY_ROOT / "example_project" / "runs" / "candidate-risky.run" if run else None
            spec = spec_under_test(path, candidate)
            without = replace(spec, analysis=replace(spec.analysis, power=PowerSpec(enabled=False)))
            with_power, no_power = cpu_seconds(spec, arguments.repeats), cpu_seconds(without, arguments.repeats)
            print(f"{name:32} {with_power:10.2f} {no_power:9.2f} {with_power - no_power:7.2f}")


if __name__ == "__main__":
    main()
