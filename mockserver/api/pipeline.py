"""The request path of one API call, top to bottom, in one place:

    route -> pump the clock -> [rules: before_auth] -> authenticate -> rate limit -> authorize
          -> parse and validate path, query and body -> [rules: after_validation] -> handler
          -> [rules: after_handler] -> render (errors in one place) -> journal

`Pipeline.api` answers a call in the world (a Runtime) the ASGI app chose for it (app.py); nothing here knows
that other worlds exist. Every failure is an ApiError rendered once, here, into the spec's error body; every
call is journaled whatever it ended in.
"""

import asyncio
import logging
import time
from urllib.parse import parse_qsl

import orjson

from mockserver.api.handlers import HANDLERS, PRECHECKS
from mockserver.calls.journal import Exchange, redact_authorization
from mockserver.calls.trail import Trail
from mockserver.core.errors import ApiError, invalid
from mockserver.core.paths import without_api_prefix
from mockserver.edge import bodies, faults, jsonbody, requestid
from mockserver.edge.cors import SCOPE_KEY
from mockserver.world import scripted
from mockserver.world.auth import Token, authenticate, authorize
from mockserver.world.replies import CACHED
from mockserver.world.rules import AFTER_HANDLER, AFTER_VALIDATION, BEFORE_AUTH
from mockserver.world.runtime import Context
from mockserver.world.scripted import Scripted

log = logging.getLogger("mockserver")
JSON = [(b"content-type", b"application/json")]
READS = frozenset({"GET", "HEAD", "OPTIONS"})   # methods that change nothing
NEWEST_VIOLATIONS = 100                 # --self-check: the newest replies that broke the document, shown


class Dropped(Exception):
    """A scenario asked to close the connection without a reply."""


class ApiCall(Exchange):
    """One API call on its way through the request path: what was asked, and what the answer became; at its end,
    the journal's record of it (calls/journal.py `Exchange`). The request's headers stay as the server gave them
    (bytes); only the few the path reads are decoded, and the dict of all of them is made only when a scenario rule
    needs it. `spent` holds the headers the rate limit adds to the reply."""

    __slots__ = ("raw_headers", "authorization", "content_type", "content_length", "content_encoding", "token",
                 "faults", "spent", "started", "_headers", "sandbox", "ignored", "cache_key")

    def __init__(self, rt, scope, path, received):
        self.started = time.perf_counter()
        self.received = received
        self.at = 0.0                           # the world's clock, once the call has pumped it
        self.method = scope["method"]
        self.path = without_api_prefix(path)
        self.raw_headers = scope["headers"]
        authorization, content_type, sent_id, length, encoding = read_headers(self.raw_headers)
        self.authorization, self.content_type, self._headers = authorization, content_type, None
        self.content_length, self.content_encoding = length, encoding
        self.operation = self.body = self.rule = self.token = self.faults = self.ignored = self.cache_key = None
        self.query, self.spent = {}, []
        self.call_id = rt.journal.reserve()
        self.request_id = requestid.request_id(sent_id)
        self.fault = self.drift = self.trace_id = None

    @property
    def headers(self):
        """name -> value of every request header, the credential cut to its last four characters."""
        if self._headers is None:
            self._headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in self.raw_headers}
            if self.authorization is not None:
                self._headers["authorization"] = redact_authorization(self.authorization)
        return self._headers

    def journal(self, rt, status, payload, reply_headers=(), trace_id=None):
        """Record the call (`trace_id`: its trace's, when tracing is on). Whatever it ended in, it is journaled: a
        body the journal cannot keep (which would be a bug) is replaced by a note saying why, rather than losing
        the call."""
        journal = rt.journal
        self.status, self.response, self.reply_headers, self.trace_id = status, payload, reply_headers, trace_id
        self.duration = time.perf_counter() - self.started
        self.headers_kept = journal.request_headers(self.raw_headers, self.authorization)
        self.token_name = self.token and self.token.name
        self.fault = ", ".join(self.faults) if self.faults else None
        if self.ignored is not None:            # a body the operation takes none of: kept as sent
            self.body = self.ignored
        try:
            journal.record(self)
        except Exception as error:
            log.exception("journaling %s %s failed; the call is kept without its body", self.method, self.path)
            self.body = f"(body not kept: {type(error).__name__})"
            journal.record(self)


