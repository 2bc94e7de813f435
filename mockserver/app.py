"""The ASGI application and the one request path of the API.

    choose the sandbox (its world: a Runtime) -> control API, documents, or the API:
    route -> pump the clock -> authenticate -> rate limit -> authorize
          -> parse and validate path, query and body -> scenario rules -> handler
          -> render (errors in one place) -> journal

`route` is the only place that knows sandboxes exist: it picks the world from the
`/sandbox/{name}` prefix or the `X-Mock-Sandbox` header and hands it down. `/_mock/...`
goes to the control API (control/routes.py); `/openapi.json` and `/openapi.yaml` serve the document
without authentication. The same handlers answer under `/api/v1`. The worlds themselves
(building, copying, resetting, the background loop) are sandboxes/worlds.py's.
"""

import asyncio
import hmac
import logging
import time
from urllib.parse import parse_qsl

import orjson

from mockserver.api.handlers import HANDLERS, PRECHECKS
from mockserver.calls.journal import redact_authorization
from mockserver.control import home
from mockserver.control.routes import control_app
from mockserver.core.errors import ApiError, invalid
from mockserver.core.paths import DOCUMENT_PATHS, without_api_prefix
from mockserver.edge import bodies, cors, faults, jsonbody, requestid
from mockserver.edge.accesslog import access_logger
from mockserver.sandboxes.sandbox import DEFAULT, choose
from mockserver.sandboxes.worlds import Worlds
from mockserver.world.auth import authenticate, authorize
from mockserver.world.runtime import Context

log = logging.getLogger("mockserver")
JSON = [(b"content-type", b"application/json")]
OPEN_CONTROL = ("/_mock/health", "/_mock/ui", "/_mock/schemas")   # reachable without the control token (probes, the page itself)
GLOBAL_CONTROL = ("/_mock/sandboxes", "/_mock/health", "/_mock/schemas")
READS = frozenset({"GET", "HEAD", "OPTIONS"})
KEPT_VIOLATIONS = 100                   # --self-check: the newest replies that broke the document, kept to show


class Dropped(Exception):
    """A scenario asked to close the connection without a reply."""


class ApiCall:
    """One API call on its way through the request path: what was asked, and what the answer became.
    The request's headers stay as the server gave them (bytes); only the few the path reads are decoded,
    and the dict of all of them is made only when a scenario rule needs it."""

    __slots__ = ("method", "path", "raw_headers", "authorization", "content_type", "content_length", "content_encoding",
                 "operation", "query", "body", "token", "rule", "faults", "reply_headers", "call_id", "request_id",
                 "started", "_headers")

    def __init__(self, rt, scope, path):
        self.started = time.perf_counter()
        self.method = scope["method"]
        self.path = without_api_prefix(path)
        self.raw_headers = scope["headers"]
        authorization = content_type = sent_id = length = encoding = None
        for name, value in self.raw_headers:
            if name == b"authorization":
                authorization = value.decode("latin-1")
            elif name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"x-request-id":
                sent_id = value.decode("latin-1")
            elif name == b"content-length":
                length = value
            elif name == b"content-encoding":
                encoding = value.decode("latin-1")
        self.authorization, self.content_type, self._headers = authorization, content_type, None
        self.content_length, self.content_encoding = length, encoding
        self.operation = self.body = self.rule = self.token = self.faults = None
        self.query, self.reply_headers = {}, []
        self.call_id = rt.journal.reserve()
        self.request_id = requestid.request_id(sent_id)

    @property
    def headers(self):
        """name -> value of every request header, the credential cut to its last four characters."""
        if self._headers is None:
            self._headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in self.raw_headers}
            if self.authorization is not None:
                self._headers["authorization"] = redact_authorization(self.authorization)
        return self._headers

    def journaled_headers(self):
        """The request's headers as the journal keeps them: `name: value` lines, the credential cut."""
        if self.authorization is None:
            return b"\n".join(map(b": ".join, self.raw_headers))
        cut = b"authorization: " + redact_authorization(self.authorization).encode("latin-1")
        return b"\n".join([cut if name == b"authorization" else name + b": " + value
                            for name, value in self.raw_headers])

    def journal(self, rt, status, payload, reply_headers=()):
        """Record the call. Whatever it ended in, it is journaled: a body the journal cannot keep (which
        would be a bug) is replaced by a note saying why, rather than losing the call."""
        body = self.body
        for attempt in range(2):
            try:
                rt.journal.add(self.call_id, at=rt.clock.now(), method=self.method, path=self.path,
                               operation=self.operation, query=self.query, headers=self.journaled_headers(), body=body,
                               status=status, response=payload, duration=time.perf_counter() - self.started,
                               rule=self.rule, request_id=self.request_id, token=self.token and self.token.name,
                               reply_headers=reply_headers)
                return
            except Exception as error:
                if attempt:
                    raise
                log.exception("journaling %s %s failed; the call is kept without its body", self.method, self.path)
                body = f"(body not kept: {type(error).__name__})"


