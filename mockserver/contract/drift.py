"""Drift: how what the platform answered differs from what the mock knows.

Two comparisons, both returning findings (plain dicts `{kind, path, message}`, JSON-ready), in one
vocabulary (`KINDS`): each finding says what the platform does against a reference, the mock's document
when recording (`mockserver record`) and the mock's own reply in a parity run (`mockserver parity`):

- `against_schema(value, schema)`: a value (a request or reply body) against the mock's document,
  the JSON Schema the validators were compiled from: fields the document does not declare (`added`),
  required fields absent (`missing`), values of another type (`type`; strings are told apart by the
  formats the document gives them: uuid, date-time) and enum values the document does not know
  (`enum`). `exchange(spec, ...)` checks one whole exchange this way (the recording proxy).
- `against_reply(upstream, mock)`: the platform's reply against the mock's own reply to the same call
  (the parity run): fields one has and the other lacks, and fields whose kinds differ. Values are
  normalized to their kinds first (ids, timestamps and generated values never compare equal between
  two runs; their kind does), nulls agree with anything, and the items of a list are merged into one
  shape (`$.results[*].id`), so two lists of different lengths compare by what their items hold. A field
  that follows the record's state (`STATE_FIELDS`: what a service shows once deployed, a cluster while
  locked) on one side only is no finding: it is noted (`states_apart`), as the records are not alike.

Paths are JSON paths from the body's root `$`. Findings name keys and kinds, never a field's value
(an enum finding shows the unknown value: enum values are names, never secrets).
"""

import re

import orjson

from mockserver.core.errors import ApiError

UUID_TEXT = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$", re.IGNORECASE)
FORMATS = {"uuid": UUID_TEXT, "date-time": DATE_TIME}
RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")
JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


# Every kind of finding, recording and parity alike: what the platform does against the reference (the mock's
# document when recording, the mock's reply in a parity run).
KINDS = {
    "added": "added: the platform sends a field the reference does not have",
    "missing": "missing: the platform does not send a field the reference has (the document: requires)",
    "type": "changed type: the platform sends another type (uuid and date-time strings told apart)",
    "enum": "unknown value: the platform sends a value of an enum the document does not list",
    "status": "status: another status (parity), or one the document does not declare (record)",
    "header": "header: a header that matters differs, or one the document promises is missing",
    "body": "body: a body on one side only, or one that is not JSON",
    "error": "error body: not the spec's {status, error, message}",
    "states": "states: a polled status went through other states, or ended apart (parity)",
    "route": "route: no operation of the document answers the path (record)",
    "request": "request: the request breaks the document (record)",
    "upstream": "upstream: the upstream could not be asked (record)",
}
REFERENCES = {"document": "the document", "mock": "the mock"}
# Fields that follow a record's state, not its kind (the document declares them optional): a service shows them
# once deployed, a cluster while locked or while an upgrade is available.
STATE_FIELDS = {"deployed_commit_id": "deployed", "last_deployment_date": "deployed",
                "last_deployment_state": "deployed", "deployment_request_id": "deployed", "execution_id": "deployed",
                "last_execution_id": "deployed", "cluster_lock": "locked", "next_k8s_available_version": "upgradable"}


def finding(kind, path, message, **extra):
    return {"kind": kind, "path": path, "message": message, **extra}


def added(path, reference):
    return finding("added", path, f"the platform sends a field {REFERENCES[reference]} does not have")


def missing(path, reference):
    has = "requires" if reference == "document" else "sends"
    return finding("missing", path, f"the platform does not send a field {REFERENCES[reference]} {has}")


def changed_type(path, reference, expected, actual):
    """A value of another type: `expected` the reference's types, `actual` the platform's."""
    return finding("type", path, f"changed type: {REFERENCES[reference]} has {' or '.join(expected)}, the platform "
                                 f"sends {' or '.join(actual)}", expected=expected, actual=actual)


def json_type(value):
    if isinstance(value, bool) or value is None:
        return JSON_TYPES[type(value)]
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    return JSON_TYPES.get(type(value), type(value).__name__)


def kind_of(value):
    """A value's kind for comparing two runs: its JSON type, strings told apart as uuid and date-time."""
    kind = json_type(value)
    if kind == "string":
        if UUID_TEXT.match(value):
            return "string (uuid)"
        if DATE_TIME.match(value):
            return "string (date-time)"
    return "number" if kind == "integer" else kind


