"""The ``bvtest`` fixture: the Python API inside a team's own tests, following the session's run and specs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_bvtest import CANDIDATE_NAME
from pytest_bvtest.blas import default_threads, import_on_one_thread
from pytest_bvtest.errors import BvtestError, InputError
from pytest_bvtest.plugin.options import COLLECTED_SPECS, NAMED_SPECS, evaluation_options, option, refused_run

if TYPE_CHECKING:
    from pytest_bvtest.judging.evaluation import Evaluation
    from pytest_bvtest.judging.pipeline import CandidateRun, QrelsGiven
    from pytest_bvtest.spec.model import Spec


@dataclass
class BvtestAPI:
    """What the ``bvtest`` fixture hands a test: load a spec, evaluate a run, read any statistic.

    ``run`` and ``specs`` are the session's: the candidate the gates judge (``--bvtest-run``) and the
    specs it tests (``--bvtest-spec``, else the collected ``bvtest*.yaml``). :meth:`evaluate` uses
    them when it is not given a run or a spec, so a team's own rules check the pull request's run.
    """

    cache_dir: str | os.PathLike[str] | None = None
    use_cache: bool = True
    allow_outside: bool = False
    run: str | os.PathLike[str] | list[str] | None = None
    specs: Sequence[str | os.PathLike[str]] = ()
    jobs: int = 1
    #: the specs ``run`` is the candidate of (``--bvtest-spec``); empty: whichever spec is evaluated
    run_specs: Sequence[str | os.PathLike[str]] = ()
    #: why ``run`` is the candidate of no spec (several collected, none named): :meth:`evaluate` raises it
    run_refused: InputError | None = None

    def load_spec(self, path: str | os.PathLike[str]) -> Spec:
        from pytest_bvtest.spec.reader import load_spec

        return load_spec(path)

    def evaluate(
        self,
        spec: Spec | str | os.PathLike[str] | None = None,
        run: CandidateRun | None = None,
        *,
        name: str = CANDIDATE_NAME,
        qrels: QrelsGiven | None = None,
    ) -> Evaluation:
        """Evaluate ``spec`` (the session's only spec when omitted) with ``run`` as its candidate.

        ``run`` is a run file, a :class:`Run`, a dict ``{qid: {docno: score}}`` or a pandas DataFrame (PyTerrier's
        ``qid, docno, score``, ranx's ``query_id, doc_id, score``), named ``name``; when omitted, the session's
        ``--bvtest-run`` when it is for this spec (as for the gates), else the spec's own candidate. ``qrels``, a
        DataFrame (``qid, docno, label`` or ``query_id, doc_id, relevance``) or a dict ``{qid: {docno: grade}}``,
        replaces the spec's ``qrels:``.
        """
        if import_on_one_thread("pytest_bvtest.judging.pipeline"):  # this team test is the first to load numpy
            default_threads()
        from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test

        if spec is None:
            spec = self.session_spec()
        return evaluate_spec(
            spec_under_test(spec, run if run is not None else self.session_run(spec), name=name, qrels=qrels),
            cache_dir=self.cache_dir,
            use_cache=self.use_cache,
            allow_outside=self.allow_outside,
            jobs=self.jobs,
        )

    def session_run(self, spec: Spec | str | os.PathLike[str]) -> str | os.PathLike[str] | list[str] | None:
        """The session's run when it is the candidate of ``spec``; the reason when it is refused."""
        if self.run is None:
            return None
        if self.run_refused is not None:
            raise self.run_refused
        path = spec if isinstance(spec, str | os.PathLike) else spec.path
        named = {str(Path(named).resolve()) for named in self.run_specs}
        return self.run if not named or str(Path(path).resolve()) in named else None

    def session_spec(self) -> Path:
        """The session's spec, when there is exactly one."""
        specs = list(dict.fromkeys(Path(path) for path in self.specs))
        if len(specs) != 1:
            found = f"found {', '.join(map(str, specs))}" if specs else "none was given or collected"
            raise InputError(
                "evaluate() without a spec needs exactly one spec in the session",
                hint=f"{found}; pass the spec's path, e.g. bvtest.evaluate('bvtest.yaml')",
            )
        return specs[0]

    def statistic(
        self, evaluation: Evaluation, name: str, system: str = CANDIDATE_NAME, measure: str | None = None
    ) -> float | None:
        return evaluation.statistic(name, system, measure)


@pytest.fixture
def bvtest(request: pytest.FixtureRequest) -> BvtestAPI:
    """The Python API: load a spec, evaluate a run (a path or an in-memory dict), read any statistic.

    ``bvtest.evaluate(SPEC)`` evaluates the candidate the gates judge (``--bvtest-run`` when given);
    ``bvtest.evaluate()`` the session's only spec.
    """
    config = request.config
    try:
        options = evaluation_options(config)
    except BvtestError as error:  # an ini cache path outside the project: one line, as for the gates
        pytest.fail(f"bvtest: {error}", pytrace=False)
    return BvtestAPI(
        **options,
        run=option(config, "run"),
        specs=config.stash[NAMED_SPECS] or config.stash[COLLECTED_SPECS],
        run_specs=config.stash[NAMED_SPECS],
        run_refused=refused_run(config),
    )
