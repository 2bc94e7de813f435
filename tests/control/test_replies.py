"""Every reply of the control API against the schema its document names for it, every shape closed: a field the
server sends that the document does not describe fails here, and so do a documented reply no call made the server
send and a documented field no reply held. The clients' types are written from these schemas (python -m
mockserver.client.generate, and openapi-typescript for the Node client), so a field missing from the document
would be a field no client types.

The calls are made in process, on servers built for them: one with a state file, a self-check and the collector
of `mockserver serve`, one whose change log is off and whose start set an old state file aside, one traced, and
one recording proxy in front of a small upstream; a webhook receiver on a loopback port gets the deliveries."""

import errno
import json
import os
import re
import time

import pytest
import yaml
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, ORG
from support.receiver import Receiver
from support.upstream import Upstream

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.document.spec import CONTROL_DOCUMENT
from mockserver.edge import tracing
from mockserver.process.collector import Collector

DOCUMENT = yaml.safe_load(CONTROL_DOCUMENT.read_text())
SCHEMAS = DOCUMENT["components"]["schemas"]
REF = "#/components/schemas/"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
FORMATS = FormatChecker(formats=())


@FORMATS.checks("date-time")
def _is_time(value):
    return not isinstance(value, str) or bool(TIME.match(value))


def json_schema(node, closed=True):
    """An OpenAPI 3.0 schema as JSON Schema: `nullable` as a null type (or a null choice), references into
    $defs, and (`closed`) every object with properties and no word on others closed to them."""
    if isinstance(node, list):
        return [json_schema(item, closed) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("nullable", "example") or key.startswith("x-"):
            continue
        if key == "properties":
            out[key] = {name: json_schema(field, closed) for name, field in value.items()}
        elif key == "$ref":
            out[key] = value.replace(REF, "#/$defs/")
        else:
            out[key] = json_schema(value, closed)
    if closed and "properties" in node and "additionalProperties" not in node:
        out["additionalProperties"] = False
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        elif "$ref" in out or "oneOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


DEFS = {name: json_schema(schema) for name, schema in SCHEMAS.items()}


def validator(name):
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": DEFS}, format_checker=FORMATS)


def route_of(path):
    """The document's path template a concrete control path stands for (a sandbox's prefix taken off)."""
    path = re.sub(r"^/sandbox/[^/]+", "", path.split("?")[0])
    for template in DOCUMENT["paths"]:
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path):
            return template
    raise AssertionError(f"{path} is no path of the control document")


