"""The recorder in front of a misbehaving upstream on 127.0.0.1: one that drips its reply a byte at a time (a
total deadline, not one per read), one that sends a small gzip that unpacks to hundreds of MiB (a bound, a
clear 502, memory kept low), and one that sends credentials in every place a caller and a platform put them:
none of them is in any file the recorder and the exports write."""

import gzip
import json
import signal
import time
import tracemalloc
import zlib

import httpx
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, ORG
from support.upstream import Dribbling, Upstream

WEBHOOK = "1c3e5a7c-9e1b-4d3f-8a5c-7e9b1d3f5a70"
CLUSTER = "c1a5e7d9-3b2f-4e6a-8d1c-9f7b5a3e1d42"


def error_of(reply, status):
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["status"] == status and set(body) >= {"status", "error", "message"}
    return body["message"]


# ---------------------------------------------------------------- a total deadline
@pytest.mark.server
def test_an_upstream_that_drips_its_reply_is_cut_at_the_total_deadline(make_server):
    upstream = Dribbling(json.dumps({"id": ORG, "name": "x" * 200}).encode(), interval=0.1)
    try:
        with TestClient(make_server(upstream=upstream.url, upstream_timeout=1.0), base_url="http://mock",
                        headers=ADMIN) as api:
            started = time.monotonic()
            reply = api.get("/organization")
            took = time.monotonic() - started
            message = error_of(reply, 504)
            assert "did not send its whole reply within 1 s (--upstream-timeout)" in message
            assert took < 2.5, took                             # each byte came in time: 21 s without a deadline
            (call,) = api.get("/_mock/calls").json()["results"]
            assert call["status"] == 504 and call["drift"][0]["kind"] == "upstream"
    finally:
        upstream.stop()


# ---------------------------------------------------------------- a bound on the unpacked size
def bomb(mebibytes):
    """A gzip body that unpacks to `mebibytes` MiB of zeros (made a MiB at a time: small here too)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    return b"".join([packer.compress(zeros) for _ in range(mebibytes)] + [packer.flush()])


@pytest.mark.server
def test_a_gzip_bomb_is_a_502_without_unpacking_it_whole(make_server):
    packed = bomb(500)
    assert len(packed) < 1024 * 1024                             # half a MiB on the wire, 500 MiB unpacked
    small = gzip.compress(b'{"results": []}')

    def answer(request):
        body = packed if "bomb" in request["path"] else small
        return 200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body
    upstream = Upstream(answer)
    try:
        with TestClient(make_server(upstream=upstream.url, upstream_max_body=8 * 1024 * 1024),
                        base_url="http://mock", headers=ADMIN) as api:
            tracemalloc.start()
            try:
                started = time.monotonic()
                reply = api.get("/organization/bomb")
                took = time.monotonic() - started
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            message = error_of(reply, 502)
            assert message == ("the upstream's reply unpacks to more than 8388608 bytes (--upstream-max-body): it is "
                               "not passed on")
            assert peak < 40 * 1024 * 1024 and took < 3, (peak, took)
            assert api.get(f"/organization/{ORG}/project").json() == {"results": []}      # below the bound
            calls = api.get("/_mock/calls").json()["results"]
            assert [call["status"] for call in calls] == [502, 200] and calls[1]["response"] == {"results": []}
    finally:
        upstream.stop()


# ---------------------------------------------------------------- credentials in every place
URL_USER, URL_PASSWORD = "url-USER-8g9h", "url-PASSWORD-6e7f"
SENT = {                                      # every credential the caller sends, by where it goes
    "bearer": "caller-BEARER-7f3e9a1c2b4d", "x-api-key": "apikey-HEADER-5c1d2e3f",
    "x-custom-secret": "custom-SECRET-header-9a8b", "cookie": "cookie-SESSION-4d5e",
    "access_token": "query-ACCESS-token-1a2b", "api_key": "query-API-key-3c4d",
    "body token": "body-TOKEN-2s3t", "hook password": "hook-PASSWORD-2x3y", "registry": "registry-PASSWORD-9z0a",
    "mock api key": "mock-APIKEY-header-4b5c", "mock query": "mock-QUERY-token-6d7e",
}
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZWNvcmRlci10ZXN0In0.c2lnbmF0dXJlLW9mLXRoZS1qd3Q"
REPLIED = {                                   # every credential the platform sends back
    "header": "reply-AUTH-token-5u6v", "cookie": "reply-COOKIE-7w8x", "token": "reply-TOKEN-1k2l",
    "api_key": "reply-APIKEY-3m4n", "access_token": "reply-ACCESS-5o6p", "client_secret": "reply-CLIENT-secret-7q8r",
    "jwt": JWT, "secret": "reply-SECRET-9i0j",
}


def platform_answer(request):
    """Replies of the platform's shape that carry credentials in headers, fields and text."""
    hook = {"id": WEBHOOK, "created_at": "2026-01-01T00:00:00Z", "organization": {"id": ORG},
            "target_url": f"https://hook-user:{SENT['hook password']}@hooks.example/in",
            "events": ["DEPLOYMENT_STARTED"], "enabled": True, "kind": "STANDARD", "target_secret_set": True,
            "token": REPLIED["token"], "api_key": REPLIED["api_key"], "access_token": REPLIED["access_token"],
            "credentials": {"client_secret": REPLIED["client_secret"], "secret": REPLIED["secret"]},
            "description": f"signed with Bearer {JWT}"}
    body = {"results": [hook]} if request["method"] == "GET" else hook
    headers = [("Content-Type", "application/json"), ("X-Auth-Token", REPLIED["header"]),
               ("Set-Cookie", f"sid={REPLIED['cookie']}; Path=/"), ("X-RateLimit-Limit", "1000"),
               ("X-RateLimit-Remaining", "999"), ("X-RateLimit-Reset", "1900000000")]
    return (200 if request["method"] == "GET" else 201), headers, json.dumps(body).encode()


