"""A clean checkout and a fresh virtual environment, for the tests that install pytest-bvtest as a user would.

The fresh environment has no pytest-bvtest, but sees this environment's other packages (numpy, scipy, pytest,
pip, ...) through a folder of links, so that installing a wheel or the action's checkout into it resolves the
declared dependencies against installed ones, with no package index and no download of numpy or scipy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Entries of this environment's site-packages that are (or load) the editable pytest-bvtest under test.
_OWN_ENTRIES = ("pytest_bvtest", "__editable__", "_pytest_bvtest")


def tracked_copy(destination: Path) -> Path:
    """The repository's tracked files as they are in the work tree (what a checkout of this commit would hold,
    with its uncommitted edits), copied to ``destination``; skips the test outside a git work tree."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if listing.returncode != 0:
        pytest.skip("not a git work tree: no checkout to copy")
    for name in filter(None, listing.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted in the work tree but not yet in the index is left out
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def fresh_environment(folder: Path) -> Path:
    """A new virtual environment in ``folder`` whose only packages are links to this environment's, less
    pytest-bvtest and ``.pth`` start-up files; returns its Python interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    view = folder / "dependencies"
    view.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.startswith(_OWN_ENTRIES) or entry.suffix == ".pth":
            continue
        (view / entry.name).symlink_to(entry)
    python = folder / "venv" / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        cwd=folder,
    ).stdout.strip()
    Path(site, "dependencies.pth").write_text(f"{view}\n", encoding="utf-8")
    # run outside the repository: ``python -c`` puts its working directory first on sys.path
    unimportable = subprocess.run(
        [str(python), "-c", "import pytest_bvtest"], capture_output=True, check=False, cwd=folder
    )
    assert unimportable.returncode != 0, "the fresh environment must not see the pytest-bvtest under test"
    return python
