"""The recording proxy (`mockserver record --upstream URL`, or `serve --upstream URL`).

The mock listens as usual; an API request whose path the `--only`/`--except` globs choose (all of
them by default) is forwarded to the upstream with the caller's headers (Authorization included,
hop-by-hop headers left out), and the upstream's status, headers and body go back to the caller
as they came, the body byte for byte (still compressed if it came compressed). Every other request
is answered by the mock itself (hybrid). After the reply is sent, the exchange is:

- checked against the mock's document (drift.exchange): the request, the status, every field of
  the reply; the findings are its drift;
- journaled as a normal call with its drift (`drift` in `GET /_mock/calls`, shown by the inspector),
  redacted as every call is, and secret fields of the reply masked too;
- kept for the HAR file (`--har FILE`) and the fixtures (`--fixtures-out DIR`, contract/harvest.py), both
  written when the recorder stops (Ctrl-C, SIGTERM).

Nothing secret is kept: besides the journal's own redaction, credentials are found by name and by shape
(calls/credentials.py) in the request's and reply's headers, the query, both bodies and the upstream's URL
(its user and password are never written), wherever the recorder writes: the journal, the HAR file, a pact
of the journal and the fixtures.

An upstream that cannot be reached is a 502, one that has not sent its whole reply within
`--upstream-timeout` seconds a 504, and a reply larger than `--upstream-max-body` bytes once unpacked (a
compressed reply is unpacked as it is read, never past the bound) a 502, in the spec's error body,
journaled like any other exchange.
"""

import asyncio
import fnmatch
import logging
import os
import sys
import time
import zlib
from pathlib import Path
from urllib.parse import parse_qsl

import httpx
import orjson

from mockserver.calls import credentials, har
from mockserver.calls.journal import REDACTED, SECRET_FIELDS, Exchange, header_lines, redact_authorization
from mockserver.contract import drift
from mockserver.contract.harvest import Harvest
from mockserver.core.errors import ApiError, StartupError
from mockserver.core.paths import CONTROL, DOCUMENT_PATHS, without_api_prefix
from mockserver.edge import bodies, requestid
from mockserver.sandboxes.sandbox import choose
from mockserver.sandboxes.statefile import refuses_files

log = logging.getLogger("mockserver")
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "trailer",
                        "trailers", "transfer-encoding", "upgrade"})
NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length", "x-mock-sandbox"}
WINDOWS = {"gzip": 31, "x-gzip": 31, "deflate": 15}     # zlib's wbits of the encodings unpacked here
CHUNK = 64 * 1024
RECORDED_FILE = "recorded.yaml"


class RecordPathError(StartupError):
    """--har files or --fixtures-out folders that could not be written when the recorder stops: the recording
    would be lost, so the recorder does not start (one line each, exit 2, as a state file's folder)."""

    def __init__(self, problems):
        self.problems = [f"{flag} {path}: {problem}; the recording would be lost when the recorder stops, so it "
                         f"does not start (create the folder or make it writable, or choose another {flag})"
                         for flag, path, problem in problems]
        super().__init__("\n".join(self.problems))

    def lines(self):
        return list(self.problems)


def _cannot_write_in(folder):
    """Why a file cannot be written in `folder` (made when missing, as the write at the stop does), or None.
    Nothing is made here: the nearest folder that exists must be a folder that takes a new file."""
    folder = Path(os.path.abspath(folder))
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    made = "" if existing == folder else f"the folder {folder} cannot be made: "
    if not existing.is_dir():
        return f"{made}{existing} is not a folder"
    refused = refuses_files(existing / f".mockserver-record.{os.getpid()}.probe")
    return f"{made}the folder {existing} takes no new file ({refused})" if refused else None


def check_outputs(settings):
    """Before the start: the HAR file and the fixtures folder can be written (else RecordPathError)."""
    problems = []
    if settings.har:
        har_path = Path(settings.har)
        problem = "it is a folder; give the path of a file" if har_path.is_dir() else _cannot_write_in(har_path.parent)
        if problem:
            problems.append(("--har", har_path, problem))
    if settings.fixtures_out:
        folder = Path(settings.fixtures_out)
        if folder.exists() and not folder.is_dir():
            problem = "it is a file; give a folder"
        elif (folder / RECORDED_FILE).is_dir():
            problem = f"{folder / RECORDED_FILE} is a folder"
        else:
            problem = _cannot_write_in(folder)
        if problem:
            problems.append(("--fixtures-out", folder, problem))
    if problems:
        raise RecordPathError(problems)


