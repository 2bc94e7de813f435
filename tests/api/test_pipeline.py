"""The request pipeline over HTTP: the served document, routing, content negotiation,
validation of path, query and body and the words of its messages, error envelopes, the /api/v1 prefix and
body limits, HEAD wherever GET answers, and the self-check of replies against the document."""

import subprocess
import sys

import httpx
import openapi_spec_validator
import pytest
import yaml
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN, APP, ENV, ORG, PROJECT

from mockserver.core.errors import ApiError

PROJECTS = f"/organization/{ORG}/project"
ENVIRONMENTS = f"/project/{PROJECT}/environment"




# ---------------------------------------------------------------- the served document
def test_openapi_json_is_served_without_auth(server):
    with TestClient(server, base_url="http://mock") as anonymous:
        reply = anonymous.get("/openapi.json")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/json")
    document = reply.json()
    assert document["openapi"] == "3.0.3"
    assert "/organization" in document["paths"]


def test_openapi_yaml_is_served_without_auth_and_is_a_valid_document(server):
    with TestClient(server, base_url="http://mock") as anonymous:
        reply = anonymous.get("/openapi.yaml")
    assert reply.status_code == 200
    document = yaml.safe_load(reply.text)
    assert document["openapi"] == "3.0.3"
    openapi_spec_validator.validate(document)


def test_openapi_json_and_yaml_describe_the_same_paths(server):
    with TestClient(server, base_url="http://mock") as anonymous:
        from_json = anonymous.get("/openapi.json").json()
        from_yaml = yaml.safe_load(anonymous.get("/openapi.yaml").text)
    assert sorted(from_json["paths"]) == sorted(from_yaml["paths"])


