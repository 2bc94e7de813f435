"""No `null` where the spec gives a type without "or null": a field with nothing to show is left out.

Generic, over the document: every reply that the default fixtures and an example flow produce (every
example of the document sent once in document order, then every read again once the deployments they
started have ended) is walked against the response schema the document gives its operation and status,
and any `null` in a field whose schema is not `nullable` fails the test, naming the operation and the
field. The document itself declares nullable only the fields the spec writes "or null".
"""

from starlette.testclient import TestClient
from support.examples import METHODS, example_request, resolve
from support.ids import ADMIN

# the response fields the spec types "string or null" / "boolean or null" (variables, secrets, references)
SPEC_OR_NULL = {"value", "description", "enable_interpolation_in_file"}


def branches(schema, components):
    """The schema and every allOf / oneOf / anyOf branch below it, resolved."""
    schema = resolve(schema, components)
    out = [schema]
    for key in ("allOf", "oneOf", "anyOf"):
        for branch in schema.get(key, []):
            out += branches(branch, components)
    return out


def property_schemas(schema, name, components):
    return [branch["properties"][name] for branch in branches(schema, components)
            if name in branch.get("properties", {})]


def nulls(value, schema, components, where):
    """Locations of null values whose schema (in every branch that declares them) is not nullable."""
    found = []
    if isinstance(value, dict):
        for name, item in value.items():
            declared = property_schemas(schema, name, components)
            if item is None:
                if declared and not any(resolve(sub, components).get("nullable") for sub in declared):
                    found.append(f"{where}.{name}")
            else:
                for sub in declared:
                    found += nulls(item, sub, components, f"{where}.{name}")
    elif isinstance(value, list):
        items = [branch["items"] for branch in branches(schema, components) if "items" in branch]
        for index, item in enumerate(value):
            for sub in items:
                found += nulls(item, sub, components, f"{where}[{index}]")
    return found


def check(reply, operation, components):
    if not 200 <= reply.status_code < 300 or not reply.content:
        return []
    schema = operation.responses.get(reply.status_code)
    return nulls(reply.json(), schema, components, operation.operation_id) if schema else []


def test_no_null_where_the_spec_gives_a_type_without_or_null(server, spec):
    document, components = spec.document, spec.components
    found, checked = [], 0
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        reads = []
        for path, item in document["paths"].items():
            for method in METHODS:
                if method not in item:
                    continue
                operation = spec.operations[item[method]["operationId"]]
                url, query, body = example_request(path, item[method], components)
                found += check(client.request(method.upper(), url, params=query, json=body), operation, components)
                checked += 1
                if method == "get":
                    reads.append((url, query, operation))
        client.post("/_mock/clock/advance", json={"seconds": 3600})     # every deployment started has ended
        for url, query, operation in reads:
            found += check(client.get(url, params=query), operation, components)
            found += check(client.get(url), operation, components)       # whole lists, without the example page
    assert checked == len(spec.operations)
    assert found == [], "null in a field the document does not declare nullable:\n" + "\n".join(sorted(set(found)))


def test_the_document_declares_nullable_only_what_the_spec_writes_or_null(spec):
    nullable = set()

    def visit(schema, name):
        if isinstance(schema, dict):
            if schema.get("nullable") and name is not None:
                nullable.add(name)
            for key, sub in schema.get("properties", {}).items():
                visit(sub, key)
            for key in ("items", "allOf", "oneOf", "anyOf"):
                subs = schema.get(key, [])
                for sub in subs if isinstance(subs, list) else [subs]:
                    visit(sub, name)
    for name, schema in spec.components.items():
        if not name.endswith("Request"):                  # requests may send null where a reply never does
            visit(schema, None)
    assert nullable == SPEC_OR_NULL
