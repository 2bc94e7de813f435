"""The ASGI application: which world answers a request, and which part of the mock answers it.

    choose the sandbox (its world: a Runtime) -> the control API (/_mock/...), the documents
    (/openapi.json|yaml), the start page (/), or the API's request path (api/pipeline.py)

Every request enters by one of two doors, and both open with the same prologue, `admit`: the `Host` checked
(edge/hosts.py) and the world chosen from the `/sandbox/{name}` prefix or the `X-Mock-Sandbox` header
(sandboxes/sandbox.py); an error there is an ApiError, rendered through ASGI.

- `__call__`, the ASGI application: CORS and the control API's guard wrap everything (edge/cors.py), then
  `route` hands the request to the control API, a document, the start page or the API's pipeline.
- `answer_whole`, the direct path (process/direct.py): `serve`'s protocol offers a plain API call that came
  whole; it is answered by the pipeline's `direct`, the same steps without ASGI, or declined (then it comes in by
  the first door).

The same handlers answer under `/api/v1`. The worlds themselves (building, copying, resetting, the background
loop) are sandboxes/worlds.py's.
"""

import asyncio
import base64
import hmac
import logging
import os
import time

from mockserver.api.pipeline import READS, Pipeline, change_of, header_pairs
from mockserver.control import home
from mockserver.control.routes import control_app
from mockserver.core.errors import ApiError
from mockserver.core.paths import DOCUMENT_PATHS
from mockserver.core.yamlbound import SCENARIO_BYTES
from mockserver.edge import cors, requestid, tracing
from mockserver.edge.accesslog import access_logger
from mockserver.edge.bodies import read_asgi
from mockserver.edge.hosts import HostGuard, host_of
from mockserver.process.direct import Reply
from mockserver.sandboxes.changelog import LogUnwritable, key_of
from mockserver.sandboxes.sandbox import DEFAULT, HEADER, choose_from
from mockserver.sandboxes.worlds import Worlds
from mockserver.world.auth import authenticate

log = logging.getLogger("mockserver")
JSON = [(b"content-type", b"application/json")]
# reachable without the control token (probes, the page itself)
OPEN_CONTROL = ("/_mock/health", "/_mock/ui", "/_mock/schemas")
GLOBAL_CONTROL = ("/_mock/sandboxes", "/_mock/health", "/_mock/schemas", "/_mock/openapi.json")
UNLOGGED = ("/_mock/calls/verify",)     # control calls that are not reads yet change nothing


