"""Scenario files: named lists of rules that script failures.

    name: flaky-status
    rules:
      - name: every-third-status-fails
        match: {operation: getApplicationStatus, every: 3}
        effect: {status: 500, message: status backend unavailable}

A rule matches on any of operation, method, path (template or glob), token (name or
value), headers, body values (dotted keys), and a count condition (nth, every, first)
or a seeded probability. Its effect is any of: reply with a status and the error body,
latency, drop the connection, make the deployment the call starts fail or stall or take
other step durations, exhaust the caller's rate limit, make webhook deliveries fail.
A rule is tried at one step of the request path, its `phase` (rules.py), and may expire (`times`,
`until`). At most one rule acts on a call: the first that fires, phase by phase, scenarios in the order
they were activated and rules in the order of their file. A file is checked whole before it is activated;
a broken one is refused with every problem, each at its file, line and column (findings.py), and never
half-loads; rules that can never act load with warnings (overlap.py). A document
is bounded (core/yamlbound.py): 1 MiB, 64 levels deep, expanding to at most 1 MiB of values and keys
and 100,000 nodes added by aliases; and since replies echo it as JSON, it must be JSON (string keys,
no bytes, integers of 64 bits) of at most ECHO_BYTES.
"""

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import yaml

from mockserver.core import yamlbound
from mockserver.core.errors import StartupError
from mockserver.core.kinds import SERVICE_TYPES
from mockserver.world import overlap, scripted, strictness
from mockserver.world.findings import Found, Locator, schema_problems
from mockserver.world.lifecycle import ERROR_STATES, PLANS
from mockserver.world.rules import AFTER_VALIDATION, PHASES, Fired, Rule

# Rule and Fired live in rules.py; named here too, so that worlds saved when they lived here read back
__all__ = ["KINDS", "Fired", "Rule", "ScenarioError", "Scenarios", "schema_document"]

STEP_NAMES = sorted({step[0] for steps in PLANS.values() for step in steps})
STATES = sorted({step[1] for steps in PLANS.values() for step in steps})
MAX_RULES = 1000                       # rules of one scenario: a document is checked whole while others wait
ECHO_BYTES = 4 * yamlbound.SCENARIO_BYTES      # a document as JSON: what the replies that show a scenario echo
STEP_OR_STATE = {"type": "string", "enum": STEP_NAMES + STATES}
KINDS = [*SERVICE_TYPES, "CLUSTER"]           # what a rule's `target.kind` may name
GLOB = {"type": "string", "minLength": 1}
CUT: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "minProperties": 1, "maxProperties": 1, "properties": {
        "fraction": {"type": "number", "minimum": 0, "maximum": 1, "description": "share of the body sent"},
        "bytes": {"type": "integer", "minimum": 0, "description": "bytes of the body sent"}}}
RESET = {**CUT, "properties": {**CUT["properties"], "after": {"enum": ["headers"],
                                                                "description": "reset right after the headers"}}}
