"""The control API under /_mock: plain route functions and one route table, grouped by noun.

Outside the documented API: no API token, no rate limit, not journaled (with
`--control-token`, every route but health needs that token). It is described by its own
small document, `/_mock/openapi.json`. Each route takes the request and reads what it needs
from it: the server (`server(request)`), the world of the request's sandbox (`world(request)`,
chosen in app.py) or the sandbox itself. Health, sandboxes and snapshots are global.
The inspector's routes (functions of control/inspector.py) are in the same table.
"""

import asyncio
import os
import time

import orjson
import yaml
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Route

from mockserver.calls.coverage import Retired, coverage, merged, tally, usage
from mockserver.calls.journal import mismatches
from mockserver.contract import provider
from mockserver.control import filters as call_filters
from mockserver.control import inspector
from mockserver.core.clock import MAX_SECONDS, iso
from mockserver.core.errors import ApiError
from mockserver.core.version import __version__
from mockserver.document.spec import CONTROL_DOCUMENT
from mockserver.edge import bodies, jsonbody
from mockserver.edge.cors import cross_origin
from mockserver.process import allocator
from mockserver.sandboxes import options
from mockserver.sandboxes.changelog import PROMISES
from mockserver.sandboxes.sandbox import DEFAULT, check_name
from mockserver.world.auth import GRANTS, Token, mint_jwt
from mockserver.world.export import export_fixtures
from mockserver.world.frozen import Snapshot, freeze
from mockserver.world.scenarios import ScenarioError, schema_document

COUNTS = ("count", "times", "at_least", "at_most")     # times: another name of count (the Python client's)


# ------------------------------------------------------------ what a route reads from its request
def server(request):
    """The MockServer the control API belongs to."""
    return request.app.state.server


def world(request):
    """The runtime of the request's sandbox."""
    return request.scope["mock.runtime"]


def sandbox(request):
    return request.scope["mock.sandbox"]


def reply(body, status=200):
    return Response(orjson.dumps(body), status, media_type="application/json")


def no_content():
    return Response(status_code=204)


async def json_body(request, required=True):
    raw = await bodies.read(request, server(request).settings.max_body)
    if not raw.strip():
        if required:
            raise ApiError(400, "body: a JSON request body is required")
        return {}
    body = jsonbody.loads(raw)
    if not isinstance(body, dict):
        raise ApiError(400, "body: must be a JSON object")
    return body


def shaped(body, **kinds):
    """The body, its fields checked against `kinds` (name -> bool or str): an unknown field or a value of
    another type is a 400 (a `"journal": "yes"` is not taken for true)."""
    unknown = set(body) - set(kinds)
    if unknown:
        raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))}; use {', '.join(kinds)}")
    for name, kind in kinds.items():
        if name in body and not isinstance(body[name], kind):
            raise ApiError(400, f"body.{name}: must be {'true or false' if kind is bool else 'a string'}")
    return body


async def document_text(request):
    """A YAML or JSON document sent as the body (a scenario), as text; JSON held to the nesting bound."""
    text = await bodies.scenario_text(request)
    jsonbody.check_document(text)
    return text


