"""pytest-bvtest: a pytest plugin that gates search quality in CI.

Data flows one way: files (:mod:`pytest_bvtest.io`) → per-topic score matrix
(:mod:`pytest_bvtest.matrix`) → statistics (:mod:`pytest_bvtest.stats`) → gates
(:mod:`pytest_bvtest.gates`) → reports (:mod:`pytest_bvtest.report`). The pytest plugin
(:mod:`pytest_bvtest.plugin`) and the command line (:mod:`pytest_bvtest.cli`) are thin shells
over :mod:`pytest_bvtest.api`.
"""

# the one place the version is written: the build reads it (pyproject.toml, tool.setuptools.dynamic)
__version__ = "0.2.0.dev0"

#: The name of the system under test where the spec or the caller gives none.
CANDIDATE_NAME = "candidate"
