"""The control API under /_mock: one route table, grouped by noun.

Outside the documented API: no API token, no rate limit, not journaled (with
`--control-token`, every route but health needs that token). It is described by its own
small document, `/_mock/openapi.json`. Routes act on the world of the request's sandbox
(`world(request)`, chosen in app.py), except the global ones: health, sandboxes, snapshots.
"""

import os
import time
from pathlib import Path

import orjson
import yaml
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Route

from . import __version__
from .auth import GRANTS, Token, mint_jwt
from .clock import MAX_SECONDS, iso
from .coverage import coverage
from .errors import ApiError
from .export import export_fixtures
from .inspector import Inspector
from .journal import FILTERS, mismatches, parse_since
from .sandboxes import DEFAULT, check_name
from .scenarios import ScenarioError
from .world import Snapshot, freeze, thaw

DOCUMENT = Path(__file__).with_name("openapi") / "control.yaml"


def resident_bytes():
    """The process's resident memory (Linux), or None where /proc is not there."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def world(request):
    """The runtime of the request's sandbox."""
    return request.scope["mock.runtime"]


def build_control(server):
    started = time.time()
    cache = []                                 # the control document, read on first use

    def reply(body, status=200):
        return Response(orjson.dumps(body), status, media_type="application/json")

    async def json_body(request, required=True):
        raw = await request.body()
        if not raw.strip():
            if required:
                raise ApiError(400, "body: a JSON request body is required")
            return {}
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise ApiError(400, f"body: malformed JSON: {error}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "body: must be a JSON object")
        return body

    # ------------------------------------------------------------ health, reset, state
    async def health(request):
        budget = server.shared.budget
        memory = {"rss_bytes": resident_bytes(), "journal_bytes": budget.total, "journal_limit": budget.limit}
        if server.collector is not None:
            memory["gc"] = server.collector.describe()
        return reply({"status": "ok", "version": __version__, "clock": server.settings.clock,
                      "replica": server.settings.replica_name, "sandboxes": len(server.sandboxes),
                      "uptime_seconds": round(time.time() - started, 3), "memory": memory})

    async def reset(request):
        body = await json_body(request, required=False)
        rt = server.reset_sandbox(request.scope["mock.sandbox"], scenarios=bool(body.get("scenarios")))
        return reply({"reset": True, "sandbox": request.scope["mock.sandbox"].name,
                      "scenarios": sorted(rt.scenarios.active)})

    async def state(request):
        rt = world(request)
        return reply({"sandbox": request.scope["mock.sandbox"].name,
                      "counts": rt.store.count(), "tokens": sorted(t.name for t in rt.tokens.values()),
                      "active_deployments": len(rt.lifecycle.active), "journal_entries": len(rt.journal.entries)})

    async def export(request):
        rt = world(request)
        params = dict(request.query_params)
        unknown = set(params) - {"secrets"}
        if unknown:
            raise ApiError(400, f"unknown query parameter(s) {', '.join(sorted(unknown))}; use secrets")
        if params.get("secrets", "placeholders") not in ("placeholders", "include"):
            raise ApiError(400, f"query.secrets: {params['secrets']!r} is not one of placeholders, include")
        rt.pump()
        text = export_fixtures(rt, server.spec, include_secrets=params.get("secrets") == "include")
        return Response(text.encode(), media_type="application/yaml")

    # ------------------------------------------------------------ clock
    async def clock(request):
        return reply(world(request).clock.describe())

    async def advance(request):
        body = await json_body(request)
        seconds = body.get("seconds")
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
    def filters(params):
        out = {name: params.get(name) for name in FILTERS if params.get(name) not in (None, "")}
        unknown = set(params) - set(FILTERS) - {"limit", "count", "at_least", "at_most"}
        if unknown:
            raise ApiError(400, f"unknown filter(s) {', '.join(sorted(unknown))}; use {', '.join(FILTERS)}")
        if "since" in out:
            try:
                parse_since(out["since"])
            except ValueError:
                raise ApiError(400, f"since: {out['since']!r} is neither a call id nor an ISO 8601 time") from None
        return out

    async def calls(request):
        journal = world(request).journal
        wanted = filters(dict(request.query_params))
        found = journal.select(wanted)
        limit = request.query_params.get("limit")
        if limit is not None:
            if not limit.isdigit():
                raise ApiError(400, "query.limit: must be a whole number")
            found = found[-int(limit):] if int(limit) else []
        webhooks = world(request).webhooks
        return reply({"total": len(found), "dropped": journal.dropped, "journal_size": journal.size,
                      "results": [journal.render(e, webhooks.caused_by(e.id)) for e in found]})

    async def calls_coverage(request):
        return reply(coverage(world(request).journal, server.spec.operations))

    async def clear_calls(request):
        world(request).journal.clear()
        return Response(status_code=204)

    async def verify(request):
        body = await json_body(request)
        wanted = filters(body)
        expect = {k: body[k] for k in ("count", "at_least", "at_most") if k in body}
        if not expect:
            expect = {"at_least": 1}
        for name, value in expect.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ApiError(400, f"body.{name}: must be a whole number >= 0")
        journal = world(request).journal
        found = journal.select(wanted)
        actual = len(found)
        ok = (("count" not in expect or actual == expect["count"])
              and ("at_least" not in expect or actual >= expect["at_least"])
              and ("at_most" not in expect or actual <= expect["at_most"]))
        described = ", ".join(f"{k}={v}" for k, v in wanted.items()) or "any call"
        wanted_text = " and ".join(f"{k.replace('_', ' ')} {v}" for k, v in expect.items())
        message = f"expected {wanted_text} call(s) matching {described}; found {actual}"
        near = []
        if not ok:
            lines = [message] + [f"  matched: {journal.summary(e)}" for e in found[-10:]]
            for entry in journal.entries:
                missed = mismatches(entry, wanted)
                if len(missed) == 1:
                    near.append(f"  near miss: {journal.summary(entry)} (differs in {missed[0]})")
            message = "\n".join(lines + near[-10:])
        return reply({"ok": ok, "expected": expect, "actual": actual, "filters": wanted, "message": message,
                      "matched": [journal.summary(e) for e in found[-50:]]})

    # ------------------------------------------------------------ scenarios
    async def scenarios(request):
        active = world(request).scenarios
        return reply({"results": [active.describe(name) for name in active.active]})

    async def scenario(request):
        name = request.path_params["name"]
        active = world(request).scenarios
        if request.method == "GET":
            if name not in active.active:
                raise ApiError(404, f"scenario {name} is not active")
            return reply(active.describe(name))
        if request.method == "DELETE":
            if not active.remove(name):
                raise ApiError(404, f"scenario {name} is not active")
            return Response(status_code=204)
        text = (await request.body()).decode("utf-8", errors="replace")
        try:
            active.load_text(text, f"PUT /_mock/scenarios/{name}", name=name)
        except ScenarioError as error:
            raise ApiError(400, str(error)) from None
        return reply(active.describe(name))

    # ------------------------------------------------------------ webhooks, tokens
    async def deliveries(request):
        params = request.query_params
        found = [d for d in world(request).webhooks.deliveries
                 if all(str(d.get(k)) == params[k] for k in ("webhook_id", "event_type", "status") if k in params)]
        return reply({"total": len(found), "results": found})

    async def tokens(request):
        body = await json_body(request)
        rt = world(request)
        scopes = body.get("scopes", ["Admin"])
        if not isinstance(scopes, list) or not scopes or any(s not in GRANTS for s in scopes):
            raise ApiError(400, f"body.scopes: a non-empty list of {', '.join(GRANTS)}")
        org = body.get("organization", rt.default_org)
        if rt.store.organizations.find(org) is None:
            raise ApiError(400, f"body.organization: unknown organization {org}")
        ttl = body.get("ttl_seconds")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))
                                or not 0 < ttl <= MAX_SECONDS):
            raise ApiError(400, f"body.ttl_seconds: a number of seconds > 0 and <= {MAX_SECONDS}")
        name = str(body.get("name") or f"minted-{len(rt.tokens) + 1}")
        now = rt.clock.now()
        expires = now + ttl if ttl else None
        if body.get("kind", "token") == "jwt":
            value = mint_jwt(server.settings.jwt_secret,
                             {"sub": name, "org": org, "scopes": scopes, "iat": int(now),
                              "exp": int(expires if expires else now + 3600)})
            expires = expires or now + 3600
        else:
            value = f"mock-{rt.fake.uuid().replace('-', '')}"
            rt.add_token(Token(name=name, value=value, organization=org, scopes=scopes, expires_at=expires))
        return reply({"name": name, "token": value, "kind": body.get("kind", "token"), "scopes": scopes,
                      "organization": org, "expires_at": iso(expires) if expires else None}, 201)

    # ------------------------------------------------------------ sandboxes (global)
    async def sandboxes(request):
        return reply({"replica": server.settings.replica_name, "limit": server.sandboxes.limit,
                      "ttl_seconds": server.sandboxes.ttl,
                      "results": [box.describe() for box in server.sandboxes]})

    async def drop_sandboxes(request):
        """Every sandbox but `default` deleted, and `default` reset: the server as it started."""
        for box in server.sandboxes:
            if box.name != DEFAULT:
                server.sandboxes.delete(box.name)
        server.reset_sandbox(server.sandboxes.get_quietly(DEFAULT), scenarios=True)
        return Response(status_code=204)

    async def sandbox(request):
        name = check_name(request.path_params["name"])
        if request.method == "GET":
            return reply(server.sandboxes.find(name).describe())
        if request.method == "DELETE":
            if server.sandboxes.delete(name) is None:
                raise ApiError(404, f"sandbox {name} not found")
            return Response(status_code=204)
        existed = name in server.sandboxes.live
        box = server.sandboxes.create(name, await json_body(request, required=False), replace=True)
        return reply(box.describe(), 200 if existed else 201)

    async def reset_sandbox(request):
        box = server.sandboxes.find(check_name(request.path_params["name"]))
        body = await json_body(request, required=False)
        server.reset_sandbox(box, scenarios=bool(body.get("scenarios")))
        return reply(box.describe())

    # ------------------------------------------------------------ snapshots (shared by all sandboxes)
    async def snapshots(request):
        return reply({"results": [{"name": "fixtures", "sandbox": None, "builtin": True,
                                   "bytes": len(server.origin)}]
                      + [snap.describe() for snap in server.snapshots.values()]})

    async def save_snapshot(request):
        body = await json_body(request)
        name = body.get("name")
        if not isinstance(name, str):
            raise ApiError(400, "body.name: a snapshot name is required")
        check_name(name)
        if name == "fixtures":
            raise ApiError(409, "snapshot fixtures is the start world and cannot be replaced")
        if name in server.snapshots and not body.get("replace"):
            raise ApiError(409, f"snapshot {name} exists: delete it first, or send \"replace\": true")
        box, rt = request.scope["mock.sandbox"], world(request)
        journal = bool(body.get("journal"))
        snap = Snapshot(name, freeze(rt, server.shared, journal=journal), box.name, time.time(), rt.clock.now(),
                        journal, sum(rt.store.count().values()))
        server.snapshots[name] = snap
        return reply(snap.describe(), 201)

    async def snapshot(request):
        name = request.path_params["name"]
        if request.method == "DELETE":
            if name == "fixtures":
                raise ApiError(409, "snapshot fixtures is the start world and cannot be deleted")
            if server.snapshots.pop(name, None) is None:
                raise ApiError(404, f"snapshot {name} not found")
            return Response(status_code=204)
        if name not in server.snapshots:
            raise ApiError(404, f"snapshot {name} not found")
        return reply(server.snapshots[name].describe())

    async def restore_snapshot(request):
        name = request.path_params["name"]
        box = request.scope["mock.sandbox"]
        if name == "fixtures":
            data, at = server.origin, None
        elif name in server.snapshots:
            data, at = server.snapshots[name].data, server.snapshots[name].clock_at
        else:
            raise ApiError(404, f"snapshot {name} not found")
        old, box.rt = box.rt, thaw(data, server.shared)
        if at is not None:
            box.rt.clock.resume_at(at)        # the world goes on from the moment it was saved
        from .app import retire
        retire(old)
        return reply({"restored": name, "sandbox": box.name, "clock": box.rt.clock.describe(),
                      "resources": sum(box.rt.store.count().values())})

    async def document(request):
        if not cache:
            cache.append(orjson.dumps(yaml.safe_load(DOCUMENT.read_text())))
        return Response(cache[0], media_type="application/json")

    async def api_error(request, exc):
        return Response(exc.render(), exc.status, media_type="application/json", headers=exc.headers)

    async def http_error(request, exc):
        error = ApiError(exc.status_code, exc.detail if exc.status_code != 405 else
                         f"method {request.method} is not allowed on {request.url.path}", headers=exc.headers)
        return await api_error(request, error)

    routes = [
        Route("/_mock/health", health, methods=["GET"]),
        Route("/_mock/reset", reset, methods=["POST"]),
        Route("/_mock/state", state, methods=["GET"]),
        Route("/_mock/state/export", export, methods=["GET"]),
        Route("/_mock/clock", clock, methods=["GET"]),
        Route("/_mock/clock/advance", advance, methods=["POST"]),
        Route("/_mock/calls", calls, methods=["GET"]),
        Route("/_mock/calls", clear_calls, methods=["DELETE"]),
        Route("/_mock/calls/verify", verify, methods=["POST"]),
        Route("/_mock/calls/coverage", calls_coverage, methods=["GET"]),
        Route("/_mock/scenarios", scenarios, methods=["GET"]),
        Route("/_mock/scenarios/{name}", scenario, methods=["GET", "PUT", "DELETE"]),
        Route("/_mock/webhooks/deliveries", deliveries, methods=["GET"]),
        Route("/_mock/tokens", tokens, methods=["POST"]),
        Route("/_mock/sandboxes", sandboxes, methods=["GET"]),
        Route("/_mock/sandboxes", drop_sandboxes, methods=["DELETE"]),
        Route("/_mock/sandboxes/{name}", sandbox, methods=["GET", "PUT", "DELETE"]),
        Route("/_mock/sandboxes/{name}/reset", reset_sandbox, methods=["POST"]),
        Route("/_mock/snapshots", snapshots, methods=["GET"]),
        Route("/_mock/snapshots", save_snapshot, methods=["POST"]),
        Route("/_mock/snapshots/{name}", snapshot, methods=["GET", "DELETE"]),
        Route("/_mock/snapshots/{name}/restore", restore_snapshot, methods=["POST"]),
        Route("/_mock/openapi.json", document, methods=["GET"]),
    ] + Inspector(server).routes
    return Starlette(routes=routes, exception_handlers={ApiError: api_error, HTTPException: http_error})
