"""The options a sandbox may be created with, and the world each choice starts from.

    PUT /_mock/sandboxes/{name}
    {"clock": "manual", "start": "2026-01-01T00:00:00Z", "seed": 7, "rate_limit": "5/10s",
     "scenarios": ["flaky-status", {name: ..., rules: [...]}], "fixtures": "/srv/other-fixtures",
     "snapshot": "three-envs", "journal_body_limit": 1048576, "expires": {"seconds": 600, "calls": 50},
     "poll_progress": {"reads": 3, "services": {"kind": "APPLICATION"}, "actions": ["DEPLOY"]}}

No option: a copy of the server's start world (a spare one copied ahead of time, when there is one:
worlds.py). `snapshot`: a copy of that snapshot. `fixtures`, `seed` or `start`: a world built for them through
the handlers (slower than a copy), since ids, generated values and record times depend on them. `clock`,
`rate_limit`, `scenarios`, `poll_progress` (a scenario named poll-progress: actions that move by status reads,
progress_scenario) and `journal_body_limit` (bytes of a body the journal keeps whole) are then applied to the copy
(`patch`). `expires` is the sandbox's, not its world's (sandbox.py): it ends after `seconds` on its own clock or
after `calls` API calls. A world built or copied from a snapshot is frozen again as the world a reset goes back
to; a copy of the start world goes back to the start world with its patch applied again.
"""

import difflib
from dataclasses import replace
from datetime import UTC, datetime

import jsonschema
import orjson

from mockserver.core.clock import EARLIEST, LAST_START, Clock
from mockserver.core.errors import ApiError, reason
from mockserver.core.settings import parse_rate
from mockserver.world.fixtures import FixtureError, read_fixtures
from mockserver.world.frozen import freeze, thaw
from mockserver.world.scenarios import KINDS, ScenarioError

# the calls that start each action, as path globs (a cluster's upgrade is its only action)
ACTION_PATHS = {"DEPLOY": "/*/deploy", "REDEPLOY": "/*/redeploy", "STOP": "/*/stop", "RESTART": "/*/restart",
                "UNINSTALL": "/*/uninstall", "UPGRADE": "/cluster/*/upgrade"}
MAX_JOURNAL_BODY = 16 * 1024 * 1024             # the largest body the mock accepts by default (--max-body)
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "clock": {"enum": ["real", "manual"]},
        "start": {"type": ["string", "number"]},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "rate_limit": {"type": "string", "maxLength": 40},
        "scenarios": {"type": "array", "maxItems": 100, "items": {"type": ["string", "object"]}},
        "fixtures": {"type": "string", "minLength": 1, "maxLength": 4096},
        "snapshot": {"type": "string", "minLength": 1, "maxLength": 64},
        "journal_body_limit": {"type": "integer", "minimum": 1024, "maximum": MAX_JOURNAL_BODY},
        "expires": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
            "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 10 ** 9},
            "calls": {"type": "integer", "minimum": 1, "maximum": 10 ** 12}}},
        "poll_progress": {"type": "object", "additionalProperties": False, "properties": {
            "reads": {"type": "integer", "minimum": 1, "maximum": 10000},
            "reads_per_step": {"type": "integer", "minimum": 1, "maximum": 10000},
            "services": {"type": "object", "additionalProperties": False, "minProperties": 1,
                         "properties": {"name": {"type": "string", "minLength": 1},
                                        "id": {"type": "string", "minLength": 1},
                                        "kind": {"enum": KINDS}}},
            "actions": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": list(ACTION_PATHS)}},
            "fail_at": {"type": "string"}, "state": {"type": "string"}}},
    },
}
_CHECK = jsonschema.Draft7Validator(SCHEMA)


def check(options):
    if not isinstance(options, dict):
        raise ApiError(400, "body: sandbox options must be a JSON object")
    problems = [f"body{''.join(f'.{p}' for p in e.absolute_path)}: {_short(e.message)}"
                for e in _CHECK.iter_errors(options) if not (e.validator == "additionalProperties" and not e.path)]
    known = list(SCHEMA["properties"])
    for name in sorted(set(options) - set(known)):
        near = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
        problems.append(f"body.{name[:60]}: not a sandbox option" + (f" (did you mean {' or '.join(near)}?)"
                                                                     if near else "")
                        + f"; the options are {', '.join(known)}")
    if "snapshot" in options and ({"fixtures", "seed", "start"} & set(options)):
        problems.append("body.snapshot: a snapshot already holds its fixtures, seed and time; "
                        "do not combine it with fixtures, seed or start")
    if problems:
        raise ApiError(400, "; ".join(problems))
    return options


def _short(message, limit=200):
    """A schema message, which may quote a whole long value, cut to a readable length."""
    return message if len(message) <= limit else f"{message[:limit - 60]} ... {message[-50:]}"


def read_folder(folder, spec):
    """The fixtures of the `fixtures` option, or a 400 that names files and kinds of problem only: the
    folder is the caller's choice, and its files need not be fixtures (nor the caller's to read)."""
    try:
        return read_fixtures(folder, spec)
    except FixtureError as error:
        shown = "; ".join(error.quiet[:5]) + ("; ..." if len(error.quiet) > 5 else "")
        raise ApiError(400, f"body.fixtures: {shown} (mockserver check --fixtures {folder} on the server's "
                            "machine shows every problem)") from None


