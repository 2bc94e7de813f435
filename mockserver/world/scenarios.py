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
The first active rule that matches a call fires. A file is checked whole before it is
activated; a broken one is refused with its file, line and problem and never half-loads. A document
is bounded (core/yamlbound.py): 1 MiB, 64 levels deep, expanding to at most 1 MiB of values and keys
and 100,000 nodes added by aliases; and since replies echo it as JSON, it must be JSON (string keys,
no bytes, integers of 64 bits) of at most ECHO_BYTES.
"""

import asyncio
import fnmatch
import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import yaml

from mockserver.core import yamlbound
from mockserver.core.clock import iso
from mockserver.core.errors import StartupError
from mockserver.core.kinds import SERVICE_TYPES
from mockserver.edge.faults import FAULTS
from mockserver.world import strictness
from mockserver.world.lifecycle import ERROR_STATES, PLANS
from mockserver.world.strictness import moment, service_matches

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
                    "status": {"type": "integer", "minimum": 400, "maximum": 599},
                    "message": {"type": "string"},
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
    def __init__(self, source, line, problem):
        super().__init__(f"{source}:{line}: {problem}" if line else f"{source}: {problem}")
        self.source, self.line, self.problem = source, line, problem

    def lines(self):
        return [f"scenario: {self}"]


class Fired:
    __slots__ = ("name", "effects")

    def __init__(self, name, effects):
        self.name = name
        self.effects = effects


class Rule:
    def __init__(self, scenario, index, raw, seed):
        self.name = f"{scenario}/{raw.get('name', f'rule-{index + 1}')}"
        self.match = raw.get("match", {})
        self.effect = raw["effect"]
        self.window = raw.get("window")
        self.count = 0
        self.fired = 0
        self.opened = None                     # when the window opens (clock seconds), once known
        self.window_calls = 0                  # matching calls seen inside the window
        self._random = random.Random(f"{seed}:{self.name}")

    def matches(self, operation, method, path, token, headers, body, now=0.0, target=None):
        m = self.match
        if "operation" in m and m["operation"] != operation.operation_id:
            return False
        if "method" in m and m["method"] != method:
            return False
        if "path" in m and not (m["path"] == operation.template or fnmatch.fnmatchcase(path, m["path"])):
            return False
        if "token" in m and m["token"] not in (token.name, token.value):
            return False
        for name, wanted in m.get("headers", {}).items():
            if not fnmatch.fnmatchcase(headers.get(name.lower(), ""), wanted):
                return False
        for dotted, wanted in m.get("body", {}).items():
            if _dig(body, dotted) != wanted:
                return False
        if "service" in m and not service_matches(m["service"], target() if target else None):
            return False
        self.count += 1
        if self.window is not None and not self._in_window(now):
            return False
        n = self.count
        if "nth" in m and n != m["nth"]:
            return False
        if "every" in m and n % m["every"]:
            return False
        if "first" in m and n > m["first"]:
            return False
        if "probability" in m and self._random.random() >= m["probability"]:
            return False
        self.fired += 1
        return True

    def _in_window(self, now):
        """Whether a matching call at `now` falls in the rule's window (and counts as one of its calls)."""
        w = self.window
        if self.opened is None:                # from its start, or `after` seconds past the first matching call
            self.opened = moment(w["start"]) if "start" in w else now + w.get("after", 0)
        if now < self.opened or ("seconds" in w and now >= self.opened + w["seconds"]):
            return False
        if "calls" in w and self.window_calls >= w["calls"]:
            return False
        self.window_calls += 1
        return True

    def rewind(self, seed):
        self.count = self.fired = self.window_calls = 0
        self.opened = None
        self._random = random.Random(f"{seed}:{self.name}")

    def effects(self):
        e = self.effect
        out: dict[str, object] = {"rule": self.name}
        for fault in FAULTS:
            if e.get(fault) not in (None, False):
                out[fault] = e[fault]
        if "status" in e:
            message = e.get("message", f"injected by scenario rule {self.name}")
            out["reply"] = {"status": e["status"], "message": message}
        if e.get("latency_ms"):
            out["latency"] = e["latency_ms"] / 1000
        for flag in ("drop", "exhaust_rate_limit", "webhook_failures"):
            if e.get(flag):
                out[flag] = e[flag]
        if "deployment" in e:
            d = e["deployment"]
            out["deployment"] = {"fail_at": d.get("fail_at"), "fail_state": d.get("state"),
                                 "stall_at": d.get("stall"), "durations": d.get("durations"),
                                 "reads": d.get("reads"), "reads_per_step": d.get("reads_per_step")}
        return out

    def describe(self):
        out = {"name": self.name, "match": self.match, "effect": self.effect, "matched": self.count,
               "fired": self.fired}
        if self.window is not None:
            out["window"] = {**self.window, "opened_at": iso(self.opened) if self.opened is not None else None,
                             "calls_in_window": self.window_calls}
        return out


