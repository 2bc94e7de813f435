"""Journal filters that no call could ever match (a bad status, method or operation id) refused with a 400
wherever filters are read (/_mock/calls, its rows, verify and the exports), the documented forms still matching,
and the one check behind them all; verify's body takes no more than its fields."""

import pytest
from support.http import assert_error
from support.ids import APP, PROJECT

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


def test_verify_takes_no_limit(client):
    reply = client.post("/_mock/calls/verify", json={"operation": "listOrganization", "limit": 5, "count": 1})
    assert_error(reply, 400)
    assert "body.limit" in reply.json()["message"]
