"""The API document, loaded and compiled once at start-up.

`Spec.load()` reads `openapi.yaml`, builds one `Operation` per method and path
(with its prebuilt validators) and a router that finds an operation by walking the
path's segments in a tree: literal segments first, then the parameter slot. Lookup
cost depends on the path's depth, not on the number of routes.
"""

import difflib
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import yaml

from mockserver.core.errors import ApiError
from mockserver.document.validation import UUID, Validator, coerce, to_json_schema

DOCUMENT = Path(__file__).with_name("openapi.yaml")          # the API's (written by build.py)
CONTROL_DOCUMENT = Path(__file__).with_name("control.yaml")  # the control API's
RESOLVED = 512                  # (method, path) pairs remembered by Spec.resolve (see forget_paths)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(eq=False)
class Operation:
    operation_id: str
    method: str
    template: str
    scope: str
    status: int
    params: tuple                      # path parameter names in order
    query: dict                        # name -> JSON schema
    body: Validator | None
    body_required: bool
    responses: dict = field(default_factory=dict)   # status -> OpenAPI schema of the body, or None

    def check_query(self, raw):
        """Parsed, typed query values of declared parameters, and violations."""
        values, errors = {}, []
        for name, (schema, validator) in self.query.items():
            # an empty value of a parameter that may be null (`pageSize=`) means no value: the default applies
            if name not in raw or (raw[name] == "" and _nullable(schema)):
                if "default" in schema:
                    values[name] = schema["default"]
                continue
            value = coerce(raw[name], schema)
            errors += validator.errors(value, f"query.{name}")
            values[name] = value
        return values, errors


def _nullable(schema):
    kind = schema.get("type")
    return isinstance(kind, list) and "null" in kind


class _Node:
    __slots__ = ("literal", "param", "methods")

    def __init__(self):
        self.literal = {}
        self.param = None
        self.methods = None            # method -> Operation


