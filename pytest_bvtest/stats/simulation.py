"""Per-topic bias-variance over simulated collections (IPM 2022 Sec. 3.4, Eq. 12-14; docs/mathematics.md §3e).

Across topics, bias-variance says how a system's score spreads over the topic set. Per topic, the
spread comes from simulated collections instead: each sample redraws the system's retrieved list
from its own relevant and non-relevant retrieval scores, with a Poisson number of relevant
documents, and scores the redrawn ranking with a binary-relevance measure (AP, P@k, R@k, RR,
nDCG with binary gains, R-precision; :data:`SIMULATED_MEASURES`). The virtual target of a sample is the best AP
any system reached on it. Randomness is seeded per (seed, retrieved list, topic id) with a stable
hash, so a system's samples never depend on which other systems are evaluated, and two systems that
retrieved the same list on a topic (a candidate identical to production) draw the same samples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from pytest_bvtest.checks import whole_number
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.biasvar import Tradeoff, bias_variance, target_constant, tradeoff, virtual_target

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

SIMULATED_MEASURES = ("AP", "P", "R", "RR", "nDCG", "Rprec")
"""Binary-relevance measures computable on a simulated ranked list (trec_eval's map, P_k, recall_k,
recip_rank, ndcg / ndcg_cut_k with binary gains, Rprec); ``P`` and ``R`` need a cutoff. Not bpref: the
simulation does not tell judged non-relevant documents from unjudged ones (docs/mathematics.md §3e counts both as
non-relevant)."""


@dataclass(frozen=True, eq=False)
class RetrievedList:
    """One system's retrieved list for one topic, as the simulation needs it.

    Parameters
    ----------
    scores:
        ``(L,)`` retrieval scores of the retrieved documents (any order).
    relevant:
        ``(L,)`` booleans: judged relevant in the qrels (unjudged documents count as non-relevant).
    relevant_in_qrels:
        ``R``, the topic's number of relevant documents in the qrels (retrieved or not), ``>= sum(relevant)``.
    """

    scores: FloatArray
    relevant: BoolArray
    relevant_in_qrels: int

    def __post_init__(self) -> None:
        scores = np.array(self.scores, dtype=np.float64)
        relevant = np.array(self.relevant, dtype=bool)
        if scores.ndim != 1 or relevant.shape != scores.shape:
            raise StatisticError(
                f"a retrieved list needs one score and one relevance flag per document, got shapes {scores.shape} "
                f"and {relevant.shape}"
            )
        if not np.isfinite(scores).all():
            raise StatisticError("retrieval scores contain NaN or infinite values")
        total = whole_number(self.relevant_in_qrels, "relevant_in_qrels", minimum=0)
        if np.count_nonzero(relevant) > total:
            raise StatisticError(
                f"{np.count_nonzero(relevant)} relevant documents retrieved but the qrels have only {total}"
            )
        scores.setflags(write=False)
        relevant.setflags(write=False)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "relevant", relevant)
        object.__setattr__(self, "relevant_in_qrels", total)


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Per-topic bias-variance over simulated collections, for ``m`` systems and ``n`` topics.

    ``sample_scores[i, j, b]`` is system ``i``'s AP on topic ``j`` in sample ``b``; ``c[j]`` the
    topic's target constant; ``topic_bias2``/``topic_var`` are ``(m, n)`` (Eq. 12), ``bias2``/``var``
    their means over topics (Eq. 13-14); ``topic_tradeoff[j]`` correlates Bias2 and Var across
    systems on topic ``j``, ``tradeoff`` does the same for the averaged terms.
    """

    system_names: tuple[str, ...]
    topic_ids: tuple[str, ...]
    samples: int
    seed: int
    sample_scores: FloatArray
    c: FloatArray
    topic_bias2: FloatArray
    topic_var: FloatArray
    bias2: FloatArray
    var: FloatArray
    topic_tradeoff: tuple[Tradeoff, ...]
    tradeoff: Tradeoff
    measure: str = "AP"


def measure_label(measure: str, cutoff: int | None) -> str:
    """``AP``, ``P@10``, ``nDCG@10 (binary gains)``: how reports name a simulated measure."""
    label = measure if cutoff is None else f"{measure}@{cutoff}"
    return f"{label} (binary gains)" if measure == "nDCG" else label