def resident_bytes():
    """The process's resident memory (Linux), or None where /proc is not there."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# ------------------------------------------------------------ health, reset, state
async def health(request):
    mock = server(request)
    budget = mock.shared.budget
    memory = {"rss_bytes": resident_bytes(), "journal_bytes": budget.total, "journal_limit": budget.limit,
              "allocator": allocator.in_force()}
    if mock.collector is not None:
        memory["gc"] = mock.collector.describe()
    body = {"status": "ok", "version": __version__, "clock": mock.settings.clock,
            "replica": mock.settings.replica_name, "sandboxes": len(mock.sandboxes),
            "uptime_seconds": round(time.time() - mock.started, 3), "memory": memory,
            "started_from": {**mock.loaded, "saved_at": iso(mock.loaded["saved_at"])} if "saved_at" in mock.loaded
            else mock.loaded}
    if mock.settings.upstream:                 # a recording proxy: "all" API paths forwarded, or "some"
        body["forwards"] = "some" if mock.settings.only or mock.settings.excluded else "all"
    if mock.settings.self_check:               # replies that broke the document (--self-check)
        body["self_check"] = {"violations": mock.pipeline.violation_count, "newest": mock.pipeline.violations[-5:]}
    if mock.saver is not None:
        body["state_file"] = mock.saver.describe()
        body["state_file"]["changes"] = mock.changelog.describe() if mock.changelog else PROMISES["off"]
        found = (mock.saver.health_problem(), mock.changelog and mock.changelog.health_problem())
        problems = [problem for problem in found if problem]
        if problems:                                 # still serving: the saves, or changes, are what fails
            body["status"] = "degraded"
            body["problems"] = problems
    return reply(body)


async def reset(request):
    body = shaped(await json_body(request, required=False), scenarios=bool)
    retire(request, sandbox(request))
    rt = server(request).reset_sandbox(sandbox(request), scenarios=bool(body.get("scenarios")))
    return reply({"reset": True, "sandbox": sandbox(request).name, "scenarios": sorted(rt.scenarios.active)})


async def state(request):
    rt = world(request)
    return reply({"sandbox": sandbox(request).name, "counts": rt.store.count(),
                  "tokens": sorted(t.name for t in rt.tokens.values()),
                  "active_deployments": len(rt.lifecycle.active), "journal_entries": len(rt.journal.entries)})


async def export(request):
    params = dict(request.query_params)
    unknown = set(params) - {"secrets"}
    if unknown:
        raise ApiError(400, f"unknown query parameter(s) {', '.join(sorted(unknown))}; use secrets")
    if params.get("secrets", "placeholders") not in ("placeholders", "include"):
        raise ApiError(400, f"query.secrets: {params['secrets']!r} is not one of placeholders, include")
    include = params.get("secrets") == "include"
    if include and cross_origin(request.scope):
        raise ApiError(403, "secrets=include is never answered to a browser page of another origin; "
                            "use mockserver export --include-secrets or curl")
    rt = world(request)
    rt.pump()
    text = export_fixtures(rt, server(request).spec, include_secrets=include)
    return Response(text.encode(), media_type="application/yaml")


# ------------------------------------------------------------ clock
async def clock(request):
    return reply(world(request).clock.describe())


async def advance(request):
    seconds = (await json_body(request)).get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_SECONDS:
        raise ApiError(400, f"body.seconds: a number of seconds from 0 to {MAX_SECONDS} is required")
    rt = world(request)
    try:
        rt.clock.advance(seconds)
    except ValueError as error:
        raise ApiError(400, f"body.seconds: {error}") from None
    rt.pump()
    return reply(rt.clock.describe())


# ------------------------------------------------------------ calls
def filters(request, params, accepted=()):
    """The journal filters of a query or body (control/filters.py); unknown names and values no call could match
    (a status, method or operation id the API does not have, an unreadable `since`, a token nobody has) are a 400."""
    return call_filters.read(params, server(request).spec.operations, world(request), accepted)


PAGE = 500                                  # calls in one reply of GET /_mock/calls without a limit
PAGE_BYTES = 8 * 1024 * 1024                # and the bytes of its results, whatever the limit: `more` says the rest


async def calls(request):
    """The matching calls a page at a time: without `limit`, the first PAGE by id from `after` (the cursor the
    previous page gave as `next_after`); with it, the newest `limit`. Either way the results stop at PAGE_BYTES."""
    rt = world(request)
    journal = rt.journal
    params = call_filters.from_query(request.query_params)
    after, limit = whole(params.pop("after", None), "after"), whole(params.pop("limit", None), "limit")
    wanted = filters(request, params, ("limit", "after"))
    if limit is None:
        found, total = journal.page(wanted, after, PAGE)
    else:
        found = journal.latest(wanted, limit, after)
        total = len(found)
    results, size = [], 0
    for call in found if limit is None else reversed(found):     # a limit keeps the newest when bytes run out
        rendered = journal.render(call, rt.webhooks.caused_by(call.id))
        size += len(orjson.dumps(rendered))
        if results and size > PAGE_BYTES:
            break
        results.append(rendered)
    if limit is not None:
        results.reverse()
    body = {"total": total, "dropped": journal.dropped, "journal_size": journal.size, "results": results,
            "more": len(results) < total}
    if body["more"] and limit is None:
        body["next_after"] = results[-1]["id"]
    return reply(body)


def whole(text, name):
    """A query parameter that is a whole number, or None when absent; a 400 naming it otherwise."""
    if text is None:
        return None
    if not text.isdigit() or len(text) > 18:
        raise ApiError(400, f"query.{name}: must be a whole number")
    return int(text)


async def export_calls(request):
    """The calls matching the filters as a pact or a HAR log (contract/provider.py)."""
    params = call_filters.from_query(request.query_params)
    chosen = {name: params.pop(name) for name in provider.OPTIONS if name in params}
    limit = params.pop("limit", None)
    wanted = filters(request, params, ("limit", *provider.OPTIONS))
    box, journal = sandbox(request), world(request).journal
    if limit is not None and not limit.isdigit():
        raise ApiError(400, "query.limit: must be a whole number")
    found = journal.select(wanted) if limit is None else journal.latest(wanted, int(limit))
    return reply(provider.export(server(request), box, found, chosen, provider.base_url(request, box)))


async def provider_states(request):
    """A Pact verifier's state change: {state, params, action} in the body, or in the query string."""
    body = await json_body(request, required=False)
    if not body:                                # a verifier told not to send a body uses the query string
        query = dict(request.query_params)
        body = {"state": query.pop("state", ""), "action": query.pop("action", "setup"), "params": query}
    return reply(provider.change(server(request), sandbox(request), body))