def normalize(value):
    """A body with ids and timestamps replaced by their kind (`<uuid>`, `<date-time>`): what two runs of
    the same calls share, for a report that stays the same from one run to the next."""
    if isinstance(value, dict):
        return {key: normalize(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalize(item) for item in value]
    if isinstance(value, str):
        kind = kind_of(value)
        if kind != "string":
            return f"<{kind[8:-1]}>"
    return value


# ---------------------------------------------------------------- against the document
def against_schema(value, schema, path="$"):
    """Findings of `value` against a JSON Schema of the document (converted by validation.to_json_schema)."""
    schema = _merged(schema)
    branches = schema.get("oneOf") or schema.get("anyOf")
    if branches:
        base = {key: item for key, item in schema.items() if key not in ("oneOf", "anyOf")}
        tries = [against_schema(value, _combine(base, _merged(branch)), path) for branch in branches]
        return min(tries, key=len)
    expected = _types(schema)
    actual = json_type(value)
    if expected and not (actual in expected or (actual == "integer" and "number" in expected)):
        return [changed_type(path, "document", sorted(expected), [actual])]
    if "enum" in schema and value not in schema["enum"]:
        return [finding("enum", path, f"unknown value: {value!r} is not a value the document knows", actual=value)]
    pattern = FORMATS.get(schema.get("format"))
    if pattern is not None and isinstance(value, str) and not pattern.match(value):
        return [changed_type(path, "document", [f"string ({schema['format']})"], ["string"])]
    if isinstance(value, dict):
        return _object_findings(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return _unique([item for element in value for item in against_schema(element, schema["items"], f"{path}[*]")])
    return []


def _object_findings(value, schema, path):
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    out = [missing(f"{path}.{name}", "document") for name in schema.get("required", ()) if name not in value]
    for name, item in value.items():
        sub = properties.get(name) if properties else None
        if sub is not None and sub != {"not": {}}:
            out += against_schema(item, sub, f"{path}.{name}")
        elif isinstance(extra, dict):
            out += against_schema(item, extra, f"{path}.{name}")
        elif properties is not None and extra is not True:
            out.append(added(f"{path}.{name}", "document"))
    return _unique(out)


def _merged(schema):
    """The schema with its allOf parts folded in (properties and required joined)."""
    if not isinstance(schema, dict) or "allOf" not in schema:
        return schema if isinstance(schema, dict) else {}
    out = {key: item for key, item in schema.items() if key != "allOf"}
    for part in schema["allOf"]:
        out = _combine(out, _merged(part))
    return out


def _combine(base, other):
    out = {**base, **other}
    if "properties" in base or "properties" in other:
        out["properties"] = {**base.get("properties", {}), **other.get("properties", {})}
    if "required" in base or "required" in other:
        out["required"] = list(dict.fromkeys([*base.get("required", ()), *other.get("required", ())]))
    return out


def _types(schema):
    kind = schema.get("type")
    if kind is None:
        return None
    return set(kind) if isinstance(kind, list) else {kind}


def _unique(findings):
    seen, out = set(), []
    for item in findings:
        key = (item["kind"], item["path"], item["message"])
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


# ---------------------------------------------------------------- one recorded exchange
def exchange(spec, method, path, query, body, status, headers, reply):
    """Findings of one forwarded exchange against the document. `body` and `reply` are parsed JSON (or
    `NOT_JSON` when the bytes were not JSON, None when there were none); `headers` the reply's, lower-case."""
    try:
        operation, _, path_errors = spec.resolve(method, path)
    except ApiError as error:
        return [finding("route", "request", f"the document has no {method} {path}: the mock answers {error.status}")]
    out = [finding("request", location, message) for location, message in _request_errors(operation, path_errors,
                                                                                            query, body)]
    if status not in operation.responses:
        declared = ", ".join(str(code) for code in sorted(operation.responses))
        return out + [finding("status", "status", f"{status} is not a status the document declares for "
                                                  f"{operation.operation_id} ({declared})", actual=status)]
    out += header_findings(headers, status, reply is not None)
    validator = spec.response_validator(operation, status)
    if reply is NOT_JSON:
        return out + [finding("body", "$", "the reply body is not JSON")]
    if validator is None:
        return out + ([finding("body", "$", "a body where the document declares none")] if reply is not None else [])
    if reply is None:
        return out + [finding("body", "$", "no body where the document declares one")]
    return out + against_schema(reply, validator.schema)


NOT_JSON = object()


def parse_json(raw):
    """A body's bytes as JSON: the value, NOT_JSON when they are not JSON, None when there are none."""
    if not raw or not raw.strip():
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return NOT_JSON


def _request_errors(operation, path_errors, query, body):
    errors = path_errors + operation.check_query(query)[1]
    if operation.body is not None and body is not None and body is not NOT_JSON:
        errors += operation.body.errors(body, "body")
    elif body is NOT_JSON:
        errors.append(("body", "the request body is not JSON"))
    return errors


def header_findings(headers, status, has_body):
    """The headers the document promises: JSON content, and the three rate-limit headers on every reply to an
    authenticated call (401 excepted); Retry-After on a 429."""
    out = []
    content = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if has_body and content != "application/json" and not content.endswith("+json"):
        out.append(finding("header", "content-type", f"{content or 'no content type'} where the document says "
                                                     "application/json"))
    if status != 401:
        out += [finding("header", name, f"{name} is missing") for name in RATE_HEADERS if name not in headers]
    if status == 429 and "retry-after" not in headers:
        out.append(finding("header", "retry-after", "a 429 without Retry-After"))
    return out


# ---------------------------------------------------------------- two runs of one call
def shape(value, path="$", out=None):
    """JSON path -> set of kinds; the items of an array share the path `[*]`. Empty arrays are noted
    under the key `None` (what is below them is unknown)."""
    out = {None: set(), "items": set()} if out is None else out
    kind = kind_of(value)
    out.setdefault(path, set()).add(kind)
    if isinstance(value, dict):
        for key, item in value.items():
            shape(item, f"{path}.{key}", out)
    elif isinstance(value, list):
        if value:
            out["items"].add(path)
        else:
            out[None].add(path)
        for item in value:
            shape(item, f"{path}[*]", out)
    return out


def against_reply(upstream, mock, maps=()):
    """Findings of the platform's reply (`upstream`) against the mock's reply to the same call. `maps` are
    JSON paths whose keys are data (a map of names to values), compared by their values only."""
    return _reply_findings(upstream, mock, maps)[0]


def states_apart(upstream, mock, maps=()):
    """The paths of fields that follow a record's state (STATE_FIELDS) that one side only sends: no drift."""
    return _reply_findings(upstream, mock, maps)[1]


def _reply_findings(upstream, mock, maps):
    up, mo = shape(_collapse(upstream, maps)), shape(_collapse(mock, maps))
    unknown = {path for side in (up, mo) for path in side[None] - side["items"]}
    out, reported, apart = [], [], []
    for path in sorted((up.keys() | mo.keys()) - {None, "items"}, key=_order):
        if any(path.startswith((f"{above}.", f"{above}[")) for above in reported + list(unknown)):
            continue
        if (path in mo) != (path in up) and _state_field(path):
            apart.append(path)
            reported.append(path)
        elif path not in mo:
            out.append(added(path, "mock"))
            reported.append(path)
        elif path not in up:
            out.append(missing(path, "mock"))
            reported.append(path)
        else:
            theirs, ours = up[path] - {"null"}, mo[path] - {"null"}
            if theirs and ours and not theirs & ours:
                out.append(changed_type(path, "mock", sorted(ours), sorted(theirs)))
                reported.append(path)
    return out, apart


def _state_field(path):
    return re.split(r"[.\[]", path)[-1] in STATE_FIELDS


def _order(path):
    return path.count(".") + path.count("["), path


def _collapse(value, maps, path="$"):
    """The value with the keys of map-like objects (at the paths in `maps`) folded into one key `*`."""
    if not maps:
        return value
    if isinstance(value, dict):
        if path in maps:
            return {"*": [_collapse(item, maps, f"{path}.*") for item in value.values()]} if value else {}
        return {key: _collapse(item, maps, f"{path}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_collapse(item, maps, f"{path}[*]") for item in value]
    return value


def map_paths(schema, path="$", out=None):
    """JSON paths of a schema whose objects are maps (no declared properties, values of one schema)."""
    out = set() if out is None else out
    schema = _merged(schema)
    for branch in schema.get("oneOf") or schema.get("anyOf") or ():
        map_paths(branch, path, out)
    if isinstance(schema.get("additionalProperties"), dict) and not schema.get("properties"):
        out.add(path)
    for name, sub in (schema.get("properties") or {}).items():
        map_paths(sub, f"{path}.{name}", out)
    if isinstance(schema.get("items"), dict):
        map_paths(schema["items"], f"{path}[*]", out)
    return out


def against_headers(upstream, mock):
    """The headers that matter, compared: the content type's media type, the rate-limit headers and
    Retry-After (present on one side only, or a number on one side only)."""
    out = []
    theirs = upstream.get("content-type", "").split(";", 1)[0].strip().lower()
    ours = mock.get("content-type", "").split(";", 1)[0].strip().lower()
    if theirs != ours:
        out.append(finding("header", "content-type", f"the platform sends {theirs or 'none'}, the mock "
                                                     f"{ours or 'none'}"))
    for name in (*RATE_HEADERS, "retry-after"):
        if (name in upstream) != (name in mock):
            who = "the platform sends it, the mock does not" if name in upstream else \
                "the mock sends it, the platform does not"
            out.append(finding("header", name, who))
        elif name in upstream and _numeric(upstream[name]) != _numeric(mock[name]):
            out.append(finding("header", name, "a number on one side only"))
    return out


def _numeric(text):
    return bool(re.fullmatch(r"\s*\d+(\.\d+)?\s*", text or ""))


def error_body(value, status):
    """Findings of an error reply against the spec's error body {status, error, message}."""
    if value is NOT_JSON or not isinstance(value, dict):
        return [finding("error", "$", "the error body is not a JSON object")]
    out = [finding("error", f"$.{name}", f"the error body has no {name}")
           for name in ("status", "error", "message") if name not in value]
    if "status" in value and value["status"] != status:
        out.append(finding("error", "$.status", f"the body says {value['status']!r} where the reply is {status}"))
    return out