def simulate_topic_bias_variance(
    lists: Sequence[Sequence[RetrievedList]],
    system_names: Sequence[str],
    topic_ids: Sequence[str],
    samples: int = 100,
    seed: int = 0,
    target: Literal["mean"] | float = "mean",
    measure: str = "AP",
    cutoff: int | None = None,
) -> SimulationResult:
    """Bias2 and Var of each system on each topic over ``samples`` simulated collections.

    IPM 2022 Sec. 3.4, Eq. 12-14, docs/mathematics.md §3e. For system ``i`` and topic ``j`` with ``L``
    retrieved documents, ``r`` of them relevant, sample ``b`` draws ``r_b ~ Poisson(r)`` capped at
    ``L`` relevant scores (with replacement) from the relevant retrieved scores and ``L - r_b`` from
    the non-relevant retrieved ones, ranks them by score descending (PIN: ties put non-relevant
    first) and takes ``AP = (sum of precision at each relevant rank) / (r_b + R - r)`` (PIN: the
    unretrieved relevant documents stay unretrieved). PIN: ``r = 0`` gives AP 0 in every sample.
    The target of sample ``b`` is ``x_Tb[j] = max_i x_ib[j]`` over all systems (docs/mathematics.md §2).

    Our reading of Eq. 12, with ``c_j`` the mean over samples of ``x_Tb[j]`` (the sample-level
    analogue of docs/mathematics.md §3's default ``c = mean(x_T)``) or the fixed number ``target``::

        Bias2[i, j] = (mean_b x_ib[j] - c_j)^2
        Var[i, j]   = mean_b (x_ib[j] - mean_b x_ib[j])^2          (population, over samples)

    and of Eq. 13-14: ``Bias2[i] = mean_j Bias2[i, j]``, ``Var[i] = mean_j Var[i, j]``.

    Other binary-relevance measures (``measure``, docs/mathematics.md §3e asks for "the binary metric"; our reading
    of each, with ``R_b = r_b + R - r`` relevant documents in the sample's collection): ``P@k`` the
    relevant share of the top ``k`` (divided by ``k``, as trec_eval); ``R@k`` the relevant documents
    in the top ``k`` over ``R_b``; ``RR`` (``RR@k``) one over the rank of the first relevant document
    (0 without one, or below ``k``); ``nDCG`` (``nDCG@k``) with gain 1 per relevant document,
    discount ``log2(rank + 1)`` and the ideal list of ``R_b`` relevant documents; ``Rprec`` the
    precision at rank ``R_b``. Each is 0 when ``R_b = 0``.

    Our decisions where docs/mathematics.md §3e is silent: when the list has no non-relevant document and
    ``r_b < L``, the ``L - r_b`` missing documents are non-relevant and ranked below every drawn
    score (equivalently the sample is shortened to its ``r_b`` relevant draws; AP is the same).
    When ``r_b + R - r = 0`` (no relevant document anywhere in the sample) AP is 0. Seeding
    (docs/mathematics.md §3e; MATH.md seeds by system name instead): sample draws for (system, topic)
    come from ``numpy.random.default_rng(SeedSequence([seed, blake2b64(retrieved list),
    blake2b64(topic id)]))``, the list hashed as its sorted relevant and non-relevant scores and
    ``R``; stable across machines and processes (not Python's salted ``hash``); within a numpy
    version the samples are reproducible bit for bit.

    Parameters
    ----------
    lists:
        ``lists[i][j]`` is system ``i``'s :class:`RetrievedList` on topic ``j``; every system has an
        entry for every topic (an empty list for a topic it did not answer) and the same ``R`` per topic.
    system_names, topic_ids:
        Distinct names of the ``m`` systems and ``n`` topics; the topic ids seed the draws.
    samples:
        ``B``, the number of simulated collections (IPM 2022 uses 100).
    seed:
        Non-negative seed, reported in the result.
    target:
        ``"mean"`` (mean over samples of the per-sample virtual target) or a fixed number such as 1.
    measure, cutoff:
        One of :data:`SIMULATED_MEASURES` and its rank cutoff (required for ``P`` and ``R``, not
        allowed for ``Rprec``).

    Returns
    -------
    SimulationResult

    Raises
    ------
    StatisticError
        Mismatched shapes, duplicate names, inconsistent ``R`` across systems, invalid parameters.
    """
    names, topics = _distinct(system_names, "system names"), _distinct(topic_ids, "topic ids")
    samples = whole_number(samples, "samples")
    seed = whole_number(seed, "seed", minimum=0)
    _check_lists(lists, names, topics)
    score = _checked_measure(measure, cutoff)
    sample_scores = np.empty((len(names), len(topics), samples))
    for i, system_lists in enumerate(lists):
        for j, topic in enumerate(topics):
            sample_scores[i, j] = score(system_lists[j], samples, _pair_generator(seed, system_lists[j], topic))
    target_scores = virtual_target(np.swapaxes(sample_scores, 0, 1))
    c = np.broadcast_to(target_constant(target_scores, target), (len(topics),)).copy()
    per_topic = bias_variance(sample_scores, c)
    bias2, var = per_topic.bias2.mean(axis=-1), per_topic.var.mean(axis=-1)
    return SimulationResult(
        system_names=names,
        topic_ids=topics,
        samples=samples,
        seed=seed,
        sample_scores=sample_scores,
        c=c,
        topic_bias2=per_topic.bias2,
        topic_var=per_topic.var,
        bias2=bias2,
        var=var,
        topic_tradeoff=tuple(tradeoff(per_topic.bias2[:, j], per_topic.var[:, j]) for j in range(len(topics))),
        tradeoff=tradeoff(bias2, var),
        measure=measure_label(measure, cutoff),
    )