def read_headers(raw):
    """(authorization, content type, X-Request-Id, content length, content encoding) of a request's header pairs,
    the length as bytes (b"chunked" for a chunked body)."""
    authorization = content_type = sent_id = length = encoding = None
    for name, value in raw:
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
        elif name == b"transfer-encoding" and length is None:
            length = b"chunked"
    return authorization, content_type, sent_id, length, encoding


class Pipeline:
    """The API's request path for one server: its settings, the compiled document, the access log, and what the
    self-check found (--self-check: replies that break the document)."""

    record = staticmethod(ApiCall.journal)     # (call, rt, status, payload, reply_headers): a call journaled
    handlers = HANDLERS                        # operationId -> handler (`trace` puts each in a span)

    def __init__(self, settings, spec, access_log=None, wall=time.time):
        self.settings, self.spec, self.access_log, self.wall = settings, spec, access_log, wall
        self.epoch = 0                         # control calls that may have changed a world (world/replies.py)
        self.trail = Trail(settings.call_trail) if settings.call_trail else None   # --call-trail (calls/trail.py)
        self.cached = CACHED                   # operations whose replies a world caches (none when tracing)
        self.changed = None                    # async (call, now, effects, apply) -> apply(): a change is made
        #                                        through it (app.py: logged and durable first, with a state file)
        self.violations = []                   # self-check: replies that do not match the document (the newest)
        self.violation_count = 0

    async def api(self, rt, scope, receive, send, path, sandbox=None):
        call = ApiCall(rt, scope, path, self.wall())
        call.sandbox = sandbox
        try:
            result = await self.answer(rt, call, scope, receive)
        except Dropped:
            self.record(call, rt, 0, b"")
            self._trail(call, rt)
            self._log(scope, sandbox, 0, call)
            _close_connection(scope, receive)
            return
        except (Exception, asyncio.CancelledError) as error:
            status, payload = self.failed(call, error)
        else:
            status, payload = self.rendered(rt, call, result)
        out = self.reply_headers(call, scope, status, payload)
        try:
            if call.faults:                     # the reply leaves as the rule's network fault says (edge/faults.py)
                payload = await _deliver_faulty(scope, receive, send, status, out, payload, call.faults)
            else:
                await send({"type": "http.response.start", "status": status, "headers": out})
                await send({"type": "http.response.body", "body": payload})
                if call.method == "HEAD":       # the server sent the head only: the journal keeps what was sent
                    payload = b""
        finally:                                # journaled even when the client went away meanwhile
            self.record(call, rt, status, payload, out)
            self._trail(call, rt)
            self._log(scope, sandbox, status, call)

    def direct(self, rt, scope, path, sandbox=None, body=b""):
        """The same call answered at once, its body whole, for the server's protocol to write (app.py
        `answer_whole`, process/direct.py): its Reply, journaled. Only for a call that cannot await: in a world
        with no active scenario (no rule's latency or network fault) and, for a change, no change log to make it
        durable in first. The steps are `api`'s: `answer`, then `rendered` or `failed`, `reply_headers`, the
        journal."""
        call = ApiCall(rt, scope, path, self.wall())
        call.sandbox = sandbox
        try:
            result = _at_once(self.answer(rt, call, scope, None, body))
        except Exception as error:
            status, payload = self.failed(call, error)
        else:
            status, payload = self.rendered(rt, call, result)
        out = self.reply_headers(call, scope, status, payload)
        self.record(call, rt, status, payload, out)
        if self.trail is not None:
            self._trail(call, rt)
        if self.access_log is not None:
            self._log(scope, sandbox, status, call)
        return status, out, payload

    @staticmethod
    def rendered(rt, call, result):
        """(status, payload) of a call its handler answered (or a reply its world cached: world/replies.py)."""
        status = call.operation.status
        if type(result) is bytes:
            return status, result
        if type(result) is Scripted:            # a reply a scenario rule made (world/scripted.py)
            return result.status, result.payload
        payload = b"" if status == 204 else orjson.dumps(result)
        if call.cache_key is not None:
            rt.replies.put(*call.cache_key, payload)
        return status, payload

    def failed(self, call, error):
        """(status, payload) of a call that did not end in its handler's answer: the one ladder of both entries.
        An ApiError is its own reply; a cancel (the server stopping, the call past --shutdown-timeout) a 503;
        anything else is a bug of the mock's, the spec's 500, logged with its traceback."""
        if isinstance(error, ApiError):
            return self.refused(call, error)
        if isinstance(error, asyncio.CancelledError):
            return 503, ApiError(503, "the server is stopping: this request did not finish within its shutdown "
                                      "timeout (--shutdown-timeout)").render()
        log.error("unhandled error in %s %s", call.method, call.path, exc_info=error)
        return 500, ApiError(500, f"internal error: {type(error).__name__}").render()

    @staticmethod
    def refused(call, error):
        """(status, payload) of a call that ended in an ApiError; its headers join the reply's."""
        if error.status == 429:                 # its own headers replace those of the request's spend
            call.spent = header_pairs(error.headers)
        elif error.headers:
            call.spent += header_pairs(error.headers)
        return error.status, error.render()

    def reply_headers(self, call, scope, status, payload):
        """The reply's headers, its length among them unless a network fault shapes the body (self-checked first
        with --self-check)."""
        if self.settings.self_check:
            self.check_reply(call.operation, status, payload, call.method, call.path)
        out = [*call.spent, *(JSON if payload else ()), (requestid.HEADER, call.request_id.encode()),
               *scope.get(SCOPE_KEY, ())]
        if call.rule is not None:               # the reply tells which rule shaped it
            out.append((b"x-mock-rule", call.rule.encode()))
        if payload and not call.faults:         # a whole body of known length: Content-Length, not chunks
            out.append((b"content-length", b"%d" % len(payload)))
        return out

    async def answer(self, rt, call, scope, receive, body=None):
        """Route, pump the clock, authenticate, spend the rate limit, authorize, validate, apply the scenario
        rule that matches, and run the handler: its result, or an ApiError (or Dropped). The body is read from
        `receive`, or, for a call that came whole (`receive` None: `direct`), is `body`."""
        call.operation, params, path_errors = self.spec.resolve(call.method, call.path)
        operation = call.operation
        now = call.at = rt.pump()
        scenarios = rt.scenarios.active         # no rule, no step: the common path pays one test
        if scenarios:                           # a rule may change the world: what it cached no longer holds
            rt.generation += 1
        effects = await _scenario_step(rt, call, params, now, BEFORE_AUTH) if scenarios else {}
        if effects and scripted.replaces(effects):
            return self.scripted(rt, call, params, effects, now)
        call.token = authenticate(call.authorization, rt.tokens, now, self.settings.jwt_secret,
                                  rt.default_org, rt.store.organizations.rows)
        call.spent = rt.limiter.spend(call.token, now)
        authorize(call.token, operation.scope)
        raw = b""
        if operation.body is not None:          # refused from its headers first: no 100 Continue for a doomed body
            _check_body_head(call, self.settings.max_body)
            raw = (bodies.bounded(body, self.settings.max_body) if receive is None
                   else await bodies.read_asgi(receive, self.settings.max_body))
        elif call.content_length not in (None, b"0"):      # a body the operation takes none of: read, kept, ignored
            call.ignored = _ignored(bodies.bounded(body, self.settings.max_body) if receive is None
                                    else await bodies.read_asgi(receive, self.settings.max_body))
        if scope["query_string"]:
            call.query = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        values = self.validate(call, path_errors, raw)
        if scenarios:
            if call.rule is None:
                effects = await _scenario_step(rt, call, params, now, AFTER_VALIDATION)
            if effects and scripted.replaces(effects):      # the rule's reply: the handler does not run
                return self.scripted(rt, call, params, effects, now)
        elif operation.operation_id in self.cached and call.method == "GET":
            call.cache_key = (call.path, scope["query_string"], call.token.organization), (rt.generation, self.epoch)
            cached = rt.replies.get(*call.cache_key)
            if cached is not None:
                return cached
        ctx = Context(rt, org=call.token.organization, token=call.token, params=params, query=values, body=call.body,
                      now=now, call_id=call.call_id, effects=effects)
        handler = self.handlers[operation.operation_id]
        if call.method in READS or self.changed is None:
            result = handler(ctx)
            if not ctx.cacheable:
                call.cache_key = None
        else:                                   # logged and durable first, then made (sandboxes/changelog.py)
            result = await self.changed(call, now, effects, lambda key=None: made(rt, key, handler, ctx))
        if scenarios and call.rule is None:     # commit, then fail: the change stands, the rule replaces the reply
            after = await _scenario_step(rt, call, params, now, AFTER_HANDLER)
            if after and scripted.replaces(after):
                return self.scripted(rt, call, params, after, now, result)
        return result

    def scripted(self, rt, call, params, effects, now, result=None):
        """The reply a rule scripts (world/scripted.py); an injected 429 or 503 with a body of the rule's own
        carries Retry-After (and a 429 the rate-limit headers) all the same."""
        made = scripted.reply(self.spec, rt, call, params, effects, result)
        if made.status in (429, 503):           # as `refused` does: a 429's own headers replace the spend's
            injected = header_pairs(_injected_headers(rt, effects, call.token, now))
            call.spent = injected if made.status == 429 else call.spent + injected
        return made

    def trace(self, tracer):
        """Tracing on (edge/tracing.py): each call in a server span continuing the caller's trace, its validation,
        handler and journaling in child spans. Set only then: with tracing off, the request path is as it was."""
        self.api = tracer.serving(self.api)
        self.cached = frozenset()              # a cached reply runs no handler: it would have no handler span
        self.validate = tracer.step("validate", self.validate)
        self.handlers = tracer.handling(HANDLERS)
        self.record = tracer.recording(ApiCall.journal)

    def redo(self, rt, change, key=None):
        """Run a change of the change log again (sandboxes/changelog.py): the handler of its operation, at the
        time it ran, with the caller and the scenario effects it had (no authentication, rate limit or rules:
        it passed them once)."""
        operation, params, _ = self.spec.resolve(change["method"], change["path"])
        rt.lifecycle.pump(change["now"])        # webhook attempts are not made here: the log says how they went
        values, _ = operation.check_query(change["query"])
        who = change["token"]
        token = Token(name=who["name"], value="", organization=who["organization"], scopes=who["scopes"])
        ctx = Context(rt, org=token.organization, token=token, params=params, query=values, body=change["body"],
                      now=change["now"], call_id=change["call_id"], effects=change["effects"] or {})
        rt.generation += 1
        rt.journal.next_id = max(rt.journal.next_id, change["call_id"] + 1)   # later calls get ids of their own
        keyed(rt, key, HANDLERS[operation.operation_id], ctx)

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

    def _trail(self, call, rt):
        """The call appended to --call-trail, when there is one."""
        if self.trail is not None:
            self.trail.write(call.sandbox, rt.journal, call)

    def _log(self, scope, sandbox, status, call):
        """One access-log line (edge/accesslog.py), when the access log is on."""
        if self.access_log is None:
            return
        self.access_log(scope["method"], (scope.get("raw_path") or scope["path"].encode()).decode("latin-1"),
                        status, time.perf_counter() - call.started, call.operation and call.operation.operation_id,
                        call.token and call.token.name, sandbox, call.rule, call.request_id)

    def check_reply(self, operation, status, payload, method, path):
        """--self-check: a reply that breaks the document is noted (the newest NEWEST_VIOLATIONS), counted and
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
        del self.violations[:-NEWEST_VIOLATIONS]


def made(rt, key, handler, ctx):
    """A change made: the world counts it (what it cached no longer holds: world/replies.py), then the handler."""
    rt.generation += 1
    return keyed(rt, key, handler, ctx)


def keyed(rt, key, handler, ctx):
    """Run a handler; with `key`, its world draws new values from the stream of that key (world/fake.py)."""
    if key is None:
        return handler(ctx)
    rt.fake.keyed(key)
    try:
        return handler(ctx)
    finally:
        rt.fake.unkeyed()


async def _scenario_step(rt, call, params, now, phase):
    """The scenario rules of one phase: the first that fires acts (a status, a drop or a 429 ends the call here;
    network faults shape its reply); the effects the handler gets ({} when none fired)."""
    if not rt.scenarios.active:
        return {}
    fired = rt.scenarios.evaluate(call.operation, call.method, call.path, call.token, call.headers, call.body, now,
                                  lambda: rt.deployments.target(params), phase)
    if fired is None:
        return {}
    call.rule, effects = fired.name, fired.effects
    call.faults = faults.of(effects)
    await _apply(rt, effects, call.token, now)
    return effects


async def _apply(rt, effects, token, now):
    """Scenario effects that act on the reply itself (deployment effects reach the handler)."""
    if effects.get("latency_ms"):
        await asyncio.sleep(effects["latency_ms"] / 1000)
    if effects.get("webhook_failures"):
        rt.webhooks.fail_next(effects["webhook_failures"], effects["rule"])
    if effects.get("exhaust_rate_limit") and token is not None:
        rt.limiter.exhaust(token, now)
        rt.limiter.spend(token, now)
    if effects.get("drop"):
        raise Dropped()
    if "status" in effects and not scripted.replaces(effects):    # an error body of the spec's: ends the call
        raise ApiError(effects["status"], effects["message"], headers=_injected_headers(rt, effects, token, now))


RETRY_AFTER = 1                         # seconds an injected 429 or 503 asks a client to wait, unless the rule says


def _injected_headers(rt, effects, token, now):
    """Headers of a status a rule injects: a 429 or 503 carries Retry-After as the platform's would (the rule's
    `retry_after`, else RETRY_AFTER), and a 429 the token's window used up (the rate-limit headers say so)."""
    status = effects["status"]
    wait = effects.get("retry_after", RETRY_AFTER if status in (429, 503) else None)
    headers = {} if wait is None else {"Retry-After": str(wait)}
    if status == 429 and token is not None:
        limit = token.rate_limit[0] if token.rate_limit else rt.limiter.limit
        headers.update({"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0",
                        "X-RateLimit-Reset": str(int(now) + (wait or 0))})
    return headers


