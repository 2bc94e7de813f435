"""Strict scenario files: the rules that could never fire, found before a file is activated.

The JSON Schema (scenarios.FILE_SCHEMA) checks shapes; this module checks what a schema cannot:
an operation, token, path or service that the document and the fixtures do not have, and
conditions that contradict each other. `problems(rule, spec, known)` yields
(location inside the rule, problem, fatal): a fatal one refuses the file with its line, the
others are warnings (a service glob that matches no service of the fixtures: one created
later may still match it). `known` is `vocabulary(fixtures)`; without it, tokens and
services are not checked. A rule's `phase` limits what it may match and do: before authentication there
is no token and no body yet; after the handler, a deployment it would start has been started.
"""

import difflib
import fnmatch
from datetime import UTC, datetime

from mockserver.core.clock import EARLIEST, LAST_START
from mockserver.core.kinds import SERVICE_KINDS
from mockserver.document.validation import UUID
from mockserver.world.findings import NEAR
from mockserver.world.phases import phase_of

SAMPLE_ID = "00000000-0000-4000-8000-000000000000"
GLOB_CHARS = set("*?[")
# keys of which at most one may be given, where they sit in a rule, and why
EXCLUSIVE = [
    (("match",), ("nth", "every", "first"), "count conditions contradict each other; give one of them"),
    (("window",), ("start", "after"), "a window opens at `start` or `after` seconds, not both"),
    (("effect",), ("truncate", "reset", "dribble", "drop"), "a reply can be cut, reset, dribbled or dropped, "
                                                           "only one of them"),
    (("effect",), ("drop", "malformed_body"), "a dropped connection has no body to malform"),
    (("effect", "deployment"), ("reads", "reads_per_step"), "give the status read the action ends on, or the "
                                                             "reads per step, not both"),
    (("effect", "deployment"), ("fail_at", "stall"), "a deployment either fails at a step or stalls in one"),
    (("effect", "deployment"), ("state", "stall"), "a stalled deployment never reaches a failure state"),
    (("effect", "dribble"), ("chunks", "chunk_bytes"), "give the number of chunks or their size, not both"),
    (("effect",), ("body", "patch"), "a reply is given whole (body) or as a patch of the handler's, not both"),
    (("effect",), ("drop", "body"), "a dropped connection sends no body"),
    (("effect",), ("drop", "patch"), "a dropped connection sends no body"),
    (("effect",), ("malformed_body", "body"), "a malformed body replaces the body: give one of them"),
    (("effect",), ("malformed_body", "patch"), "a malformed body replaces the body: give one of them"),
]
# what a match condition must be for this module to judge it (the schema names one of another type)
SHAPES: dict[str, type] = {"operation": str, "path": str, "token": str, "service": dict}
# phase -> (where in the rule, what may not be there, why)
PHASE_LIMITS = {
    "before_auth": [
        (("match", "token"), "a before_auth rule is tried before authentication: no token is known yet (match "
                             "the Authorization header with `headers`, or use phase after_validation)"),
        (("match", "body"), "a before_auth rule is tried before the body is read (use phase after_validation)"),
        (("effect", "exhaust_rate_limit"), "a before_auth rule is tried before the token is known: there is no "
                                           "rate limit to exhaust yet (use phase after_validation)")],
    "after_handler": [
        (("effect", "deployment"), "an after_handler rule acts once the handler has run: the deployment it "
                                   "started cannot be changed any more (use phase after_validation)")],
}


def vocabulary(fixtures):
    """What the fixtures name: token names and values, and services and clusters as (kind, name, id)."""
    tokens: set[str] = set()
    for token in fixtures.get("tokens", []):
        tokens.update(str(token[key]) for key in ("name", "value") if token.get(key))
    services = []
    for org in fixtures.get("organizations", []):
        services += [("CLUSTER", c.get("name"), c.get("id")) for c in org.get("clusters", [])]
        for project in org.get("projects", []):
            for env in project.get("environments", []):
                for kind in SERVICE_KINDS:
                    services += [(kind.type, s.get("name"), s.get("id")) for s in env.get(kind.plural, [])]
    return {"tokens": tokens, "services": services}


