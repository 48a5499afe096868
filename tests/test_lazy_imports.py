"""What starting up imports: `bvtest --help` and loading the plugin import no part of the pipeline, and a
gate whose runs are all cached never loads scipy.stats or pytrec_eval (each costs a large part of a second).
pytrec_eval is not even loaded to evaluate AP, nDCG, P, R and RR (the columnar path computes them)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
HEAVY = ("numpy", "scipy", "pytrec_eval", "ir_measures", "yaml", "matplotlib", "pandas", "ir_datasets")


def imported_after(code: str, cwd: Path) -> set[str]:
    """The top-level packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}})))"
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, check=True)
    return set(json.loads(finished.stdout.strip().splitlines()[-1]))


def test_help_and_the_plugin_import_no_part_of_the_pipeline(tmp_path: Path) -> None:
    code = (
        "import contextlib, io\nfrom pytest_bvtest import cli, plugin\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n    cli.main(['--help'])"
    )
    assert not imported_after(code, tmp_path).intersection(HEAVY)


def test_a_pytest_session_without_specs_imports_no_part_of_the_pipeline(tmp_path: Path) -> None:
    """The plugin loads in every pytest session of a project: one without specs pays nothing for it, to its very end
    (the gate ids of its items imported the gating core, numpy and scipy: 0.4 s more per session; then the terminal
    summary imported the words, and scipy through them, in every session: 0.45 s)."""
    (tmp_path / "test_light.py").write_text("def test_nothing():\n    pass\n")
    (tmp_path / "conftest.py").write_text(
        "import json, sys\n\n"
        "def pytest_unconfigure(config):\n"
        "    with open('modules.json', 'w') as out:\n"
        "        json.dump(sorted(sys.modules), out)\n"
    )
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "test_light.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert finished.returncode == 0, finished.stdout
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert not {name.split(".")[0] for name in modules}.intersection(HEAVY)
    assert not [name for name in modules if name.startswith(("pytest_bvtest.report", "pytest_bvtest.stats"))]


def test_a_gate_with_every_run_cached_loads_neither_scipy_stats_nor_pytrec_eval(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))
    evaluate = (
        "from pytest_bvtest.judging.pipeline import evaluate_spec\n"
        "from pytest_bvtest.spec.reader import load_spec\n"
        "evaluate_spec(load_spec('bvtest.yaml'))"
    )
    cold = imported_after(evaluate, project)
    assert list((project / ".bvtest_cache").rglob("*.json"))  # the first evaluation filled the cache
    # the example's measures (nDCG@10, AP) come from the columnar path: even a cold gate needs no pytrec_eval
    assert "pytrec_eval" not in cold
    # pandas is read only when a DataFrame is given, ir_datasets only for `qrels: irds:<id>`
    assert not {"pandas", "ir_datasets"} & cold
    finished = subprocess.run(
        [sys.executable, "-c", evaluate + "\nimport sys\nprint('scipy.stats' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=project,
        check=True,
    )
    assert finished.stdout.strip().splitlines()[-1] == "False"
    assert "pytrec_eval" not in imported_after(evaluate, project)


def test_evaluate_imports_only_what_evaluating_needs(tmp_path: Path) -> None:
    """`bvtest evaluate` of AP and nDCG@10 reads and scores runs: no statistics, no spec reader, no numpy.ma."""
    code = (
        "import contextlib, io\nfrom pytest_bvtest import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    cli.main(['evaluate', '--mean', '--qrels', {str(EXAMPLE / 'eval' / 'qrels.txt')!r}, '-m', 'AP', '-m', "
        f"'nDCG@10', {str(EXAMPLE / 'runs' / 'production.run')!r}])\n"
        "import sys\nprint(json.dumps(sorted(sys.modules)))"
    )
    finished = subprocess.run(
        [sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    modules = set(json.loads(finished.stdout.strip().splitlines()[-1]))
    assert "pytest_bvtest.scoring.matrix" in modules  # it did evaluate
    unneeded = {"scipy", "yaml", "pytrec_eval", "numpy.ma", "pytest_bvtest.spec.reader"}
    assert not modules.intersection(unneeded) and not any(name.startswith("pytest_bvtest.stats") for name in modules)
