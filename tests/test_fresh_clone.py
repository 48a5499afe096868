"""A fresh clone passes: the tests that read the real data in ``../shared/data`` skip when it is absent.

They reach it only through ``tests/conftest.py`` (``shared_path``, ``shared_files``, ``example_trec_spec``, the
``shared_data`` fixture), each of which skips the test without the data. This file reads every other test file's
source and fails on one that reaches the data another way: a path spelling ``shared/data``, conftest's
``SHARED_DATA`` folder itself, or a file of the example project whose paths lead there (``trec/bvtest-dl-hard.yaml``
raised "qrels not found" in a clone without ``../shared`` instead of skipping).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
EXAMPLE = TESTS.parent / "example_project"
#: conftest.py is where the data is found, and skipped; nothing else may name it.
GATEKEEPER = "conftest.py"
_DATA_SPELLINGS = ("shared/data", "shared\\data", "BVTEST_SHARED_DATA")
_DATA_NAMES = ("SHARED_DATA",)


def example_files_reading_shared_data() -> list[str]:
    """The example project's files whose paths lead to ``../shared/data`` (its TREC specs), by name."""
    return sorted(
        path.name
        for path in EXAMPLE.rglob("*")
        if path.is_file() and path.suffix in (".yaml", ".yml") and "shared/data" in path.read_text(encoding="utf-8")
    )


def reaches_shared_data(source: str, example_files: list[str]) -> list[str]:
    """How ``source`` (a test file) reaches the shared data other than through conftest: one line per place."""
    found = []
    tree = ast.parse(source)
    # docstrings and other bare strings only say where the data is
    said = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in said:
            for spelling in (*_DATA_SPELLINGS, *example_files):
                if spelling in node.value:
                    found.append(f"line {line}: {spelling!r} in a string")
        elif isinstance(node, ast.Name) and node.id in _DATA_NAMES:
            found.append(f"line {line}: {node.id}")
        elif isinstance(node, ast.alias) and node.name in _DATA_NAMES:
            found.append(f"line {line}: imports {node.name}")
    return found


def test_the_example_specs_on_shared_data_are_known() -> None:
    """The scan below looks for these names; an example spec moved or renamed must not empty the list."""
    assert "bvtest-dl-hard.yaml" in example_files_reading_shared_data()


def test_no_test_file_reaches_the_shared_data_but_through_conftest() -> None:
    example_files = example_files_reading_shared_data()
    offenders = {
        path.name: found
        for path in sorted(TESTS.glob("*.py"))
        if path.name not in (GATEKEEPER, Path(__file__).name)
        for found in [reaches_shared_data(path.read_text(encoding="utf-8"), example_files)]
        if found
    }
    assert not offenders, (
        "these tests would fail instead of skipping in a clone without ../shared/data; use conftest's shared_path, "
        f"shared_files or example_trec_spec: {offenders}"
    )


def test_the_scan_finds_each_way_around_conftest() -> None:
    """What the regression looked like, and its fix: only the fix passes."""
    example_files = example_files_reading_shared_data()
    ways_around = [
        'evaluate_spec(load_spec(EXAMPLE / "trec" / "bvtest-dl-hard.yaml"))',
        'run = ROOT.parent / "shared/data" / "dl_hard"',
        'qrels = Path("../shared/data/dl_hard")',
        "from conftest import SHARED_DATA",
        'runs = sorted((SHARED_DATA / "dl_hard").glob("*.gz"))',
        'folder = os.environ["BVTEST_SHARED_DATA"]',
    ]
    for source in ways_around:
        assert reaches_shared_data(source, example_files), source
    fixed = 'evaluate_spec(load_spec(example_trec_spec()))\nqrels = shared_path("dl_hard", "dataset")'
    assert reaches_shared_data(fixed, example_files) == []