def walk_with_credentials(recorder):
    caller = {"Authorization": f"Bearer {SENT['bearer']}", "X-Api-Key": SENT["x-api-key"],
              "X-Custom-Secret": SENT["x-custom-secret"], "Cookie": f"session={SENT['cookie']}"}
    query = {"access_token": SENT["access_token"], "api_key": SENT["api_key"]}
    with httpx.Client(base_url=recorder.url, headers=caller, timeout=10) as api:
        assert api.get(f"/organization/{ORG}/webhook", params=query).status_code == 200
        made = api.post(f"/organization/{ORG}/webhook", params=query, json={
            "target_url": f"https://hook-user:{SENT['hook password']}@hooks.example/in",
            "events": ["DEPLOYMENT_STARTED"], "token": SENT["body token"]})
        assert made.status_code == 201
        registry = api.post(f"/organization/{ORG}/containerRegistry", json={
            "name": "hub", "kind": "GENERIC_CR", "url": f"https://bot:{SENT['registry']}@registry.example",
            "config": {"username": "bot", "password": SENT["registry"]}})
        assert registry.status_code == 201
        # answered by the mock itself (--except): its journal keeps no credential either
        mine = api.get("/organization", params={"access_token": SENT["mock query"]},
                       headers={**ADMIN, "X-Api-Key": SENT["mock api key"]})
        assert mine.status_code in (200, 400)
        return [api.get(f"/_mock/calls/export?format={kind}").text for kind in ("pact", "har")] + \
            [api.get("/_mock/calls").text]


@pytest.mark.server
def test_no_credential_the_caller_or_the_platform_sent_is_in_any_file_the_recorder_writes(processes, tmp_path):
    upstream = Upstream(platform_answer)
    try:
        base = upstream.url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")
        har_file, out = tmp_path / "session.har", tmp_path / "recorded"
        recorder = processes("record", "--upstream", base, "--har", str(har_file), "--fixtures-out", str(out),
                             "--except", "/organization")
        exports = walk_with_credentials(recorder)
        assert recorder.stop() in (0, -signal.SIGTERM), recorder.output
    finally:
        upstream.stop()
    assert len(upstream.requests) == 3                          # the platform got what the caller sent
    assert upstream.requests[0]["path"].endswith(f"access_token={SENT['access_token']}&api_key={SENT['api_key']}")
    written = {"HAR file": har_file.read_text(), "fixtures": (out / "recorded.yaml").read_text(),
               "pact export": exports[0], "HAR export": exports[1], "journal": exports[2],
               "recorder's output": recorder.output}
    for where, text in written.items():
        for what, credential in [*SENT.items(), *REPLIED.items(), ("url user", URL_USER),
                                 ("url password", URL_PASSWORD)]:
            assert credential not in text, f"{what} ({credential}) is in the {where}"
    assert "**redacted**" in written["HAR file"] and "**redacted**" in written["fixtures"]
    har = json.loads(written["HAR file"])
    assert all(entry["request"]["url"].startswith(f"{upstream.url}/") for entry in har["log"]["entries"])
    assert "https://hook-user:**redacted**@hooks.example/in" in written["fixtures"]      # the user stays
    journal = json.loads(written["journal"])["results"]
    assert journal[0]["headers"]["authorization"] == "Bearer ...2b4d"
    assert journal[0]["query"] == {"access_token": "**redacted**", "api_key": "**redacted**"}
    assert journal[0]["response_headers"]["x-auth-token"] == "**redacted**"


def test_fixtures_hold_only_what_the_platform_sent_and_say_what_it_did_not(tmp_path):
    from mockserver.contract.harvest import Harvest
    from mockserver.document.spec import Spec
    spec, harvest = Spec.load(), Harvest()

    def take(path, reply):
        operation, params = spec.match("GET", path)
        harvest.take(operation, params, 200, reply)
    take("/organization", {"id": ORG, "name": "Acme", "plan": "FREE", "results": []})
    take(f"/organization/{ORG}/cluster", {"results": [{"id": CLUSTER, "name": "prod", "cloud_provider": "CLOUDA",
                                                       "status": "DEPLOYED"}]})        # no region, no version
    text = harvest.document(spec)
    cluster = text[text.index(f"- id: {CLUSTER}"):text.index("tokens:")]
    assert "region" not in cluster and "version" not in cluster and "is_default" not in cluster
    assert (f"  # cluster {CLUSTER}: not sent by the platform: region, version, is_default, production: left out, "
            f"the mock fills in its own\n  - id: {CLUSTER}") in text
    (tmp_path / "recorded.yaml").write_text(text)
    from mockserver.world.fixtures import read_fixtures
    assert read_fixtures(tmp_path, spec)["organizations"][0]["clusters"][0] == {
        "id": CLUSTER, "name": "prod", "cloud_provider": "CLOUDA", "status": "DEPLOYED"}
