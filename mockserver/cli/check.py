"""`mockserver check`: load the document, fixtures and scenarios, and report every problem."""

import sys

from mockserver.core.errors import ApiError, problems_of
from mockserver.world import overlap
from mockserver.world.fixtures import FixtureError, folder_problem
from mockserver.world.overlap import Entry
from mockserver.world.scenarios import ScenarioError, shadow_text


def token_problems(fixtures, folder):
    """Tokens of the fixtures whose organization no fixture file holds: every call with one would be a 404
    (GET /organization included), so they are problems like the others."""
    known = {org.get("id") for org in fixtures.get("organizations", ()) if isinstance(org, dict)}
    out = []
    for token in fixtures.get("tokens", ()):
        if not isinstance(token, dict) or not isinstance(token.get("organization"), str):
            continue                          # read_fixtures has named what is wrong with it
        if token["organization"] not in known:
            out.append(f"fixtures: {folder}: tokens[{token.get('name', '?')}] names organization "
                       f"{token['organization']!r}, which no fixture file holds (every call with this token would "
                       f"answer 404): give the id of an organization of the fixtures")
    return out


def run_check(settings):
    from mockserver.api.handlers import HANDLERS
    from mockserver.api.replay import fresh_world
    from mockserver.core.clock import Clock
    from mockserver.document.spec import Spec
    from mockserver.world.fixtures import read_fixtures
    from mockserver.world.scenarios import Scenarios
    from mockserver.world.strictness import vocabulary

    problems = []
    spec = Spec.load()
    missing = sorted(set(spec.operations) - set(HANDLERS))
    problems += [f"document: operation {op} has no handler" for op in missing]
    known = None
    not_a_folder = folder_problem(settings.fixtures)
    if not_a_folder:
        problems.append(not_a_folder)
    else:
        try:
            fixtures = read_fixtures(settings.fixtures, spec)
            known = vocabulary(fixtures)
            problems += token_problems(fixtures, settings.fixtures)
            fresh_world(settings, Clock("manual"), fixtures)
        except (FixtureError, ApiError, OSError) as error:
            problems += problems_of(error)
    found, warnings = scenario_problems(Scenarios(spec, settings.seed, known), settings.scenarios)
    problems += found
    for line in problems:
        print(f"mockserver check: {line}", file=sys.stderr)
    for line in warnings:
        print(f"mockserver check: scenario: {line}", file=sys.stderr)
    counted = f"{len(warnings)} warning(s): rules that can never act" if warnings else ""
    if problems:
        print(f"mockserver check: {len(problems)} problem(s)" + (f", {counted}" if counted else ""), file=sys.stderr)
        return 1
    print(f"mockserver check: ok ({len(spec.operations)} operations, fixtures {settings.fixtures}, "
          f"{len(settings.scenarios)} scenario file(s)" + (f"; {counted}" if counted else "") + ")")
    return 0


def scenario_problems(scenarios, paths):
    """(problems, warnings) of the scenario files, every one of each file, then the rules of one file that a
    rule of a file loaded before it shadows (the files are tried in the order given, as `serve` loads them)."""
    problems, warnings, entries = [], [], []
    for path in paths:
        try:
            name = scenarios.load_file(path)
        except (ScenarioError, OSError) as error:
            problems += problems_of(error)
            continue
        warnings += scenarios.warnings
        raws = scenarios.active[name]["raw"]["rules"]
        entries += [Entry(f"{path}:{line or '?'}", rule.name, line, raw)
                    for rule, line, raw in zip(scenarios.active[name]["rules"], scenarios.lines, raws, strict=True)]
    for later, earlier in overlap.shadowed(entries, scenarios.spec):
        if later.label.rsplit(":", 1)[0] != earlier.label.rsplit(":", 1)[0]:     # within a file: said above
            warnings.append(f"{later.label}: warning: {shadow_text(later, earlier)} (files are tried in the "
                            "order given)")
    return problems, warnings