class MockServer(Worlds):
    """The server (sandboxes/worlds.py) as an ASGI application."""

    def __init__(self, settings=None, spec=None, clock=None, wall=time.time):
        super().__init__(settings, spec, clock, wall)
        self.violations = []                   # self-check: replies that do not match the document (the newest)
        self.violation_count = 0
        self._yaml = None
        self.control = control_app(self)
        self.access_log = access_logger(self.settings.log_format) if self.settings.access_log else None
        self.recorder = None                   # the recording proxy (contract/proxy.py), only with an upstream: it brings
        if self.settings.upstream:             # the HTTP client, which costs a plain server ~7 MiB unused
            from mockserver.contract.proxy import Recorder
            self.recorder = Recorder(self.settings, self.spec)
        self.entry = cors.Cors(self.route, cors.parse(self.settings.cors_origins),
                               cors.methods_finder(self.spec, self.control.routes))

    async def __call__(self, scope, receive, send):
        if self.recorder is not None and self.recorder.wants(scope):
            await self.route(scope, receive, send)   # forwarded: the upstream's reply as it is, no CORS of ours
            return
        await self.entry(scope, receive, send)    # CORS and the control API's guard around everything (edge/cors.py)

    async def route(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] not in READS:       # a read changes nothing the state file keeps (sandboxes/worlds.py)
            self.changes += 1
        if self.settings.replica_name:
            send = self._tag_replica(send)
        try:
            name, path = choose(scope)
            if path.startswith("/_mock"):
                await self._control(scope, receive, cors.added(scope, send), name, path)
                return
            if name not in self.sandboxes.live and self.settings.control_token:
                self._check_may_create(scope, name)
            box = self.sandboxes.get(name)
            box.calls += 1
        except ApiError as error:
            await _send(requestid.tagged(scope, cors.added(scope, send)), error.status, error.render(),
                        JSON + _encode(error.headers))
            return
        if path in DOCUMENT_PATHS:
            await self._document(scope, requestid.tagged(scope, cors.added(scope, send)), path)
            return
        if path == "/":
            prefix = f"/sandbox/{name}" if scope["path"].startswith("/sandbox/") else ""
            await self._home(scope, requestid.tagged(scope, cors.added(scope, send)), name, prefix)
            return
        box.inflight += 1                         # meanwhile the sandbox does not fall asleep
        try:
            if self.recorder is not None and self.recorder.forwards(scope["method"], path):
                await self.recorder.forward(box.rt, scope, receive, send, path, self.access_log,
                                            None if name == DEFAULT else name)
            else:
                await self.api(box.rt, scope, receive, send, path, None if name == DEFAULT else name)
        finally:
            box.inflight -= 1

    async def _control(self, scope, receive, send, name, path):
        self._check_control_token(scope, path)
        if path.startswith(GLOBAL_CONTROL):
            box = None
        elif path.startswith("/_mock/ui"):          # the page's files: no sandbox made for them
            box = self.sandboxes.live.get(name)
        else:
            box = self.sandboxes.get(name)
        # the control API routes `path`; under /sandbox/{name} the prefix is its root path, so that the URLs it
        # makes (the redirect of a trailing slash) stay in the sandbox
        scope = {**scope, "root_path": scope["path"][:len(scope["path"]) - len(path)], "mock.sandbox": box,
                 "mock.runtime": box and box.rt}
        try:
            await _in(box, self.control(scope, receive, requestid.tagged(scope, send)))
        except Exception:                          # answered already (500 with the error body): only logged
            log.exception("unhandled error in %s %s", scope["method"], path)

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

    # ------------------------------------------------------------ the API's request path
    async def api(self, rt, scope, receive, send, path, sandbox=None):
        call = ApiCall(rt, scope, path)
        try:
            result = await self.answer(rt, call, scope, receive)
            status = call.operation.status
            payload = b"" if status == 204 else orjson.dumps(result)
        except ApiError as error:
            status, payload = error.status, error.render()
            if status == 429:                    # its own headers replace those of the request's spend
                call.reply_headers = _encode(error.headers)
            elif error.headers:
                call.reply_headers += _encode(error.headers)
        except asyncio.CancelledError:         # the server is stopping and this call outlived --shutdown-timeout
            status, payload = 503, ApiError(503, "the server is stopping: this request did not finish within "
                                                 "its shutdown timeout (--shutdown-timeout)").render()
        except Dropped:
            call.journal(rt, 0, b"")
            self._log(scope, sandbox, 0, call)
            _close_connection(receive)
            return
        except Exception as error:              # a bug: still the spec's error body, and the log says where
            log.exception("unhandled error in %s %s", call.method, call.path)
            status, payload = 500, ApiError(500, f"internal error: {type(error).__name__}").render()
        if self.settings.self_check:
            self._check_reply(call.operation, status, payload, call.method, call.path)
        out = [*call.reply_headers, *(JSON if payload else ()), (requestid.HEADER, call.request_id.encode()),
               *scope.get(cors.SCOPE_KEY, ())]
        if call.rule is not None:               # the reply tells which rule shaped it
            out.append((b"x-mock-rule", call.rule.encode()))
        try:
            if call.faults:                     # the reply leaves as the rule's network fault says (edge/faults.py)
                payload = await _deliver_faulty(receive, send, status, out, payload, call.faults)
            else:                               # a whole body of known length: Content-Length, not chunks
                if payload:
                    out.append((b"content-length", b"%d" % len(payload)))
                await send({"type": "http.response.start", "status": status, "headers": out})
                await send({"type": "http.response.body", "body": payload})
                if call.method == "HEAD":       # the server sent the head only: the journal keeps what was sent
                    payload = b""
        finally:                                # journaled even when the client went away meanwhile
            call.journal(rt, status, payload, out)
            self._log(scope, sandbox, status, call)

    async def answer(self, rt, call, scope, receive):
        """Route, pump the clock, authenticate, spend the rate limit, authorize, validate, apply the scenario
        rule that matches, and run the handler: its result, or an ApiError (or Dropped)."""
        call.operation, params, path_errors = self.spec.resolve(call.method, call.path)
        operation = call.operation
        rt.pump()
        now = rt.clock.now()
        call.token = authenticate(call.authorization, rt.tokens, now, self.settings.jwt_secret,
                                  rt.default_org, rt.store.organizations.rows)
        call.reply_headers = rt.limiter.spend(call.token, now)
        authorize(call.token, operation.scope)
        raw = b""
        if operation.body is not None:          # refused from its headers first: no 100 Continue for a doomed body
            _check_body_head(call, self.settings.max_body)
            raw = await bodies.read_asgi(receive, self.settings.max_body)
        if scope["query_string"]:
            call.query = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        values = self.validate(call, path_errors, raw)
        effects, fired = {}, None
        if rt.scenarios.active:
            fired = rt.scenarios.evaluate(operation, call.method, call.path, call.token, call.headers, call.body,
                                          now, lambda: rt.deployments.target(params))
        if fired is not None:
            call.rule, effects = fired.name, fired.effects
            call.faults = faults.of(effects)
            await _apply(rt, effects, call.token, now)
        ctx = Context(rt, org=call.token.organization, token=call.token, params=params, query=values, body=call.body,
                      now=now, call_id=call.call_id, effects=effects)
        return HANDLERS[operation.operation_id](ctx)

    @staticmethod
    def validate(call, errors, raw):
        """Query and body against the document (`errors`: the path's, already found): the typed query values,
        or a 400 naming every violation (a 415 for a body that is not JSON)."""
        operation = call.operation
        values, query_errors = operation.check_query(call.query)
        call.body = _parse_body(raw, call.content_type, operation)
        if operation.operation_id in PRECHECKS:
            PRECHECKS[operation.operation_id](call.body)
        errors += query_errors
        if operation.body is not None and raw.strip():
            errors += operation.body.errors(call.body, "body")
        if errors:
            raise invalid(errors)
        return values

    def _log(self, scope, sandbox, status, call):
        """One access-log line (edge/accesslog.py), when the access log is on."""
        if self.access_log is None:
            return
        self.access_log(scope["method"], (scope.get("raw_path") or scope["path"].encode()).decode("latin-1"),
                        status, time.perf_counter() - call.started, call.operation and call.operation.operation_id,
                        call.token and call.token.name, sandbox, call.rule, call.request_id)

    def _check_reply(self, operation, status, payload, method, path):
        """--self-check: a reply that breaks the document is noted (the newest KEPT_VIOLATIONS), counted and
        logged as a warning."""
        if operation is not None and status not in operation.responses:
            found = [f"{method} {path}: status {status} is not documented"]
        elif (validator := self.spec.response_validator(operation, status)) is None:
            found = [f"{method} {path}: {status} has a body but none is documented"] if payload else []
        else:
            found = [f"{method} {path} -> {status}: {location}: {message}"
                     for location, message in validator.errors(orjson.loads(payload), "response")]
        for violation in found:
            log.warning("self-check: %s", violation)
        self.violations += found
        self.violation_count += len(found)
        del self.violations[:-KEPT_VIOLATIONS]

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

    async def stop(self):
        await super().stop()
        if self.recorder is not None:             # the HAR file and the fixtures of a recording
            await self.recorder.close()

    async def _home(self, scope, send, name, prefix):
        """`/`: links and a quick start (control/home.py), as HTML for a browser, else JSON."""
        if scope["method"] not in ("GET", "HEAD"):
            error = ApiError(405, f"method {scope['method']} is not allowed on /", headers={"Allow": "GET"})
            await _send(send, 405, error.render(), JSON + [(b"allow", b"GET")])
            return
        headers = {key.decode(): value.decode("latin-1") for key, value in scope["headers"]
                   if key in (b"host", b"accept", b"x-forwarded-proto", b"x-forwarded-host")}
        forwarded = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()   # behind a proxy: its links
        scheme = forwarded if forwarded in ("http", "https") else scope.get("scheme", "http")
        host = headers.get("x-forwarded-host", "").split(",")[0].strip() or headers.get("host") or "localhost"
        base = f"{scheme}://{host}{prefix}"
        tokens, org, _ = self.start_auth
        page = home.document(base, prefix, None if name == DEFAULT else name, tokens, org,
                             reveal=not self.settings.control_token)
        if "text/html" in headers.get("accept", ""):
            await _send(send, 200, home.as_html(page), [(b"content-type", b"text/html; charset=utf-8")])
        else:
            await _send(send, 200, home.as_json(page), JSON)

    async def _lifespan(self, receive, send):
        upkeep = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                upkeep = asyncio.create_task(self.keep_up())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if upkeep:
                    upkeep.cancel()
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


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