def reply_schema(method, template, status):
    """The name of the schema the document gives a JSON reply (None: the reply is not documented as JSON)."""
    responses = DOCUMENT["paths"][template][method.lower()]["responses"]
    response = responses.get(str(status))
    if response is None:
        raise AssertionError(f"{method} {template} answered {status}, a status its document does not list")
    if "$ref" in response:
        response = DOCUMENT["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    schema = response.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return None
    named = [name for name, component in SCHEMAS.items() if component is schema]       # written once, by an alias
    assert "$ref" in schema or named, f"{method} {template} {status}: the reply's schema has no name"
    return schema["$ref"].removeprefix(REF) if "$ref" in schema else named[0]


class Recorder:
    """An HTTP client of an in-process mock that keeps every JSON reply of the control API."""

    def __init__(self, http, replies):
        self.http, self.replies = http, replies

    def __call__(self, method, path, expect=None, **kwargs):
        reply = self.http.request(method, path, **kwargs)
        if expect is not None:
            assert reply.status_code == expect, f"{method} {path}: {reply.status_code} {reply.text[:300]}"
        if "/_mock/" in path and reply.headers.get("content-type", "").startswith("application/json"):
            self.replies.append((method, route_of(path), reply.status_code, reply.json()))
        return reply

    def api(self, method, path, expect=None, **kwargs):
        reply = self.http.request(method, path, headers=ADMIN, **kwargs)
        assert expect is None or reply.status_code == expect, f"{method} {path}: {reply.status_code} {reply.text}"
        return reply


SCENARIO = """
name: flaky
description: rules of every kind
rules:
  - name: windowed
    match: {operation: getApplicationStatus}
    window: {after: 0, seconds: 600, calls: 5}
    effect: {status: 503, message: status backend down}
  - name: twice
    match: {operation: listProjects}
    times: 2
    until: "2099-01-01T00:00:00Z"
    effect: {latency_ms: 1}
  - name: never-used
    match: {operation: deleteProject}
    effect: {status: 500}
  - name: cut
    match: {operation: getOrganizationById}
    effect: {truncate: {fraction: 0.5}}
  - name: dated
    match: {operation: getCluster}
    window: {start: "2020-01-01T00:00:00Z", seconds: 60}
    effect: {status: 500}
"""


def wait_for(condition, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def drive_world(call, receiver):
    """Every route of a sandbox's world, with what makes its optional fields appear."""
    call("PUT", "/_mock/sandboxes/box", 201, json={"clock": "manual", "journal_body_limit": 1024,
                                                   "expires": {"seconds": 86400, "calls": 100000}})
    box = "/sandbox/box"
    call.api("POST", f"{box}/organization/{ORG}/webhook", 201,
             json={"target_url": receiver.url, "events": ["DEPLOYMENT_STARTED"], "enabled": True})
    big = {"name": "big", "description": "x" * 2000}                     # refused, and journaled cut
    call.api("POST", f"{box}/organization/{ORG}/project", 400, json=big)
    call.api("GET", f"{box}/organization/{ORG}/project", 200)
    call.api("POST", f"{box}/application/{APP}/deploy", 202)
    call("PUT", f"{box}/_mock/scenarios/flaky", 200, content=SCENARIO, headers={"Content-Type": "application/yaml"})
    call.api("GET", f"{box}/application/{APP}/status", 503)
    call.api("GET", f"{box}/organization/{ORG}/project", 200)
    call.api("GET", f"{box}/organization/{ORG}")
    call("POST", f"{box}/_mock/clock/advance", 200, json={"seconds": 2})
    call.api("GET", f"{box}/organization", 200)
    wait_for(lambda: any(d["attempts"] for d in call("GET", f"{box}/_mock/webhooks/deliveries").json()["results"]),
             "a webhook attempt")
    call("GET", f"{box}/_mock/webhooks/deliveries?status=DELIVERED", 200)
    call("GET", f"{box}/_mock/clock", 200)
    call("GET", f"{box}/_mock/state", 200)
    call("GET", f"{box}/_mock/state/tree", 200)
    call("GET", f"{box}/_mock/calls", 200)
    first = call("GET", f"{box}/_mock/calls?limit=2", 200).json()["results"][0]["id"]
    call("GET", f"{box}/_mock/calls/{first}", 200)
    call("GET", f"{box}/_mock/calls/rows?limit=50", 200)
    call("POST", f"{box}/_mock/calls/verify", 200, json={"operation": "deployApplication", "status": 202, "count": 1})
    call("POST", f"{box}/_mock/calls/verify", 200, json={"method": "GET", "since": "1", "at_least": 50, "at_most": 60,
                                                        "path": "/organization", "scenario": "flaky/*",
                                                        "request_id": "nope"})
    call.api("POST", f"/organization/{ORG}/project", 201, json={"name": "sent-to-the-root"})     # the wrong base URL
    call("POST", f"{box}/_mock/calls/verify", 200, json={"operation": "createProject", "token": "mock-admin-token",
                                                        "headers": {"Content-Type": "application/json*"},
                                                        "body": {"name": "sent-to-the-root"}})
    call("GET", f"{box}/_mock/calls/coverage", 200)
    call("GET", f"{box}/_mock/usage", 200)
    call("GET", f"{box}/_mock/deployments", 200)
    call("GET", f"{box}/_mock/scenarios", 200)
    call("GET", f"{box}/_mock/scenarios/flaky", 200)
    posted = "name: posted\nrules:\n  - match: {operation: getOrganization}\n    effect: {latency_ms: 1}\n"
    call("POST", f"{box}/_mock/scenarios", 201, content=posted)
    call("POST", f"{box}/_mock/scenarios", 400, content=posted.replace("getOrganization", "nope"))   # details
    call("GET", f"{box}/_mock/scenarios/absent", 404)
    call("DELETE", f"{box}/_mock/scenarios/posted", 204)
    call("GET", f"{box}/_mock/calls/export?format=pact&consumer=me", 200)
    call("GET", f"{box}/_mock/calls/export?format=har&limit=3", 200)
    call("POST", f"{box}/_mock/tokens", 201, json={"scopes": ["Read"], "kind": "jwt", "ttl_seconds": 60})
    call("POST", f"{box}/_mock/tokens", 201, json={"scopes": ["Deploy"], "name": "ci"})
    call("POST", f"{box}/_mock/snapshots", 201, json={"name": "box-snap", "journal": True, "private": True})
    call("POST", f"{box}/_mock/snapshots/box-snap/restore", 200)
    call("POST", f"{box}/_mock/provider-states", 200, json={"state": "application {id} exists",
                                                          "params": {"id": APP}})
    call("POST", f"{box}/_mock/provider-states", 200, json={"state": "x", "action": "teardown"})
    call("POST", f"{box}/_mock/reset", 200, json={"scenarios": True})
    call("POST", f"{box}/_mock/clock/advance", 400, json={"seconds": -1})


def drive_mock(call):
    """The routes of the whole mock: sandboxes, snapshots, usage over sandboxes, the documents, health."""
    call("GET", "/_mock/health", 200)
    call("GET", "/_mock/sandboxes", 200)
    call("GET", "/_mock/sandboxes/box", 200)
    call("PUT", "/_mock/sandboxes/box", 200, json={"snapshot": "box-snap"})
    call("POST", "/_mock/sandboxes/box/reset", 200, json={"scenarios": True})
    call("PUT", "/_mock/sandboxes/other", 201)
    call("POST", "/sandbox/other/_mock/snapshots", 201, json={"name": "shared", "replace": True})
    call("GET", "/_mock/snapshots", 200)
    call("GET", "/_mock/snapshots/shared", 200)
    call("GET", "/_mock/snapshots/absent", 404)
    call("GET", "/_mock/usage?scope=mock&prefix=", 200)
    call("GET", "/_mock/openapi.json", 200)
    call("GET", "/_mock/schemas/scenario.json", 200)
    call("DELETE", "/_mock/snapshots/shared", 204)
    call("DELETE", "/_mock/sandboxes/other?snapshots=delete", 204)
    call("DELETE", "/_mock/calls", 204)
    call("DELETE", "/_mock/sandboxes", 204)


def broken_disk(fd, data):
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def asleep(call, server):
    """A sandbox whose world sleeps, as the sandbox routes then describe it."""
    call("PUT", "/_mock/sandboxes/sleepy", 201)
    server.sandboxes.live["sleepy"].sleep()
    call("GET", "/_mock/sandboxes", 200)


@pytest.fixture(scope="module")
def replies(spec, tmp_path_factory):
    """(method, path template, status, JSON body) of every control reply the module's servers sent."""
    seen = []
    folder = tmp_path_factory.mktemp("state")
    receiver = Receiver()
    try:
        server = MockServer(Settings(clock="manual", self_check=True, state_file=str(folder / "state.bin"),
                                     save_interval=3600), spec=spec)
        server.collector = Collector()
        with TestClient(server, base_url="http://mock", raise_server_exceptions=False) as http:   # a cut reply
            call = Recorder(http, seen)
            drive_world(call, receiver)
            drive_mock(call)
            asleep(call, server)
        restarted = MockServer(Settings(clock="manual", state_file=str(folder / "state.bin")), spec=spec)
        with TestClient(restarted, base_url="http://mock") as http:      # from the state file the stop saved
            call = Recorder(http, seen)
            restarted.changelog.write_bytes = broken_disk
            call("PUT", "/_mock/sandboxes/refused", 503)
            call("GET", "/_mock/health", 200)                             # degraded: the change log fails
            restarted.changelog.write_bytes = os.write
        fresh = MockServer(Settings(clock="manual", state_file=str(folder / "state.bin"), durability="off",
                                    fresh=True), spec=spec)
        with TestClient(fresh, base_url="http://mock") as http:          # the old file set aside, no change log
            Recorder(http, seen)("GET", "/_mock/health", 200)
        traced = MockServer(Settings(clock="manual"), spec=spec, tracer=tracing.Tracer([]))
        with TestClient(traced, base_url="http://mock") as http:
            call = Recorder(http, seen)
            for _ in range(501):                                          # more than a page of calls
                call.api("GET", "/organization", 200)
            call("GET", "/_mock/calls", 200)
        drifting = Upstream(lambda request: (200, [("Content-Type", "application/json")],
                                             json.dumps({"id": ORG, "name": 5, "surprise": 1}).encode()))
        try:
            proxy = MockServer(Settings(clock="manual", upstream=drifting.url), spec=spec)
            with TestClient(proxy, base_url="http://mock") as http:
                call = Recorder(http, seen)
                call.api("GET", "/organization")
                call("GET", "/_mock/calls", 200)
                call("GET", "/_mock/calls/rows?drift=true", 200)
                call("GET", "/_mock/health", 200)
        finally:
            drifting.stop()
    finally:
        receiver.stop()
    return seen


def test_every_reply_matches_the_schema_its_document_names(replies):
    problems = []
    for method, template, status, body in replies:
        name = reply_schema(method, template, status)
        assert name is not None, f"{method} {template} {status} answered JSON its document does not describe"
        for error in validator(name).iter_errors(body):
            where = "/".join(map(str, error.absolute_path)) or "(the body)"
            problems.append(f"{method} {template} {status} ({name}) at {where}: {error.message[:200]}")
    assert problems == [], "replies the control document does not describe:\n" + "\n".join(problems)


def test_every_documented_json_reply_was_sent(replies):
    """Each operation's JSON replies (2xx, and the errors this module provokes) came at least once."""
    sent = {(method.lower(), template, str(status)) for method, template, status, _ in replies}
    documented = {(method, template, status) for template, item in DOCUMENT["paths"].items()
                  for method, operation in item.items() if isinstance(operation, dict)
                  for status in operation["responses"] if status.startswith("2")
                  and reply_schema(method, template, status) is not None}
    assert sorted(documented - sent) == []


def named(schema):
    """(name, schema) of a reference, or (None, the schema itself)."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF)
        return name, SCHEMAS[name]
    return None, schema


def documented_fields(where, schema, out, named_seen=()):
    """Every field the schema describes, as Name.field (Name.field.inner, Name.list[].inner for inline objects)."""
    name, schema = named(schema)
    if name is not None:
        if name in named_seen:
            return out
        where, named_seen = name, (*named_seen, name)
    for key, field in schema.get("properties", {}).items():
        out.add(f"{where}.{key}")
        documented_fields(f"{where}.{key}", field, out, named_seen)
    if isinstance(schema.get("items"), dict):
        documented_fields(f"{where}[]", schema["items"], out, named_seen)
    if isinstance(schema.get("additionalProperties"), dict):
        documented_fields(f"{where}{{}}", schema["additionalProperties"], out, named_seen)
    for choice in schema.get("oneOf", ()):
        documented_fields(where, choice, out, named_seen)
    return out


def sent_fields(where, schema, value, out):
    """The fields of `schema` a reply's value holds, named as documented_fields names them."""
    name, schema = named(schema)
    where = name or where
    for choice in schema.get("oneOf", ()):
        if "$ref" in choice and validator(named(choice)[0]).is_valid(value):
            sent_fields(where, choice, value, out)
    if isinstance(value, dict):
        for key, item in value.items():
            if key in schema.get("properties", {}):
                out.add(f"{where}.{key}")
                sent_fields(f"{where}.{key}", schema["properties"][key], item, out)
            elif isinstance(schema.get("additionalProperties"), dict):
                sent_fields(f"{where}{{}}", schema["additionalProperties"], item, out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            sent_fields(f"{where}[]", schema["items"], item, out)
    return out


def test_every_documented_field_was_sent(replies):
    """A field the document describes and no server sends is typed for nothing in the clients (or held by a reply
    this module does not provoke, and so never checked): each one appears in some reply."""
    documented, sent = set(), set()
    for method, template, status, body in replies:
        name = reply_schema(method, template, status)
        documented_fields(name, {"$ref": REF + name}, documented)
        sent_fields(name, {"$ref": REF + name}, body, sent)
    missing = sorted(documented - sent)
    assert missing == [], "documented fields no reply held:\n" + "\n".join(missing)


def test_a_field_the_document_lacks_fails_the_check():
    """The check can fail: a clock with one more field, or a call without one it always has, is refused."""
    clock = {"mode": "manual", "now": "2026-01-01T00:00:00Z", "epoch": 1.0, "offset_seconds": 0}
    assert list(validator("Clock").iter_errors(clock)) == []
    with pytest.raises(ValidationError, match="planted"):
        validator("Clock").validate({**clock, "planted": 1})
    with pytest.raises(ValidationError, match="'mode' is a required property"):
        validator("Clock").validate({key: value for key, value in clock.items() if key != "mode"})
    with pytest.raises(ValidationError, match="None is not of type 'string'"):
        validator("Clock").validate({**clock, "now": None})


def test_every_object_of_a_reply_says_whether_it_is_closed():
    """The document itself says which shapes are closed: no object schema leaves additionalProperties unsaid."""
    unsaid = []

    def walk(where, schema):
        if not isinstance(schema, dict):
            return
        if schema.get("type") == "object" and "additionalProperties" not in schema:
            unsaid.append(where)
        for key, field in schema.get("properties", {}).items():
            walk(f"{where}.{key}", field)
        for key in ("items", "additionalProperties"):
            walk(f"{where}[]", schema.get(key))
        for choice in schema.get("oneOf", ()):
            walk(where, choice)

    for name, schema in SCHEMAS.items():
        walk(name, schema)
    assert unsaid == []


def test_no_key_of_the_document_lost_its_value():
    """In a flow mapping, an unquoted description with a comma splits into a key without a value: none is left."""
    empty = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if value is None:
                    empty.append(f"{where}/{key}")
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(DOCUMENT, "")
    assert empty == []