class Recorder:
    def __init__(self, settings, spec):
        check_outputs(settings)
        self.settings, self.spec = settings, spec
        self.base = httpx.URL(settings.upstream)
        self.only, self.excluded = list(settings.only or ()), list(settings.excluded or ())
        self.calls = [] if settings.har else None            # journal calls, for the HAR file
        self.harvest = Harvest() if settings.fixtures_out else None
        self.client = self.loop = None
        self.failures = []                                   # what could not be written at the stop (one line each)

    # ------------------------------------------------------------ which requests
    def forwards(self, method, path):
        """Whether an API path (after any sandbox prefix) goes to the upstream: the control API and the
        documents never do; a path is forwarded when some --only glob matches it (or there are none) and
        no --except glob does. Globs match the path, or the operation's template."""
        if path.startswith(CONTROL) or path in DOCUMENT_PATHS:
            return False
        api_path = without_api_prefix(path)
        names = [path, api_path]
        try:
            names.append(self.spec.match(method, api_path)[0].template)
        except ApiError:
            pass

        def hit(globs):
            return any(fnmatch.fnmatchcase(name, glob) for glob in globs for name in names)
        return (not self.only or hit(self.only)) and not (self.excluded and hit(self.excluded))

    def wants(self, scope):
        """Whether an ASGI request is forwarded (its reply then gets nothing of the mock's own, CORS included)."""
        if scope["type"] != "http":
            return False
        try:
            return self.forwards(scope["method"], choose(scope)[1])
        except ApiError:
            return False

    # ------------------------------------------------------------ one exchange
    async def forward(self, rt, scope, receive, send, path, access_log=None, sandbox=None):
        started = time.perf_counter()
        ident = rt.journal.reserve()
        method = scope["method"]
        headers = [(name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in scope["headers"]]
        body = b""
        try:
            body = await bodies.read_asgi(receive, self.settings.max_body)
            status, sent_headers, raw, decoded = await self._deadline(method, scope, headers, body)
            findings = None
        except ApiError as error:                # the mock's own reply: the upstream could not be asked
            status, raw = error.status, error.render()
            decoded = raw
            sent_headers = [(b"content-type", b"application/json"),
                            (requestid.HEADER, requestid.of_scope(scope).encode())]
            findings = [drift.finding("upstream", "request", error.message)]
        await send({"type": "http.response.start", "status": status, "headers": sent_headers})
        await send({"type": "http.response.body", "body": raw})
        exchange = Forwarded(method, path, scope, headers, body, status, sent_headers, raw, decoded)
        try:
            call = self._record(rt, ident, exchange, time.perf_counter() - started, findings)
        except Exception:                         # the caller has its reply; a fault here must not cost more
            log.exception("recording %s %s failed", method, path)
            return
        if access_log is not None:
            access_log(method, (scope.get("raw_path") or path.encode()).decode("latin-1"), status,
                       time.perf_counter() - started, call.operation_id, None, sandbox, None, call.request_id)

    async def _deadline(self, method, scope, headers, body):
        """The exchange within --upstream-timeout seconds, the whole reply read (else ApiError 504)."""
        limit = self.settings.upstream_timeout
        try:
            async with asyncio.timeout(limit):
                return await self._exchange(method, scope, headers, body)
        except TimeoutError:
            raise ApiError(504, f"the upstream did not send its whole reply within {limit:g} s "
                                f"(--upstream-timeout)") from None

    async def _exchange(self, method, scope, headers, body):
        """Ask the upstream: (status, headers to send on, raw body, body unpacked or None), or ApiError 502/504."""
        loop = asyncio.get_running_loop()
        if self.client is None or self.loop is not loop:    # a client belongs to the loop it was made in
            self.loop = loop
            self.client = httpx.AsyncClient(timeout=self.settings.upstream_timeout, follow_redirects=False)
            for name in list(self.client.headers):      # only what the caller sent goes upstream
                del self.client.headers[name]
        listed = {token.strip().lower() for name, value in headers if name == "connection"
                  for token in value.split(",")}
        forwarded = [(name, value) for name, value in headers if name not in NOT_FORWARDED and name not in listed]
        request = self.client.build_request(method, self.target(scope), headers=forwarded, content=body)
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TimeoutException:
            raise ApiError(504, f"the upstream did not answer within {self.settings.upstream_timeout:g} s") from None
        except httpx.HTTPError as error:
            raise ApiError(502, f"the upstream cannot be reached: {type(error).__name__}") from None
        try:
            raw, decoded = await self._read(response)
        except httpx.HTTPError as error:
            raise ApiError(502, f"the upstream's reply broke off: {type(error).__name__}") from None
        finally:
            await response.aclose()
        dropped = HOP_BY_HOP | {token.strip().lower() for name, value in response.headers.items()
                                if name.lower() == "connection" for token in value.split(",")}
        sent = [(n, v) for n, v in response.headers.raw if n.lower().decode() not in dropped]
        return response.status_code, sent, raw, decoded

    async def _read(self, response):
        """(raw body, body unpacked or None when its encoding is not read here), unpacked as it comes: past
        --upstream-max-body bytes, raw or unpacked, an ApiError 502."""
        limit = self.settings.upstream_max_body
        unpacker = Unpacker(response.headers.get("content-encoding", ""), limit)
        chunks, size = [], 0
        async for chunk in response.aiter_raw(CHUNK):
            size += len(chunk)
            if size > limit:
                raise too_large(limit, "is")
            chunks.append(chunk)
            unpacker.feed(chunk)
        raw = b"".join(chunks)
        return raw, raw if unpacker.plain else unpacker.result()

    def target(self, scope):
        """The upstream URL of a request: the base URL's path, then the path and query as the caller sent them."""
        raw = scope.get("raw_path") or scope["path"].encode()
        if raw.startswith(b"/sandbox/"):
            raw = b"/" + raw[len(b"/sandbox/"):].partition(b"/")[2]
        query = scope.get("query_string") or b""
        base = self.base.raw_path.split(b"?", 1)[0].rstrip(b"/")
        return self.base.copy_with(raw_path=base + raw + (b"?" + query if query else b""))

    def _record(self, rt, ident, exchange, elapsed, findings):
        """Check, journal, keep for the HAR file and the fixtures; the journaled call."""
        operation, params = exchange.operation(self.spec)
        secret = operation is not None and "Secret" in operation.operation_id
        request, reply = exchange.request_json(), exchange.reply_json()
        if findings is None:
            findings = drift.exchange(self.spec, exchange.method, exchange.api_path, exchange.query, request,
                                      exchange.status, exchange.reply_headers(), reply)
            if self.harvest is not None and isinstance(reply, dict):
                self.harvest.take(operation, params, exchange.status, mask(reply, secret))
        findings = credentials.body(findings)     # a finding may quote a value that was sent
        rt.journal.record(Exchange(
            call_id=ident, at=rt.clock.now(), received=time.time() - elapsed, method=exchange.method,
            path=exchange.path, operation=operation, query=exchange.query,
            headers_kept=header_lines(exchange.journal_headers()), body=exchange.journal_body(request, secret),
            status=exchange.status, response=exchange.journal_reply(reply, secret), duration=elapsed,
            request_id=exchange.request_id(), reply_headers=exchange.journal_reply_headers(), drift=findings))
        call = rt.journal.newest()
        if self.calls is not None:
            self.calls.append(call)
        return call

    # ------------------------------------------------------------ the end of a recording
    async def close(self):
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        self.write()

    def write(self):
        """The HAR file and the fixtures, each written whole to a temporary file and renamed into place; a
        failure of one is said in one line (never a traceback), kept in `failures` (the exit status is then 1)
        and does not keep the other from being written."""
        if self.settings.har:
            try:
                document = har.document(self.calls, credentials.url(str(self.base)).rstrip("/"),
                                        comment=f"recorded by mockserver record from {self.base.host}")
                _write(Path(self.settings.har), orjson.dumps(document, option=orjson.OPT_INDENT_2))
                _say(f"wrote {self.settings.har} ({len(self.calls)} exchanges)")
            except Exception as error:         # one line: the fixtures are still written
                log.debug("writing the HAR file failed", exc_info=True)
                self._failed(f"cannot write {self.settings.har}: {_why(error)}; its {len(self.calls)} exchange(s) "
                             f"are lost")
        if self.harvest is not None:
            path = Path(self.settings.fixtures_out) / RECORDED_FILE
            try:
                _write(path, self.harvest.document(self.spec).encode())
            except Exception as error:         # the HAR is written; say what kept the fixtures from it
                log.debug("writing the recorded fixtures failed", exc_info=True)
                self._failed(f"cannot write {path}: {_why(error)}; the recorded fixtures are lost")
                return
            for line in self.harvest.skipped:
                _say(f"fixtures: left out {line}")
            _say(f"wrote {path}")

    def _failed(self, line):
        self.failures.append(line)
        _say(line)


class Forwarded:
    """One forwarded exchange, as the journal and the checks read it."""

    def __init__(self, method, path, scope, headers, body, status, reply_headers, raw, decoded):
        self.method, self.path, self.headers, self.body = method, path, headers, body
        self.api_path = without_api_prefix(path)
        self.query = dict(parse_qsl((scope.get("query_string") or b"").decode("latin-1"), keep_blank_values=True))
        self.status, self.raw_headers, self.raw, self._decoded = status, reply_headers, raw, decoded

    def operation(self, spec):
        try:
            return spec.match(self.method, self.api_path)
        except ApiError:
            return None, {}

    def reply_headers(self):
        return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in self.raw_headers}

    def request_json(self):
        return drift.parse_json(self.body)

    def decoded(self):
        """The reply body without its content encoding (None when it cannot be decoded here)."""
        return self._decoded

    def reply_json(self):
        decoded = self.decoded()
        return drift.NOT_JSON if decoded is None else drift.parse_json(decoded)

    def request_id(self):
        sent = self.reply_headers().get("x-request-id") or dict(self.headers).get("x-request-id")
        return requestid.request_id(sent)

    def journal_headers(self):
        """The request's headers as kept: Authorization cut to its scheme and last four characters, every other
        credential (by name or shape) replaced."""
        return {name: redact_authorization(value) if name == "authorization" else credentials.header(name, value)
                for name, value in self.headers}

    def journal_reply_headers(self):
        out = []
        for name, value in self.raw_headers:
            lowered = name.lower().decode("latin-1")
            out.append((lowered.encode("latin-1"), credentials.header(lowered, value.decode("latin-1")).encode(
                "latin-1", "replace")))
        return out

    def journal_body(self, request, secret):
        if request is None:
            return None
        if request is drift.NOT_JSON:
            return f"<{len(self.body)} bytes that are not JSON: not kept>"
        return mask(request, secret)

    def journal_reply(self, reply, secret):
        """The reply as journaled: its bytes (decoded), re-encoded only when a secret field had to be masked."""
        if isinstance(reply, (dict, list)):
            masked = mask(reply, secret)
            if masked != reply:
                return orjson.dumps(masked)
        decoded = self.decoded()
        return decoded if decoded is not None else f"<{len(self.raw)} bytes in an encoding not read here>".encode()