async def _deliver_faulty(receive, send, status, headers, payload, wanted):
    """Send a reply with a scenario's network fault; the body bytes sent (nothing without a connection)."""
    try:
        return await faults.deliver(receive, send, status, headers, payload, wanted)
    except ConnectionAbortedError:
        log.warning("scenario fault %s needs a real connection; the reply was not sent", ", ".join(wanted))
        return b""


def _check_body_head(call, limit):
    """What the headers already say of a body this operation would read: too large (413), compressed, in another
    charset than UTF-8, or not JSON (415)."""
    length = call.content_length
    if length is not None and length.isdigit() and int(length) > limit:
        raise ApiError(413, f"request body is larger than {limit} bytes")
    if call.content_encoding is None and call.content_type == "application/json":
        return                                  # what nearly every client sends
    encoding = (call.content_encoding or "identity").strip().lower()
    if encoding != "identity":
        raise ApiError(415, f"Content-Encoding {encoding[:40]!r} is not accepted: send the body uncompressed")
    media, _, params = (call.content_type or "").partition(";")
    charset = next((v.strip().strip('"').lower() for k, _, v in (p.partition("=") for p in params.split(";"))
                    if k.strip().lower() == "charset"), "utf-8")
    if charset not in ("utf-8", "utf8"):
        raise ApiError(415, f"request body must be JSON in UTF-8, not charset {charset[:40]}")
    if length is not None and length != b"0":   # a body is coming (a chunked one: _parse_body checks it)
        _check_json_media(media)


def _parse_body(raw, content_type, operation):
    if operation.body is None:
        return None
    if not raw.strip():
        if operation.body_required:
            raise ApiError(400, "body: a JSON request body is required", [("body", "a JSON request body is required")])
        return None
    _check_json_media((content_type or "").split(";", 1)[0])
    return jsonbody.loads(raw)


def _check_json_media(media):
    """415 unless the media type (without its parameters) is JSON: application/json or a `+json` type."""
    media = media.strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ApiError(415, f"request body must be application/json, not {media or 'unspecified'}")


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
