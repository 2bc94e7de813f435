"""`mockserver check`: load the document, fixtures and scenarios, and report every problem."""

import sys

from .errors import ApiError
from .fixtures import FixtureError
from .scenarios import ScenarioError


def problems_of(error):
    from .persistence import StateFileError, StateFolderError
    if isinstance(error, (StateFileError, StateFolderError)):
        return [str(error)]
    if isinstance(error, FixtureError):
        return [f"fixtures: {p}" for p in error.problems]
    if isinstance(error, ScenarioError):
        return [f"scenario: {error}"]
    if isinstance(error, ApiError):
        return [f"fixtures: {error.message}"]
    if isinstance(error, OSError):
        return [f"{error.filename or ''}: {error.strerror or error}"]
    return [f"{type(error).__name__}: {error}"]


def run_check(settings):
    from .clock import Clock
    from .fixtures import read_fixtures
    from .handlers import HANDLERS
    from .handlers.fixtures import fresh_world
    from .scenarios import Scenarios
    from .spec import Spec
    from .strictness import vocabulary

    problems = []
    spec = Spec.load()
    missing = sorted(set(spec.operations) - set(HANDLERS))
    problems += [f"document: operation {op} has no handler" for op in missing]
    known = None
    try:
        fixtures = read_fixtures(settings.fixtures, spec)
        known = vocabulary(fixtures)
        fresh_world(settings, Clock("manual"), fixtures)
    except (FixtureError, ApiError, OSError) as error:
        problems += problems_of(error)
    scenarios = Scenarios(spec, settings.seed, known)
    for path in settings.scenarios:
        try:
            scenarios.load_file(path)
        except (ScenarioError, OSError) as error:
            problems += problems_of(error)
        else:
            for warning in scenarios.warnings:
                print(f"mockserver check: scenario: {warning}", file=sys.stderr)
    for line in problems:
        print(f"mockserver check: {line}", file=sys.stderr)
    if problems:
        print(f"mockserver check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"mockserver check: ok ({len(spec.operations)} operations, fixtures {settings.fixtures}, "
          f"{len(settings.scenarios)} scenario file(s))")
    return 0