def service_matches(wanted, target):
    """A `match.service` selector ({name, id: globs, kind}) against (kind, name, id), or None."""
    if target is None:
        return False
    kind, name, ident = target
    return (wanted.get("kind", kind) == kind and fnmatch.fnmatchcase(name or "", wanted.get("name", "*"))
            and fnmatch.fnmatchcase(ident or "", wanted.get("id", "*")))


def moment(value):
    """Unix seconds of a window's start: Unix seconds, or ISO 8601 (UTC when it names no zone), within
    1970-01-01 .. 9999-01-01 like any start of a clock (ValueError otherwise)."""
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        seconds = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    if not EARLIEST <= seconds <= LAST_START:
        raise ValueError("outside 1970-01-01 .. 9999-01-01 (UTC)")
    return seconds


def problems(rule, spec, known):
    """(where, problem, fatal) for everything in a rule that keeps it from ever firing."""
    yield from _contradictions(rule)
    match: dict = {key: value for key, value in _part(rule, "match").items()
                   if isinstance(value, SHAPES.get(key, object))}
    if "operation" in match and match["operation"] not in spec.operations:
        yield ("match", "operation"), f"unknown operation {match['operation']!r}" \
                                      f"{_meant(match['operation'], spec.operations)}", True
    if "path" in match and not _routes(spec, match["path"]):
        near = spec.closest_paths(match["path"].replace("*", "x"))
        hint = f" (did you mean {' or '.join(near)}?)" if near else ""
        yield ("match", "path"), f"{match['path']!r} matches no documented route{hint}", True
    if known is not None and "token" in match and match["token"] not in known["tokens"]:
        names = ", ".join(sorted(t for t in known["tokens"] if not t.startswith("mock-")))
        yield ("match", "token"), f"no token of the fixtures is named or valued {match['token']!r}" \
                                  f"{_meant(match['token'], known['tokens'])} (tokens: {names})", True
    if "service" in match:
        yield from _service_problems(match["service"], known)
    window = _part(rule, "window")
    for where, value in ((("window", "start"), window.get("start")), (("until",), rule.get("until"))):
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            continue                            # none, or of a type the schema names
        try:
            moment(value)
        except ValueError:
            yield where, f"{value!r} is not an ISO 8601 time or Unix seconds within 1970-01-01 .. 9999-01-01 (UTC)", \
                True
    for where, why in PHASE_LIMITS.get(phase_of(rule), ()):
        if _part(rule, where[0]).get(where[1]) not in (None, False):
            yield where, why, True


def _part(rule, key):
    """A mapping of the rule (match, window, effect), or {} when it has none or one of another type."""
    part = rule.get(key)
    return part if isinstance(part, dict) else {}


def _meant(word, choices):
    """' (did you mean X?)' with the nearest of `choices`, or ''."""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=NEAR) if isinstance(word, str) else []
    return f" (did you mean {near[0]!r}?)" if near else ""


def _contradictions(rule):
    for where, keys, why in EXCLUSIVE:
        part = rule
        for key in where:
            part = part.get(key) if isinstance(part, dict) else None
        given = [key for key in keys if isinstance(part, dict) and part.get(key) not in (None, False)]
        if len(given) > 1:
            yield (*where, given[1]), f"{' and '.join(given)} together: {why}", True


def _routes(spec, path):
    """Operations whose template is `path` or whose paths the glob `path` matches."""
    return [op for op in spec.operations.values()
            if op.template == path or fnmatch.fnmatchcase(_sample(op.template), path)
            or fnmatch.fnmatchcase(op.template, path)]


def _sample(template):
    return "/".join(SAMPLE_ID if part.startswith("{") else part for part in template.split("/"))


def _service_problems(wanted, known):
    ident = wanted.get("id")
    if ident is not None and not GLOB_CHARS & set(ident) and not UUID.match(ident):
        yield ("match", "service", "id"), f"{ident!r} is not a uuid (nor a glob): no service can have it", True
        return
    if known is None:
        return
    if not any(service_matches(wanted, target) for target in known["services"]):
        yield ("match", "service"), f"no service of the fixtures matches {wanted}; the rule fires only for one " \
                                    "created later", False
