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

_DROP = {"example", "discriminator", "xml", "externalDocs", "readOnly", "writeOnly", "deprecated", "nullable"}
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
    """Validate one kind of value: `errors(value, "body")` -> [(location, message), ...]."""

    def __init__(self, schema):
        self.schema = schema
        self._fast = jsonschema_rs.validator_for(schema, validate_formats=True)
        self._full = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())

    def errors(self, value, where):
        if self._fast.is_valid(value):
            return []
        found = []
        for error in self._full.iter_errors(value):
            found.extend(_explain(error, where))
        return found or [(where, "is not valid")]


def _explain(error, where):
    """Turn one jsonschema error into located messages; open up oneOf/anyOf to the closest branch."""
    location = _location(where, error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return [(f"{location}.{missing}" if missing else location, error.message)]
    if error.validator in ("oneOf", "anyOf") and error.context:
        return _explain_branches(error, where, location)
    if error.validator == "multipleOf" and error.validator_value == 1:     # a count the spec calls a number
        return [(location, f"{error.instance!r} is not a whole number")]
    if error.validator == "oneOf":                 # no branch failed: more than one matched
        shapes = " | ".join("/".join(_fields(branch)) or "other" for branch in error.validator_value)
        return [(location, f"matches more than one accepted shape; send exactly one of: {shapes}")]
    return [(location, _message(error, location))]


def _fields(branch):
    """The fields that make a oneOf/anyOf branch (its required ones, or those of its own branches)."""
    return list(branch.get("required", [])[:1]) or [name for sub in branch.get("anyOf", []) for name in _fields(sub)]


def _explain_branches(error, where, location):
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
    return [item for sub in best for item in _explain(sub, where)] or [(location, "is not valid")]


SENSITIVE = frozenset({"value", "password", "secret_access_key", "cloudb_secret_key", "json_credentials",
                       "target_secret"})


def _message(error, location):
    """jsonschema's message, without the offending value when it may be a secret or is long."""
    text = error.message
    shown = repr(error.instance)
    if shown in text and (location.rsplit(".", 1)[-1] in SENSITIVE or len(shown) > 80):
        text = text.replace(shown, "the value", 1)
    return text


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
