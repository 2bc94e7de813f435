"""The journal filters a control request gives (GET /_mock/calls, its export, verify), read and checked, and
where else matching calls went when a verify finds too few.

A JSON body gives `headers` and `body` as objects; a query string gives one parameter per field:
`headers[NAME]=GLOB`, `body[PATH]=VALUE` (VALUE read as JSON when it is JSON: `2`, `true`, `"2"`; else as text).
A `token` is a name or a value, and is kept as the name: a reply that echoes the filters never shows a value.
"""

import difflib
import re

import orjson

from mockserver.calls.journal import FILTERS, filter_problems
from mockserver.core.errors import ApiError, invalid

BRACKETED = re.compile(r"(headers|body)\[(.+)\]\Z")
ELSEWHERE = 5                   # other sandboxes a failed verify names at most


def from_query(params):
    """A query string's parameters with `headers[NAME]` and `body[PATH]` gathered into objects."""
    out: dict = {}
    for key, value in params.items():
        found = BRACKETED.match(key)
        if found is None:
            out[key] = value
            continue
        part, name = found.groups()
        if not isinstance(out.setdefault(part, {}), dict):       # `body=...` beside `body[...]`: the form is wrong
            raise ApiError(400, f"query.{part}: give {part}[NAME]=VALUE parameters, not {part}=...")
        out[part][name] = value if part == "headers" else _json_or_text(value)
    return out


def _json_or_text(text):
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def read(params, operations, rt, accepted=()):
    """The filters among `params` (a dict: a JSON body, or a query string through `from_query`), checked: a name
    that is neither a filter nor one of `accepted` (the route's other parameters), or a value no call could
    match, is a 400 that lists what is accepted, with the nearest names."""
    unknown = sorted(set(params) - set(FILTERS) - set(accepted))
    if unknown:
        known = [*FILTERS, *accepted]
        named = []
        for name in unknown:
            near = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
            named.append(f"{name[:60]}" + (f" (did you mean {' or '.join(near)}?)" if near else ""))
        raise ApiError(400, f"unknown filter(s) {', '.join(named)}; the filters are {', '.join(FILTERS)}"
                            + (f", and here also {', '.join(accepted)}" if accepted else ""))
    out = {name: params[name] for name in FILTERS if params.get(name) not in (None, "")}
    problems = filter_problems(out, operations)
    if problems:
        raise invalid(problems)
    if "token" in out:
        out["token"] = token_name(rt, out["token"])
    if "headers" in out:
        out["headers"] = {name.lower(): glob for name, glob in out["headers"].items()}
    return out


def token_name(rt, wanted):
    """The name of the token a filter names by name or value (a JWT's subject, once it called, by name only)."""
    token = rt.tokens.get(wanted)
    if token is not None:
        return token.name
    names = sorted({token.name for token in rt.tokens.values()})
    if wanted in names or any(call.token == wanted for call in rt.journal.entries):
        return wanted
    near = difflib.get_close_matches(wanted, names, n=2, cutoff=0.6)
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    raise invalid([("token", f"no token of this sandbox has that name or value ({hint}its tokens: "
                             f"{', '.join(names)})")])


def elsewhere(sandboxes, here, wanted, default):
    """The sandboxes a client's calls go to by mistake that got calls matching the filters: the default one (a
    client sent to the mock's root) and those an API call made (a misspelled sandbox name), awake ones (a sleeping
    one has had no call for a while); as [{sandbox, count, calls, made_by_call}], the most first: what a verify
    that found too few says. Sandboxes a harness made are not looked at: in a parallel suite, other tests make the
    same calls in theirs. `since` (a call id or a
    time of this sandbox's clock) means nothing in another sandbox and is left out there."""
    wanted = {name: value for name, value in wanted.items() if name != "since"}
    found = []
    for box in list(sandboxes):
        by_call = getattr(box, "made_by", "control") == "call"
        if box.name == here or box.asleep or not (box.name == default or by_call):
            continue
        matching = box.rt.journal.select(wanted)
        if matching:
            found.append({"sandbox": box.name, "count": len(matching),
                          "calls": [box.rt.journal.summary(call) for call in matching[-3:]],
                          "made_by_call": by_call})
    found.sort(key=lambda item: -item["count"])
    return found[:ELSEWHERE]


def said(found, default):
    """The lines a verify's message adds for calls that went elsewhere."""
    lines = []
    for item in found:
        where = item["sandbox"]
        if where == default:
            why = ("the mock's root, with no /sandbox/NAME in the URL and no X-Mock-Sandbox header: is the client's "
                   "base URL the sandbox's?")
        else:
            why = "a sandbox that first call made, since nobody had: a misspelled sandbox name?"
        lines.append(f"  elsewhere: {item['count']} matching call(s) went to sandbox {where} ({why})")
        lines += [f"    {summary}" for summary in item["calls"]]
    return lines
