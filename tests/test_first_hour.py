"""A new user's first hour, as they meet it: `GET /` and the start line say where everything is, the
command line names what is wrong (an environment variable's value, a busy port) and has help for every
option, `mockserver export` makes the folder it writes to, the plugin knows the tokens by every name the
README and the fixtures use, the container smoke says when it skipped, and the inspector shows the
user's own activity first and its counts at 1280 px. Run against `mockserver serve` processes."""

import os
import socket
import subprocess
import sys

import httpx
import pytest
from conftest import ADMIN, APP, CONTAINER, ORG, ROOT, free_port

SKIPPED = 77


def run(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def start_lines(server):
    """The lines `serve` printed at its start (they come before it answers, so they are there to read)."""
    lines = []
    while not lines or not lines[-1].strip().startswith("control API"):
        line = server.process.stderr.readline().decode()
        assert line, f"the start lines ended early: {lines}"
        lines.append(line.rstrip("\n"))
    return lines


# ---------------------------------------------------------------- where everything is
def test_the_home_page_links_to_the_inspector_the_documents_and_the_quick_start(live_server):
    server = live_server("--clock", "manual")
    reply = httpx.get(f"{server.url}/", timeout=10)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/json")
    page = reply.json()
    assert page["links"]["inspector"] == "/_mock/ui" and page["links"]["api_document"] == "/openapi.json"
    assert page["links"]["control_document"] == "/_mock/openapi.json"
    for link in page["links"].values():                           # every link answers
        assert httpx.get(f"{server.url}{link}", timeout=10).status_code == 200, link
    start = page["quick_start"]
    assert start["organization"] == ORG and start["tokens"]["admin"]["token"] == "mock-admin-token"
    assert "README.md" in start["guide"]
    first = start["try"][0]                                       # the first call it suggests works as written
    assert first == f"curl -H 'Authorization: Token mock-admin-token' {server.url}/organization"
    assert httpx.get(f"{server.url}/organization", headers=ADMIN).status_code == 200
    html = httpx.get(f"{server.url}/", headers={"Accept": "text/html,*/*"}, timeout=10)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert 'href="/_mock/ui"' in html.text and 'href="/openapi.json"' in html.text
    assert 'href="/_mock/openapi.json"' in html.text and 'id="quick-start"' in html.text
    boxed = httpx.get(f"{server.url}/sandbox/team-a/", timeout=10).json()     # links stay in the sandbox
    assert boxed["sandbox"] == "team-a" and boxed["links"]["inspector"] == "/sandbox/team-a/_mock/ui"
    refused = httpx.post(f"{server.url}/", timeout=10)
    assert refused.status_code == 405 and refused.json()["status"] == 405 and refused.headers["allow"] == "GET"


def test_behind_a_proxy_the_home_page_suggests_the_address_the_client_used(client):
    """The mock reads no proxy headers anywhere else; the home page's quick start names the scheme and host
    a proxy says the client used (only http or https; anything else falls back to the request's own)."""
    page = client.get("/", headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": "mock.ci.example:8443"}).json()
    assert page["quick_start"]["try"][0].endswith("https://mock.ci.example:8443/organization")
    odd = client.get("/", headers={"X-Forwarded-Proto": "javascript", "Host": "mock"}).json()
    assert odd["quick_start"]["try"][0].endswith(" http://mock/organization")


def test_the_home_page_hides_the_tokens_of_a_mock_with_a_control_token(live_server):
    server = live_server("--control-token", "ctl-secret-1")
    page = httpx.get(f"{server.url}/", timeout=10).json()
    assert all(item["token"] is None for item in page["quick_start"]["tokens"].values())
    assert "mock-admin-token" not in httpx.get(f"{server.url}/", headers={"Accept": "text/html"}).text


def test_the_start_line_prints_the_urls_to_open_and_each_answers(live_server):
    server = live_server("--clock", "manual")
    lines = start_lines(server)
    assert lines[0].startswith("mockserver ") and f"on {server.url}" in lines[0]
    assert any(line.strip() == f"world        the fixtures in {ROOT / 'fixtures'}" for line in lines)
    urls = {line.split()[-1] for line in lines[2:]}
    assert urls == {f"{server.url}/", f"{server.url}/_mock/ui", f"{server.url}/openapi.json",
                    f"{server.url}/_mock/openapi.json"}
    for url in urls:
        assert httpx.get(url, timeout=10).status_code == 200, url


# ---------------------------------------------------------------- the command line names what is wrong
def test_a_busy_port_is_named_with_a_hint_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run("serve", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert f"port {port} is already in use on 127.0.0.1" in result.stderr
    assert "--port" in result.stderr and "MOCKSERVER_PORT" in result.stderr


@pytest.mark.parametrize("variable, value", [("MOCKSERVER_CLOCK", "Manual"), ("MOCKSERVER_PORT", "eighty"),
                                             ("MOCKSERVER_SAVE_INTERVAL", "-1"), ("MOCKSERVER_FRESH", "perhaps")])
def test_a_bad_environment_value_is_named_with_its_variable(variable, value):
    port = [] if variable == "MOCKSERVER_PORT" else ["--port", str(free_port())]
    result = run("serve", *port, env={variable: value})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert variable in result.stderr and value in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_every_option_of_every_command_has_help_text():
    from mockserver.cli.main import OPTIONS
    for command in ("serve", "check", "record", "parity"):
        text = run(command, "--help").stdout
        for option in OPTIONS:
            if command in option.commands:
                assert len(option.help.split()) >= 3, option.flag
                assert option.flag in text
    text = run("serve", "--help").stdout
    assert "address to listen on" in text and "port to listen on" in text


# ---------------------------------------------------------------- export, the plugin, the container smoke
def test_export_makes_the_folder_it_writes_to(live_server, tmp_path):
    server = live_server("--clock", "manual")
    target = tmp_path / "my-fixtures" / "nested" / "state.yaml"
    result = run("export", "--url", server.url, "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert target.is_file() and "organizations:" in target.read_text()
    assert run("check", str(target.parent)).returncode == 0


def test_the_plugin_knows_the_tokens_by_every_name_and_lists_them_when_wrong(live_server):
    from mockserver.pytest_plugin import MockServerClient
    server = live_server("--clock", "manual")
    mock = MockServerClient(server.url)
    try:
        deploy = f"{server.url}/application/{APP}/deploy"
        assert httpx.post(deploy, json={}, headers=mock.headers("deployer")).status_code == 202
        # the fixtures' name, the plugin's old key and the scope are one token
        assert mock.headers("deployer") == mock.headers("deploy") == mock.headers("Deploy")
        for name in ("reader", "read", "Read"):
            assert httpx.get(f"{server.url}/organization", headers=mock.headers(name)).status_code == 200
            assert httpx.post(deploy, json={}, headers=mock.headers(name)).status_code == 403
        assert mock.headers("writer") == mock.headers("write") == {"Authorization": "Token mock-write-token"}
        assert mock.headers() == mock.headers("admin") == {"Authorization": "Token mock-admin-token"}
        assert mock.tokens["deployer"] == "mock-deploy-token"
        with pytest.raises(KeyError) as wrong:
            mock.headers("deployr")
        message = str(wrong.value)
        assert "'deployr'" in message and all(name in message for name in ("admin", "reader", "writer", "deployer"))
    finally:
        mock.http.close()


def test_the_container_smoke_says_it_skipped_and_exits_77(tmp_path):
    script = ROOT / ".ci" / "container-smoke"
    skipped = subprocess.run([str(script)], capture_output=True, text=True, timeout=30,
                             env={**os.environ, "CONTAINER_SMOKE_TOOL": str(tmp_path / "not-there.sh")})
    assert skipped.returncode == SKIPPED and "SKIPPED" in skipped.stderr and "not-there.sh" in skipped.stderr
    tool = tmp_path / "tool.sh"                                   # with a tool, its own status is the result
    for code in (0, 3):
        tool.write_text(f"exit {code}\n")
        ran = subprocess.run([str(script)], capture_output=True, text=True, timeout=30,
                             env={**os.environ, "CONTAINER_SMOKE_TOOL": str(tool)})
        assert ran.returncode == code
    made = subprocess.run(["make", "-s", "container-smoke"], cwd=ROOT, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "CONTAINER_SMOKE_TOOL": str(tmp_path / "not-there.sh")})
    assert made.returncode != 0 and "SKIPPED" in made.stderr


# ---------------------------------------------------------------- the inspector: the user's own activity first
def test_deployments_list_the_users_own_lanes_before_the_fixtures(live_server):
    server = live_server("--clock", "manual")
    with httpx.Client(base_url=server.url, headers=ADMIN, timeout=10) as http:
        before = http.get("/_mock/deployments").json()["results"]
        production = next(g for g in before if any(lane["id"] == APP for lane in g["lanes"]))
        assert before[0]["id"] != production["id"]               # the fixtures' lanes come first by name
        assert production["lanes"][0]["id"] != CONTAINER
        assert http.post(f"/container/{CONTAINER}/deploy", json={}).status_code == 202
        after = http.get("/_mock/deployments").json()["results"]
        assert after[0]["id"] == production["id"]
        assert after[0]["lanes"][0]["id"] == CONTAINER
        assert http.post(f"/application/{APP}/deploy", json={}).status_code == 202
        latest = http.get("/_mock/deployments").json()["results"][0]
        assert [lane["id"] for lane in latest["lanes"][:2]] == [APP, CONTAINER]     # the most recent first
        assert len(after) == len(before)                          # the fixtures' lanes are still all there
