"""The project's own checks, run by the test command: the linter over the package and its tests, the type
checker over the groups it is configured for, and the guide built as a site with every link checked."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(*command, timeout=300):
    return subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_ruff_finds_nothing_in_the_package_the_tests_and_the_tools():
    done = run("ruff", "check", "mockserver", "tests", "bench", "deploy", "examples")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_the_groups_it_checks():
    done = run("mypy")
    assert done.returncode == 0 and "Success" in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(not (BIN / "mkdocs").exists(), reason="mkdocs is not installed in this environment")
def test_the_guide_builds_strictly(tmp_path):
    """mkdocs build --strict: a broken link between pages, a missing page of the nav or a bad anchor fails."""
    done = run("mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    shutil.rmtree(tmp_path / "site")
