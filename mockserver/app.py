"""The ASGI application and the one request path of the API.

    choose the sandbox (its world: a Runtime) -> control API, documents, or the API:
    route -> pump the clock -> authenticate -> rate limit -> authorize
          -> parse and validate path, query and body -> scenario rules -> handler
          -> render (errors in one place) -> journal

`__call__` is the only place that knows sandboxes exist: it picks the world from the
`/sandbox/{name}` prefix or the `X-Mock-Sandbox` header and hands it down. `/_mock/...`
goes to the control API (a Starlette app, control.py); `/openapi.json` and `/openapi.yaml`
serve the document without authentication. The same handlers answer under `/api/v1`.
"""

import asyncio
import hmac
import logging
import time
from urllib.parse import parse_qsl

import orjson

from . import cors, requestid
from .accesslog import access_logger
from .auth import authenticate, authorize
from .clock import Clock
from .errors import ApiError, invalid
from .fixtures import read_fixtures
from .handlers import HANDLERS, PRECHECKS
from .journal import redact_authorization
from .runtime import Context, Runtime
from .sandboxes import DEFAULT, Sandbox, Sandboxes, choose
from .scenarios import Scenarios
from .settings import Settings
from .spec import Spec, check_path
from .world import Shared, freeze, thaw

log = logging.getLogger("mockserver")
JSON = [(b"content-type", b"application/json")]
PREFIX = "/api/v1"
OPEN_CONTROL = ("/_mock/health", "/_mock/ui")   # reachable without the control token (probes, the page itself)


class Dropped(Exception):
    """A scenario asked to close the connection without a reply."""