class MockServer(Worlds):
    """The server's worlds (sandboxes/worlds.py) as an ASGI application."""

    def __init__(self, settings=None, spec=None, clock=None, wall=time.time, tracer=None):
        # tracing (edge/tracing.py): the tracer given, else the one the OTEL_* environment asks for, else None (off)
        self.tracer = tracer or tracing.from_environment(os.environ)
        super().__init__(settings, spec, clock, wall, self.tracer)
        self._yaml = None
        self.control = control_app(self)
        self.access_log = access_logger(self.settings.log_format) if self.settings.access_log else None
        self.pipeline = Pipeline(self.settings, self.spec, self.access_log, wall)
        self.pipeline.changed = self.api_changed
        if self.tracer is not None:
            self.pipeline.trace(self.tracer)
        self.recorder = None                   # the recording proxy (contract/proxy.py), only with an upstream:
        if self.settings.upstream:             # it brings the HTTP client, which a plain server does not need
            from mockserver.contract.proxy import Recorder
            self.recorder = Recorder(self.settings, self.spec)
        self.hosts = HostGuard(self.settings.allowed_hosts, self.settings.host)
        self.entry = cors.Cors(self.route, cors.parse(self.settings.cors_origins),
                               cors.methods_finder(self.spec, self.control.routes))

    async def __call__(self, scope, receive, send):
        if self.recorder is not None and self.recorder.wants(scope):
            await self.route(scope, receive, send)   # forwarded: the upstream's reply as it is, no CORS of ours
            return
        await self.entry(scope, receive, send)    # CORS and the control API's guard around everything (edge/cors.py)

    def admit(self, scope, read=None):
        """The prologue of every request, whichever door it came by: its `Host` checked (400 without one on
        HTTP/1.1 or with two, 403 for a name the mock does not serve: edge/hosts.py) and its world chosen (400 for
        a sandbox name that cannot be one): (sandbox name, path without the sandbox prefix), or ApiError. `read`:
        what `read_heads` read of its headers, when the caller has it already."""
        hosts, host, sandbox, _ = read or read_heads(scope["headers"])
        host = host_of(hosts, host, scope.get("http_version", "1.1"))
        if host is not None and not self.hosts.allows(host):
            raise self.hosts.refusal(host)
        return choose_from(scope["path"], sandbox)

    def answer_whole(self, method, target, headers, body) -> Reply | None:
        """The direct path (process/direct.py): an API call that came whole, answered at once by the pipeline's
        `direct`, or None when it must go through `__call__`. Taken only where both ways answer alike: here it must
        have no Origin (CORS makes no headers for it), pass the prologue, and go to an API path of a sandbox that
        exists and is awake, whose world has no active scenario (no rule's latency or network fault to await); not
        with tracing, a recording upstream or a replica name, nor, for a change, a change log to make it durable in
        first. A refusal of the prologue is declined too: `__call__` renders it."""
        if (self.tracer is not None or self.recorder is not None or self.settings.replica_name
                or target[:1] != b"/" or b"%" in target or b"#" in target or not target.isascii()
                or method != "GET" and self.changelog is not None):
            return None
        read = read_heads(headers)
        if read[3]:                            # an Origin: CORS makes its headers, through `__call__`
            return None
        raw_path, _, query = target.partition(b"?")
        scope = {"type": "http", "http_version": "1.1", "method": method, "path": raw_path.decode("ascii"),
                 "raw_path": raw_path, "query_string": query, "headers": headers}
        try:
            name, path = self.admit(scope, read)
        except ApiError:
            return None
        if path.startswith("/_mock") or path in DOCUMENT_PATHS or path == "/":
            return None
        box = self.sandboxes.live.get(name)
        if box is None or box.asleep or box.expires and box.expired() or box.rt.scenarios.active:
            return None
        if self.entry.origins is not None:
            scope[cors.SCOPE_KEY] = self.entry.no_origin
        box.last_used = self.sandboxes.wall()   # as `sandboxes.get` notes the use of a live sandbox
        box.calls += 1
        return self.pipeline.direct(box.rt, scope, path, None if name == DEFAULT else name, body)

    async def route(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self.settings.replica_name:
            send = self._tag_replica(send)
        try:
            name, path = self.admit(scope)
            if path.startswith("/_mock"):
                await self._control(scope, receive, cors.added(scope, send), name, path)
                return
            if path in DOCUMENT_PATHS:
                await self._document(scope, requestid.tagged(scope, cors.added(scope, send)), path)
                return
            if path == "/":
                prefix = f"/sandbox/{name}" if scope["path"].startswith("/sandbox/") else ""
                await self._home(scope, requestid.tagged(scope, cors.added(scope, send)), name, prefix)
                return
            forwarded = self.recorder is not None and self.recorder.forwards(scope["method"], path)
            live = self.sandboxes.live.get(name)
            if (live is None or live.expires and live.expired()) and not forwarded:   # the upstream's tokens
                self._check_may_create(scope, name)                                    # are not ours
            box = self.sandboxes.get(name)
            box.calls += 1
        except ApiError as error:
            await _send(requestid.tagged(scope, cors.added(scope, send)), error.status, error.render(),
                        JSON + header_pairs(error.headers))
            return
        box.inflight += 1                         # meanwhile the sandbox does not fall asleep
        try:
            if forwarded:
                await self.recorder.forward(box.rt, scope, receive, send, path, self.access_log,
                                            None if name == DEFAULT else name)
            else:
                await self.pipeline.api(box.rt, scope, receive, send, path, None if name == DEFAULT else name)
        finally:
            box.inflight -= 1

    async def _control(self, scope, receive, send, name, path):
        if not self.replaying:                     # a change of the log passed the token check once
            self._check_control_token(scope, path)
        if scope["method"] in READS or path in UNLOGGED:
            await self._answer_control(scope, receive, send, name, path)
            return
        send = self._counted(send)
        if self.changelog is None or self.replaying:
            await self._answer_control(scope, receive, send, name, path)
            return
        # written to the change log before it is made (sandboxes/changelog.py): its body read first, whole
        body = await read_asgi(receive, max(self.settings.max_body, SCENARIO_BYTES))
        kind = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"content-type"), "")
        record = {"kind": "control", "sandbox": name, "method": scope["method"], "path": path,
                  "query": scope["query_string"].decode("latin-1"), "type": kind,
                  "body": base64.b64encode(body).decode()}

        async def apply(key):
            await self._answer_control(scope, _given(body, receive), send, name, path, key)
        try:
            await self.changelog.commit(record, apply)
        except LogUnwritable as error:
            raise unwritable(error) from None

    def _counted(self, send):
        """`send` of a control call that may change state: answered 2xx, it did (the state file is due for a save)."""
        async def sending(message):
            if message["type"] == "http.response.start" and 200 <= message["status"] < 300:
                self.changes += 1
            await send(message)
        return sending

    async def _answer_control(self, scope, receive, send, name, path, key=None):
        if path.startswith(GLOBAL_CONTROL):
            box = None
        elif path.startswith("/_mock/ui"):          # the page's files: no sandbox made for them
            box = self.sandboxes.live.get(name)
        elif self.replaying:
            box = self.sandboxes.get_quietly(name)
        else:
            box = self.sandboxes.existing(name)
        # the control API routes `path`; under /sandbox/{name} the prefix is its root path, so that the URLs it
        # makes (the redirect of a trailing slash) stay in the sandbox
        scope = {**scope, "root_path": scope["path"][:len(scope["path"]) - len(path)], "mock.sandbox": box,
                 "mock.runtime": box and box.rt}
        rt = box and box.rt
        if key is not None and rt is not None:     # a change the log keeps draws its new values from its key
            rt.fake.keyed(key)
        changes = scope["method"] not in READS     # a world's cached replies no longer hold (world/replies.py):
        if changes:                                # counted before and after, as the call may await in between
            self.pipeline.epoch += 1
        try:
            await _in(box, self.control(scope, receive, requestid.tagged(scope, send)))
        except Exception:                          # answered already (500 with the error body): only logged
            log.exception("unhandled error in %s %s", scope["method"], path)
        finally:
            if changes:
                self.pipeline.epoch += 1
            if key is not None and rt is not None:
                rt.fake.unkeyed()

    async def api_changed(self, call, now, effects, apply):
        """An API call is about to change a world (api/pipeline.py): the state file is due for a save, and, when it
        keeps a change log, the change is written there and durable before `apply` makes it (a 503 when it
        cannot be: then nothing was made)."""
        if self.changelog is None or self.replaying:
            result = apply()
        else:
            try:
                result = await self.changelog.commit(change_of(call, now, effects), apply)
            except LogUnwritable as error:
                raise unwritable(error) from None
        self.changes += 1                         # made (a refusal of the handler's raised past this)
        return result

    async def replay_changes(self):
        """At start: the changes of the log that the state file does not hold, run again in order. Damage in the
        log stops the start (`DamagedLog`), unless --damaged-log skip accepts losing the records in it."""
        path, reading, self.unreplayed = self.settings.state_file, self.unreplayed, None
        if reading is None:
            return
        if not reading.records:
            if reading.torn:
                log.warning("state file %s: its change log ended in a write cut short (%d bytes, never acknowledged)"
                            ": left out", path, reading.torn)
            return
        self.replaying, failed, refused = True, 0, 0
        changes = [(position, change) for position, change in reading.records if change["kind"] != "probe"]
        try:
            for position, change in changes:
                try:
                    refused += await self._redo(change, key_of(position))
                except Exception:               # the rest still runs; the log says which one failed
                    failed += 1
                    log.exception("change log: a change could not be run again: %s", change.get("path"))
        finally:
            self.replaying = False
        self.changes += 1                          # the next save holds them, and the log is cut back
        if self.changelog is None:                 # (with a log, the next save holds up to where it begins)
            self.log_upto = (reading.records[-1][0][0] + 1, 0)
        log.warning("state file %s: %d change(s) made after its last save run again from its change log%s%s%s",
                    path, len(changes), f"; {refused} refused again, as they were then" if refused else "",
                    f"; {failed} failed" if failed else "",
                    f"; a write cut short by the stop left out ({reading.torn} bytes, never acknowledged)"
                    if reading.torn else "")

    async def _redo(self, change, key):
        """Run one change of the log again (`key`: its place in the log): 1 when it was refused (as it was the
        first time), else 0."""
        kind = change["kind"]
        if kind == "api":                       # in the sandbox it ran in, which counts the call again
            try:
                self.pipeline.redo(self.sandboxes.get_replayed(change["sandbox"], change["now"]).rt, change, key)
            except ApiError:
                return 1
        elif kind == "control":
            await self._redo_control(change, key)
        elif kind == "attempt":
            box = self.sandboxes.live.get(change["sandbox"])
            if box is not None:
                box.rt.lifecycle.pump(change["now"])
                box.rt.webhooks.replay_attempt(change["delivery"], change["attempt"], change["given_up"])
        return 0

    async def _redo_control(self, change, key):
        body = base64.b64decode(change["body"])
        scope = {"type": "http", "method": change["method"], "path": change["path"], "root_path": "",
                 "raw_path": change["path"].encode(), "query_string": change["query"].encode("latin-1"),
                 "headers": [(b"content-type", change["type"].encode("latin-1"))] if change["type"] else [],
                 "http_version": "1.1", "scheme": "http", "server": ("replay", 0), "client": ("replay", 0)}

        async def receive():
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message):
            pass
        await self._answer_control(scope, receive, send, change["sandbox"], change["path"], key)

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
        """An API request makes a new sandbox only if it carries a credential of the start world (an API token
        of the fixtures or a JWT signed with the mock's secret), so that callers without one (a page's
        `<img>` tags) cannot use up --max-sandboxes."""
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
        if self.tracer is not None:               # the spans still waiting for their exporter
            self.tracer.close()
        if self.pipeline.trail is not None:
            self.pipeline.trail.close()

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
                await self.replay_changes()            # before the first request: the world as acknowledged
                upkeep = asyncio.create_task(self.keep_up())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if upkeep:
                    upkeep.cancel()
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


def read_heads(headers):
    """(how many Host, the Host, X-Mock-Sandbox, whether an Origin came) of a request's headers, in one pass."""
    hosts, host, sandbox, origin = 0, None, None, False
    for name, value in headers:
        if name == b"host":
            hosts += 1
            host = value
        elif name == HEADER:
            if sandbox is None:
                sandbox = value
        elif name == b"origin":
            origin = True
    return hosts, host, sandbox, origin


def unwritable(error):
    """The reply to a change the change log could not take: nothing was made."""
    return ApiError(503, f"the change was not made: the state file's change log {error.file} cannot be written "
                         f"({error.cause}); reads go on, and changes are taken again once it can be written "
                         "(GET /_mock/health says how it goes)", headers={"Retry-After": "5"})


def _given(body, receive):
    """`receive` of a request whose body was read already: the body, then what the connection says next."""
    given = [{"type": "http.request", "body": body, "more_body": False}]

    async def receiving():
        return given.pop() if given else await receive()
    return receiving


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


async def _send(send, status, body, headers):
    headers = [*headers, (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
