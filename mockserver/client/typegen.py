"""The reply types of the control clients, written from the control document's components/schemas: TypedDicts for
Python, structs for Go. (The Node client's declarations are openapi-typescript's, from the same schemas.)

A schema becomes a `Shape`: a named struct (an object with properties, the named ones of components/schemas and
the inline ones under a name made of their place: Health.self_check is HealthSelfCheck, unless a `title` names
it), a list, a map (an object whose additionalProperties is a schema), free-form JSON (an object open to anything,
or a schema without a type), a choice (oneOf), or a scalar. `nullable` and optional fields are what each language
makes of them: `X | None` and NotRequired in Python, pointers and omitempty in Go.
"""

import keyword
import re
import textwrap
from dataclasses import dataclass, field

REF = "#/components/schemas/"
INITIALISMS = {"id": "ID", "url": "URL", "ms": "MS", "http": "HTTP", "json": "JSON", "har": "HAR", "api": "API",
               "rss": "RSS", "ok": "OK", "ttl": "TTL", "gc": "GC", "jwt": "JWT", "uri": "URI", "idp": "IDP"}


@dataclass
class Shape:
    kind: str                       # struct, alias, list, map, free, any, choice, string, int, float, bool, time
    name: str | None = None         # a struct's or a named schema's name
    item: "Shape | None" = None     # a list's item, a map's value
    choices: list = field(default_factory=list)
    enum: list | None = None
    nullable: bool = False


@dataclass
class Field:
    key: str
    shape: Shape
    required: bool
    description: str = ""


@dataclass
class Struct:
    name: str
    fields: list
    description: str = ""


def pascal(text):
    """A JSON key as a Go-style exported name: pactSpecification -> PactSpecification, request_id -> RequestID."""
    words = [word for word in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", text) if word]
    return "".join(INITIALISMS.get(word.lower(), word[:1].upper() + word[1:]) for word in words) or "X"


def one_line(text):
    return " ".join(str(text or "").split())


class Model:
    """The structs and named shapes of a document's components/schemas, in an order where each comes after the
    ones it uses."""

    def __init__(self, schemas):
        self.schemas = schemas
        self.structs = {}           # name -> Struct, in the order they were met
        self.aliases = {}           # name -> (Shape, description) of named schemas that are not structs
        # a schema written once and named by a YAML alias is the very object of its name: a reference to it
        self.named = {id(schema): name for name, schema in schemas.items()}
        for name, schema in schemas.items():
            made = self.shape(schema, name, named=True)
            if made.kind != "struct":
                self.aliases[name] = (made, one_line(schema.get("description")))

    def shape(self, schema, hint, named=False):
        if not named and id(schema) in self.named:
            schema = {"$ref": REF + self.named[id(schema)]}
        if "$ref" in schema:
            name = schema["$ref"].removeprefix(REF)
            target = self.schemas[name]
            kind = "struct" if "properties" in target else "alias"
            return Shape(kind, name=name, nullable=bool(schema.get("nullable")))
        nullable = bool(schema.get("nullable"))
        if "oneOf" in schema:
            return Shape("choice", choices=[self.shape(choice, hint) for choice in schema["oneOf"]], nullable=nullable)
        kind = schema.get("type")
        if kind == "object":
            if "properties" in schema:
                name = hint if named else schema.get("title") or hint
                self.struct(name, schema)
                return Shape("struct", name=name, nullable=nullable)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return Shape("map", item=self.shape(extra, hint + "Value"), nullable=nullable)
            return Shape("free", nullable=nullable)
        if kind == "array":
            return Shape("list", item=self.shape(schema["items"], schema.get("title") or hint), nullable=nullable)
        if kind == "string":
            time = schema.get("format") == "date-time"
            return Shape("time" if time else "string", enum=schema.get("enum"), nullable=nullable)
        scalar = {"integer": "int", "number": "float", "boolean": "bool"}.get(kind)
        return Shape(scalar or "any", nullable=nullable)

    def struct(self, name, schema):
        if name in self.structs:
            raise ValueError(f"two schemas would be named {name}: give one a title")
        self.structs[name] = None                     # taken before the fields, which may name their own
        required = set(schema.get("required", ()))
        fields = [Field(key, self.shape(sub, name + pascal(key)), key in required, one_line(sub.get("description")))
                  for key, sub in schema["properties"].items()]
        self.structs[name] = Struct(name, fields, one_line(schema.get("description")))

    def ordered(self):
        """Structs and aliases (name, Struct or (Shape, description)), each after those it uses."""
        table = {**self.aliases, **self.structs}
        done, out = set(), []

        def visit(name):
            if name in done:
                return
            done.add(name)
            for used in uses(table[name]):
                visit(used)
            out.append((name, table[name]))

        for name in table:
            visit(name)
        return out


def uses(entry):
    shapes = [item.shape for item in entry.fields] if isinstance(entry, Struct) else [entry[0]]
    found = []
    while shapes:
        shape = shapes.pop()
        if shape.name is not None:
            found.append(shape.name)
        shapes += [shape.item] if shape.item else []
        shapes += shape.choices
    return found


# ---------------------------------------------------------------- Python
PY_SCALARS = {"string": "str", "time": "str", "int": "int", "float": "float", "bool": "bool", "free": "dict[str, Any]",
              "any": "Any"}


def py_type(shape):
    if shape.kind in ("struct", "alias"):
        text = shape.name
    elif shape.kind == "list":
        text = f"list[{py_type(shape.item)}]"
    elif shape.kind == "map":
        text = f"dict[str, {py_type(shape.item)}]"
    elif shape.kind == "choice":
        text = " | ".join(py_type(choice) for choice in shape.choices)
    elif shape.enum:
        text = "Literal[" + ", ".join(repr(value) for value in shape.enum) + "]"
    else:
        text = PY_SCALARS[shape.kind]
    return f"{text} | None" if shape.nullable and shape.kind != "any" else text


def py_field(item):
    text = py_type(item.shape)
    return text if item.required else f"NotRequired[{text}]"


def python_module(model, header):
    entries = [python_entry(name, entry) for name, entry in model.ordered()]
    first = entries[0][0].startswith("class ") if entries else False
    lines = [header, "", "from typing import Any, Literal, NotRequired, TypedDict", *[""] * (1 + first)]
    for index, entry in enumerate(entries):
        lines += ["", ""][: 2 if index else 0] + entry
    return "\n".join(lines) + "\n"


def comment(text, prefix, width=116):
    """A description as comment lines (`prefix` begins each)."""
    return textwrap.wrap(text, width, initial_indent=prefix, subsequent_indent=prefix) if text else []


def docstring(text, indent="    ", width=116):
    lines = textwrap.wrap(text, width - len(indent) - 6)
    if not lines:
        return []
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *(indent + line for line in lines[1:]), f'{indent}"""']