_Scorer = Callable[[RetrievedList, int, np.random.Generator], FloatArray]


def _checked_measure(measure: str, cutoff: int | None) -> _Scorer:
    """The function scoring ``samples`` simulated versions of one list with ``measure`` (and ``cutoff``)."""
    if measure not in SIMULATED_MEASURES:
        raise StatisticError(
            f"the simulation scores binary-relevance measures only ({', '.join(SIMULATED_MEASURES)}), got {measure!r}"
        )
    if cutoff is not None:
        cutoff = whole_number(cutoff, "cutoff")
    if measure in ("P", "R") and cutoff is None:
        raise StatisticError(f"{measure} needs a cutoff (e.g. {measure}@10)")
    if measure == "Rprec" and cutoff is not None:
        raise StatisticError("Rprec takes no cutoff (it cuts at the topic's number of relevant documents)")
    if measure == "AP" and cutoff is None:
        return _sample_average_precision

    def score(retrieved: RetrievedList, samples: int, rng: np.random.Generator) -> FloatArray:
        if not retrieved.relevant.any():
            return np.zeros(samples)
        draws = _draw_samples(retrieved, samples, rng)
        collection = draws.drawn_relevant + retrieved.relevant_in_qrels - int(np.count_nonzero(retrieved.relevant))
        return ranked_list_measure(_ranked_relevance(draws), collection, measure, cutoff)

    return score


def _ranked_relevance(draws: _Draws) -> BoolArray:
    """``(B, W)`` relevance of each sample's documents in rank order (score descending, non-relevant
    first among ties, docs/mathematics.md §3e PIN); a sample shorter than ``W`` ends in non-relevant padding."""
    samples, width = draws.relevant_index.shape
    relevant_used = np.arange(width) < draws.drawn_relevant[:, None]
    other_width = draws.other_index.shape[1]
    other_used = np.arange(other_width) < (other_width - draws.drawn_relevant)[:, None]
    scores = np.concatenate(
        [
            draws.relevant_scores[np.minimum(draws.relevant_index, draws.relevant_scores.size - 1)],
            draws.other_scores[draws.other_index] if other_width else np.zeros((samples, 0)),
        ],
        axis=1,
    )
    used = np.concatenate([relevant_used, other_used], axis=1)
    relevant = np.concatenate([relevant_used, np.zeros((samples, other_width), dtype=bool)], axis=1)
    # lexsort: the last key is primary: used documents first, then score descending, then non-relevant first
    order = np.lexsort((relevant, -scores, ~used), axis=-1)
    return np.take_along_axis(relevant, order, axis=-1)