def test_committed_document_is_in_step_with_its_tables():
    result = subprocess.run([sys.executable, "-m", "mockserver.document.build", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- routing
def test_unknown_path_is_404_with_error_body(client):
    body = assert_error(client.get("/no/such/thing"), 404)
    assert body["error"] == "Not Found"


def test_known_path_with_other_method_is_405_with_allow_header(client):
    reply = client.post(f"/project/{PROJECT}", json={"name": "x"})
    assert_error(reply, 405)
    allowed = {method.strip() for method in reply.headers["allow"].split(",")}
    document = client.get("/openapi.json").json()
    documented = {m.upper() for m in document["paths"]["/project/{projectId}"]
                  if m in ("get", "put", "post", "delete", "patch")}
    assert documented == {"GET", "PUT", "DELETE"}
    assert allowed == documented | {"HEAD"}              # HEAD wherever GET (RFC 9110), though not documented


def test_405_on_single_method_path_lists_just_that_method(client):
    reply = client.delete("/organization")
    assert_error(reply, 405)
    assert reply.headers["allow"] == "GET, HEAD"


# ---------------------------------------------------------------- body parsing
def test_body_that_is_not_json_is_415(client):
    reply = client.post(PROJECTS, content=b"name=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_error(reply, 415)


def test_body_without_content_type_is_415(client):
    reply = client.post(PROJECTS, content=b'{"name": "untyped"}')
    assert_error(reply, 415)
    assert "untyped" not in {p["name"] for p in client.get(PROJECTS).json()["results"]}


def test_json_with_charset_parameter_is_accepted(client):
    reply = client.post(PROJECTS, content=b'{"name": "charset-ok"}',
                        headers={"Content-Type": "application/json; charset=utf-8"})
    assert reply.status_code == 201, reply.text


def test_malformed_json_is_400(client):
    reply = client.post(PROJECTS, content=b'{"name": ', headers={"Content-Type": "application/json"})
    body = assert_error(reply, 400)
    assert "malformed JSON" in body["message"]


def test_missing_required_field_names_body_name(client):
    body = assert_error(client.post(PROJECTS, json={"description": "no name"}), 400)
    assert "body.name" in body["message"]
    assert [detail["location"] for detail in body["details"]] == ["body.name"]


def test_every_violation_is_named_in_one_reply(client):
    reply = client.post(f"/environment/{ENV}/application", json={
        "build_mode": "PODMAN",                                   # not in the enum
        "description": "x" * 1025,                                # longer than 1024
        "git_repository": {"url": "https://git.example.com/a.git"},
        "ports": [{"internal_port": 8080, "protocol": "SCTP"}],  # nested enum
    })                                                            # and no name
    body = assert_error(reply, 400)
    expected = {"body.name", "body.build_mode", "body.description", "body.ports[0].protocol"}
    for location in expected:
        assert location in body["message"], location
    assert expected <= {detail["location"] for detail in body["details"]}


def test_invalid_uuid_path_parameter_names_the_parameter(client):
    body = assert_error(client.get("/project/not-a-uuid"), 400)
    assert "path.projectId" in body["message"]
    assert body["details"][0]["location"] == "path.projectId"


@pytest.mark.parametrize("tail", ["abc", "0", "10001"])
def test_bad_query_parameter_names_the_parameter(client, tail):
    body = assert_error(client.get(f"/application/{APP}/log", params={"tail": tail}), 400)
    assert "query.tail" in body["message"]
    assert [d["location"] for d in body["details"]] == ["query.tail"]


def test_valid_query_parameter_is_accepted(client):
    reply = client.get(f"/application/{APP}/log", params={"tail": "5"})
    assert reply.status_code == 200
    assert len(reply.json()["results"]) <= 5


# ---------------------------------------------------------------- tolerant input
def test_read_only_fields_sent_by_client_are_ignored(client):
    sent_id = "11111111-1111-4111-8111-111111111111"
    reply = client.post(PROJECTS, json={"name": "readonly", "id": sent_id, "created_at": "2000-01-01T00:00:00Z",
                                        "updated_at": "2000-01-01T00:00:00Z"})
    assert reply.status_code == 201, reply.text
    project = reply.json()
    assert project["id"] != sent_id
    assert not project["created_at"].startswith("2000")
    assert client.get(f"/project/{project['id']}").json()["name"] == "readonly"
    assert client.get(f"/project/{sent_id}").status_code == 404


def test_unknown_body_fields_are_ignored(client):
    reply = client.post(PROJECTS, json={"name": "extra-fields", "colour": "blue", "nested": {"a": 1}})
    assert reply.status_code == 201, reply.text
    assert "colour" not in reply.json()
    assert "colour" not in client.get(f"/project/{reply.json()['id']}").json()


# ---------------------------------------------------------------- /api/v1 prefix
def test_same_handlers_answer_under_api_v1(client):
    root = client.get("/organization")
    prefixed = client.get("/api/v1/organization")
    assert prefixed.status_code == 200
    assert prefixed.json() == root.json()


def test_record_created_under_api_v1_is_visible_at_root(client):
    created = client.post(f"/api/v1{PROJECTS}", json={"name": "via-prefix"})
    assert created.status_code == 201
    assert client.get(f"/project/{created.json()['id']}").json()["name"] == "via-prefix"


def test_api_v1_prefix_validates_like_the_root(client):
    body = assert_error(client.get("/api/v1/project/not-a-uuid"), 400)
    assert "path.projectId" in body["message"]
    assert_error(client.get("/api/v1/no/such/thing"), 404)


# ---------------------------------------------------------------- error replies
@pytest.mark.parametrize("method, path, kwargs, status", [
    ("GET", "/nowhere", {}, 404),
    ("PATCH", "/organization", {}, 405),
    ("GET", "/project/xyz", {}, 400),
    ("POST", PROJECTS, {"json": {}}, 400),
    ("POST", PROJECTS, {"content": b"x", "headers": {"Content-Type": "text/plain"}}, 415),
    ("POST", PROJECTS, {"json": {"name": "storefront"}}, 409),
    ("GET", "/project/4a6c8e0b-2d4f-4a6c-9e0b-2d4f6a8c0e4a", {}, 404),
    ("GET", "/organization", {"headers": {"Authorization": "Token wrong"}}, 401),
    ("POST", PROJECTS, {"json": {"name": "r"}, "headers": {"Authorization": "Token mock-read-token"}}, 403),
])
def test_every_error_reply_is_json_with_the_error_envelope(client, method, path, kwargs, status):
    assert_error(client.request(method, path, **kwargs), status)


def test_body_over_the_size_limit_is_413(make_server):
    with TestClient(make_server(max_body=100), base_url="http://mock", headers=ADMIN) as small:
        body = assert_error(small.post(PROJECTS, json={"name": "x" * 200}), 413)
        assert "100" in body["message"]
        assert small.post(PROJECTS, json={"name": "small"}).status_code == 201


def test_environments_route_rejects_bad_body_without_creating(client):
    before = client.get(ENVIRONMENTS).json()["results"]
    assert_error(client.post(ENVIRONMENTS, json={"name": ""}), 400)
    assert client.get(ENVIRONMENTS).json()["results"] == before


# ---------------------------------------------------------------- routing remembered per path
def test_a_resolved_path_is_remembered_and_each_caller_gets_its_own_values(server):
    spec = server.spec
    path = f"/project/{PROJECT}/environment"
    first_op, first_values, first_errors = spec.resolve("GET", path)
    first_values["project_id"] = "changed by a handler"
    first_errors.append(("path.x", "added by a caller"))
    again_op, again_values, again_errors = spec.resolve("GET", path)
    assert again_op is first_op and again_values == {"project_id": PROJECT} and again_errors == []
    bad_op, _, bad_errors = spec.resolve("GET", "/project/not-a-uuid/environment")
    assert bad_op is first_op and bad_errors == [("path.project_id", "'not-a-uuid' is not a valid uuid")]


def test_the_remembered_paths_are_bounded_and_unknown_paths_are_not_kept(server, monkeypatch):
    from mockserver.document import spec as spec_module
    monkeypatch.setattr(spec_module, "RESOLVED", 8)
    spec = server.spec
    spec._resolved.clear()
    for n in range(20):
        spec.resolve("GET", f"/project/{n:08d}-0000-4000-8000-000000000000/environment")
    assert 0 < len(spec._resolved) <= 8
    with pytest.raises(ApiError):
        spec.resolve("GET", "/no/such/path")
    assert ("GET", "/no/such/path") not in spec._resolved


# ---------------------------------------------------------------- validation messages
def test_validation_messages_speak_json_and_name_the_clash_of_shapes(client):
    reply = client.post("/organization/8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10/project", json={"name": None})
    assert_error(reply, 400)
    assert "null is not of type" in reply.json()["message"] and "None" not in reply.json()["message"]
    job = {"name": "both-schedules", "source": {"image": {"image_name": "busybox", "tag": "1", "registry_id":
                                                          "0a2c4e6f-8b0d-4f2a-9c4e-6f8b0d2f4a6c"}},
           "schedule": {"cronjob": {"scheduled_at": "0 * * * *", "arguments": [], "entrypoint": ""},
                        "on_start": {"arguments": [], "entrypoint": ""}}}
    reply = client.post(f"/environment/{ENV}/job", json=job)
    assert_error(reply, 400)
    message = reply.json()["message"]
    assert "should not be valid under" not in message and "not accepted together" in message, message


# ---------------------------------------------------------------- the self-check of replies
@pytest.mark.server
def test_self_check_is_an_option_of_serve_and_counts_in_health(live_server):
    server = live_server("--self-check")
    health = httpx.get(f"{server.url}/_mock/health").json()
    assert health["self_check"] == {"violations": 0, "newest": []}
    assert httpx.get(f"{server.url}/organization", headers=ADMIN).status_code == 200
    assert httpx.get(f"{server.url}/_mock/health").json()["self_check"]["violations"] == 0
    plain = live_server()
    assert "self_check" not in httpx.get(f"{plain.url}/_mock/health").json()


def test_a_reply_that_breaks_the_document_is_logged_counted_and_the_newest_kept(make_server, caplog):
    server = make_server()
    operation = server.spec.resolve("GET", "/organization")[0]
    for n in range(105):
        server.pipeline.check_reply(operation, 299, b"", "GET", f"/organization?n={n}")
    assert server.pipeline.violation_count == 105 and len(server.pipeline.violations) == 100
    assert server.pipeline.violations[-1].startswith("GET /organization?n=104: status 299")
    assert "self-check: GET /organization?n=0" in caplog.text
    server.pipeline.violations.clear()                            # what make_server asserts at the end


# ---------------------------------------------------------------- HEAD
@pytest.mark.server
def test_head_answers_wherever_get_does_with_the_head_of_its_reply(live_server):
    server = live_server()
    get = httpx.get(f"{server.url}/application/{APP}/status", headers=ADMIN)
    head = httpx.head(f"{server.url}/application/{APP}/status", headers=ADMIN)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    assert head.headers["content-type"] == "application/json"
    assert httpx.head(f"{server.url}/application/{APP}/status").status_code == 401
    refused = httpx.delete(f"{server.url}/application/{APP}/status", headers=ADMIN)
    assert refused.status_code == 405 and "HEAD" in refused.headers["allow"].split(", ")
    calls = httpx.get(f"{server.url}/_mock/calls", params={"method": "HEAD"}, headers=ADMIN).json()["results"]
    assert [(c["operation"], c["status"]) for c in calls] == [("getApplicationStatus", 200),
                                                             ("getApplicationStatus", 401)]