def world_for(server, options, fixtures=None):
    """(runtime, frozen origin, source description, patch) of a new sandbox: `patch` is the options a reset applies
    again to `origin` (None when `origin` holds them already); `fixtures`: the `fixtures` option's folder already
    read (the control API reads it off the event loop)."""
    check(options)
    if not options or set(options) <= PATCHES or options.get("snapshot") == "fixtures" and set(options) - {
            "snapshot"} <= PATCHES:
        rt = server.spare()
        try:
            patch(server, rt, options)
        except ApiError:
            rt.close()
            raise
        return rt, server.origin, "fixtures", {key: value for key, value in options.items() if key in PATCHES}
    if "snapshot" in options:
        snapshot = server.snapshots.get(options["snapshot"])
        if snapshot is None:
            raise ApiError(404, f"snapshot {options['snapshot']} not found")
        rt, source = thaw(snapshot.data, server.shared), f"snapshot {options['snapshot']}"
        rt.clock.resume_at(snapshot.clock_at)     # it goes on from the moment it was saved, as a restore does
    else:
        rt, source = _built(server, options, fixtures), "options"
    patch(server, rt, options)
    rt.source = source
    return rt, freeze(rt, server.shared), source, None


PATCHES = frozenset({"clock", "rate_limit", "scenarios", "poll_progress", "journal_body_limit", "expires"})


def patch(server, rt, options, again=False):
    """The options that change a copy of a world (see the module); `again`: a reset's, which keeps the world's
    clock and scenarios as they are (worlds.py)."""
    mode = options.get("clock")
    if mode and not again and mode != rt.clock.mode:
        rt.clock = Clock(mode, start=rt.clock.now())
    if "rate_limit" in options:
        try:
            rt.limiter.limit, rt.limiter.window = parse_rate(options["rate_limit"])
        except ValueError as error:
            raise ApiError(400, f"body.rate_limit: {error}") from None
    if "scenarios" in options and not again:   # exactly these (without the option: every file loaded at start)
        rt.scenarios.clear()
        for index, item in enumerate(options["scenarios"]):
            _activate(server, rt, item, index)
    if "poll_progress" in options and not again:
        try:
            text = orjson.dumps(progress_scenario(options["poll_progress"])).decode()
            rt.scenarios.activate(rt.scenarios.parse(text, "body.poll_progress")[1], "body.poll_progress")
        except ScenarioError as error:
            raise ApiError(400, str(error)) from None
    if "journal_body_limit" in options:         # a test's calls kept whole up to this size (exports need them)
        rt.journal.body_limit = options["journal_body_limit"]


def progress_scenario(option):
    """The scenario the `poll_progress` option stands for: the actions it names (all by default) of the
    services it selects (all by default) progress by status reads (`reads`, or `reads_per_step`: 1)."""
    deployment = {key: option[key] for key in ("reads", "reads_per_step", "fail_at", "state") if key in option}
    if "reads" not in deployment and "reads_per_step" not in deployment:
        deployment["reads_per_step"] = 1
    rules = []
    for action in option.get("actions", list(ACTION_PATHS)):
        match = {"method": "POST", "path": ACTION_PATHS[action]}
        if option.get("services"):
            match["service"] = option["services"]
        rules.append({"name": action.lower(), "match": match, "effect": {"deployment": deployment}})
    return {"name": "poll-progress", "description": "sandbox option poll_progress", "rules": rules}


def _built(server, options, fixtures=None):
    settings = server.settings
    if "seed" in options:
        settings = replace(settings, seed=options["seed"])
    if "fixtures" in options:
        settings = replace(settings, fixtures=options["fixtures"])
        fixtures = fixtures or read_folder(options["fixtures"], server.spec)
    start = _start(options["start"]) if "start" in options else None
    clock = Clock(options.get("clock", settings.clock), start=start)
    try:
        return server.build(settings, clock, fixtures or server.fixtures)
    except ApiError as error:                  # its message may quote the files: only its kind is told
        raise ApiError(400, f"body.fixtures: the records could not be created ({error.status} "
                            f"{reason(error.status)}; mockserver check --fixtures {options.get('fixtures')} on "
                            "the server's machine tells why)") from None


def _start(value):
    """Unix seconds of a start time: Unix seconds, or ISO 8601 (UTC when it names no zone)."""
    if isinstance(value, (int, float)):
        moment = float(value)
    else:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ApiError(400, f"body.start: {value[:60]!r} is neither an ISO 8601 time nor Unix seconds") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        moment = parsed.timestamp()
    if not EARLIEST <= moment <= LAST_START:
        raise ApiError(400, f"body.start: {value!r} is outside 1970-01-01 .. 9999-01-01 (UTC)")
    return moment


def _activate(server, rt, item, index):
    """A scenario by the name of a file the server loaded (--scenario), or a whole scenario document."""
    where = f"body.scenarios[{index}]"
    if isinstance(item, str):
        if item not in server.library:
            names = ", ".join(sorted(server.library)) or "none"
            raise ApiError(400, f"{where}: no scenario named {item!r} was loaded with --scenario (loaded: {names})")
        raw, source = server.library[item]
        rt.scenarios.activate(raw, source)
        return
    try:
        rt.scenarios.load_text(orjson.dumps(item).decode(), where)
    except ScenarioError as error:
        raise ApiError(400, str(error)) from None
