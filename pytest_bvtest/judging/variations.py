"""Mean-variance evaluation over query variations (Zuccon et al. CIKM 2016, docs/mathematics.md §5).

:func:`variation_matrices` scores every query variation and hands the rest of the pipeline one
per-topic matrix (each topic's popularity-weighted mean over its variations);
:class:`VariationMVE` keeps the per-variation scores that MVE and its noise-aware gate need.
:func:`mean_variance_details` reports MVE's terms in the form used, with the alpha sweep.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pytest_bvtest.errors import InputError, StatisticError, short_list
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.topicfiles import Variation, read_topic_file, read_topic_weights, read_variations
from pytest_bvtest.scoring.cache import ScoreCache
from pytest_bvtest.scoring.matrix import MatrixBuilder, ScoreMatrix
from pytest_bvtest.scoring.progress import EvaluationProgress
from pytest_bvtest.spec.measures import Measure
from pytest_bvtest.spec.model import AnalysisSettings, Spec
from pytest_bvtest.stats.inference import BootstrapInterval, topic_bootstrap
from pytest_bvtest.stats.meanvar import (
    IntraTopicMeanVariance,
    MeanVariance,
    VariationLayout,
    crossing_alpha,
    first_reordering,
    mve_alpha_sweep,
    mve_inter_topic,
    mve_intra_topic,
    variation_layout,
    variation_mve,
)
from pytest_bvtest.stats.rankings import rank_agreement, system_ranks

#: The MVE forms (Zuccon et al. CIKM 2016, docs/mathematics.md §5), as every report names them.
MVE_INTER_TOPIC = "inter-topic"

MVE_INTRA_TOPIC = "intra-topic (covariance 0)"

MVE_GENERAL = "general (aligned by user)"


@dataclass(frozen=True)
class AlphaSweep:
    """MVE of every system over a range of alpha (Zuccon et al. CIKM 2016 Figs. 2-4).

    ``values`` and ``ranks`` are ``(alphas, systems)``; ``flips`` maps every other system to the alpha
    at which its MVE ranking against the candidate flips (``None``: never, equal variances).
    """

    alphas: np.ndarray
    values: np.ndarray
    ranks: np.ndarray
    flips: Mapping[str, float | None]
    #: Kendall's tau and tau_AP of the ranking at each alpha against the ranking by ``mu`` (alpha 0, the mean term):
    #: how far the variance term moves the ranking (Zuccon et al. CIKM 2016 plot it against alpha); NaN where a
    #: ranking is constant.
    kendall_tau: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tau_ap: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class MeanVarianceDetails:
    """MVE of every system under one measure: the form used, ``mu``, ``sigma2`` and value per system,
    the per-topic ``O_t`` (``topic_values``, systems x topics, summing to the value) and the sweep."""

    form: str
    alpha: float
    mu: np.ndarray
    sigma2: np.ndarray
    topic_values: np.ndarray
    sweep: AlphaSweep | None = None
    #: The alpha nearest 0 (on the side of ``alpha``) at which the variance term first reorders two systems, and the
    #: two (:func:`~pytest_bvtest.stats.meanvar.first_reordering`); ``None``: it never does on that side.
    reordering: tuple[float, str, str] | None = None


@dataclass(frozen=True)
class VariationMVE:
    """Mean-variance results per measure computed over query variations, the form used, and what the
    noise-aware gate needs to resample topics with all their variations."""

    results: Mapping[str, MeanVariance | IntraTopicMeanVariance]
    method: str
    missing_queries: Mapping[str, tuple[str, ...]]
    arranged: Mapping[str, np.ndarray]
    layout: VariationLayout
    weights: np.ndarray | None
    user_probability: np.ndarray | None

    def bootstrap(
        self, measure: str, candidate: int, reference: int | None, spec: Spec, confidence: float
    ) -> BootstrapInterval:
        """The paired bootstrap over topics of MVE, each resampled topic bringing all its variations."""
        scores, layout, weights = self.arranged[measure], self.layout, self.weights

        def values_of(drawn: np.ndarray) -> np.ndarray:
            return np.asarray(
                variation_mve(
                    scores[:, drawn],
                    spec.analysis.mve.alpha,
                    weights=None if weights is None else weights[drawn],
                    popularity=None if layout.popularity is None else layout.popularity[drawn],
                    present=layout.present[drawn],
                    user_probability=self.user_probability,
                    variance=spec.analysis.variance,
                ).value
            )

        return topic_bootstrap(
            values_of,
            len(layout.topics),
            candidate,
            reference,
            "mve",
            resamples=spec.analysis.bootstrap.resamples,
            confidence=confidence,
            seed=spec.analysis.bootstrap.seed,
        )


def variation_matrices(
    spec: Spec, qrels: Qrels | None, cache: ScoreCache, jobs: int, progress: EvaluationProgress | None = None
) -> tuple[dict[Measure, ScoreMatrix], VariationMVE]:
    """The per-topic matrices over the spec's query variations, and what MVE needs of the variations.

    Every judged topic must have a variation, so the topics are the qrels universe, in its order
    (without qrels, the variations file's topics).
    """
    path = spec.analysis.mve.variations
    assert path is not None
    universe = qrels.evaluated_topics() if qrels is not None else variation_universe(read_variations(path))
    return _variation_matrices(spec, qrels, cache, jobs, topic_weights(spec, universe), progress)


def _variation_matrices(
    spec: Spec,
    qrels: Qrels | None,
    cache: ScoreCache,
    jobs: int,
    weights: np.ndarray | None,
    progress: EvaluationProgress | None = None,
) -> tuple[dict[Measure, ScoreMatrix], VariationMVE]:
    """Evaluate every query variation against its topic's qrels (Zuccon et al. CIKM 2016).

    The per-topic matrix the other statistics see holds each topic's popularity-weighted mean over its
    variations; MVE uses the general form (covariance across topics) when variations are aligned by
    user, the intra-topic form with covariance 0 otherwise (docs/mathematics.md §5).
    """
    path = spec.analysis.mve.variations
    assert path is not None
    variations = read_variations(path)
    universe = variation_universe(variations) if qrels is None else qrels.evaluated_topics()
    in_universe = set(universe)
    variations = [variation for variation in variations if variation.topic_id in in_universe]
    covered = {variation.topic_id for variation in variations}
    uncovered = [topic for topic in universe if topic not in covered]
    if uncovered:
        raise InputError(
            f"{len(uncovered)} judged topic(s) have no query variation: {short_list(uncovered)}",
            path=path,
            hint="list at least one query (e.g. the title query) for every judged topic",
        )
    order = {topic: j for j, topic in enumerate(universe)}
    variations.sort(key=lambda variation: order[variation.topic_id])
    query_ids = [variation.query_id for variation in variations]
    if qrels is None:
        # per-query score tables only: the tables give the scores, the variations file the topics
        builder = MatrixBuilder(None, cache, jobs=jobs)
        builder.progress = progress
        built = builder.build(list(spec.measures), spec.sources())
        query_matrices = {measure: _in_query_order(matrix, query_ids, path) for measure, matrix in built.items()}
    else:
        query_qrels = Qrels({variation.query_id: qrels.judgments[variation.topic_id] for variation in variations})
        # the judgments and the queries as read: what the scores are computed from, whatever the files hold now
        read = qrels.sha256 or cache.file_digest(spec.qrels)
        queries = "\n".join(f"{variation.query_id}\t{variation.topic_id}" for variation in variations)
        digest = hashlib.blake2b(f"{read}\n{queries}".encode(), digest_size=20).hexdigest()
        builder = MatrixBuilder(query_qrels, cache, qrels_digest=digest, jobs=jobs)
        builder.progress = progress
        query_matrices = builder.build(list(spec.measures), spec.sources())
    popularity = [variation.popularity for variation in variations]
    users = [variation.user for variation in variations]
    layout = variation_layout(
        [variation.topic_id for variation in variations],
        None if None in users else users,
        None if None in popularity else popularity,
    )
    alpha = spec.analysis.mve.alpha
    user_probability = _general_form_users(spec, layout)
    topic_matrices, results, arrangements = {}, {}, {}
    for measure, queries in query_matrices.items():
        arranged = layout.arrange(queries.scores)
        arrangements[str(measure)] = arranged
        intra = mve_intra_topic(arranged, alpha, weights=weights, popularity=layout.popularity, present=layout.present)
        try:
            results[str(measure)] = (
                intra
                if spec.analysis.variance == "population" and user_probability is None
                else variation_mve(
                    arranged,
                    alpha,
                    weights=weights,
                    popularity=layout.popularity,
                    present=layout.present,
                    user_probability=user_probability,
                    variance=spec.analysis.variance,
                )
            )
        except StatisticError as error:  # a sample variance of a topic with one variation
            raise InputError(
                f"MVE: {error}",
                path=spec.path,
                line=spec.line_of("analysis", "variance"),
                hint="give every topic at least 2 variations, or use `variance: population`",
            ) from None
        # A topic is missing (and scores 0) only when the run ranks none of its variations; a missing
        # variation alone scores 0 inside its topic's mean and is listed in missing_queries.
        imputed = np.all((layout.arrange(queries.imputed.astype(float)) == 1.0) | ~layout.present, axis=-1)
        topic_matrices[measure] = ScoreMatrix(
            queries.measure, queries.systems, layout.topics, np.asarray(intra.topic_mu), imputed, queries.ignored_topics
        )
    method = MVE_GENERAL if user_probability is not None else MVE_INTRA_TOPIC
    queries = next(iter(query_matrices.values()))  # the same queries are missing under every measure
    missing_queries = {
        system: tuple(query for query, flag in zip(queries.topics, queries.imputed[i]) if flag)
        for i, system in enumerate(queries.systems)
    }
    return topic_matrices, VariationMVE(
        results, method, missing_queries, arrangements, layout, weights, user_probability
    )


def variation_universe(variations: Sequence[Variation]) -> list[str]:
    """Without qrels the topics are those of the variations file, in order of first appearance."""
    return list(dict.fromkeys(variation.topic_id for variation in variations))


def _in_query_order(matrix: ScoreMatrix, query_ids: Sequence[str], path: Path) -> ScoreMatrix:
    """A per-query table matrix with its columns in the variations file's order; both must list the same queries."""
    missing = [query for query in query_ids if query not in matrix.topics]
    extra = sorted(set(matrix.topics) - set(query_ids))
    if missing or extra:
        problems = ([f"{len(missing)} variation(s) without a score: {short_list(missing)}"] if missing else []) + (
            [f"{len(extra)} scored query id(s) not in the variations file: {short_list(extra)}"] if extra else []
        )
        raise InputError(
            f"the per-query score tables and the variations file disagree: {'; '.join(problems)}",
            path=path,
            hint="the tables' topic column holds query ids; list each of them once in the variations file",
        )
    columns = [matrix.topics.index(query) for query in query_ids]
    return ScoreMatrix(
        matrix.measure,
        matrix.systems,
        tuple(query_ids),
        matrix.scores[:, columns],
        matrix.imputed[:, columns],
        matrix.ignored_topics,
    )


def _general_form_users(spec: Spec, layout: VariationLayout) -> np.ndarray | None:
    """The user probabilities of the general MVE form, or ``None`` for the intra-topic form.

    ``mve.form: auto`` takes the general form whenever it is defined: variations aligned by user and
    a popularity that gives each user the same share of every topic (docs/mathematics.md §5 PIN).
    ``general`` asks for it and is an error where it is not defined; ``intra-topic`` never uses it.
    """
    form = spec.analysis.mve.form
    if form == "intra-topic":
        return None
    probability = layout.user_probability()
    if probability is None and form == "general":
        why = (
            "every topic needs the same users, one query each"
            if not layout.aligned_by_user
            else "a user's popularity must be the same share of every topic (it is the user's probability)"
        )
        raise InputError(
            f"the general MVE form is not defined for these query variations: {why}",
            path=spec.path,
            line=spec.line_of("analysis", "mve", "form"),
            hint="use `form: intra-topic` (covariance 0 across topics) or `form: auto`",
        )
    return probability


def topic_weights(spec: Spec, topics: Sequence[str]) -> np.ndarray | None:
    """The topic weights aligned with ``topics``: the topic file's weight column (its traffic), else
    ``analysis.mve.weights`` (the reader refuses both); read by MVE and the weighted mean. Every evaluated topic
    must have one."""
    from_topic_file = read_topic_file(spec.topics).weights if spec.topics is not None else {}
    path = spec.topics if from_topic_file else spec.analysis.mve.weights
    if path is None:
        return None
    by_topic = from_topic_file or read_topic_weights(path)
    missing = [topic for topic in topics if topic not in by_topic]
    if missing:
        raise InputError(
            f"no weight for {len(missing)} evaluated topic(s): {short_list(missing)}",
            path=path,
            hint="give every evaluated topic a weight (0 excludes it)",
        )
    return np.array([by_topic[topic] for topic in topics])


def mean_variance_details(
    spec: Spec, matrix: ScoreMatrix, settings: AnalysisSettings, variations: VariationMVE | None, candidate: str | None
) -> MeanVarianceDetails:
    """The MVE terms of every system in the form used, and the alpha sweep when the spec asks for it."""
    if variations is not None:
        result, form = variations.results[matrix.measure], variations.method
    else:
        result = mve_inter_topic(matrix.scores, settings.mve.alpha, settings.topic_weights, variance=settings.variance)
        form = MVE_INTER_TOPIC
    mu, sigma2 = np.asarray(result.mu, dtype=float), np.asarray(result.sigma2, dtype=float)
    sweep = None
    if spec.analysis.mve.sweep is not None and len(matrix.systems) >= 2:
        grid = spec.analysis.mve.sweep
        alphas = np.linspace(grid.low, grid.high, grid.steps)
        swept = mve_alpha_sweep(mu, sigma2, alphas)
        flips = {}
        if candidate is not None:
            index = matrix.index(candidate)
            flips = {
                name: crossing_alpha(mu[index], sigma2[index], mu[i], sigma2[i])
                for i, name in enumerate(matrix.systems)
                if i != index
            }
        ranks = np.array([system_ranks(row, higher_is_better=True) for row in swept])
        agreements = [rank_agreement(mu, row) for row in swept]
        sweep = AlphaSweep(
            alphas,
            swept,
            ranks,
            flips,
            np.array([agreement.kendall_tau for agreement in agreements]),
            np.array([agreement.tau_ap for agreement in agreements]),
        )
    nearest = first_reordering(mu, sigma2, spec.analysis.mve.alpha)
    reordering = None if nearest is None else (nearest[0], matrix.systems[nearest[1]], matrix.systems[nearest[2]])
    return MeanVarianceDetails(
        form, spec.analysis.mve.alpha, mu, sigma2, np.asarray(result.topic_value, dtype=float), sweep, reordering
    )
