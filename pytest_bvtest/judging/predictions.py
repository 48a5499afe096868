"""Predicted grades, trusted as far as they agree with people (docs/predictions.md; docs/mathematics.md §10,
"Predicted grades").

:func:`predicted_grades` splits a predictions file by the qrels: the documents people judged measure the predictor
(its confusion with their grades, its agreement and Cohen's kappa, :mod:`pytest_bvtest.stats.predictions`), the
unjudged ones are what it predicts. Human grades always win: a predicted document that people have judged since is
read as judged, and counts towards the predictor's agreement instead. The plausible gradings
(:mod:`.plausible`) refine each predicted document's prior with :meth:`PredictedGrades.likelihoods`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.predictions import read_predictions
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.stats.predictions import cohen_kappa, confusion_matrix, prediction_likelihoods, trust


@dataclass(frozen=True)
class PredictedGrades:
    """A predictions file read against the qrels: ``grades``, the predicted grades of the unjudged documents;
    ``confusion[i, j]``, the judged documents people graded ``i`` and the predictor ``j`` (``sample`` of them),
    its ``agreement`` (the share graded alike) and ``kappa``; ``trust``, the exponent its likelihoods are tempered by
    (:func:`~pytest_bvtest.stats.predictions.trust`: kappa's lower confidence bound); ``used``: whether it agrees
    with people beyond chance (``trust`` above 0), else its grades change nothing."""

    path: Path
    grades: Mapping[tuple[str, str], int]
    confusion: np.ndarray
    agreement: float | None
    kappa: float | None
    trust: float

    @property
    def used(self) -> bool:
        """Whether the predictor agrees with people beyond chance: its grades refine the priors."""
        return self.trust > 0.0

    @property
    def sample(self) -> int:
        """How many judged documents the predictor's agreement was measured on."""
        return int(self.confusion.sum())

    def likelihoods(self, pairs: Sequence[tuple[str, str]], grades: int) -> np.ndarray | None:
        """``(len(pairs), grades)``: each pair's ``P(its predicted grade | true grade g)``
        (:func:`~pytest_bvtest.stats.predictions.prediction_likelihoods`) raised to :attr:`trust`, ones for a pair
        without a prediction; ``None`` when no pair has one or the predictor is not used."""
        if not self.used or not any(pair in self.grades for pair in pairs):
            return None
        table = prediction_likelihoods(self.confusion[:grades, :grades]) ** self.trust
        rows = np.ones((len(pairs), grades))
        for k, pair in enumerate(pairs):
            predicted = self.grades.get(pair)
            if predicted is not None and table[:, predicted].sum() > 0:  # a grade the sample never predicted: unknown
                rows[k] = table[:, predicted]
        return rows

    def predicted(self, pairs: Sequence[tuple[str, str]]) -> int:
        """How many of ``pairs`` have a predicted grade."""
        return sum(pair in self.grades for pair in pairs)


def predicted_grades(path: Path, qrels: Qrels | None, top_grade: int) -> PredictedGrades:
    """The predictions file at ``path`` against ``qrels``: its judged documents measure it, its unjudged ones are
    its grades. A grade above the qrels' ``top_grade`` is an error at its line."""
    if not path.exists():
        raise InputError(
            "the predictions file does not exist",
            path=path,
            hint="write it with `bvtest judge SPEC -o judgments.tsv --predict`, or drop `judgments: {predictions:}`",
        )
    read = read_predictions(path)
    for pair, grade in read.grades.items():
        if grade > top_grade:
            raise InputError(
                f"document {excerpt(pair[1])} of topic {excerpt(pair[0])} is predicted {grade}, above the qrels' top "
                f"grade {top_grade}",
                path=path,
                line=read.lines[pair],
                hint=f"predict grades 0 to {top_grade}, as people grade",
            )
    judged = {} if qrels is None else qrels.judgments
    human, machine = [], []
    unjudged: dict[tuple[str, str], int] = {}
    for (topic, docno), grade in read.grades.items():
        person = judged.get(topic, {}).get(docno)
        if person is None:
            unjudged[topic, docno] = grade
        else:
            human.append(person)
            machine.append(grade)
    confusion = confusion_matrix(human, machine, top_grade + 1)
    if not human:
        return PredictedGrades(path, unjudged, confusion, None, None, 0.0)
    agreement, kappa, _ = cohen_kappa(confusion)
    return PredictedGrades(path, unjudged, confusion, agreement, kappa, trust(confusion))