FILE_SCHEMA = {
    "type": "object",
    "required": ["name", "rules"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
        "description": {"type": "string"},
        "rules": {"type": "array", "minItems": 1, "maxItems": MAX_RULES, "items": {
            "type": "object", "required": ["effect"], "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "match": {"type": "object", "additionalProperties": False, "properties": {
                    "operation": {"type": "string", "description": "an operationId of the API document"},
                    "method": {"type": "string", "enum": ["GET", "POST", "PUT", "DELETE", "PATCH"]},
                    "path": {"type": "string", "pattern": "^/",
                             "description": "a path template (/application/{app_id}/status) or a glob"},
                    "token": {"type": "string", "description": "a token of the fixtures, by name or value"},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    "body": {"type": "object"},
                    "nth": {"type": "integer", "minimum": 1, "description": "only the n-th matching call"},
                    "every": {"type": "integer", "minimum": 1, "description": "every n-th matching call"},
                    "first": {"type": "integer", "minimum": 1, "description": "the first n matching calls"},
                    "probability": {"type": "number", "minimum": 0, "maximum": 1,
                                    "description": "fire this often, drawn from the sandbox's seed"},
                    "service": {"type": "object", "additionalProperties": False, "minProperties": 1,
                                "description": "the service (or cluster) the call's path names",
                                "properties": {"name": GLOB, "id": GLOB, "kind": {"enum": KINDS}}},
                }},
                "phase": {"enum": list(PHASES), "description": "the step of the request path the rule is tried "
                          "at: before_auth (right after routing, whatever the token), after_validation (the "
                          "default), after_handler (the handler has run and changed the state; the effect then "
                          "replaces its reply)"},
                "times": {"type": "integer", "minimum": 1, "description": "the rule fires at most this often, "
                                                                            "then is spent"},
                "until": {"type": ["string", "number"], "description": "the rule no longer fires from this time "
                          "of the sandbox's clock (ISO 8601 or Unix seconds)"},
                "window": {"type": "object", "additionalProperties": False, "minProperties": 1,
                           "description": "when the rule is active: from `start` (or `after` seconds past the "
                                          "first matching call) for `seconds` of the sandbox's clock and/or "
                                          "`calls` matching calls",
                           "properties": {
                               "start": {"type": ["string", "number"]},
                               "after": {"type": "number", "minimum": 0},
                               "seconds": {"type": "number", "exclusiveMinimum": 0},
                               "calls": {"type": "integer", "minimum": 1}}},
                "effect": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
                    "status": {"type": "integer", "minimum": 200, "maximum": 599,
                               "description": "the reply's status: an error (400 to 599: the spec's error body, "
                                              "or `body`), or one under 400 the document lists for the operation "
                                              "(with `body`, or none where the document has none)"},
                    "message": {"type": "string"},
                    "body": {"description": "the reply's body instead of the handler's (nothing is changed): "
                                            "checked against the operation's response schema when the scenario "
                                            "loads; strings may hold {{path.NAME}}, {{query.NAME}}, "
                                            "{{body.PATH}}, {{request_id}}, {{now}}, {{uuid}}"},
                    "patch": {"type": "object",
                              "description": "a JSON merge patch of the handler's reply (the change is made; "
                                             "null removes a field): tried after the handler; checked against "
                                             "the response schema when the scenario loads"},
                    "retry_after": {"type": "integer", "minimum": 0, "maximum": 86400,
                                    "description": "seconds the reply's Retry-After asks the client to wait (a 429 "
                                                   "or 503 without it carries 1)"},
                    "latency_ms": {"type": "number", "minimum": 0, "maximum": 600000},
                    "drop": {"type": "boolean", "description": "close the connection without a reply"},
                    "deployment": {"type": "object", "additionalProperties": False, "minProperties": 1,
                                   "properties": {
                                       "fail_at": STEP_OR_STATE,
                                       "state": {"type": "string", "enum": sorted(set(ERROR_STATES.values()))},
                                       "stall": STEP_OR_STATE,
                                       "reads": {"type": "integer", "minimum": 1, "maximum": 10000,
                                                 "description": "the action ends on this status read"},
                                       "reads_per_step": {"type": "integer", "minimum": 1, "maximum": 10000,
                                                          "description": "status reads per step"},
                                       "durations": {"type": "object", "propertyNames": {"enum": STEP_NAMES},
                                                     "additionalProperties": {"type": "integer", "minimum": 0,
                                                                              "maximum": 86400}}}},
                    "exhaust_rate_limit": {"type": "boolean"},
                    "webhook_failures": {"type": "integer", "minimum": 1, "maximum": 100},
                    "truncate": {**CUT, "description": "the headers, then part of the body, then close"},
                    "malformed_body": {"type": ["boolean", "string"],
                                       "description": "a body that is not JSON (true, or the text to send)"},
                    "dribble": {"type": "object", "additionalProperties": False, "required": ["delay_ms"],
                                "description": "the body in pieces with delays of real time between them",
                                "properties": {"chunks": {"type": "integer", "minimum": 1, "maximum": 1000},
                                               "chunk_bytes": {"type": "integer", "minimum": 1},
                                               "delay_ms": {"type": "number", "minimum": 0, "maximum": 60000}}},
                    "reset": {**RESET, "description": "the headers (and part of the body), then a TCP reset"},
                }},
            },
        }},
    },
}
_CHECKER = jsonschema.Draft7Validator(FILE_SCHEMA)
SCHEMA_FILE = Path(__file__).with_name("scenario.schema.json")


def schema_document():
    """The scenario format as a JSON Schema document for editors (served at /_mock/schemas/scenario.json and
    shipped as scenario.schema.json beside it; `python -m mockserver.world.scenarios` writes that file anew)."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$id": "https://mockserver.local/scenario.json",
            "title": "Scenario file of the IDP mock server",
            "description": "A named list of rules; the first active rule that matches a call fires "
                           "(docs/guide/scenarios.md).", **FILE_SCHEMA}


class ScenarioError(StartupError, ValueError):
    """Every problem of a scenario document, each at its line and column: `found` (findings.Found, in the order
    of the document); `line` and `problem` are the first one's."""

    def __init__(self, source, line, problem, column=None, more=()):
        self.found = [Found(line, column, problem), *more]
        self.source, self.line, self.problem = source, line, problem
        super().__init__("\n".join(self.texts()))

    @classmethod
    def of(cls, source, found):
        found = sorted(found, key=_place)
        return cls(source, found[0].line, found[0].text, found[0].column, found[1:])

    def texts(self):
        """`file:line:column: problem`, one a problem."""
        return [_located(self.source, found) for found in self.found]

    def lines(self):
        return [f"scenario: {text}" for text in self.texts()]

    def details(self):
        """(location, problem) of each problem, as the control API's `details` show them."""
        return [(f"line {f.line}, column {f.column}" if f.column else f"line {f.line}" if f.line else "document",
                 f.text) for f in self.found]


