"""Pseudo-relevance feedback: RM3 query expansion."""

from __future__ import annotations

import numpy as np
from scipy import sparse


def rm3_query(
    query: np.ndarray, scores: np.ndarray, tf: sparse.csr_matrix, fb_docs: int, fb_terms: int, original_weight: float
) -> np.ndarray:
    """Expand a query with the relevance model of its first-pass top documents.

    Parameters
    ----------
    query : original query term counts over the vocabulary.
    scores : first-pass score of every document.
    tf : documents x vocabulary term frequencies the document language models come from.
    fb_docs : number of top documents taken as (pseudo) relevant.
    fb_terms : number of relevance-model terms kept.
    original_weight : lambda, the weight of the original query in the mixture.

    Returns
    -------
    The expanded query weights q' = lambda * q / |q| + (1 - lambda) * RM1, where
    RM1(w) is proportional to sum over the feedback documents D of P(w | D) * P(D | Q), with
    P(w | D) = tf(w, D) / |D| and P(D | Q) the first-pass scores normalised over the feedback set,
    truncated to its ``fb_terms`` heaviest terms and renormalised (relevance model: Lavrenko & Croft,
    SIGIR 2001, Eq. 8; RM3 interpolation: Abdul-Jaleel et al., UMass at TREC 2004; as in Anserini).
    Ties among terms go to the earlier vocabulary column, so the expansion is deterministic.
    A query whose first pass matches nothing is returned normalised and unexpanded.
    """
    if not 0 <= original_weight <= 1:
        raise ValueError(f"original_weight must lie in [0, 1], got {original_weight}")
    original = query / query.sum() if query.sum() > 0 else query
    ranked = np.argsort(-scores, kind="stable")[:fb_docs]
    feedback = ranked[scores[ranked] > 0]
    if feedback.size == 0:
        return original
    document_weights = scores[feedback] / scores[feedback].sum()
    feedback_tf = tf[feedback]
    lengths = np.asarray(feedback_tf.sum(axis=1)).ravel()
    language_models = sparse.diags(1.0 / lengths) @ feedback_tf
    relevance = np.asarray(language_models.T @ document_weights).ravel()
    heaviest = np.lexsort((np.arange(relevance.size), -relevance))[:fb_terms]
    model = np.zeros_like(relevance)
    model[heaviest] = relevance[heaviest]
    return original_weight * original + (1 - original_weight) * model / model.sum()
