"""Fixture problems name their file, the line and the record: a record that refers to a cluster or a container
registry its organization does not hold is reported where it refers, with the one it may have meant, every
such record in one run, before any record is created."""

import shutil

import pytest
from support import ROOT
from support.cli import run

from mockserver.world.fixtures import FixtureError, read_fixtures

CLUSTER = "c1a5e7d9-3b2f-4e6a-8d1c-9f7b5a3e1d42"
REGISTRY = "0a2c4e6f-8b0d-4f2a-9c4e-6f8b0d2f4a6c"


@pytest.fixture
def folder(tmp_path):
    copy = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", copy)
    return copy


def break_line(path, old, new, nth=1):
    """Replace the `nth` occurrence of `old` on its line; the 1-based number of that line."""
    lines = path.read_text().splitlines(keepends=True)
    seen = 0
    for number, line in enumerate(lines, 1):
        if old in line:
            seen += 1
            if seen == nth:
                lines[number - 1] = line.replace(old, new)
                path.write_text("".join(lines))
                return number
    raise AssertionError(f"{old} not in {path}")


def test_dangling_references_are_named_at_the_record_that_refers(folder, spec):
    organizations = folder / "organizations.yaml"
    cluster_line = break_line(organizations, f"cluster_id: {CLUSTER}", f"cluster_id: {CLUSTER[:-2]}99")
    registry_line = break_line(organizations, f"registry_id: {REGISTRY}", f"registry_id: {REGISTRY[:-2]}00")
    result = run("check", str(folder))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    cluster = next(line for line in lines if "cluster_id" in line)
    assert cluster.startswith(f"mockserver check: fixtures: {organizations}:{cluster_line}: organization Acme project ")
    assert f"cluster {CLUSTER[:-2]}99 not found" in cluster and f"did you mean {CLUSTER} (acme-prod-eu)?" in cluster
    registry = next(line for line in lines if "registry_id" in line)
    assert registry.startswith(f"mockserver check: fixtures: {organizations}:{registry_line}: organization Acme ")
    assert f"container registry {REGISTRY[:-2]}00 not found" in registry and f"did you mean {REGISTRY}" in registry
    assert "mockserver check: 2 problem(s)" in result.stderr
    with pytest.raises(FixtureError) as refused:                    # serve and sandboxes read them the same way
        read_fixtures(folder, spec)
    assert len(refused.value.problems) == 2


def test_an_entry_of_the_wrong_shape_is_named_with_its_line(folder, spec):
    tokens = folder / "tokens.yaml"
    line = break_line(tokens, "Admin", "Admn")
    with pytest.raises(FixtureError) as refused:
        read_fixtures(folder, spec)
    [problem] = refused.value.problems
    assert problem.startswith(f"{tokens}:{line}: tokens[admin] unknown scope 'Admn'"), problem