async def _deliver_faulty(scope, receive, send, status, headers, payload, wanted):
    """Send a reply with a scenario's network fault; the body bytes sent (nothing without a connection)."""
    try:
        return await faults.deliver(scope, send, status, headers, payload, wanted)
    except ConnectionAbortedError:
        log.warning("scenario fault %s needs a real connection; the reply was not sent", ", ".join(wanted))
        return b""


def _at_once(coroutine):
    """The result of a coroutine run to its end now, without a loop: it must not await (RuntimeError if it does)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a call answered at once awaited")


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


def _ignored(raw):
    """A body sent to an operation that takes none, as the journal keeps it: its JSON, else its text."""
    if not raw:
        return None
    try:
        return jsonbody.loads(raw)
    except ApiError:
        return raw.decode("utf-8", errors="replace")


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


def change_of(call, now, effects):
    """What the change log keeps of an API call that changed a world: enough to run its handler again."""
    token = call.token
    return {"kind": "api", "sandbox": call.sandbox or "default", "method": call.method, "path": call.path,
            "query": call.query, "body": call.body, "now": now, "call_id": call.call_id,
            "token": {"name": token.name, "organization": token.organization, "scopes": list(token.scopes)},
            "effects": effects or None}


def header_pairs(headers):
    """A dict of headers as the (name, value) byte pairs of an ASGI reply, names in lower case."""
    return [(name.lower().encode(), str(value).encode()) for name, value in headers.items()]


def _close_connection(scope, receive):
    """Close the client connection without a reply (edge/faults.py: the scope's connection)."""
    faults.wire(scope).close_connection()
