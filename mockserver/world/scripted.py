"""Replies a scenario rule scripts, checked against the document when the scenario loads.

    effect: {status: 200, body: {results: []}}      # this reply instead of the handler's: nothing is changed
    effect: {body: {...}}                           # the same with the operation's own success status
    effect: {status: 204}                           # a reply without a body, where the document has none
    effect: {patch: {state: STOPPED}}               # the handler runs (its change is made), then its reply is
                                                    # patched (a JSON merge patch, RFC 7386: null removes a field)
    effect: {status: 409, body: {...}}              # an error body of the rule's own

A status under 400 must be one the document lists for every operation the rule can match, and a body (or the
handler's reply, patched) must be one its schema allows for that status, with no field the document does not
describe: the mock refuses a reply the platform could not send, naming the field (`problems`). A patch needs the
handler's reply, so a rule with one is tried after the handler (its phase by default; another phase is refused).

A string of a body or patch may take values from the request: `{{path.NAME}}` (a path parameter, by the name the
document gives it), `{{query.NAME}}`, `{{body.PATH}}` (a dotted path of the request body), `{{request_id}}`,
`{{now}}` (the sandbox's clock, ISO 8601) and `{{uuid}}` (a new id). A string that is one template alone takes
the value's own type (`"{{body.replicas}}"` is a number when the request's was; absent: null). A templated field
is checked when the reply is made: a value that breaks the document then is a 500 naming the field.
"""

import copy
import difflib
import re

import jsonschema
import orjson

from mockserver.core.clock import iso
from mockserver.core.errors import ApiError
from mockserver.core.matching import MISSING, dig

TEMPLATE = re.compile(r"\{\{\s*([a-z_]+)(?:\.([^{}\s]+))?\s*\}\}")
SOURCES = {"path": True, "query": True, "body": True, "request_id": False, "now": False, "uuid": False}
SHOWN = 3                                       # operations a problem names at most


def replaces(effects):
    """Whether a rule's effects are a reply of their own: a body, a patch, or a status under 400."""
    return "body" in effects or "patch" in effects or effects.get("status", 400) < 400


# ---------------------------------------------------------------- checked at load
def problems(rule, spec, selects):
    """(where in the rule, problem) for a scripted reply the document does not allow: for each operation the rule
    can match (`selects(match, op)`), its status and the body's (or patch's) fields."""
    effect = rule.get("effect") if isinstance(rule.get("effect"), dict) else {}
    if not replaces(effect):
        return
    if "patch" in effect and rule.get("phase", "after_handler") != "after_handler":
        yield ("phase",), ("a patch changes the handler's reply: the rule must be tried after the handler (phase "
                           "after_handler, the default of a rule with a patch)")
    if "message" in effect and effect.get("status", 400) < 400:
        yield ("effect", "message"), "message is the text of an error body: a reply under 400 gives `body`"
    yield from _template_problems(effect)
    match = rule.get("match") if isinstance(rule.get("match"), dict) else {}
    operations = [op for op in spec.operations.values() if selects(match, op)]
    given = effect.get("status")
    yield from _parameter_problems(effect, operations)
    unlisted = [op for op in operations if given is not None and given < 400 and given not in op.responses]
    if unlisted:
        answers = sorted(code for code in unlisted[0].responses if code < 400)
        yield ("effect", "status"), (f"the document lists no {given} for {_named(unlisted)} (it answers "
                                     f"{', '.join(map(str, answers))}): name the operation with match.operation")
        return
    for op in operations:
        status = given if given is not None else op.status
        schema = reply_schema(spec, op, status)
        if "body" in effect:
            found = _body_problems(effect["body"], schema, op, status)
        elif "patch" in effect:
            found = _patch_problems(effect["patch"], schema, op, status)
        elif schema is not None:
            found = [(("effect", "status"), f"{op.operation_id}'s {status} has a body in the document: give it with "
                                            "`body`, or `patch` the handler's reply")]
        else:
            found = []
        if found:
            yield from found
            return                              # one operation's problems say enough


def reply_schema(spec, op, status):
    """The JSON Schema of the operation's reply with that status, closed (no field the document does not
    describe); an error status it does not list has the error body's; None when the reply has no body."""
    validator = spec.response_validator(op if status in op.responses else None, status)
    return None if validator is None else _closed(validator.schema)


