"""What a client team's tests look like with the mock's pytest plugin.

Installing the package registers the plugin (entry point `pytest11`); it brings one
fixture, `sandbox`: a mock started once per session (in-process, manual clock),
seen by each test through a sandbox of its own, made fresh from the fixtures before the
test and deleted after it (so the suite may run in parallel: `pytest -n 2`). No conftest is
needed and nothing of the mock's internals is imported: the client under test talks
HTTP to `sandbox.url`, and the test drives the mock through the fixture (`mockserver`, its
name before, still works for a release):

    sandbox.url, sandbox.token("admin"|"read"|"write"|"deploy")
    sandbox.advance(seconds)                    move the mock's clock
    sandbox.scenario(name, yaml_text)           script failures
    sandbox.assert_called(operation=..., times=1), sandbox.assert_not_called(...)
    sandbox.calls(**filters), sandbox.deliveries(), sandbox.mint_token(scopes)
    sandbox.scenarios()                         the active scenarios

Run alone with `pytest examples/python` (add `-n 2` for two pytest-xdist workers), or
against a mock that is already running with `--mockserver-url http://host:port` (with
`--mockserver-control-token` when it has one, and `--mockserver-sandbox-prefix $CI_JOB_ID`
when several jobs share it).
"""

import httpx
import pytest

# The mock's own suite runs this folder too: its marker for tests with a server (the plugin's mock listens on a
# loopback port). A team's suite needs no marker.
pytestmark = pytest.mark.server


class PlatformClient:
    """A small stand-in for the team's own API client: the code these tests exercise."""

    def __init__(self, base_url, token):
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Token {token}"}, timeout=10)

    def close(self):
        self.http.close()

    def _get(self, path):
        reply = self.http.get(path)
        reply.raise_for_status()
        return reply.json()

    def find_application(self, name):
        """Walk organization -> projects -> environments -> applications to the one named `name`."""
        org = self._get("/organization")
        for project in self._get(f"/organization/{org['id']}/project")["results"]:
            for env in self._get(f"/project/{project['id']}/environment")["results"]:
                for app in self._get(f"/environment/{env['id']}/application")["results"]:
                    if app["name"] == name:
                        return app
        raise LookupError(name)

    def deploy(self, app_id):
        reply = self.http.post(f"/application/{app_id}/deploy", json={})
        reply.raise_for_status()
        return reply.json()

    def state(self, app_id):
        return self._get(f"/application/{app_id}/status")["state"]


@pytest.fixture
def platform(sandbox):
    client = PlatformClient(sandbox.url, sandbox.token("admin"))
    yield client
    client.close()


@pytest.fixture
def web(platform):
    """The fixture application `web` of the default mock data."""
    return platform.find_application("web")


BUILD_FAILS = """\
name: build-fails
rules:
  - name: build-breaks
    match: {operation: deployApplication}
    effect:
      deployment: {fail_at: BUILD, state: BUILD_ERROR}
"""

STATUS_DOWN = """\
name: status-down
rules:
  - match: {operation: getApplicationStatus, first: 1}
    effect: {status: 500, message: status backend unavailable}
"""


def test_deploy_reaches_deployed_once_time_passes(sandbox, platform, web):
    request = platform.deploy(web["id"])
    assert request["status"] == "QUEUED"
    assert platform.state(web["id"]) == "DEPLOYMENT_QUEUED"
    sandbox.advance(60)
    assert platform.state(web["id"]) == "DEPLOYED"
    sandbox.assert_called(operation="deployApplication", times=1)
    sandbox.assert_not_called(operation="stopApplication")


def test_read_only_token_cannot_deploy(sandbox, web):
    reader = PlatformClient(sandbox.url, sandbox.token("read"))
    with pytest.raises(httpx.HTTPStatusError) as refused:
        reader.deploy(web["id"])
    reader.close()
    assert refused.value.response.status_code == 403
    sandbox.assert_called(operation="deployApplication", status="403", times=1)
    sandbox.assert_not_called(operation="deployApplication", status="2xx")


def test_minted_deploy_token_can_deploy(sandbox, web):
    deployer = PlatformClient(sandbox.url, sandbox.mint_token(scopes=["Deploy"]))
    assert deployer.deploy(web["id"])["status"] == "QUEUED"
    deployer.close()


def test_client_sees_a_failed_build(sandbox, platform, web):
    sandbox.scenario("build-fails", BUILD_FAILS)
    platform.deploy(web["id"])
    sandbox.advance(60)
    assert platform.state(web["id"]) == "BUILD_ERROR"
    sandbox.assert_called(operation="deployApplication", scenario="build-fails/build-breaks", times=1)


def test_client_gets_the_scripted_error_then_recovers(sandbox, platform, web):
    sandbox.scenario("status-down", STATUS_DOWN)
    with pytest.raises(httpx.HTTPStatusError) as failed:
        platform.state(web["id"])
    assert failed.value.response.status_code == 500
    assert failed.value.response.json()["message"] == "status backend unavailable"
    assert platform.state(web["id"]) == "DEPLOYED"


def test_failed_assertion_says_what_was_expected_and_what_happened(sandbox, platform, web):
    platform.deploy(web["id"])
    with pytest.raises(AssertionError) as failure:
        sandbox.assert_called(operation="deployApplication", times=2)
    message = str(failure.value)
    assert "expected count 2" in message
    assert "found 1" in message
    assert f"POST /application/{web['id']}/deploy -> 202 (deployApplication)" in message


def test_failed_not_called_assertion_lists_the_offending_call(sandbox, platform, web):
    platform.deploy(web["id"])
    with pytest.raises(AssertionError) as failure:
        sandbox.assert_not_called(operation="deployApplication")
    assert "matched: #" in str(failure.value)
    assert "deployApplication" in str(failure.value)


def test_each_test_starts_from_a_clean_mock(sandbox, platform):
    """Last in the module: the tests above made calls and activated scenarios; none is left."""
    assert sandbox.calls() == []
    assert sandbox.scenarios() == []
    assert platform.find_application("web")["name"] == "web"
    assert len(sandbox.calls()) > 0
