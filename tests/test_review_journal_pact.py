"""Review fixes: a pact of a journal holding a 204 (a successful DELETE), and journal filters that no call
could ever match (a bad status, method or operation id) refused with a 400 wherever filters are read."""

import json

import httpx
import pytest
from conftest import ADMIN, APP, ENV, PROJECT, assert_error
from pact import Verifier

from mockserver.pytest_plugin import MockServerClient

LOG_LEVEL = "6e8a0c2d-4f6b-4d8e-8a0c-2d4f6b8e0a2c"        # project variable of the fixtures


def pact_of(client, **params):
    reply = client.get("/_mock/calls/export", params={"format": "pact", "consumer": "console", **params})
    assert reply.status_code == 200, reply.text
    return reply.json()


def deletes(pact):
    return [item for item in pact["interactions"] if item["request"]["method"] == "DELETE"]


# ------------------------------------------------------------ defect 1: a 204 in a pact
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


def test_the_plugins_pact_writer_records_a_delete_that_the_pact_engine_verifies(live_server, tmp_path):
    recorder, verifier_mock = live_server("--clock", "manual"), live_server("--clock", "manual")
    mock = MockServerClient(recorder.url).in_sandbox("pact-delete")
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


# ------------------------------------------------------------ defect 2: filters no call could match
BAD = [("status", "abc"), ("status", "600"), ("status", "4XX"), ("status", "6xx"), ("method", "FOO"),
       ("operation", "nope"), ("operation", "deployAplication")]


@pytest.fixture
def busy(client):
    assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
    assert client.get("/organization/not-a-uuid").status_code in (400, 404)
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    return client


def named(reply, name, value):
    body = assert_error(reply, 400)
    assert body["message"].startswith(f"{name}: ") and repr(value) in body["message"]
    assert body["details"][0]["location"] == name
    return body


@pytest.mark.parametrize("name, value", BAD)
def test_the_journal_refuses_a_filter_no_call_could_match(busy, name, value):
    named(busy.get("/_mock/calls", params={name: value}), name, value)
    named(busy.get("/_mock/calls", params={name: value, "limit": "5"}), name, value)
    named(busy.post("/_mock/calls/verify", json={name: value, "count": 0}), name, value)
    named(busy.get("/_mock/calls/rows", params={name: value}), name, value)
    for kind in ("pact", "har"):
        named(busy.get("/_mock/calls/export", params={"format": kind, name: value}), name, value)


def test_a_mistyped_operation_fails_its_verify_and_names_the_closest_ids(busy):
    body = named(busy.post("/_mock/calls/verify", json={"operation": "deployAplication", "count": 0}),
                 "operation", "deployAplication")
    assert "no operation of the API document has the id 'deployAplication'" in body["message"]
    assert "did you mean deployApplication" in body["message"]
    assert "did you mean" not in named(busy.get("/_mock/calls?operation=zzzzzzzz"), "operation", "zzzzzzzz")["message"]
    # an empty journal too: the filter is wrong whatever the journal holds
    assert busy.delete("/_mock/calls").status_code == 204
    named(busy.get("/_mock/calls?method=FOO"), "method", "FOO")


def test_every_bad_filter_of_a_request_is_named(busy):
    body = assert_error(busy.post("/_mock/calls/verify", json={"method": "FOO", "status": True, "path": 5}), 400)
    assert [item["location"] for item in body["details"]] == ["method", "path", "status"]


def test_the_documented_filter_forms_still_match(busy):
    def total(**params):
        reply = busy.get("/_mock/calls", params=params)
        assert reply.status_code == 200, reply.text
        return reply.json()["total"]

    assert total(status="202") == total(status="2xx") - 1 == 1
    assert total(status="4xx") == 1 and total(status="0") == 0
    assert total(method="delete") == total(method="DELETE") == 1
    assert total(method="options") == total(method="HEAD") == 0
    assert total(operation="deployApplication") == 1
    assert total(operation="getOrganization") == 0                  # documented, never called: no error
    verify = busy.post("/_mock/calls/verify", json={"operation": "deleteProject", "status": 204, "count": 1})
    assert verify.status_code == 200 and verify.json()["ok"] is True, verify.text
    assert busy.get("/_mock/calls/rows", params={"status": "2xx", "operation": "deleteProject"}).json()["total"] == 1
    assert busy.get("/_mock/calls/export", params={"format": "har", "method": "post"}).status_code == 200


def test_filter_problems_is_the_one_check(spec):
    from mockserver.calls.journal import filter_problems

    assert filter_problems({"status": "4xx", "method": "patch", "operation": "createProject", "since": "0",
                            "path": "/project/*", "scenario": "x", "request_id": "r"}, spec.operations) == []
    assert filter_problems({"status": 404, "method": None, "operation": ""}, spec.operations) == []
    assert [name for name, _ in filter_problems({"status": "20", "method": "GETS", "operation": "createproject",
                                                 "since": "soon"}, spec.operations)] == \
        ["status", "method", "operation", "since"]