class Scenarios:
    def __init__(self, spec, seed=1, known=None):
        self.spec = spec
        self.seed = seed
        self.known = known                     # what the fixtures name (vocabulary()); None: not checked
        self.warnings = []                     # of the document parsed last: rules that may never fire
        self.active = {}                       # name -> {"source", "description", "rules", "raw"}

    def parse(self, text, source):
        """Check a scenario document whole; returns (name, raw) or raises ScenarioError."""
        try:
            node, raw = yamlbound.compose(text, max_bytes=yamlbound.SCENARIO_BYTES)
        except yamlbound.BoundError as error:
            raise ScenarioError(source, error.line, error.problem) from None
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            raise ScenarioError(source, mark.line + 1 if mark else None,
                                f"not valid YAML: {getattr(error, 'problem', error)}") from None
        lines = _lines(node)
        unfit = _echo_problem(raw)              # before the schema, whose messages would print such values
        if unfit is not None:
            raise ScenarioError(source, _line_of(lines, unfit[0]), unfit[1])
        if isinstance(raw, dict) and isinstance(raw.get("rules"), list) and len(raw["rules"]) > MAX_RULES:
            raise ScenarioError(source, _line_of(lines, ("rules",)), f"rules: {len(raw['rules'])} rules, more than "
                                f"{MAX_RULES} (the bound of one scenario): split it into several scenarios")
        for invalid in sorted(_CHECKER.iter_errors(raw), key=lambda e: list(map(str, e.absolute_path))):
            path = tuple(invalid.absolute_path)
            where = ".".join(map(str, path)) or "document"
            raise ScenarioError(source, _line_of(lines, path), f"{where}: {invalid.message}")
        self.warnings = []
        named: dict[str, int] = {}             # a rule's name -> its index: replies and the journal name rules
        for index, rule in enumerate(raw["rules"]):
            name = rule.get("name", f"rule-{index + 1}")
            if name in named:
                raise ScenarioError(source, _line_of(lines, ("rules", index, "name")),
                                    f"rules.{index}.name: {name!r} also names rule {named[name]} "
                                    f"(rules.{named[name]}): X-Mock-Rule and the journal's scenario filter could "
                                    "not tell them apart")
            named[name] = index
            for where, problem, fatal in strictness.problems(rule, self.spec, self.known):
                path = ("rules", index, *where)
                located = f"rules.{index}.{'.'.join(where)}: {problem}"
                if fatal:
                    raise ScenarioError(source, _line_of(lines, path), located)
                line = _line_of(lines, path)
                self.warnings.append(f"{source}:{line}: warning: {located}" if line else
                                     f"{source}: warning: {located}")
        return raw["name"], raw

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

    def evaluate(self, operation, method, path, token, headers, body, now=0.0, target=None):
        """The first rule that fires for a call (`target()`: the service or cluster its path names)."""
        if not self.active:
            return None
        for scenario in self.active.values():
            for rule in scenario["rules"]:
                if rule.matches(operation, method, path, token, headers, body, now, target):
                    return Fired(rule.name, rule.effects())
        return None

    def describe(self, name):
        scenario = self.active[name]
        return {"name": name, "source": scenario["source"], "description": scenario["description"],
                "rules": [rule.describe() for rule in scenario["rules"]]}


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


def _dig(body, dotted):
    value = body
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _lines(node, path=(), out=None):
    """Map each path in a composed YAML tree to its 1-based line."""
    out = {} if out is None else out
    if node is None:
        return out
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = path + (key.value,)
            _lines(value, child, out)
            out[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines(item, path + (index,), out)
    return out


def _line_of(lines, path):
    path = tuple(path)
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(schema_document(), indent=2) + "\n")