def ranked_list_measure(
    relevance: npt.ArrayLike, relevant_total: npt.ArrayLike, measure: str, cutoff: int | None = None
) -> FloatArray:
    """A binary-relevance measure of ranked lists (docs/mathematics.md §3e; trec_eval's definitions).

    Parameters
    ----------
    relevance:
        ``(B, W)`` booleans, each row a ranked list (rank 1 first).
    relevant_total:
        ``(B,)`` relevant documents in each list's collection (``R_b``), retrieved or not.
    measure, cutoff:
        One of :data:`SIMULATED_MEASURES` and its cutoff.

    Returns
    -------
    numpy.ndarray
        ``(B,)`` scores; 0 where ``relevant_total`` is 0.
    """
    rel = np.asarray(relevance, dtype=bool)
    total = np.asarray(relevant_total, dtype=np.int64)
    samples, width = rel.shape
    ranks = np.arange(1, width + 1)
    top = rel[:, :cutoff] if cutoff is not None else rel
    found = np.count_nonzero(top, axis=-1).astype(np.float64)
    has_relevant = total > 0
    if measure == "AP":
        hits = np.cumsum(rel, axis=-1)
        precision_sum = np.sum(np.where(top, hits[:, : top.shape[1]] / ranks[: top.shape[1]], 0.0), axis=-1)
        return np.divide(precision_sum, total, out=np.zeros(samples), where=has_relevant)
    if measure == "P":
        return found / cutoff
    if measure == "R":
        return np.divide(found, total, out=np.zeros(samples), where=has_relevant)
    if measure == "RR":
        first = np.argmax(top, axis=-1)
        return np.where(top.any(axis=-1), 1.0 / (first + 1), 0.0)
    if measure == "nDCG":
        discount = 1.0 / np.log2(ranks + 1.0)
        gains = np.sum(np.where(top, discount[: top.shape[1]], 0.0), axis=-1)
        depth = total if cutoff is None else np.minimum(total, cutoff)
        ideal_discount = np.concatenate(
            ([0.0], np.cumsum(1.0 / np.log2(np.arange(1, int(depth.max(initial=0)) + 1) + 1.0)))
        )
        ideal = ideal_discount[depth]
        return np.divide(gains, ideal, out=np.zeros(samples), where=ideal > 0)
    if measure == "Rprec":
        hits = np.concatenate([np.zeros((samples, 1)), np.cumsum(rel, axis=-1)], axis=1)
        within = hits[np.arange(samples), np.minimum(total, width)]
        return np.divide(within, total, out=np.zeros(samples), where=has_relevant)
    raise StatisticError(f"unknown simulated measure {measure!r}; use one of {', '.join(SIMULATED_MEASURES)}")


def _stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _pair_generator(seed: int, retrieved: RetrievedList, topic_id: str) -> np.random.Generator:
    """The random stream of one retrieved list on one topic, seeded by the list's content and the topic.

    The draws depend only on the list's relevant and non-relevant scores as sorted sets and on ``R``
    (:func:`_draw_samples`), so those are what is hashed: two systems that retrieved the same list (a
    candidate identical to production on that topic) draw the same samples, whatever their names,
    and different lists draw independent ones. No system's samples depend on which others are evaluated.
    """
    relevant = np.sort(retrieved.scores[retrieved.relevant]) + 0.0  # + 0.0 makes -0.0 hash as 0.0
    others = np.sort(retrieved.scores[~retrieved.relevant]) + 0.0
    content = hashlib.blake2b(digest_size=8)
    for part in (np.int64([relevant.size, others.size, retrieved.relevant_in_qrels]), relevant, others):
        content.update(part.tobytes())
    list_hash = int.from_bytes(content.digest(), "little")
    return np.random.default_rng(np.random.SeedSequence([seed, list_hash, _stable_hash(topic_id)]))


@dataclass(frozen=True, eq=False)
class _Draws:
    """The documents drawn for ``B`` samples of one retrieved list, as indices.

    ``relevant_scores`` and ``other_scores`` are the list's relevant and non-relevant scores sorted
    descending; row ``b`` of the sample consists of ``relevant_scores[relevant_index[b, :r_b]]`` and
    ``other_scores[other_index[b, :L - r_b]]`` with ``r_b = drawn_relevant[b]``.
    """

    relevant_scores: FloatArray
    other_scores: FloatArray
    drawn_relevant: npt.NDArray[np.int64]
    relevant_index: npt.NDArray[np.int64]
    other_index: npt.NDArray[np.int64]