def mask(value, secret=False):
    """A body with every secret field masked: registry keys and passwords, webhook secrets, `value` of a
    secret (every record of a secret operation, or one marked secret / is_secret), and credentials by their
    field's name or their shape (calls/credentials.py)."""
    return credentials.body(_masked(value, secret))


def _masked(value, secret):
    if isinstance(value, dict):
        secret = secret or value.get("secret") is True or value.get("is_secret") is True
        return {key: REDACTED if key in SECRET_FIELDS or (secret and key == "value" and item is not None)
                else _masked(item, secret) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item, secret) for item in value]
    return value


class Unpacker:
    """A reply body's content encoding undone as its bytes come, never past `limit` bytes (ApiError 502)."""

    def __init__(self, encoding, limit):
        encoding = encoding.strip().lower()
        self.limit, self.size, self.failed = limit, 0, False
        self.plain = encoding in ("", "identity")
        self.wbits = WINDOWS.get(encoding)
        self.decoder = zlib.decompressobj(self.wbits) if self.wbits else None
        self.parts: list[bytes] = []

    def feed(self, chunk):
        if self.plain or self.decoder is None or self.failed:
            return
        try:
            while chunk:
                self.keep(self.decoder.decompress(chunk, self.limit + 1 - self.size))
                if self.decoder.unconsumed_tail:
                    raise too_large(self.limit, "unpacks to")
                chunk = self.decoder.unused_data if self.decoder.eof else b""
                if chunk:                        # a gzip file of several members
                    self.decoder = zlib.decompressobj(self.wbits)
        except zlib.error:
            self.failed = True

    def keep(self, part):
        self.size += len(part)
        if self.size > self.limit:
            raise too_large(self.limit, "unpacks to")
        self.parts.append(part)

    def result(self):
        """The body unpacked (not for a plain body), None when it cannot be (an encoding not read here, or bytes
        that are not it)."""
        if self.decoder is None or self.failed or not self.decoder.eof:
            return None
        return b"".join(self.parts)


def too_large(limit, how):
    return ApiError(502, f"the upstream's reply {how} more than {limit} bytes (--upstream-max-body): it is not "
                         f"passed on")


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def _why(error):
    """An error in a few words, on one line: 'Permission denied: /x/s.har.partial'."""
    if isinstance(error, OSError) and error.strerror:
        text = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())


def _say(line):
    print(f"mockserver record: {line}", file=sys.stderr, flush=True)
