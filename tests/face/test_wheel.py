"""The package a client team installs: `python -m build` makes a wheel and an sdist that carry the default
fixtures, the example scenarios, the inspector page and the documents; the wheel alone, in a fresh virtual
environment and away from the source tree, runs `mockserver serve` with its embedded defaults."""

import os
import subprocess
import sys
import tarfile
import venv
import zipfile

import httpx
import pytest
from support import ROOT
from support.ids import ADMIN, ORG

pytestmark = pytest.mark.server

SHIPPED = ("mockserver/default_fixtures/organizations.yaml", "mockserver/default_fixtures/tokens.yaml",
           "mockserver/example_scenarios/build-fails.yaml", "mockserver/control/ui/index.html",
           "mockserver/control/ui/app.js", "mockserver/document/openapi.yaml", "mockserver/document/control.yaml",
           "mockserver/world/scenario.schema.json", "mockserver/client/__init__.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "BuildBackendWarning" not in done.stdout + done.stderr, "the build printed setuptools' warning page"
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return wheel, sdist


def test_the_wheel_and_the_sdist_carry_the_defaults_the_page_and_the_documents(built):
    wheel, sdist = built
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [name for name in SHIPPED if name not in names] == []
    with tarfile.open(sdist) as archive:
        inside = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for wanted in ("fixtures/tokens.yaml", "scenarios/build-fails.yaml", "mockserver/control/ui/index.html",
                   "mockserver/document/openapi.yaml", "mockserver/world/scenario.schema.json"):
        assert wanted in inside


def test_the_wheel_alone_in_a_fresh_environment_serves_the_embedded_defaults(built, tmp_path):
    wheel, _ = built
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True,
                               text=True, timeout=600, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert installed.returncode == 0, installed.stderr[-2000:]
    work = tmp_path / "elsewhere"                       # no source tree here: only what the wheel installed
    work.mkdir()
    script = ("from mockserver.client import start_local; import sys\n"
              "mock = start_local(command=sys.argv[1])\n"
              "print(mock.root, flush=True)\n"
              "sys.stdin.readline()\n"
              "mock.stop()\n")
    server = subprocess.Popen([str(python), "-c", script, str(env_dir / "bin" / "mockserver")], cwd=work,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        organization = httpx.get(f"{url}/organization", headers=ADMIN, timeout=10).json()
        assert organization["id"] == ORG and organization["name"] == "Acme"
        page = httpx.get(f"{url}/_mock/ui/", timeout=10, follow_redirects=True)
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert httpx.get(f"{url}/_mock/ui/app.js", timeout=10).status_code == 200
        assert httpx.get(f"{url}/_mock/schemas/scenario.json", timeout=10).json()["title"]
        assert httpx.get(f"{url}/openapi.json", timeout=10).json()["openapi"] == "3.0.3"
        where = subprocess.run([str(python), "-c", "import mockserver; print(mockserver.__file__)"], cwd=work,
                               capture_output=True, text=True).stdout
        assert str(env_dir) in where and str(ROOT) not in where
    finally:
        server.stdin.write("\n")
        server.stdin.flush()
        server.wait(timeout=30)
