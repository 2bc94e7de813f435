"""A pact of a journal holding a 204 (a successful DELETE): the interaction has no reply body, written by the
export and by the pytest plugin's pact writer, and the Pact engine verifies it against a mock."""

import json

import httpx
import pytest
from pact import Verifier
from support.ids import ADMIN, APP, ENV, PROJECT

from mockserver.client import Client

LOG_LEVEL = "6e8a0c2d-4f6b-4d8e-8a0c-2d4f6b8e0a2c"        # project variable of the fixtures


def pact_of(client, **params):
    reply = client.get("/_mock/calls/export", params={"format": "pact", "consumer": "console", **params})
    assert reply.status_code == 200, reply.text
    return reply.json()


def deletes(pact):
    return [item for item in pact["interactions"] if item["request"]["method"] == "DELETE"]


@pytest.mark.parametrize("version", ["4", "3"])
def test_a_pact_holds_a_successful_delete_with_no_reply_body(client, version):
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    pact = pact_of(client, spec=version)
    (item,) = deletes(pact)
    assert item["request"] == {"method": "DELETE", "path": f"/project/{PROJECT}"}
    assert item["response"] == {"status": 204}                       # no body, no Content-Type
    assert item["description"] == f"deleteProject DELETE /project/{PROJECT} -> 204"
    assert {"name": "project {id} exists", "params": {"id": PROJECT}} in item["providerStates"]
    assert pact["metadata"]["pactSpecification"]["version"] == ("4.0" if version == "4" else "3.0.0")
    assert client.get("/_mock/calls/export", params={"format": "har"}).status_code == 200


def test_a_pact_holds_deletes_of_every_kind_among_other_calls(client):
    made = client.post(f"/application/{APP}/environmentVariable", json={"key": "GONE", "value": "soon"})
    assert made.status_code == 201, made.text
    assert client.get(f"/application/{APP}").status_code == 200
    for path in (f"/application/{APP}/environmentVariable/{made.json()['id']}",
                 f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", f"/application/{APP}", f"/environment/{ENV}"):
        assert client.delete(path).status_code == 204, path
    assert client.delete(f"/application/{APP}").status_code == 404                  # gone: a reply with a body
    pact = pact_of(client)
    assert [item["response"] for item in deletes(pact) if item["response"]["status"] == 204] == [{"status": 204}] * 4
    gone = [item for item in deletes(pact) if item["response"]["status"] == 404]
    assert len(gone) == 1 and gone[0]["response"]["body"]["content"]["status"] == 404
    assert pact["metadata"]["idp-mockserver"]["calls"] == 7
    # the same DELETE twice is one interaction: compared without bytes
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    assert client.delete(f"/project/{PROJECT}").status_code == 404
    assert len(deletes(pact_of(client, operation="deleteProject"))) == 2


@pytest.mark.server
def test_the_plugins_pact_writer_records_a_delete_that_the_pact_engine_verifies(live_server, tmp_path):
    recorder, verifier_mock = live_server("--clock", "manual"), live_server("--clock", "manual")
    mock = Client(recorder.url).in_sandbox("pact-delete")
    try:
        with httpx.Client(base_url=mock.url, headers=ADMIN) as http:
            assert http.get(f"/application/{APP}").status_code == 200
            assert http.delete(f"/application/{APP}").status_code == 204
            assert http.delete(f"/environment/{ENV}").status_code == 204
        path = tmp_path / "console.json"
        mock.write_pact(path, consumer="console")                    # what --mockserver-pact calls per test
        mock.write_pact(path, consumer="console")                    # merged into the file: the same pact
    finally:
        mock.delete_sandbox()
        mock.close()
    pact = json.loads(path.read_text())
    assert [item["response"] for item in deletes(pact)] == [{"status": 204}, {"status": 204}]
    assert len(pact["interactions"]) == 3
    verifier = (Verifier("idp-platform", host="127.0.0.1")
                .add_transport(url=f"{verifier_mock.url}/sandbox/verify")
                .add_source(str(path))
                .state_handler(f"{verifier_mock.url}/sandbox/verify/_mock/provider-states", teardown=True, body=True)
                .add_custom_header("Authorization", "Token mock-admin-token"))
    assert httpx.put(f"{verifier_mock.url}/_mock/sandboxes/verify", json={}).status_code in (200, 201)
    try:
        verifier.verify()
    except RuntimeError:
        pass                                    # the results say which interactions failed
    results = verifier.results["interactionResults"]
    assert len(results) == 3 and {item["result"] for item in results} == {"OK"}, results
