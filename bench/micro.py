#!/usr/bin/env python3
"""Micro-benchmarks behind the library choices of the request path (figures in docs/performance.md).

    .venv/bin/python bench/micro.py

Each line: the median of 5 timeit repeats, in microseconds per call, for the same input.
"""

import json
import statistics
import timeit

import fastjsonschema
import jsonschema
import jsonschema_rs
import orjson

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.document.spec import Spec

spec = Spec.load()
server = MockServer(Settings(rate_limit=10**9, rate_window=3600), spec=spec)
status = server.rt.deployments.status(server.rt.store.services.find("a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"), 0)
projects = {"results": [e.data for e in server.rt.store.projects.under(server.rt.default_org)] * 25}
body = {"key": "DATABASE_URL", "value": "postgres://orders.internal:5432/orders", "description": "orders"}
bad = {"key": "1 bad", "value": 5, "description": "x" * 300}
schema = spec.schema("VariableRequest")


def us(fn, number=2000):
    return statistics.median(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def row(name, fn, number=2000):
    print(f"{name:62} {us(fn, number):9.2f} us")


print("JSON encoding")
row("json.dumps(status).encode()", lambda: json.dumps(status).encode())
row("orjson.dumps(status)", lambda: orjson.dumps(status))
row("json.dumps(list of 50 projects).encode()", lambda: json.dumps(projects).encode(), 500)
row("orjson.dumps(list of 50 projects)", lambda: orjson.dumps(projects), 500)

print("Body validation (valid body of POST environmentVariable)")
draft7 = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
compiled = fastjsonschema.compile(schema)
rust = jsonschema_rs.validator_for(schema, validate_formats=True)
row("jsonschema Draft7Validator.is_valid", lambda: draft7.is_valid(body))
row("fastjsonschema compiled", lambda: compiled(body))
row("jsonschema_rs is_valid (used)", lambda: rust.is_valid(body))
print("Body validation (invalid body: every violation collected)")
row("jsonschema iter_errors (used for messages)", lambda: list(draft7.iter_errors(bad)))
row("mockserver Validator.errors", lambda: spec.operations["createProjectVariable"].body.errors(bad, "body"))

print("Route lookup")
paths = [op.template.replace("{", "").replace("}", "") for op in spec.operations.values()]
row("tree lookup of a deep path (used)",
    lambda: spec.match("POST", "/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/secret/"
                               "7f9b1d3e-5a7c-4e9f-9b1d-3e5a7c9f1b3d/override"))


LINEAR = [(op.method, op.template.split("/")) for op in spec.operations.values()]


def linear(method, path, table=LINEAR):
    parts = path.split("/")
    for m, segments in table:
        if m == method and len(segments) == len(parts) and all(
                s.startswith("{") or s == p for s, p in zip(segments, parts)):
            return segments


row("linear scan over the 203 operations (for comparison)",
    lambda: linear("POST", "/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/secret/"
                           "7f9b1d3e-5a7c-4e9f-9b1d-3e5a7c9f1b3d/override"))