async def calls_coverage(request):
    return reply(coverage(world(request).journal, server(request).spec.operations))


# ------------------------------------------------------------ usage: what a suite never used
def world_tally(request, rt):
    active = rt.scenarios
    return tally(rt.journal, server(request).spec.operations, [active.describe(name) for name in active.active])


def box_tally(request, box):
    """A live sandbox's tally; one that slept is woken to be counted and put back to sleep (memory stays flat)."""
    asleep = box.asleep
    counted = world_tally(request, box.rt)
    if asleep:
        box.sleep()
    return counted


def retire(request, box):
    """What a sandbox's world used, noted before the world goes (deleted, replaced, reset, restored): the
    mock-wide usage still counts it."""
    if box is not None:
        request.app.state.retired.add(box.name, world_tally(request, box.rt))


async def get_usage(request):
    """The rules that never fired and the operations never called: of the request's sandbox, or with
    `scope=mock` of every sandbox (those whose name starts with `prefix`), gone ones included."""
    params = dict(request.query_params)
    unknown = set(params) - {"scope", "prefix"}
    if unknown:
        raise ApiError(400, f"unknown query parameter(s) {', '.join(sorted(unknown))}; use scope, prefix")
    scope, prefix = params.get("scope", "sandbox"), params.get("prefix")
    if scope not in ("sandbox", "mock"):
        raise ApiError(400, f"query.scope: {scope[:80]!r} is not one of sandbox, mock")
    operations = server(request).spec.operations
    if scope == "sandbox":
        if prefix is not None:
            raise ApiError(400, "query.prefix: names the sandboxes of scope=mock; a sandbox's usage takes none")
        return reply({"scope": scope, "sandbox": sandbox(request).name,
                      **usage(world_tally(request, world(request)), operations)})
    prefix = prefix or ""
    retired = request.app.state.retired
    live = [box_tally(request, box) for box in server(request).sandboxes if box.name.startswith(prefix)]
    return reply({"scope": scope, "prefix": prefix, **usage(merged(live + retired.named(prefix)), operations),
                  "forgotten_sandboxes": retired.forgotten})


async def clear_calls(request):
    world(request).journal.clear()
    return no_content()


def expectation(body):
    """The counts a verify asks for (at least one matching call when it names none)."""
    if "count" in body and "times" in body:     # two names of one bound: which one was meant is not the mock's guess
        raise ApiError(400, "body.times: another name of count: give count or times, not both")
    expect = {"count" if name == "times" else name: body[name] for name in COUNTS if name in body} or {"at_least": 1}
    for name, value in expect.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ApiError(400, f"body.{name}: must be a whole number >= 0")
    return expect


def explain(journal, found, wanted, message):
    """The verify message when it failed: the matches and the calls that missed by one filter."""
    lines = [message] + [f"  matched: {journal.summary(call)}" for call in found[-10:]]
    near = [f"  near miss: {journal.summary(call)} (differs in {missed[0]})"
            for call in journal.entries if len(missed := mismatches(call, wanted)) == 1]
    return "\n".join(lines + near[-10:])


