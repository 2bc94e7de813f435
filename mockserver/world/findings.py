"""The problems of a scenario document, each where it is (line and column) and with what was probably meant.

`Locator(node)` knows where each part of a composed YAML tree starts: a mapping's key (where an unknown
key is reported) and every value. `schema_problems(errors)` turns the JSON Schema's errors into located
problems a person can act on: a misspelled key is reported at that key as unknown, with the key it is
probably meant to be ("did you mean 'effect'?"), and not as the required key missing from the rule
around it; a value outside a list of choices gets the nearest choice.
"""

import difflib
from typing import NamedTuple

import yaml

NOWHERE = (None, None)
NEAR = 0.75                                     # how alike (difflib's ratio) a word and what it may mean must be


class Found(NamedTuple):
    """One problem: 1-based line and column (None when the document has no place for it), its text."""
    line: int | None
    column: int | None
    text: str


class Locator:
    """Where each path of a document starts: `keys[path]`, the key that names it in its mapping;
    `values[path]`, the value itself."""

    def __init__(self, node):
        self.keys: dict[tuple, tuple[int, int]] = {}
        self.values: dict[tuple, tuple[int, int]] = {}
        if node is not None:
            self._walk(node, ())

    def _walk(self, node, path):
        self.values[path] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                self.keys[path + (key.value,)] = _mark(key)
                self._walk(value, path + (key.value,))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._walk(item, path + (index,))

    def at(self, path, key=True) -> tuple[int | None, int | None]:
        """(line, column) of a path: its key when `key` and it has one, else its value; a path the document
        does not have is placed at its nearest part that it has."""
        path = tuple(path)
        while path:
            if key and path in self.keys:
                return self.keys[path]
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), NOWHERE)

    def found(self, path, text, key=True):
        line, column = self.at(path, key)
        return Found(line, column, text)


def _mark(node):
    return node.start_mark.line + 1, node.start_mark.column + 1


def near(word, choices):
    """The choice nearest to `word` (by spelling, or the same but for case), or None when none is near."""
    if not isinstance(word, str):
        return None
    names = [str(choice) for choice in choices]
    same = [name for name in names if name.lower() == word.lower()]
    found = same or difflib.get_close_matches(word, names, n=1, cutoff=NEAR)
    return found[0] if found else None


def nearest(word, choices):
    """' (did you mean X?)' with the choice nearest to `word`, or '' when none is near."""
    name = near(word, choices)
    return f" (did you mean {name!r}?)" if name is not None else ""


def dotted(path):
    return ".".join(map(str, path)) or "document"


def schema_problems(errors, locator):
    """Located problems of the JSON Schema's errors (jsonschema ValidationErrors of one document)."""
    errors = list(errors)
    meant: dict[tuple, set[str]] = {}          # an object's path -> the keys its unknown keys are near
    out = []
    for error in errors:
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = list(error.schema.get("properties", {}))
            path = tuple(error.absolute_path)
            for key in error.instance:
                if key in known:
                    continue
                meant.setdefault(path, set()).add(near(key, known))
                text = f"{dotted(path + (key,))}: unknown key {key!r}{nearest(key, known) or _choices(known)}"
                out.append(locator.found(path + (key,), text))
    for error in errors:
        if error.validator != "additionalProperties":
            out += _problem(error, locator, meant)
    return list(dict.fromkeys(out))            # `required` names every missing key in each of its errors


def _problem(error, locator, meant):
    path = tuple(error.absolute_path)
    if error.validator == "required":
        missing = [name for name in error.validator_value
                   if isinstance(error.instance, dict) and name not in error.instance]
        return [locator.found(path, f"{dotted(path)}: {name!r} is a required property", key=False)
                for name in missing if name not in meant.get(path, ())]
    if error.validator == "enum" and "propertyNames" in error.relative_schema_path:
        key = error.instance                   # a key of the mapping that is not one of the names it may have
        hint = nearest(key, error.validator_value) or _choices(error.validator_value)
        return [locator.found(path + (key,), f"{dotted(path + (key,))}: unknown key {key!r}{hint}")]
    if error.validator == "enum":
        choices = error.validator_value
        return [locator.found(path, f"{dotted(path)}: {error.instance!r} is not one of "
                                    f"{', '.join(map(str, choices))}{nearest(error.instance, choices)}", key=False)]
    return [locator.found(path, f"{dotted(path)}: {error.message}", key=False)]


def _choices(names):
    return f" (expected one of {', '.join(map(str, names))})" if names else ""
