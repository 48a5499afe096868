"""What a user installs: ``python -m build`` makes an sdist and, from it, a wheel; the wheel holds the package,
the files it reads at run time, the licence and the version, installs into a fresh environment with no package
index, and passes the example project's gate there."""

from __future__ import annotations

import email
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from freshenv import ROOT, fresh_environment, tracked_copy

from pytest_bvtest import __version__

pytestmark = pytest.mark.packaging


def tracked(folder: str) -> set[str]:
    """The files git tracks under ``folder`` (or would, for new ones), relative to the repository."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", folder],
        capture_output=True,
        text=True,
        check=True,
    )
    return {name for name in listing.stdout.splitlines() if (ROOT / name).is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("packaging")
    source = tracked_copy(root / "source")
    dist = root / "dist"
    # build's default: the sdist first, then the wheel from the unpacked sdist (so the sdist is complete)
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return {"root": root, "dist": dist, "wheel": wheel, "sdist": sdist}


def test_the_wheel_holds_every_module_the_run_time_data_the_licence_and_the_version(built) -> None:
    with zipfile.ZipFile(built["wheel"]) as archive:
        names = set(archive.namelist())
        dist_info = f"pytest_bvtest-{__version__}.dist-info"
        metadata = email.message_from_string(archive.read(f"{dist_info}/METADATA").decode())
        licence = archive.read(f"{dist_info}/licenses/LICENSE").decode()
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    package = tracked("pytest_bvtest")
    assert package and package <= names, sorted(package - names)
    assert "pytest_bvtest/report/schema.json" in names  # the JSON report's schema, read at run time
    assert not [name for name in names if name.startswith(("tests/", "example_project/", "docs/", "benchmarks/"))]
    assert metadata["Name"] == "pytest-bvtest" and metadata["Version"] == __version__
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    assert metadata["Author"] == "The pytest-bvtest authors" and "search quality" in metadata["Keywords"]
    assert licence == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "Copyright (c) 2026 The pytest-bvtest authors" in licence
    assert "bvtest = pytest_bvtest.plugin" in entry_points and "bvtest = pytest_bvtest.cli:main" in entry_points


def test_the_sdist_holds_the_sources_the_licence_and_the_changelog_and_no_test_that_cannot_run(built) -> None:
    """The test suite runs from a checkout: it reads the example project, the docs and conftest.py's helpers. The
    sdist carried 58 test files without them (collected from the unpacked sdist: 237 tests, 43 errors)."""
    with tarfile.open(built["sdist"]) as archive:
        top = f"pytest_bvtest-{__version__}/"
        names = {name.removeprefix(top) for name in archive.getnames()}
    wanted = tracked("pytest_bvtest") | {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"}
    assert wanted <= names, sorted(wanted - names)
    assert not [name for name in names if name.startswith("tests") or name.endswith("conftest.py")]


def test_the_wheel_installs_without_a_package_index_and_passes_the_example_gate(built) -> None:
    root = built["root"]
    python = fresh_environment(root / "env")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--find-links", str(built["dist"]), "pytest-bvtest"],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert f"Successfully installed pytest-bvtest-{__version__}" in install.stdout
    version = subprocess.run(
        [str(python.parent / "bvtest"), "--version"], capture_output=True, text=True, check=True, cwd=root
    )
    assert version.stdout.strip() == f"pytest-bvtest {__version__}"
    project = shutil.copytree(root / "source" / "example_project", root / "example_project")
    gate = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--bvtest-json", "reports/gate.json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
    )
    assert gate.returncode == 0, gate.stdout[-4000:] + gate.stderr[-4000:]
    assert f"bvtest: {__version__}" in gate.stdout  # pytest's header: the plugin loaded from the wheel
    document = json.loads((project / "reports" / "gate.json").read_text(encoding="utf-8"))
    assert document["tool"] == {"name": "pytest-bvtest", "version": __version__}
    outcomes = [gate["outcome"] for evaluation in document["evaluations"] for gate in evaluation["gates"]]
    assert document["passed"] is True and outcomes == ["OK"] * 5
    where = subprocess.run(
        [str(python), "-c", "import pytest_bvtest; print(pytest_bvtest.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    assert Path(where.stdout.strip()).is_relative_to(root / "env" / "venv"), where.stdout
