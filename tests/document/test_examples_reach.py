"""The document's examples reach every operation's success path against the default fixtures.

A contract tester (or a client reading the document) sends the examples first: path parameters
and request bodies built from the examples of the document. Sent to a fresh mock in document
order, in reverse, shuffled, or grouped as a contract tester does (creates, reads, deletes last), each
operation must answer 2xx: no example depends on another having run first, and no example removes or
stops what another one needs.
"""

import json
import random
import re

import pytest
import schemathesis
from starlette.testclient import TestClient
from support.examples import METHODS, example_request
from support.ids import ADMIN

SEGMENT_ID = re.compile(r"/([^/{}]+)/([^/]+)")


def document_order(document):
    return [(path, method) for path, item in document["paths"].items() for method in METHODS if method in item]


def refusals(server, spec, order):
    """Send every example once in `order` to a fresh mock: the ones that did not answer 2xx."""
    document, components = spec.document, spec.components
    refused = []
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for path, method in order:
            raw = document["paths"][path][method]
            url, query, body = example_request(path, raw, components)
            reply = client.request(method.upper(), url, params=query, json=body)
            if not 200 <= reply.status_code < 300:
                refused.append(f"{raw['operationId']} {method.upper()} {url}: {reply.status_code} {reply.text[:200]}")
    return refused


def test_every_example_succeeds_once_in_document_order(server, spec):
    assert refusals(server, spec, document_order(spec.document)) == []


def test_every_example_succeeds_once_in_reverse_document_order(server, spec):
    assert refusals(server, spec, list(reversed(document_order(spec.document)))) == []


@pytest.mark.parametrize("seed", [3, 28, 2026])
def test_every_example_succeeds_once_shuffled(server, spec, seed):
    order = document_order(spec.document)
    random.Random(seed).shuffle(order)
    assert refusals(server, spec, order) == []


def test_every_example_succeeds_once_in_path_order_deletes_last(server, spec):
    """The order of a contract tester's examples phase: creates and edits, then reads, then deletes, each
    group in path order."""
    rank = {"post": 0, "put": 0, "get": 1, "delete": 2}
    order = sorted(document_order(spec.document), key=lambda pm: (rank[pm[1]], pm[0]))
    assert refusals(server, spec, order) == []


def test_examples_succeed_when_deletes_come_last_and_remove_all_they_saw(server, spec):
    """The order of schemathesis' examples phase: creates and edits, then reads, then deletes, each
    group in path order; a delete is sent for every record of its kind an earlier success named
    (ids it captured) before the example itself. Every example must still succeed."""
    document, components = spec.document, spec.components
    rank = {"post": 0, "put": 0, "get": 1, "delete": 2}
    order = sorted(((path, method) for path, item in document["paths"].items() for method in item
                    if method in METHODS), key=lambda pm: (rank[pm[1]], pm[0]))
    named, refused = {}, []
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for path, method in order:
            raw = document["paths"][path][method]
            url, query, body = example_request(path, raw, components)
            if method == "delete" and path.endswith("}"):
                parent, _, _ = url.rpartition("/")
                collection = parent.rsplit("/", 1)[-1]
                for seen in sorted(named.get(collection, ())):
                    client.delete(f"{parent}/{seen}")
            reply = client.request(method.upper(), url, params=query, json=body)
            if 200 <= reply.status_code < 300:
                for collection, ident in SEGMENT_ID.findall(url):
                    named.setdefault(collection, set()).add(ident)
            else:
                refused.append(f"{raw['operationId']} {method.upper()} {url}: {reply.status_code} {reply.text[:200]}")
    assert refused == [], "\n".join(refused)


@pytest.mark.parametrize("kind", ["application", "container", "database", "job", "helm", "terraform"])
def test_action_examples_name_running_services(client, spec, kind):
    """The stop, restart and redeploy examples name services that are DEPLOYED and idle."""
    for action in ("stop", "restart", "redeploy"):
        title = kind.capitalize()
        operation = spec.operations[f"{action}{title}"]
        raw = spec.document["paths"][operation.template]["post"]
        service_id = raw["parameters"][0]["example"]
        status = client.get(f"/{kind}/{service_id}/status").json()
        assert status["state"] == "DEPLOYED", (action, status)
        assert status["service_deployment_status"] == "UP_TO_DATE"


# ---------------------------------------------------------------- examples a tool may combine
# what a contract tester accepts for a request it holds valid (schemathesis' positive_data_acceptance)
ACCEPTED = {401, 403, 404, 409, 429}


def test_operation_and_property_examples_form_valid_requests_however_a_tool_combines_them(server, spec):
    """Schemathesis' own combinations of the document's examples (operation-level examples, and each
    parameter's and property's example mixed as its examples phase mixes them), sent in document order to
    one mock: each is valid against the operation and none is refused with a 400 (or worse), so a default
    contract run reports no "schema-valid request rejected"."""
    from schemathesis.specs.openapi.examples import extract_from_schemas, extract_top_level, produce_combinations
    refused, combos = [], 0
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for result in schemathesis.openapi.from_dict(spec.document).get_all_operations():
            tool = result.ok()
            raw = tool.definition.raw
            operation = spec.operations[raw["operationId"]]
            for combo in produce_combinations([*extract_top_level(tool), *extract_from_schemas(tool)]):
                combos += 1
                path = tool.path
                for param in raw.get("parameters", []):
                    if param["in"] == "path":
                        value = (combo.get("path_parameters") or {}).get(param["name"], param["example"])
                        path = path.replace(f"{{{param['name']}}}", str(value))
                query = {name: value if isinstance(value, str) else json.dumps(value)
                         for name, value in (combo.get("query") or {}).items()}
                body = combo.get("body", example_request(tool.path, raw, spec.components)[2])
                errors = operation.body.errors(body, "body") if body is not None and operation.body else []
                reply = client.request(tool.method.upper(), path, params=query, json=body)
                if errors or not (200 <= reply.status_code < 300 or reply.status_code in ACCEPTED):
                    refused.append(f"{operation.operation_id} {path} {query} {body}: {errors} "
                                   f"{reply.status_code} {reply.text[:200]}")
    assert combos >= len(spec.operations)
    assert refused == [], "\n".join(refused)


def test_the_document_gives_one_example_per_property(spec):
    """Several examples of one property (`examples:`) would be combined with the others' by a tool."""
    def keys(node):
        if isinstance(node, dict):
            for key, value in node.items():
                yield key
                yield from keys(value)
        elif isinstance(node, list):
            for value in node:
                yield from keys(value)
    assert "examples" not in set(keys(spec.document))
