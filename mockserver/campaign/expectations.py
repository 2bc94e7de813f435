"""The expectations file: what a team accepts of a campaign's outcomes, so that CI fails only on the unexpected.

    # campaign-expectations.yaml
    accept:
      - operation: createProject            # an operationId, or a glob (create*)
        fault: status 409                   # a fault name, or a glob (status 5*); default: any
        at: 1                               # the call it acts at; default: any
        outcome: failed                     # failed, misbehaved or any (default: failed)
        rule: duplicate                     # with misbehaved: which rule (retry-after, duplicate, own-409, storm)
        because: the test fails, as designed

Every outcome but `survived` is unexpected unless an entry accepts it. The file is checked like a scenario file:
every problem at once, each at its line, with "did you mean" for a misspelled key, outcome or rule, and an
operation the document does not have. An entry that accepted nothing is said in the report.
"""

import fnmatch
from dataclasses import dataclass

import jsonschema
import yaml

from mockserver.campaign.behaviour import SHORT
from mockserver.core import yamlbound
from mockserver.core.errors import StartupError
from mockserver.world.findings import Found, Locator, nearest, schema_problems

OUTCOMES = ("survived", "failed", "misbehaved", "not reached")
ACCEPTS = ("failed", "misbehaved", "any")
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Expectations of a fault campaign (mockserver campaign --expect FILE)",
    "type": "object", "additionalProperties": False, "required": ["accept"],
    "properties": {
        "accept": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["operation", "because"],
            "properties": {
                "operation": {"type": "string", "minLength": 1,
                              "description": "the operationId the fault was injected at, or a glob of them"},
                "fault": {"type": "string", "minLength": 1, "description": "a fault name (status 503, outage 503, "
                          "reset, cut body, malformed body, delay, deployment failed, deployment stalled), or a "
                          "glob of them; default: any"},
                "at": {"type": "integer", "minimum": 1, "description": "the call it acted at; default: any"},
                "outcome": {"enum": list(ACCEPTS), "description": "what is accepted: failed (the suite failed), "
                            "misbehaved (a rule of the client's behaviour broke), any; default: failed"},
                "rule": {"enum": sorted(SHORT.values()), "description": "with misbehaved: the rule accepted"},
                "because": {"type": "string", "minLength": 1, "description": "why it is accepted (shown in the "
                            "report)"}}}}},
}
_CHECK = jsonschema.Draft7Validator(SCHEMA)


class ExpectationsError(StartupError):
    """Every problem of an expectations file, one a line: `file:line:column: problem`."""

    def __init__(self, path, found):
        self.problems = [f"{path}:" + "".join(f"{part}:" for part in (item.line, item.column) if part) + f" {item.text}"
                         for item in found]
        super().__init__("\n".join(self.problems))

    def lines(self):
        return self.problems


@dataclass(frozen=True)
class Accept:
    operation: str
    because: str
    fault: str = "*"
    at: int | None = None
    outcome: str = "failed"
    rule: str | None = None
    line: int = 0

    def accepts(self, fault, outcome, rules):
        """Whether this entry accepts `outcome` (with the misbehaviour rules `rules`, short names) of `fault`."""
        if not fnmatch.fnmatchcase(fault.operation, self.operation) or not fnmatch.fnmatchcase(fault.name, self.fault):
            return False
        if self.at is not None and self.at != fault.at:
            return False
        if self.outcome == "any":
            return True
        if outcome != self.outcome:
            return False
        return self.rule is None or set(rules) <= {self.rule}


def load(path, operations):
    """The entries of the file at `path` (`operations`: the document's operationIds), or ExpectationsError with
    every problem, each at its line (the checks of scenario files: world/findings.py)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise ExpectationsError(path, [Found(None, None, f"cannot be read: {error.strerror or error}")]) from None
    try:
        node, data = yamlbound.compose(text, max_bytes=yamlbound.SCENARIO_BYTES)
    except yamlbound.BoundError as error:
        raise ExpectationsError(path, [Found(error.line, None, error.problem)]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise ExpectationsError(path, [Found(mark.line + 1 if mark else None, mark.column + 1 if mark else None,
                                             f"not valid YAML: {getattr(error, 'problem', error)}")]) from None
    where = Locator(node)
    problems = schema_problems(_CHECK.iter_errors(data), where)
    items = data.get("accept") if isinstance(data, dict) and isinstance(data.get("accept"), list) else []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name = item.get("operation")
        if isinstance(name, str) and not any(ch in name for ch in "*?[") and name not in operations:
            problems.append(where.found(("accept", index, "operation"), f"accept.{index}.operation: {name!r} is not "
                                        f"an operation of the API document{nearest(name, operations)}", key=False))
        if item.get("rule") and item.get("outcome", "failed") != "misbehaved":
            problems.append(where.found(("accept", index, "rule"), f"accept.{index}.rule: a rule goes with outcome: "
                                        "misbehaved"))
    if problems:
        raise ExpectationsError(path, sorted(set(problems), key=lambda f: (f.line or 0, f.column or 0)))
    return [Accept(line=where.at(("accept", index))[0] or 0, **item) for index, item in enumerate(items)]


def verdict(entries, fault, outcome, rules):
    """(expected, the entry that accepted it or None) of one run's outcome."""
    if outcome in ("survived", "not reached"):
        return True, None
    for entry in entries:
        if entry.accepts(fault, outcome, rules):
            return True, entry
    return False, None
