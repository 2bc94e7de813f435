"""What a call's token, headers and body must hold to match: one reading for scenario rules (`match:`) and
journal filters (`token`, `headers`, `body` of GET /_mock/calls and verify).

- headers: `{name: glob}`, names in any case, values fnmatch globs (`application/json*`); a header the call did
  not send matches no glob, `*` included.
- body: `{path: value}`, a path dotted through objects and lists (`settings.replicas`, `ports.0.port`); an object
  as the value matches partially (the call's object may have more fields; its keys may be dotted too); any
  other value must be equal (`2` is not `"2"`).
"""

import fnmatch

MISSING = object()


def dig(body, dotted):
    """The value at a dotted path of a JSON body, or MISSING."""
    value = body
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def body_matches(body, wanted):
    """Whether a body holds every field of `wanted` (see the module)."""
    for dotted, value in wanted.items():
        found = dig(body, dotted)
        if isinstance(value, dict):
            if not isinstance(found, dict) or not body_matches(found, value):
                return False
        elif found is MISSING or found != value or isinstance(found, bool) != isinstance(value, bool):
            return False                       # True == 1 in Python; not in JSON
    return True


def headers_match(headers, wanted):
    """Whether the headers (a dict of lower-case names) hold every `{name: glob}` of `wanted`."""
    for name, glob in wanted.items():
        value = headers.get(name.lower())
        if value is None or not fnmatch.fnmatchcase(value, glob):
            return False
    return True
