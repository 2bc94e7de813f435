"""The benchmark keeps its evidence: a named result that exists is not overwritten by a later run."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def run_bench(*args):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_a_named_result_that_exists_is_refused_before_anything_runs():
    kept = RESULTS / "floors.md"
    before = kept.read_bytes()
    done = run_bench("--out", "floors", "--runs", "1", "--seconds", "1")
    assert done.returncode != 0
    assert "floors.md exists" in done.stderr and "--force" in done.stderr
    assert "mock started" not in done.stdout          # refused before any server started
    assert kept.read_bytes() == before
