"""The control API under /_mock: one route table, grouped by noun.

Outside the documented API: no authentication, no rate limit, not journaled. It is
described by its own small document, `/_mock/openapi.json`.
"""

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
from .journal import FILTERS, mismatches, parse_since
from .scenarios import ScenarioError

DOCUMENT = Path(__file__).with_name("openapi") / "control.yaml"


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
        return reply({"status": "ok", "version": __version__, "clock": server.clock.mode,
                      "uptime_seconds": round(time.time() - started, 3)})

    async def reset(request):
        body = await json_body(request, required=False)
        server.reset(scenarios=bool(body.get("scenarios")))
        server.scenarios.rewind()
        return reply({"reset": True, "scenarios": sorted(server.scenarios.active)})

    async def state(request):
        rt = server.rt
        return reply({"counts": rt.store.count(), "tokens": sorted(t.name for t in rt.tokens.values()),
                      "active_deployments": len(rt.lifecycle.active), "journal_entries": len(rt.journal.entries)})

    # ------------------------------------------------------------ clock
    async def clock(request):
        return reply(server.clock.describe())

    async def advance(request):
        body = await json_body(request)
        seconds = body.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_SECONDS:
            raise ApiError(400, f"body.seconds: a number of seconds from 0 to {MAX_SECONDS} is required")
        try:
            server.clock.advance(seconds)
        except ValueError as error:
            raise ApiError(400, f"body.seconds: {error}") from None
        server.rt.pump()
        return reply(server.clock.describe())

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
        journal = server.rt.journal
        wanted = filters(dict(request.query_params))
        found = journal.select(wanted)
        limit = request.query_params.get("limit")
        if limit is not None:
            if not limit.isdigit():
                raise ApiError(400, "query.limit: must be a whole number")
            found = found[-int(limit):] if int(limit) else []
        webhooks = server.rt.webhooks
        return reply({"total": len(found), "dropped": journal.dropped, "journal_size": journal.size,
                      "results": [journal.render(e, webhooks.caused_by(e[0])) for e in found]})

    async def calls_coverage(request):
        rt = request.scope.get("mock.runtime") or server.rt
        return reply(coverage(rt.journal, server.spec.operations))

    async def clear_calls(request):
        server.rt.journal.clear()
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
        journal = server.rt.journal
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
        return reply({"results": [server.scenarios.describe(name) for name in server.scenarios.active]})

    async def scenario(request):
        name = request.path_params["name"]
        if request.method == "GET":
            if name not in server.scenarios.active:
                raise ApiError(404, f"scenario {name} is not active")
            return reply(server.scenarios.describe(name))
        if request.method == "DELETE":
            if not server.scenarios.remove(name):
                raise ApiError(404, f"scenario {name} is not active")
            return Response(status_code=204)
        text = (await request.body()).decode("utf-8", errors="replace")
        try:
            server.scenarios.load_text(text, f"PUT /_mock/scenarios/{name}", name=name)
        except ScenarioError as error:
            raise ApiError(400, str(error)) from None
        return reply(server.scenarios.describe(name))

    # ------------------------------------------------------------ webhooks, tokens
    async def deliveries(request):
        params = request.query_params
        found = [d for d in server.rt.webhooks.deliveries
                 if all(str(d.get(k)) == params[k] for k in ("webhook_id", "event_type", "status") if k in params)]
        return reply({"total": len(found), "results": found})

    async def tokens(request):
        body = await json_body(request)
        rt = server.rt
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
        now = server.clock.now()
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
        Route("/_mock/openapi.json", document, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={ApiError: api_error, HTTPException: http_error})