_CHECKERS: dict = {}                            # (spec, operation, status) -> (spec, checker or None)


def checker(spec, op, status):
    """The closed schema's validator, made once per operation and status (a rule's replies reuse it)."""
    key = (id(spec), op.operation_id, status)
    if key not in _CHECKERS:
        schema = reply_schema(spec, op, status)
        _CHECKERS[key] = (spec, None if schema is None else
                          jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()))
    return _CHECKERS[key][1]


def _closed(schema):
    """A copy where every object that lists its properties allows no others (combinations left as they are: each
    branch of a oneOf may list only part of the fields)."""
    out = copy.deepcopy(schema)

    def close(node):
        if not isinstance(node, dict):
            return
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for sub in node.get("properties", {}).values():
            close(sub)
        for key in ("items", "additionalProperties"):
            close(node.get(key))

    close(out)
    return out


def _named(operations):
    names = [op.operation_id for op in operations[:SHOWN]]
    more = f" and {len(operations) - SHOWN} more" if len(operations) > SHOWN else ""
    return ", ".join(names) + more


def _templated(value, path=()):
    """The paths of the strings that hold a template."""
    if isinstance(value, str):
        return {path} if TEMPLATE.search(value) else set()
    if isinstance(value, dict):
        return set().union(*(_templated(item, (*path, key)) for key, item in value.items()))
    if isinstance(value, list):
        return set().union(*(_templated(item, (*path, index)) for index, item in enumerate(value)))
    return set()


def _templates(effect):
    """(where in the rule, the template found) for every template of the body or patch."""
    for part in ("body", "patch"):
        for path in sorted(_templated(effect.get(part)), key=str):
            text = effect[part]
            for step in path:
                text = text[step]
            for found in TEMPLATE.finditer(text):
                yield ("effect", part, *path), found


def _template_problems(effect):
    for where, found in _templates(effect):
        source, name = found.groups()
        if source not in SOURCES:
            yield where, (f"{{{{{source}}}}} is not a template: use {{{{path.NAME}}}}, {{{{query.NAME}}}}, "
                          "{{body.PATH}}, {{request_id}}, {{now}} or {{uuid}}")
        elif SOURCES[source] != (name is not None):
            yield where, (f"{found.group(0)}: {source} takes "
                          + (f"a name ({source}.NAME)" if SOURCES[source] else "no name"))


def _parameter_problems(effect, operations):
    """A {{path.NAME}} every operation the rule matches must have, by the name the document gives it."""
    for where, found in _templates(effect):
        source, name = found.groups()
        lacking = [op for op in operations if source == "path" and name not in op.params]
        if lacking:
            params = lacking[0].params
            near = difflib.get_close_matches(name or "", params, n=1, cutoff=0.5)
            hint = f"did you mean {{{{path.{near[0]}}}}}? " if near else ""
            yield where, (f"{found.group(0)}: {_named(lacking)} has no path parameter {name} ({hint}its path "
                          f"parameters: {', '.join(params) or 'none'})")
            return


def _body_problems(body, schema, op, status):
    if schema is None:
        return [(("effect", "body"), f"{op.operation_id}'s {status} has no body in the document")]
    skip = _templated(body)
    checker = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    out = []
    for error in sorted(checker.iter_errors(body), key=lambda e: list(map(str, e.absolute_path))):
        path = tuple(error.absolute_path)
        if path in skip:
            continue                            # checked when the reply is made, with the request's values
        out.append((("effect", "body", *path), f"{op.operation_id} {status}: body{_dotted(path)}: "
                                               f"{_message(error)}"))
    return out[:5]