class MockServer:
    def __init__(self, settings=None, spec=None, clock=None, wall=time.time):
        self.settings = settings or Settings()
        self.spec = spec or Spec.load()
        self.shared = Shared(self.settings, self.spec)
        self.fixtures = read_fixtures(self.settings.fixtures, self.spec)
        # The world every sandbox starts from, built once through the handlers and then only copied.
        first = self.build(self.settings, clock or Clock(self.settings.clock), self.fixtures)
        self.origin = freeze(first, self.shared)
        # scenarios loaded from files at start: every sandbox starts with them, and may name them
        self.library = {name: (item["raw"], item["source"]) for name, item in first.scenarios.active.items()}
        # who may make a sandbox by using it, on a mock protected by a control token: a caller of the start world
        self.start_auth = (dict(first.tokens), first.default_org, frozenset(first.store.organizations.rows))
        first.close()
        self.snapshots = {}                    # name -> Snapshot, shared by all sandboxes
        self.sandboxes = Sandboxes(self.make_sandbox, self.settings.max_sandboxes, self.settings.sandbox_ttl, wall,
                                   forget=self.forget, sleep_after=self.settings.sleep_after or None)
        self.sandboxes.create(DEFAULT)
        self.collector = None                  # the process's collector policy (collector.py), set by `serve`
        self.changes = 0                       # requests served: the state file is saved when this moves
        self.saver = None
        if self.settings.state_file:
            from .persistence import Saver, restore
            restore(self, self.settings.state_file)
            self.saver = Saver(self, self.settings.state_file, self.settings.save_interval)
        self.violations = []                   # self-check: replies that do not match the document
        self._yaml = None
        from .control import build_control
        self.control = build_control(self)
        self.access_log = access_logger(self.settings.log_format) if self.settings.access_log else None
        origins = cors.parse(self.settings.cors_origins)
        self.entry = (cors.Cors(self.route, origins, cors.methods_finder(self.spec, self.control.routes))
                      if origins else self.route)

    # ------------------------------------------------------------ worlds
    def build(self, settings, clock, fixtures):
        """A world made by replaying fixtures through the handlers (slow: done once, or for options)."""
        scenarios = Scenarios(self.spec, seed=settings.seed)
        for path in settings.scenarios:
            scenarios.load_file(path)
        return Runtime(settings, clock, fixtures, scenarios, self.shared.budget)

    def make_sandbox(self, name, options):
        """A new sandbox: a copy of the start world, or of a snapshot, or a world built for its options."""
        from .sandbox_options import world_for
        rt, origin, source = world_for(self, options)
        _own(rt, name)
        return Sandbox(name, rt, origin, source, self.sandboxes.wall(), self.shared)

    def forget(self, box):
        """A sandbox was deleted, replaced or expired."""
        box.retire()
        if self.collector is not None:
            self.collector.release()

    def reset_sandbox(self, box, scenarios=False):
        """Back to the world the sandbox started from. Its clock goes on from where it is, and its
        scenarios stay active with their counters rewound (all removed with `scenarios`)."""
        old = box.rt
        rt = thaw(box.origin, self.shared)
        _own(rt, box.name)
        rt.clock = old.clock
        if scenarios:
            rt.scenarios.clear()
        else:
            rt.scenarios = old.scenarios
            rt.scenarios.rewind()
        box.rt = rt
        retire(old)
        return rt

    @property
    def rt(self):
        """The default sandbox's world (single-user code and tests)."""
        return self.sandboxes.get_quietly(DEFAULT).rt

    @property
    def clock(self):
        return self.rt.clock

    @property
    def scenarios(self):
        return self.rt.scenarios

    def reset(self, scenarios=False):
        self.reset_sandbox(self.sandboxes.get_quietly(DEFAULT), scenarios)

    # ------------------------------------------------------------ ASGI
    async def __call__(self, scope, receive, send):
        await self.entry(scope, receive, send)    # CORS around everything (cors.py), unless it is off

    async def route(self, scope, receive, send):
        kind = scope["type"]
        if kind == "http":
            self.changes += 1
            if self.settings.replica_name:
                send = self._tag_replica(send)
            try:
                name, path = choose(scope)
                if path.startswith("/_mock"):
                    self._check_control_token(scope, path)
                    if path.startswith(("/_mock/sandboxes", "/_mock/health")):
                        box = None                      # global routes
                    elif path.startswith("/_mock/ui"):  # the page's files: no sandbox made for them
                        box = self.sandboxes.live.get(name)
                    else:
                        box = self.sandboxes.get(name)
                    scope = {**scope, "path": path, "mock.sandbox": box, "mock.runtime": box and box.rt}
                    await self._in(box, self.control(scope, receive, requestid.tagged(scope, send)))
                    return
                if name not in self.sandboxes.live and self.settings.control_token:
                    self._check_may_create(scope, name)
                box = self.sandboxes.get(name)
                box.calls += 1
            except ApiError as error:
                await _send(requestid.tagged(scope, send), error.status, error.render(), JSON + _encode(error.headers))
                return
            if path in ("/openapi.json", "/openapi.yaml"):
                await self._document(scope, requestid.tagged(scope, send), path)
            else:
                await self._in(box, self.api(box.rt, scope, receive, send, path, None if name == DEFAULT else name))
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    @staticmethod
    async def _in(box, answer):
        """Answer a request of a sandbox, which meanwhile does not fall asleep."""
        if box is None:
            await answer
            return
        box.inflight += 1
        try:
            await answer
        finally:
            box.inflight -= 1

    def _check_control_token(self, scope, path):
        token = self.settings.control_token
        if not token or path.startswith(OPEN_CONTROL):
            return
        sent = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), "")
        scheme, _, credential = sent.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode(), token.encode()):
            raise ApiError(401, "the control API needs 'Authorization: Bearer <control token>' (--control-token)",
                           headers={"WWW-Authenticate": "Bearer"})

    def _check_may_create(self, scope, name):
        """On a protected mock, a request makes a new sandbox only if it carries a credential of the start
        world (an API token of the fixtures or a JWT signed with the mock's secret), so that callers
        without one cannot use up --max-sandboxes."""
        tokens, default_org, organizations = self.start_auth
        sent = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        try:
            authenticate(sent, tokens, self.sandboxes.wall(), self.settings.jwt_secret, default_org, organizations)
        except ApiError as error:
            raise ApiError(401, f"sandbox {name} does not exist, and this request may not create it ({error.message}):"
                                f" send an API token of the fixtures, or create it with PUT /_mock/sandboxes/{name}"
                                ) from None

    def _tag_replica(self, send):
        tag = (b"x-mock-replica", self.settings.replica_name.encode("latin-1", "replace"))

        async def tagged(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + [tag]}
            await send(message)
        return tagged

    async def api(self, rt, scope, receive, send, path, sandbox=None):
        started = time.perf_counter()
        clock = rt.clock
        method = scope["method"]
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
        request_id = requestid.request_id(headers.get("x-request-id"))
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
            fired = rt.scenarios.evaluate(operation, method, path, token, headers, body)
            if fired is not None:
                rule, effects = fired.name, fired.effects
                await _apply(rt, effects, token, now)
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
                              b"", time.perf_counter() - started, rule, request_id, token and token.name)
            if self.access_log:
                self._log(scope, sandbox, 0, started, operation, token, rule, request_id)
            _close_connection(receive)
            return
        except Exception as error:              # a bug: still the spec's error body, and the log says where
            log.exception("unhandled error in %s %s", method, path)
            status, payload = 500, ApiError(500, f"internal error: {type(error).__name__}").render()
        if self.settings.self_check:
            self._check_reply(operation, status, payload, method, path)
        out = reply_headers + (JSON if payload else []) + [(requestid.HEADER, request_id.encode())]
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": payload})
        rt.journal.record(call_id, clock.now(), method, path, operation, query, headers, body, status,
                          payload, time.perf_counter() - started, rule, request_id, token and token.name)
        if self.access_log:
            self._log(scope, sandbox, status, started, operation, token, rule, request_id)

    def _log(self, scope, sandbox, status, started, operation, token, rule, request_id):
        """One access-log line (accesslog.py)."""
        self.access_log(scope["method"], (scope.get("raw_path") or scope["path"].encode()).decode("latin-1"),
                        status, time.perf_counter() - started, operation.operation_id if operation else None,
                        token.name if token else None, sandbox, rule, request_id)

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
                for box in self.sandboxes.awake():
                    await box.rt.webhooks.close()
                if self.saver is not None:
                    self.saver.final()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _pump_forever(self):
        """Emit due deployment events and webhook retries without waiting for a request."""
        while True:
            for box in self.sandboxes.awake():
                rt = box.rt
                if not (rt.lifecycle.active or rt.webhooks.pending):
                    continue                    # idle: nothing can fall due
                try:
                    rt.pump()
                except Exception:               # keep the loop alive; the error is a bug to see in the log
                    log.exception("background pump of sandbox %s failed", box.name)
            self.sandboxes.sweep()
            if self.collector is not None:
                if self.shared.budget.trims:
                    self.shared.budget.trims = 0
                    self.collector.release()
                self.collector.tick()
            if self.saver is not None:
                try:
                    self.saver.tick()
                except OSError:
                    log.exception("saving the state file failed")
            await asyncio.sleep(0.05)


async def _apply(rt, effects, token, now):
    """Scenario effects that act on the reply itself (deployment effects reach the handler)."""
    if effects.get("latency"):
        await asyncio.sleep(effects["latency"])
    if effects.get("webhook_failures"):
        rt.webhooks.fail_next(effects["webhook_failures"], effects["rule"])
    if effects.get("exhaust_rate_limit"):
        rt.limiter.exhaust(token, now)
        rt.limiter.spend(token, now)
    if effects.get("drop"):
        raise Dropped()
    if effects.get("reply"):
        reply = effects["reply"]
        raise ApiError(reply["status"], reply["message"])


def _own(rt, name):
    """New ids of a sandbox come from a sequence of its own, seeded by its name (default: the seed)."""
    if name != DEFAULT:
        rt.fake.reseed(name)


def retire(rt):
    """A world that was deleted, reset, replaced or restored over lets go of what it holds."""
    rt.close()


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
