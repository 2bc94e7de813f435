"""A type-confusion fuzzer of the control API against a live `mockserver serve`.

Each control route's valid request (tests/support/control_routes.py) is sent mutated: every value of
its JSON body, at any depth, replaced by a value of each other JSON type (and by a few values that break
careless code: huge numbers, long strings, NUL, deep nesting); every member removed in turn; the whole
body replaced by each of those values; every query parameter a route reads given each of them; and each
path parameter given odd names. The mutations go in turn to the default world and to a sandbox.

Asserted: no reply is a 5xx, none hangs, every 4xx is the error body {status, error, message, details},
and afterwards the mock still answers, its state whole. The figures are printed (`pytest -s`).
"""

import collections
import concurrent.futures
import copy
import json
import time

import httpx
import pytest
from support.control_routes import CONTROL_REQUESTS

HANG = 10.0
WORKERS = 4
ODD_VALUES = (None, True, False, 0, -1, 2 ** 64, 1e308, -0.5, "", "x", "9" * 400, "a\u0000b", [], [1, "a"], {},
              {"a": {"b": [None]}}, [[[[[[[[]]]]]]]])
ODD_NAMES = ("..", "%2e%2e", "a" * 300, "%00", "ä", "-", "default")
QUERY = ("limit", "since", "method", "path", "operation", "status", "format", "sandbox", "token", "rule",
         "consumer", "provider", "spec", "after", "before", "kind", "redacted")
ODD_QUERY = ("", "-1", "0", "abc", "1e99", "99999999999999999999", "%00", "[]", "true", "a" * 2000)
TEXT = {"Content-Type": "application/json"}
FULLER = {                                              # every member a route reads, not only the required ones
    ("PUT", "/_mock/sandboxes/fuzz-full"): {
        "clock": "manual", "start": "2026-01-01T00:00:00Z", "seed": 7, "rate_limit": "5/10s",
        "scenarios": ["flaky-status", {"name": "inline", "rules": [{"match": {"operation": "getOrganization"},
                                                                    "effect": {"status": 503}}]}],
        "journal_body_limit": 4096, "poll_progress": {"reads": 3, "services": {"kind": "APPLICATION"},
                                                      "actions": ["DEPLOY"]}},
    ("POST", "/_mock/snapshots"): {"name": "fuzz-snap", "replace": True, "journal": True, "private": False},
    ("POST", "/_mock/calls/verify"): {"method": "GET", "path": "/organization", "status": "2xx", "count": 0,
                                      "at_least": 0, "at_most": 5, "since": "0"},
}
SPARED = {("DELETE", "/_mock/sandboxes")}               # it would take the sandbox world away from the rest


def leaves(value, path=()):
    """Every position in a JSON value: its path (keys and indexes), the root included."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from leaves(inner, path + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from leaves(inner, path + (index,))


def replaced(body, path, value):
    if not path:
        return value
    out = copy.deepcopy(body)
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return out


def removed(body, path):
    out = copy.deepcopy(body)
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    del holder[path[-1]]
    return out


def mutations():
    """(label, method, url, body bytes or None) for every mutation of every control request."""
    out = []
    for (method, url), body in [*CONTROL_REQUESTS.items(), *FULLER.items()]:
        if not url.startswith("/_mock/") or url.startswith("/_mock/ui") or (method, url) in SPARED:
            continue
        bare = url.split("?")[0]
        for name in QUERY:
            out += [(f"{method} {bare} ?{name}={value[:12]}", method, f"{bare}?{name}={value}",
                     None if body is None else json.dumps(body).encode()) for value in ODD_QUERY]
        segments = bare.split("/")
        if len(segments) > 3:                          # /_mock/kind/{name}...: the name made odd
            for name in ODD_NAMES:
                odd = "/".join(segments[:3] + [name] + segments[4:])
                out.append((f"{method} {odd[:60]}", method, odd, None if body is None else json.dumps(body).encode()))
        if body is None:
            out += [(f"{method} {bare} body {value!r:.20}", method, bare, json.dumps(value).encode())
                    for value in ODD_VALUES[:6]]           # a body where none is taken
            continue
        for path in leaves(body):
            out += [(f"{method} {bare} {path}={value!r:.20}", method, bare,
                     json.dumps(replaced(body, path, value)).encode()) for value in ODD_VALUES]
            if path:
                out.append((f"{method} {bare} without {path}", method, bare, json.dumps(removed(body, path)).encode()))
        out += [(f"{method} {bare} not JSON", method, bare, b'{"a": '),
                (f"{method} {bare} bytes", method, bare, b"\xff\xfe\x00")]
    return out


def send(http, item, world):
    label, method, url, body = item
    headers = dict(TEXT, **({"X-Mock-Sandbox": world} if world else {}))
    started = time.monotonic()
    try:
        reply = http.request(method, url, content=body, headers=headers)
    except httpx.TimeoutException:
        return label, world, "hang", b"", time.monotonic() - started
    return label, world, reply.status_code, reply.content, time.monotonic() - started


def problems_of(outcomes):
    problems = []
    for label, world, status, body, _ in outcomes:
        where = f"{label} in {world or 'default'}"
        if status == "hang":
            problems.append(f"{where}: no reply within {HANG} s")
        elif status >= 500:
            problems.append(f"{where}: {status} {body[:300]!r}")
        elif status >= 400:
            error = json.loads(body)
            if set(error) - {"details"} != {"status", "error", "message"} or error["status"] != status:
                problems.append(f"{where}: error body {body[:200]!r}")
    return problems


@pytest.mark.server
def test_no_type_confused_control_request_is_a_5xx_or_a_hang(live_server):
    server = live_server("--clock", "manual", "--log-level", "error", "--max-sandboxes", "500")
    work = mutations()
    assert len(work) >= 3000                           # the size the suite promises
    started = time.monotonic()
    with httpx.Client(base_url=server.url, timeout=HANG) as http:
        http.put("/_mock/sandboxes/fuzz-world", json={})
        http.put("/_mock/sandboxes/fuzz-box", json={})
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            outcomes = list(pool.map(lambda pair: send(http, *pair),
                                     [(item, (None, "fuzz-world")[index % 2]) for index, item in enumerate(work)]))
        seconds = time.monotonic() - started
        statuses = collections.Counter(str(out[2]) for out in outcomes)
        print(f"\ncontrol fuzz: {len(outcomes)} requests in {seconds:.1f} s; "
              f"statuses {dict(sorted(statuses.items()))}; slowest {max(out[4] for out in outcomes) * 1000:.0f} ms")
        assert problems_of(outcomes) == []
        assert http.get("/_mock/health").json()["status"] == "ok"
        api = {"Authorization": "Token mock-admin-token"}
        assert http.get("/api/v1/organization", headers=api).status_code == 200
        assert http.get("/api/v1/organization", headers={**api, "X-Mock-Sandbox": "fuzz-world"}).status_code == 200
