"""A small fielded BM25 index over the documentation corpus (numpy + scipy.sparse).

Each document has two fields: ``name`` (the words of its dotted name, ``json.dumps`` -> json dump)
and ``body`` (signature and docstring). Field weighting follows the "simple BM25F" of Robertson,
Zaragoza and Taylor (CIKM 2004): a field of weight w counts its term frequencies and its length w
times before the usual BM25 saturation, i.e. it is as if the field were repeated w times. With every
weight 1 this is plain BM25 on the whole document.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from search.analysis import Analyzer
from search.collection import Document


@dataclass(frozen=True)
class FieldedIndex:
    """Term frequencies per field: ``name_tf`` and ``body_tf`` are documents x vocabulary (CSR)."""

    docnos: tuple[str, ...]
    vocabulary: dict[str, int]
    analyzer: Analyzer
    name_tf: sparse.csr_matrix
    body_tf: sparse.csr_matrix

    def weighted_tf(self, name_weight: float) -> sparse.csr_matrix:
        """Simple-BM25F pseudo term frequencies: ``name_weight * name_tf + body_tf``."""
        return (name_weight * self.name_tf + self.body_tf).tocsr()

    def query_vector(self, text: str) -> np.ndarray:
        """Query term counts over the vocabulary; words the collection never uses contribute nothing."""
        vector = np.zeros(len(self.vocabulary))
        for term, count in Counter(self.analyzer.tokens(text)).items():
            column = self.vocabulary.get(term)
            if column is not None:
                vector[column] += count
        return vector


def _tf_matrix(token_lists: list[list[str]], vocabulary: dict[str, int]) -> sparse.csr_matrix:
    rows, columns, counts = [], [], []
    for row, tokens in enumerate(token_lists):
        for term, count in sorted(Counter(tokens).items()):
            rows.append(row)
            columns.append(vocabulary[term])
            counts.append(count)
    shape = (len(token_lists), len(vocabulary))
    return sparse.csr_matrix((np.array(counts, dtype=float), (rows, columns)), shape=shape)


def build_index(documents: list[Document], analyzer: Analyzer) -> FieldedIndex:
    """Analyse every document's name and body fields into term-frequency matrices."""
    names = [analyzer.tokens(doc.docno) for doc in documents]
    bodies = [analyzer.tokens(f"{doc.signature}\n{doc.text}") for doc in documents]
    terms = sorted({term for tokens in names + bodies for term in tokens})
    vocabulary = {term: column for column, term in enumerate(terms)}
    return FieldedIndex(
        docnos=tuple(doc.docno for doc in documents),
        vocabulary=vocabulary,
        analyzer=analyzer,
        name_tf=_tf_matrix(names, vocabulary),
        body_tf=_tf_matrix(bodies, vocabulary),
    )


def bm25_idf(tf: sparse.csr_matrix) -> np.ndarray:
    """Per-term inverse document frequency, never negative.

    Parameters
    ----------
    tf : documents x terms term frequencies.

    Returns
    -------
    idf[t] = ln(1 + (N - df_t + 0.5) / (df_t + 0.5)), the Robertson-Sparck Jones weight without
    relevance information (Robertson & Zaragoza, FnTIR 2009, Eq. 3.3) with Lucene's ``1 +`` so that
    terms in more than half of the documents keep a small positive weight.
    """
    n_documents = tf.shape[0]
    document_frequency = np.bincount(tf.indices, minlength=tf.shape[1]).astype(float)
    return np.log1p((n_documents - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25_weights(tf: sparse.csr_matrix, k1: float, b: float) -> sparse.csr_matrix:
    """The BM25 weight of every (document, term) pair, so a query scores as one sparse product.

    Parameters
    ----------
    tf : documents x terms term frequencies (pseudo frequencies for BM25F).
    k1 : term-frequency saturation, k1 >= 0.
    b : length normalisation, 0 <= b <= 1.

    Returns
    -------
    w[d, t] = idf_t * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl_d / avgdl))
    (Robertson & Zaragoza, FnTIR 2009, Eq. 3.15 with the idf of :func:`bm25_idf`), where dl_d is
    the document's length in (pseudo) term occurrences.
    """
    if k1 < 0 or not 0 <= b <= 1:
        raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
    tf = tf.tocsr()
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    normaliser = k1 * (1 - b + b * lengths / lengths.mean())
    row_of_entry = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
    saturated = tf.data * (k1 + 1) / (tf.data + normaliser[row_of_entry])
    weights = saturated * bm25_idf(tf)[tf.indices]
    return sparse.csr_matrix((weights, tf.indices.copy(), tf.indptr.copy()), shape=tf.shape)


def top_documents(scores: np.ndarray, docnos: tuple[str, ...], depth: int) -> list[tuple[str, float]]:
    """The ``depth`` best positively scored documents, score descending and ties by docno descending.

    Scores are rounded to 6 decimals first, the precision the run file keeps, so the order written is
    the order trec_eval reads back (score descending, then docno descending).
    """
    rounded = np.round(scores, 6)
    matched = np.flatnonzero(rounded > 0)
    ranked = sorted(matched, key=lambda row: (rounded[row], docnos[row]), reverse=True)
    return [(docnos[row], float(rounded[row])) for row in ranked[:depth]]