class Spec:
    def __init__(self, document):
        self.document = document
        self.json = orjson.dumps(document)
        self.components = document.get("components", {}).get("schemas", {})
        self.operations = {}
        self.path = None
        self._validators = {}
        self._root = _Node()
        self._resolved = {}             # (method, path) -> (operation, path values, their errors): see resolve
        for template, item in document["paths"].items():
            for method, raw in item.items():
                if method in ("parameters", "summary", "description", "servers"):
                    continue
                self._add(self._compile(template, method.upper(), raw))

    def response_validator(self, operation, status):
        """Validator of a reply body (the self-check); compiled on first use, one per schema."""
        schema = operation.responses[status] if operation is not None else {"$ref": "#/components/schemas/Error"}
        if schema is None:
            return None
        return self._compiled(schema, schema.get("$ref") or (operation.operation_id, status))

    def request_validator(self, name):
        """Validator of a component schema by name (fixtures are checked with these)."""
        ref = f"#/components/schemas/{name}"
        return self._compiled({"$ref": ref}, ref)

    def _compiled(self, schema, key):
        if key not in self._validators:
            self._validators[key] = Validator(to_json_schema(schema, self.components))
        return self._validators[key]

    def yaml_bytes(self):
        return DOCUMENT.read_bytes() if self.path == DOCUMENT else yaml.safe_dump(self.document).encode()

    @classmethod
    def load(cls, path=DOCUMENT):
        with open(path, "rb") as handle:
            spec = cls(yaml.load(handle, Loader=_Loader))
        spec.path = path
        return spec

    def schema(self, name):
        """JSON Schema of a component (fixtures are checked against these)."""
        return to_json_schema({"$ref": f"#/components/schemas/{name}"}, self.components)

    # ------------------------------------------------------------ compile
    def _compile(self, template, method, raw):
        params = tuple(segment[1:-1] for segment in template.split("/") if segment.startswith("{"))
        query = {}
        for param in raw.get("parameters", []):
            if param["in"] == "query":
                schema = to_json_schema(param["schema"], self.components)
                query[param["name"]] = (schema, Validator(schema))
        body, body_required = None, False
        if "requestBody" in raw:
            media = raw["requestBody"]["content"]["application/json"]
            body = Validator(to_json_schema(media["schema"], self.components),
                             secret="Secret" in raw.get("operationId", ""))
            body_required = raw["requestBody"].get("required", False)
        responses = {}
        for status, response in raw["responses"].items():
            if "$ref" in response:
                response = self.document["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
            media = response.get("content", {}).get("application/json")
            responses[int(status)] = media["schema"] if media else None
        success = min(code for code in responses if code < 300)
        return Operation(raw["operationId"], method, template, raw.get("x-scope", "read"), success, params, query,
                         body, body_required, responses)

    def _add(self, operation):
        node = self._root
        for segment in operation.template.strip("/").split("/"):
            if segment.startswith("{"):
                node.param = node.param or _Node()
                node = node.param
            else:
                node = node.literal.setdefault(segment, _Node())
        node.methods = node.methods or {}
        node.methods[operation.method] = operation
        self.operations[operation.operation_id] = operation

    # ------------------------------------------------------------ match
    def match(self, method, path):
        """(Operation, path values) or ApiError 404 / 405 with Allow; invalid ids are a 400."""
        node, values = self._walk(path)
        if node is None or not node.methods:
            near = self.closest_paths(path)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            raise ApiError(404, f"no route for {path}{hint}")
        operation = node.methods.get(method)
        if operation is None and method == "HEAD":  # wherever GET is, HEAD is too (RFC 9110): its head, no body
            operation = node.methods.get("GET")
        if operation is None:
            allow = ", ".join(sorted({*node.methods, *(("HEAD",) if "GET" in node.methods else ())}))
            ids = " or ".join(f"{op.method} {op.template} ({op.operation_id})"
                              for _, op in sorted(node.methods.items()))
            raise ApiError(405, f"method {method} is not allowed on {path}; allowed: {allow}; did you mean {ids}?",
                           headers={"Allow": allow})
        return operation, dict(zip(operation.params, values))

    def resolve(self, method, path):
        """`match` and `check_path` of a request, remembered per (method, path): a client polling one path
        pays for a lookup. The path values come as a new dict each time (handlers may keep them)."""
        key = (method, path)
        known = self._resolved.get(key)
        if known is None:
            operation, params = self.match(method, path)
            if len(self._resolved) >= RESOLVED:   # bounded: paths full of fresh ids do not grow it without end
                self._resolved.clear()
            known = self._resolved[key] = (operation, params, check_path(params))
        return known[0], dict(known[1]), list(known[2])

    def forget_paths(self):
        """Forget the remembered paths (their worlds are gone): small objects kept alive from all over a run
        pin the pages they sit on, so memory freed around them could not go back to the system."""
        self._resolved.clear()

    def closest_paths(self, path, limit=3):
        """The documented path templates nearest to a path no route answers (ids compared as ids)."""
        by_shape = self.__dict__.get("_shapes")
        if by_shape is None:
            by_shape = self.__dict__["_shapes"] = {}
            for operation in self.operations.values():
                by_shape.setdefault(_shape(operation.template), set()).add(operation.template)
        near = difflib.get_close_matches(_shape(path), list(by_shape), n=limit, cutoff=0.6)
        return [template for shape in near for template in sorted(by_shape[shape])][:limit]

    def methods(self, path):
        """The methods the document declares on a path (an empty set for an unknown path)."""
        node, _ = self._walk(path)
        return set(node.methods) if node is not None and node.methods else set()

    def _walk(self, path):
        """The router node of a path and the values of its parameter segments; (None, _) when none."""
        values = []
        node = self._root
        for segment in path.strip("/").split("/"):
            nxt = node.literal.get(segment)
            if nxt is None:
                nxt = node.param
                if nxt is None:
                    return None, values
                values.append(segment)
            node = nxt
        return node, values


def _shape(path):
    """A path with each parameter slot or id-like segment written `{}`, for comparing paths by their words."""
    return "/".join("{}" if part.startswith("{") or UUID.match(part) else part for part in path.strip("/").split("/"))


def check_path(values):
    """Every path parameter of the API is a uuid."""
    return [(f"path.{name}", f"{value!r} is not a valid uuid")
            for name, value in values.items() if not UUID.match(value)]
