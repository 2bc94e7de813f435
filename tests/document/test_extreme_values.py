"""No input gets a 5xx: every integer and number the document accepts, at its extremes.

The slots are read from the document itself (query parameters and request body fields of every
operation, through $refs, arrays and oneOf branches), not from a hand-written list, so a field
added later is covered too. Each value is sent in an otherwise valid request built from the
document's examples; out-of-range values must be a 400 with the error envelope, in-range
extremes anything but a 5xx.
"""

import copy

import pytest
from starlette.testclient import TestClient
from support.examples import example_request, resolve
from support.http import assert_error
from support.ids import ADMIN, APP, HELM

from mockserver.core.clock import LAST_START

HUGE = [2 ** 63, 5376787370137646792704, -(2 ** 63), -5376787370137646792704, 1e308, -1e308]


def numeric_slots(schema, components, path=(), seen=()):
    """(path in the body, schema) of every integer or number field reachable from a schema."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return
        seen = seen + (name,)
    schema = resolve(schema, components)
    if schema.get("type") in ("integer", "number"):
        yield path, schema
        return
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []) + schema.get("allOf", []):
        yield from numeric_slots(branch, components, path, seen)
    for name, sub in schema.get("properties", {}).items():
        yield from numeric_slots(sub, components, path + (name,), seen)
    if schema.get("type") == "array" and "items" in schema:
        yield from numeric_slots(schema["items"], components, path + (0,), seen)


def extremes(schema):
    values = list(HUGE)
    for bound, step in (("minimum", -1), ("maximum", 1)):
        if bound in schema:
            values += [schema[bound], schema[bound] + step]
    if schema.get("type") == "integer":
        values.append(0.5)
    return values


def put(body, path, value):
    node = body
    for key, nxt in zip(path, path[1:]):
        if isinstance(node, list):
            while len(node) <= key:
                node.append({} if not isinstance(nxt, int) else [])
            node = node[key]
        else:
            node = node.setdefault(key, [] if isinstance(nxt, int) else {})
    if isinstance(node, list):
        while len(node) <= path[-1]:
            node.append(None)
    node[path[-1]] = value


def cases(spec):
    document, components = spec.document, spec.components
    for template, item in document["paths"].items():
        for method, raw in item.items():
            url, query, body = example_request(template, raw, components)
            for param in raw.get("parameters", []):
                if param["in"] == "query" and param["schema"].get("type") in ("integer", "number"):
                    for value in extremes(param["schema"]):
                        yield raw["operationId"], method, url, {**query, param["name"]: value}, body, \
                            f"query.{param['name']}", value, param["schema"]
            if "requestBody" in raw:
                schema = raw["requestBody"]["content"]["application/json"]["schema"]
                for path, slot in numeric_slots(schema, components):
                    for value in extremes(slot):
                        changed = copy.deepcopy(body) if isinstance(body, dict) else {}
                        put(changed, path, value)
                        where = "body" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
                        yield raw["operationId"], method, url, query, changed, where, value, slot


def out_of_range(value, schema):
    return (value < schema.get("minimum", float("-inf")) or value > schema.get("maximum", float("inf"))
            or (schema.get("type") == "integer" and value != int(value)))


def test_every_numeric_slot_of_the_document_has_bounds(spec):
    """A bound on every integer and number the document accepts, so validation answers first."""
    slots = [(op, where, schema) for op, _, _, _, _, where, value, schema in cases(spec) if value == HUGE[0]]
    assert len(slots) > 40                    # the document has many: a walk that finds few is broken
    unbounded = sorted({f"{op} {where}" for op, where, schema in slots
                        if "minimum" not in schema or "maximum" not in schema})
    assert unbounded == []


def test_extreme_values_of_every_numeric_slot_never_get_a_5xx(make_server, spec):
    server = make_server(rate_limit=10**9, rate_window=3600)     # thousands of calls: no 429 in the way
    failures, rejected, total = [], 0, 0
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for op, method, url, query, body, where, value, schema in cases(spec):
            reply = client.request(method.upper(), url, params={k: str(v) for k, v in query.items()},
                                   json=body if body is not None else None)
            total += 1
            if reply.status_code >= 500:
                failures.append(f"{op} {where}={value!r}: {reply.status_code} {reply.text[:160]}")
            elif out_of_range(value, schema):
                rejected += 1
                if reply.status_code != 400 or where not in reply.json()["message"]:
                    failures.append(f"{op} {where}={value!r}: expected a 400 naming {where}, got "
                                    f"{reply.status_code} {reply.text[:160]}")
        assert client.get("/_mock/calls").status_code == 200     # the journal renders what it kept
    assert failures == [], "\n".join(failures)
    assert total > 300 and rejected > 200


def test_the_page_number_that_does_not_fit_64_bits_is_a_400(client):
    """GET deploymentHistoryV2 with a 22-digit page used to echo it and fail to serialize (a 500)."""
    reply = client.get(f"/helm/{HELM}/deploymentHistoryV2",
                       params={"pageSize": 20, "page": "5376787370137646792704"})
    assert_error(reply, 400)
    assert "query.page" in reply.json()["message"]


@pytest.mark.parametrize("page", [1, 100000])
def test_page_numbers_within_bounds_are_answered(client, page):
    reply = client.get(f"/helm/{HELM}/deploymentHistoryV2", params={"pageSize": 100, "page": page})
    assert reply.status_code == 200
    assert reply.json()["page"] == page


@pytest.mark.parametrize("route, field", [("/_mock/clock/advance", "seconds"), ("/_mock/tokens", "ttl_seconds")])
def test_control_api_durations_are_bounded(client, route, field):
    """A clock moved, or a token made to live, past what a date can hold used to be a 500."""
    for value in (1e308, 10 ** 30, 315360001):
        reply = client.post(route, json={field: value})
        assert_error(reply, 400)
        assert f"body.{field}" in reply.json()["message"]
    assert client.post(route, json={field: 315360000}).status_code in (200, 201)
    assert client.get("/_mock/clock").status_code == 200
    assert client.post("/_mock/reset").status_code == 200
    assert client.get("/organization").status_code == 200


def test_the_clock_stops_short_of_the_last_date_it_can_render(server):
    server.clock.advance(LAST_START - server.clock.now() - 10)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        assert_error(client.post("/_mock/clock/advance", json={"seconds": 3600}), 400)
        assert client.get("/_mock/clock").json()["now"].startswith("9998-12-31T23:59:50")
        assert client.get("/organization").status_code == 200


def test_what_is_dated_after_a_clock_near_its_end_still_renders(server):
    """A deploy, its steps and a ten-year token, on a clock ten seconds before the last start: the steps end
    after it and the token expires past the year 9999 (written as the last time RFC 3339 can), never a 500."""
    server.clock.advance(LAST_START - server.clock.now() - 10)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
        assert client.post("/_mock/clock/advance", json={"seconds": 9}).status_code == 200
        assert client.get("/_mock/deployments").status_code == 200
        assert client.get(f"/application/{APP}/deploymentHistory").status_code == 200
        token = client.post("/_mock/tokens", json={"ttl_seconds": 315360000})
        assert token.status_code in (200, 201), token.text
        assert client.get("/organization", headers={"Authorization": f"Token {token.json()['token']}"}
                          ).status_code == 200
