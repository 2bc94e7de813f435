"""The call journal: every API request the mock answered, for tests to assert on.

Entries are kept in a bounded ring; when old entries are dropped the journal counts
them, and every listing says how many were dropped. Secrets are redacted when the call
is recorded (the Authorization header keeps its scheme and last four characters), so
nothing readable is kept. Rendering to JSON happens when entries are read, not per call.
"""

import fnmatch
from collections import deque
from datetime import datetime

import orjson

from .clock import iso

SECRET_FIELDS = frozenset({"secret_access_key", "cloudb_secret_key", "json_credentials", "password",
                           "target_secret"})
REDACTED = "**redacted**"
FILTERS = ("method", "path", "operation", "status", "since", "scenario", "request_id")


def redact_authorization(value):
    scheme, _, credential = value.partition(" ")
    if not credential:
        return "**redacted**"
    return f"{scheme} ...{credential.strip()[-4:]}"


def redact_body(body, secret_value):
    """Copy of a request body with secret fields (and `value` of secret operations, or of an object marked
    `"secret": true` such as a Terraform variable) masked."""
    if isinstance(body, dict):
        out = {}
        secret_value = secret_value or body.get("secret") is True
        for key, item in body.items():
            if key in SECRET_FIELDS or (secret_value and key == "value"):
                out[key] = REDACTED
            else:
                out[key] = redact_body(item, False) if isinstance(item, (dict, list)) else item
        return out
    if isinstance(body, list):
        return [redact_body(item, secret_value) for item in body]
    return body


def needs_redaction(body):
    if isinstance(body, dict):
        return body.get("secret") is True or any(key in SECRET_FIELDS or needs_redaction(item)
                                                 for key, item in body.items())
    if isinstance(body, list):
        return any(needs_redaction(item) for item in body)
    return False


class Journal:
    def __init__(self, size=10000):
        self.size = size
        self.entries = deque(maxlen=size)
        self.dropped = 0
        self.next_id = 1

    def reserve(self):
        """The id of a call that has just started (calls may end in another order)."""
        ident = self.next_id
        self.next_id += 1
        return ident

    def record(self, ident, at, method, path, operation, query, headers, body, status, response, duration, rule,
               request_id=None, token=None):
        """Store one call. `operation` is the matched Operation or None; `response` the body bytes;
        `token` the name of the caller's token (None when the call was not authenticated)."""
        if len(self.entries) == self.size:
            self.dropped += 1
        if body is not None and operation is not None:
            secret = "Secret" in operation.operation_id
            if secret or needs_redaction(body):
                body = redact_body(body, secret)
        self.entries.append((ident, at, method, path, operation, query, headers, body, status, response,
                             duration, rule, request_id, token))
        return ident

    def clear(self):
        self.entries.clear()
        self.dropped = 0

    def empty_copy(self):
        """A journal of the same size with no calls (what a snapshot without its journal keeps)."""
        return Journal(self.size)

    # ------------------------------------------------------------ reading
    def select(self, filters):
        """Entries matching every given filter (see FILTERS), oldest first."""
        return [entry for entry in self.entries if not mismatches(entry, filters)]

    def render(self, entry, deliveries=()):
        ident, at, method, path, operation, query, headers, body, status, response, duration, rule, rid, token = entry
        try:
            response_body = orjson.loads(response) if response else None
        except orjson.JSONDecodeError:
            response_body = response.decode(errors="replace")
        return {
            "id": ident, "time": iso(at), "method": method, "path": path,
            "path_template": operation.template if operation else None,
            "operation": operation.operation_id if operation else None,
            "query": query, "headers": headers, "body": body, "status": status, "response": response_body,
            "duration_ms": round(duration * 1000, 3), "scenario_rule": rule, "request_id": rid, "token": token,
            "webhook_deliveries": list(deliveries),
        }

    def summary(self, entry):
        ident, _, method, path, operation, _, _, _, status, _, _, _, _, _ = entry
        return f"#{ident} {method} {path} -> {status}" + (f" ({operation.operation_id})" if operation else "")


def mismatches(entry, filters):
    """Names of the filters an entry fails (empty list: it matches)."""
    ident, at, method, path, operation, _, _, _, status, _, _, rule, rid, _ = entry
    failed = []
    for name, wanted in filters.items():
        if wanted is None or wanted == "":
            continue
        if name == "method" and method != str(wanted).upper():
            failed.append(name)
        elif name == "operation" and (operation is None or operation.operation_id != wanted):
            failed.append(name)
        elif name == "status" and not _status_matches(status, wanted):
            failed.append(name)
        elif name == "path" and not (path == wanted or (operation and operation.template == wanted)
                                     or fnmatch.fnmatchcase(path, wanted)):
            failed.append(name)
        elif name == "since" and not _after(ident, at, wanted):
            failed.append(name)
        elif name == "scenario" and rule != wanted:
            failed.append(name)
        elif name == "request_id" and rid != wanted:
            failed.append(name)
    return failed


def _status_matches(status, wanted):
    text = str(wanted)
    if len(text) == 3 and text.endswith("xx"):
        return str(status)[0] == text[0]
    return str(status) == text


def parse_since(wanted):
    """A call id (int) or an ISO 8601 time (seconds, rounded to microseconds); ValueError otherwise."""
    text = str(wanted)
    if text.isdigit():
        return int(text)
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp(), 6)


def _after(ident, at, wanted):
    since = parse_since(wanted)
    return ident > since if isinstance(since, int) else round(at, 6) >= since
