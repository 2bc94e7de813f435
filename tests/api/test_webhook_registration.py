"""Webhook targets through the API and the fixtures: a 400 naming body.target_url for a target the platform
would not take, or a link-local or metadata one (unless --webhook-allow-link-local); loopback stays allowed.
Deleting a webhook ends its deliveries still to be attempted at once.
"""

import shutil
import time

import httpx
import pytest
from starlette.testclient import TestClient
from support import ROOT
from support.cli import run
from support.ids import ADMIN, APP, ORG
from support.receiver import Silent

from mockserver.core.errors import ApiError
from mockserver.world.fixtures import FixtureError, read_fixtures

WEBHOOKS = f"/organization/{ORG}/webhook"
REFUSED = [
    ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "169.254.169.254 is a cloud metadata "
     "service's address (--webhook-allow-link-local allows it)"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254 is a cloud metadata service's address"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal names a cloud metadata "
     "service"),
    ("http://169.254.10.20:8080/hook", "169.254.10.20 is a link-local address"),
    ("http://[fe80::1]/hook", "fe80::1 is a link-local address"),
]
MALFORMED = [
    ("http://hooks.acme.example:99999/x", "port '99999' is not a port a receiver can listen on (1-65535)"),
    ("http://hooks.acme.example:0/x", "port '0' is not a port a receiver can listen on (1-65535)"),
    ("http://exa mple.com/", "'exa mple.com' is not a host name"),
    ("http://bad_host!/", "'bad_host!' is not a host name"),
    ("http://0x7f000001/", "'0x7f000001' is not a host name"),
]


def hook(target_url, **fields):
    return {"target_url": target_url, "events": ["DEPLOYMENT_STARTED"], **fields}


def refused(reply, problem):
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert body["message"] == f"body.target_url: {problem}" or problem in body["message"], body
    assert body["details"][0]["location"] == "body.target_url"
    return body


@pytest.mark.parametrize("url, problem", REFUSED + MALFORMED)
def test_a_target_the_platform_would_not_take_is_a_400_naming_the_field(client, url, problem):
    refused(client.post(WEBHOOKS, json=hook(url)), problem)
    assert all(item["target_url"] != url for item in client.get(WEBHOOKS).json()["results"])


@pytest.mark.parametrize("url, problem", REFUSED[:2] + MALFORMED[:2])
def test_an_edit_to_such_a_target_is_a_400_and_leaves_the_webhook_as_it_was(client, url, problem):
    made = client.post(WEBHOOKS, json=hook("https://hooks.acme.example/ok")).json()
    refused(client.put(f"{WEBHOOKS}/{made['id']}", json=hook(url)), problem)
    assert client.get(f"{WEBHOOKS}/{made['id']}").json()["target_url"] == "https://hooks.acme.example/ok"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://[::1]:8080/hook", "http://localhost:3000/h",
                                 "http://receiver:8080/hook", "http://10.1.2.3/hook", "http://172.18.0.3:80/h"])
def test_loopback_and_private_targets_are_accepted(client, url):
    reply = client.post(WEBHOOKS, json=hook(url))
    assert reply.status_code == 201, reply.text


def test_the_option_allows_link_local_and_metadata_targets_but_not_malformed_ones(make_server):
    with TestClient(make_server(webhook_allow_link_local=True), base_url="http://mock", headers=ADMIN) as client:
        for url, _ in REFUSED:
            assert client.post(WEBHOOKS, json=hook(url)).status_code == 201, url
        for url, problem in MALFORMED:
            refused(client.post(WEBHOOKS, json=hook(url)), problem)


# ---------------------------------------------------------------- fixtures
def fixtures_with(tmp_path, target_url):
    folder = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", folder)
    (folder / "hooks.yaml").write_text(f"organizations:\n  - id: {ORG}\n    name: Acme\n    webhooks:\n"
                                       f"      - {{target_url: '{target_url}', events: [DEPLOYMENT_STARTED]}}\n")
    return folder