class Scenarios:
    now = None                                 # the clock when a rule was last tried (what `expired` is told by)

    def __init__(self, spec, seed=1, known=None):
        self.spec = spec
        self.seed = seed
        self.known = known                     # what the fixtures name (vocabulary()); None: not checked
        self.warnings = []                     # of the document parsed last: rules that can never fire
        self.lines = []                        # of the document parsed last: the line each rule starts on
        self.active = {}                       # name -> {"source", "description", "rules", "raw"}

    def parse(self, text, source):
        """Check a scenario document whole; returns (name, raw) or raises ScenarioError naming every problem."""
        try:
            node, raw = yamlbound.compose(text, max_bytes=yamlbound.SCENARIO_BYTES)
        except yamlbound.BoundError as error:
            raise ScenarioError(source, error.line, error.problem) from None
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            raise ScenarioError(source, mark.line + 1 if mark else None,
                                f"not valid YAML: {getattr(error, 'problem', error)}",
                                mark.column + 1 if mark else None) from None
        where = Locator(node)
        unfit = _echo_problem(raw)              # before the schema, whose messages would print such values
        if unfit is not None:
            raise ScenarioError.of(source, [where.found(unfit[0], unfit[1])])
        if isinstance(raw, dict) and isinstance(raw.get("rules"), list) and len(raw["rules"]) > MAX_RULES:
            raise ScenarioError.of(source, [where.found(("rules",), f"rules: {len(raw['rules'])} rules, more than "
                                   f"{MAX_RULES} (the bound of one scenario): split it into several scenarios")])
        errors = schema_problems(_CHECKER.iter_errors(raw), where)
        warnings: list[Found] = []
        if isinstance(raw, dict) and isinstance(raw.get("rules"), list):
            self._rule_problems(raw["rules"], where, errors, warnings)
        if errors:
            raise ScenarioError.of(source, errors)
        self.warnings = [_located(source, found, "warning: ") for found in sorted(warnings, key=_place)]
        self.lines = [where.at(("rules", index))[0] for index in range(len(raw["rules"]))]
        return raw["name"], raw

    def _rule_problems(self, rules, where, errors, warnings):
        """What only the document and the fixtures know of each rule (strictness.py), the names the rules share,
        and the rules that can never act (overlap.py): into `errors` and `warnings`."""
        named: dict[str, int] = {}             # a rule's name -> its index: replies and the journal name rules
        for index, rule in enumerate(rules):
            if not isinstance(rule, dict):
                continue
            name = rule.get("name", f"rule-{index + 1}")
            if isinstance(name, str) and name in named:
                errors.append(where.found(("rules", index, "name"), f"rules.{index}.name: {name!r} also names rule "
                                          f"{named[name]} (rules.{named[name]}): X-Mock-Rule and the journal's "
                                          "scenario filter could not tell them apart"))
            elif isinstance(name, str):
                named[name] = index
            for path, problem, fatal in _strict(rule, self.spec, self.known, self._selects):
                found = where.found(("rules", index, *path), f"rules.{index}.{'.'.join(map(str, path))}: {problem}")
                (errors if fatal else warnings).append(found)
        if errors:
            return                              # a rule that does not load says nothing of the others' reach
        reach: dict = {}                       # what each operation, method and path selects, worked out once
        for index, rule in enumerate(rules):
            problem = overlap.impossible(rule, self.spec, reach)
            if problem is not None:
                warnings.append(where.found(("rules", index, "effect", "deployment"),
                                            f"rules.{index}: rule {_name(rule, index)!r} never acts: {problem}"))
        entries = [overlap.Entry(f"rules.{i}, line {where.at(('rules', i))[0]}", _name(rule, i), i, rule)
                   for i, rule in enumerate(rules)]
        for later, earlier in overlap.shadowed(entries, self.spec, reach):
            warnings.append(where.found(("rules", later.place), f"rules.{later.place}: {shadow_text(later, earlier)}"))

    @staticmethod
    def _selects(match, op):
        return overlap.selects(match, op, whole=False)

    def rules(self):
        """Every rule of the active scenarios, in the order they are tried within a phase (each has `name`,
        `phase`, `count` (matched) and `fired`)."""
        return [rule for scenario in self.active.values() for rule in scenario["rules"]]

    def activate(self, raw, source):
        name = raw["name"]
        rules = [Rule(name, i, rule, self.seed) for i, rule in enumerate(raw["rules"])]
        self.active[name] = {"source": source, "description": raw.get("description", ""), "rules": rules,
                             "raw": raw}
        return name

    def load_file(self, path):
        with open(path, "rb") as handle:
            data = handle.read(yamlbound.SCENARIO_BYTES + 1)      # one byte past the bound is enough to refuse
        _, raw = self.parse(data.decode("utf-8", errors="replace"), str(path))
        return self.activate(raw, str(path))

    def load_text(self, text, source, name=None):
        return self.activate(self.read_text(text, source, name), source)

    async def load_text_aside(self, text, source, name=None):
        """`load_text` with the document checked in a worker thread (a large scenario takes long to check: the
        event loop goes on answering other sandboxes meanwhile), then activated here."""
        return self.activate(await asyncio.to_thread(self.read_text, text, source, name), source)

    def read_text(self, text, source, name=None):
        """The checked document of a scenario (`name`: the name it must declare), or ScenarioError."""
        if text.lstrip().startswith("{"):
            try:
                orjson.loads(text)
            except orjson.JSONDecodeError as error:
                raise ScenarioError(source, None, f"not valid JSON: {error}") from None
        parsed_name, raw = self.parse(text, source)
        if name is not None and parsed_name != name:
            raise ScenarioError(source, None, f"scenario is named {parsed_name!r} but was sent to {name!r}")
        return raw

    def remove(self, name):
        return self.active.pop(name, None) is not None

    def clear(self):
        self.active.clear()

    def rewind(self):
        """Forget how often rules matched (after a reset of the state)."""
        for scenario in self.active.values():
            for rule in scenario["rules"]:
                rule.rewind(self.seed)

    def evaluate(self, operation, method, path, token, headers, body, now=0.0, target=None, phase=AFTER_VALIDATION):
        """The first rule of `phase` that fires for a call (`target()`: the service or cluster its path names)."""
        if not self.active:
            return None
        self.now = now
        for scenario in self.active.values():
            for rule in scenario["rules"]:
                if (rule.phase == phase and rule.matches(operation, method, path, token, headers, body, now, target)
                        and rule.fires(now)):
                    return Fired(rule.name, rule.effects())
        return None

    def describe(self, name):
        scenario = self.active[name]
        return {"name": name, "source": scenario["source"], "description": scenario["description"],
                "rules": [rule.describe(self.now) for rule in scenario["rules"]]}


