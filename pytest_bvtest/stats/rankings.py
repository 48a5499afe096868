"""Rankings of systems by a statistic and the agreement of two rankings (Kendall's tau, tau_AP).

Kendall's tau is scipy's (``scipy.stats.kendalltau``, tau-b); tau_AP is Yilmaz, Aslam and Robertson,
"A new rank correlation coefficient for information retrieval", SIGIR 2008, implemented from its
definition; docs/mathematics.md §8. Values are oriented by the statistic's good direction
before ranking, so rank 1 is always the best system.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_bvtest.errors import StatisticError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RankAgreement:
    """How far the ranking by one statistic agrees with the ranking by another (the truth)."""

    kendall_tau: float
    kendall_p: float
    tau_ap: float


def _checked_values(values: npt.ArrayLike, what: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < 2:
        raise StatisticError(
            f"{what}: ranking needs one value per system and at least 2 systems, got shape {array.shape}"
        )
    if np.isnan(array).any():
        raise StatisticError(f"{what}: a value is undefined (NaN); systems cannot be ranked by it")
    return array


def system_ranks(values: npt.ArrayLike, higher_is_better: bool) -> FloatArray:
    """Rank 1 for the best system; tied values share the mean of their ranks (``scipy.stats.rankdata``).

    Parameters
    ----------
    values:
        ``(m,)`` one value per system (infinite values rank like numbers).
    higher_is_better:
        The statistic's good direction.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` ranks, 1 = best.
    """
    from scipy.stats import rankdata  # imported here: scipy.stats costs ~1 s, paid only when rankings are asked for

    array = _checked_values(values, "system_ranks")
    return rankdata(-array if higher_is_better else array, method="average")


def tau_ap(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> float:
    """AP rank correlation of the ranking by ``estimate`` with the ranking by ``truth``.

    Yilmaz, Aslam and Robertson, SIGIR 2008, Sec. 3 (docs/mathematics.md §8). With the
    systems listed in the order of ``estimate`` (best first) and ``C(i)`` the number of systems
    above position ``i`` that ``truth`` also ranks above the system at ``i``::

        tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1

    Like Kendall's tau it lies in [-1, 1], 1 for the same ranking and -1 for the reversed one, but a
    swap near the top costs more than one near the bottom; it is not symmetric. Both inputs are
    oriented so that higher is better. Our reading of ties (the paper assumes none): systems tied in
    ``estimate`` keep the order in which they are given (a stable sort), and a pair tied in
    ``truth`` counts as half correct.

    Parameters
    ----------
    truth:
        ``(N,)`` values of the reference ranking, higher is better.
    estimate:
        ``(N,)`` values of the ranking being assessed, higher is better.

    Returns
    -------
    float
    """
    true_values = _checked_values(truth, "tau_AP truth")
    estimated = _checked_values(estimate, "tau_AP estimate")
    if true_values.shape != estimated.shape:
        raise StatisticError(
            f"tau_AP needs two rankings of the same systems, got {true_values.size} and {estimated.size} values"
        )
    ordered = true_values[np.argsort(-estimated, kind="stable")]
    # correct[i, j] for j above i in the estimate: truth also puts j above i (a truth tie is half correct)
    correct = (ordered[None, :] > ordered[:, None]) + 0.5 * (ordered[None, :] == ordered[:, None])
    above = np.tril(correct, k=-1).sum(axis=1)
    positions = np.arange(1, ordered.size)
    return float(2.0 / (ordered.size - 1) * np.sum(above[1:] / positions) - 1.0)


def rank_agreement(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> RankAgreement:
    """Kendall's tau-b (with its p-value, scipy) and tau_AP between two rankings, higher is better in both.

    Parameters
    ----------
    truth, estimate:
        ``(N,)`` values oriented so that higher is better; ``truth`` is the reference of tau_AP.

    Returns
    -------
    RankAgreement
        ``kendall_tau`` and ``kendall_p`` are NaN when a ranking is constant (scipy's convention).
    """
    from scipy.stats import kendalltau  # imported here: scipy.stats costs ~1 s, paid only when rankings are asked for

    true_values = _checked_values(truth, "Kendall's tau truth")
    estimated = _checked_values(estimate, "Kendall's tau estimate")
    result = kendalltau(true_values, estimated)
    return RankAgreement(float(result.statistic), float(result.pvalue), tau_ap(true_values, estimated))
