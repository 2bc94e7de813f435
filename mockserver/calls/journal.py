"""The call journal: every API request the mock answered, for tests to assert on.

Each sandbox's journal keeps its calls in a ring bounded by count (`--journal-size`); all the
journals of a server share one memory budget in bytes (`--journal-memory`, a `Budget`). A call is
kept compactly: the fields filters read (method, path, operation, status, rule, ...) as plain values,
the query, headers and request body encoded as one JSON byte string, the reply as the bytes sent; all but
the newest calls are packed in compressed blocks (calls/log.py).
A request or reply body longer than `body_limit` bytes is kept cut, and the call says so
(`truncated`). When the budget is exceeded, the journals holding most give up their oldest calls
first (each down to a common level), so one busy sandbox cannot push out a quiet one's calls.
Every call given up, by count or by bytes, is counted in `dropped`: never silently.

Secrets are redacted when the call is recorded (the Authorization header keeps its scheme and last
four characters; credentials in the query, found by name and by shape, are replaced: calls/credentials.py),
so nothing readable is kept. Other credentials a client sends the mock (a header such as X-Api-Key, a
token in a request body) are replaced whenever a call is read (`Call.parts`: the calls, the inspector, a
pact or a HAR log), which costs the request path nothing; the recording proxy replaces them before it
journals. Rendering to JSON happens when calls are read.
"""

import difflib
import fnmatch
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from mockserver.calls import credentials
from mockserver.calls.log import OVERHEAD, Call, CallLog
from mockserver.core.clock import iso
from mockserver.core.matching import body_matches, headers_match
from mockserver.document.validation import SECRET_FIELDS, SECRET_MARKER

REDACTED = "**redacted**"
FILTERS = ("method", "path", "operation", "status", "since", "scenario", "request_id", "token", "headers", "body")
NOT_KEPT = ("authorization", "cookie", "proxy-authorization")   # headers a filter cannot read: kept masked
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")     # a method filter: any case
BODY_LIMIT = 64 * 1024          # bytes of a request or reply body kept whole
SLICE = 128                     # a trim brings the journals' total 1/SLICE of the budget under it ...
MIN_SLICE = 16 * 1024           # ... or this many bytes (at most the budget), whichever is more
LAST_PATHS = 16                 # paths whose last reply and request headers a journal remembers, to share with the
                                # next call of the path when they are the same (a poll): no copy is made, and a
                                # block pickles them once


def redact_authorization(value):
    scheme, _, credential = value.partition(" ")
    if not credential:
        return "**redacted**"
    return f"{scheme} ...{credential.strip()[-4:]}"


def redact_body(body, secret_value, fields=SECRET_FIELDS, containers=frozenset()):
    """Copy of a request body with secret fields masked: those in `fields` (the document's writeOnly ones
    among them), `value` of secret operations or of an object marked `"secret"` (a Terraform variable), and
    a field that holds secrets (`containers`: a registry's config, `tf_vars`) sent in another shape than
    objects (a string, or a list of strings, for the config: what it holds may be a secret)."""
    if isinstance(body, dict):
        out = {}
        secret_value = secret_value or bool(body.get(SECRET_MARKER))
        for key, item in body.items():
            if key in fields or (secret_value and key == "value") or (key in containers and _misshapen(item)):
                out[key] = REDACTED
            elif isinstance(item, (dict, list)):
                out[key] = redact_body(item, False, fields, containers)
            else:
                out[key] = item
        return out
    if isinstance(body, list):
        return [redact_body(item, secret_value, fields, containers) for item in body]
    return body


def redacted_body(body, operation, status):
    """A request body of `operation` as the journal keeps it, its secrets masked."""
    secret = "Secret" in operation.operation_id
    validator = operation.body
    fields = validator.secret_fields if validator is not None else SECRET_FIELDS
    containers = validator.secret_containers if validator is not None else frozenset()
    if not isinstance(body, dict) and (secret or (validator is not None and validator.holds_secrets)):
        return REDACTED                          # not the object asked for: whatever it is may be the secret
    if secret and status == 400:                 # refused: a secret may have been pasted into any field
        return redact_text(body)
    if secret or needs_redaction(body, fields, containers):
        return redact_body(body, secret, fields, containers)
    return body


def redact_text(body):
    """Copy of a request body with every text in it masked, its shape, numbers and booleans kept."""
    if isinstance(body, dict):
        return {key: redact_text(item) for key, item in body.items()}
    if isinstance(body, list):
        return [redact_text(item) for item in body]
    return REDACTED if isinstance(body, str) else body