async def verify(request):
    body = await json_body(request)
    if "limit" in body:                         # a filter of /_mock/calls, not of a count
        raise ApiError(400, "body.limit: verify counts every matching call; use count, at_least or at_most")
    wanted, expect = filters(request, body, COUNTS), expectation(body)
    journal = world(request).journal
    found = journal.select(wanted)
    actual = len(found)
    ok = (expect.get("count", actual) == actual and actual >= expect.get("at_least", 0)
          and actual <= expect.get("at_most", actual))
    described = ", ".join(f"{k}={v if isinstance(v, str) else orjson.dumps(v).decode()}"
                          for k, v in wanted.items()) or "any call"
    wanted_text = " and ".join(f"{k.replace('_', ' ')} {v}" for k, v in expect.items())
    message = f"expected {wanted_text} call(s) matching {described}; found {actual}"
    elsewhere = []
    if not ok:
        message = explain(journal, found, wanted, message)
        if actual < expect.get("count", expect.get("at_least", 0)):     # too few here: did they go elsewhere?
            elsewhere = call_filters.elsewhere(server(request).sandboxes, sandbox(request).name, wanted, DEFAULT)
            message = "\n".join([message, *call_filters.said(elsewhere, DEFAULT)])
    return reply({"ok": ok, "expected": expect, "actual": actual, "filters": wanted, "message": message,
                  "matched": [journal.summary(call) for call in found[-50:]],
                  **({"elsewhere": elsewhere} if elsewhere else {})})


# ------------------------------------------------------------ scenarios
async def scenarios(request):
    active = world(request).scenarios
    return reply({"results": [active.describe(name) for name in active.active]})


async def scenario(request):
    name, active = request.path_params["name"], world(request).scenarios
    if name not in active.active:
        raise ApiError(404, f"scenario {name} is not active")
    return reply(active.describe(name))


async def remove_scenario(request):
    if not world(request).scenarios.remove(request.path_params["name"]):
        raise ApiError(404, f"scenario {request.path_params['name']} is not active")
    return no_content()


async def put_scenario(request):
    name, active = request.path_params["name"], world(request).scenarios
    text = await document_text(request)
    try:
        await active.load_text_aside(text, f"PUT /_mock/scenarios/{name}", name=name)
    except ScenarioError as error:
        raise ApiError(400, str(error), error.details()) from None
    except RecursionError:
        raise jsonbody.too_deep("body") from None
    return reply({**active.describe(name), "warnings": active.warnings})


# ------------------------------------------------------------ webhooks, tokens
async def deliveries(request):
    params = request.query_params
    found = [d for d in world(request).webhooks.deliveries
             if all(str(d.get(k)) == params[k] for k in ("webhook_id", "event_type", "status") if k in params)]
    return reply({"total": len(found), "results": found})


def token_request(rt, body):
    """(scopes, organization, ttl seconds or None) of a token request, or a 400."""
    scopes = body.get("scopes", ["Admin"])
    if not isinstance(scopes, list) or not scopes or any(not isinstance(s, str) or s not in GRANTS for s in scopes):
        raise ApiError(400, f"body.scopes: a non-empty list of {', '.join(GRANTS)}")
    org = body.get("organization", rt.default_org)
    if not isinstance(org, str) or rt.store.organizations.find(org) is None:
        raise ApiError(400, f"body.organization: unknown organization {str(org)[:80]}")
    ttl = body.get("ttl_seconds")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_SECONDS):
        raise ApiError(400, f"body.ttl_seconds: a number of seconds > 0 and <= {MAX_SECONDS}")
    return scopes, org, ttl


async def tokens(request):
    body = await json_body(request)
    rt = world(request)
    scopes, org, ttl = token_request(rt, body)
    unknown = set(body) - {"name", "kind", "scopes", "organization", "ttl_seconds"}
    if unknown:
        raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))}; use name, kind, scopes, organization, "
                            "ttl_seconds")
    name = body.get("name") or f"minted-{len(rt.tokens) + 1}"
    if not isinstance(name, str) or len(name) > 200:
        raise ApiError(400, "body.name: a string of at most 200 characters (the token's name)")
    now = rt.clock.now()
    expires = now + ttl if ttl else None
    kind = body.get("kind", "token")
    if kind not in ("token", "jwt"):
        raise ApiError(400, f"body.kind: {str(kind)[:40]!r} is not one of token, jwt")
    if kind == "jwt":
        expires = expires or now + 3600
        value = mint_jwt(server(request).settings.jwt_secret,
                         {"sub": name, "org": org, "scopes": scopes, "iat": int(now), "exp": int(expires)})
    else:
        value = f"mock-{rt.fake.uuid().replace('-', '')}"
        rt.add_token(Token(name=name, value=value, organization=org, scopes=scopes, expires_at=expires))
    return reply({"name": name, "token": value, "kind": kind, "scopes": scopes, "organization": org,
                  "expires_at": iso(expires) if expires else None}, 201)