def test_a_fixture_webhook_with_a_malformed_target_is_a_fixture_problem(tmp_path, spec):
    with pytest.raises(FixtureError) as problem:
        read_fixtures(fixtures_with(tmp_path, "http://hooks.acme.example:99999/x"), spec)
    assert "webhooks.target_url: port '99999' is not a port a receiver can listen on (1-65535)" in str(problem.value)
    assert "does not match" not in str(problem.value)                   # not the pattern, a regex of 900 characters


def test_a_fixture_webhook_to_a_metadata_address_stops_the_start_unless_the_option_allows_it(tmp_path, make_server):
    folder = fixtures_with(tmp_path, "http://169.254.169.254/latest/meta-data/")
    with pytest.raises(ApiError, match="body.target_url: 169.254.169.254 is a cloud metadata service's address"):
        make_server(fixtures=folder)
    server = make_server(fixtures=folder, webhook_allow_link_local=True)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        urls = [item["target_url"] for item in client.get(WEBHOOKS).json()["results"]]
    assert "http://169.254.169.254/latest/meta-data/" in urls


# ---------------------------------------------------------------- deleting a webhook
@pytest.mark.server
def test_deleting_a_webhook_ends_its_queued_deliveries_at_once(live_server):
    """A receiver that never answers: 4 attempts in flight, the rest waiting in its lane (a lane like that took
    hours to drain). Deleted, the webhook's waiting deliveries are FAILED at once, those in flight are not
    retried, and nothing more is sent."""
    from mockserver.world.webhooks import LANE_CONNECTIONS, REPLY_TIMEOUT
    mock, hanging = live_server("--clock", "manual"), Silent()
    try:
        with httpx.Client(base_url=mock.url, headers=ADMIN, timeout=10) as http:
            made = http.post(WEBHOOKS, json=hook(f"{hanging.url}/hook", events=["DEPLOYMENT_STARTED",
                                                                                  "DEPLOYMENT_SUCCEEDED"]))
            assert made.status_code == 201, made.text
            for _ in range(10):                                  # 20 deliveries
                assert http.post(f"/application/{APP}/deploy", json={}).status_code == 202
                assert http.post("/_mock/clock/advance", json={"seconds": 9}).status_code == 200
            deadline = time.monotonic() + 5
            while hanging.open_connections() < LANE_CONNECTIONS and time.monotonic() < deadline:
                time.sleep(0.02)
            assert http.delete(f"{WEBHOOKS}/{made.json()['id']}").status_code == 204
            found = http.get("/_mock/webhooks/deliveries").json()["results"]
            cancelled = [d for d in found if d["status"] == "FAILED"
                         and d["attempts"][-1]["error"] == "not attempted: its webhook was deleted"]
            assert len(found) == 20 and len(cancelled) >= 20 - LANE_CONNECTIONS, found
            time.sleep(REPLY_TIMEOUT + 1)                        # the attempts in flight time out ...
            assert http.post("/_mock/clock/advance", json={"seconds": 600}).status_code == 200
            time.sleep(0.5)
            found = http.get("/_mock/webhooks/deliveries").json()["results"]
            assert all(d["status"] == "FAILED" and d["next_attempt_at"] is None for d in found), found
            assert hanging.accepted == LANE_CONNECTIONS          # ... and are not retried
            assert http.get("/_mock/health").json()["status"] == "ok"
    finally:
        hanging.stop()


def test_mockserver_check_refuses_a_metadata_target_in_the_fixtures_unless_given_the_option(tmp_path):
    folder = fixtures_with(tmp_path, "http://[fd00:ec2::254]/latest/meta-data/")
    refused_check = run("check", "--fixtures", str(folder))
    assert refused_check.returncode == 1
    assert "fixtures: body.target_url: fd00:ec2::254 is a cloud metadata service's address" in refused_check.stderr
    allowed = run("check", "--fixtures", str(folder), "--webhook-allow-link-local")
    assert allowed.returncode == 0, allowed.stderr
