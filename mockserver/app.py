"""The ASGI application and the one request path of the API.

    route -> pump the clock -> authenticate -> rate limit -> authorize
          -> parse and validate path, query and body -> scenario rules -> handler
          -> render (errors in one place) -> journal

`/_mock/...` goes to the control API (a Starlette app, control.py); `/openapi.json` and
`/openapi.yaml` serve the document without authentication. The same handlers answer
under the `/api/v1` prefix.
"""

import asyncio
import logging
import time
from urllib.parse import parse_qsl

import orjson

from .auth import authenticate, authorize
from .clock import Clock
from .errors import ApiError, invalid
from .fixtures import read_fixtures
from .handlers import HANDLERS, PRECHECKS
from .journal import redact_authorization
from .runtime import Context, Runtime
from .scenarios import Scenarios
from .settings import Settings
from .spec import Spec, check_path

log = logging.getLogger("mockserver")
JSON = [(b"content-type", b"application/json")]
PREFIX = "/api/v1"


class Dropped(Exception):
    """A scenario asked to close the connection without a reply."""


class MockServer:
    def __init__(self, settings=None, spec=None, clock=None):
        self.settings = settings or Settings()
        self.spec = spec or Spec.load()
        self.clock = clock or Clock(self.settings.clock)
        self.fixtures = read_fixtures(self.settings.fixtures, self.spec)
        self.scenarios = Scenarios(self.spec, seed=self.settings.seed)
        for path in self.settings.scenarios:
            self.scenarios.load_file(path)
        self.rt = Runtime(self.settings, self.clock, self.fixtures)
        self.violations = []                   # self-check: replies that do not match the document
        self._yaml = None
        from .control import build_control
        self.control = build_control(self)

    def reset(self, scenarios=False):
        self.rt = Runtime(self.settings, self.clock, self.fixtures)
        if scenarios:
            self.scenarios.clear()

    # ------------------------------------------------------------ ASGI
    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind == "http":
            path = scope["path"]
            if path.startswith("/_mock"):
                await self.control(scope, receive, send)
            elif path in ("/openapi.json", "/openapi.yaml"):
                await self._document(scope, send, path)
            else:
                await self.api(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def api(self, scope, receive, send):
        started = time.perf_counter()
        rt, clock = self.rt, self.clock
        method = scope["method"]
        path = scope["path"]
        if path.startswith(PREFIX + "/"):
            path = path[len(PREFIX):]
        headers = {}                           # one dict for the request and the journal
        authorization = None
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            if key == "authorization":
                authorization = value.decode("latin-1")
                headers[key] = redact_authorization(authorization)
            else:
                headers[key] = value.decode("latin-1")
        operation = body = rule = token = None
        query = {}
        reply_headers = []
        call_id = rt.journal.reserve()
        try:
            operation, params = self.spec.match(method, path)
            rt.pump()
            now = clock.now()
            token = authenticate(authorization, rt.tokens, now, self.settings.jwt_secret,
                                 rt.default_org, rt.store.organizations.rows)
            reply_headers = rt.limiter.spend(token, now)
            authorize(token, operation.scope)
            raw = await _read_body(receive, self.settings.max_body) if operation.body is not None else b""
            if scope["query_string"]:
                query = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
            errors = check_path(params)
            values, query_errors = operation.check_query(query)
            body = _parse_body(raw, headers.get("content-type"), operation)
            if operation.operation_id in PRECHECKS:
                PRECHECKS[operation.operation_id](body)
            errors += query_errors
            if operation.body is not None and raw.strip():
                errors += operation.body.errors(body, "body")
            if errors:
                raise invalid(errors)
            effects = {}
            fired = self.scenarios.evaluate(operation, method, path, token, headers, body)
            if fired is not None:
                rule, effects = fired.name, fired.effects
                await self._apply(effects, token, now)
            ctx = Context(rt, token.organization, token, params, values, body if body is not None else {}, now,
                          call_id, effects)
            result = HANDLERS[operation.operation_id](ctx)
            status = operation.status
            payload = b"" if status == 204 else orjson.dumps(result)
        except ApiError as error:
            status, payload = error.status, error.render()
            if status == 429:                    # its own headers replace those of the request's spend
                reply_headers = _encode(error.headers)
            elif error.headers:
                reply_headers += _encode(error.headers)
        except Dropped:
            rt.journal.record(call_id, clock.now(), method, path, operation, query, headers, body, 0,
                              b"", time.perf_counter() - started, rule, token and token.name)
            _close_connection(receive)
            return
        except Exception as error:              # a bug: still the spec's error body, and the log says where
            log.exception("unhandled error in %s %s", method, path)
            status, payload = 500, ApiError(500, f"internal error: {type(error).__name__}").render()
        if self.settings.self_check:
            self._check_reply(operation, status, payload, method, path)
        out = reply_headers + JSON if payload else reply_headers
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": payload})
        rt.journal.record(call_id, clock.now(), method, path, operation, query, headers, body, status,
                          payload, time.perf_counter() - started, rule, token and token.name)

    async def _apply(self, effects, token, now):
        """Scenario effects that act on the reply itself (deployment effects reach the handler)."""
        if effects.get("latency"):
            await asyncio.sleep(effects["latency"])
        if effects.get("webhook_failures"):
            self.rt.webhooks.fail_next(effects["webhook_failures"], effects["rule"])
        if effects.get("exhaust_rate_limit"):
            self.rt.limiter.exhaust(token, now)
            self.rt.limiter.spend(token, now)
        if effects.get("drop"):
            raise Dropped()
        if effects.get("reply"):
            reply = effects["reply"]
            raise ApiError(reply["status"], reply["message"])

    def _check_reply(self, operation, status, payload, method, path):
        if operation is not None and status not in operation.responses:
            self.violations.append(f"{method} {path}: status {status} is not documented")
            return
        validator = self.spec.response_validator(operation, status)
        if validator is None:
            if payload:
                self.violations.append(f"{method} {path}: {status} has a body but none is documented")
            return
        for location, message in validator.errors(orjson.loads(payload), "response"):
            self.violations.append(f"{method} {path} -> {status}: {location}: {message}")

    async def _document(self, scope, send, path):
        if scope["method"] not in ("GET", "HEAD"):
            error = ApiError(405, f"method {scope['method']} is not allowed on {path}", headers={"Allow": "GET"})
            await _send(send, 405, error.render(), JSON + [(b"allow", b"GET")])
            return
        if path.endswith(".json"):
            await _send(send, 200, self.spec.json, JSON)
        else:
            if self._yaml is None:
                self._yaml = self.spec.yaml_bytes()
            await _send(send, 200, self._yaml, [(b"content-type", b"application/yaml")])

    async def _lifespan(self, receive, send):
        pump = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                pump = asyncio.create_task(self._pump_forever())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if pump:
                    pump.cancel()
                await self.rt.webhooks.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _pump_forever(self):
        """Emit due deployment events and webhook retries without waiting for a request."""
        while True:
            try:
                self.rt.pump()
            except Exception:                   # keep the loop alive; the error is a bug to see in the log
                log.exception("background pump failed")
            await asyncio.sleep(0.05)


async def _read_body(receive, limit):
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, "client disconnected before the body was read")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _parse_body(raw, content_type, operation):
    if operation.body is None:
        return None
    if not raw.strip():
        if operation.body_required:
            raise ApiError(400, "body: a JSON request body is required", [("body", "a JSON request body is required")])
        return None
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ApiError(415, f"request body must be application/json, not {media or 'unspecified'}")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise ApiError(400, f"body: malformed JSON: {error}", [("body", f"malformed JSON: {error}")]) from None


def _encode(headers):
    return [(name.lower().encode(), str(value).encode()) for name, value in headers.items()]


def _close_connection(receive):
    """Close the client connection without a reply (uvicorn exposes its transport on the receive callable)."""
    cycle = getattr(receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise ConnectionAbortedError("scenario dropped the connection")
    transport.close()


async def _send(send, status, body, headers):
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