def _misshapen(value):
    """Not an object, nor a list of objects: not the shape of a field that holds secrets."""
    if isinstance(value, list):
        return any(not isinstance(item, dict) for item in value)
    return not isinstance(value, dict)


def needs_redaction(body, fields=SECRET_FIELDS, containers=frozenset()):
    """Whether a body holds anything `redact_body` would mask (`fields` and `containers`: sets of names)."""
    if isinstance(body, dict):
        if body.get(SECRET_MARKER) or not fields.isdisjoint(body) or not containers.isdisjoint(body):
            return True
        for item in body.values():               # a plain loop: most bodies are flat, and a generator would
            if isinstance(item, (dict, list)) and needs_redaction(item, fields, containers):   # cost more than
                return True                      # the walk
        return False
    if isinstance(body, list):
        return any(needs_redaction(item, fields, containers) for item in body)
    return False


def header_lines(headers):
    """Headers (a dict of str, or (bytes, bytes) pairs) as the journal keeps them."""
    if isinstance(headers, bytes):
        return headers
    if isinstance(headers, dict):
        return "\n".join(f"{name}: {value}" for name, value in headers.items()).encode("latin-1", "replace")
    return b"\n".join(map(b": ".join, headers))


EMPTY_REQUEST = b"[{},null]"           # no query, no body: most calls'


@dataclass(slots=True, eq=False)
class Exchange:
    """One call as the journal takes it (`Journal.record`), field by field. api/pipeline.py's `ApiCall` is one,
    filled in as the call goes through the request path; contract/proxy.py makes one for a forwarded call."""
    call_id: int                    # reserved when the call came (`Journal.reserve`): ids follow arrival
    at: float                       # the world's clock when the call came
    received: float                 # the wall clock when it came (Unix seconds): what a manual clock cannot say
    method: str
    path: str                       # without the sandbox prefix and /api/v1
    operation: Any = None           # the document's Operation, or None (no route matched)
    query: dict = field(default_factory=dict)
    headers_kept: bytes = b""       # the request's headers as kept: `name: value` lines, the credential cut
    body: Any = None                # the request body as read (JSON), or None
    status: int = 0
    response: bytes = b""           # the reply's body as sent
    reply_headers: list = field(default_factory=list)      # (name, value) byte pairs sent
    duration: float = 0.0           # seconds from came to answered
    rule: str | None = None         # the scenario rule that shaped the reply
    request_id: str | None = None
    token_name: str | None = None   # the name of the caller's token; None when the call was not authenticated
    fault: str | None = None        # the network faults of that rule (comma-separated), None when sent as made
    drift: list | None = None       # a forwarded call's findings against the document ([] when none)
    trace_id: str | None = None     # the call's trace (32 hex digits), when tracing is on (edge/tracing.py)