def shadow_text(later, earlier):
    """The warning of a rule that a rule tried before it shadows, naming both (overlap.Entry each)."""
    return (f"rule {later.name!r} never fires: rule {earlier.name!r} ({earlier.label}) is tried before it and "
            "fires for every call it matches (an operation, method and path at least as broad, no other condition, "
            "and no count, window, times or until)")


def _strict(rule, spec, known, selects):
    """strictness.problems of a rule and those of a reply it scripts (scripted.py); a part of the wrong shape,
    which the schema has named, says no more."""
    found = itertools.chain(strictness.problems(rule, spec, known),
                            ((where, problem, True) for where, problem in scripted.problems(rule, spec, selects)))
    while True:
        try:
            yield next(found)
        except StopIteration:
            return
        except (TypeError, AttributeError, KeyError):
            return


def _place(found):
    return found.line or 0, found.column or 0


def _name(rule, index):
    return rule.get("name", f"rule-{index + 1}")


def _located(source, found, kind=""):
    place = ":".join(str(part) for part in (found.line, found.column) if part)
    return f"{source}:{place}: {kind}{found.text}" if place else f"{source}: {kind}{found.text}"


def _echo_problem(raw):
    """(path, problem) when the document cannot be echoed as JSON of at most ECHO_BYTES, else None."""
    try:
        size = len(orjson.dumps(raw))
    except TypeError:
        path, what = _unfit(raw) or ((), "a value JSON has no form for")
        where = ".".join(map(str, path)) or "document"
        return path, f"{where}: {what}: replies show a scenario as JSON, and a rule compares it with JSON bodies"
    if size > ECHO_BYTES:
        return (), (f"the document is {size} bytes as JSON, more than {yamlbound.size_text(ECHO_BYTES)} (the bound "
                    "of what the replies that show a scenario echo)")
    return None


def _unfit(value, path=()):
    """(path, what) of the first value JSON has no form for: a key that is not a string, bytes, an integer past
    64 bits, a set; None when there is none."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path, f"a key that is not a string ({type(key).__name__}: quote it)"
            found = _unfit(item, (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        return next((found for index, item in enumerate(value) if (found := _unfit(item, (*path, index)))), None)
    try:
        orjson.dumps(value)
    except TypeError:
        kind = "an integer past 64 bits" if isinstance(value, int) else f"a value of type {type(value).__name__}"
        return path, kind
    return None


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(schema_document(), indent=2) + "\n")