def python_entry(name, entry):
    if not isinstance(entry, Struct):
        shape, description = entry
        return [*comment(description, "# "), f"{name} = {py_type(shape)}"]
    plain = all(item.key.isidentifier() and not keyword.iskeyword(item.key) for item in entry.fields)
    doc = docstring(entry.description)
    if plain:
        return [f"class {name}(TypedDict):", *doc] + [f"    {item.key}: {py_field(item)}" for item in entry.fields]
    out = [f'{name} = TypedDict("{name}", {{']                 # a key that is no identifier (from, $schema)
    out += [f'    "{item.key}": {py_field(item)},' for item in entry.fields]
    return out + ["})"]


# ---------------------------------------------------------------- Go
GO_SCALARS = {"string": "string", "time": "time.Time", "int": "int", "float": "float64", "bool": "bool",
              "free": "map[string]any", "any": "any"}


def go_type(shape, required):
    """The Go type of a field: a pointer where it may be null (or, for a struct or a time, absent)."""
    if shape.kind == "alias":
        return shape.name
    if shape.kind == "struct":
        return shape.name if required and not shape.nullable else "*" + shape.name
    if shape.kind == "list":
        return "[]" + go_type(shape.item, True)
    if shape.kind == "map":
        return "map[string]" + go_type(shape.item, True)
    if shape.kind == "choice":
        return "any"
    text = GO_SCALARS[shape.kind]
    pointer = shape.nullable or (shape.kind == "time" and not required)
    return "*" + text if pointer and shape.kind not in ("free", "any") else text


def go_module(model, header):
    body = []
    for name, entry in model.ordered():
        body += ["", *go_entry(name, entry)]
    needs_time = any("time.Time" in line for line in body)
    imports = ["", 'import "time"'] if needs_time else []
    return "\n".join([header, "", "package mockclient", *imports, *body]) + "\n"


def go_entry(name, entry):
    if not isinstance(entry, Struct):
        shape, description = entry
        return [*go_doc(name, description), f"type {name} = {go_type(shape, True)}"]
    rows = []
    for item in entry.fields:
        rows += comment(item.description, "\t// ", 110)
        omit = "" if item.required else ",omitempty"
        rows.append((pascal(item.key), go_type(item.shape, item.required), f'`json:"{item.key}{omit}"`'))
    return [*go_doc(name, entry.description), f"type {name} struct {{", *aligned(rows), "}"]


def go_doc(name, description):
    return comment(f"{name} is the control document's schema {name}" + (f": {description}" if description else "."),
                   "// ", 110)


def aligned(rows):
    """Struct field lines as gofmt lays them out: the names and types of consecutive fields in columns (a
    comment line ends a run)."""
    out, run = [], []

    def flush():
        if run:
            names = max(len(row[0]) for row in run)
            types = max(len(row[1]) for row in run)
            out.extend(f"\t{row[0].ljust(names)} {row[1].ljust(types)} {row[2]}" for row in run)
            run.clear()

    for row in rows:
        if isinstance(row, str):
            flush()
            out.append(row)
        else:
            run.append(row)
    flush()
    return out
