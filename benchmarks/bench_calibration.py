"""Wall time and peak memory of the null of "no change" behind calibrated gates (``swap_null``).

For each gateable statistic, the swaps of a candidate with a reference (MATH.md section 7) on seeded
AP-like matrices (Beta(1.5, 4)): TREC-sized 130 systems x 50 topics, 100 x 2,000 and, unless
``--skip-large``, 1,000 x 10,000. 10,000 swaps (a ``false_alarm`` limit's default) and 1,000 (the
rate a plain bound reports; GAWM's default). Peak memory is what ``tracemalloc`` saw allocated during
the call, the inputs excluded. GAWM has no sufficient matrix and is timed on the smaller matrices only.

From the repository root::

    python -m benchmarks.bench_calibration
    python -m benchmarks.bench_calibration --skip-large
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as np

from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.stats.calibration import swap_null
from pytest_bvtest.stats.registry import STATISTICS

SEED = 20261123
SIZES = ((130, 50), (100, 2000), (1000, 10000))
SWAPS = (10_000, 1_000)


def measure(scores: np.ndarray, statistic: str, swaps: int) -> tuple[float, float]:
    """Seconds and peak MB of one ``swap_null`` call."""
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    swap_null(scores, statistic, 0, 1, AnalysisSettings(), swaps=swaps, seed=0)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-large", action="store_true", help="leave out the 1,000 x 10,000 matrix")
    arguments = parser.parse_args()
    rng = np.random.default_rng(SEED)
    print(f"pytest-bvtest calibration benchmark (numpy {np.__version__}, seed {SEED})")
    print(f"  {'statistic':<16}{'matrix':>14}{'swaps':>8}{'wall s':>10}{'peak MB':>10}")
    for systems, topics in SIZES:
        if arguments.skip_large and systems * topics > 10**6:
            continue
        scores = rng.beta(1.5, 4.0, size=(systems, topics))
        for name, statistic in STATISTICS.items():
            if statistic.sufficient_matrix is None and systems * topics > 10**5:
                continue
            for swaps in SWAPS:
                seconds, peak = measure(scores, name, swaps)
                print(f"  {name:<16}{f'{systems} x {topics}':>14}{swaps:>8,}{seconds:>10.3f}{peak:>10.1f}")


if __name__ == "__main__":
    main()