class Budget:
    """The bytes every journal of a server may hold together (shared by all sandboxes, never copied)."""

    def __init__(self, limit):
        self.limit = limit
        self.total = 0
        self.trims = 0                          # times calls were given up for bytes (memory let go)
        self.journals: weakref.WeakSet[Journal] = weakref.WeakSet()

    def join(self, journal):
        self.journals.add(journal)
        self.total += journal.bytes

    def leave(self, journal):
        if journal in self.journals:
            self.journals.discard(journal)
            self.total -= journal.bytes

    def trim(self):
        """Bring the total a slice (1/SLICE of the limit) under the limit: every journal above a common level gives
        up its oldest calls down to that level (the level is the highest that frees enough). A small slice each
        time, because the calls given up are freed while a request waits: a large share of the budget at once is
        tens of thousands of calls, and every connection waited while they were freed."""
        journals = list(self.journals)
        self.total = sum(journal.bytes for journal in journals)    # exact again (a journal freed uncounted)
        if self.total <= self.limit:
            return
        self.trims += 1
        target = self.limit - max(self.limit // SLICE, min(self.limit, MIN_SLICE))
        level = _level([journal.bytes for journal in journals], target)
        for journal in journals:
            if journal.bytes > level:
                self.total -= journal.shrink(level)


def _level(sizes, target):
    """The largest L with sum(min(size, L)) <= target: what each journal may keep."""
    sizes = sorted(sizes)
    below, count = 0, len(sizes)
    for index, size in enumerate(sizes):
        level = (target - below) // (count - index)
        if level < size:
            return max(level, 0)
        below += size
    return sizes[-1] if sizes else 0


class Journal:
    def __init__(self, size=10000, budget=None, body_limit=BODY_LIMIT):
        self.size = size
        self.entries = CallLog()
        self.dropped = 0
        self.next_id = 1
        self.bytes = 0
        self.body_limit = body_limit
        self.budget = budget
        self.last = {}                           # path -> (reply, request headers) of its latest call (LAST_PATHS)
        self.last_headers = None                 # (the request's headers as sent, as kept) of the latest call
        if budget is not None:
            budget.join(self)

    def __getstate__(self):                     # what `last_headers` holds has the credential in clear: never saved
        return {name: value for name, value in self.__dict__.items() if name not in ("last", "last_headers")}

    def __setstate__(self, state):
        """A journal read back (a copied world, a restored state file) counts in its server's budget."""
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.last = {}
        self.last_headers = None
        if self.budget is not None:
            self.budget.join(self)

    def release(self):
        """The journal's world is retired: its bytes no longer count."""
        if self.budget is not None:
            self.budget.leave(self)

    def reserve(self):
        """The id of a call that has just started (calls may end in another order)."""
        ident = self.next_id
        self.next_id += 1
        return ident

    def record(self, call: Exchange):
        """Keep one call (redacted, bounded: see the module); its id."""
        body, operation, status, path = call.body, call.operation, call.status, call.path
        if body is not None and operation is not None:
            body = redacted_body(body, operation, status)
        truncated = None
        query = call.query
        if query:
            query = credentials.query(query)
        request = EMPTY_REQUEST if not query and body is None else orjson.dumps((query, body))
        if len(request) > self.body_limit:       # the body is most of it: keep the body cut, if it is the body
            encoded_body = orjson.dumps(body)
            if len(encoded_body) > self.body_limit:
                truncated = {"body": len(encoded_body)}
                cut = encoded_body[:self.body_limit].decode("utf-8", "ignore")
                request = orjson.dumps((query, cut))
        if request is not EMPTY_REQUEST:
            request = bytes(memoryview(request))
        response = call.response
        if len(response) > self.body_limit:
            truncated = {**(truncated or {}), "response": len(response)}
            response = response[:self.body_limit]
        response, request_headers = self._shared(path, response, call.headers_kept)
        reply_headers = b"\n".join(map(b": ".join, call.reply_headers))
        request_id, fault, trace_id = call.request_id, call.fault, call.trace_id
        size = (OVERHEAD + len(path) + len(request) + len(request_headers) + len(response) + len(reply_headers)
                + len(request_id or "") + len(fault or "") + len(trace_id or ""))
        drift = None if call.drift is None else orjson.dumps(call.drift)
        if drift is not None:
            size += len(drift)
        kept = Call(call.call_id, call.at, call.method, path, operation, status, call.duration, call.rule, request_id,
                    call.token_name, truncated, request, response, reply_headers, request_headers, drift, fault,
                    trace_id, call.received, size)
        added = 0
        if self.entries.length >= self.size:     # full: the oldest goes first (a journal of fewer than
            added -= self.entries.drop_oldest()  # BLOCK + KEEP calls then never packs)
            self.dropped += 1
        added += self.entries.append(kept)
        self.bytes += added
        if self.budget is not None:
            self.budget.total += added
            if self.budget.total > self.budget.limit:
                self.budget.trim()
        return call.call_id

    def _shared(self, path, response, request_headers):
        """The reply and request headers to keep: those of the path's call before when the bytes are the same (a
        poll), else a copy of the reply of its exact size (orjson's replies keep a larger buffer behind them)."""
        shared = self.last.get(path)
        if shared is not None and shared[0] == response:
            response = shared[0]
        else:
            response = bytes(memoryview(response))
        if shared is not None and shared[1] == request_headers:
            request_headers = shared[1]
        if len(self.last) >= LAST_PATHS and path not in self.last:
            self.last.clear()
        self.last[path] = (response, request_headers)
        return response, request_headers

    def request_headers(self, raw, authorization):
        """A request's headers as the journal keeps them (`raw`: the server's byte pairs; `authorization`: the
        credential sent, or None): `name: value` lines, the credential cut. A client sending the same headers as
        the call before gets that call's bytes, neither joined nor cut again (`last_headers`)."""
        last = self.last_headers
        if last is not None and last[0] == raw:
            return last[1]
        if authorization is None:
            kept = b"\n".join(map(b": ".join, raw))
        else:
            cut = b"authorization: " + redact_authorization(authorization).encode("latin-1")
            kept = b"\n".join([cut if name == b"authorization" else name + b": " + value for name, value in raw])
        self.last_headers = (raw, kept)
        return kept

    def shrink(self, keep):
        """Give up the oldest calls until at most `keep` bytes are held; returns the bytes freed."""
        freed = 0
        self.last = {}
        self.last_headers = None
        while self.entries and self.bytes > keep:
            calls, size = self.entries.drop_front()
            self.bytes -= size
            freed += size
            self.dropped += calls
        return freed

    def clear(self):
        if self.budget is not None:
            self.budget.total -= self.bytes
        self.last = {}
        self.last_headers = None
        self.entries.clear()
        self.dropped = 0
        self.bytes = 0

    def empty_copy(self):
        """A journal of the same bounds with no calls (what a snapshot without its journal keeps);
        it counts in no budget until it is read back as part of a world."""
        copy = Journal(self.size, None, self.body_limit)
        copy.budget = self.budget
        return copy

    # ------------------------------------------------------------ reading
    def newest(self):
        """The call recorded last, or None."""
        return self.entries.newest()

    def find(self, ident):
        """The call of that id, or None."""
        return self.entries.find(ident)

    def select(self, filters):
        """Calls matching every given filter (see FILTERS), oldest first."""
        since = parse_since(filters["since"]) if filters.get("since") not in (None, "") else None
        calls = self.entries.after(since) if isinstance(since, int) else self.entries
        return [call for call in calls if not mismatches(call, filters)]

    def page(self, filters, after, size):
        """One page of the calls matching the filters, by id, oldest first: those above the id `after` (None: from
        the first), at most `size` of them; and how many match in all from there."""
        calls = self.entries if after is None else self.entries.after(after)
        found = sorted((call for call in calls if (after is None or call.id > after) and not mismatches(call, filters)),
                       key=lambda call: call.id)
        return found[:size], len(found)

    def latest(self, filters, limit, after=None):
        """The newest `limit` calls matching the filters (and above the id `after`), oldest first: read from the
        newest back, so the cost follows what is asked for, not the length of the journal."""
        found: list[Call] = []
        for call in reversed(self.entries):
            if len(found) >= limit:
                break
            if (after is None or call.id > after) and not mismatches(call, filters):
                found.append(call)
        found.reverse()
        return found

    def render(self, call, deliveries=()):
        query, headers, body = call.parts()
        response = call.response
        try:
            response_body = orjson.loads(response) if response and not call.truncated else None
        except orjson.JSONDecodeError:
            response_body = None
        if response_body is None and response:
            response_body = response.decode("utf-8", "replace")
        out = {
            "id": call.id, "time": iso(call.at), "method": call.method, "path": call.path,
            "path_template": call.template, "operation": call.operation_id,
            "query": query, "headers": headers, "body": body, "status": call.status,
            "response_headers": dict(call.response_headers()), "response": response_body,
            "duration_ms": round(call.duration * 1000, 3), "scenario_rule": call.rule, "request_id": call.request_id,
            "token": call.token, "webhook_deliveries": list(deliveries),
            "received_at": None if call.received is None else iso(call.received),
        }
        findings = call.findings()
        if findings is not None:
            out["drift"] = findings
        if call.trace_id is not None:            # traced (edge/tracing.py): the trace beside the request id
            out["trace_id"] = call.trace_id
        if call.truncated:
            out["truncated"] = {part: {"bytes": size, "kept": self.body_limit} for part, size in call.truncated.items()}
        return out

    def summary(self, call):
        return (f"#{call.id} {call.method} {call.path} -> {call.status}"
                + (f" ({call.operation_id})" if call.operation else ""))


def mismatches(call, filters):
    """Names of the filters a call fails (empty list: it matches)."""
    failed = []
    for name, wanted in filters.items():
        if wanted is None or wanted == "":
            continue
        if name == "method" and call.method != str(wanted).upper():
            failed.append(name)
        elif name == "operation" and call.operation_id != wanted:
            failed.append(name)
        elif name == "status" and not _status_matches(call.status, wanted):
            failed.append(name)
        elif name == "path" and not (call.path == wanted or call.template == wanted
                                     or fnmatch.fnmatchcase(call.path, wanted)):
            failed.append(name)
        elif name == "since" and not _after(call.id, call.at, wanted):
            failed.append(name)
        elif name == "scenario" and not rule_matches(call.rule, wanted):
            failed.append(name)
        elif name == "request_id" and call.request_id != wanted:
            failed.append(name)
        elif name == "token" and call.token != wanted:
            failed.append(name)
        elif name in ("headers", "body") and not _holds(call, name, wanted):
            failed.append(name)
    return failed


def _holds(call, part, wanted):
    """Whether the call's request headers or body, as a reader sees them (credentials replaced, so a filter is no
    way to guess one), hold what the filter asks (core/matching.py)."""
    _, headers, body = call.parts()
    if part == "headers":
        return headers_match({name.lower(): value for name, value in headers.items()}, wanted)
    return isinstance(body, dict | list) and body_matches(body, wanted)


def filter_problems(filters, operations):
    """(filter, problem) for each filter value no call could ever match (an empty list: all can match), so
    that a mistyped filter is an error rather than an empty answer or a verify that passes. `operations`:
    the operation ids of the API document (a dict or set). Every reader of filters (the calls, verify, export
    and the inspector's rows) checks them here."""
    out = []
    for name, wanted in filters.items():
        if wanted is None or wanted == "":
            continue
        if name == "method" and str(wanted).upper() not in METHODS:
            out.append((name, f"{str(wanted)[:40]!r} is not an HTTP method; use one of {', '.join(METHODS)}"))
        elif name == "status" and not _status_form(wanted):
            out.append((name, f"{str(wanted)[:40]!r} is neither a status code (100 to 599, or 0: a connection a "
                              f"scenario dropped) nor a class of them (1xx to 5xx)"))
        elif name == "operation" and (not isinstance(wanted, str) or wanted not in operations):
            near = difflib.get_close_matches(str(wanted), list(operations), n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            out.append((name, f"no operation of the API document has the id {str(wanted)[:80]!r}{hint}"))
        elif name == "path" and not isinstance(wanted, str):
            out.append((name, "must be a string: a path, a path template or a glob"))
        elif name == "since":
            try:
                parse_since(wanted)
            except ValueError:
                out.append((name, f"{wanted!r} is neither a call id nor an ISO 8601 time"))
        elif name == "token" and not isinstance(wanted, str):
            out.append((name, "must be a string: a token's name or value"))
        elif name == "headers":
            out += _headers_problems(wanted)
        elif name == "body" and (not isinstance(wanted, dict) or not wanted):
            out.append((name, "must be an object of fields and the values they hold ({\"name\": \"web\"}; a "
                              "dotted path such as settings.replicas for a field inside another)"))
    return out


def _headers_problems(wanted):
    if not isinstance(wanted, dict) or not wanted or not all(isinstance(v, str) for v in wanted.values()):
        return [("headers", "must be an object of header names and globs of their values "
                            "({\"content-type\": \"application/json*\"})")]
    masked = sorted(name for name in wanted if name.lower() in NOT_KEPT)
    if masked:
        return [("headers", f"{', '.join(masked)} is kept masked, so no filter can read it: filter by token (a "
                            f"token's name or value) instead")]
    return []


def _status_form(wanted):
    """A filter value `_status_matches` can match: a code (`404`, 404, `0`) or a class (`4xx`)."""
    if isinstance(wanted, bool) or not isinstance(wanted, (str, int)):
        return False
    text = str(wanted)
    if len(text) == 3 and text[0] in "12345" and text.endswith("xx"):
        return True
    return text.isdecimal() and text.isascii() and (text == "0" or (len(text) == 3 and 100 <= int(text) <= 599))


def rule_matches(rule, wanted):
    """A call's rule (`scenario/rule`) against a filter: the rule's full name, its scenario's name (all of
    its rules), or a glob on the full name (`flaky-*`, `*/org-down`)."""
    if rule is None:
        return False
    wanted = str(wanted)
    return rule == wanted or rule.split("/", 1)[0] == wanted or fnmatch.fnmatchcase(rule, wanted)


def _status_matches(status, wanted):
    text = str(wanted)
    if len(text) == 3 and text.endswith("xx"):
        return str(status)[0] == text[0]
    return str(status) == text


def parse_since(wanted):
    """A call id (int) or an ISO 8601 time (seconds, rounded to microseconds); ValueError otherwise."""
    return _parse_since(str(wanted))                 # a list or an object from a JSON body: a ValueError too


@lru_cache(maxsize=64)                          # a filter is read once per call it is checked against
def _parse_since(text):
    if text.isdigit():
        return int(text)
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp(), 6)


def _after(ident, at, wanted):
    since = parse_since(wanted)
    return ident > since if isinstance(since, int) else round(at, 6) >= since
