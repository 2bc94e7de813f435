"""Request (and, in tests, response) validation against the API document.

OpenAPI 3.0 schemas are converted once to JSON Schema (refs inlined, `nullable` turned
into a null type) and compiled into validators at start-up. A validator returns every
violation as `(location, message)`, never just the first one. Valid input, the common
case, is checked by a compiled fast path; the slower collecting path only runs to
explain a failure.
"""

import re

import jsonschema
import jsonschema_rs

_DROP = {"example", "discriminator", "xml", "externalDocs", "readOnly", "deprecated", "nullable"}
# Fields that hold a secret wherever they appear. The document marks the ones it can with `writeOnly`
# (kept in the compiled schemas, where JSON Schema reads it as an annotation); these are the rest.
SECRET_FIELDS = frozenset({"secret_access_key", "cloudb_secret_key", "json_credentials", "password",
                           "target_secret"})
# Also never echoed in a message: `value`, the field of a secret (and of a variable: better hidden once too often).
HIDDEN = SECRET_FIELDS | {"value"}
SECRET_MARKER = "secret"                 # an object with "secret": true holds a secret `value` (Terraform variables)
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def to_json_schema(schema, components, _seen=()):
    """OpenAPI 3.0 schema -> self-contained JSON Schema (draft 7)."""
    if isinstance(schema, list):
        return [to_json_schema(item, components, _seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in _seen:
            raise ValueError(f"recursive schema {name} is not supported")
        return to_json_schema(components[name], components, _seen + (name,))
    out = {}
    for key, value in schema.items():
        if key in _DROP or key.startswith("x-"):
            continue
        if key == "properties":
            out[key] = {name: to_json_schema(sub, components, _seen) for name, sub in value.items()}
        elif isinstance(value, (dict, list)):
            out[key] = to_json_schema(value, components, _seen)
        else:
            out[key] = value
    if schema.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:                                  # e.g. allOf: [$ref] beside nullable
            out = {"anyOf": [out, {"type": "null"}]}
    return out


class Validator:
    """Validate one kind of value: `errors(value, "body")` -> [(location, message), ...].

    `secret_fields`: the field names whose values are secrets (SECRET_FIELDS and the schema's writeOnly
    properties); no message quotes such a value, nor anything inside one or holding one. With `secret` (the
    body of a secret operation, where a secret pasted into any field would be echoed) no message quotes any
    value sent."""

    def __init__(self, schema, secret=False):
        self.schema = schema
        self.secret_fields = SECRET_FIELDS | write_only(schema)
        # fields whose value holds secret fields (a registry's `config`, `tf_vars`): a value sent there in
        # the wrong shape (a list or a string for an object) may be a secret too
        self.secret_containers = holding(schema, self.secret_fields | {SECRET_MARKER})
        self.holds_secrets = bool(self.secret_containers or property_names(schema) & self.secret_fields)
        self._hidden = HIDDEN | self.secret_fields | holding(schema, HIDDEN | self.secret_fields)
        if secret:
            self._hidden = self._hidden | property_names(schema)
        self._fast = jsonschema_rs.validator_for(schema, validate_formats=True)
        self._full = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())

    def errors(self, value, where):
        if self._fast.is_valid(value):
            return []
        found = []
        for error in self._full.iter_errors(value):
            found.extend(_explain(error, where, self._hidden))
        return found or [(where, "is not valid")]


def write_only(schema):
    """Names of the properties a (converted) schema marks writeOnly, at any depth."""
    return property_names(schema, lambda sub: isinstance(sub, dict) and sub.get("writeOnly"))


def property_names(schema, keep=lambda sub: True):
    """Names of the properties of a (converted) schema, at any depth, whose schema `keep` accepts."""
    found, pending = set(), [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            found.update(name for name, sub in (node.get("properties") or {}).items() if keep(sub))
            pending.extend(value for value in node.values() if isinstance(value, (dict, list)))
    return frozenset(found)


def holding(schema, names):
    """Names of the properties (at any depth) whose schema has, somewhere below, a property named in `names`."""
    found = set()

    def below(node):
        hit = False
        if isinstance(node, list):
            for item in node:
                hit = below(item) or hit
            return hit
        if not isinstance(node, dict):
            return False
        for name, sub in (node.get("properties") or {}).items():
            inner = below(sub)
            if inner:
                found.add(name)
            hit = hit or inner or name in names
        for key, value in node.items():
            if key != "properties" and isinstance(value, (dict, list)):
                hit = below(value) or hit
        return hit

    below(schema)
    return frozenset(found)


def _explain(error, where, hidden):
    """Turn one jsonschema error into located messages; open up oneOf/anyOf to the closest branch."""
    location = _location(where, error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return [(f"{location}.{missing}" if missing else location, error.message)]
    if error.validator in ("oneOf", "anyOf") and error.context:
        return _explain_branches(error, where, location, hidden)
    if error.validator == "multipleOf" and error.validator_value == 1:     # a count the spec calls a number
        return [(location, f"{error.instance!r} is not a whole number")]
    if error.validator == "not":                   # a field one shape forbids: sent with the fields of another
        return [(location, "is not accepted together with the other fields sent here: they make another of the "
                           "shapes this object may take (send the fields of one)")]
    if error.validator == "oneOf":                 # no branch failed: more than one matched
        shapes = " | ".join("/".join(_fields(branch)) or "other" for branch in error.validator_value)
        return [(location, f"matches more than one accepted shape; send exactly one of: {shapes}")]
    return [(location, _message(error, location, hidden))]


def _fields(branch):
    """The fields that make a oneOf/anyOf branch (its required ones, or those of its own branches)."""
    return list(branch.get("required", [])[:1]) or [name for sub in branch.get("anyOf", []) for name in _fields(sub)]


def _explain_branches(error, where, location, hidden):
    """Pick the branch the value meant: the one whose single-value enum (a discriminator
    such as `kind` or `type`) it satisfies; when none fits, list the accepted values."""
    branches = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0], []).append(sub)
    for index in range(len(error.validator_value)):
        branches.setdefault(index, [])
    tags = {}
    for branch in error.validator_value:
        for name, prop in branch.get("properties", {}).items():
            if isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1:
                tags.setdefault(name, []).append(prop["enum"][0])
    tags = {name: values for name, values in tags.items() if len(values) == len(error.validator_value)}
    fitting = [errors for errors in branches.values()
               if not any(e.validator == "enum" and len(e.relative_path) == 1 and e.relative_path[0] in tags
                          for e in errors)]
    if not fitting and tags:
        name = next(iter(tags))
        value = error.instance.get(name) if isinstance(error.instance, dict) else None
        return [(f"{location}.{name}", f"{value!r} is not one of {tags[name]}")]
    # a branch whose own field is missing is not the one the value meant, when another one is
    meant = [errors for errors in (fitting or branches.values())
             if not any(e.validator == "required" and not e.relative_path for e in errors)]
    best = min(meant or fitting or branches.values(), key=len)
    return [item for sub in best for item in _explain(sub, where, hidden)] or [(location, "is not valid")]


def _message(error, location, hidden):
    """jsonschema's message, without the offending value when it is long or may be or hold a secret: the
    value of a secret field, anything inside one, or a value that holds one (a list sent for a string)."""
    text = error.message
    shown = repr(error.instance)
    if error.instance is None or isinstance(error.instance, bool):   # said as JSON says it, not as Python does
        json_word = {None: "null", True: "true", False: "false"}[error.instance]
        text, shown = text.replace(shown, json_word), json_word
    if len(shown) > 80 or _inside_secret(location, hidden) or _holds_secret(error.instance, hidden):
        text = text.replace(shown, "the value") if shown in text else f"the value fails {error.validator}"
    return text


def _inside_secret(location, hidden):
    """The location is a secret field or inside one, or a whole body (which may be one, sent wrongly typed)."""
    parts = location.replace("[", ".").split(".")
    return len(parts) == 1 or any(part in hidden for part in parts)


def _holds_secret(value, hidden):
    """A value that is, or contains at any depth, a mapping with a secret field or the secret marker."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if item.get(SECRET_MARKER) or any(key in hidden for key in item):
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _location(where, path):
    out = where
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def coerce(raw, schema):
    """Query string value -> the JSON type its schema declares (left as is if it does not parse)."""
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
    except ValueError:
        return raw
    if kind == "boolean" and raw in ("true", "false"):
        return raw == "true"
    return raw
