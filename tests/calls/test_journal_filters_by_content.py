"""Journal filters by token, header and body, in a query string and in a verify body alike; the messages that
list every accepted name with the nearest; and a verify that finds too few saying where matching calls went (the
default sandbox, a sandbox a misspelled name made)."""

import pytest
from support.http import assert_error
from support.ids import APP, ORG

DEPLOY = {"Authorization": "Token mock-deploy-token"}
PROJECTS = f"/organization/{ORG}/project"


@pytest.fixture
def made(client):
    """A project created by the admin with a header of its own, a deploy by the deploy token."""
    assert client.post(PROJECTS, json={"name": "checkout", "description": "shop"},
                       headers={"X-Request-Source": "ci-nightly"}).status_code == 201
    assert client.post(PROJECTS, json={"name": "billing"}).status_code == 201
    assert client.post(f"/application/{APP}/deploy", json={}, headers=DEPLOY).status_code == 202
    return client


def ids(reply):
    assert reply.status_code == 200, reply.text
    return [call["operation"] for call in reply.json()["results"]]


def verify(client, **body):
    reply = client.post("/_mock/calls/verify", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_the_token_filter_takes_a_name_or_a_value_and_echoes_the_name_only(made):
    assert ids(made.get("/_mock/calls", params={"token": "deployer"})) == ["deployApplication"]
    assert ids(made.get("/_mock/calls", params={"token": "mock-deploy-token"})) == ["deployApplication"]
    result = verify(made, operation="deployApplication", token="mock-deploy-token", count=1)
    assert result["ok"] and result["filters"]["token"] == "deployer"
    assert "mock-deploy-token" not in str(result)
    assert not verify(made, operation="deployApplication", token="admin", at_least=1)["ok"]


def test_an_unknown_token_is_a_400_with_the_nearest_names_and_without_the_value(made):
    body = assert_error(made.get("/_mock/calls", params={"token": "deployr"}), 400)
    assert body["details"][0]["location"] == "token" and "did you mean deployer?" in body["message"]
    body = assert_error(made.post("/_mock/calls/verify", json={"token": "sk-live-0123456789"}), 400)
    assert "sk-live-0123456789" not in body["message"] and "admin, deployer, reader, writer" in body["message"]


def test_the_header_filter_globs_a_value_and_never_matches_a_header_not_sent(made):
    query = {"headers[x-request-source]": "ci-*"}
    assert ids(made.get("/_mock/calls", params=query)) == ["createProject"]
    assert verify(made, headers={"X-Request-Source": "ci-nightly"}, count=1)["ok"]
    assert verify(made, headers={"x-request-source": "*"}, count=1)["ok"]            # two calls did not send it
    assert ids(made.get("/_mock/calls", params={"headers[x-request-source]": "cd-*"})) == []


@pytest.mark.parametrize("name", ["Authorization", "cookie"])
def test_a_header_kept_masked_cannot_be_filtered_on(made, name):
    body = assert_error(made.post("/_mock/calls/verify", json={"headers": {name: "Token mock-*"}}), 400)
    assert body["details"][0]["location"] == "headers" and "filter by token" in body["message"]
    assert_error(made.get("/_mock/calls", params={f"headers[{name}]": "*"}), 400)


def test_the_body_filter_matches_fields_by_dotted_path_and_objects_partially(made):
    assert ids(made.get("/_mock/calls", params={"body[name]": "checkout"})) == ["createProject"]
    assert verify(made, body={"name": "checkout"}, count=1)["ok"]
    assert verify(made, operation="createProject", body={"description": "shop"}, count=1)["ok"]
    assert not verify(made, body={"name": "checkout", "description": "other"}, at_least=1)["ok"]
    env = f"/application/{APP}/environmentVariable"
    assert made.post(env, json={"key": "REPLICAS", "value": "3"}).status_code == 201
    assert verify(made, body={"key": "REPLICAS"}, count=1)["ok"]
    assert ids(made.get("/_mock/calls", params={"body[value]": '"3"'})) == ["createApplicationVariable"]
    assert ids(made.get("/_mock/calls", params={"body[value]": "3"})) == []          # 3 is a number, "3" text


def test_nested_values_match_partially_and_by_path():
    from mockserver.core.matching import body_matches, headers_match
    body = {"name": "web", "settings": {"replicas": 2, "cpu": 500}, "ports": [{"port": 80}], "on": True}
    assert body_matches(body, {"settings": {"replicas": 2}})
    assert body_matches(body, {"settings.cpu": 500, "ports.0.port": 80})
    assert not body_matches(body, {"settings": {"replicas": 3}})
    assert not body_matches(body, {"on": 1}) and not body_matches(body, {"missing": None})
    assert headers_match({"accept": "application/json"}, {"Accept": "application/*"})
    assert not headers_match({}, {"accept": "*"})


def test_a_body_filter_cannot_read_a_secret_it_would_guess(made):
    secret = f"/application/{APP}/secret"
    assert made.post(secret, json={"key": "API_KEY", "value": "s3cr3t-value"}).status_code == 201
    assert verify(made, body={"key": "API_KEY"}, count=1)["ok"]
    assert verify(made, body={"key": "API_KEY", "value": "s3cr3t-value"}, count=0)["ok"]


@pytest.mark.parametrize("where, send", [
    ("calls", lambda c: c.get("/_mock/calls", params={"tokn": "admin"})),
    ("verify", lambda c: c.post("/_mock/calls/verify", json={"tokn": "admin", "count": 1})),
])
def test_an_unknown_filter_lists_every_accepted_name_with_the_nearest(made, where, send):
    message = assert_error(send(made), 400)["message"]
    assert "tokn (did you mean token?)" in message
    for name in ("method", "path", "operation", "status", "since", "scenario", "request_id", "token", "headers",
                 "body"):
        assert name in message
    extra = ("limit", "after") if where == "calls" else ("count", "times", "at_least", "at_most")
    assert all(name in message for name in extra), message


def test_a_verify_that_finds_too_few_says_the_calls_went_to_the_default_sandbox(client):
    assert client.put("/_mock/sandboxes/mine", json={}).status_code == 201
    assert client.post(PROJECTS, json={"name": "lost"}).status_code == 201          # the mock's root: not mine
    result = client.post("/sandbox/mine/_mock/calls/verify", json={"operation": "createProject", "count": 1}).json()
    assert not result["ok"]
    [other] = result["elsewhere"]
    assert other["sandbox"] == "default" and other["count"] == 1 and not other["made_by_call"]
    assert "went to sandbox default" in result["message"] and "base URL" in result["message"]


def test_a_verify_names_a_sandbox_a_misspelled_name_made(client):
    assert client.put("/_mock/sandboxes/checkout-1", json={}).status_code == 201
    assert client.post(f"/sandbox/chekout-1{PROJECTS}", json={"name": "x"}).status_code == 201
    listed = {box["name"]: box for box in client.get("/_mock/sandboxes").json()["results"]}
    assert listed["chekout-1"]["made_by"] == "call" and listed["checkout-1"]["made_by"] == "control"
    result = client.post("/sandbox/checkout-1/_mock/calls/verify", json={"body": {"name": "x"}}).json()
    [other] = result["elsewhere"]
    assert other["sandbox"] == "chekout-1" and other["made_by_call"]
    assert "misspelled sandbox name" in result["message"]


def test_a_verify_that_passes_or_found_too_many_looks_nowhere_else(client):
    assert client.post(PROJECTS, json={"name": "root"}).status_code == 201
    assert client.put("/_mock/sandboxes/mine", json={}).status_code == 201
    assert "elsewhere" not in client.post("/sandbox/mine/_mock/calls/verify",
                                          json={"operation": "createProject", "count": 0}).json()
    assert client.post(f"/sandbox/mine{PROJECTS}", json={"name": "a"}).status_code == 201
    assert client.post(f"/sandbox/mine{PROJECTS}", json={"name": "b"}).status_code == 201
    too_many = client.post("/sandbox/mine/_mock/calls/verify", json={"operation": "createProject", "at_most": 1})
    assert not too_many.json()["ok"] and "elsewhere" not in too_many.json()


def test_a_verify_on_a_sandbox_never_made_is_a_404_naming_it(client):
    assert client.put("/_mock/sandboxes/orders", json={}).status_code == 201
    body = assert_error(client.post("/sandbox/ordres/_mock/calls/verify", json={}), 404)
    assert "sandbox ordres does not exist" in body["message"] and "did you mean orders" in body["message"]


def test_a_misspelled_sandbox_option_is_named_with_the_nearest_and_every_option(client):
    body = assert_error(client.put("/_mock/sandboxes/x", json={"rate_limt": "5/10s", "seed": 2}), 400)
    assert "body.rate_limt: not a sandbox option (did you mean rate_limit?)" in body["message"]
    assert all(name in body["message"] for name in ("clock", "seed", "fixtures", "expires", "poll_progress"))
    assert client.get("/_mock/sandboxes").json()["results"][-1]["name"] != "x"      # nothing was made


def test_a_verify_does_not_name_sandboxes_other_tests_made(client):
    """In a parallel suite other tests make the same calls in their own sandboxes: not where this one's went."""
    for name in ("mine", "other-test"):
        assert client.put(f"/_mock/sandboxes/{name}", json={}).status_code == 201
    assert client.post(f"/sandbox/other-test{PROJECTS}", json={"name": "same"}).status_code == 201
    result = client.post("/sandbox/mine/_mock/calls/verify", json={"body": {"name": "same"}}).json()
    assert not result["ok"] and "elsewhere" not in result and "elsewhere" not in result["message"]
