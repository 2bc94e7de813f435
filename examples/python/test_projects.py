"""A client's project calls, written the way teams write them: mostly careful, with two paths that are not. Its
tests pass against the mock; a fault campaign finds the rest (docs/guide/campaigns.md):

    mockserver campaign --operation createProject --operation listProjects --operation editProject \\
        --fault 'status 503' --fault reset -- pytest examples/python/test_projects.py

- `project_names` reads with retries that honour Retry-After and give up after a few: it survives a 503 and a
  reset of its read;
- `create_project` retries a 503 properly, but also sends its POST again after a connection error, when the
  project may have been made already: after a reset it meets the 409 its own first write caused (misbehaved);
- `rename_project` handles no error at all: a 503 fails its test (failed).
"""

import time

import httpx
import pytest

pytestmark = pytest.mark.server

ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
RETRIES = 4


class ProjectsClient:
    def __init__(self, base_url, token):
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Token {token}"}, timeout=10)

    def close(self):
        self.http.close()

    def _with_retries(self, send):
        """A request sent again after a 429 or 503 (waiting what Retry-After says) or a connection error, at most
        RETRIES times."""
        for attempt in range(RETRIES):
            try:
                reply = send()
            except httpx.TransportError:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.2 * 2 ** attempt)
                continue
            if reply.status_code in (429, 503) and attempt < RETRIES - 1:
                time.sleep(float(reply.headers.get("Retry-After", 1)))
                continue
            reply.raise_for_status()
            return reply.json()
        raise RuntimeError("unreachable")

    def project_names(self):
        return {p["name"] for p in self._with_retries(lambda: self.http.get(f"/organization/{ORG}/project"))["results"]}

    def create_project(self, name):
        # the path that is not careful: a connection error after the POST left may mean the project was made
        return self._with_retries(lambda: self.http.post(f"/organization/{ORG}/project", json={"name": name}))

    def rename_project(self, ident, name):
        # the other one: no error handled at all
        reply = self.http.put(f"/project/{ident}", json={"name": name})
        reply.raise_for_status()
        return reply.json()


@pytest.fixture
def projects(sandbox):
    client = ProjectsClient(sandbox.url, sandbox.token("admin"))
    yield client
    client.close()


def test_a_new_project_is_listed(projects):
    made = projects.create_project("checkout")
    assert made["name"] == "checkout"
    assert "checkout" in projects.project_names()


def test_a_project_renamed_is_listed_under_its_new_name(projects):
    made = projects.create_project("billing")
    projects.rename_project(made["id"], "invoicing")
    assert "invoicing" in projects.project_names() and "billing" not in projects.project_names()
