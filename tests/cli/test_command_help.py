"""The command line says what each command takes and where a value came from: `serve --help` speaks of no parity
option, `record --help` and `parity --help` show what they require as required, `mockserver --help` lists every
command; a port set by PORT (or HOST, UVICORN_*) is named at the start and when it is busy; a `--har` file in a
folder that does not exist is refused in one line; and `mockserver usage` reports what a running mock's tests
never used."""

import json
import os
import socket
import subprocess
import sys

import httpx
import pytest
from support import ROOT
from support.cli import one_line, run
from support.http import free_port, wait_for
from support.ids import ADMIN

FLAKY = {"name": "flaky", "rules": [
    {"name": "orgs-fail", "match": {"operation": "getOrganization"}, "effect": {"status": 503}},
    {"name": "never-used", "match": {"operation": "deleteProject"}, "effect": {"status": 500}}]}


def usage_block(text):
    return text.split("\n\n")[0]


def test_each_command_help_speaks_of_its_own_options_and_shows_what_it_requires():
    serve = run("serve", "--help").stdout
    assert "parity" not in serve.lower() and "--upstream URL" in serve
    assert "[--upstream URL]" in usage_block(serve)                      # optional when serving
    record = run("record", "--help").stdout
    assert "[--upstream URL]" not in usage_block(record) and " --upstream URL " in usage_block(record)
    assert "base URL of the real platform, required (or MOCKSERVER_UPSTREAM)" in " ".join(record.split())
    assert "parity" not in record.lower()
    parity = usage_block(run("parity", "--help").stdout)
    assert " --upstream URL" in parity and "[--upstream URL]" not in parity
    assert " --token TOKEN" in parity and "[--token TOKEN]" not in parity
    top = run("--help").stdout
    for command in ("serve", "check", "export", "usage", "record", "parity", "mcp"):
        assert f"    {command} " in top, command


def test_record_still_takes_its_required_upstream_from_the_variable():
    """Shown as required, the upstream may still come from MOCKSERVER_UPSTREAM: the check is the command's."""
    assert "record needs --upstream" in one_line(run("record", "--port", "0").stderr)
    refused = run("record", "--port", "0", "--har", "/nonexistent-folder-of-a-typo/s.har",
                  env={"MOCKSERVER_UPSTREAM": "http://127.0.0.1:9"})
    assert refused.returncode == 2
    assert one_line(refused.stderr) == ("mockserver: --har /nonexistent-folder-of-a-typo/s.har: the folder "
                                        "/nonexistent-folder-of-a-typo does not exist: make it first, or give a "
                                        "file in a folder that exists")
    assert not os.path.exists("/nonexistent-folder-of-a-typo")


@pytest.mark.server
def test_a_busy_port_set_by_a_variable_names_the_variable():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for variable in ("PORT", "UVICORN_PORT"):
            result = run("serve", env={variable: str(port)})
            assert result.returncode == 2
            assert one_line(result.stderr).startswith(f"mockserver: port {port} (from {variable}={port}) is already "
                                                      "in use on 127.0.0.1")
        given = run("serve", "--port", str(port), env={"PORT": "1"})              # the flag wins, and is not named
        assert f"port {port} is already in use" in one_line(given.stderr)


@pytest.mark.server
def test_the_start_names_the_variables_that_chose_the_address_and_port():
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve"], cwd=ROOT, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True,
                               env={**os.environ, "PORT": str(port), "HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1"})
    try:
        first = process.stderr.readline()
        wait_for(f"http://127.0.0.1:{port}/_mock/health")          # serving: a stop is heard from now on
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert f"on http://127.0.0.1:{port}" in first, first
    assert first.rstrip().endswith("(address from HOST, port from PORT)"), first


@pytest.mark.server
def test_mockserver_usage_lists_the_rules_never_fired_and_fails_on_them_when_asked(live_server):
    server = live_server("--clock", "manual")
    assert httpx.put(f"{server.url}/_mock/sandboxes/ci-7-a", json={"scenarios": [FLAKY]}).status_code == 201
    assert httpx.get(f"{server.url}/sandbox/ci-7-a/organization", headers=ADMIN).status_code == 503
    assert httpx.delete(f"{server.url}/_mock/sandboxes/ci-7-a").status_code == 204
    listed = run("usage", "--url", server.url, "--prefix", "ci-7-")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("mockserver usage of 1 sandbox world(s) named ci-7-*: 1 of 2 scenario rule(s) "
                               "fired, 1 of ")
    assert "  rule never fired: flaky/never-used" in lines and "  operation never called: deleteProject" in lines
    assert "  operation never called: getOrganization" not in lines and not any("orgs-fail" in line for line in lines)
    failing = run("usage", "--url", server.url, "--prefix", "ci-7-", "--fail-on-unused", "--json")
    assert failing.returncode == 1 and json.loads(failing.stdout)["rules"]["never_fired"] == ["flaky/never-used"]
    clean = run("usage", "--sandbox", "default", "--fail-on-unused", env={"MOCKSERVER_URL": server.url})
    assert clean.returncode == 2 and "--url" in clean.stderr                   # run() never passes the URL on
    clean = run("usage", "--url", server.url, "--sandbox", "default", "--fail-on-unused")
    assert clean.returncode == 0 and clean.stdout.startswith("mockserver usage of sandbox default: 0 of 0")
    missing = run("usage", "--url", server.url, "--sandbox", "no-such")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "answered 404 sandbox no-such does not exist" in missing.stderr
    gone = run("usage", "--url", f"http://127.0.0.1:{free_port()}")
    assert gone.returncode == 2 and gone.stderr.startswith("mockserver usage: cannot reach")
    assert len(gone.stderr.strip().splitlines()) == 1