# ------------------------------------------------------------ sandboxes (global)
async def sandboxes(request):
    boxes = server(request).sandboxes
    return reply({"replica": server(request).settings.replica_name, "limit": boxes.limit, "ttl_seconds": boxes.ttl,
                  "results": [box.describe() for box in boxes]})


async def drop_sandboxes(request):
    """Every sandbox but `default` deleted, and `default` reset: the server as it started."""
    mock = server(request)
    for box in mock.sandboxes:
        retire(request, box)
        if box.name != DEFAULT:
            mock.sandboxes.delete(box.name)
    mock.reset_sandbox(mock.sandboxes.get_quietly(DEFAULT), scenarios=True)
    return no_content()


async def get_sandbox(request):
    return reply(server(request).sandboxes.find(check_name(request.path_params["name"])).describe())


async def delete_sandbox(request):
    """Delete a sandbox (its private snapshots with it); `?snapshots=delete` also every snapshot saved from it."""
    name, mock = check_name(request.path_params["name"]), server(request)
    params = dict(request.query_params)
    if set(params) - {"snapshots"} or params.get("snapshots", "keep") not in ("keep", "delete"):
        raise ApiError(400, "query: only snapshots=keep (the default: its shared snapshots stay) or "
                            "snapshots=delete (every snapshot saved from the sandbox goes with it)")
    retire(request, mock.sandboxes.live.get(name))
    if mock.sandboxes.delete(name) is None:
        raise ApiError(404, f"sandbox {name} not found")
    if params.get("snapshots") == "delete":
        mock.drop_snapshots(name)
    return no_content()


async def put_sandbox(request):
    name, boxes = check_name(request.path_params["name"]), server(request).sandboxes
    existed = name in boxes.live
    chosen = options.check(await json_body(request, required=False))
    fixtures = None
    if "fixtures" in chosen:                   # files are read in a thread: the event loop never waits on a disk
        fixtures = await asyncio.to_thread(options.read_folder, chosen["fixtures"], server(request).spec)
    retire(request, boxes.live.get(name))
    box = boxes.create(name, chosen, replace=True, fixtures=fixtures)
    return reply(box.describe(), 200 if existed else 201)


async def reset_named_sandbox(request):
    box = server(request).sandboxes.find(check_name(request.path_params["name"]))
    body = shaped(await json_body(request, required=False), scenarios=bool)
    retire(request, box)
    server(request).reset_sandbox(box, scenarios=bool(body.get("scenarios")))
    return reply(box.describe())


# ------------------------------------------------------------ snapshots (shared by all sandboxes)
async def snapshots(request):
    mock = server(request)
    return reply({"results": [{"name": "fixtures", "sandbox": None, "builtin": True, "bytes": len(mock.origin)}]
                  + [snap.describe() for snap in mock.snapshots.values()]})


async def save_snapshot(request):
    body = shaped(await json_body(request), name=str, journal=bool, replace=bool, private=bool)
    name, mock = body.get("name"), server(request)
    if not isinstance(name, str):
        raise ApiError(400, "body.name: a snapshot name is required")
    check_name(name, "snapshot")
    if name == "fixtures":
        raise ApiError(409, "snapshot fixtures is the start world and cannot be replaced")
    if name in mock.snapshots and not body.get("replace"):
        raise ApiError(409, f"snapshot {name} exists: delete it first, or send \"replace\": true")
    limit = mock.settings.max_snapshots
    if name not in mock.snapshots and len(mock.snapshots) >= limit:
        raise ApiError(503, f"snapshot {name} cannot be saved: {len(mock.snapshots)} snapshots exist, the limit is "
                            f"{limit} (delete some with DELETE /_mock/snapshots/{{name}}, or start the server with "
                            "a higher --max-snapshots)")
    rt, journal = world(request), bool(body.get("journal"))
    snap = Snapshot(name, freeze(rt, mock.shared, journal=journal), sandbox(request).name, time.time(),
                    rt.clock.now(), journal, sum(rt.store.count().values()), bool(body.get("private")))
    mock.snapshots[name] = snap
    return reply(snap.describe(), 201)


async def get_snapshot(request):
    name, saved = request.path_params["name"], server(request).snapshots
    if name not in saved:
        raise ApiError(404, f"snapshot {name} not found")
    return reply(saved[name].describe())


async def delete_snapshot(request):
    name = request.path_params["name"]
    if name == "fixtures":
        raise ApiError(409, "snapshot fixtures is the start world and cannot be deleted")
    if server(request).snapshots.pop(name, None) is None:
        raise ApiError(404, f"snapshot {name} not found")
    return no_content()


