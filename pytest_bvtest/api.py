"""The Python API, the third shell beside the pytest plugin and the ``bvtest`` command.

What a team's own code, a notebook or a script imports: read a spec, evaluate it (with another run as the
candidate), and read any statistic or gate outcome of the :class:`Evaluation`.
"""

from pytest_bvtest.judging.decision import Verdict
from pytest_bvtest.judging.evaluation import Evaluation, MeasureEvaluation, SystemStatistics
from pytest_bvtest.judging.pipeline import CandidateRun, evaluate_spec, replay_baselines, spec_under_test
from pytest_bvtest.spec.model import Spec
from pytest_bvtest.spec.reader import load_spec

__all__ = [
    "CandidateRun",
    "Evaluation",
    "Verdict",
    "MeasureEvaluation",
    "Spec",
    "SystemStatistics",
    "evaluate_spec",
    "load_spec",
    "replay_baselines",
    "spec_under_test",
]