def _patch_problems(patch, schema, op, status, path=()):
    """A merge patch against the reply's schema: each field it sets must be one the document describes, with a
    value it allows; a field it removes (null) must not be required."""
    where = ("effect", "patch", *path)
    if schema is None:
        return [(where, f"{op.operation_id}'s {status} has no body in the document to patch")]
    if not isinstance(patch, dict):
        return _body_problems_at(patch, schema, op, status, path)
    node = _object_of(schema)
    if node is None:
        return [(where, f"{op.operation_id} {status}: body{_dotted(path)} is not an object in the document: give "
                        "its whole value")]
    props, out = node.get("properties", {}), []
    for key, value in patch.items():
        sub = props.get(key, node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict)
                        else None)
        if sub is None:
            out.append(((*where, key), f"{op.operation_id} {status}: body{_dotted((*path, key))}: the document "
                                       f"describes no such field{_near(key, props)}"))
        elif value is None:
            if key in node.get("required", ()):
                out.append(((*where, key), f"{op.operation_id} {status}: body{_dotted((*path, key))}: the document "
                                           "requires it: a patch cannot remove it (null)"))
        elif isinstance(value, dict) and _object_of(sub) is not None:
            out += _patch_problems(value, sub, op, status, (*path, key))
        else:
            out += _body_problems_at(value, sub, op, status, (*path, key))
    return out


def _body_problems_at(value, schema, op, status, path):
    if _templated(value):
        return []
    checker = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    return [(("effect", "patch", *path, *error.absolute_path),
             f"{op.operation_id} {status}: body{_dotted((*path, *error.absolute_path))}: {_message(error)}")
            for error in checker.iter_errors(value)][:5]


def _object_of(schema):
    """The object schema of a field (through a nullable wrapper), or None when it is not an object."""
    if isinstance(schema, dict) and "anyOf" in schema and len(schema["anyOf"]) == 2:
        schema = next((branch for branch in schema["anyOf"] if branch.get("type") != "null"), schema)
    kinds = schema.get("type") if isinstance(schema, dict) else None
    if kinds == "object" or (isinstance(kinds, list) and "object" in kinds) or "properties" in (schema or {}):
        return schema
    return None


def _near(key, props):
    near = difflib.get_close_matches(key, list(props), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def _dotted(path):
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _message(error):
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        near = "".join(_near(key, error.schema.get("properties", {})) for key in extra[:1])
        return f"the document describes no field {', '.join(extra)}{near}"
    text = error.message
    return text if len(text) <= 160 else text[:120] + " ..."


# ---------------------------------------------------------------- made at reply time
class Scripted:
    """A reply a rule made: what the pipeline sends instead of the handler's."""

    __slots__ = ("status", "payload")

    def __init__(self, status, payload):
        self.status, self.payload = status, payload


def reply(spec, rt, call, params, effects, result=None):
    """The rule's reply for this call: its body rendered from the request, or the handler's `result` patched;
    checked against the document (a templated value that breaks it is a 500 naming the field)."""
    op = call.operation
    status = effects.get("status", op.status)
    values = {"path": params, "query": call.query or {}, "body": call.body, "request_id": call.request_id,
              "now": iso(rt.clock.now()), "uuid": rt.new_id}
    if "patch" in effects:
        base = orjson.loads(result) if isinstance(result, bytes) else copy.deepcopy(result)
        body = merge(base, render(effects["patch"], values))
    elif "body" in effects:
        body = render(effects["body"], values)
    else:
        return Scripted(status, b"")
    check = checker(spec, op, status)
    if check is not None:
        error = next(iter(check.iter_errors(body)), None)
        if error is not None:
            raise ApiError(500, f"scenario rule {effects['rule']}: its reply, made from this request, breaks the "
                                f"document at body{_dotted(tuple(error.absolute_path))}: {_message(error)}")
    return Scripted(status, orjson.dumps(body))


def render(value, values):
    """A body or patch with its templates filled from the request (`values`)."""
    if isinstance(value, str):
        whole = TEMPLATE.fullmatch(value)
        if whole:
            return _value(whole, values)
        return TEMPLATE.sub(lambda found: _text(_value(found, values)), value)
    if isinstance(value, dict):
        return {key: render(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [render(item, values) for item in value]
    return value


def _value(found, values):
    source, name = found.groups()
    if source == "uuid":
        return values["uuid"]()
    if source in ("now", "request_id"):
        return values[source]
    if source == "body":
        got = dig(values["body"], name) if isinstance(values["body"], dict | list) else MISSING
        return None if got is MISSING else got
    return (values[source] or {}).get(name)


def _text(value):
    if value is None:
        return ""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def merge(target, patch):
    """A JSON merge patch (RFC 7386) applied to `target`: objects merged field by field, null removes a field,
    any other value replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out