async def restore_snapshot(request):
    name, box = request.path_params["name"], sandbox(request)
    if name != "fixtures" and name not in server(request).snapshots:
        raise ApiError(404, f"snapshot {name} not found")
    retire(request, box)
    rt = server(request).restore_snapshot(box, name)
    return reply({"restored": name, "sandbox": box.name, "clock": rt.clock.describe(),
                  "resources": sum(rt.store.count().values())})


# ------------------------------------------------------------ the control document, errors
async def document(request):
    state = request.app.state
    if getattr(state, "document", None) is None:
        state.document = orjson.dumps(yaml.safe_load(CONTROL_DOCUMENT.read_text()))
    return Response(state.document, media_type="application/json")


async def scenario_schema(request):
    """The JSON Schema of scenario files (editors: `# yaml-language-server: $schema=<this URL>`)."""
    return Response(orjson.dumps(schema_document()), media_type="application/schema+json")


async def api_error(request, exc):
    return Response(exc.render(), exc.status, media_type="application/json", headers=exc.headers)


async def http_error(request, exc):
    message = exc.detail if exc.status_code != 405 else f"method {request.method} is not allowed on {request.url.path}"
    return await api_error(request, ApiError(exc.status_code, message, headers=exc.headers))


async def client_gone(request, exc):
    """The client closed its connection before its body came: nobody reads this reply, but it is one."""
    return await api_error(request, ApiError(400, "client disconnected before the body was read"))


async def internal_error(request, exc):
    """A bug in a control route: still the error body (the server logs the traceback)."""
    return await api_error(request, ApiError(500, f"internal error: {type(exc).__name__}"))


def route(path, **endpoints):
    """One route of the table: a path and its functions by method (so that a 405 lists every method)."""
    async def endpoint(request):
        return await endpoints["GET" if request.method == "HEAD" else request.method](request)
    return Route(path, endpoint, methods=list(endpoints), name=path)


ROUTES = [
    route("/_mock/health", GET=health),
    route("/_mock/reset", POST=reset),
    route("/_mock/state", GET=state),
    route("/_mock/state/export", GET=export),
    route("/_mock/clock", GET=clock),
    route("/_mock/clock/advance", POST=advance),
    route("/_mock/calls", GET=calls, DELETE=clear_calls),
    route("/_mock/calls/verify", POST=verify),
    route("/_mock/calls/coverage", GET=calls_coverage),
    route("/_mock/usage", GET=get_usage),
    route("/_mock/calls/export", GET=export_calls),
    route("/_mock/provider-states", POST=provider_states),
    route("/_mock/calls/rows", GET=inspector.call_rows),
    route("/_mock/calls/{id:int}", GET=inspector.call),
    route("/_mock/deployments", GET=inspector.deployments),
    route("/_mock/state/tree", GET=inspector.state_tree),
    route("/_mock/scenarios", GET=scenarios, POST=inspector.activate_scenario),
    route("/_mock/scenarios/{name}", GET=scenario, PUT=put_scenario, DELETE=remove_scenario),
    route("/_mock/webhooks/deliveries", GET=deliveries),
    route("/_mock/tokens", POST=tokens),
    route("/_mock/sandboxes", GET=sandboxes, DELETE=drop_sandboxes),
    route("/_mock/sandboxes/{name}", GET=get_sandbox, PUT=put_sandbox, DELETE=delete_sandbox),
    route("/_mock/sandboxes/{name}/reset", POST=reset_named_sandbox),
    route("/_mock/snapshots", GET=snapshots, POST=save_snapshot),
    route("/_mock/snapshots/{name}", GET=get_snapshot, DELETE=delete_snapshot),
    route("/_mock/snapshots/{name}/restore", POST=restore_snapshot),
    route("/_mock/openapi.json", GET=document),
    route("/_mock/schemas/scenario.json", GET=scenario_schema),
    route("/_mock/ui", GET=inspector.page),
    route("/_mock/ui/", GET=inspector.page_slash),
    route("/_mock/ui/{file}", GET=inspector.asset),
]


def control_app(mock):
    """The control API of one server: the route table, the server in the app's state."""
    app = Starlette(routes=ROUTES, exception_handlers={ApiError: api_error, HTTPException: http_error,
                                                       ClientDisconnect: client_gone, Exception: internal_error})
    app.state.server = mock
    app.state.retired = Retired()            # what sandboxes gone used (GET /_mock/usage?scope=mock)
    return app