def _draw_samples(retrieved: RetrievedList, samples: int, rng: np.random.Generator) -> _Draws:
    """Draw ``r_b ~ Poisson(r)`` capped at ``L``, then the sample's documents with replacement (``r >= 1``)."""
    length = retrieved.scores.size
    relevant_scores = np.sort(retrieved.scores[retrieved.relevant])[::-1]
    other_scores = np.sort(retrieved.scores[~retrieved.relevant])[::-1]
    drawn_relevant = np.minimum(rng.poisson(relevant_scores.size, samples), length)
    relevant_index = rng.integers(0, relevant_scores.size, (samples, int(drawn_relevant.max())))
    other_index = (
        rng.integers(0, other_scores.size, (samples, length))
        if other_scores.size
        else np.zeros((samples, 0), dtype=np.int64)
    )
    return _Draws(relevant_scores, other_scores, drawn_relevant, relevant_index, other_index)


def _average_precision(draws: _Draws, relevant_total: npt.NDArray[np.int64]) -> FloatArray:
    """AP of each sample ranked by score descending, non-relevant first among ties (docs/mathematics.md §3e PIN).

    Without sorting whole lists: the ``p``-th best relevant draw (0-based) is ranked below the ``p``
    better relevant draws and below every non-relevant draw scoring at least as high, so its
    precision is ``(p + 1) / (p + 1 + non-relevant draws >= its score)``. Non-relevant draws are
    counted per distinct position of the sorted non-relevant scores and accumulated. Missing
    non-relevant documents (a list without any) rank below everything and never count.
    """
    samples, width = draws.relevant_index.shape
    position = np.arange(width)
    used = position < draws.drawn_relevant[:, None]
    # Unused columns sort last; the used ones come out best score first (indices of a descending array).
    best_first = np.sort(np.where(used, draws.relevant_index, draws.relevant_scores.size), axis=-1)
    other_count = draws.other_scores.size
    other_width = draws.other_index.shape[1]
    other_used = np.arange(other_width) < (other_width - draws.drawn_relevant)[:, None]
    # Per sample, how often each sorted non-relevant score was drawn; unused draws land in an extra
    # last bin that is dropped.
    bins = np.arange(samples)[:, None] * (other_count + 1) + np.where(other_used, draws.other_index, other_count)
    counts = np.bincount(bins.ravel(), minlength=samples * (other_count + 1)).reshape(samples, other_count + 1)
    at_least = np.zeros((samples, other_count + 1), dtype=np.int64)
    np.cumsum(counts[:, :-1], axis=-1, out=at_least[:, 1:])
    # For each relevant score, how many sorted non-relevant scores are >= it (ties count as above).
    other_above = np.searchsorted(-draws.other_scores, -draws.relevant_scores, side="right")
    other_above = np.append(other_above, 0)[best_first]
    rank = position + 1 + np.take_along_axis(at_least, other_above, axis=-1)
    found = np.sum(np.where(used, (position + 1) / rank, 0.0), axis=-1)
    return np.divide(found, relevant_total, out=np.zeros_like(found), where=relevant_total > 0)


def _sample_average_precision(retrieved: RetrievedList, samples: int, rng: np.random.Generator) -> FloatArray:
    """AP of ``samples`` simulated versions of one retrieved list."""
    retrieved_relevant = int(np.count_nonzero(retrieved.relevant))
    if retrieved_relevant == 0:
        return np.zeros(samples)
    draws = _draw_samples(retrieved, samples, rng)
    unretrieved = retrieved.relevant_in_qrels - retrieved_relevant
    return _average_precision(draws, draws.drawn_relevant + unretrieved)


def _distinct(names: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(names)
    if not names:
        raise StatisticError(f"no {what} given")
    if not all(isinstance(name, str) for name in names):
        raise StatisticError(f"{what} must be strings")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise StatisticError(
            f"duplicate {what}: {', '.join(duplicates)}; each must be unique because it names its own row of results"
        )
    return names


def _check_lists(lists: Sequence[Sequence[RetrievedList]], names: tuple[str, ...], topics: tuple[str, ...]) -> None:
    if len(lists) != len(names) or any(len(row) != len(topics) for row in lists):
        raise StatisticError(f"expected {len(names)} systems x {len(topics)} topics of retrieved lists")
    for j, topic in enumerate(topics):
        if not all(isinstance(lists[i][j], RetrievedList) for i in range(len(names))):
            raise StatisticError(f"topic {topic}: every entry must be a RetrievedList")
        totals = {lists[i][j].relevant_in_qrels for i in range(len(names))}
        if len(totals) > 1:
            raise StatisticError(
                f"topic {topic}: systems disagree on the number of relevant documents in the qrels ({sorted(totals)})"
            )
