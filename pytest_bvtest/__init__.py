"""pytest-bvtest: a pytest plugin that gates search quality in CI.

Data flows one way: files (:mod:`pytest_bvtest.io`) → per-topic score matrix (:mod:`pytest_bvtest.scoring`)
→ statistics (:mod:`pytest_bvtest.stats`) → one decision per gate (:mod:`pytest_bvtest.judging`) → words and
reports (:mod:`pytest_bvtest.report`), configured by the spec's model (:mod:`pytest_bvtest.spec`). Three
thin shells drive it: the pytest plugin (:mod:`pytest_bvtest.plugin`), the command line
(:mod:`pytest_bvtest.cli`) and the Python API (:mod:`pytest_bvtest.api`).
"""

# the one place the version is written: the build reads it (pyproject.toml, tool.setuptools.dynamic)
__version__ = "0.2.0.dev0"

#: The name of the system under test where the spec or the caller gives none.
CANDIDATE_NAME = "candidate"

#: The score cache's folder, beside the spec, when the spec has no ``cache:`` key (here, so that the command line
#: names it without loading numpy: numpy must load after the command line has chosen the BLAS's threads).
DEFAULT_CACHE_DIR = ".bvtest_cache"
